"""Model wrappers across many versions: a status per (model, version) and the events.

Statuses: ok, broken, unknown (a member could not be decided), n/a (registered, but the
algorithm asks nothing of this kind of class at that version), absent (not registered).
Events: appeared, broke (ok -> broken: a regression), fixed (broken -> ok), removed, and
changed (the set of missing members changed while broken). A range that starts after the
source's first release is compared with the release before it: a class already there is
"present" (since before the range), not "appeared".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tracker.compat import ModelCheck
from tracker.snapshot import Snapshot

CHECKED = ("ok", "broken", "unknown")


@dataclass(frozen=True)
class Event:
    model: str
    algorithm: str
    version: str
    kind: str  # "appeared" | "present" | "broke" | "fixed" | "removed" | "changed"
    status: str  # status at `version`
    members: tuple[str, ...] = ()  # missing (appeared/broke/changed) or now provided (fixed)
    previous: str = ""  # the version before


@dataclass
class Matrix:
    algorithm: str
    versions: list[str]
    kinds: dict[str, str] = field(default_factory=dict)  # model -> kind
    cells: dict[str, dict[str, str]] = field(default_factory=dict)  # model -> version -> status
    missing: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)

    @property
    def models(self) -> list[str]:
        return sorted(self.cells)


def build_matrix(
    snapshots: Sequence[Snapshot],
    algorithm: str,
    kinds: tuple[str, ...] = ("target",),
    before: Snapshot | None = None,
    starts_history: bool = True,
) -> Matrix:
    """The matrix of `snapshots` (oldest first). `before` is the release just before them:
    events at the first version are then against it. Without it, `starts_history` says
    whether the first version is the source's first (classes there "appeared") or the
    release before it could not be read (they are "present")."""
    m = Matrix(algorithm, [s.version for s in snapshots])
    per_version = [_statuses(snap, algorithm, kinds) for snap in snapshots]
    for snap, checks, _registered in per_version:
        for e in snap.compat.entries:
            if e.kind in kinds and e.name in checks:
                m.kinds.setdefault(e.name, e.kind)
    start = _statuses(before, algorithm, kinds) if before is not None else None
    for model in sorted(m.kinds):
        row: dict[str, str] = {}
        missing_row: dict[str, tuple[str, ...]] = {}
        previous_status = "absent"
        previous_missing: tuple[str, ...] = ()
        previous_version = ""
        if start is not None:
            previous_status, previous_missing = _status_of(model, start[1], start[2])
            previous_version = start[0].version
        for i, (snap, checks, registered) in enumerate(per_version):
            status, current_missing = _status_of(model, checks, registered)
            if status in CHECKED:
                missing_row[snap.version] = current_missing
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
                event = Event(model, algorithm, snap.version, "present", status,
                              current_missing, previous_version)
            if event is not None:
                m.events.append(event)
            previous_status, previous_missing = status, current_missing
            previous_version = snap.version
        m.cells[model] = row
        m.missing[model] = missing_row
    return m


def _statuses(
    snap: Snapshot, algorithm: str, kinds: tuple[str, ...]
) -> tuple[Snapshot, dict[str, ModelCheck], set[str]]:
    """(snapshot, its checks of `algorithm` by model, the classes of `kinds` it registers)."""
    checks = {
        c.model: c for c in snap.compat.checks if c.algorithm == algorithm and c.kind in kinds
    }
    return snap, checks, {e.name for e in snap.compat.entries if e.kind in kinds}


def _status_of(
    model: str, checks: dict[str, ModelCheck], registered: set[str]
) -> tuple[str, tuple[str, ...]]:
    check = checks.get(model)
    if check is not None:
        return check.status, check.missing
    return ("n/a" if model in registered else "absent"), ()


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
    checked = CHECKED
    if before in ("absent", "n/a") and after in checked:
        # First time the algorithm asks anything of this class (or the class is new).
        return Event(model, algorithm, version, "appeared", after, missing_after, previous_version)
    if before in checked and after == "absent":
        return Event(model, algorithm, version, "removed", after, (), previous_version)
    if before == "ok" and after == "broken":
        return Event(model, algorithm, version, "broke", after, missing_after, previous_version)
    if before == "broken" and after == "ok":
        return Event(model, algorithm, version, "fixed", after, missing_before, previous_version)
    if before == "broken" and after == "broken" and missing_before != missing_after:
        return Event(model, algorithm, version, "changed", after, missing_after, previous_version)
    return None
