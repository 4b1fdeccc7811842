"""`tracker bisect` on the history replaying v0.5.8 → v0.5.9 one file per commit
(bench/build_replay_repo.py): it finds the commits the manifest says made the change, says
why, and in git mode issues and changelog name them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from schema_check import errors

from bench.build_replay_repo import ReplayHistory
from tracker.cli import cli

pytestmark = pytest.mark.realdata

OLD, NEW = "v0.5.8", "v0.5.9"
KIMI = "KimiK25ForConditionalGeneration"
KIMI_MODULE = "python/sglang/srt/models/kimi_k25.py"
EAGLE_WORKER = "python/sglang/srt/speculative/eagle_worker.py"

Replayer = Callable[[str, str], ReplayHistory]


@pytest.fixture
def history(replayed_history: Replayer, use_real_cache: Path) -> ReplayHistory:
    return replayed_history(OLD, NEW)


def _bisect(history: ReplayHistory, *args: str, code: int = 0) -> Any:
    result = CliRunner().invoke(
        cli,
        [
            "bisect",
            *args,
            f"{OLD}..{NEW}",
            "-a",
            "EAGLE3",
            "--repo",
            str(history.repo),
            "--no-shipped",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == code, result.output
    return json.loads(result.stdout), result.stderr


def test_bisect_finds_the_commit_adding_kimi_k25_and_says_it_appears_broken(
    history: ReplayHistory,
) -> None:
    doc, stderr = _bisect(history, KIMI)
    kimi = history.changing(KIMI_MODULE)
    assert doc["commit"]["id"] == kimi.commit
    assert doc["parent"]["id"] == history.parent(kimi.commit)
    assert doc["commit"]["subject"] == kimi.subject
    assert doc["commit"]["author"] == kimi.author.split(" <")[0]
    assert (doc["transition"], doc["before"], doc["after"]) == (
        "appears broken",
        "absent",
        "broken",
    )
    assert doc["members"] == ["get_embed_and_head", "set_eagle3_layers_to_capture"]
    assert [c["text"] for c in doc["causes"]] == [
        "new class without `get_embed_and_head`, `set_eagle3_layers_to_capture`"
    ]
    assert doc["commits"] == len(history.commits)
    # A binary search: the ends and about log2(734) commits between them, each reported.
    assert doc["evaluated"] <= 2 + 10
    assert stderr.count("tracker: bisect: [") == doc["evaluated"]
    assert errors(doc) == []


def test_bisect_prints_the_commit_its_author_date_members_and_cause_as_text(
    history: ReplayHistory,
) -> None:
    args = [
        "bisect",
        KIMI,
        f"{OLD}..{NEW}",
        "-a",
        "EAGLE3",
        "--repo",
        str(history.repo),
        "--no-shipped",
        "-q",
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    kimi = history.changing(KIMI_MODULE)
    assert f"appears broken in {kimi.commit}" in result.stdout
    assert f"subject  {kimi.subject}" in result.stdout
    assert "members  get_embed_and_head, set_eagle3_layers_to_capture" in result.stdout
    assert "new class without `get_embed_and_head`, `set_eagle3_layers_to_capture`" in result.stdout
    assert result.stderr == ""


def test_bisect_member_finds_the_commit_where_eagle_worker_reads_mm_input_embeds(
    history: ReplayHistory,
) -> None:
    doc, _ = _bisect(history, "--member", "mm_input_embeds")
    worker = history.changing(EAGLE_WORKER)
    assert doc["commit"]["id"] == worker.commit
    [cause] = doc["causes"]
    assert cause["kind"] == "field_added"
    assert cause["path"] == EAGLE_WORKER
    assert cause["text"].startswith(
        "adds a read of `logits_output.mm_input_embeds` at eagle_worker.py:"
    )
    assert errors(doc) == []


def test_bisect_of_a_member_unchanged_between_the_ends_has_nothing_to_bisect(
    history: ReplayHistory,
) -> None:
    doc, _ = _bisect(history, "--member", "get_embed_and_head")
    assert (doc["found"], doc["commit"], doc["evaluated"]) == (False, None, 2)
    assert doc["before"] == doc["after"]
    assert errors(doc) == []


def test_bisect_of_a_class_neither_end_registers_is_an_error(history: ReplayHistory) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "bisect",
            "KimiK25ForConditionalGen",
            f"{OLD}..{NEW}",
            "-a",
            "EAGLE3",
            "--repo",
            str(history.repo),
            "-q",
        ],
    )
    assert result.exit_code == 2
    assert result.stderr.startswith("tracker: error: neither ")
    assert f"did you mean {KIMI}" in result.stderr
    assert result.stderr.count("\n") == 1


def test_bisect_refuses_a_range_that_is_not_one_line_of_history(
    history: ReplayHistory,
) -> None:
    result = CliRunner().invoke(
        cli, ["bisect", KIMI, f"{NEW}..{OLD}", "-a", "EAGLE3", "--repo", str(history.repo)]
    )
    assert result.exit_code == 2
    assert "is not an ancestor of" in result.stderr
    assert result.stderr.count("\n") == 1


def test_bisect_on_the_package_index_is_refused_in_one_line(use_real_cache: Path) -> None:
    result = CliRunner().invoke(
        cli, ["bisect", KIMI, f"{OLD}..{NEW}", "-a", "EAGLE3", "--source", "pypi"]
    )
    assert result.exit_code == 2
    assert result.stderr == (
        "tracker: error: bisect needs a git repository (--repo PATH); "
        "the pypi source has releases, not commits\n"
    )


def test_issues_in_git_mode_name_the_commit_that_broke_kimi_k25(
    history: ReplayHistory,
) -> None:
    args = [
        "issues",
        OLD,
        NEW,
        "-a",
        "EAGLE3",
        "--repo",
        str(history.repo),
        "--no-shipped",
        "-q",
        "--format",
        "json",
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    issues = json.loads(result.stdout)["issues"]
    [kimi_issue] = [i for i in issues if i["report"]["subject"] == KIMI]
    kimi = history.changing(KIMI_MODULE)
    assert f"Broke in `{kimi.commit[:10]}` «{kimi.subject}»" in kimi_issue["body"]
    # The commands it suggests read the same repository: runnable as printed.
    repo = f"--repo {history.repo}"
    assert f"Found by `tracker bisect {KIMI} {OLD}..{NEW} -a EAGLE3 {repo}`" in kimi_issue["body"]
    assert f"from `tracker diff {OLD} {NEW} -a EAGLE3 {repo}`" in kimi_issue["body"]
    # Off on request: the same issue, without the commit.
    quiet = CliRunner().invoke(cli, [*args, "--no-bisect"])
    [plain] = [i for i in json.loads(quiet.stdout)["issues"] if i["report"]["subject"] == KIMI]
    assert "Broke in" not in plain["body"]
    assert plain["fingerprint"] == kimi_issue["fingerprint"]


def test_the_changelog_in_git_mode_names_the_commit_that_broke_kimi_k25(
    history: ReplayHistory,
) -> None:
    args = [
        "changelog",
        OLD,
        NEW,
        "-a",
        "EAGLE3",
        "--repo",
        str(history.repo),
        "--no-shipped",
        "-q",
    ]
    result = CliRunner().invoke(cli, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    [row] = [b for s in doc["sections"] for b in s["broken"] if b["model"] == KIMI]
    kimi = history.changing(KIMI_MODULE)
    assert row["broke_in"]["commit"] == kimi.commit
    # The schema describes broke_in (the rest of the document is not this test's concern).
    assert [e for e in errors(doc) if "broke_in" in e or "sections" in e] == []
    text = CliRunner().invoke(cli, args).stdout
    assert f"broke in `{kimi.commit[:10]}` «{kimi.subject}»" in text
