"""How a check reads to a person: a broken class that never took an algorithm up is
"unsupported", not "broken" like a wrapper that lost a member or forgot to delegate one.

The analysis says `broken` for both (either crashes at server start); reports tell them
apart, as the diff tells a new break from a new class that never supported the algorithm.
"""

from __future__ import annotations

from enum import StrEnum

from tracker.analysis.compat import Compat, ModelCheck
from tracker.analysis.vocabulary import PROVIDED


class Support(StrEnum):
    """A check's standing in a report, with the mark text reports put before it."""

    _value_: str
    mark: str

    def __new__(cls, value: str, mark: str) -> Support:
        member = str.__new__(cls, value)
        member._value_ = value
        member.mark = mark
        return member

    OK = "ok", "✓"
    # Lacks a member, or breaks the contract, where it provides some of what the
    # algorithm requires or something near it does: worth fixing.
    BROKEN = "broken", "✗"
    # Broken, but it provides none of the members, and neither its inner model nor a class
    # beside it in its module does: the algorithm was never taken up there.
    UNSUPPORTED = "unsupported", "·"
    UNKNOWN = "unknown", "?"


def oversight(check: ModelCheck, compat: Compat) -> bool:
    """A class lacking an algorithm's members looks like an oversight, not a choice, when
    its own inner model has them or another class of its module supports that same
    algorithm in the same role (the diff's `notable` is broader: any algorithm)."""
    if check.delegations:
        return True
    return any(
        c.path == check.path
        and c.model != check.model
        and c.status == "ok"
        and c.algorithm == check.algorithm
        and c.role == check.role
        for c in compat.checks
    )


def support_of(check: ModelCheck, compat: Compat) -> Support:
    """`check`'s standing; `compat` is its version's, for the classes beside it."""
    if check.status != "broken":
        # Lookup by value; mypy reads the call against the members' __new__.
        return Support(check.status)  # type: ignore[call-arg]
    if check.contract or any(p.how in PROVIDED for p in check.provisions):
        return Support.BROKEN
    return Support.BROKEN if oversight(check, compat) else Support.UNSUPPORTED
