"""Facts for many files at once: cached by content id, parsed in parallel when missing.

A file identical in two releases (or in a release archive and a git tag) has one content
id and is parsed once, ever. Cache entries are keyed by (query-set hash, facts format,
content id), checksummed, and written atomically, so a killed run or two concurrent runs
leave only whole, valid entries behind; a corrupt entry is rebuilt.

Where the user's cache has no entry, the shipped facts pack (tracker.extract.pack) may: a
file whose bytes are those of a released blob is then not parsed at all, whichever source
it comes from. `use_shipped(False)` (`--no-shipped`) turns the pack off.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import pickle
import shutil
import tempfile
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

from tracker.common.atomic import write_bytes_atomic
from tracker.common.cachedir import cache_root, cannot_write_cache
from tracker.common.lifeline import start_worker
from tracker.common.regular import read_regular
from tracker.extract import pack
from tracker.extract.facts import FACTS_FORMAT, ModuleFacts
from tracker.extract.parse import extract_facts, query_set_hash
from tracker.sources.base import VersionTree

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]

_MAGIC = b"TFC1"
# Below this many files to parse, starting worker processes costs more than it saves.
_PARALLEL_THRESHOLD = 48


def facts_dir(root: Path | None = None) -> Path:
    return (root or cache_root()) / "facts" / f"{query_set_hash()}-f{FACTS_FORMAT}"


def _entry_path(base: Path, content_id: str, full: bool = True) -> Path:
    suffix = "pkl" if full else "defs.pkl"
    return base / content_id[:2] / f"{content_id}.{suffix}"


def _encode(facts: ModuleFacts) -> bytes:
    payload = pickle.dumps(facts, protocol=pickle.HIGHEST_PROTOCOL)
    return _MAGIC + hashlib.sha256(payload).digest()[:16] + payload


def _decode(blob: bytes) -> ModuleFacts | None:
    if not blob.startswith(_MAGIC) or len(blob) < 20:
        return None
    digest, payload = blob[4:20], blob[20:]
    if hashlib.sha256(payload).digest()[:16] != digest:
        return None
    try:
        facts = pickle.loads(payload)
    except Exception:  # any unpickling failure means the entry is unusable
        return None
    return facts if isinstance(facts, ModuleFacts) else None


_shipped_on = [True]


def use_shipped(enabled: bool) -> None:
    """Whether facts may come from the shipped pack (the workspace sets it from
    `--no-shipped`, so a true-cold run parses everything, as before the pack existed)."""
    _shipped_on[0] = enabled


def _shipped() -> pack.Pack | None:
    return pack.shipped_pack() if _shipped_on[0] else None


def read_shipped(content_id: str, full: bool) -> ModuleFacts | None:
    """The facts of a released blob from the shipped pack, None when it has none."""
    shipped = _shipped()
    if shipped is None:
        return None
    try:
        return shipped.facts(content_id, full)
    except pack.PackError as exc:
        pack.reject(exc)
        return None


def read_cached(
    base: Path, content_id: str, full: bool = True, corrupt: list[str] | None = None
) -> ModuleFacts | None:
    """The cached facts, None when missing or corrupt; a corrupt entry is warned about, or
    added to `corrupt` for the caller to sum up (a whole damaged cache is one line)."""
    try:
        blob = read_regular(_entry_path(base, content_id, full))  # a FIFO must not hang
    except OSError:
        return None
    facts = _decode(blob)
    if facts is not None and (facts.content_id != content_id or facts.definitions_only == full):
        facts = None  # a valid entry of another file, copied or renamed into this place
    if facts is None:
        if corrupt is None:
            log.warning("facts cache entry %s is corrupt; rebuilding it", content_id)
        else:
            corrupt.append(content_id)
    return facts


def _read_entry(
    base: Path, content_id: str, full: bool, corrupt: list[str] | None = None
) -> ModuleFacts | None:
    """From the user's cache, else from the shipped pack (which is read-only and was
    checked on load: nothing is copied into the cache)."""
    return read_cached(base, content_id, full, corrupt) or read_shipped(content_id, full)


# The facts caches this process has said are damaged: a run reads its cache in several
# batches (seed files, then what they import), and a wholly corrupt cache is one line for
# the run, not one per batch. Kept per folder, so that another cache is still reported.
_corrupt_said: set[Path] = set()


def _warn_corrupt(base: Path, corrupt: list[str]) -> None:
    if not corrupt:
        return
    if base in _corrupt_said:
        log.debug("%d more corrupt facts cache entries; rebuilding them", len(corrupt))
        return
    _corrupt_said.add(base)
    if len(corrupt) == 1:
        log.warning(
            "facts cache entry %s is corrupt; rebuilding it (and any other this run finds)",
            corrupt[0],
        )
    else:
        log.warning(
            "%d facts cache entries are corrupt (%s, ...); rebuilding them (and any other "
            "this run finds)",
            len(corrupt),
            corrupt[0],
        )


def _parse_and_store(
    base: Path, path: str, content_id: str, data: bytes, full: bool = True
) -> ModuleFacts:
    facts = extract_facts(path, content_id, data, full=full)
    try:
        _store(base, content_id, full, facts)
    except OSError as exc:  # a full or read-only disk costs speed, not correctness
        cannot_write_cache(base, exc)
    return facts


def _store(base: Path, content_id: str, full: bool, facts: ModuleFacts) -> None:
    entry = _entry_path(base, content_id, full)
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry)  # a folder where the entry goes would fail every run
    # No fsync: entries are checksummed, a torn one is detected and rebuilt.
    write_bytes_atomic(entry, _encode(facts), durable=False)


def _parse_batch(
    base: str, items: list[tuple[str, str, bytes, bool]]
) -> tuple[list[ModuleFacts], OSError | None]:
    """Worker: parse and cache a batch; (its facts, the error that stopped it caching
    them). The main process says that error: each worker saying it would be a line per
    worker. `base` empty: the main process found the cache unwritable before."""
    out = []
    failed: OSError | None = None
    for path, content_id, data, full in items:
        facts = extract_facts(path, content_id, data, full=full)
        if base and failed is None:
            try:
                _store(Path(base), content_id, full, facts)
            except OSError as exc:
                failed = exc
        out.append(facts)
    return out, failed


def _batch_facts(base: str, done: tuple[list[ModuleFacts], OSError | None]) -> list[ModuleFacts]:
    facts, failed = done
    if failed is not None:
        cannot_write_cache(Path(base), failed)
    return facts


_writable: dict[Path, bool] = {}


def _for_workers(base: Path) -> str:
    """`base` for the workers' batches, or "" when this process finds it cannot write
    there (said once, here)."""
    if base not in _writable:
        try:
            base.mkdir(parents=True, exist_ok=True)
            fd, probe = tempfile.mkstemp(prefix=".probe.", suffix=".tmp", dir=base)
            try:  # data, not just a name: a full disk still has room for an empty file
                data = memoryview(bytes(4096))
                while data:  # a short write is how a full disk first answers
                    data = data[os.write(fd, data) :]
                os.fsync(fd)
            finally:
                os.close(fd)
                Path(probe).unlink()
            _writable[base] = True
        except OSError as exc:
            cannot_write_cache(base, exc)
            _writable[base] = False
    return str(base) if _writable[base] else ""


def default_jobs() -> int:
    env = os.environ.get("TRACKER_JOBS")
    if env and env.isdigit() and int(env) > 0:
        return int(env)
    return max(1, os.cpu_count() or 1)


class _Recent:
    """Facts handed out for the last two versions, kept in memory: consecutive releases
    share most files, and a range should unpickle each of them once, not once per version.
    Older entries are dropped, so memory stays at about two versions' worth."""

    def __init__(self) -> None:
        self.current: dict[tuple[str, bool], ModuleFacts] = {}
        self.previous: dict[tuple[str, bool], ModuleFacts] = {}

    def get(self, key: tuple[str, bool]) -> ModuleFacts | None:
        found = self.current.get(key) or self.previous.get(key)
        if found is not None:
            self.current[key] = found
        return found

    def put(self, key: tuple[str, bool], facts: ModuleFacts) -> None:
        self.current[key] = facts

    def next_version(self) -> None:
        self.previous, self.current = self.current, {}


recent = _Recent()


def load_facts(
    tree: VersionTree,
    paths: Iterable[str],
    *,
    progress: Progress | None = None,
    jobs: int | None = None,
    definitions_only: frozenset[str] = frozenset(),
) -> dict[str, ModuleFacts]:
    """Facts for `paths` of `tree`, from the cache where possible; the paths also in
    `definitions_only` are read with the definition queries alone."""
    base = facts_dir()
    files: Mapping[str, str] = tree.files
    result: dict[str, ModuleFacts] = {}
    missing: list[tuple[str, str, bool]] = []
    corrupt: list[str] = []
    for path in sorted(set(paths)):
        cid = files[path]
        full = path not in definitions_only
        cached = recent.get((cid, full))
        if cached is None and (cid, full) in _ahead:
            # Parsed ahead: taken from the pool's answer below, not unpickled from disk.
            missing.append((path, cid, full))
            continue
        cached = cached or _read_entry(base, cid, full, corrupt)
        if cached is None:
            missing.append((path, cid, full))
        else:
            recent.put((cid, full), cached)
            result[path] = _at(cached, path)
    _warn_corrupt(base, corrupt)
    missing = _collect_ahead(missing, result)
    total = len(missing)
    if progress is not None:
        progress(0, total)
    if not missing:
        return result
    workers = min(jobs or default_jobs(), max(1, total // 16))
    if workers <= 1 or total < _PARALLEL_THRESHOLD:
        for done, (path, cid, full) in enumerate(missing, 1):
            result[path] = _parse_and_store(base, path, cid, tree.read(path), full)
            recent.put((cid, full), result[path])
            if progress is not None:
                progress(done, total)
        return result
    batches = _batches([(path, cid, tree.read(path), full) for path, cid, full in missing], workers)
    done = 0
    pool = _pool(workers)
    target = _for_workers(base)
    for batch in pool.map(_parse_batch, [target] * len(batches), batches):
        batch_facts = _batch_facts(target, batch)
        for facts in batch_facts:
            result[facts.path] = facts
            recent.put((facts.content_id, not facts.definitions_only), facts)
        done += len(batch_facts)
        if progress is not None:
            progress(done, total)
    return result


# Files being parsed ahead (parse_ahead), by (content id, read in full): the cache folder
# the batch writes to and its future.
_ahead: dict[tuple[str, bool], tuple[str, Future[tuple[list[ModuleFacts], OSError | None]]]] = {}


def parse_ahead(tree: VersionTree, paths: Iterable[str], definitions_only: frozenset[str]) -> int:
    """Start parsing, on the worker pool, the files of `paths` whose facts are neither in
    memory nor cached, and return at once: a later `load_facts` takes the results instead
    of parsing them. For the next version of a command, while this one is analysed.
    Returns how many files were sent."""
    base = facts_dir()
    files = tree.files
    shipped = _shipped()
    todo: dict[tuple[str, bool], str] = {}
    for path in sorted(set(paths)):
        cid = files[path]
        key = (cid, path not in definitions_only)
        if key in todo or key in _ahead or recent.get(key) is not None:
            continue
        if shipped is not None and shipped.has(*key):
            continue
        if not _entry_path(base, cid, key[1]).is_file():
            todo[key] = path
    workers = min(default_jobs(), len(todo) // 16)
    if workers < 2:
        return 0  # too few to be worth a round trip: load_facts parses them in place
    items = [(path, cid, tree.read(path), full) for (cid, full), path in todo.items()]
    pool = _pool(workers)
    for batch in _batches(items, workers):
        target = _for_workers(base)
        future = pool.submit(_parse_batch, target, batch)
        for _, cid, _, full in batch:
            _ahead[(cid, full)] = (target, future)
    return len(items)


Item = tuple[str, str, bytes, bool]  # (path, content id, bytes, read in full)


def _batches(items: list[Item], workers: int) -> list[list[Item]]:
    """Four batches per worker, big and small files interleaved so they take similar time."""
    count = workers * 4
    return [batch for i in range(count) if (batch := items[i::count])]


def _at(facts: ModuleFacts, path: str) -> ModuleFacts:
    """`facts` under `path`: one content id can sit at several paths (a file moved or
    copied between versions)."""
    return facts if facts.path == path else facts._replace(path=path)


def _collect_ahead(
    missing: list[tuple[str, str, bool]], result: dict[str, ModuleFacts]
) -> list[tuple[str, str, bool]]:
    """Fill `result` with the missing files that were parsed ahead (waiting for them);
    returns the ones still missing."""
    if not _ahead:
        return missing
    still = []
    for path, cid, full in missing:
        ahead = _ahead.pop((cid, full), None)
        if ahead is None:
            still.append((path, cid, full))
            continue
        target, future = ahead
        for facts in _batch_facts(target, future.result()):
            recent.put((facts.content_id, not facts.definitions_only), facts)
        found = recent.get((cid, full))
        assert found is not None
        result[path] = _at(found, path)
    return still


_pools: dict[int, ProcessPoolExecutor] = {}


def _pool(workers: int) -> ProcessPoolExecutor:
    """One pool per process, started on first use: a range of releases would otherwise
    fork fresh workers (from an ever larger parent) for every release."""
    if workers not in _pools:
        _pools[workers] = ProcessPoolExecutor(
            max_workers=workers, initializer=start_worker, initargs=(os.getpid(),)
        )
        if len(_pools) == 1:
            atexit.register(_shutdown_pools)
    return _pools[workers]


def _shutdown_pools() -> None:
    for pool in _pools.values():
        pool.shutdown(cancel_futures=True)
    _pools.clear()
