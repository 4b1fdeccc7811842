"""What changed between two versions: interface changes and model wrapper events.

Change kinds are named `<subject>_<change>` and each has one message; every check runs on
every pair of versions, and a version compared with itself yields nothing. Results are
sorted deterministically.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from tracker.analysis.compat import Compat, ModelCheck, natural_role
from tracker.analysis.interface import FieldUse, Interface, Requirement

# kind -> message template; {role} is "target" or "draft", {was} and {now} the numbers of
# arguments of the calls before and after ("1", "0/1", "1+1kw").
CHANGE_KINDS: dict[str, str] = {
    "algorithm_added": "new algorithm {subject}",
    "algorithm_removed": "algorithm {subject} is gone",
    "member_now_required": "the {role} model must now provide {subject}",
    "member_now_optional": "the {role} model's {subject} is now used when present",
    "member_no_longer_required": "the {role} model no longer needs {subject}",
    "member_no_longer_used": "the {role} model's optional {subject} is no longer used",
    "member_became_optional": "{subject} on the {role} model is no longer always required",
    "member_became_required": "{subject} on the {role} model is now required",
    "call_arity_changed": (
        "{subject} on the {role} model is now called with {now} arguments (was {was})"
    ),
    "output_field_added": "the forward output's {subject} is now read",
    "output_field_removed": "the forward output's {subject} is no longer read",
    "config_key_added": "configuration key {subject} is now read",
    "config_key_removed": "configuration key {subject} is no longer read",
    "model_wrapper_broke": "{subject} no longer provides what {algorithm} requires",
    "model_wrapper_fixed": "{subject} now provides what {algorithm} requires",
    # The members are all there, and the aux-hidden-state contract (tracker.analysis.contract) is
    # what broke or was fixed: its own kind, so an issue about it is its own issue.
    "model_wrapper_contract_broke": (
        "{subject} provides the members but breaks {algorithm}'s aux-hidden-state contract"
    ),
    "model_wrapper_contract_fixed": (
        "{subject} no longer breaks {algorithm}'s aux-hidden-state contract"
    ),
    "model_wrapper_added_unsupported": "new class {subject} lacks what {algorithm} requires",
    "model_wrapper_added_supported": "new class {subject} supports {algorithm}",
    "model_wrapper_removed": "{subject} is no longer registered",
}

# A wrapper that worked in the previous version and no longer does, and the reverse.
WRAPPER_BROKE = frozenset({"model_wrapper_broke", "model_wrapper_contract_broke"})
WRAPPER_FIXED = frozenset({"model_wrapper_fixed", "model_wrapper_contract_fixed"})

# Kinds a maintainer must act on, ranked before the rest.
BREAKING = frozenset(
    {"member_now_required", "member_became_required", "call_arity_changed", *WRAPPER_BROKE}
)


@dataclass(frozen=True)
class Change:
    kind: str
    algorithm: str
    subject: str
    role: str = ""
    old: Requirement | FieldUse | ModelCheck | None = None
    new: Requirement | FieldUse | ModelCheck | None = None
    # Set on model events worth a maintainer's look: the class lacks members that its own
    # inner model provides, or it broke where it worked before.
    notable: bool = False

    @property
    def message(self) -> str:
        return CHANGE_KINDS[self.kind].format(
            subject=self.subject,
            role=self.role or "target",
            algorithm=self.algorithm,
            was=_arities(self.old),
            now=_arities(self.new),
        )

    @property
    def breaking(self) -> bool:
        return self.kind in BREAKING

    @property
    def accepted(self) -> str:
        """The reason the user accepts the model event's break (tracker.toml), else "".
        Accepted events are still reported, but fail no `--fail-on` and file no issue."""
        return self.new.accepted if isinstance(self.new, ModelCheck) else ""

    @property
    def new_break(self) -> bool:
        """A wrapper newly broken: one that worked and broke (its members or its contract),
        or a new class arriving without what its own inner model or a sibling class in its
        file provides (not a new class that, like its neighbours, never supported the
        algorithm)."""
        return self.kind in WRAPPER_BROKE or (
            self.kind == "model_wrapper_added_unsupported" and self.notable
        )


def _arities(side: object) -> str:
    return "/".join(side.arities) if isinstance(side, Requirement) else ""


@dataclass
class Diff:
    old_version: str
    new_version: str
    algorithms: tuple[str, ...]
    changes: list[Change] = field(default_factory=list)
    # Requirements present in both, for the "unchanged (was :153)" lines.
    unchanged: list[tuple[Requirement, Requirement]] = field(default_factory=list)

    def of_kind(self, *kinds: str) -> list[Change]:
        return [c for c in self.changes if c.kind in kinds]

    @property
    def new_breaks(self) -> list[Change]:
        return [c for c in self.changes if c.new_break]


def _req_index(itf: Interface) -> dict[tuple[str, str, str], Requirement]:
    return {(r.algorithm, r.role, r.member): r for r in itf.requirements}


def interface_changes(
    old: Interface, new: Interface, algorithms: tuple[str, ...]
) -> Iterator[Change | tuple[Requirement, Requirement]]:
    for a in sorted(set(new.algorithms) - set(old.algorithms)):
        if a in algorithms:
            yield Change("algorithm_added", a, a)
    for a in sorted(set(old.algorithms) - set(new.algorithms)):
        if a in algorithms:
            yield Change("algorithm_removed", a, a)
    before, after = _req_index(old), _req_index(new)
    for k in sorted(set(before) | set(after)):
        algorithm, role, member = k
        if algorithm not in algorithms:
            continue
        o, n = before.get(k), after.get(k)
        if o is None and n is not None:
            kind = "member_now_required" if n.status == "required" else "member_now_optional"
            yield Change(kind, algorithm, member, role, None, n)
        elif n is None and o is not None:
            kind = (
                "member_no_longer_required" if o.status == "required" else "member_no_longer_used"
            )
            yield Change(kind, algorithm, member, role, o, None)
        elif o is not None and n is not None:
            if o.status == "required" and n.status != "required":
                yield Change("member_became_optional", algorithm, member, role, o, n)
            elif o.status != "required" and n.status == "required":
                yield Change("member_became_required", algorithm, member, role, o, n)
            elif o.kind == "call" and n.kind == "call" and o.arities != n.arities:
                yield Change("call_arity_changed", algorithm, member, role, o, n)
            else:
                yield (o, n)
    for kind, old_fields, new_fields in (
        ("output_field", old.output_fields, new.output_fields),
        ("config_key", old.config_keys, new.config_keys),
    ):
        fb = {(f.algorithm, f.owner, f.name): f for f in old_fields}
        fa = {(f.algorithm, f.owner, f.name): f for f in new_fields}
        for k in sorted(set(fb) | set(fa)):
            algorithm, owner, name = k
            if algorithm not in algorithms:
                continue
            subject = f"{owner}.{name}" if kind == "output_field" else f"{owner}[{name!r}]"
            if k not in fb:
                yield Change(f"{kind}_added", algorithm, subject, "", None, fa[k])
            elif k not in fa:
                yield Change(f"{kind}_removed", algorithm, subject, "", fb[k], None)


def model_changes(old: Compat, new: Compat, algorithms: tuple[str, ...]) -> Iterator[Change]:
    # A class in its kind's own role only: that every generative class lacks the members
    # of an EAGLE3 draft (when loaded as one) is context, not an event of each release.
    before = {(c.model, c.algorithm): c for c in old.checks if c.role == natural_role(c.kind)}
    after = {(c.model, c.algorithm): c for c in new.checks if c.role == natural_role(c.kind)}
    old_names = {e.name for e in old.entries}
    new_names = {e.name for e in new.entries}
    # (file, algorithm) pairs where some class supports the algorithm: a new class beside
    # such a sibling that does not is worth a look.
    ok_siblings: dict[tuple[str, str], set[str]] = {}
    for c in after.values():
        if c.status == "ok":
            ok_siblings.setdefault((c.path, c.algorithm), set()).add(c.model)
    for k in sorted(set(before) | set(after)):
        model, algorithm = k
        if algorithm not in algorithms:
            continue
        o, n = before.get(k), after.get(k)
        if o is not None and n is not None:
            if o.status == "ok" and n.status == "broken":
                kind = "model_wrapper_contract_broke" if n.contract else "model_wrapper_broke"
                yield Change(kind, algorithm, model, n.role, o, n, notable=True)
            elif o.status == "broken" and n.status == "ok":
                kind = "model_wrapper_contract_fixed" if o.contract else "model_wrapper_fixed"
                yield Change(kind, algorithm, model, n.role, o, n)
        elif n is not None and model not in old_names:
            if n.status == "broken":
                # Worth a look when its own inner model has the members, or a sibling in
                # the same file supports the algorithm: an oversight, not a design choice.
                siblings = ok_siblings.get((n.path, algorithm), set()) - {model}
                notable = bool(n.delegations) or bool(siblings)
                yield Change(
                    "model_wrapper_added_unsupported",
                    algorithm,
                    model,
                    n.role,
                    None,
                    n,
                    notable=notable,
                )
            elif n.status == "ok":
                yield Change("model_wrapper_added_supported", algorithm, model, n.role, None, n)
        elif o is not None and model not in new_names:
            yield Change("model_wrapper_removed", algorithm, model, o.role, o, None)


def diff(
    old_itf: Interface,
    old_compat: Compat,
    new_itf: Interface,
    new_compat: Compat,
    algorithms: tuple[str, ...] | None = None,
) -> Diff:
    chosen = algorithms or tuple(sorted(set(old_itf.algorithms) | set(new_itf.algorithms)))
    result = Diff(old_itf.version, new_itf.version, chosen)
    for item in interface_changes(old_itf, new_itf, chosen):
        if isinstance(item, Change):
            result.changes.append(item)
        else:
            result.unchanged.append(item)
    result.changes.extend(model_changes(old_compat, new_compat, chosen))
    return result


def rank(change: Change) -> tuple[int, str, str, str]:
    """Breaks first, then notable model events, then the rest; stable within each."""
    if change.breaking:
        first = 0
    elif change.notable:
        first = 1
    elif change.kind.startswith("model_wrapper"):
        first = 3
    else:
        first = 2
    return (first, change.algorithm, change.kind, change.subject)
