"""Reading a file that must be a regular file: what the tool reads from its cache, its
configuration and its state could be anything the user (or an attacker) put there.

`Path.read_bytes()` on a FIFO blocks until something writes to it, forever; on a device
such as /dev/zero it reads until memory runs out. Here the file is opened without blocking,
checked to be a regular file, and read no further than a size limit.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


class NotRegularFile(OSError):
    """The path names a FIFO, a device, a socket or a directory, or a file over the limit."""


def read_regular(path: Path, limit: int | None = None) -> bytes:
    """The bytes of `path`; raises NotRegularFile (an OSError) when it is not a regular
    file or is larger than `limit` bytes, and OSError when it cannot be read."""
    # O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for one.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(errno.EINVAL, "not a regular file", str(path))
        if limit is not None and info.st_size > limit:
            raise NotRegularFile(errno.EFBIG, f"larger than {limit} bytes", str(path))
        with os.fdopen(fd, "rb", closefd=True) as handle:
            fd = -1
            data = handle.read() if limit is None else handle.read(limit + 1)
    finally:
        if fd >= 0:
            os.close(fd)
    if limit is not None and len(data) > limit:  # it grew while being read
        raise NotRegularFile(errno.EFBIG, f"larger than {limit} bytes", str(path))
    return data


def read_regular_text(path: Path, limit: int | None = None) -> str:
    """`read_regular` decoded as UTF-8 (UnicodeDecodeError when it is not)."""
    return read_regular(path, limit).decode("utf-8")
