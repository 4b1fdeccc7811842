"""A git history replaying v0.5.8 → v0.5.9 one file per commit (bench/build_replay_repo.py):
it starts and ends at the real releases, each commit does what the manifest says, and the
tool reads any of its commits, so commit-level work (bisect) has real history to run on."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bench.build_replay_repo import Change, ReplayHistory
from tracker.cli import cli
from tracker.sources.base import VersionTree

pytestmark = pytest.mark.realdata

OLD, NEW = "v0.5.8", "v0.5.9"
KIMI_MODULE = "python/sglang/srt/models/kimi_k25.py"
KIMI = "KimiK25ForConditionalGeneration"
EAGLE_WORKER = "python/sglang/srt/speculative/eagle_worker.py"
MODEL_RUNNER = "python/sglang/srt/model_executor/model_runner.py"
STATUS_LETTER = {Change.ADDED: "A", Change.MODIFIED: "M", Change.DELETED: "D"}

Replayer = Callable[[str, str], ReplayHistory]
RealTree = Callable[[str], VersionTree]
Run = Any  # the `run` fixture of tests/integration/conftest.py


@pytest.fixture
def history(replayed_history: Replayer) -> ReplayHistory:
    return replayed_history(OLD, NEW)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True
    ).stdout


def _tree_at(repo: Path, commit: str) -> list[tuple[str, str]]:
    """(path, blob id) of every file in `commit`, sorted by path."""
    listing = _git(repo, "ls-tree", "-r", "--full-tree", commit)
    entries = []
    for line in listing.splitlines():
        info, path = line.split("\t")
        entries.append((path, info.split()[2]))
    return sorted(entries)


def _check(repo: Path, version: str) -> dict[str, Any]:
    args = ["check", version, "--repo", str(repo), "-a", "EAGLE3", "-m", KIMI]
    result = CliRunner().invoke(cli, [*args, "--no-shipped", "-q", "--format", "json"])
    assert result.exit_code == 0, result.output
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def test_the_replay_starts_at_v0_5_8_and_ends_at_v0_5_9_exactly(
    history: ReplayHistory, real_tree: RealTree
) -> None:
    assert _tree_at(history.repo, history.base) == sorted(real_tree(OLD).files.items())
    assert _tree_at(history.repo, history.head) == sorted(real_tree(NEW).files.items())
    assert _git(history.repo, "rev-parse", f"{OLD}^{{commit}}").strip() == history.base
    assert _git(history.repo, "rev-parse", f"{NEW}^{{commit}}").strip() == history.head


def test_the_replay_has_one_commit_per_file_that_differs_plus_the_first(
    history: ReplayHistory, real_tree: RealTree
) -> None:
    old, new = real_tree(OLD).files, real_tree(NEW).files
    differing = sorted(path for path in old.keys() | new.keys() if old.get(path) != new.get(path))
    count = _git(history.repo, "rev-list", "--count", NEW).strip()
    assert int(count) == len(differing) + 1 == len(history.commits) + 1
    assert [commit.file.path for commit in history.commits] == differing  # sorted by path
    merges = _git(history.repo, "rev-list", "--merges", NEW).split()
    assert merges == []


def test_each_replayed_commit_changes_exactly_the_file_its_subject_and_manifest_name(
    history: ReplayHistory,
) -> None:
    # One git call for every commit: `--format` line, then its name-status line.
    log = _git(
        history.repo,
        "log",
        "--reverse",
        "--no-renames",
        "--format=%x00%H%x09%an%x09%at%x09%s",
        "--name-status",
        f"{OLD}..{NEW}",
    )
    seen = []
    for record in log.split("\0")[1:]:
        header, *changes = [line for line in record.splitlines() if line]
        commit, author, date, subject = header.split("\t")
        [change] = changes
        seen.append((commit, author, int(date), subject, change))
    expected = [
        (
            c.commit,
            c.author.split(" <")[0],
            c.date,
            f"{c.file.change.value} {c.file.path}",
            f"{STATUS_LETTER[c.file.change]}\t{c.file.path}",
        )
        for c in history.commits
    ]
    assert seen == expected
    assert len({c.author for c in history.commits}) == len(history.commits)
    assert len({c.date for c in history.commits}) == len(history.commits)


def test_the_commit_adding_kimi_k25_has_a_parent_without_it(history: ReplayHistory) -> None:
    kimi = history.changing(KIMI_MODULE)
    assert kimi.subject == f"add {KIMI_MODULE}"
    parent = _git(history.repo, "rev-parse", f"{kimi.commit}^").strip()
    assert parent == history.parent(kimi.commit)
    assert KIMI_MODULE in dict(_tree_at(history.repo, kimi.commit))
    assert KIMI_MODULE not in dict(_tree_at(history.repo, parent))
    # The workers that read the target change in their own commits, after and before it.
    assert history.changing(MODEL_RUNNER).number < kimi.number
    assert history.changing(EAGLE_WORKER).number > kimi.number
    assert history.changing(EAGLE_WORKER).file.change is Change.MODIFIED


def test_versions_lists_both_tags_of_the_replayed_history(history: ReplayHistory, run: Run) -> None:
    document = run("versions", "--repo", str(history.repo), "--format", "json", json_output=True)
    assert document["versions"] == [OLD, NEW]


def test_kimi_k25_is_broken_for_eagle3_at_v0_5_9_and_at_the_commit_that_adds_it(
    history: ReplayHistory, use_real_cache: Path
) -> None:
    kimi = history.changing(KIMI_MODULE).commit
    at_tag, at_commit = _check(history.repo, NEW), _check(history.repo, kimi)
    assert at_commit["requirements_version"] == kimi
    for document in (at_tag, at_commit):
        [row] = document["checks"]
        assert (row["model"], row["status"]) == (KIMI, "broken")
        assert row["missing"] == ["get_embed_and_head", "set_eagle3_layers_to_capture"]


def test_before_the_kimi_commit_check_says_the_class_is_not_registered(
    history: ReplayHistory, use_real_cache: Path
) -> None:
    parent = history.parent(history.changing(KIMI_MODULE).commit)
    args = ["check", parent, "--repo", str(history.repo), "-a", "EAGLE3", "-m", KIMI]
    result = CliRunner().invoke(cli, [*args, "--no-shipped", "-q", "--format", "json"])
    assert result.exit_code == 2
    assert f"{parent} registers no entry class {KIMI}" in result.stderr
    assert result.stdout == ""
