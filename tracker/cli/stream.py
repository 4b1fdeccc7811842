"""Standard output that loses nothing silently.

Python's buffered writer passes a large write straight to the file and reports a short
write (the disk took part of it: a nearly full disk, a file size limit) only through its
return value, which the text layer above ignores: a JSON or SARIF document redirected to a
file would end cut short with exit 0. Here every write goes out whole or raises the error
that stopped it (ENOSPC, EFBIG), which the entry point turns into one line and exit 2.
"""

from __future__ import annotations

import io
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer


class _WholeWrites(io.RawIOBase):
    """A file descriptor whose `write` writes everything it is given, or raises."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data: ReadableBuffer) -> int:
        view = memoryview(data).cast("B")
        total = len(view)
        while view:
            written = os.write(self._fd, view)  # raises once the disk takes nothing more
            view = view[written:]
        return total


def install_whole_stdout() -> None:
    """Replace `sys.stdout` with the same stream (encoding, errors, line buffering) whose
    writes are whole; nothing when stdout is not a plain file descriptor (tests, IDEs)."""
    current = sys.stdout
    try:
        fd = current.fileno()
    except (AttributeError, OSError, ValueError):
        return
    current.flush()
    raw = _WholeWrites(fd)
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(raw),
        encoding=current.encoding,
        errors=current.errors,
        line_buffering=bool(getattr(current, "line_buffering", False)),
        write_through=False,
    )
