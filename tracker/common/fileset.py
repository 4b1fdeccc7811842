"""Several files written into one folder as a set: a report (index.html and its graphs), a
folder of issues and their index.

Each file on its own is atomic (common/atomic.py), but a set written file by file is not: a
kill or a full disk half-way leaves a new index.html next to old or missing graphs, a report
that looks finished. So every file is first written into a staging folder inside the target
folder (the same filesystem: each move is one rename), and only when all of them are whole
are they moved into place, the one that makes the set visible (`last`) after the others.
A failure before the moves changes nothing in the target folder.

Only files the tool wrote there are ever removed: the folder may be the user's (docs/ with
their own graphs/*.svg), so what a run wrote is recorded in a manifest beside them, and a
later run removes only recorded files it no longer writes.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from tracker.common.atomic import write_all
from tracker.common.errors import TrackerError
from tracker.common.regular import read_regular_text

STAGING_PREFIX = ".tracker-staging-"
# A staging folder this old is left from a killed run (a live run's exists for seconds).
STALE_AFTER = 15 * 60


def write_file_set(
    directory: Path,
    files: Mapping[str, str | bytes],
    *,
    last: str | None = None,
    manifest: str | None = None,
) -> list[Path]:
    """Write `files` (paths relative to `directory`, `/`-separated) and return their paths.

    `last` is moved into place after every other file. With `manifest` (a file name), the
    files recorded there by an earlier run and not written now are removed. Raises a
    TrackerError naming the folder or the file that could not be written."""
    make_output_dir(directory)
    _sweep_staging(directory)
    try:
        # The pid in the name lets a later run remove it at once once this one is gone.
        staging = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=directory))
    except OSError as exc:
        raise _cannot("write to", directory, exc) from None
    try:
        for name, content in files.items():
            _stage(staging / name, content, directory / name)
        earlier = _recorded(directory / manifest) if manifest else set()
        if manifest:  # before any move: a kill after one still knows what is the tool's
            _replace(_stage_manifest(staging, earlier | set(files)), directory / manifest)
        order = sorted(n for n in files if n != last)
        if last is not None and last in files:
            order.append(last)
        for name in order:
            _replace(staging / name, directory / name)
        if manifest:
            _replace(_stage_manifest(staging, set(files)), directory / manifest)
            for stale in sorted(earlier - set(files)):
                with contextlib.suppress(OSError):
                    (directory / stale).unlink()
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [directory / name for name in files]


def make_output_dir(directory: Path) -> None:
    """Create `directory` (and its parents), or one clear line saying why it cannot be."""
    if directory.exists() and not directory.is_dir():
        raise TrackerError(f"{directory} exists and is not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _cannot("create output directory", directory, exc) from None


def check_output_dir(directory: Path) -> None:
    """Say now, without creating anything, when `directory` cannot be made: for commands
    that create it only if they come to write something."""
    if directory.exists():
        if not directory.is_dir():
            raise TrackerError(f"{directory} exists and is not a directory")
        return
    ancestor = directory.absolute().parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        reason = os.strerror(errno.ENOTDIR)
    elif not os.access(ancestor, os.W_OK | os.X_OK):
        reason = os.strerror(errno.EACCES)
    else:
        return
    raise TrackerError(f"cannot create output directory {directory}: {reason}")


def _stage(path: Path, content: str | bytes, final: Path) -> None:
    data = content.encode("utf-8") if isinstance(content, str) else content
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as handle:
            write_all(handle, data)
            handle.flush()
            os.fsync(handle.fileno())
        # The usual mode for a new file (the staging folder itself is private).
        path.chmod(0o666 & ~_umask())
    except OSError as exc:
        raise _cannot("write", final, exc) from None


def _stage_manifest(staging: Path, names: set[str]) -> Path:
    path = staging / ".manifest"
    doc = {"written-by": "sglang-tracker", "files": sorted(names)}
    _stage(path, json.dumps(doc, indent=1) + "\n", path)
    return path


def _replace(source: Path, target: Path) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        source.replace(target)
    except OSError as exc:
        raise _cannot("write", target, exc) from None


def _recorded(path: Path) -> set[str]:
    """The relative paths an earlier run recorded; never one outside the folder."""
    try:
        doc = json.loads(read_regular_text(path))
    except (OSError, ValueError):
        return set()
    names = doc.get("files", []) if isinstance(doc, dict) else []
    return {
        n
        for n in names
        if isinstance(n, str) and n and not n.startswith("/") and ".." not in n.split("/")
    }


def _sweep_staging(directory: Path) -> None:
    """Remove staging folders killed runs left behind, never a live run's: one whose pid no
    longer runs on this machine, or (a folder from another machine, or without a pid) by
    age."""
    cutoff = time.time() - STALE_AFTER
    with contextlib.suppress(OSError):
        for entry in directory.iterdir():
            if not entry.name.startswith(STAGING_PREFIX):
                continue
            if _owner_gone(entry.name) or _older(entry, cutoff):
                shutil.rmtree(entry, ignore_errors=True)


def _owner_gone(name: str) -> bool:
    pid, dash, _ = name.removeprefix(STAGING_PREFIX).partition("-")
    if not (dash and pid.isdigit()) or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, another user's
        return False
    return False


def _older(path: Path, cutoff: float) -> bool:
    try:
        return path.lstat().st_mtime < cutoff
    except OSError:
        return False


def _cannot(what: str, path: Path, exc: OSError) -> TrackerError:
    return TrackerError(f"cannot {what} {path}: {exc.strerror or exc}")


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
