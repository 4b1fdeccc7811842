"""A stand-in for pip (through TRACKER_PIP) serving tiny local wheels: tests of the pypi
source never leave this machine. Shared by the source unit tests and the reliability suite.
Environment: FAKE_PIP_LOG (every call is logged), FAKE_PIP_OFFLINE (fail like an
unreachable index), FAKE_PIP_VERSIONS (what `index versions` lists), FAKE_PIP_WHEELS (the
folder `download` copies from)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

FAKE_PIP = r"""
import os, shutil, sys
args = sys.argv[1:]
with open(os.environ["FAKE_PIP_LOG"], "a") as log:
    log.write(" ".join(args) + "\n")
if os.environ.get("FAKE_PIP_OFFLINE"):
    sys.stderr.write(
        "WARNING: Retrying (Retry(total=0)) after connection broken by 'NewConnectionError("
        "'<HTTPSConnection>: Failed to establish a new connection: [Errno 111] Connection "
        "refused')': /simple/sglang/\n"
        "ERROR: Could not find a version that satisfies the requirement sglang\n"
        "ERROR: No matching distribution found for sglang\n"
    )
    sys.exit(1)
if args[:2] == ["index", "versions"]:
    print("sglang (0.5.10)")
    print("Available versions: " + os.environ["FAKE_PIP_VERSIONS"])
    sys.exit(0)
if args[0] == "download":
    target = args[args.index("-d") + 1]
    version = args[-1].split("==")[1]
    for name in sorted(os.listdir(os.environ["FAKE_PIP_WHEELS"])):
        if name.startswith(f"sglang-{version}-"):
            shutil.copy(os.path.join(os.environ["FAKE_PIP_WHEELS"], name), target)
            print(f"Saved {target}/{name}")
            sys.exit(0)
    sys.stderr.write(f"ERROR: No matching distribution found for sglang=={version}\n")
    sys.exit(1)
sys.exit(2)
"""


def install(root: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """Make TRACKER_PIP run the stand-in from `root`; returns (wheels folder, call log)."""
    wheels = root / "index"
    wheels.mkdir()
    log = root / "pip.log"
    log.touch()
    script = root / "fake_pip.py"
    script.write_text(FAKE_PIP)
    monkeypatch.setenv("TRACKER_PIP", f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}")
    monkeypatch.setenv("FAKE_PIP_LOG", str(log))
    monkeypatch.setenv("FAKE_PIP_WHEELS", str(wheels))
    monkeypatch.delenv("FAKE_PIP_OFFLINE", raising=False)
    return wheels, log
