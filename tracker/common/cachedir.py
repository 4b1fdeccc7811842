"""Where the tool keeps what it can rebuild: downloaded releases, clones, parsed facts."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import time
from pathlib import Path

log = logging.getLogger(__name__)

_unwritable: set[Path] = set()
# Set on the log record of that warning: a process gathering its workers' records tells it
# from the others by this, not by its words.
UNWRITABLE = "cache_unwritable"


def first_unwritable() -> bool:
    """True the first time this process finds the cache folder unwritable: a process that
    gathers its workers' warnings says theirs only if it has not said its own."""
    root = cache_root()
    if root in _unwritable:
        return False
    _unwritable.add(root)
    return True


def cannot_write_cache(where: Path, exc: OSError) -> None:
    """Say once per process (and cache folder) that the cache cannot be written (a
    read-only or full disk): the facts, snapshots and downloads then cost time, not the
    answer. Workers do not say it: they hand it to the process that started them."""
    if not first_unwritable():
        return
    log.warning(
        "cannot write to the cache in %s (%s); carrying on without it (TRACKER_CACHE_DIR "
        "can name a writable folder)",
        where,
        exc.strerror or exc,
        extra={UNWRITABLE: True},
    )


def cache_root() -> Path:
    """`TRACKER_CACHE_DIR` when set (tests and CI point it at a scratch folder), else the
    platform's user cache directory."""
    override = os.environ.get("TRACKER_CACHE_DIR")
    if override:
        return Path(override)
    return _platform_cache_dir()


@functools.cache
def _platform_cache_dir() -> Path:
    # Asked for once per file a command reads; the platform's answer does not change.
    import platformdirs  # deferred: keeps `tracker --help` fast

    return Path(platformdirs.user_cache_dir("sglang-tracker"))


# What a killed run leaves in the cache: temporary files of atomic writes (`.NAME.XXXX.tmp`)
# and scratch folders of downloads and clones. A live run's temporary file lasts for
# milliseconds, its download or clone for minutes (a clone of SGLang over a slow link, for
# longer): only those untouched for so long are taken for a dead run's.
LEFTOVER_AGE = 10 * 60
SCRATCH_AGE = 2 * 60 * 60
_SCRATCH_PREFIXES = (".download-", ".clone-")
# The sweep walks the whole cache (some milliseconds for thousands of entries); not on
# every run.
SWEEP_EVERY = 10 * 60
_SWEEP_MARK = ".last-sweep"
# Snapshots cut down to some classes (tracker.compare.slices), a folder per file they were
# cut from: one nothing was cut into for this long is taken for the copies of a file that
# is gone (a refresh, a reinstall), and removed; cutting again, if it is not, is cheap.
CUT_COPIES = "slices"
CUT_COPIES_AGE = 7 * 24 * 60 * 60


def sweep_leftovers(root: Path | None = None, *, now: float | None = None) -> int:
    """Remove the temporary files and scratch folders killed runs left in the cache, and
    cut copies long unused, at most once every SWEEP_EVERY seconds; returns how many were
    removed. Never fails: a cache it cannot sweep is only a little larger."""
    root = root if root is not None else cache_root()
    now = time.time() if now is None else now
    mark = root / _SWEEP_MARK
    try:
        if now - mark.stat().st_mtime < SWEEP_EVERY:
            return 0
    except OSError:
        pass  # never swept (or no cache yet)
    if not root.is_dir():
        return 0
    removed = 0
    for folder, subfolders, names in os.walk(root):
        here = Path(folder)
        if here == root / CUT_COPIES:
            gone = [n for n in subfolders if _remove_if_old(here / n, now - CUT_COPIES_AGE)]
            subfolders[:] = [n for n in subfolders if n not in gone]
            removed += len(gone)
        for name in [n for n in subfolders if n.startswith(_SCRATCH_PREFIXES)]:
            subfolders.remove(name)
            removed += _remove_if_old(here / name, now - SCRATCH_AGE)
        for name in names:
            if name.startswith(".") and name.endswith(".tmp"):
                removed += _remove_if_old(here / name, now - LEFTOVER_AGE)
    with contextlib.suppress(OSError):
        mark.touch()
        os.utime(mark, (now, now))
    return removed


def _remove_if_old(path: Path, cutoff: float) -> int:
    try:
        if path.lstat().st_mtime >= cutoff:
            return 0
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    except OSError:
        return 0
    return 1
