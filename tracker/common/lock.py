"""One run at a time: an advisory lock on a file beside what two runs must not share.

Two `watch --post` runs on one state file (an overlapping cron job, a second CI job) would
both read "nothing filed yet" and both file. The lock is the kernel's POSIX record lock
(`lockf`): it belongs to the process, so a killed run never leaves a stale lock behind, and
a process it starts never holds it (an flock is shared with every process that inherits
the open file, and outlives the run in whichever of them lives longest). The lock file
itself stays (removing it would let a third run lock a new file while the second holds
the old one).
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

from tracker.common.errors import TrackerError

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Linux or macOS: no lock, as before
    fcntl = None  # type: ignore[assignment]


@contextlib.contextmanager
def held(path: Path, what: str) -> Iterator[None]:
    """Hold the lock `path` for the block; a TrackerError naming `what` (and the pid that
    holds it) when another process holds it. Without permission to create the lock file,
    the block runs unlocked (a read-only place has nothing to protect)."""
    if fcntl is None:
        yield
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError:
        yield
        return
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EAGAIN):
                raise
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            by = f" (pid {holder})" if holder.isdigit() else ""
            raise TrackerError(
                f"another tracker run is using {what}{by}; run again when it has finished"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock
