"""Every command the reports suggest runs as printed: `tracker fix ...` from a check or a
diff of a directory (whose one version, `local`, means nothing to another command)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from pathlib import Path

from click.testing import Result
from sgl_trees import BASE, write_tree

Tracker = Callable[..., Result]  # the `cli_run` fixture of tests/cli/conftest.py

WRAPPER = "WrapperForConditionalGeneration"


def suggested_fix(output: str) -> list[str]:
    """The arguments of the first `tracker fix ...` command in a report."""
    found = re.search(r"→ tracker fix (.+)$", output, re.MULTILINE)
    assert found is not None, output
    return ["fix", *shlex.split(found.group(1))]


def test_the_fix_a_check_of_a_directory_suggests_runs_and_prints_the_patch(
    tmp_path: Path, cli_run: Tracker
) -> None:
    root = write_tree(tmp_path / "my sglang")  # a space: the path must be quoted
    check = cli_run("check", "local", "--source", f"dir:{root}", "-a", "EAGLE3", "-m", WRAPPER)
    assert check.exit_code == 0, check.stderr
    fix = cli_run(*suggested_fix(check.stdout))
    assert fix.exit_code == 0, fix.stderr
    assert "+    def get_embed_and_head(self):" in fix.stdout
    assert "+        return self.language_model.get_embed_and_head()" in fix.stdout


def test_the_fix_a_diff_against_a_directory_suggests_runs(tmp_path: Path, cli_run: Tracker) -> None:
    old = write_tree(tmp_path / "old", {"models/wrapper.py": None})
    new = write_tree(tmp_path / "new")
    diff = cli_run("diff", f"dir:{old}", f"dir:{new}", "-a", "EAGLE3")
    assert diff.exit_code == 0, diff.stderr
    assert f"✗ {WRAPPER} (new)" in diff.stdout
    fix = cli_run(*suggested_fix(diff.stdout))
    assert fix.exit_code == 0, fix.stderr
    assert "+    def set_eagle3_layers_to_capture(" in fix.stdout


def test_models_checked_against_another_tree_get_a_fix_against_those_requirements(
    tmp_path: Path, cli_run: Tracker
) -> None:
    # The patched tree's own workers ask nothing of the target; the release's do.
    requirements = write_tree(tmp_path / "release")
    quiet_worker = (
        "from sglang.srt.managers.tp_worker import TpModelWorker\n\n\n"
        "class EAGLEWorker(TpModelWorker):\n"
        "    def __init__(self, server_args, target_worker):\n"
        "        self.target_worker = target_worker\n"
    )
    models = write_tree(tmp_path / "patched", {"speculative/eagle_worker.py": quiet_worker})
    check = cli_run(
        "check",
        "--requirements",
        f"dir:{requirements}",
        "--models",
        f"dir:{models}",
        "-a",
        "EAGLE3",
        "-m",
        WRAPPER,
    )
    assert check.exit_code == 0, check.stderr
    args = suggested_fix(check.stdout)
    assert "--requirements" in args
    fix = cli_run(*args)
    assert fix.exit_code == 0, fix.stderr
    assert "+    def get_embed_and_head(self):" in fix.stdout


def test_fix_names_the_one_member_no_inner_model_provides_in_the_singular(
    tmp_path: Path, cli_run: Tracker
) -> None:
    llama = BASE["models/llama.py"].replace(
        "    def set_eagle3_layers_to_capture(self, layer_ids=None):\n"
        "        self.layers = layer_ids\n",
        "",
    )
    root = write_tree(tmp_path / "sglang", {"models/llama.py": llama})
    fix = cli_run("fix", WRAPPER, "--at", f"dir:{root}")
    # The patch is written, and exit 1: the class stays broken without the member.
    assert fix.exit_code == 1, fix.stderr
    assert "+    def get_embed_and_head(self):" in fix.stdout
    assert fix.stderr == (
        f"tracker: partial patch: no inner model of {WRAPPER} provides "
        "set_eagle3_layers_to_capture; the patch does not add it, and "
        f"{WRAPPER} stays broken\n"
    )
