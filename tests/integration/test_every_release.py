"""Every release from the first with a speculative worker (v0.4.1.post4) on: the analysis
runs, finds the EAGLE worker and the target members the EAGLE algorithms have always needed,
and the shipped snapshots are current."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tracker.app import Workspace
from tracker.snapshot import current_builder, load_file, shipped_dir, to_json
from tracker.sources import open_source
from tracker.versions import parse_version, sort_versions

pytestmark = pytest.mark.realdata

SHIPPED = sort_versions(p.stem for p in shipped_dir().glob("v*.json"))
# Read from each release's `spec_info.py`: the enum gains EAGLE3 in v0.4.4.post2.
FIRST_EAGLE3 = parse_version("v0.4.4.post2")


def test_snapshots_ship_for_every_release_from_v0_4_1_post4_to_v0_5_23() -> None:
    assert SHIPPED[0] == "v0.4.1.post4" and SHIPPED[-1] == "v0.5.23"
    assert {"v0.4.5", "v0.4.9.post6", "v0.4.10", "v0.5.8", "v0.5.8.post1", "v0.5.9",
            "v0.5.10"} <= set(SHIPPED)


@pytest.mark.parametrize("version", SHIPPED)
def test_every_shipped_snapshot_is_current_and_holds_no_source_text(version: str) -> None:
    snap = load_file(shipped_dir() / f"{version}.json")
    assert snap is not None and snap.version == version
    assert snap.builder == current_builder(), "stale: run tools/refresh_snapshots.py"
    text = (shipped_dir() / f"{version}.json").read_text()
    assert "def " not in text and "import " not in text  # facts, never code


@pytest.mark.parametrize("version", SHIPPED)
def test_every_release_analyses_and_finds_the_eagle_worker(
    version: str, use_real_cache: Path
) -> None:
    ws = Workspace(open_source("pypi", None, Path.cwd()), use_shipped=False)
    snap = ws.snapshot_of(ws.source, version)
    itf = snap.interface
    algorithms = ["EAGLE", "EAGLE3"] if parse_version(version) >= FIRST_EAGLE3 else ["EAGLE"]
    assert set(algorithms) <= set(itf.algorithms)
    assert ("EAGLE3" in itf.algorithms) == ("EAGLE3" in algorithms)
    for algorithm in algorithms:
        assert any("Eagle" in w or "EAGLE" in w for w in itf.workers[algorithm])
        target = {r.member for r in itf.for_algorithm(algorithm, "target")
                  if r.status == "required"}
        assert "get_embed_and_head" in target
        assert ("set_eagle3_layers_to_capture" in target) == (algorithm == "EAGLE3")
    # The hidden states reach the drafter through the forward output, never this method.
    assert all(r.member != "get_hidden_states_before_lm_head" for r in itf.requirements)
    assert any(f.name == "hidden_states" for f in itf.output_fields)


@pytest.mark.parametrize("version", ["v0.4.1.post4", "v0.4.10", "v0.5.9", "v0.5.23"])
def test_a_regenerated_snapshot_equals_the_shipped_one(
    version: str, use_real_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A separate snapshot cache, so the snapshot is rebuilt from the release itself.
    ws = Workspace(open_source("pypi", None, Path.cwd()), use_shipped=False, use_cache=False)
    rebuilt = ws.snapshot_of(ws.source, version)
    shipped = (shipped_dir() / f"{version}.json").read_text()
    assert json.loads(to_json(rebuilt)) == json.loads(shipped)
    assert to_json(rebuilt) == shipped  # byte-identical: ordering is fixed


def test_a_snapshot_does_not_depend_on_the_process_hash_seed(use_real_cache: Path,
                                                             tmp_path: Path) -> None:
    # v0.5.22 has calls with several equally short paths: the one recorded must not
    # depend on set iteration order, which changes with PYTHONHASHSEED.
    import os
    import subprocess
    import sys

    outputs = []
    for seed in ("1", "2"):
        target = tmp_path / f"snap{seed}.json"
        env = {**os.environ, "PYTHONHASHSEED": seed, "TRACKER_CACHE_DIR": str(use_real_cache)}
        result = subprocess.run(
            [sys.executable, "-m", "tracker", "snapshot", "v0.5.22", "--no-shipped", "-q",
             "-o", str(target)], env=env, capture_output=True, text=True, check=False)
        assert result.returncode == 0, result.stderr
        outputs.append(target.read_bytes())
    assert outputs[0] == outputs[1]
