"""Fixture for queries/returns.scm: return statements that return a value."""

from __future__ import annotations

SOURCE = """\
class SpeculativeAlgorithm(IntEnum):
    def is_eagle(self):
        return self in (SpeculativeAlgorithm.EAGLE, SpeculativeAlgorithm.EAGLE3)

    def is_none(self):
        return self == SpeculativeAlgorithm.NONE


def get_worker_class(algo):
    if algo.is_eagle():
        return EAGLEWorker
    return embed, head
"""

EXPECTED = [
    ("return.site", "return EAGLEWorker", 11),
    ("return.site", "return embed, head", 12),
    ("return.site", "return self == SpeculativeAlgorithm.NONE", 6),
    (
        "return.site",
        "return self in (SpeculativeAlgorithm.EAGLE, SpeculativeAlgorithm.EAGLE3)",
        3,
    ),
    ("return.value", "EAGLEWorker", 11),
    ("return.value", "embed, head", 12),
    ("return.value", "self == SpeculativeAlgorithm.NONE", 6),
    ("return.value", "self in (SpeculativeAlgorithm.EAGLE, SpeculativeAlgorithm.EAGLE3)", 3),
]


def test_returns_capture_the_returned_expression(captures) -> None:
    assert captures("returns", SOURCE) == EXPECTED


def test_bare_returns_yields_and_lambda_bodies_are_not_returns(captures) -> None:
    source = """\
    def stop(self):
        if self.done:
            return
        yield self.batch
        key = lambda req: req.rid
    """
    assert captures("returns", source) == []


def test_the_fixture_exercises_every_capture_of_the_query(capture_names) -> None:
    assert {name for name, _, _ in EXPECTED} == capture_names("returns")
