"""Faults while the tool writes and reads its files: a process killed mid-write, a write
that fails half-way (a full disk), corrupt facts-cache entries and cached snapshots. A
reader must only ever see a whole file or none, and the next run must give the answer a
clean run gives."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import pickle
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sgl_trees import build, tree

import tracker.common.atomic
from tests.reliability.support import (
    MAIN,
    SRT,
    FailingOs,
    Run,
    fresh_cache,
    load_cached_snapshot,
    run_cli,
    run_process,
    split_cached_snapshot,
    tracker_command,
    tracker_env,
)
from tracker.common.atomic import write_bytes_atomic
from tracker.common.cachedir import LEFTOVER_AGE, SCRATCH_AGE, SWEEP_EVERY, sweep_leftovers
from tracker.compare.snapshot import Builder, Snapshot, load_file, to_json, write_file
from tracker.extract.parse import extract_facts
from tracker.extract.store import _decode, _encode, facts_dir, load_facts
from tracker.sources.base import SourceIdentity, content_id
from tracker.sources.dir import DirSource

MakeDir = Callable[..., Path]
WORKER = f"{SRT}speculative/eagle_worker.py"


def _files_under(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def _entries(cache: Path) -> list[Path]:
    return [p for p in _files_under(cache / "facts") if p.name.endswith(".pkl")]


# -- a process killed while it writes -----------------------------------------------------------

WRITER = r"""
import sys
from pathlib import Path
sys.path[:0] = [sys.argv[3], sys.argv[3] + "/tests/unit"]
mode, target = sys.argv[1], Path(sys.argv[2])
from sgl_trees import build, tree
from tracker.common.atomic import write_bytes_atomic
from tracker.extract.store import _parse_and_store
from tracker.compare.snapshot import Builder, Snapshot, write_file
from tracker.sources.base import SourceIdentity, content_id

def snapshot(version):
    built = build(version=version)
    ident = SourceIdentity("dir", "/x", version, "r")
    return Snapshot(version, ident, "d", Builder("t", "q", "r"), built.interface, built.compat)

payloads = [b"A" * 3_000_000, b"B" * 5_000_000]
snaps = [snapshot("v1"), snapshot("v2")]
source = tree()["python/sglang/srt/speculative/eagle_worker.py"].encode() * 40
i = 0
while True:
    if mode == "atomic":
        write_bytes_atomic(target, payloads[i % 2])
    elif mode == "facts":
        _parse_and_store(target, "python/sglang/srt/speculative/eagle_worker.py",
                         content_id(source), source)
    else:
        write_file(target, snaps[i % 2])
    if i == 0:
        print("ready", flush=True)
    i += 1
"""


def _snapshot(version: str) -> Snapshot:
    built = build(version=version)
    identity = SourceIdentity("dir", "/x", version, "r")
    return Snapshot(version, identity, "d", Builder("t", "q", "r"), built.interface, built.compat)


def _kill_writer_repeatedly(mode: str, target: Path, check: Callable[[], None]) -> None:
    """Start a process writing `target` in a loop, SIGKILL it at varied moments, `check`."""
    for attempt in range(6):
        with subprocess.Popen(
            [sys.executable, "-c", WRITER, mode, str(target), str(MAIN)],
            stdout=subprocess.PIPE,
            text=True,
        ) as process:
            try:
                assert process.stdout is not None
                assert process.stdout.readline() == "ready\n"
                time.sleep(0.003 + 0.015 * attempt)
            finally:
                process.kill()
                process.wait()
        check()


def test_a_file_written_atomically_is_whole_or_old_whenever_the_writer_is_killed(
    tmp_path: Path,
) -> None:
    target = tmp_path / "out" / "data.bin"

    def check() -> None:
        data = target.read_bytes()
        assert data in (b"A" * 3_000_000, b"B" * 5_000_000), (len(data), data[:1])

    _kill_writer_repeatedly("atomic", target, check)
    write_bytes_atomic(target, b"next run")  # the next run is not hindered by leftovers
    assert target.read_bytes() == b"next run"


def test_a_facts_cache_entry_is_whole_whenever_the_writer_is_killed(tmp_path: Path) -> None:
    base = tmp_path / "facts"
    source = tree()[WORKER].encode() * 40
    cid = content_id(source)
    expected = extract_facts(WORKER, cid, source)
    entry = base / cid[:2] / f"{cid}.pkl"

    def check() -> None:
        assert _decode(entry.read_bytes()) == expected

    _kill_writer_repeatedly("facts", base, check)


def test_a_snapshot_file_is_whole_whenever_the_writer_is_killed(tmp_path: Path) -> None:
    target = tmp_path / "snapshots" / "local.json"
    wholes = {to_json(_snapshot("v1")), to_json(_snapshot("v2"))}

    def check() -> None:
        snap = load_file(target)
        assert snap is not None
        assert to_json(snap) in wholes

    _kill_writer_repeatedly("snapshot", target, check)


def test_a_tracker_killed_mid_run_leaves_a_valid_cache_and_the_next_run_recovers(
    sgl_dir: MakeDir, tmp_path: Path
) -> None:
    extra = {
        f"{SRT}speculative/gen_{i:03d}.py": tree()[WORKER].replace("EAGLEWorker", f"W{i}") * 20
        for i in range(160)
    }
    root = sgl_dir("many", extra)
    cache = tmp_path / "killed-cache"
    env = tracker_env(TRACKER_CACHE_DIR=str(cache), TRACKER_JOBS="2")
    out = tmp_path / "out.json"
    args = ["-m", "tracker", "snapshot", "local", "--source", f"dir:{root}", "-o", str(out)]
    for delay in (0.6, 0.9, 1.2, 1.6):
        process = subprocess.Popen(
            [sys.executable, *args], env=env, cwd=MAIN, start_new_session=True
        )
        time.sleep(delay)
        os.killpg(process.pid, signal.SIGKILL)  # the command and its worker processes
        process.wait()
        for entry in _entries(cache):
            assert _decode(entry.read_bytes()) is not None, entry
        if out.exists():
            assert load_file(out) is not None
        for snap in _files_under(cache / "snapshots"):
            if not snap.name.endswith(".tmp"):
                assert load_cached_snapshot(snap) is not None, snap
    assert _entries(cache), "no run got as far as writing the facts cache: kill later"

    again = run_process(*args[2:], env=env)
    assert again.code == 0, again.stderr
    clean_out = tmp_path / "clean.json"
    clean = run_process(
        *args[2:-1], str(clean_out), env={**env, "TRACKER_CACHE_DIR": str(tmp_path / "clean")}
    )
    assert clean.code == 0, clean.stderr
    assert out.read_bytes() == clean_out.read_bytes()


# -- a write that fails half-way ------------------------------------------------------------------


def _disk_full() -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.fixture
def disk_full(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(tracker.common.atomic, "os", FailingOs(_disk_full))
    yield


@pytest.mark.parametrize(
    "error", [_disk_full, KeyboardInterrupt, lambda: OSError(errno.EIO, "I/O error")]
)
def test_a_write_failing_half_way_keeps_the_old_file_and_leaves_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: Callable[[], BaseException]
) -> None:
    target = tmp_path / "dir" / "file.json"
    write_bytes_atomic(target, b"old content")
    monkeypatch.setattr(tracker.common.atomic, "os", FailingOs(error))
    with pytest.raises((OSError, KeyboardInterrupt)):
        write_bytes_atomic(target, b"new content " * 100_000)
    assert target.read_bytes() == b"old content"
    assert [p.name for p in target.parent.iterdir()] == ["file.json"]


class _ShortWrites:
    """A file on a filling disk: each write takes at most 1000 bytes and says so only by
    its return value; once 3000 bytes are in, the next raises ENOSPC."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle
        self.taken = 0

    def write(self, data: bytes) -> int:
        if self.taken >= 3000:
            raise _disk_full()
        chunk = bytes(data[:1000])
        self._handle.write(chunk)
        self.taken += len(chunk)
        return len(chunk)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)

    def __enter__(self) -> _ShortWrites:
        return self

    def __exit__(self, *exc: object) -> None:
        self._handle.close()


class _ShortWritingOs:
    def fdopen(self, fd: int, *args: Any, **kwargs: Any) -> Any:
        return _ShortWrites(os.fdopen(fd, *args, **kwargs))

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)


def test_a_short_write_is_never_taken_for_the_whole_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "dir" / "file.json"
    monkeypatch.setattr(tracker.common.atomic, "os", _ShortWritingOs())
    write_bytes_atomic(target, b"x" * 2500)  # fits: written whole in three writes
    assert target.read_bytes() == b"x" * 2500
    with pytest.raises(OSError, match="No space left on device"):
        write_bytes_atomic(target, b"y" * 10_000)
    assert target.read_bytes() == b"x" * 2500
    assert [p.name for p in target.parent.iterdir()] == ["file.json"]


def test_a_full_disk_while_caching_facts_costs_speed_not_correctness(
    sgl_dir: MakeDir, cache_dir: Path, disk_full: None
) -> None:
    # Contents of their own: no facts of them are remembered in memory from other tests.
    unique = f"# {cache_dir}\n"
    root = sgl_dir()
    for path in root.rglob("*.py"):
        path.write_text(path.read_text() + unique)
    source = DirSource(root)
    local = source.tree()
    got = load_facts(local, list(local.files), jobs=1)
    for path, facts in got.items():
        data = local.read(path)
        assert facts == extract_facts(path, content_id(data), data)
    assert _files_under(cache_dir) == []


def test_a_full_disk_still_gives_the_answer_and_keeps_no_half_written_file(
    sgl_dir: MakeDir, cache_dir: Path, tmp_path: Path
) -> None:
    root = sgl_dir()
    args = ("interface", "local", "--source", f"dir:{root}", "--format", "json")
    expected = run_process(*args, env=tracker_env(TRACKER_CACHE_DIR=str(tmp_path / "healthy")))
    full = _failing_tracker(*args)
    assert full.code == 0, full.stderr
    assert full.stdout == expected.stdout
    assert _files_under(cache_dir) == []
    # One line for every cache it could not write (facts, snapshot), not one for each.
    (line,) = full.error_lines
    assert line.startswith(f"tracker: warning: cannot write to the cache in {cache_dir}")
    assert "(No space left on device)" in line


def test_a_cache_folder_that_cannot_be_created_costs_speed_not_the_answer(
    sgl_dir: MakeDir, tmp_path: Path
) -> None:
    root = sgl_dir()
    args = ("interface", "local", "--source", f"dir:{root}", "--format", "json")
    expected = run_process(*args, env=tracker_env(TRACKER_CACHE_DIR=str(tmp_path / "ok")))
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    run = run_process(*args, env=tracker_env(TRACKER_CACHE_DIR=str(blocker / "cache")))
    assert run.code == 0, run.stderr
    assert run.stdout == expected.stdout
    assert len(run.error_lines) == 1, run.error_lines
    assert all(line.startswith("tracker: warning:") for line in run.error_lines)


def test_a_cache_that_cannot_be_written_is_one_line_whatever_the_workers_and_caches(
    sgl_dir: MakeDir, tmp_path: Path
) -> None:
    root = sgl_dir(generated=70)  # enough files for the worker pool
    args = ("check", "local", "--source", f"dir:{root}", "--all", "--format", "json")
    expected = run_process(*args, env=tracker_env(TRACKER_CACHE_DIR=str(tmp_path / "ok")))
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    cache = blocker / "cache"
    run = run_process(*args, env=tracker_env(TRACKER_CACHE_DIR=str(cache), TRACKER_JOBS="2"))
    assert run.code == 0, run.stderr
    assert run.stdout == expected.stdout
    assert run.error_lines == [
        f"tracker: warning: cannot write to the cache in {cache}/facts/"
        f"{facts_dir(cache).name} (Not a directory); carrying on without it "
        "(TRACKER_CACHE_DIR can name a writable folder)"
    ]
    versions = run_process(
        "versions", "--source", f"dir:{root}", env=tracker_env(TRACKER_CACHE_DIR=str(cache))
    )
    assert versions.code == 0 and versions.stdout == "local\n", versions.stderr


def test_a_cache_on_a_full_disk_is_one_line_not_one_per_worker(sgl_dir: MakeDir) -> None:
    root = sgl_dir(generated=70)
    args = ("check", "local", "--source", f"dir:{root}", "--all", "--format", "json")
    expected = run_process(*args, env=fresh_cache())

    def capped() -> None:  # every file past 1 KB fails with EFBIG, as a full disk fails
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    result = subprocess.run(
        tracker_command(*args),
        env=tracker_env(TRACKER_JOBS="2", **fresh_cache()),
        cwd=MAIN,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=capped,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected.stdout
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("tracker: warning: cannot write to the cache in ")
    assert "(File too large)" in lines[0]


# A `tracker` process whose atomic writes fail half-way (forked pool workers inherit it).
FAILING_TRACKER = r"""
import errno, os, sys
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/tests/unit"]
import tracker.common.atomic
from tests.reliability.support import FailingOs
only = os.environ.get("FAIL_ONLY", "")
workers_only = bool(os.environ.get("FAIL_IN_WORKERS"))
tracker.common.atomic.os = FailingOs(
    lambda: OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), only, workers_only
)
from tracker.cli import main
main(sys.argv[2:])
"""


def _failing_tracker(*args: str, only: str = "", env: dict[str, str] | None = None) -> Run:
    result = subprocess.run(
        [sys.executable, "-c", FAILING_TRACKER, str(MAIN), *args],
        env={**(env or tracker_env()), "FAIL_ONLY": only},
        cwd=MAIN,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return Run(result.returncode, result.stdout, result.stderr)


def test_a_full_disk_when_writing_the_output_fails_in_one_line_and_keeps_no_partial_file(
    sgl_dir: MakeDir, tmp_path: Path
) -> None:
    out = tmp_path / "out.json"
    run = _failing_tracker(
        "snapshot", "local", "--source", f"dir:{sgl_dir()}", "-o", str(out), only="out.json"
    )
    assert run.code == 2
    assert "Traceback" not in run.stderr
    assert len(run.error_lines) == 1, run.stderr
    assert "No space left on device" in run.error_lines[0]
    assert not out.exists()
    assert [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_a_full_disk_when_writing_the_output_names_the_file_as_an_error_not_a_crash(
    sgl_dir: MakeDir, tmp_path: Path
) -> None:
    out = tmp_path / "out.json"
    run = _failing_tracker(
        "snapshot", "local", "--source", f"dir:{sgl_dir()}", "-o", str(out), only="out.json"
    )
    (line,) = run.error_lines
    assert line.startswith("tracker: error:"), line
    assert str(out) in line, line


def test_a_full_disk_while_caching_facts_is_one_warning_not_one_per_file(
    sgl_dir: MakeDir,
) -> None:
    run = _failing_tracker(
        "interface", "local", "--source", f"dir:{sgl_dir(generated=20)}", "--format", "json"
    )
    assert run.code == 0, run.stderr
    assert len(run.error_lines) <= 2, run.error_lines[:5]
    assert all(line.startswith("tracker: ") for line in run.error_lines), run.error_lines[:3]


def test_a_full_disk_found_by_every_worker_at_once_is_still_one_line(sgl_dir: MakeDir) -> None:
    # The disk fills once the workers run (this process's own writes go through): each
    # worker finds it full on its own, none knows the others have said so.
    root = sgl_dir(generated=70)
    run = _failing_tracker(
        "check", "local", "--source", f"dir:{root}", "--all", "--format", "json",
        env=tracker_env(TRACKER_JOBS="2", FAIL_IN_WORKERS="1"),
    )  # fmt: skip
    assert run.code == 0, run.stderr
    assert json.loads(run.stdout)["checks"]
    unwritable = [line for line in run.error_lines if "cannot write to the cache" in line]
    assert len(unwritable) == 1, run.error_lines


def test_a_full_disk_in_the_worker_processes_still_gives_the_answer(
    sgl_dir: MakeDir, tmp_path: Path, cache_dir: Path
) -> None:
    root = sgl_dir(generated=70)
    args = ("interface", "local", "--source", f"dir:{root}", "--format", "json")
    expected = run_process(*args, env=tracker_env(TRACKER_CACHE_DIR=str(tmp_path / "ok")))
    run = _failing_tracker(*args, env=tracker_env(TRACKER_JOBS="2"))
    assert run.code == 0, run.stderr
    assert run.stdout == expected.stdout
    assert _files_under(cache_dir) == []


def test_a_full_disk_under_the_template_cache_costs_speed_not_the_report(
    sgl_dir: MakeDir,
    tmp_path: Path,
    cache_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import jinja2.bccache

    args = ("interface", "local", "--source", f"dir:{sgl_dir()}", "-q")
    expected = run_cli(*args, env={"TRACKER_CACHE_DIR": str(tmp_path / "healthy")})
    assert expected.code == 0, expected.stderr

    def disk_full(self: object, stream: object) -> None:
        raise _disk_full()

    # Where jinja2 writes a compiled template into its cache file.
    monkeypatch.setattr(jinja2.bccache.Bucket, "write_bytecode", disk_full)
    full = run_cli(*args)
    assert full.code == 0, full.stderr
    assert full.stdout == expected.stdout
    assert _files_under(cache_dir / "templates") == []
    warnings = [r.getMessage() for r in caplog.records if "template cache" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert "No space left on device" in warnings[0]


# -- corrupt facts cache entries ------------------------------------------------------------------


def test_the_template_cache_is_made_from_the_jinja2_imported_now(
    sgl_dir: MakeDir, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session that restores `sys.modules` (pytester) imports jinja2 anew: the template
    cache must use the new module's buckets, not those of the import before."""
    args = ("interface", "local", "--source", f"dir:{sgl_dir()}", "-q")
    assert run_cli(*args).code == 0  # the tool has made its template cache once
    before = [m for m in sys.modules if m == "jinja2" or m.startswith("jinja2.")]
    for name in before:
        monkeypatch.delitem(sys.modules, name)  # put back after the test
    try:
        import jinja2.bccache  # a new module object

        def disk_full(self: object, stream: object) -> None:
            raise _disk_full()

        monkeypatch.setattr(jinja2.bccache.Bucket, "write_bytecode", disk_full)
        for entry in _files_under(cache_dir / "templates"):
            entry.unlink()
        assert run_cli(*args).code == 0
        assert _files_under(cache_dir / "templates") == []
    finally:
        # Only the first import's modules may stay: drop what the new one added.
        for name in [m for m in sys.modules if m == "jinja2" or m.startswith("jinja2.")]:
            if name not in before:
                del sys.modules[name]


def _damage_entry(entry: Path, how: str, other: Path) -> None:
    blob = entry.read_bytes()
    if how == "emptied":
        entry.write_bytes(b"")
    elif how == "cut inside the header":
        entry.write_bytes(blob[:10])
    elif how == "cut in half":
        entry.write_bytes(blob[: len(blob) // 2])
    elif how.startswith("a byte flipped in the"):
        at = {"magic": 1, "checksum": 8, "payload": len(blob) // 2}[how.rsplit(" ", 1)[1]]
        entry.write_bytes(blob[:at] + bytes([blob[at] ^ 0x40]) + blob[at + 1 :])
    elif how == "garbage appended":
        entry.write_bytes(blob + b"\0garbage")
    elif how == "a checksummed pickle of something else":
        payload = pickle.dumps({"not": "facts"})
        entry.write_bytes(blob[:4] + hashlib.sha256(payload).digest()[:16] + payload)
    elif how == "a directory":
        entry.unlink()
        entry.mkdir()
    elif how == "another file's entry":
        entry.write_bytes(other.read_bytes())
    else:
        raise AssertionError(how)


DAMAGES = [
    "emptied",
    "cut inside the header",
    "cut in half",
    "a byte flipped in the magic",
    "a byte flipped in the checksum",
    "a byte flipped in the payload",
    "garbage appended",
    "a checksummed pickle of something else",
    "a directory",
    "another file's entry",
]


@pytest.mark.parametrize("how", DAMAGES)
def test_a_corrupt_facts_cache_entry_is_detected_and_rebuilt_with_identical_facts(
    sgl_dir: MakeDir, cache_dir: Path, how: str
) -> None:
    # Every run in a process of its own: facts a process has seen are also kept in memory.
    root = sgl_dir()
    args = ("facts", "local", WORKER, "--source", f"dir:{root}", "--format", "json")
    first = run_process(*args)
    assert first.code == 0
    if how == "another file's entry":
        other = run_process("facts", "local", f"{SRT}models/llama.py", "--source", f"dir:{root}")
        assert other.code == 0
    cid = content_id((root / WORKER).read_bytes())
    base = facts_dir(cache_dir)
    entry = base / cid[:2] / f"{cid}.pkl"
    other_cid = content_id((root / SRT / "models" / "llama.py").read_bytes())
    _damage_entry(entry, how, base / other_cid[:2] / f"{other_cid}.pkl")

    again = run_process(*args)
    assert again.code == 0, again.stderr
    assert again.stdout == first.stdout
    rebuilt = _decode(entry.read_bytes())  # a folder in its place too is replaced
    assert rebuilt is not None
    assert rebuilt.content_id == cid
    assert not [line for line in again.error_lines if "cannot write" in line], again.stderr


def test_every_facts_entry_corrupt_gives_the_clean_answer(
    sgl_dir: MakeDir, cache_dir: Path, tmp_path: Path
) -> None:
    root = sgl_dir(generated=10)
    args = ("interface", "local", "--source", f"dir:{root}", "--format", "json")
    clean = run_process(*args)
    for entry in _entries(cache_dir):
        data = entry.read_bytes()
        entry.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    (snapshot,) = _files_under(cache_dir / "snapshots")
    snapshot.unlink()
    again = run_process(*args)
    assert again.code == 0
    assert again.stdout == clean.stdout
    assert all(_decode(e.read_bytes()) is not None for e in _entries(cache_dir))


def test_a_fully_corrupt_facts_cache_is_one_warning_line_not_one_per_entry(
    sgl_dir: MakeDir, cache_dir: Path
) -> None:
    root = sgl_dir(generated=10)
    args = ("interface", "local", "--source", f"dir:{root}", "--format", "json")
    assert run_process(*args).code == 0
    entries = _entries(cache_dir)
    assert len(entries) > 10
    for entry in entries:
        entry.write_bytes(b"garbage")
    for snapshot in _files_under(cache_dir / "snapshots"):
        snapshot.unlink()
    again = run_process(*args)
    assert again.code == 0, again.stderr
    (line,) = again.error_lines
    assert line.startswith(f"tracker: warning: {len(entries)} facts cache entries are corrupt")


@pytest.mark.parametrize("where", ["a facts entry", "the cached snapshot"])
def test_a_fifo_in_the_cache_is_rebuilt_over_and_never_hangs_the_run(
    sgl_dir: MakeDir, cache_dir: Path, where: str
) -> None:
    root = sgl_dir()
    args = ("interface", "local", "--source", f"dir:{root}", "--format", "json")
    first = run_process(*args)
    assert first.code == 0
    (snapshot,) = _files_under(cache_dir / "snapshots")
    victim = _entries(cache_dir)[0] if where == "a facts entry" else snapshot
    if where == "a facts entry":
        snapshot.unlink()  # so that the facts are read
    victim.unlink()
    os.mkfifo(victim)
    try:
        again = run_process(*args, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"a FIFO in place of {where} held the run")
    assert again.code == 0, again.stderr
    assert again.stdout == first.stdout
    assert victim.is_file()  # rebuilt in place of the FIFO


def test_an_entry_written_by_encode_round_trips() -> None:
    data = tree()[WORKER].encode()
    facts = extract_facts(WORKER, content_id(data), data)
    assert _decode(_encode(facts)) == facts


# -- corrupt cached snapshots ---------------------------------------------------------------------


def _damage_snapshot(path: Path, how: str) -> None:
    """Damage the JSON of a cached snapshot, leaving any checksum line as it was."""
    head, text = split_cached_snapshot(path)
    if how == "truncated":
        path.write_text(head + text[: len(text) // 3])
        return
    if how == "not JSON":
        path.write_bytes(head.encode() + b"\x00\xff not json")
        return
    if how == "another schema":
        path.write_text(head + json.dumps({"schema": "something/else@9"}))
        return
    doc = json.loads(text)
    if how == "a field missing":
        del doc["requirements"]
    elif how == "a list where a mapping belongs":
        doc["workers"] = []
    elif how == "a line number changed":
        doc["requirements"][0]["sites"][0]["line"] += 10
    else:
        raise AssertionError(how)
    path.write_text(head + json.dumps(doc, indent=1, sort_keys=True) + "\n")


@pytest.mark.parametrize(
    "how",
    [
        "truncated",
        "not JSON",
        "another schema",
        "a field missing",
        "a list where a mapping belongs",
        "a line number changed",
    ],
)
def test_a_corrupt_cached_snapshot_is_rebuilt_not_trusted(
    sgl_dir: MakeDir, cache_dir: Path, how: str
) -> None:
    root = sgl_dir()
    args = ("interface", "local", "--source", f"dir:{root}", "--format", "json")
    snapshot_args = ("snapshot", "local", "--source", f"dir:{root}", "-o")
    first = run_cli(*snapshot_args, str(cache_dir.parent / "first.json"))
    assert first.code == 0
    (cached,) = _files_under(cache_dir / "snapshots")
    _damage_snapshot(cached, how)
    again = run_process(*args)
    assert again.code == 0, again.stderr
    second = run_cli(*snapshot_args, str(cache_dir.parent / "second.json"))
    assert second.code == 0
    assert (cache_dir.parent / "second.json").read_text() == (
        cache_dir.parent / "first.json"
    ).read_text()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("workers", []),
        ("requirements", [1]),
        ("algorithms", 5),
        ("source", {}),
        ("checks", "text"),
    ],
)
def test_load_file_returns_none_for_a_snapshot_of_the_wrong_shape(
    tmp_path: Path, field: str, value: object
) -> None:
    doc = json.loads(to_json(_snapshot("v1")))
    doc[field] = value
    (tmp_path / "s.json").write_text(json.dumps(doc))
    assert load_file(tmp_path / "s.json") is None


def test_write_file_then_load_file_is_the_same_snapshot(tmp_path: Path) -> None:
    snap = _snapshot("v1")
    write_file(tmp_path / "s.json", snap)
    loaded = load_file(tmp_path / "s.json")
    assert loaded is not None
    assert to_json(loaded) == to_json(snap)


# -- leftovers of killed runs ---------------------------------------------------------------------


def _aged(path: Path, seconds: float) -> Path:
    when = time.time() - seconds
    os.utime(path, (when, when))
    return path


def test_the_next_run_removes_what_killed_runs_left_and_nothing_a_live_run_uses(
    sgl_dir: MakeDir, cache_dir: Path
) -> None:
    root = sgl_dir()
    args = ("interface", "local", "--source", f"dir:{root}", "--format", "json")
    assert run_process(*args).code == 0
    entry = _entries(cache_dir)[0]
    pypi = cache_dir / "pypi"
    pypi.mkdir()
    old_tmp = entry.with_name(f".{entry.name}.8rb3hkl6.tmp")
    old_tmp.write_bytes(b"half")
    _aged(old_tmp, 2 * LEFTOVER_AGE)
    old_download = pypi / ".download-0qqra9pu"
    old_download.mkdir()
    (old_download / "sglang-0.5.15-py3-none-any.whl").write_bytes(b"part")
    _aged(old_download, 2 * SCRATCH_AGE)
    live_tmp = entry.with_name(f".{entry.name}.livelive.tmp")
    live_tmp.write_bytes(b"being written")
    live_download = pypi / ".download-live1234"
    live_download.mkdir()
    _aged(live_download, 2 * LEFTOVER_AGE)  # a slow download still going on

    again = run_process(*args)
    assert again.code == 0, again.stderr
    assert not old_tmp.exists() and not old_download.exists()
    assert live_tmp.exists() and live_download.exists()
    assert entry.exists()


def test_the_cache_is_swept_at_most_once_in_a_while(tmp_path: Path) -> None:
    leftover = tmp_path / ".x.abc.tmp"
    leftover.write_bytes(b"")
    _aged(leftover, 2 * LEFTOVER_AGE)
    now = time.time()
    assert sweep_leftovers(tmp_path, now=now) == 1
    again = tmp_path / ".y.abc.tmp"
    again.write_bytes(b"")
    _aged(again, 2 * LEFTOVER_AGE)
    assert sweep_leftovers(tmp_path, now=now + 60) == 0  # swept a minute ago
    assert sweep_leftovers(tmp_path, now=now + SWEEP_EVERY + 1) == 1
