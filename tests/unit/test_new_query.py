"""tools/new_query.py: the scaffold for a new query writes its three parts (query file with
its pass, handler stub, fixture stub) and never overwrites anything."""

from __future__ import annotations

import ast
import importlib.util
import shutil
from pathlib import Path
from types import ModuleType

import pytest

from tracker.extract.queries import declared_passes

REPO = Path(__file__).resolve().parents[2]


def load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("new_query", REPO / "tools" / "new_query.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A tree shaped like the repository, with the real handlers module."""
    (tmp_path / "queries").mkdir()
    (tmp_path / "tests" / "queries").mkdir(parents=True)
    (tmp_path / "tracker" / "extract").mkdir(parents=True)
    shutil.copy(REPO / "tracker" / "extract" / "handlers.py", tmp_path / "tracker" / "extract")
    return tmp_path


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    ("choice", "passes"),
    [("full", {"full"}), ("definitions", {"definitions"}), ("both", {"full", "definitions"})],
)
def test_the_scaffold_writes_a_query_declaring_its_pass(
    root: Path, choice: str, passes: set[str]
) -> None:
    assert load_tool().main(["guard_calls", "--pass", choice], root) == 0
    assert declared_passes(root / "queries" / "guard_calls.scm") == passes


def test_the_scaffold_appends_a_handler_stub_and_writes_a_fixture_stub(root: Path) -> None:
    before = (root / "tracker/extract/handlers.py").read_text(encoding="utf-8")
    assert load_tool().main(["guard_calls", "--pass", "full"], root) == 0
    after = (root / "tracker/extract/handlers.py").read_text(encoding="utf-8")
    assert after.startswith(before.rstrip("\n"))
    functions = {n.name for n in ast.parse(after).body if isinstance(n, ast.FunctionDef)}
    assert "on_guard_calls" in functions
    assert '@handles("guard_calls")' in after
    fixture = ast.parse((root / "tests/queries/test_guard_calls.py").read_text(encoding="utf-8"))
    tests = [n.name for n in fixture.body if isinstance(n, ast.FunctionDef)]
    assert "test_the_fixture_exercises_every_capture_of_the_query" in tests


def test_the_scaffold_refuses_a_name_that_exists_and_writes_nothing(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tool = load_tool()
    assert tool.main(["guard_calls", "--pass", "full"], root) == 0
    capsys.readouterr()
    before = snapshot(root)
    assert tool.main(["guard_calls", "--pass", "definitions"], root) == 2
    err = capsys.readouterr().err
    assert err.startswith("new_query: error: guard_calls exists already: queries/guard_calls.scm")
    assert snapshot(root) == before


def test_the_scaffold_refuses_a_query_that_only_has_a_handler(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(root)
    assert load_tool().main(["call_sites", "--pass", "full"], root) == 2
    assert "on_call_sites" in capsys.readouterr().err
    assert snapshot(root) == before


@pytest.mark.parametrize("name", ["GuardCalls", "guard-calls", "_guard", "guard__calls"])
def test_the_scaffold_refuses_a_name_that_is_not_snake_case(
    root: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(root)
    assert load_tool().main([name, "--pass", "full"], root) == 2
    assert "not a snake_case query name" in capsys.readouterr().err
    assert snapshot(root) == before
