"""Building the snapshots of many versions on every core.

Adjacent versions share most of the files the analysis reads, so a version costs what
changed since the one before it, provided both are analysed in the same process: its facts
are still in memory (tracker.extract.store.recent) and its analysis can be reused
(tracker.analysis.reuse). The versions are therefore cut into one contiguous segment per
two cores, of about equal cost, and two workers build each segment from its two ends towards
the middle, parsing, analysing and caching as they go. Only the snapshots cross process
boundaries, through the snapshot cache: facts never do (unpickling them cost as much as
parsing).

A segment's first version costs all of its files; each later one, the files that differ from
the version before it, plus the analysis itself.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import queue
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

from tracker.common.cachedir import UNWRITABLE, first_unwritable
from tracker.common.collector import tune_collector
from tracker.common.errors import TrackerError
from tracker.common.lifeline import start_worker

Progress = Callable[[int, int], None]
FileKey = tuple[str, bool]  # (content id, read in full)

# What analysing a version costs beside its files, in files parsed (an index, an interface
# and a compat table take about as long as parsing thirty model files).
ANALYSIS_COST = 30


def version_costs(files: Sequence[set[FileKey]]) -> list[tuple[int, int]]:
    """Per version, (its cost as a run's first version, its cost after the one before it)."""
    out = []
    for i, keys in enumerate(files):
        after = len(keys - files[i - 1]) if i else len(keys)
        out.append((len(keys) + ANALYSIS_COST, after + ANALYSIS_COST))
    return out


def split_segments(costs: Sequence[tuple[int, int]], most: int) -> list[range]:
    """Cut the versions into at most `most` contiguous segments whose largest cost is
    smallest (dynamic programming: a version's cost depends on whether it starts a segment,
    which defeats greedy filling); among equal cuts, the one with more segments."""
    n = len(costs)
    if n == 0:
        return []
    after = [0]
    for _, cost in costs:
        after.append(after[-1] + cost)

    def segment(start: int, end: int) -> int:  # versions start .. end - 1
        return costs[start][0] + after[end] - after[start + 1]

    # worst[m][j]: the smallest largest cost of m segments covering the first j versions.
    infinite = float("inf")
    worst = [[infinite] * (n + 1) for _ in range(most + 1)]
    cut_at = [[0] * (n + 1) for _ in range(most + 1)]
    worst[0][0] = 0
    for m in range(1, most + 1):
        for j in range(m, n + 1):
            for i in range(m - 1, j):
                value = max(worst[m - 1][i], segment(i, j))
                if value < worst[m][j]:
                    worst[m][j], cut_at[m][j] = value, i
    best = min(range(1, min(most, n) + 1), key=lambda m: (worst[m][n], -m))
    out: list[range] = []
    end = n
    for m in range(best, 0, -1):
        start = cut_at[m][end]
        out.append(range(start, end))
        end = start
    return out[::-1]


def build_segments(
    kind: str,
    location: str,
    segments: Sequence[Sequence[str]],
    workers: int,
    *,
    use_shipped: bool,
    progress: Progress | None = None,
) -> None:
    """Build and cache the snapshot of every version of every segment on `workers`
    processes, two to a segment: one walks it from its first version forward, the other
    from its last backward, each claiming the next version at its end until they meet, so
    the two finish together however the cost is spread. Raises the first error a worker
    reports."""
    import multiprocessing

    total = sum(len(segment) for segment in segments)
    # A fresh interpreter per worker: a forked one would share the parent's git helper
    # processes (and its pools).
    context = multiprocessing.get_context("spawn")
    done_queue: Any = context.Queue()
    # What the workers log comes back here and is said by this process's handlers (the
    # CLI's writes analysed text out visibly): a worker has no handler of its own, and
    # Python's last resort would print the text raw on the terminal.
    notes: Any = context.Queue()
    said: set[str] = set()  # what several workers say is said once
    # Per segment, the next index to claim from each end ([2s] forward, [2s + 1] backward).
    ends: Any = context.Array("i", [i for s in segments for i in (0, len(s) - 1)])
    walkers = [(s, step) for s in range(len(segments)) for step in (1, -1)][: max(workers, 1)]
    done = 0
    if progress is not None:
        progress(0, total)
    with ProcessPoolExecutor(
        max_workers=len(walkers),
        mp_context=context,
        initializer=_start,
        initargs=(os.getpid(), done_queue, ends, notes),
    ) as pool:
        pending: set[Future[str]] = {
            pool.submit(_walk, kind, location, list(segments[s]), s, step, use_shipped)
            for s, step in walkers
        }
        errors: list[str] = []
        while pending:
            finished, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            errors += [error for future in finished if (error := future.result())]
            done += _drain(done_queue, done, total, progress, block=False)
            _say_notes(notes, said)
        if errors:
            _say_notes(notes, said)
            raise TrackerError(errors[0])
        # A worker's last report can still be on its way when its result is in.
        _drain(done_queue, done, total, progress, block=True)
    _say_notes(notes, said)  # the workers have exited: whatever they logged is in


def _say_notes(notes: Any, said: set[str]) -> None:
    while True:
        try:
            record = notes.get_nowait()
        except (queue.Empty, OSError, ValueError):
            return
        message = record.getMessage()
        if message in said or (getattr(record, UNWRITABLE, False) and not first_unwritable()):
            continue  # said by another worker, or (that the cache is unwritable) by this one
        said.add(message)
        logging.getLogger(record.name).handle(record)


def _drain(
    done_queue: Any, done: int, total: int, progress: Progress | None, *, block: bool
) -> int:
    """Count the versions reported finished since `done` (waiting for the rest when
    `block`); returns how many."""
    got = 0
    while done + got < total:
        try:
            done_queue.get(timeout=5) if block else done_queue.get_nowait()
        except queue.Empty:
            break
        got += 1
        if progress is not None:
            progress(done + got, total)
    return got


_done: Any = None
_ends: Any = None


def _start(parent: int, done_queue: Any, ends: Any, notes: Any) -> None:
    """Worker set-up: tied to the process that started it, where it reports finished
    versions, claims the next and sends its warnings, parsing in this process only (the
    walkers already use every core), and the collector tuned as the CLI tunes it."""
    global _done, _ends
    from tracker.compare.workspace import FILE_WARNING

    start_worker(parent)
    _done, _ends = done_queue, ends
    handler = logging.handlers.QueueHandler(notes)
    # A file's warning is kept with the snapshot and said when the parent reads it.
    handler.addFilter(lambda record: FILE_WARNING not in record.getMessage())
    package_log = logging.getLogger("tracker")
    package_log.addHandler(handler)
    package_log.setLevel(logging.WARNING)
    package_log.propagate = False
    os.environ["TRACKER_JOBS"] = "1"
    tune_collector()


def _claim(segment: int, step: int) -> int | None:
    """The next index of `segment` from this walker's end, None once the ends have met."""
    with _ends.get_lock():
        low, high = _ends[2 * segment], _ends[2 * segment + 1]
        if low > high:
            return None
        if step > 0:
            _ends[2 * segment] = low + 1
            return int(low)
        _ends[2 * segment + 1] = high - 1
        return int(high)


def _walk(
    kind: str, location: str, versions: list[str], segment: int, step: int, use_shipped: bool
) -> str:
    """Worker: build and cache snapshots from one end of a segment until the other walker
    is met; '' or the error message."""
    from tracker.compare.workspace import Workspace
    from tracker.sources import open_source

    try:
        source = open_source(f"{kind}:{location}" if kind != "pypi" else "pypi", None, Path.cwd())
        workspace = Workspace(source, use_shipped=use_shipped)
        while (index := _claim(segment, step)) is not None:
            workspace.snapshot_of(source, versions[index])
            _done.put(versions[index])
    except TrackerError as exc:
        return str(exc)
    return ""
