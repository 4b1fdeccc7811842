"""`tracker watch` against a GitHub API on 127.0.0.1: each issue filed exactly once across
reruns and crashes, and closed with a comment when a later release fixes it. The releases
are the real ones (v0.5.8 … v0.5.10) from the test cache."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from fake_github import REPO, TOKEN, State, fake_github

from tracker.cli import cli
from tracker.common.errors import TrackerError
from tracker.release.issues import IssueDoc, IssueFacts, fingerprint_in, fingerprint_marker
from tracker.release.watch import DirSink, load_state
from tracker.sources import clear_memo

KIMI = "KimiK25ForConditionalGeneration"
# What v0.5.9 brings for EAGLE3 (diffed against v0.5.8.post1, its predecessor on PyPI).
V059_EAGLE3 = 3
# The releases the watch runs read from the test cache (the command never asks the index).
RELEASES = ("v0.5.8", "v0.5.8.post1", "v0.5.9", "v0.5.10")


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    # TRACKER_PIP=false: the package index is never asked; releases come from the cache.
    full = {"TRACKER_PIP": "false", "GITHUB_TOKEN": TOKEN, **(env or {})}
    return CliRunner(env=full).invoke(cli, list(args), color=False)


def watch_args(url: str, state: Path, *extra: str) -> list[str]:
    return [
        "watch",
        "--source",
        "pypi",
        "--post",
        REPO,
        "--api-url",
        url,
        "--state",
        str(state),
        "-a",
        "EAGLE3",
        *extra,
    ]


def by_subject(state: State) -> dict[str, dict[str, Any]]:
    out = {}
    for issue in state.issues:
        report = json.loads(issue["body"].split("sglang-tracker:report=", 1)[1].split(" -->", 1)[0])
        out[report["subject"]] = issue
    return out


def no_sleep(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    slept: list[float] = []
    monkeypatch.setattr("tracker.release.publish._sleep", slept.append)
    return slept


@pytest.fixture
def releases_cached(use_real_cache: Path, stocked_releases: Callable[..., Path]) -> Path:
    """The real cache, holding what the watch runs read (they never ask the index)."""
    return stocked_releases(*RELEASES)


# ------------------------------------------------------------- the whole story, once


@pytest.fixture(scope="module")
def story(
    stocked_releases: Callable[..., Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    """Watch v0.5.9 and v0.5.10 twice, then once more without --since: the server's state
    after each run. Module-scoped: the runs are the expensive part."""
    real_cache = stocked_releases(*RELEASES)
    tmp = tmp_path_factory.mktemp("watch")
    state_file = tmp / "state.json"
    with pytest.MonkeyPatch.context() as mp, fake_github() as (url, server):
        mp.setenv("TRACKER_CACHE_DIR", str(real_cache))
        mp.delenv("TRACKER_REPO", raising=False)
        clear_memo()
        args = watch_args(url, state_file, "--since", "v0.5.8.post1", "--until", "v0.5.10")
        first = run(*args, "--format", "json")
        after_first = copy.deepcopy((server.issues, server.comments))
        second = run(*args, "--format", "json")
        third = run(*watch_args(url, state_file, "--until", "v0.5.10"))
        clear_memo()
        yield {
            "first": first,
            "after_first": after_first,
            "second": second,
            "third": third,
            "server": server,
            "state_file": state_file,
        }


@pytest.mark.realdata
def test_the_first_watch_files_one_issue_per_new_break_of_each_release(
    story: dict[str, Any],
) -> None:
    first = story["first"]
    assert first.exit_code == 0, first.stderr
    doc = json.loads(first.stdout)
    assert doc["schema"] == "sglang-tracker/watch@2"
    assert [(r["previous"], r["version"]) for r in doc["releases"]] == [
        ("v0.5.8.post1", "v0.5.9"),
        ("v0.5.9", "v0.5.10"),
    ]
    v059, v0510 = doc["releases"]
    assert len(v059["filed"]) == V059_EAGLE3
    assert [f["title"] for f in v0510["filed"]] == [
        "[EAGLE3] new SarvamMLAForCausalLM lacks get_embed_and_head, "
        "set_eagle3_layers_to_capture (v0.5.10)"
    ]
    issues, _ = story["after_first"]
    assert len(issues) == V059_EAGLE3 + 1
    kimi = next(i for i in issues if KIMI in i["title"])
    assert [x["name"] for x in kimi["labels"]] == [
        "sglang-tracker",
        "speculative-decoding",
        "algorithm:EAGLE3",
        "model-wrapper",
        "new-model",
    ]
    assert "```diff\n--- a/python/sglang/srt/models/kimi_k25.py" in kimi["body"]


@pytest.mark.realdata
def test_a_later_release_that_fixes_a_break_comments_and_closes_its_issue(
    story: dict[str, Any],
) -> None:
    issues, comments = story["after_first"]
    kimi = next(i for i in issues if KIMI in i["title"])
    assert kimi["state"] == "closed" and kimi["state_reason"] == "completed"
    assert len(comments[kimi["number"]]) == 1
    assert (
        "Fixed in **v0.5.10**: `KimiK25ForConditionalGeneration` provides what EAGLE3 "
        "requires" in comments[kimi["number"]][0]
    )
    still_broken = [i for i in issues if KIMI not in i["title"]]
    assert all(i["state"] == "open" for i in still_broken)
    v0510 = json.loads(story["first"].stdout)["releases"][1]
    assert [c["ref"] for c in v0510["closed"]] == [kimi["html_url"]]


@pytest.mark.realdata
def test_watching_the_same_releases_again_files_and_comments_nothing(story: dict[str, Any]) -> None:
    second = story["second"]
    assert second.exit_code == 0, second.stderr
    assert (story["server"].issues, story["server"].comments) == story["after_first"]
    releases = json.loads(second.stdout)["releases"]
    assert [len(r["filed"]) for r in releases] == [0, 0]
    assert [len(r["existing"]) for r in releases] == [V059_EAGLE3, 1]
    fingerprints = [fingerprint_in(i["body"]) for i in story["server"].issues]
    assert len(set(fingerprints)) == len(fingerprints)


@pytest.mark.realdata
def test_the_state_file_records_the_last_release_handled(story: dict[str, Any]) -> None:
    state = load_state(story["state_file"])
    assert state is not None
    assert (state.source, state.last_version) == ("pypi:sglang", "v0.5.10")
    assert state.destination == f"github:{REPO}"
    assert story["third"].exit_code == 0
    assert story["third"].stdout.startswith("no release after v0.5.10")


# ------------------------------------------------------------------ a crash half-way


@pytest.mark.realdata
def test_a_run_that_dies_half_way_is_finished_by_the_next_exactly_once(
    releases_cached: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slept = no_sleep(monkeypatch)
    state_file = tmp_path / "state.json"
    with fake_github() as (url, server):
        server.fail_creates_after = 1
        dead = run(*watch_args(url, state_file, "--since", "v0.5.8", "--until", "v0.5.9"))
        assert dead.exit_code == 2
        assert (
            dead.stderr.strip()
            .splitlines()[-1]
            .startswith("tracker: error: GitHub kept failing to create an issue")
        )
        assert 0 < sum(slept) <= 5 * 120  # retried with bounded backoff, without waiting
        state = load_state(state_file)
        assert state is not None and state.last_version == "v0.5.8.post1"
        assert len(server.issues) == 1

        server.fail_creates_after = None
        clear_memo()
        done = run(*watch_args(url, state_file, "--until", "v0.5.9"))
        assert done.exit_code == 0, done.stderr
        assert "v0.5.9 (vs v0.5.8.post1) · 3 issues · 2 filed · 1 already filed" in done.stdout
    fingerprints = [fingerprint_in(i["body"]) for i in server.issues]
    assert len(fingerprints) == V059_EAGLE3 == len(set(fingerprints))
    assert load_state(state_file).last_version == "v0.5.9"  # type: ignore[union-attr]


@pytest.mark.realdata
def test_a_process_killed_while_github_creates_an_issue_files_it_once_on_rerun(
    releases_cached: Path, tmp_path: Path
) -> None:
    state_file = tmp_path / "state.json"
    env = {**os.environ, "TRACKER_PIP": "false", "GITHUB_TOKEN": TOKEN}
    with fake_github() as (url, server):
        # The second issue is created, but its answer never reaches the process: it is
        # killed first, as a CI job cancelled at that moment would be.
        server.hold_after_create = 2
        args = [
            sys.executable,
            "-m",
            "tracker",
            *watch_args(url, state_file, "--since", "v0.5.8.post1", "--until", "v0.5.9"),
        ]
        process = subprocess.Popen(
            args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            deadline = time.monotonic() + 60
            while server.creates < 2 and process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)
            assert server.creates == 2
        finally:
            process.kill()
            process.wait(timeout=30)
        server.release.set()
        server.hold_after_create = None
        state = load_state(state_file)
        assert state is not None and state.last_version == "v0.5.8.post1"

        done = subprocess.run(
            args, env=env, capture_output=True, text=True, timeout=120, check=False
        )
    assert done.returncode == 0, done.stderr
    assert "v0.5.9 (vs v0.5.8.post1) · 3 issues · 1 filed · 2 already filed" in done.stdout
    fingerprints = [fingerprint_in(i["body"]) for i in server.issues]
    assert len(fingerprints) == V059_EAGLE3 == len(set(fingerprints))


# ------------------------------------------------------------ state and destinations


def test_a_first_run_without_state_or_since_records_the_newest_release_and_files_nothing(
    make_git_repo: Any, tmp_path: Path
) -> None:
    repo = make_git_repo({"v0.1.0": {"README": "a"}, "v0.2.0": {"README": "b"}})
    state_file = tmp_path / "state.json"
    result = run(
        "watch",
        "--source",
        f"git:{repo}",
        "--out",
        str(tmp_path / "out"),
        "--state",
        str(state_file),
    )
    assert result.exit_code == 0, result.stderr
    assert "recorded v0.2.0 as the starting point and filed nothing" in result.stderr
    state = load_state(state_file)
    assert state is not None and state.last_version == "v0.2.0"
    assert not (tmp_path / "out").exists()
    again = run(
        "watch",
        "--source",
        f"git:{repo}",
        "--out",
        str(tmp_path / "out"),
        "--state",
        str(state_file),
    )
    assert again.stdout.startswith("no release after v0.2.0")


def test_a_state_file_for_another_destination_is_refused(
    make_git_repo: Any, tmp_path: Path
) -> None:
    repo = make_git_repo({"v0.1.0": {"README": "a"}})
    state_file = tmp_path / "state.json"
    run(
        "watch", "--source", f"git:{repo}", "--out", str(tmp_path / "a"), "--state", str(state_file)
    )
    result = run(
        "watch", "--source", f"git:{repo}", "--out", str(tmp_path / "b"), "--state", str(state_file)
    )
    assert result.exit_code == 2
    assert "name another --state" in result.stderr


def test_a_damaged_state_file_is_an_error_and_is_left_alone(
    make_git_repo: Any, tmp_path: Path
) -> None:
    repo = make_git_repo({"v0.1.0": {"README": "a"}})
    state_file = tmp_path / "state.json"
    state_file.write_text("{not json")
    result = run(
        "watch",
        "--source",
        f"git:{repo}",
        "--out",
        str(tmp_path / "out"),
        "--state",
        str(state_file),
    )
    assert result.exit_code == 2
    assert "is not a tracker watch state" in result.stderr
    assert state_file.read_text() == "{not json"


def test_watch_needs_exactly_one_destination(tmp_path: Path) -> None:
    neither = run("watch", "--source", "pypi")
    both = run("watch", "--source", "pypi", "--out", str(tmp_path), "--post", REPO)
    for result in (neither, both):
        assert result.exit_code == 2
        assert "give exactly one of --out DIR and --post OWNER/REPO" in result.stderr


def test_a_dry_run_alone_says_it_needs_a_destination_and_why() -> None:
    result = run("watch", "--dry-run", "--source", "pypi")
    assert result.exit_code == 2
    assert result.stderr == (
        "tracker: error: --dry-run needs the destination it would file to, to leave out "
        "what is filed there already: add --out DIR or --post OWNER/REPO (a dry run needs "
        "no token)\n"
    )


def test_posting_without_a_token_stops_before_anything_is_read(tmp_path: Path) -> None:
    result = run(
        "watch",
        "--source",
        "pypi",
        "--post",
        REPO,
        "--api-url",
        "http://127.0.0.1:9",
        env={"GITHUB_TOKEN": ""},
    )
    assert result.exit_code == 2
    assert "set GITHUB_TOKEN" in result.stderr


# -------------------------------------------------------------------- directory sink


def doc(subject: str) -> IssueDoc:
    report = IssueFacts("model_wrapper_broke", "EAGLE3", "target", subject, "v0.5.9", "v0.5.8")
    return IssueDoc(
        report,
        f"[EAGLE3] {subject}",
        ("sglang-tracker",),
        fingerprint_marker(report.fingerprint) + "\nbody\n",
    )


def test_a_directory_sink_indexes_each_issue_once_and_records_its_fix(tmp_path: Path) -> None:
    sink = DirSink(tmp_path)
    sink.file(doc("A"))
    sink.file(doc("A"))
    sink.file(doc("B"))
    known = sink.known()
    assert sorted(t.report.subject for t in known.values() if t.report) == ["A", "B"]
    assert len(list(tmp_path.glob("*.md"))) == 2
    a = next(t for t in known.values() if t.report and t.report.subject == "A")
    sink.resolve(a, "v0.5.10", "fixed")
    index = json.loads((tmp_path / "issues.json").read_text())
    closed = [e for e in index["issues"] if e["state"] == "closed"]
    assert [(e["report"]["subject"], e["fixed_in"]) for e in closed] == [("A", "v0.5.10")]


def test_a_foreign_issues_json_is_not_overwritten(tmp_path: Path) -> None:
    (tmp_path / "issues.json").write_text('{"something": "else"}')
    with pytest.raises(TrackerError, match="not a tracker issue index"):
        DirSink(tmp_path).file(doc("A"))


# ------------------------------------------------------------------------ dry run


def stamp(path: Path) -> tuple[bytes, int]:
    return path.read_bytes(), path.stat().st_mtime_ns


@pytest.mark.realdata
def test_a_dry_run_says_what_it_would_file_comment_and_close_and_sends_only_reads(
    releases_cached: Path, tmp_path: Path
) -> None:
    state_file = tmp_path / "state.json"
    with fake_github() as (url, server):
        first = run(*watch_args(url, state_file, "--since", "v0.5.8.post1", "--until", "v0.5.9"))
        assert first.exit_code == 0, first.stderr
        before = stamp(state_file), copy.deepcopy((server.issues, server.comments))
        server.requests.clear()
        clear_memo()
        dry = run(*watch_args(url, state_file, "--until", "v0.5.10", "--dry-run"))
    assert dry.exit_code == 0, dry.stderr
    assert server.requests and {method for method, _ in server.requests} == {"GET"}
    assert (stamp(state_file), (server.issues, server.comments)) == before
    kimi = next(i for i in server.issues if KIMI in i["title"])
    assert kimi["state"] == "open"
    lines = dry.stdout.splitlines()
    assert lines[0] == ("v0.5.10 (vs v0.5.9) · 1 issue · 1 to file · 0 already filed · 1 to close")
    assert lines[1] == (
        f"  + would file on github:{REPO}: [EAGLE3] new SarvamMLAForCausalLM "
        "lacks get_embed_and_head, set_eagle3_layers_to_capture (v0.5.10)"
    )
    assert lines[2].startswith("      labels: sglang-tracker, speculative-decoding")
    assert lines[3].startswith(
        f"  ✓ would comment on and close {kimi['html_url']}: `{KIMI}` provides what EAGLE3 requires"
    )
    assert (
        lines[-1] == f"1 release looked at (dry run), up to v0.5.10 · state {state_file} "
        "left as it was"
    )


@pytest.mark.realdata
def test_a_dry_run_without_state_creates_none_and_would_close_what_it_would_have_filed(
    releases_cached: Path, tmp_path: Path
) -> None:
    state_file = tmp_path / "state.json"
    with fake_github() as (url, server):
        dry = run(
            *watch_args(
                url,
                state_file,
                "--since",
                "v0.5.8.post1",
                "--until",
                "v0.5.10",
                "--dry-run",
                "--format",
                "json",
            )
        )
    assert dry.exit_code == 0, dry.stderr
    assert not state_file.exists()
    assert {method for method, _ in server.requests} == {"GET"}
    assert server.issues == [] and server.comments == {}
    doc = json.loads(dry.stdout)
    assert doc["dry_run"] is True
    v059, v0510 = doc["releases"]
    assert len(v059["filed"]) == V059_EAGLE3
    assert all(f["ref"] == f"not filed (dry run) on github:{REPO}" for f in v059["filed"])
    kimi = next(f["fingerprint"] for f in v059["filed"] if KIMI in f["title"])
    assert [c["fingerprint"] for c in v0510["closed"]] == [kimi]


@pytest.mark.realdata
def test_a_dry_run_into_a_directory_writes_no_file(releases_cached: Path, tmp_path: Path) -> None:
    out, state_file = tmp_path / "issues", tmp_path / "state.json"
    result = run(
        "watch",
        "--source",
        "pypi",
        "--out",
        str(out),
        "--state",
        str(state_file),
        "-a",
        "EAGLE3",
        "--since",
        "v0.5.8.post1",
        "--until",
        "v0.5.9",
        "--dry-run",
    )
    assert result.exit_code == 0, result.stderr
    assert "3 issues · 3 to file" in result.stdout
    assert f"  + would file on dir:{out.resolve()}: [EAGLE3] new {KIMI} lacks" in result.stdout
    assert not out.exists() and not state_file.exists()


def test_a_first_dry_run_without_state_or_since_would_record_the_newest_and_writes_nothing(
    make_git_repo: Any, tmp_path: Path
) -> None:
    repo = make_git_repo({"v0.1.0": {"README": "a"}, "v0.2.0": {"README": "b"}})
    state_file = tmp_path / "state.json"
    result = run(
        "watch",
        "--source",
        f"git:{repo}",
        "--out",
        str(tmp_path / "out"),
        "--state",
        str(state_file),
        "--dry-run",
    )
    assert result.exit_code == 0, result.stderr
    assert "would record v0.2.0 as the starting point and filed nothing" in result.stderr
    assert not state_file.exists() and not (tmp_path / "out").exists()
