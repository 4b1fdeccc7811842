"""Helpers for the reliability tests: SGLang-shaped trees on disk, the CLI run in process or
as a real `python -m tracker` process, and a stand-in for pip (the package index is never
contacted: TRACKER_PIP points at a script that serves locally built wheels or fails the way
pip fails when it cannot connect).
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sgl_trees import tree as tiny_tree

from tracker.cli import cli
from tracker.sources import clear_memo

SRT = "python/sglang/srt/"
MAIN = Path(__file__).resolve().parents[2]

Files = Mapping[str, "str | bytes | None"]


# -- trees on disk -----------------------------------------------------------------------------


def write_tree(root: Path, files: Files) -> Path:
    """Write repo-path -> text/bytes under `root` (None deletes); returns `root`."""
    for path, content in files.items():
        target = root / path
        if content is None:
            target.unlink(missing_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    return root


def tiny_files(extra: Files | None = None) -> dict[str, str | bytes | None]:
    """The files of tests/unit/sgl_trees.py `tree()` (repo paths) plus `extra`."""
    files: dict[str, str | bytes | None] = dict(tiny_tree())
    files.update(extra or {})
    return files


_GENERATED_MODEL = """
from torch import nn

from sglang.srt.models.llama import LlamaForCausalLM


class Gen{i}Inner(nn.Module):
    def get_embed_and_head(self):
        return self.embed, self.head


class Gen{i}ForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.language_model = Gen{i}Inner()
        self.layers_{i} = [{i}]
{extra}

EntryClass = Gen{i}ForCausalLM
"""

_GENERATED_EXTRAS = (
    "",
    "\n    def get_embed_and_head(self):\n"
    "        return self.language_model.get_embed_and_head()\n",
    "\n    def set_eagle3_layers_to_capture(self, ids=None):\n        self.ids = ids\n",
    "\n    def get_embed_and_head(self):\n        return 1, 2\n\n"
    "    def set_eagle3_layers_to_capture(self, ids=None):\n        self.ids = ids\n",
)


def generated_files(models: int = 70) -> dict[str, str | bytes | None]:
    """The tiny tree plus `models` generated model files (some broken, some fine, some
    delegation candidates): enough files (> 48) for the facts store's process pool."""
    files = tiny_files()
    for i in range(models):
        text = _GENERATED_MODEL.format(i=i, extra=_GENERATED_EXTRAS[i % len(_GENERATED_EXTRAS)])
        files[f"{SRT}models/gen_{i:03d}.py"] = textwrap.dedent(text).lstrip()
    return files


def make_sgl_dir(tmp_path: Path) -> Callable[..., Path]:
    """`sgl_dir(name, extra=None, generated=0) -> Path`: a tiny SGLang checkout on disk."""

    def make(name: str = "sglang", extra: Files | None = None, generated: int = 0) -> Path:
        files = generated_files(generated) if generated else tiny_files()
        files.update(extra or {})
        return write_tree(tmp_path / name, files)

    return make


# -- running the CLI ---------------------------------------------------------------------------


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    def json(self) -> object:
        return json.loads(self.stdout)

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]


def run_cli(*args: str, env: Mapping[str, str] | None = None) -> Run:
    """The `tracker` group in this process (sources forgotten before and after)."""
    clear_memo()
    try:
        result = CliRunner(env={"NO_COLOR": "1", **(env or {})}).invoke(
            cli, list(args), color=False
        )
    finally:
        clear_memo()
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Run(result.exit_code, result.stdout, result.stderr)


_fresh = itertools.count()


def fresh_cache() -> dict[str, str]:
    """Environment naming an empty cache folder beside the test's TRACKER_CACHE_DIR: for
    comparing fresh answers (an answer read back from a cached snapshot can differ, see
    test_determinism.py)."""
    base = Path(os.environ["TRACKER_CACHE_DIR"])
    return {"TRACKER_CACHE_DIR": str(base.with_name(f"{base.name}-fresh-{next(_fresh)}"))}


def tracker_env(**overrides: str | None) -> dict[str, str]:
    """This process's environment (the test's TRACKER_CACHE_DIR included) with overrides."""
    env = dict(os.environ)
    env.pop("TRACKER_DEBUG", None)
    env["NO_COLOR"] = "1"
    for name, value in overrides.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def tracker_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "tracker", *args]


def run_process(
    *args: str, env: Mapping[str, str] | None = None, cwd: Path | None = None, timeout: float = 120
) -> Run:
    """`python -m tracker ARGS` as its own process: the real exit code and stderr."""
    result = subprocess.run(
        tracker_command(*args),
        env=dict(env) if env is not None else tracker_env(),
        cwd=cwd or MAIN,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return Run(result.returncode, result.stdout, result.stderr)


def assert_one_line_error(run: Run, *needles: str) -> str:
    """Exit 2, no traceback, exactly one `tracker: error:` line on stderr holding `needles`."""
    assert run.code == 2, (run.code, run.stderr)
    assert "Traceback" not in run.stderr, run.stderr
    lines = run.error_lines
    assert len(lines) == 1, lines
    assert lines[0].startswith("tracker: error: "), lines
    assert "internal error" not in lines[0], lines
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


# -- a package index that never leaves this machine ------------------------------------------

from tests import fake_pip  # noqa: E402


def build_wheel(folder: Path, version: str, files: Mapping[str, str] | None = None) -> Path:
    """A wheel shaped like sglang's holding the tiny tree (repo paths mapped to `sglang/`)."""
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"sglang-{version}-py3-none-any.whl"
    content = dict(files if files is not None else tiny_tree())
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("sglang/", b"")
        archive.writestr("sglang/__init__.py", f"__version__ = '{version}'\n")
        archive.writestr("sglang/srt/__init__.py", "")
        for path, text in sorted(content.items()):
            archive.writestr(path.removeprefix("python/"), text)
        archive.writestr(f"sglang-{version}.dist-info/METADATA", "Name: sglang\n")
    return wheel


class FakeIndex:
    """What the stand-in pip serves, whether the index is reachable, what pip was asked."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.wheels, self.log = fake_pip.install(root, monkeypatch)
        self._monkeypatch = monkeypatch
        monkeypatch.setenv("FAKE_PIP_VERSIONS", "0.5.10, 0.5.9, 0.5.8")

    def go_offline(self) -> None:
        self._monkeypatch.setenv("FAKE_PIP_OFFLINE", "1")

    def calls(self, command: str) -> list[str]:
        return [line for line in self.log.read_text().splitlines() if line.startswith(command)]


def make_fake_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeIndex:
    """Serves tiny-tree wheels of 0.5.9 and 0.5.10 (0.5.8 is listed but has no wheel)."""
    index = FakeIndex(tmp_path / "fake-index", monkeypatch)
    build_wheel(index.wheels, "0.5.9")
    build_wheel(index.wheels, "0.5.10")
    return index


# -- writes that fail half-way ------------------------------------------------------------------


class HalfThenFail:
    """A file object that writes half of what it is given, then raises."""

    def __init__(self, handle: Any, error: BaseException) -> None:
        self._handle = handle
        self._error = error

    def write(self, data: bytes) -> int:
        self._handle.write(data[: len(data) // 2])
        self._handle.flush()
        raise self._error

    def __enter__(self) -> HalfThenFail:
        return self

    def __exit__(self, *exc: object) -> None:
        self._handle.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)


class FailingOs:
    """`os` for tracker.common.atomic, whose files fail half-way through their first write."""

    def __init__(
        self, error: Callable[[], BaseException], only: str = "", workers_only: bool = False
    ) -> None:
        self._error = error
        self._only = only
        # Fail only in the processes forked from this one (pool workers), not in it.
        self._spared = os.getpid() if workers_only else None

    def fdopen(self, fd: int, *args: Any, **kwargs: Any) -> Any:
        handle = os.fdopen(fd, *args, **kwargs)
        name = str(Path(f"/proc/self/fd/{fd}").readlink())
        if (self._only and self._only not in name) or os.getpid() == self._spared:
            return handle
        return HalfThenFail(handle, self._error())

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)


# -- cached snapshots --------------------------------------------------------------------------


def load_cached_snapshot(path: Path) -> Any:
    """A snapshot from the cache folder (which may keep a checksum line before the JSON)."""
    from tracker.compare import snapshot

    loader = getattr(snapshot, "load_cached", None) or snapshot.load_file
    return loader(path)


def split_cached_snapshot(path: Path) -> tuple[str, str]:
    """(checksum line or "", JSON text) of a cached snapshot file."""
    raw = path.read_text(encoding="utf-8")
    if raw.startswith("sha256:"):
        head, _, text = raw.partition("\n")
        return head + "\n", text
    return "", raw
