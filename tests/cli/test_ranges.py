"""A range of versions: the parallel build (a parse pool over every version's files, then
spawned workers analysing versions side by side) gives exactly what a single process gives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from sgl_trees import BASE, tree


def matrix(repo: Path, cache: Path, jobs: int) -> dict[str, object]:
    env = {**os.environ, "TRACKER_CACHE_DIR": str(cache), "TRACKER_JOBS": str(jobs)}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tracker",
            "matrix",
            "v1.0.0..v1.2.0",
            "--repo",
            str(repo),
            "--format",
            "json",
            "-q",
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    doc: dict[str, object] = json.loads(result.stdout)
    return doc


def test_a_range_built_on_two_cores_equals_one_built_on_one(
    make_git_repo: object, tmp_path: Path
) -> None:
    without_capture = BASE["models/llama.py"].replace(
        "    def set_eagle3_layers_to_capture(self, layer_ids=None):\n"
        "        self.layers = layer_ids\n",
        "",
    )
    repo = make_git_repo(
        {  # type: ignore[operator]
            "v1.0.0": tree(),
            "v1.1.0": tree({"models/llama.py": without_capture}),
            "v1.2.0": tree(),
        }
    )
    parallel = matrix(repo, tmp_path / "two", 2)
    serial = matrix(repo, tmp_path / "one", 1)
    assert parallel == serial
    events = [
        (e["version"], e["kind"], e["model"])
        for e in parallel["events"]  # type: ignore[index]
        if e["model"] == "LlamaForCausalLM"
    ]
    assert events == [
        ("v1.0.0", "appeared", "LlamaForCausalLM"),
        ("v1.1.0", "broke", "LlamaForCausalLM"),
        ("v1.2.0", "fixed", "LlamaForCausalLM"),
    ]
