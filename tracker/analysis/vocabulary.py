"""The analysis's words as enums carrying their metadata: how strongly an algorithm needs a
member, how a check ends, which role a class plays, how a site guards its use and how a
class provides a member. Values are the serialised strings (snapshots, JSON documents);
the tables the other modules used to re-list (status order, provided kinds, checked
statuses) derive from here. (Model kinds, target/draft/embedding/..., are roles.toml data:
tracker.analysis.roles.)"""

from __future__ import annotations

from enum import StrEnum


class RequirementStatus(StrEnum):
    """How an algorithm needs a member of the target or draft model."""

    _value_: str
    rank: int  # the strongest first: a member's status is its strongest site's

    def __new__(cls, value: str, rank: int) -> RequirementStatus:
        member = str.__new__(cls, value)
        member._value_ = value
        member.rank = rank
        return member

    # Used unconditionally on the worker's path: the server fails without it.
    REQUIRED = "required", 0
    # Used under a condition the tracker could not decide (a flag, a config value).
    CONDITIONAL = "conditional", 1
    # Used only where a guard (hasattr, getattr default, except) covers its absence.
    OPTIONAL = "optional", 2


class CheckStatus(StrEnum):
    """The verdict on a (model class, algorithm, role)."""

    OK = "ok"
    BROKEN = "broken"  # a required member missing, or the aux-hidden-state contract broken
    UNKNOWN = "unknown"  # a member could not be decided


class CellStatus(StrEnum):
    """A cell of the models x versions matrix: a check's status, or why there is none."""

    _value_: str
    checked: bool  # the class was checked (the status is a CheckStatus)

    def __new__(cls, value: str, checked: bool) -> CellStatus:
        member = str.__new__(cls, value)
        member._value_ = value
        member.checked = checked
        return member

    OK = "ok", True
    BROKEN = "broken", True
    UNKNOWN = "unknown", True
    # Registered, but the algorithm asks nothing of this kind of class at that version.
    NOT_APPLICABLE = "n/a", False
    ABSENT = "absent", False  # not registered


class Role(StrEnum):
    """Whose member a requirement is."""

    _value_: str
    model: bool  # a model class plays it (the runner is the code around the models)

    def __new__(cls, value: str, model: bool) -> Role:
        member = str.__new__(cls, value)
        member._value_ = value
        member.model = model
        return member

    TARGET = "target", True
    DRAFT = "draft", True
    # The model runner: what it needs of a model applies to the target and the draft.
    RUNNER = "runner", False


class Guard(StrEnum):
    """How a site protects itself against the member's absence."""

    _value_: str
    probes: bool  # the site tests for the member (its use counts as "hasattr")
    tolerates: bool  # the absence is handled: the member is optional at that site

    def __new__(cls, value: str, probes: bool, tolerates: bool) -> Guard:
        member = str.__new__(cls, value)
        member._value_ = value
        member.probes = probes
        member.tolerates = tolerates
        return member

    @classmethod
    def of(cls, name: str) -> Guard:
        """The guard serialised as `name` (mypy reads a lookup against __new__)."""
        return cls(name)  # type: ignore[call-arg]

    # `if hasattr(model, "m"):` around the use.
    HASATTR = "hasattr", True, True
    # `assert hasattr(model, "m")` (or an if that raises): the absence is an error.
    HASATTR_RAISES = "hasattr-raises", True, False
    # `getattr(model, "m", default)`.
    GETATTR_DEFAULT = "getattr-default", False, True
    # The use sits in a `try` that catches AttributeError.
    EXCEPT_ATTRIBUTE_ERROR = "except AttributeError", False, True
    # `getattr(model, "m", None)` followed by a raise when it is None: the absence is an error.
    GETATTR_RAISES = "getattr-raises", False, False
    # `if hasattr(model, "a"): ... elif hasattr(model, "b"): ... else: raise`: one of the
    # group must be there (the site is the raise).
    ONE_OF = "one-of", True, False


class ProvisionKind(StrEnum):
    """How a class provides (or lacks) a member an algorithm requires (`Provision.how` of
    tracker.analysis.compat)."""

    _value_: str
    provides: bool

    def __new__(cls, value: str, provides: bool) -> ProvisionKind:
        member = str.__new__(cls, value)
        member._value_ = value
        member.provides = provides
        return member

    DEFINED = "defined", True  # in the class body
    INHERITED = "inherited", True  # from a base in the source
    ATTRIBUTE = "attribute", True  # assigned as `self.m = ...`
    EXTERNAL = "external", True  # from a base outside the source (the inventory)
    FORWARDED = "forwarded", True  # `__getattr__` forwards it to a class that has it
    ALTERNATIVE = "alternative", True  # another member the site accepts instead
    UNKNOWN = "unknown", False  # could not be decided
    MISSING = "missing", False


# The tables derived from the enums.
STATUS_ORDER: dict[str, int] = {s.value: s.rank for s in RequirementStatus}
MODEL_ROLES: tuple[str, ...] = tuple(r.value for r in Role if r.model)
PROVIDED: frozenset[str] = frozenset(p.value for p in ProvisionKind if p.provides)
CHECKED: tuple[str, ...] = tuple(s.value for s in CellStatus if s.checked)
CELL_STATUSES: tuple[str, ...] = tuple(s.value for s in CellStatus)
