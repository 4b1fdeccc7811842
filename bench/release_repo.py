"""Writing a git repository of SGLang release sources with one `git fast-import` stream.

Shared by `build_release_repo.py` (one commit per release) and `build_replay_repo.py` (one
commit per changed file between two releases): both create an empty repository, send each
file's bytes once per content id, and need the ids of the commits they wrote.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import IO

from tracker.common.errors import TrackerError

BRANCH = "refs/heads/main"
# Fixed names and dates so that the same releases always give the same commit ids.
IDENTITY = b"sglang-tracker bench <bench@sglang-tracker.invalid>"
FIRST_DATE = 1_700_000_000
DAY = 86_400
FILE_MODE = b"100644"


class FastImport:
    """One `git fast-import` run into a new repository at `dest`.

    Use as a context manager: on a clean exit the stream is finished and the ids of the
    commits written are in `commit_ids` (mark -> sha); on any failure `TrackerError` (or the
    original exception) is raised and nothing pretends the repository is complete.
    """

    def __init__(self, dest: Path) -> None:
        if dest.exists() and any(dest.iterdir()):
            raise TrackerError(f"{dest} exists and is not empty")
        self.dest = dest
        self.commit_ids: dict[int, str] = {}
        self._blob_marks: dict[str, int] = {}  # content id -> blob mark
        self._commit_marks: list[int] = []
        self._next_mark = 1
        self._process: subprocess.Popen[bytes] | None = None
        # Absolute: fast-import runs inside `dest` and would read a relative path from there.
        self._marks_file = dest.absolute() / ".git" / "fast-import-marks"

    def __enter__(self) -> FastImport:
        self.dest.mkdir(parents=True, exist_ok=True)
        git(self.dest, "init", "-q", "-b", "main")
        # Light compression and no deltas: fast-import would only delta a blob against the
        # one sent before it (another file), which costs most of the run and saves nothing.
        self._process = subprocess.Popen(
            [
                "git",
                "-c",
                "pack.compression=1",
                "fast-import",
                "--depth=0",
                "--quiet",
                "--done",
                f"--export-marks={self._marks_file}",
            ],
            cwd=self.dest,
            stdin=subprocess.PIPE,
        )
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        process = self._process
        assert process is not None and process.stdin is not None
        try:
            if kind is None:
                process.stdin.write(b"done\n")
        except BrokenPipeError:
            pass  # fast-import stopped early; its exit status below says so
        finally:
            with contextlib.suppress(BrokenPipeError):
                # Also on errors: fast-import would wait for input forever. Without `done`
                # it then fails, so a half-written stream never looks complete.
                process.stdin.close()
            status = process.wait()
        if kind is not None and kind is not BrokenPipeError:
            return  # the caller's own error propagates: it says more than the exit status
        if status != 0 or kind is BrokenPipeError:
            # A broken pipe means fast-import stopped reading: its status says why.
            raise TrackerError(f"git fast-import failed in {self.dest} (exit status {status})")
        self.commit_ids = self._read_commit_ids()

    @property
    def stream(self) -> IO[bytes]:
        assert self._process is not None and self._process.stdin is not None
        return self._process.stdin

    def blob(self, cid: str, read: Callable[[], bytes]) -> int:
        """The mark of the blob with content id `cid`, sending `read()` the first time only:
        releases share most files, so most are never unpacked twice."""
        if cid not in self._blob_marks:
            self._blob_marks[cid] = self._mark()
            self.stream.write(b"blob\nmark :%d\n" % self._blob_marks[cid])
            self._data(read())
        return self._blob_marks[cid]

    def commit(
        self,
        message: str,
        when: int,
        *,
        files: Iterable[tuple[str, int]] = (),
        deleted: Iterable[str] = (),
        replace_all: bool = False,
        author: bytes = IDENTITY,
    ) -> int:
        """Write a commit on BRANCH after the previous one; returns its mark. `files` are
        (path, blob mark) to write, `deleted` paths to remove; with `replace_all` the commit
        holds exactly `files` (what the previous commit had is dropped first)."""
        mark = self._mark()
        stamp = b"%d +0000" % when
        self.stream.write(b"commit %s\nmark :%d\n" % (BRANCH.encode(), mark))
        self.stream.write(b"author %s %s\ncommitter %s %s\n" % (author, stamp, IDENTITY, stamp))
        self._data(message.encode())
        if replace_all:
            self.stream.write(b"deleteall\n")
        for path in deleted:
            self.stream.write(b"D %s\n" % path.encode())
        for path, blob_mark in files:
            self.stream.write(b"M %s :%d %s\n" % (FILE_MODE, blob_mark, path.encode()))
        self.stream.write(b"\n")
        self._commit_marks.append(mark)
        return mark

    def tag(self, name: str, commit_mark: int, when: int, message: str) -> None:
        """An annotated tag `name` on the commit with `commit_mark`."""
        self.stream.write(b"tag %s\nfrom :%d\n" % (name.encode(), commit_mark))
        self.stream.write(b"tagger %s %d +0000\n" % (IDENTITY, when))
        self._data(message.encode())

    def _mark(self) -> int:
        mark = self._next_mark
        self._next_mark += 1
        return mark

    def _data(self, payload: bytes) -> None:
        self.stream.write(b"data %d\n" % len(payload))
        self.stream.write(payload)
        self.stream.write(b"\n")

    def _read_commit_ids(self) -> dict[int, str]:
        marks = {}
        for line in self._marks_file.read_text().splitlines():
            mark, sha = line.split()
            marks[int(mark.lstrip(":"))] = sha
        self._marks_file.unlink()
        return {mark: marks[mark] for mark in self._commit_marks}


def git(cwd: Path, *args: str) -> str:
    """Run git in `cwd`; its stdout, or TrackerError with git's reason."""
    result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise TrackerError(f"git {args[0]} failed in {cwd}: {result.stderr.strip()}")
    return result.stdout
