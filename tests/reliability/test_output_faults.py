"""Writing the output: a report or a folder of issues is written whole or not at all, the
user's own files beside it are never removed, and a full disk or a folder that cannot be
made is one line naming the file, exit 2.

The disk is filled in two ways that need no root: in this process, the Nth file written
into a folder fails with ENOSPC; in a child process, RLIMIT_FSIZE caps every file's size
(a write past it fails with EFBIG, as a full disk fails with ENOSPC).
"""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import tracker.common.fileset
from tests.reliability.support import MAIN, run_cli, tracker_env


def assert_one_line_error(run: Any, *needles: str) -> str:
    """Exit 2 and one `tracker: error:` line holding `needles`, besides notes and warnings."""
    assert run.code == 2, (run.code, run.stderr)
    assert "Traceback" not in run.stderr, run.stderr
    assert all(line.startswith("tracker: ") for line in run.error_lines), run.stderr
    lines = [line for line in run.error_lines if line.startswith("tracker: error")]
    assert len(lines) == 1 and lines[0].startswith("tracker: error: "), lines
    assert "internal error" not in lines[0], lines
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def _tree(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (staging folders included) with its bytes."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


class _FullAfter:
    """`os` for tracker.common.fileset, whose disk fills after `room` files."""

    def __init__(self, room: int) -> None:
        self.room = room

    def fsync(self, fd: int) -> None:
        if self.room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= 1
        os.fsync(fd)

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)


def _report(repo: Path, out: Path, spec: str = "v0.5.8..v0.5.9") -> Any:
    args = ("report", spec, "-a", "EAGLE3", "-o", str(out), "--layout", "python")
    return run_cli(*args, "--graphs", "all", "--repo", str(repo))


# -- the user's files ---------------------------------------------------------------------------


def test_a_report_never_removes_the_users_own_files_and_only_its_own_stale_graphs(
    tmp_path: Path, breaking_repo: Path
) -> None:
    docs = tmp_path / "docs"
    (docs / "graphs").mkdir(parents=True)
    (docs / "graphs" / "architecture.svg").write_text("<svg>my diagram</svg>")
    (docs / "graphs" / "EAGLE3-v0.0.1.svg").write_text("<svg>named like ours</svg>")
    (docs / "notes.md").write_text("mine\n")
    first = _report(breaking_repo, docs, "v0.5.8..v0.5.9")
    assert first.code == 0, first.stderr
    assert {"EAGLE3-v0.5.8.svg", "EAGLE3-v0.5.9.svg"} <= {
        p.name for p in (docs / "graphs").iterdir()
    }
    run = _report(breaking_repo, docs, "v0.5.9..v0.5.10")
    assert run.code == 0, run.stderr
    graphs = {p.name for p in (docs / "graphs").iterdir()}
    assert {"architecture.svg", "EAGLE3-v0.0.1.svg", "EAGLE3-v0.5.10.svg"} <= graphs
    assert "EAGLE3-v0.5.8.svg" not in graphs
    assert (docs / "graphs" / "architecture.svg").read_text() == "<svg>my diagram</svg>"
    assert (docs / "notes.md").read_text() == "mine\n"


def test_a_report_into_a_folder_holding_the_users_own_index_html_refuses_and_keeps_it(
    tmp_path: Path, breaking_repo: Path
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<html>my site</html>")
    run = _report(breaking_repo, site)
    assert_one_line_error(run, str(site / "index.html"), "not overwriting it")
    assert _tree(site) == {"index.html": b"<html>my site</html>"}


def test_the_line_a_report_ends_with_counts_one_version_and_one_graph_in_the_singular(
    tmp_path: Path, breaking_repo: Path
) -> None:
    run = _report(breaking_repo, tmp_path / "one", "v0.5.9..v0.5.9")
    assert run.code == 0, run.stderr
    (line,) = [ln for ln in (run.stdout + run.stderr).splitlines() if ln.startswith("wrote ")]
    assert "× 1 version · 1 call graph · " in line, line


def test_a_staging_folder_a_dead_run_left_is_removed_by_the_next_run_and_a_live_ones_kept(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    # A pid no process has (above the kernel's pid_max) and this process's parent, alive.
    dead = out / f"{tracker.common.fileset.STAGING_PREFIX}{2**22 + 1}-abc"
    live = out / f"{tracker.common.fileset.STAGING_PREFIX}{os.getppid()}-def"
    for folder in (dead, live):
        folder.mkdir()
        (folder / "index.html").write_text("half written")
    tracker.common.fileset.write_file_set(out, {"a.txt": "a"})
    assert not dead.exists()
    assert (live / "index.html").read_text() == "half written"
    assert (out / "a.txt").read_text() == "a"


# -- a full disk, in process ----------------------------------------------------------------------


@pytest.mark.parametrize("room", [0, 1, 2])
def test_a_report_the_disk_cannot_hold_leaves_the_earlier_report_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, breaking_repo: Path, room: int
) -> None:
    out = tmp_path / "report"
    assert _report(breaking_repo, out, "v0.5.8..v0.5.9").code == 0
    before = _tree(out)
    monkeypatch.setattr(tracker.common.fileset, "os", _FullAfter(room))
    run = _report(breaking_repo, out, "v0.5.8..v0.5.10")
    line = assert_one_line_error(run, "No space left on device", str(out))
    assert "cannot write " in line
    assert _tree(out) == before  # the old index and graphs, and no staging folder


def _issues(repo: Path, out: Path) -> Any:
    return run_cli(
        "issues", "v0.5.9", "v0.5.10", "-a", "EAGLE3", "--repo", str(repo), "--no-bisect",
        "--out", str(out),
    )  # fmt: skip


@pytest.mark.parametrize("room", [0, 1])
def test_issues_out_writes_every_issue_and_the_index_or_none_of_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, breaking_repo: Path, room: int
) -> None:
    out = tmp_path / "issues"
    monkeypatch.setattr(tracker.common.fileset, "os", _FullAfter(room))
    assert_one_line_error(_issues(breaking_repo, out), "cannot write ", "No space left on device")
    assert _tree(out) == {}
    monkeypatch.undo()
    again = _issues(breaking_repo, out)
    assert again.code == 0, again.stderr
    files = _tree(out)
    assert "issues.json" in files and len(files) >= 2, sorted(files)
    indexed = {e["file"] for e in json.loads(files["issues.json"])["issues"]}
    assert indexed == set(files) - {"issues.json"}


def test_watch_out_on_a_full_disk_is_one_line_and_the_rerun_files_what_was_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, breaking_repo: Path
) -> None:
    out = tmp_path / "watched"
    args = (
        "watch", "--repo", str(breaking_repo), "--out", str(out),
        "--state", str(tmp_path / "state.json"), "--since", "v0.5.9", "-a", "EAGLE3",
    )  # fmt: skip
    monkeypatch.setattr(tracker.common.fileset, "os", _FullAfter(1))
    assert_one_line_error(run_cli(*args), f"cannot write {out}/", "No space left on device")
    assert _tree(out) == {}  # the issue's file was not left without its index entry
    monkeypatch.undo()
    again = run_cli(*args)
    assert again.code == 0, again.stderr
    files = _tree(out)
    indexed = {e["file"] for e in json.loads(files.pop("issues.json"))["issues"]}
    assert indexed == set(files) and len(files) == 1


# -- folders that cannot be made -------------------------------------------------------------------


def test_an_output_folder_that_cannot_be_made_is_one_line_before_any_work(
    tmp_path: Path, breaking_repo: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for command in (
        ("report", "v0.5.8..v0.5.9", "-a", "EAGLE3", "-o"),
        ("issues", "v0.5.8", "v0.5.9", "-a", "EAGLE3", "--out"),
    ):
        run = run_cli(*command, str(blocker / "inside"), "--repo", str(breaking_repo))
        assert_one_line_error(run, f"cannot create output directory {blocker / 'inside'}")


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
def test_a_report_into_proc_says_it_cannot_create_the_folder(breaking_repo: Path) -> None:
    run = _report(breaking_repo, Path("/proc/nope"))
    assert_one_line_error(run, "cannot create output directory /proc/nope")


# -- a full disk, in a real process ---------------------------------------------------------------


def _capped(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the cap fails with EFBIG


def _capped_tracker(*args: str, stdout: Any = subprocess.PIPE, limit: int = 64 * 1024) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "tracker", *args],
        env=tracker_env(),
        cwd=MAIN,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=lambda: _capped(limit),
    )


def _one_line(result: Any, *needles: str) -> None:
    lines = [
        line
        for line in result.stderr.splitlines()
        if line.strip() and not line.startswith("tracker: warning: ")
    ]
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and lines[0].startswith("tracker: error: cannot write "), lines
    assert "internal error" not in lines[0] and "Traceback" not in result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_a_report_larger_than_the_disk_allows_names_the_file_in_a_real_process(
    tmp_path: Path, breaking_repo: Path
) -> None:
    out = tmp_path / "report"
    result = _capped_tracker(
        "report", "v0.5.8..v0.5.10", "-a", "EAGLE3", "-o", str(out), "--repo", str(breaking_repo),
        limit=32 * 1024,
    )  # fmt: skip
    _one_line(result, f"{out}/index.html", "File too large")
    assert [p for p in out.rglob("*") if p.is_file()] == []


def test_stdout_on_a_full_disk_is_one_line_not_an_internal_error(
    tmp_path: Path, breaking_repo: Path
) -> None:
    target = tmp_path / "x.json"
    args = ("check", "v0.5.10", "--all", "--format", "json", "--repo", str(breaking_repo))
    with target.open("w") as handle:
        result = _capped_tracker(*args, stdout=handle, limit=4096)
    assert target.stat().st_size <= 4096
    _one_line(result, "the standard output", "File too large")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_stdout_to_dev_full_is_one_line_not_an_internal_error(breaking_repo: Path) -> None:
    args = ("check", "v0.5.10", "-a", "EAGLE3", "--repo", str(breaking_repo))
    with Path("/dev/full").open("w") as full:
        result = _capped_tracker(*args, stdout=full, limit=2**40)
    _one_line(result, "the standard output", "No space left on device")


def test_watch_out_into_a_folder_that_cannot_be_made_says_so_before_any_work(
    tmp_path: Path, breaking_repo: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    run = run_cli(
        "watch", "--repo", str(breaking_repo), "--out", str(blocker / "inside"),
        "--state", str(tmp_path / "state.json"), "--since", "v0.5.9", "-a", "EAGLE3",
    )  # fmt: skip
    assert_one_line_error(run, f"cannot create output directory {blocker / 'inside'}")
    assert not (tmp_path / "state.json").exists()
