"""The query files in `queries/`: their text, compiled queries, and the pass that runs each.

Each file declares in its opening comment which extraction passes run it
(`; pass: full, definitions`): a full pass reads files that hold workers (calls, reads,
conditions), a definitions pass reads model files (what a class provides). The declaration
is data, checked on load: a file without one, or naming an unknown pass, is an error that
names the file.
"""

from __future__ import annotations

import itertools
import re
from functools import cache
from pathlib import Path

import tree_sitter_python
from tree_sitter import Language, Query

from tracker.common.errors import TrackerError
from tracker.common.resources import queries_dir

LANGUAGE = Language(tree_sitter_python.language())

# The extraction passes: "full" for files a worker runs, "definitions" for model files.
PASSES = ("full", "definitions")
_PASS_LINE = re.compile(r"^;\s*pass:(.*)$")


class QueryFileError(TrackerError):
    """A query file the tool ships is malformed (missing or unknown pass declaration)."""


@cache
def query_passes() -> dict[str, frozenset[str]]:
    """Every query file's name (sorted) and the passes that run it."""
    files = sorted(queries_dir().glob("*.scm"))
    if not files:
        raise QueryFileError(f"{queries_dir()}: no query files")
    return {path.stem: declared_passes(path) for path in files}


def declared_passes(path: Path) -> frozenset[str]:
    """The passes named by the `; pass: ...` line of a query file's opening comment."""
    lines = path.read_text(encoding="utf-8").splitlines()
    header = itertools.takewhile(lambda line: line.startswith(";"), lines)
    declared = [found.group(1) for line in header if (found := _PASS_LINE.match(line))]
    if len(declared) != 1:
        raise QueryFileError(
            f"{path.name}: its opening comment needs exactly one `; pass: "
            f"{' | '.join(PASSES)}` line (found {len(declared)})"
        )
    names = [name.strip() for name in declared[0].split(",")]
    unknown = [name for name in names if name not in PASSES]
    if unknown or not any(names):
        raise QueryFileError(
            f"{path.name}: unknown pass {', '.join(map(repr, unknown or names))} "
            f"(known: {', '.join(PASSES)})"
        )
    return frozenset(names)


def query_names() -> tuple[str, ...]:
    """Every query file's name, sorted."""
    return tuple(query_passes())


def pass_queries(pass_name: str) -> tuple[str, ...]:
    """The queries a pass runs, sorted by name."""
    if pass_name not in PASSES:
        raise ValueError(f"unknown pass {pass_name!r}")
    return tuple(name for name, passes in query_passes().items() if pass_name in passes)


@cache
def query_text(name: str) -> str:
    return (queries_dir() / f"{name}.scm").read_text(encoding="utf-8")


@cache
def compiled_query(name: str) -> Query:
    return Query(LANGUAGE, query_text(name))


@cache
def combined_query(names: tuple[str, ...]) -> tuple[Query, tuple[str, ...]]:
    """The queries as one: a single pass over the tree instead of one per file.

    Returns the query and, per pattern index, the name of the file it came from.
    """
    owners: list[str] = []
    for name in names:
        owners.extend([name] * compiled_query(name).pattern_count)
    text = "\n".join(query_text(name) for name in names)
    return Query(LANGUAGE, text), tuple(owners)
