"""The commit that did it: the first commit on the first-parent path from OLD to NEW where a
model's status for an algorithm changes (or where a requirement on one member or forward
output field appears, disappears or changes), and the requirement or provision change in
that commit that explains it.

The search is a binary search and assumes ONE change between OLD and NEW: the status at
OLD holds up to some commit and the status at NEW from that commit on. When the status
flips more than once (broken, fixed, broken again), the commit found is *a* commit whose
status differs from OLD's while its parent's does not; not necessarily the first such
commit. When OLD and NEW have the same status there is nothing to bisect (a change that
was undone in between is not looked for).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from tracker.analysis.compat import ModelCheck, Needs, Provision, check_entry, natural_role
from tracker.analysis.interface import FieldUse, Interface, Requirement, Site
from tracker.common.errors import TrackerError
from tracker.compare.diff import Change, interface_changes
from tracker.sources.git import CommitInfo

if TYPE_CHECKING:
    from tracker.compare.snapshot import Snapshot
    from tracker.compare.workspace import Workspace

SCHEMA = "sglang-tracker/bisect@1"
ABSENT = "absent"  # the model is not registered at the commit

V = TypeVar("V", bound=Hashable)


# ------------------------------------------------------------------------- the search


@dataclass
class Search(Generic[V]):
    """Where the value first differs from the first commit's: `first` indexes the commits
    (None when the ends agree); `values` holds every value computed, by index."""

    first: int | None
    values: dict[int, V]

    @property
    def evaluated(self) -> int:
        return len(self.values)


def first_change(commits: Sequence[str], value_at: Callable[[str], V]) -> Search[V]:
    """Binary search for the first commit whose value differs from `commits[0]`'s,
    assuming the value changes once (see the module's docstring). Computes the value at
    both ends and then about log2(len(commits)) more; the commit found and its parent are
    always among those computed."""
    if len(commits) < 2:
        raise ValueError("bisecting needs at least two commits")
    values: dict[int, V] = {}

    def at(i: int) -> V:
        if i not in values:
            values[i] = value_at(commits[i])
        return values[i]

    lo, hi = 0, len(commits) - 1
    start = at(lo)
    if at(hi) == start:
        return Search(None, values)
    # Invariant: at(lo) == start != at(hi).
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if at(mid) == start:
            lo = mid
        else:
            hi = mid
    return Search(hi, values)


# ------------------------------------------------------------------------- the causes


class CauseKind(enum.Enum):
    """What a commit changed that moved the status; the value is the JSON name."""

    CLASS_ADDED = "class_added"
    CLASS_REMOVED = "class_removed"
    REQUIREMENT_ADDED = "requirement_added"
    REQUIREMENT_REMOVED = "requirement_removed"
    REQUIREMENT_CHANGED = "requirement_changed"
    PROVISION_REMOVED = "provision_removed"
    PROVISION_ADDED = "provision_added"
    PROVISION_UNKNOWN = "provision_unknown"
    CONTRACT_BROKEN = "contract_broken"
    CONTRACT_FIXED = "contract_fixed"
    FIELD_ADDED = "field_added"
    FIELD_REMOVED = "field_removed"
    FIELD_CHANGED = "field_changed"
    UNEXPLAINED = "unexplained"


@dataclass(frozen=True)
class Cause:
    kind: CauseKind
    member: str
    text: str  # "adds a call to `set_eagle3_layers_to_capture` at model_runner.py:622"
    path: str = ""
    line: int = 0


def _at(path: str, line: int) -> str:
    return f"{path.rpartition('/')[2]}:{line}"


def _first_site(sites: Sequence[Site], other: Sequence[Site] = ()) -> Site:
    """The site to name: one not among `other` (the side compared with), unconditional
    ones first."""
    seen = {(s.path, s.function, s.condition) for s in other}
    fresh = [s for s in sites if (s.path, s.function, s.condition) not in seen] or list(sites)
    return sorted(fresh, key=lambda s: (s.status != "required", s.path, s.line))[0]


def _use(req: Requirement | FieldUse) -> str:
    if isinstance(req, FieldUse) or req.kind != "call":
        return "a read of"
    return "a call to"


def requirement_cause(change: Change) -> Cause | None:
    """What one interface change (tracker.compare.diff) did, said with its site."""
    old, new = change.old, change.new
    name = change.subject
    if isinstance(new, (Requirement, FieldUse)) and old is None:
        site = _first_site(new.sites)
        kind = CauseKind.FIELD_ADDED if isinstance(new, FieldUse) else CauseKind.REQUIREMENT_ADDED
        text = f"adds {_use(new)} `{name}` at {_at(site.path, site.line)}"
        if isinstance(new, Requirement) and new.status != "required":
            text += f" ({new.status})"
        return Cause(kind, name, text, site.path, site.line)
    if isinstance(old, (Requirement, FieldUse)) and new is None:
        site = _first_site(old.sites)
        kind = (
            CauseKind.FIELD_REMOVED if isinstance(old, FieldUse) else CauseKind.REQUIREMENT_REMOVED
        )
        text = f"removes the last {_use(old)[2:]} `{name}` (was at {_at(site.path, site.line)})"
        return Cause(kind, name, text, site.path, site.line)
    if isinstance(old, Requirement) and isinstance(new, Requirement):
        site = _first_site(new.sites, old.sites)
        where = _at(site.path, site.line)
        if change.kind == "call_arity_changed":
            text = (
                f"calls `{name}` with {'/'.join(new.arities)} argument(s) at {where} "
                f"(was {'/'.join(old.arities)})"
            )
        else:
            text = f"makes `{name}` {new.status} at {where} (was {old.status})"
        return Cause(CauseKind.REQUIREMENT_CHANGED, name, text, site.path, site.line)
    return None


def _provision_text(p: Provision) -> str:
    how = {
        "defined": "defined in the class",
        "inherited": "inherited from",
        "attribute": "set by",
        "external": "from",
        "forwarded": "forwarded by",
        "alternative": "through",
    }
    where = f" `{p.where}`" if p.where and p.how != "defined" else ""
    return f"{how.get(p.how, p.how)}{where}"


@dataclass(frozen=True)
class ModelState:
    """A model's check for one algorithm and role at one commit (`check` None: absent)."""

    status: str  # "ok" | "broken" | "unknown" | ABSENT
    check: ModelCheck | None
    interface: Interface


def explain_model(
    before: ModelState, after: ModelState, model: str, algorithm: str, role: str
) -> list[Cause]:
    """Why `model` went from `before` (the parent) to `after` (the commit)."""
    if before.check is None and after.check is not None:
        return [_class_added(after.check)]
    if after.check is None:
        return [Cause(CauseKind.CLASS_REMOVED, model, f"no longer registers `{model}`")]
    assert before.check is not None
    causes: list[Cause] = []
    changes = {
        c.subject: c
        for c in interface_changes(before.interface, after.interface, (algorithm,))
        if isinstance(c, Change) and c.role == role
    }
    old_p = {p.member: p for p in before.check.provisions}
    new_p = {p.member: p for p in after.check.provisions}
    was, now = set(before.check.missing), set(after.check.missing)
    for member in sorted(now - was):
        change = changes.get(member)
        cause = requirement_cause(change) if change is not None else None
        if cause is None and member in old_p:
            cause = Cause(
                CauseKind.PROVISION_REMOVED,
                member,
                f"removes `{member}` from `{model}` (was {_provision_text(old_p[member])})",
            )
        causes.append(cause or _unexplained(member))
    for member in sorted(was - now):
        change = changes.get(member)
        cause = requirement_cause(change) if change is not None else None
        if cause is None and member in new_p:
            p = new_p[member]
            cause = Cause(
                CauseKind.PROVISION_ADDED,
                member,
                f"adds `{member}` to `{model}` ({_provision_text(p)})",
                after.check.path if p.how == "defined" else "",
                p.line,
            )
        causes.append(cause or _unexplained(member))
    for member in sorted(set(after.check.unknown) - set(before.check.unknown)):
        causes.append(
            Cause(
                CauseKind.PROVISION_UNKNOWN,
                member,
                f"`{member}` can no longer be resolved: {new_p[member].where}"
                if member in new_p
                else f"`{member}` can no longer be resolved",
            )
        )
    old_rules = {f.rule for f in before.check.contract}
    new_rules = {f.rule for f in after.check.contract}
    for f in after.check.contract:
        if f.rule not in old_rules:
            site = f.sites[0] if f.sites else None
            causes.append(
                Cause(
                    CauseKind.CONTRACT_BROKEN,
                    f.rule,
                    f"breaks the aux-hidden-state contract: {f.render()}",
                    site.path if site else "",
                    site.line if site else 0,
                )
            )
    for f in before.check.contract:
        if f.rule not in new_rules:
            causes.append(
                Cause(
                    CauseKind.CONTRACT_FIXED,
                    f.rule,
                    f"no longer breaks the aux-hidden-state contract ({f.headline})",
                )
            )
    return causes or [_unexplained("")]


def _class_added(check: ModelCheck) -> Cause:
    if check.missing:
        names = ", ".join(f"`{m}`" for m in check.missing)
        return Cause(CauseKind.CLASS_ADDED, check.model, f"new class without {names}", check.path)
    if check.contract:
        headlines = "; ".join(dict.fromkeys(f.headline for f in check.contract))
        return Cause(
            CauseKind.CLASS_ADDED,
            check.model,
            f"new class breaking the aux-hidden-state contract: {headlines}",
            check.path,
        )
    return Cause(
        CauseKind.CLASS_ADDED,
        check.model,
        f"new class ({check.status} for {check.algorithm})",
        check.path,
    )


def _unexplained(member: str) -> Cause:
    what = f"`{member}`" if member else "any member"
    return Cause(
        CauseKind.UNEXPLAINED,
        member,
        f"no requirement or provision change of {what} found in this commit (the "
        "status changed through what the analysis infers)",
    )


def members_involved(before: ModelState, after: ModelState) -> tuple[str, ...]:
    """The members whose provision decides the change: missing on the broken side."""
    out: dict[str, None] = {}
    for side in (after, before):
        if side.check is not None:
            out.update(dict.fromkeys(side.check.missing))
            out.update(dict.fromkeys(f.rule for f in side.check.contract))
    return tuple(out)


# ------------------------------------------------------------------------- members


def split_member(name: str) -> tuple[str, str]:
    """(owner, name) of `logits_output.mm_input_embeds`; ("", name) for a bare name."""
    owner, _, bare = name.rpartition(".")
    return owner, bare


def member_signature(itf: Interface, name: str, algorithm: str) -> tuple[Any, ...]:
    """What the interface asks of `name` for the algorithm: per role or owner, its status,
    arities and the files of its sites; () when nothing."""
    owner, bare = split_member(name)
    out: list[tuple[Any, ...]] = []
    for r in itf.requirements:
        if r.algorithm == algorithm and r.member == bare and not owner:
            out.append((r.role, r.kind, r.status, r.arities, _files(r.sites)))
    for kind, uses in (("field", itf.output_fields), ("config", itf.config_keys)):
        for f in uses:
            if f.algorithm == algorithm and f.name == bare and owner in ("", f.owner):
                out.append((f.owner, kind, "read", (), _files(f.sites)))
    return tuple(sorted(out))


def _files(sites: Sequence[Site]) -> tuple[str, ...]:
    return tuple(sorted({s.path for s in sites}))


def describe_signature(signature: tuple[Any, ...], name: str) -> str:
    if not signature:
        return f"no requirement on {name}"
    parts = []
    for who, kind, status, arities, files in signature:
        short = ", ".join(p.rpartition("/")[2] for p in files)
        if kind in ("field", "config"):
            parts.append(f"{who} {kind} read in {short}")
        else:
            arity = f"({'/'.join(arities)})" if arities else ""
            parts.append(f"{status} {kind}{arity} on the {who} model in {short}")
    return "; ".join(parts)


def explain_member(before: Interface, after: Interface, name: str, algorithm: str) -> list[Cause]:
    owner, bare = split_member(name)
    causes: list[Cause] = []
    for item in interface_changes(before, after, (algorithm,)):
        if isinstance(item, Change):
            subject_owner, subject = _subject(item)
            if subject == bare and owner in ("", subject_owner):
                cause = requirement_cause(item)
                if cause is not None:
                    causes.append(cause)
        else:
            old, new = item
            if new.member == bare and not owner:
                causes += _site_moves(new.member, old.sites, new.sites)
    for olds, news in (
        (before.output_fields, after.output_fields),
        (before.config_keys, after.config_keys),
    ):
        was = {(f.owner, f.name): f for f in olds if f.algorithm == algorithm}
        now = {(f.owner, f.name): f for f in news if f.algorithm == algorithm}
        for k in sorted(set(was) & set(now)):
            if k[1] == bare and owner in ("", k[0]):
                causes += _site_moves(f"{k[0]}.{k[1]}", was[k].sites, now[k].sites)
    return causes or [_unexplained(name)]


def _subject(change: Change) -> tuple[str, str]:
    """(owner, name) a change is about: `logits_output.x` and `eagle_config['x']` too."""
    subject = change.subject
    if change.kind.startswith("config_key"):
        owner, _, rest = subject.partition("[")
        return owner, rest.rstrip("]").strip("'\"")
    if change.kind.startswith("output_field"):
        return split_member(subject)
    return "", subject


def _site_moves(name: str, old: Sequence[Site], new: Sequence[Site]) -> list[Cause]:
    """The files a use of `name` spread to or left, when its status and arity held."""
    out = []
    for path in sorted(set(_files(new)) - set(_files(old))):
        site = _first_site([s for s in new if s.path == path])
        out.append(
            Cause(
                CauseKind.FIELD_CHANGED,
                name,
                f"adds a use of `{name}` at {_at(path, site.line)}",
                path,
                site.line,
            )
        )
    for path in sorted(set(_files(old)) - set(_files(new))):
        site = _first_site([s for s in old if s.path == path])
        out.append(
            Cause(
                CauseKind.FIELD_CHANGED,
                name,
                f"removes the use of `{name}` at {_at(path, site.line)}",
                path,
                site.line,
            )
        )
    return out


# ------------------------------------------------------------------------- over history


@dataclass
class Bisection:
    mode: str  # "model" | "member"
    subject: str  # the model class, or the member / field name
    algorithm: str
    role: str  # "" in member mode
    old: CommitInfo
    new: CommitInfo
    commits: int  # commits after OLD up to NEW, on the first-parent path
    evaluated: int
    before: str  # the status at OLD (nothing found) or at the found commit's parent
    after: str  # the status at NEW (nothing found) or at the found commit
    found: CommitInfo | None = None
    parent: CommitInfo | None = None
    members: tuple[str, ...] = ()
    causes: list[Cause] = field(default_factory=list)

    @property
    def transition(self) -> str:
        """ "broke", "fixed", "appears broken", ... ("" when nothing changed)."""
        if self.found is None:
            return ""
        if self.mode == "member":
            return "changes"
        names = {
            ("ok", "broken"): "broke",
            ("broken", "ok"): "fixed",
            (ABSENT, "broken"): "appears broken",
            (ABSENT, "ok"): "appears supported",
            (ABSENT, "unknown"): "appears undecided",
        }
        if self.after == ABSENT:
            return "disappears"
        return names.get((self.before, self.after), f"{self.before} → {self.after}")

    def to_doc(self, source: str) -> dict[str, Any]:
        def commit(c: CommitInfo | None) -> dict[str, str] | None:
            return (
                None
                if c is None
                else {
                    "id": c.sha,
                    "short": c.sha[:10],
                    "subject": c.subject,
                    "author": c.author,
                    "date": c.date,
                }
            )

        return {
            "schema": SCHEMA,
            "mode": self.mode,
            "subject": self.subject,
            "algorithm": self.algorithm,
            "role": self.role or None,
            "source": source,
            "old": commit(self.old),
            "new": commit(self.new),
            "commits": self.commits,
            "evaluated": self.evaluated,
            "found": self.found is not None,
            "transition": self.transition,
            "before": self.before,
            "after": self.after,
            "commit": commit(self.found),
            "parent": commit(self.parent),
            "members": list(self.members),
            "causes": [
                {
                    "kind": c.kind.value,
                    "member": c.member,
                    "text": c.text,
                    "path": c.path or None,
                    "line": c.line or None,
                }
                for c in self.causes
            ],
        }


class CommitHistory:
    """The commits between two revisions of a git source, each commit's snapshot built at
    most once (several searches over one history share their probes: a binary search
    over the same commits always starts at the same midpoints)."""

    def __init__(
        self,
        ws: Workspace,
        commits: Sequence[CommitInfo],
        on_probe: Callable[[CommitInfo, str], None] | None = None,
    ) -> None:
        if ws.source.kind != "git":
            raise TrackerError("bisect reads commits: it needs a git source (--repo PATH)")
        self.ws = ws
        self.commits = list(commits)
        self.on_probe = on_probe
        self._by_sha = {c.sha: c for c in self.commits}
        self._snapshots: dict[str, Snapshot] = {}

    def snapshot(self, sha: str) -> Snapshot:
        if sha not in self._snapshots:
            self._snapshots[sha] = self.ws.snapshot_of(self.ws.source, sha)
        return self._snapshots[sha]

    def model_state(self, sha: str, model: str, algorithm: str, role: str | None) -> ModelState:
        snap = self.snapshot(sha)
        entry = next((e for e in snap.compat.entries if e.name == model), None)
        if entry is None or algorithm not in snap.interface.algorithms:
            return ModelState(ABSENT, None, snap.interface)
        wanted = role or natural_role(entry.kind) or "target"
        check = snap.compat.check_for(model, algorithm, wanted)
        if check is None:  # a role its kind does not imply: needs the index
            index = self.ws.analyse(self.ws.source, sha).index
            check = check_entry(
                index,
                entry,
                algorithm,
                wanted,
                Needs.of(snap.interface),
                f"checked as the {wanted} model on request",
            )
        return ModelState(check.status, check, snap.interface)

    def _probe(self, sha: str, label: str) -> None:
        if self.on_probe is not None:
            self.on_probe(self._by_sha[sha], label)

    def bisect_model(self, model: str, algorithm: str, role: str | None = None) -> Bisection:
        """The first commit where `model`'s status for `algorithm` (in `role`, default its
        kind's own) differs from its status at the first commit."""
        states: dict[str, ModelState] = {}

        def status(sha: str) -> str:
            states[sha] = self.model_state(sha, model, algorithm, role)
            self._probe(sha, states[sha].status)
            return states[sha].status

        search = first_change([c.sha for c in self.commits], status)
        first, last = self.commits[0], self.commits[-1]
        if states[first.sha].check is None and states[last.sha].check is None:
            self._unknown_model(model, algorithm)
        chosen = role or next(s.check.role for s in states.values() if s.check is not None)
        result = Bisection(
            "model",
            model,
            algorithm,
            chosen,
            first,
            last,
            len(self.commits) - 1,
            search.evaluated,
            states[first.sha].status,
            states[last.sha].status,
        )
        if search.first is None:
            return result
        result.found, result.parent = self.commits[search.first], self.commits[search.first - 1]
        before, after = states[result.parent.sha], states[result.found.sha]
        result.before, result.after = before.status, after.status
        result.members = members_involved(before, after)
        result.causes = explain_model(before, after, model, algorithm, chosen)
        return result

    def bisect_member(self, name: str, algorithm: str) -> Bisection:
        """The first commit where what `algorithm` asks of `name` (a model member, or a
        forward-output field or configuration key) differs from the first commit's."""
        signatures: dict[str, tuple[Any, ...]] = {}

        def signature(sha: str) -> tuple[Any, ...]:
            itf = self.snapshot(sha).interface
            if algorithm not in itf.algorithms:
                signatures[sha] = ("no algorithm",)
            else:
                signatures[sha] = member_signature(itf, name, algorithm)
            self._probe(sha, describe_signature(signatures[sha], name))
            return signatures[sha]

        search = first_change([c.sha for c in self.commits], signature)
        first, last = self.commits[0], self.commits[-1]
        if all(algorithm not in self.snapshot(c.sha).interface.algorithms for c in (first, last)):
            raise TrackerError(f"no algorithm {algorithm} at {first.sha[:10]} or {last.sha[:10]}")
        result = Bisection(
            "member",
            name,
            algorithm,
            "",
            first,
            last,
            len(self.commits) - 1,
            search.evaluated,
            describe_signature(signatures[first.sha], name),
            describe_signature(signatures[last.sha], name),
        )
        if search.first is None:
            return result
        result.found, result.parent = self.commits[search.first], self.commits[search.first - 1]
        result.before = describe_signature(signatures[result.parent.sha], name)
        result.after = describe_signature(signatures[result.found.sha], name)
        result.members = (name,)
        result.causes = explain_member(
            self.snapshot(result.parent.sha).interface,
            self.snapshot(result.found.sha).interface,
            name,
            algorithm,
        )
        return result

    def _unknown_model(self, model: str, algorithm: str) -> None:
        known: set[str] = set()
        algorithms: set[str] = set()
        for c in (self.commits[0], self.commits[-1]):
            snap = self.snapshot(c.sha)
            known |= {e.name for e in snap.compat.entries}
            algorithms |= set(snap.interface.algorithms)
        if algorithm not in algorithms:
            raise TrackerError(
                f"unknown algorithm {algorithm}; these commits have "
                f"{', '.join(sorted(algorithms)) or 'none'}"
            )
        import difflib

        near = difflib.get_close_matches(model, sorted(known), n=3)
        hint = f"; did you mean {', '.join(near)}" if near else ""
        raise TrackerError(
            f"neither {self.commits[0].sha[:10]} nor "
            f"{self.commits[-1].sha[:10]} registers {model}{hint}"
        )
