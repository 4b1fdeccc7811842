"""Ending the main process ends its workers: killed (SIGKILL, SIGTERM, SIGHUP), it leaves no
worker behind holding stdout; interrupted (Ctrl-C), it says so in one line and exits 130.

The workers are held in their set-up by a `sitecustomize` the test writes (after the tool's
own set-up ran), so every signal lands while the pool is alive, whatever the machine's speed.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.reliability.support import MAIN, tracker_command, tracker_env

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/task").is_dir(), reason="reads the process tree from /proc"
)

MakeDir = Callable[..., Path]
Start = Callable[[], tuple["subprocess.Popen[bytes]", set[int]]]

_HOLD = """
import concurrent.futures.process as _cfp
import time as _time

_original = _cfp._process_worker


def held_worker(call_queue, result_queue, initializer, initargs, *rest):
    # The pool's own initializer first, then a long wait before any task.
    if initializer is not None:
        initializer(*initargs)
    _time.sleep(300)
    return _original(call_queue, result_queue, None, (), *rest)


_cfp._process_worker = held_worker
"""


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            found |= {int(x) for x in task.read_text().split()}
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def _all_gone(pids: set[int], within: float) -> bool:
    """Whether every process of `pids` has ended within `within` seconds (a killed process
    takes a moment to be gone)."""
    deadline = time.monotonic() + within
    while any(_alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def held_run(sgl_dir: MakeDir, tmp_path: Path) -> Iterator[Start]:
    """Starts a cold `check` whose pool workers are held; returns it once they exist."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(textwrap.dedent(_HOLD))
    root = sgl_dir("many", generated=70)
    started: list[subprocess.Popen[bytes]] = []

    def start() -> tuple[subprocess.Popen[bytes], set[int]]:
        env = tracker_env(
            TRACKER_JOBS="2",
            TRACKER_CACHE_DIR=str(tmp_path / f"cache-{len(started)}"),
            PYTHONPATH=os.pathsep.join([str(hook), os.environ.get("PYTHONPATH", "")]),
        )
        args = ("check", "local", "--source", f"dir:{root}", "--all", "--format", "json")
        process = subprocess.Popen(
            tracker_command(*args),
            env=env,
            cwd=MAIN,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        started.append(process)
        deadline = time.monotonic() + 60
        while len(workers := _children(process.pid)) < 2:
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the worker pool never started"
            time.sleep(0.05)
        time.sleep(0.5)  # the workers are in their set-up: past the tool's own
        return process, workers

    yield start
    for process in started:  # the test's own processes only: its session's group
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()


def _eof_within(stream: object, seconds: float) -> bool:
    """Whether the pipe reaches its end (every writer gone) within `seconds`."""
    fd = stream.fileno()  # type: ignore[attr-defined]
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([fd], [], [], left)
        if ready and not os.read(fd, 65536):
            return True
    return False


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP])
def test_a_killed_main_process_leaves_no_worker_holding_stdout(
    held_run: Start, signum: int
) -> None:
    process, workers = held_run()
    os.kill(process.pid, signum)
    assert _eof_within(process.stdout, 10), "a worker still holds stdout open"
    assert _eof_within(process.stderr, 10), "a worker still holds stderr open"
    assert _all_gone(workers, within=10), "workers outlived the main process"


@pytest.mark.parametrize("to_group", [True, False], ids=["ctrl-c", "sigint-to-main"])
def test_ctrl_c_exits_130_with_one_line_and_no_worker_traceback_at_once(
    held_run: Start, to_group: bool
) -> None:
    process, workers = held_run()
    started = time.monotonic()
    if to_group:  # what a terminal's Ctrl-C does
        os.killpg(process.pid, signal.SIGINT)
    else:
        os.kill(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    elapsed = time.monotonic() - started
    assert process.returncode == 130, stderr
    assert stderr.decode().splitlines() == ["tracker: interrupted"], stderr.decode()
    assert elapsed < 5, f"{elapsed:.1f} s to stop"
    assert _all_gone(workers, within=5), "workers outlived the interrupted main process"
