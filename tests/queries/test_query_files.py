"""Meta-tests over queries/*.scm: every query has a fixture, is listed, says what it finds,
uses the declared capture vocabulary, and compiles on its own."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from tracker.common.resources import queries_dir
from tracker.extract.parse import QUERY_NAMES, compiled_query

# The subjects a capture may be about: the part of its name before the first dot.
VOCABULARY = frozenset({
    "class", "function", "definition", "call", "read", "assign", "import", "return",
    "if", "boolean", "ternary", "try", "assert", "write", "unpack", "loop", "local",
    "forward", "message",
})
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


def test_query_names_lists_exactly_the_query_files() -> None:
    assert len(QUERY_NAMES) == len(set(QUERY_NAMES))
    assert sorted(QUERY_NAMES) == query_ids()


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
