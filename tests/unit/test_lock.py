"""The run lock belongs to the process that took it: a process it forks never holds it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tracker
from tracker.common.errors import TrackerError
from tracker.common.lock import held

ROOT = Path(tracker.__file__).resolve().parents[1]
TAKE = """
import sys
from pathlib import Path
from tracker.common.errors import TrackerError
from tracker.common.lock import held
try:
    with held(Path(sys.argv[1]), "the state"):
        pass
except TrackerError as exc:
    sys.exit(str(exc))
"""


def _take_in_another_process(path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", TAKE, str(path)], env=env, capture_output=True, text=True
    )


def test_another_process_is_refused_while_the_lock_is_held_and_names_the_holder(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.lock"
    with held(path, "the state"):
        taken = _take_in_another_process(path)
    assert taken.returncode == 1
    assert f"another tracker run is using the state (pid {os.getpid()})" in taken.stderr
    assert _take_in_another_process(path).returncode == 0, "released at the end"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_process_forked_while_the_lock_is_held_does_not_keep_it(tmp_path: Path) -> None:
    path = tmp_path / "state.lock"
    with held(path, "the state"):
        child = os.fork()
        if child == 0:  # a helper that outlives the run, holding every fd it inherited
            time.sleep(30)
            os._exit(0)
    try:
        taken = _take_in_another_process(path)
        assert taken.returncode == 0, taken.stderr
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)


def test_a_lock_refused_is_a_tracker_error_in_process_too(tmp_path: Path) -> None:
    path = tmp_path / "state.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", TAKE.replace("pass", "print('held', flush=True); input()"),
         str(path)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(TrackerError, match=f"pid {holder.pid}"), held(path, "the state"):
            pass
    finally:
        holder.communicate("\n")
