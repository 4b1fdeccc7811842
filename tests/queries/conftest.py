"""What one query captures on a snippet, as plain sortable rows for exact comparison.

Shared by the query fixture tests (`test_<query>.py`) as fixtures, which work under any
import mode: each test compares the full sorted list of rows with `==`, so a capture that
appears (noisy) or disappears (missing) fails the test.
"""

from __future__ import annotations

from collections.abc import Callable
from textwrap import dedent

import pytest

from tracker.extract.parse import run_query
from tracker.extract.queries import compiled_query

# (capture name, captured text, 1-based line of the capture's first byte)
Capture = tuple[str, str, int]
Captures = Callable[[str, str], list[Capture]]
CaptureNames = Callable[[str], set[str]]


def query_captures(name: str, source: str) -> list[Capture]:
    """Every capture of query `name` on `source` (dedented), sorted.

    A capture spanning several lines is written `first line…last line` (each stripped):
    enough to tell which node was captured without copying whole class bodies into tests.
    """
    rows: list[Capture] = []
    for _pattern, found in run_query(name, dedent(source).encode()):
        for capture_name, nodes in found.items():
            for node in nodes:
                rows.append((capture_name, _text(node.text or b""), node.start_point.row + 1))
    return sorted(rows)


def query_capture_names(name: str) -> set[str]:
    """The capture names query `name` declares."""
    query = compiled_query(name)
    return {query.capture_name(i) for i in range(query.capture_count)}


def _text(raw: bytes) -> str:
    lines = raw.decode("utf-8").splitlines()
    if len(lines) <= 1:
        return lines[0] if lines else ""
    return f"{lines[0].strip()}…{lines[-1].strip()}"


@pytest.fixture
def captures() -> Captures:
    """`captures(query_name, source) -> sorted [(capture, text, line)]`."""
    return query_captures


@pytest.fixture
def capture_names() -> CaptureNames:
    """`capture_names(query_name) -> the capture names the query declares`."""
    return query_capture_names
