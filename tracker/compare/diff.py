"""What changed between two versions: interface changes and model wrapper events.

Change kinds (tracker.compare.changes.ChangeKind) are named `<subject>_<change>` and each
has one message; every check runs on every pair of versions, and a version compared with
itself yields nothing. Results are sorted deterministically.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from tracker.analysis.compat import Compat, ModelCheck, natural_role
from tracker.analysis.interface import FieldUse, Interface, Requirement
from tracker.compare.changes import ChangeKind, ModelEvent


@dataclass(frozen=True)
class Change:
    kind: ChangeKind
    algorithm: str
    subject: str
    role: str = ""
    old: Requirement | FieldUse | ModelCheck | None = None
    new: Requirement | FieldUse | ModelCheck | None = None
    # Set on model events worth a maintainer's look: the class lacks members that its own
    # inner model provides, or it broke where it worked before.
    notable: bool = False

    def __post_init__(self) -> None:
        # A kind given by its name (a test, a stored document) still carries its metadata.
        object.__setattr__(self, "kind", ChangeKind.of(self.kind))

    @property
    def message(self) -> str:
        return self.kind.message.format(
            subject=self.subject,
            role=self.role or "target",
            algorithm=self.algorithm,
            was=_arities(self.old),
            now=_arguments(_arities(self.new)),
        )

    @property
    def breaking(self) -> bool:
        return self.kind.breaking

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
        return self.kind.event is ModelEvent.BROKE or (
            self.kind is ChangeKind.MODEL_WRAPPER_ADDED_UNSUPPORTED and self.notable
        )


def _arities(side: object) -> str:
    return "/".join(side.arities) if isinstance(side, Requirement) else ""


def _arguments(arities: str) -> str:
    """ "1 argument", "0/1 arguments", "no arguments": the numbers with their noun."""
    if arities in ("", "0"):
        return "no arguments"
    return f"{arities} argument{'' if arities == '1' else 's'}"


@dataclass
class Diff:
    old_version: str
    new_version: str
    algorithms: tuple[str, ...]
    changes: list[Change] = field(default_factory=list)
    # Requirements present in both, for the "unchanged (was :153)" lines.
    unchanged: list[tuple[Requirement, Requirement]] = field(default_factory=list)

    def of_kind(self, *kinds: ChangeKind) -> list[Change]:
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
            yield Change(ChangeKind.ALGORITHM_ADDED, a, a)
    for a in sorted(set(old.algorithms) - set(new.algorithms)):
        if a in algorithms:
            yield Change(ChangeKind.ALGORITHM_REMOVED, a, a)
    before, after = _req_index(old), _req_index(new)
    for k in sorted(set(before) | set(after)):
        algorithm, role, member = k
        if algorithm not in algorithms:
            continue
        o, n = before.get(k), after.get(k)
        if o is None and n is not None:
            kind = (
                ChangeKind.MEMBER_NOW_REQUIRED
                if n.status == "required"
                else ChangeKind.MEMBER_NOW_OPTIONAL
            )
            yield Change(kind, algorithm, member, role, None, n)
        elif n is None and o is not None:
            kind = (
                ChangeKind.MEMBER_NO_LONGER_REQUIRED
                if o.status == "required"
                else ChangeKind.MEMBER_NO_LONGER_USED
            )
            yield Change(kind, algorithm, member, role, o, None)
        elif o is not None and n is not None:
            if o.status == "required" and n.status != "required":
                yield Change(ChangeKind.MEMBER_BECAME_OPTIONAL, algorithm, member, role, o, n)
            elif o.status != "required" and n.status == "required":
                yield Change(ChangeKind.MEMBER_BECAME_REQUIRED, algorithm, member, role, o, n)
            elif o.kind == "call" and n.kind == "call" and o.arities != n.arities:
                yield Change(ChangeKind.CALL_ARITY_CHANGED, algorithm, member, role, o, n)
            else:
                yield (o, n)
    for added, removed, old_fields, new_fields in (
        (
            ChangeKind.OUTPUT_FIELD_ADDED,
            ChangeKind.OUTPUT_FIELD_REMOVED,
            old.output_fields,
            new.output_fields,
        ),
        (
            ChangeKind.CONFIG_KEY_ADDED,
            ChangeKind.CONFIG_KEY_REMOVED,
            old.config_keys,
            new.config_keys,
        ),
    ):
        fb = {(f.algorithm, f.owner, f.name): f for f in old_fields}
        fa = {(f.algorithm, f.owner, f.name): f for f in new_fields}
        for k in sorted(set(fb) | set(fa)):
            algorithm, owner, name = k
            if algorithm not in algorithms:
                continue
            subject = f"{owner}.{name}" if added.area == "output_field" else f"{owner}[{name!r}]"
            if k not in fb:
                yield Change(added, algorithm, subject, "", None, fa[k])
            elif k not in fa:
                yield Change(removed, algorithm, subject, "", fb[k], None)


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
                kind = (
                    ChangeKind.MODEL_WRAPPER_CONTRACT_BROKE
                    if n.contract
                    else ChangeKind.MODEL_WRAPPER_BROKE
                )
                yield Change(kind, algorithm, model, n.role, o, n, notable=True)
            elif o.status == "broken" and n.status == "ok":
                kind = (
                    ChangeKind.MODEL_WRAPPER_CONTRACT_FIXED
                    if o.contract
                    else ChangeKind.MODEL_WRAPPER_FIXED
                )
                yield Change(kind, algorithm, model, n.role, o, n)
        elif n is not None and model not in old_names:
            if n.status == "broken":
                # Worth a look when its own inner model has the members, or a sibling in
                # the same file supports the algorithm: an oversight, not a design choice.
                siblings = ok_siblings.get((n.path, algorithm), set()) - {model}
                notable = bool(n.delegations) or bool(siblings)
                yield Change(
                    ChangeKind.MODEL_WRAPPER_ADDED_UNSUPPORTED,
                    algorithm,
                    model,
                    n.role,
                    None,
                    n,
                    notable=notable,
                )
            elif n.status == "ok":
                yield Change(
                    ChangeKind.MODEL_WRAPPER_ADDED_SUPPORTED, algorithm, model, n.role, None, n
                )
        elif o is not None and model not in new_names:
            yield Change(ChangeKind.MODEL_WRAPPER_REMOVED, algorithm, model, o.role, o, None)


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
    elif change.kind.model_event:
        first = 3
    else:
        first = 2
    return (first, change.algorithm, change.kind, change.subject)
