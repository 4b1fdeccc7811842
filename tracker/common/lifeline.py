"""Worker processes live no longer than the process that started them.

A pool worker blocks on its task queue, and a forked one holds both ends of that queue's
pipe, so it never sees the end of it when the main process is killed (kill -9, SIGTERM,
SIGHUP): it would wait forever, holding the stdout and stderr it inherited, and a pipeline
or CI step reading them would never finish. So every worker is tied to its parent: the
kernel kills it when the parent dies (Linux), a thread checks the parent's pid (elsewhere,
and the moment before the first), and it never holds stdout. Ctrl-C is the main process's
to report: a worker leaves at once and quietly.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import multiprocessing
import os
import signal
import sys
import threading
import time
from types import FrameType

_PR_SET_PDEATHSIG = 1
# How often a worker checks that its parent is still there, where the kernel cannot tell it.
WATCH_INTERVAL = 0.5


def start_worker(parent: int) -> None:
    """First thing in every pool worker (its initializer): `parent` is the pid of the
    process that made the pool."""
    _die_with_parent()
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(1)
    threading.Thread(target=_watch, args=(parent,), name="parent-watch", daemon=True).start()
    # Workers never print; stdout is the user's, and a worker must not keep it open.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):  # SIGHUP is POSIX only
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), _leave)


def stop_workers() -> None:
    """Kill this process's worker processes at once: after Ctrl-C nothing they would still
    compute is wanted, and waiting for their current task is what made stopping slow."""
    for child in multiprocessing.active_children():
        child.kill()


def _die_with_parent() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # no prctl: the watch thread alone ends the worker


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(WATCH_INTERVAL)
    os._exit(1)


def _leave(signum: int, frame: FrameType | None) -> None:
    os._exit(128 + signum)
