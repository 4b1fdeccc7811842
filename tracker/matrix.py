"""Model wrappers across many versions: a status per (model, version) and the events.

Statuses: ok, broken, unknown (a member could not be decided), n/a (registered, but the
algorithm asks nothing of this kind of class at that version), absent (not registered).
Events: appeared, broke (ok -> broken: a regression), fixed (broken -> ok), removed, and
changed (the set of missing members changed while broken).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tracker.compat import ModelCheck
from tracker.snapshot import Snapshot


@dataclass(frozen=True)
class Event:
    model: str
    algorithm: str
    version: str
    kind: str  # "appeared" | "broke" | "fixed" | "removed" | "changed"
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
    snapshots: Sequence[Snapshot], algorithm: str, kinds: tuple[str, ...] = ("target",)
) -> Matrix:
    m = Matrix(algorithm, [s.version for s in snapshots])
    per_version: list[tuple[Snapshot, dict[str, ModelCheck], set[str]]] = []
    for snap in snapshots:
        checks = {
            c.model: c for c in snap.compat.checks if c.algorithm == algorithm and c.kind in kinds
        }
        registered = {e.name for e in snap.compat.entries if e.kind in kinds}
        per_version.append((snap, checks, registered))
        for e in snap.compat.entries:
            if e.kind in kinds and e.name in checks:
                m.kinds.setdefault(e.name, e.kind)
    for model in sorted(m.kinds):
        row: dict[str, str] = {}
        missing_row: dict[str, tuple[str, ...]] = {}
        previous_status = "absent"
        previous_missing: tuple[str, ...] = ()
        previous_version = ""
        for snap, checks, registered in per_version:
            check = checks.get(model)
            if check is not None:
                status = check.status
                missing_row[snap.version] = check.missing
            else:
                status = "n/a" if model in registered else "absent"
            row[snap.version] = status
            current_missing = _broken_by(check) if check is not None else ()
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
            if event is not None:
                m.events.append(event)
            previous_status, previous_missing = status, current_missing
            previous_version = snap.version
        m.cells[model] = row
        m.missing[model] = missing_row
    return m


def _broken_by(check: ModelCheck) -> tuple[str, ...]:
    """What a check is broken by: its missing members, then its contract findings, so a
    contract break or fix is an event like a member's."""
    return check.missing + tuple(sorted({f"contract: {f.headline}" for f in check.contract}))


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
    checked = ("ok", "broken", "unknown")
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
