"""Meta-tests over queries/*.scm: every query has a handler and a fixture, declares the
passes that run it, says what it finds, uses the declared capture vocabulary, and compiles
on its own."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from tracker.common.resources import queries_dir
from tracker.extract.handlers import HANDLERS, handles
from tracker.extract.queries import (
    PASSES,
    QueryFileError,
    compiled_query,
    declared_passes,
    pass_queries,
    query_passes,
)

# The subjects a capture may be about: the part of its name before the first dot.
VOCABULARY = frozenset(
    {
        "class",
        "function",
        "definition",
        "call",
        "read",
        "assign",
        "import",
        "return",
        "if",
        "boolean",
        "ternary",
        "try",
        "assert",
        "write",
        "unpack",
        "loop",
        "local",
        "forward",
        "message",
    }
)
# `@subject.part`: two snake_case words joined by one dot.
CAPTURE_SHAPE = re.compile(r"^[a-z]+\.[a-z]+(?:_[a-z]+)*$")

FIXTURES = Path(__file__).resolve().parent
QUERY_FILES = sorted(queries_dir().glob("*.scm"))


def query_ids() -> list[str]:
    return [path.stem for path in QUERY_FILES]


def declared_captures(name: str) -> list[str]:
    query = compiled_query(name)
    return [query.capture_name(i) for i in range(query.capture_count)]


def test_there_are_query_files() -> None:
    assert QUERY_FILES


@pytest.mark.parametrize("name", query_ids())
def test_every_query_file_has_a_fixture_test(name: str) -> None:
    assert (FIXTURES / f"test_{name}.py").is_file()


def test_every_query_file_has_a_handler() -> None:
    assert [name for name in query_ids() if name not in HANDLERS] == []


def test_every_handler_has_a_query_file() -> None:
    assert [name for name in HANDLERS if name not in query_ids()] == []


@pytest.mark.parametrize("name", query_ids())
def test_every_query_file_declares_the_passes_that_run_it(name: str) -> None:
    passes = query_passes()[name]
    assert passes
    assert passes <= set(PASSES)


@pytest.mark.parametrize("pass_name", PASSES)
def test_every_pass_runs_some_query(pass_name: str) -> None:
    assert pass_queries(pass_name)


def write_query(tmp_path: Path, header: str) -> Path:
    path = tmp_path / "odd_query.scm"
    path.write_text(f"{header}(identifier) @call.member\n", encoding="utf-8")
    return path


def test_a_pass_declaration_is_read_from_the_opening_comment(tmp_path: Path) -> None:
    path = write_query(tmp_path, "; Finds names.\n; pass: full, definitions\n")
    assert declared_passes(path) == {"full", "definitions"}


@pytest.mark.parametrize(
    "header",
    [
        "; Finds names. Consumed by nobody.\n",
        "; Finds names.\n\n; pass: full\n",  # after the opening comment: not a declaration
        "; pass: full\n; pass: definitions\n",
    ],
)
def test_a_query_file_without_one_pass_declaration_is_an_error_naming_it(
    tmp_path: Path, header: str
) -> None:
    with pytest.raises(QueryFileError, match=r"^odd_query\.scm: .*pass"):
        declared_passes(write_query(tmp_path, header))


@pytest.mark.parametrize("declared", ["ful", "full, model", ""])
def test_an_unknown_pass_is_an_error_naming_the_file_and_the_pass(
    tmp_path: Path, declared: str
) -> None:
    with pytest.raises(QueryFileError, match=r"^odd_query\.scm: unknown pass"):
        declared_passes(write_query(tmp_path, f"; Finds names.\n; pass: {declared}\n"))


def test_a_second_handler_for_a_query_is_refused() -> None:
    with pytest.raises(ValueError, match="two handlers"):
        handles("call_sites")(lambda ex, matches: None)
    assert HANDLERS["call_sites"].__name__ == "on_call_sites"


def test_a_handler_registered_before_one_it_runs_after_is_refused() -> None:
    with pytest.raises(ValueError, match="registered after"):
        handles("not_a_query", after=("no_such_handler",))(lambda ex, matches: None)
    assert "not_a_query" not in HANDLERS


def test_every_fixture_test_belongs_to_a_query_file() -> None:
    fixtures = {p.stem.removeprefix("test_") for p in FIXTURES.glob("test_*.py")}
    assert fixtures - {"query_files"} == set(query_ids())


@pytest.mark.parametrize("name", query_ids())
def test_every_query_file_opens_with_a_comment_saying_what_it_finds(name: str) -> None:
    first_line = (queries_dir() / f"{name}.scm").read_text(encoding="utf-8").splitlines()[0]
    assert re.match(r"^; \S", first_line), first_line


@pytest.mark.parametrize("name", query_ids())
def test_every_query_file_says_who_consumes_it(name: str) -> None:
    lines = (queries_dir() / f"{name}.scm").read_text(encoding="utf-8").splitlines()
    header = " ".join(itertools.takewhile(lambda line: line.startswith(";"), lines))
    assert "Consumed by" in header


@pytest.mark.parametrize("name", query_ids())
def test_every_query_compiles_on_its_own(name: str) -> None:
    assert compiled_query(name).pattern_count > 0


@pytest.mark.parametrize("name", query_ids())
def test_capture_names_follow_the_subject_part_shape(name: str) -> None:
    names = declared_captures(name)
    assert names
    assert [n for n in names if not CAPTURE_SHAPE.match(n)] == []


@pytest.mark.parametrize("name", query_ids())
def test_capture_names_come_from_the_declared_vocabulary(name: str) -> None:
    subjects = {capture.split(".", 1)[0] for capture in declared_captures(name)}
    assert subjects - VOCABULARY == set()
