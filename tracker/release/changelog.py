"""The changelog appendix: what a release changed in the speculative decoding interface, as
a document the `changelog.md.j2` template turns into markdown for release notes.

It says the same as `tracker diff`, grouped the way a reader of release notes looks for it
(members added, removed, changed; output fields; configuration keys; wrappers broken and
fixed), with every site linked at its tag.
"""

from __future__ import annotations

from typing import Any

from tracker.analysis.compat import Compat, ModelCheck
from tracker.analysis.interface import FieldUse, Interface, Requirement
from tracker.compare.changes import ChangeKind
from tracker.compare.diff import Change, Diff, rank
from tracker.compare.support import oversight
from tracker.release.issues import BrokeIn
from tracker.render.documents import field_doc, finding_doc, requirement_doc

SCHEMA = "sglang-tracker/changelog@2"


def changelog_document(
    d: Diff,
    new: Interface,
    compat: Compat,
    source: str,
    show_all: bool = False,
    broke_in: BrokeIn | None = None,
) -> dict[str, Any]:
    """`broke_in` names the commit that broke a model (git: found by bisect), or None."""
    changes = sorted(d.changes, key=rank)
    worth = {id(c) for c in changes if _worth_a_look(c, compat)}
    sections = [
        _section(alg, [c for c in changes if c.algorithm == alg], d, new, worth, show_all, broke_in)
        for alg in d.algorithms
    ]
    return {
        "schema": SCHEMA,
        "from": d.old_version,
        "to": d.new_version,
        "source": source,
        "algorithms": list(d.algorithms),
        "empty": not changes,
        "summary": _summary(d, changes, worth),
        "sections": [s for s in sections if not s["empty"]],
    }


def _worth_a_look(c: Change, compat: Compat) -> bool:
    return (
        c.kind is ChangeKind.MODEL_WRAPPER_ADDED_UNSUPPORTED
        and c.notable
        and isinstance(c.new, ModelCheck)
        and oversight(c.new, compat)
    )


def _section(
    alg: str,
    changes: list[Change],
    d: Diff,
    new: Interface,
    worth: set[int],
    show_all: bool,
    broke_in: BrokeIn | None = None,
) -> dict[str, Any]:
    members: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for role in ("target", "draft"):
        mine = [c for c in changes if c.role == role and c.kind.area == "member"]
        groups: dict[str, list[dict[str, Any]]] = {"added": [], "removed": [], "changed": []}
        for c in mine:
            groups[c.kind.group].append(_member(c, d))
        if any(groups.values()):
            members[role] = groups
    fields: dict[str, list[dict[str, Any]]] = {"added": [], "removed": []}
    keys: dict[str, list[dict[str, Any]]] = {"added": [], "removed": []}
    for c in changes:
        if c.kind.area in ("output_field", "config_key"):
            (fields if c.kind.area == "output_field" else keys)[c.kind.group].append(_field(c, d))
    required = {(r.role, r.member): r for r in new.for_algorithm(alg)}
    broken = [
        _broken(c, required, d, broke_in)
        for c in changes
        if c.kind.group == "broke" or id(c) in worth
    ]
    fixed = [_fixed(c) for c in changes if c.kind.group == "fixed"]
    # The other model events, listed by name only (a notable new class is under broken).
    others: dict[str, list[str]] = {"new_supported": [], "new_unsupported": [], "removed": []}
    for c in changes:
        if c.kind.model_event and c.kind.group in others and id(c) not in worth:
            others[c.kind.group].append(c.subject)
    lifecycle = [
        {"kind": c.kind, "message": c.message} for c in changes if c.kind.area == "algorithm"
    ]
    fields = {k: v for k, v in fields.items() if v}
    keys = {k: v for k, v in keys.items() if v}
    return {
        "algorithm": alg,
        "algorithm_events": lifecycle,
        "members": members,
        "output_fields": fields,
        "config_keys": keys,
        "broken": broken,
        "fixed": fixed,
        "others": {k: v for k, v in others.items() if v},
        "show_all": show_all,
        "empty": not changes,
    }


def _member(c: Change, d: Diff) -> dict[str, Any]:
    req = c.new if isinstance(c.new, Requirement) else c.old
    assert isinstance(req, Requirement)
    before = c.old if isinstance(c.old, Requirement) else None
    return {
        "kind": c.kind,
        "message": c.message,
        "requirement": requirement_doc(req),
        "tag": d.new_version if isinstance(c.new, Requirement) else d.old_version,
        "previous": requirement_doc(before) if before is not None else None,
    }


def _field(c: Change, d: Diff) -> dict[str, Any]:
    f = c.new if isinstance(c.new, FieldUse) else c.old
    assert isinstance(f, FieldUse)
    return {
        "subject": c.subject,
        "field": field_doc(f),
        "tag": d.new_version if isinstance(c.new, FieldUse) else d.old_version,
    }


def _broken(
    c: Change,
    required: dict[tuple[str, str], Requirement],
    d: Diff,
    broke_in: BrokeIn | None = None,
) -> dict[str, Any]:
    check = c.new
    assert isinstance(check, ModelCheck)
    missing = []
    for member in check.missing:
        req = required.get((check.role, member))
        missing.append(
            {
                "member": member,
                "site": requirement_doc(req)["sites"][0] if req is not None else None,
                "delegation": next(
                    (f"self.{x.attribute}" for x in check.delegations if x.member == member), ""
                ),
            }
        )
    found = broke_in(c) if broke_in is not None else None
    return {
        "model": c.subject,
        "path": check.path,
        "new": c.kind.group != "broke",
        "missing": missing,
        "tag": d.new_version,
        "contract": [finding_doc(f) for f in check.contract],
        "fix": bool(check.delegations),
        **({"accepted": {"reason": check.accepted}} if check.accepted else {}),
        **({"broke_in": found} if found is not None else {}),
    }


def _fixed(c: Change) -> dict[str, Any]:
    before, after = c.old, c.new
    assert isinstance(before, ModelCheck) and isinstance(after, ModelCheck)
    provided = []
    for p in after.provisions:
        if p.member not in before.missing:
            continue
        # Only a member the class defines itself is surely in its own file.
        site = {"path": after.path, "line": p.line} if p.how == "defined" and p.line else None
        provided.append({"member": p.member, "how": p.how, "where": p.where, "site": site})
    # A contract fix provides no member: what it no longer breaks is the point.
    return {
        "model": c.subject,
        "path": after.path,
        "provided": provided,
        "contract": [finding_doc(f) for f in before.contract],
    }


def _summary(d: Diff, changes: list[Change], worth: set[int]) -> str:
    head = f"sglang {d.old_version} → {d.new_version}"
    if not changes:
        return (
            f"No speculative decoding interface changes between sglang {d.old_version} "
            f"and {d.new_version} ({', '.join(d.algorithms)})."
        )
    interface = [c for c in changes if not c.kind.model_event]
    breaking = sum(1 for c in interface if c.breaking)
    if interface:
        parts = [
            f"{len(interface)} interface change{'' if len(interface) == 1 else 's'}"
            + (f" ({breaking} breaking)" if breaking else "")
        ]
    else:
        parts = ["no interface changes"]
    broke = sorted({c.subject for c in changes if c.kind.group == "broke"})
    notable = sorted({c.subject for c in changes if id(c) in worth})
    fixed = sorted({c.subject for c in changes if c.kind.group == "fixed"})
    for names, one, many in (
        (broke, "wrapper broke", "wrappers broke"),
        (notable, "new wrapper lacks support", "new wrappers lack support"),
        (fixed, "wrapper fixed", "wrappers fixed"),
    ):
        if names:
            parts.append(f"{len(names)} {one if len(names) == 1 else many} ({_names(names)})")
    return f"{head}: " + "; ".join(parts) + "."


def _names(names: list[str], limit: int = 4) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", … {len(names) - limit} more" if len(names) > limit else "")
