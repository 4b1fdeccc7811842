"""Atomic file writes: a reader sees the old file or the whole new one, never a torn one.

Every file the tool writes (cache entries, snapshots, downloaded archives, the watch state)
goes through here, so a killed process or a full disk leaves nothing half-written behind.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO


@contextlib.contextmanager
def atomic_writer(path: Path, mode: str = "wb", *, durable: bool = True) -> Iterator[IO[bytes]]:
    """Yield a file object; on success its content replaces `path` in one rename.

    `durable` also syncs the data to disk before the rename (a power cut cannot leave an
    empty file under the final name); a cache whose entries are checksummed can skip it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        # mkstemp makes the file private; a report or snapshot should get the usual mode.
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, mode) as handle:
            yield handle
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if exc.filename is None and exc.errno is not None:
            # A failed write names no file: name the one the caller asked for.
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def write_all(handle: IO[bytes], data: bytes) -> None:
    """Write every byte of `data`. A buffered file hands a large write straight to the
    disk and reports a short one (a nearly full disk, a size limit) only by its return
    value: the file would end cut short, without an error. Writing the rest raises it."""
    view = memoryview(data)
    while view:
        view = view[handle.write(view) :]


def write_bytes_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    with atomic_writer(path, durable=durable) as handle:
        write_all(handle, data)


def write_text_atomic(path: Path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))
