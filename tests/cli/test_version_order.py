"""Commands comparing two versions refuse OLD newer than NEW unless asked (`--reverse`),
instead of reporting every addition as a removal; `watch` refuses --since after --until."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from sgl_trees import tree

Tracker = Callable[..., Result]  # the `cli_run` fixture of tests/cli/conftest.py

NEW_HOOK = (
    "        embed, head = self.target_worker.model_runner.model.get_embed_and_head()\n",
    "        embed, head = self.target_worker.model_runner.model.get_embed_and_head()\n"
    "        self.target_worker.model_runner.model.new_hook()\n",
)


@pytest.fixture
def repo(make_git_repo: Callable[..., Path]) -> Path:
    worker = tree()["python/sglang/srt/speculative/eagle_worker.py"].replace(*NEW_HOOK)
    return make_git_repo(
        {
            "v1.0.0": tree(),
            "v1.1.0": {**tree(), "python/sglang/srt/speculative/eagle_worker.py": worker},
        }
    )


@pytest.mark.parametrize("command", ["diff", "issues", "changelog"])
def test_old_newer_than_new_is_refused_with_one_line(
    command: str, repo: Path, cli_run: Tracker
) -> None:
    result = cli_run(command, "v1.1.0", "v1.0.0", "--repo", str(repo))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        "tracker: error: v1.1.0 is newer than v1.0.0: give the older version first, or "
        "--reverse to compare backwards\n"
    )


@pytest.mark.parametrize("command", ["diff", "issues", "changelog"])
def test_reverse_compares_backwards_on_purpose(command: str, repo: Path, cli_run: Tracker) -> None:
    result = cli_run(command, "v1.1.0", "v1.0.0", "--repo", str(repo), "--reverse", "-a", "EAGLE3")
    assert result.exit_code == 0, result.stderr
    assert "new_hook" in result.stdout


def test_the_diff_of_the_right_order_needs_no_flag(repo: Path, cli_run: Tracker) -> None:
    result = cli_run("diff", "v1.0.0", "v1.1.0", "--repo", str(repo), "-a", "EAGLE3")
    assert result.exit_code == 0, result.stderr
    assert "the target model must now provide new_hook" in result.stdout


def test_watch_refuses_since_newer_than_until(repo: Path, cli_run: Tracker, tmp_path: Path) -> None:
    result = cli_run(
        "watch",
        "--repo",
        str(repo),
        "--out",
        str(tmp_path / "issues"),
        "--state",
        str(tmp_path / "state.json"),
        "--since",
        "v1.1.0",
        "--until",
        "v1.0.0",
    )
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        "tracker: error: --since v1.1.0 is newer than --until v1.0.0: nothing to watch "
        "(releases are handled oldest first)"
    )
    assert not (tmp_path / "state.json").exists()
