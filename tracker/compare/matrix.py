"""Model wrappers across many versions: a status per (model, version) and the events.

Statuses: ok, broken, unknown (a member could not be decided), n/a (registered, but the
algorithm asks nothing of this kind of class at that version), absent (not registered).
Events: appeared, broke (ok -> broken: a regression), fixed (broken -> ok), removed, and
changed (the set of missing members changed while broken). A range that starts after the
source's first release is compared with the release before it: a class already there is
"present" (since before the range), not "appeared".

A row is a class in a role: its name, or `Qwen2ForCausalLM (as draft)` where a generative
class is checked as the draft model of an algorithm that loads such classes as drafts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from tracker.analysis.compat import EntryClass, ModelCheck, natural_role
from tracker.analysis.vocabulary import CHECKED, CellStatus
from tracker.compare.changes import ModelEvent
from tracker.compare.snapshot import Snapshot

# Every kind of event a matrix or history can hold (the JSON Schemas list the same).
EVENT_KINDS: tuple[str, ...] = tuple(e.value for e in ModelEvent)


def status_counts(statuses: Iterable[str], kinds: Sequence[str] = CHECKED) -> dict[str, int]:
    """How many of `statuses` are each of `kinds`, in the order of `kinds`."""
    seen = list(statuses)
    return {kind: seen.count(kind) for kind in kinds}


def row_label(model: str, kind: str, role: str) -> str:
    """The row of a class checked in `role`: its name in its kind's own role."""
    return model if role == natural_role(kind) else f"{model} (as {role})"


def check_row(check: ModelCheck) -> str:
    return row_label(check.model, check.kind, check.role)


def _registered_rows(entries: Sequence[EntryClass], roles: tuple[str, ...]) -> set[str]:
    """Rows that exist at a version whether or not the algorithm asks anything of them."""
    rows = {e.name for e in entries if natural_role(e.kind) in roles}
    if "draft" in roles:
        rows |= {row_label(e.name, e.kind, "draft") for e in entries if e.kind == "target"}
    return rows


@dataclass(frozen=True)
class Event:
    model: str
    algorithm: str
    version: str
    kind: ModelEvent
    status: str  # status at `version`
    members: tuple[str, ...] = ()  # missing (appeared/broke/changed) or now provided (fixed)
    previous: str = ""  # the version before
    # The sites of the contract findings a contract event is about (the setter's write, the
    # decoder's read, ...), each rendered "what (file:line)".
    contract_sites: tuple[str, ...] = ()


@dataclass
class Matrix:
    algorithm: str
    versions: list[str]
    kinds: dict[str, str] = field(default_factory=dict)  # row -> kind of its class
    roles: dict[str, str] = field(default_factory=dict)  # row -> role it is checked in
    classes: dict[str, str] = field(default_factory=dict)  # row -> class name
    cells: dict[str, dict[str, str]] = field(default_factory=dict)  # model -> version -> status
    missing: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)

    @property
    def models(self) -> list[str]:
        return sorted(self.cells)

    def counts(self, version: str, kinds: Sequence[str] = CHECKED) -> dict[str, int]:
        """How many rows have each status of `kinds` at `version`."""
        return status_counts((row[version] for row in self.cells.values()), kinds)


def build_matrix(
    snapshots: Sequence[Snapshot],
    algorithm: str,
    roles: tuple[str, ...] = ("target",),
    before: Snapshot | None = None,
    starts_history: bool = True,
) -> Matrix:
    """The rows of the checks in `roles` (target, draft) for the algorithm, over `snapshots`
    (oldest first). `before` is the release just before them: events at the first version
    are then against it. Without it, `starts_history` says whether the first version is
    the source's first (classes there "appeared") or the release before it could not be
    read (they are "present")."""
    m = Matrix(algorithm, [s.version for s in snapshots])
    per_version = [_statuses(snap, algorithm, roles) for snap in snapshots]
    for _snap, checks, _registered in per_version:
        for label, c in checks.items():
            m.kinds.setdefault(label, c.kind)
            m.roles.setdefault(label, c.role)
            m.classes.setdefault(label, c.model)
    start = _statuses(before, algorithm, roles) if before is not None else None
    for model in sorted(m.kinds):
        row: dict[str, str] = {}
        missing_row: dict[str, tuple[str, ...]] = {}
        previous_status = "absent"
        previous_missing: tuple[str, ...] = ()
        previous_version = ""
        previous_check: ModelCheck | None = None
        if start is not None:
            previous_status, previous_check = _status_of(model, start[1], start[2])
            previous_missing = _broken_by(previous_check)
            previous_version = start[0].version
        for i, (snap, checks, registered) in enumerate(per_version):
            status, check = _status_of(model, checks, registered)
            if check is not None:
                missing_row[snap.version] = check.missing
            current_missing = _broken_by(check)
            row[snap.version] = status
            if i == 0 and start is None and not starts_history:
                # The release before could not be read: what is here was there before.
                previous_status, previous_missing = status, current_missing
            event = _event(
                model,
                algorithm,
                snap.version,
                previous_version,
                previous_status,
                status,
                previous_missing,
                current_missing,
            )
            if event is None and i == 0 and previous_status == status and status in CHECKED:
                # Already there before the range, as it is at its start.
                event = Event(
                    model,
                    algorithm,
                    snap.version,
                    ModelEvent.PRESENT,
                    status,
                    current_missing,
                    previous_version,
                )
            if event is not None:
                about = previous_check if event.kind == ModelEvent.FIXED else check
                if about is not None and about.contract:
                    sites = tuple(s.render() for f in about.contract for s in f.sites)
                    event = replace(event, contract_sites=tuple(dict.fromkeys(sites)))
                m.events.append(event)
            previous_status, previous_missing = status, current_missing
            previous_check = check
            previous_version = snap.version
        m.cells[model] = row
        m.missing[model] = missing_row
    return m


def _broken_by(check: ModelCheck | None) -> tuple[str, ...]:
    """What a check is broken by: its missing members, then its contract findings, so a
    contract break or fix is an event like a member's."""
    if check is None:
        return ()
    return check.missing + tuple(sorted({f"contract: {f.headline}" for f in check.contract}))


def _statuses(
    snap: Snapshot, algorithm: str, roles: tuple[str, ...]
) -> tuple[Snapshot, dict[str, ModelCheck], set[str]]:
    """(snapshot, its checks of `algorithm` by row, the rows that exist at it whether or
    not the algorithm asks anything of them)."""
    checks = {
        check_row(c): c for c in snap.compat.checks if c.algorithm == algorithm and c.role in roles
    }
    return snap, checks, _registered_rows(snap.compat.entries, roles)


def _status_of(
    row: str, checks: dict[str, ModelCheck], registered: set[str]
) -> tuple[str, ModelCheck | None]:
    check = checks.get(row)
    if check is not None:
        return check.status, check
    return ("n/a" if row in registered else "absent"), None


def _event(
    model: str,
    algorithm: str,
    version: str,
    previous_version: str,
    before: str,
    after: str,
    missing_before: tuple[str, ...],
    missing_after: tuple[str, ...],
) -> Event | None:
    def event(kind: ModelEvent, members: tuple[str, ...]) -> Event:
        return Event(model, algorithm, version, kind, after, members, previous_version)

    if before not in CHECKED and after in CHECKED:
        # First time the algorithm asks anything of this class (or the class is new).
        return event(ModelEvent.APPEARED, missing_after)
    if before in CHECKED and after == CellStatus.ABSENT:
        return event(ModelEvent.REMOVED, ())
    if before == CellStatus.OK and after == CellStatus.BROKEN:
        return event(ModelEvent.BROKE, missing_after)
    if before == CellStatus.BROKEN and after == CellStatus.OK:
        return event(ModelEvent.FIXED, missing_before)
    if before == after == CellStatus.BROKEN and missing_before != missing_after:
        return event(ModelEvent.CHANGED, missing_after)
    return None
