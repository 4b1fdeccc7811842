"""Issue documents for what a release broke: one per newly broken (model, algorithm) and one
per target member that became required or went away.

An issue is identified by a fingerprint of what it reports (change kind, algorithm, role,
model or member, the version it happened in), never of its wording, so reworded templates,
a rerun after a crash, or a second machine all recognise an issue already filed. The facts
behind the fingerprint travel in the body as HTML comments; that is how a later release can
tell that an open issue is fixed.

The markers are the first lines of a body, each a line of its own, and only such a line is
read as one: the rest of the body quotes text from the analysed code (a member named
`x<!-- sglang-tracker:fingerprint=... -->`), which the markdown renderer keeps on its line
and whose `<` it writes as an entity. The report's JSON has no `<`, `>` or `&` either, so
nothing it holds can end its comment early.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Container, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol
from urllib.parse import quote

from tracker.analysis.compat import Compat, Delegation, ModelCheck, natural_role
from tracker.analysis.contract import ContractRule
from tracker.analysis.index import VersionIndex
from tracker.analysis.interface import Interface, Requirement
from tracker.common.errors import TrackerError
from tracker.compare.changes import ChangeKind, ModelEvent
from tracker.compare.diff import Change, Diff, rank
from tracker.compare.support import oversight
from tracker.render.documents import RenderOptions, check_doc, finding_doc, render, requirement_doc
from tracker.render.inert import issue_title, json_text, md_code, md_prose, md_text
from tracker.sources.base import VersionTree

SCHEMA = "sglang-tracker/issues@1"
ISSUE_SCHEMA = "sglang-tracker/issue@1"
TRACKER_LABEL = "sglang-tracker"
TITLE_MAX = 250
BODY_MAX = 65000
BASE_LABELS = (TRACKER_LABEL, "speculative-decoding")

# The kinds that are filed (ChangeKind.issue): about a model wrapper or a member.
MODEL_KINDS = frozenset(k for k in ChangeKind if k.issue is not None and k.model_event)
MEMBER_KINDS = frozenset(k for k in ChangeKind if k.issue is not None and k.area == "member")
# Reports a later release can resolve; a removed member is news, not something to fix.
CLOSABLE_KINDS = frozenset(k for k in ChangeKind if k.issue is not None and k.issue.closable)

_FINGERPRINT = re.compile(
    r"^<!--\s*sglang-tracker:fingerprint=([0-9a-f]{16,64})\s*-->\r?$", re.MULTILINE
)
_REPORT = re.compile(r"^<!--\s*sglang-tracker:report=(\{.*\})\s*-->\r?$", re.MULTILINE)


@dataclass(frozen=True)
class IssueFacts:
    """What an issue reports: the facts its fingerprint is made of."""

    kind: str
    algorithm: str
    role: str
    subject: str  # the model class, or the member
    version: str  # the version it broke (or changed) in
    previous: str  # the version it was compared with

    @property
    def fingerprint(self) -> str:
        # `previous` stays out: the same break found from another base version is the
        # same issue.
        key = json.dumps([self.kind, self.algorithm, self.role, self.subject, self.version])
        return hashlib.sha256(key.encode()).hexdigest()[:16]

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass(frozen=True)
class IssueDoc:
    report: IssueFacts
    title: str
    labels: tuple[str, ...]
    body: str

    @property
    def fingerprint(self) -> str:
        return self.report.fingerprint

    def to_dict(self) -> dict[str, Any]:
        return {
            "fingerprint": self.fingerprint,
            "title": self.title,
            "labels": list(self.labels),
            "report": self.report.to_dict(),
            "body": self.body,
        }


# The commit that broke a model's change, as a document for the templates, or None.
BrokeIn = Callable[[Change], "dict[str, Any] | None"]


class IndexedTree(Protocol):
    """What the fix patch needs of a version: its files and its index."""

    tree: VersionTree
    index: VersionIndex


# ------------------------------------------------------------------------ markers


def fingerprint_marker(fingerprint: str) -> str:
    return f"<!-- sglang-tracker:fingerprint={fingerprint} -->"


def report_marker(report: IssueFacts) -> str:
    # ASCII JSON on one line, with `<`, `>` and `&` as \u escapes: the subject (a member
    # name) can neither end the comment nor start another.
    facts = json.dumps(report.to_dict(), sort_keys=True)
    for char in "<>&":
        facts = facts.replace(char, f"\\u{ord(char):04x}")
    return f"<!-- sglang-tracker:report={facts} -->"


def fingerprint_in(body: str | None) -> str | None:
    match = _FINGERPRINT.search(body or "")
    return match.group(1) if match else None


def report_in(body: str | None) -> IssueFacts | None:
    """The report an issue body carries, or None when it has none (or a damaged one)."""
    match = _REPORT.search(body or "")
    if match is None:
        return None
    try:
        data = json.loads(match.group(1))
        return IssueFacts(
            **{
                k: str(data[k])
                for k in ("kind", "algorithm", "role", "subject", "version", "previous")
            }
        )
    except (ValueError, KeyError, TypeError):
        return None


# ----------------------------------------------------------------------- selection


def reportable(change: Change, compat: Compat) -> bool:
    """The changes that deserve an issue: a wrapper that broke, a new wrapper lacking what
    its own inner model or a sibling class has (`compat` is the new version's), a target
    member newly required or gone; never a break the user accepted (tracker.toml)."""
    return not change.accepted and _worth_an_issue(change, compat)


def accepted_instead(d: Diff, compat: Compat) -> list[Change]:
    """The changes that would be filed but that the user accepted: said, never filed."""
    return [c for c in sorted(d.changes, key=rank) if c.accepted and _worth_an_issue(c, compat)]


def _worth_an_issue(change: Change, compat: Compat) -> bool:
    if change.kind.event is ModelEvent.BROKE:
        return True
    if change.kind is ChangeKind.MODEL_WRAPPER_ADDED_UNSUPPORTED:
        return (
            change.notable and isinstance(change.new, ModelCheck) and oversight(change.new, compat)
        )
    return change.kind in MEMBER_KINDS and change.role == "target"


def build_issues(
    d: Diff,
    old: Interface,
    new: Interface,
    compat: Compat,
    *,
    source: str,
    options: RenderOptions,
    analysis: Callable[[], IndexedTree | None] | None = None,
    known: Container[str] = (),
    fix_options: str = "",
    broke_in: BrokeIn | None = None,
    source_options: str = "",
) -> list[IssueDoc]:
    """One issue per reportable change of `d`, in the diff's rank order.

    `analysis` loads the new version's files and index, once, when a wrapper has an inner
    model to delegate to (for the `tracker fix` patch and the class's line). Issues whose
    fingerprint is in `known` are already filed: they get a title but no body, and never
    cost an analysis. `fix_options` name the new version for `tracker fix` (default
    `--at VERSION`); `source_options` are what the commands an issue suggests need to
    read the same source (`--repo PATH` for a repository). `broke_in` names the commit
    that broke a model (git: found by bisect), as a document (`short`, `subject`,
    `cause`, ...), or None.
    """
    fix_options = fix_options or f"--at {d.new_version}"
    loaded: list[IndexedTree | None] = []

    def lazy() -> IndexedTree | None:
        if not loaded:
            loaded.append(analysis() if analysis is not None else None)
        return loaded[0]

    out = []
    for change in sorted(d.changes, key=rank):
        if not reportable(change, compat):
            continue
        report = IssueFacts(
            change.kind,
            change.algorithm,
            change.role or "target",
            change.subject,
            d.new_version,
            d.old_version,
        )
        filed = report.fingerprint in known
        if change.kind in MODEL_KINDS:
            assert isinstance(change.new, ModelCheck)
            before = change.old if isinstance(change.old, ModelCheck) else None
            doc = _model_document(
                report,
                change.new,
                before,
                new,
                compat,
                (lambda: None) if filed else lazy,
                fix_options,
            )
            doc["broke_in"] = broke_in(change) if broke_in is not None and not filed else None
        else:
            doc = _member_document(report, change, old, new, compat)
        doc.update(_common(report, source))
        doc["fix_options"] = fix_options
        doc["source_options"] = source_options
        out.append(_issue(report, doc, options, render_body=not filed))
    return out


def _common(report: IssueFacts, source: str) -> dict[str, Any]:
    return {
        "schema": ISSUE_SCHEMA,
        "fingerprint": report.fingerprint,
        "report": report.to_dict(),
        "kind": ChangeKind.of(report.kind),
        "algorithm": report.algorithm,
        "role": report.role,
        "from": report.previous,
        "to": report.version,
        "source": source,
        "fingerprint_marker": fingerprint_marker(report.fingerprint),
        "report_marker": report_marker(report),
    }


def _issue(
    report: IssueFacts, doc: dict[str, Any], options: RenderOptions, render_body: bool = True
) -> IssueDoc:
    title = _title(report, doc)
    # GitHub refuses titles over 256 characters and bodies over 65536.
    doc["title"] = title if len(title) <= TITLE_MAX else title[: TITLE_MAX - 1] + "…"
    doc["labels"] = list(_labels(report, doc))
    if not render_body:
        return IssueDoc(report, doc["title"], tuple(doc["labels"]), "")
    body = render("issue", "md", doc, options)
    # A custom template may leave the markers out; without them the issue could never be
    # recognised again, so they are put back.
    for marker in (doc["report_marker"], doc["fingerprint_marker"]):
        if marker not in body:
            body = marker + "\n" + body
    if len(body) > BODY_MAX:
        # Cut at the end of a line: a code span cut in two would leave what followed its
        # opening backticks to render as markdown.
        kept = body[: body.rfind("\n", 0, BODY_MAX - 300) + 1]
        command = md_code(f"tracker diff {report.previous} {report.version} -a {report.algorithm}")
        body = f"{kept}\n… (cut to fit a GitHub issue; {command} has the rest)\n"
    return IssueDoc(report, doc["title"], tuple(doc["labels"]), body)


def _labels(report: IssueFacts, doc: dict[str, Any]) -> tuple[str, ...]:
    spec = ChangeKind.of(report.kind).issue
    assert spec is not None, f"{report.kind} is never filed"
    chosen = spec.new_requirement_labels if _only_new_requirements(doc) else spec.labels
    specific = tuple(label.format(role=report.role) for label in chosen or spec.labels)
    return (*BASE_LABELS, f"algorithm:{report.algorithm}", *specific)


def _only_new_requirements(doc: dict[str, Any]) -> bool:
    """A wrapper that worked and now lacks only members the class never provided: the
    algorithm started requiring them (`newly_required` on each missing member)."""
    missing = doc.get("missing", [])
    return bool(missing) and not doc.get("contract") and all(m["newly_required"] for m in missing)


def _title(report: IssueFacts, doc: dict[str, Any]) -> str:
    kind = ChangeKind.of(report.kind)
    assert kind.issue is not None, f"{kind} is never filed"
    missing = ", ".join(m["member"] for m in doc.get("missing", []))
    broken = "; ".join(dict.fromkeys(f["headline"] for f in doc.get("contract", [])))
    hint = ""
    delegated = [m["member"] for m in doc.get("missing", []) if m.get("delegation")]
    if delegated and kind.event is ModelEvent.APPEARED:
        what = (
            ("it" if len(delegated) == 1 else "them")
            if len(delegated) == len(doc["missing"])
            else ", ".join(delegated)
        )
        hint = f"; its self.{doc['delegation_attributes'][0]} provides {what}"
    title = kind.issue.contract_title if broken and kind.issue.contract_title else kind.issue.title
    if kind.issue.new_requirement_title and _only_new_requirements(doc):
        title = kind.issue.new_requirement_title
    lost = [m["member"] for m in doc.get("missing", []) if not m["newly_required"]]
    new = [m["member"] for m in doc.get("missing", []) if m["newly_required"]]
    if kind.issue.mixed_title and lost and new and not broken:
        title = kind.issue.mixed_title
    return issue_title(
        title.format(
            algorithm=report.algorithm,
            subject=report.subject,
            role=report.role,
            version=report.version,
            missing=missing,
            hint=hint,
            broken=broken,
            lost=", ".join(lost),
            new=", ".join(new),
        )
    )


# ------------------------------------------------------------------ model issues


def _model_document(
    report: IssueFacts,
    check: ModelCheck,
    before: ModelCheck | None,
    new: Interface,
    compat: Compat,
    analysis: Callable[[], IndexedTree | None],
    fix_options: str,
) -> dict[str, Any]:
    requirements = {r.member: r for r in new.for_algorithm(report.algorithm, report.role)}
    delegated: dict[str, Delegation] = {}
    for x in check.delegations:
        delegated.setdefault(x.member, x)  # the patch uses the first inner model too
    had = {p.member: p for p in before.provisions} if before is not None else {}
    missing = []
    for member in check.missing:
        req = requirements.get(member)
        d = delegated.get(member)
        old = had.get(member)
        provided = old is not None and old.how not in ("missing", "unknown")
        missing.append(
            {
                "member": member,
                # How the class had it in the previous release: where a regression starts.
                "before": {"how": old.how, "where": old.where, "line": old.line}
                if old is not None and provided
                else None,
                # A class that worked lacks it without having had it: the previous release
                # did not require it (a break by the interface, not by the class).
                "newly_required": before is not None and before.status == "ok" and not provided,
                "requirement": requirement_doc(req) if req is not None else None,
                "delegation": {
                    "attribute": d.attribute,
                    "inner_class": d.inner_class,
                    "provided_by": d.provided_by,
                }
                if d is not None
                else None,
            }
        )
    found = analysis() if check.delegations else None
    patch = patch_document(found, check) if found is not None else None
    where = _class_site(found, check.model) if found is not None else None
    if where is None:
        # Without the index, the line that registers the class is the place to link.
        entry = next((e for e in compat.entries if e.name == check.model), None)
        if entry is not None:
            where = {"path": entry.path, "line": entry.line, "function": "EntryClass"}
    command = f"tracker fix {check.model} {fix_options}"
    if report.algorithm != "EAGLE3":
        command += f" --algorithm {report.algorithm}"
    return {
        "model": {"name": check.model, "path": check.path, "kind": check.kind, "site": where},
        "check": check_doc(check),
        "missing": missing,
        "unknown": list(check.unknown),
        "contract": contract_docs(check),
        "before_contract_unknown": before.contract_unknown if before is not None else "",
        # The hook whose contract broke (`set_dflash_layers_to_capture`), or a draft's forward.
        "contract_hook": check.contract_hook,
        "provided": [p.member for p in check.provisions],
        "error": (f"AttributeError: '{check.model}' object has no attribute '{check.missing[0]}'")
        if check.missing
        else "",
        "delegation_attributes": sorted({d.attribute for d in check.delegations}),
        "fix_command": command if check.delegations else "",
        "patch": patch,
    }


def contract_docs(check: ModelCheck) -> list[dict[str, Any]]:
    """The check's contract findings, each with what serving the class does and what a
    fix must do (there is no `tracker fix` patch for a contract break)."""
    out = []
    for f in check.contract:
        rule = ContractRule.of(f.rule)
        out.append({**finding_doc(f), "symptom": rule.symptom, "remedy": rule.remedy})
    return out


def patch_document(found: IndexedTree, check: ModelCheck) -> dict[str, Any] | None:
    """The `tracker fix` patch for `check` as a document, or None when there is none."""
    from tracker.analysis.compat import class_key_for
    from tracker.release.fixpatch import build_patch

    key = class_key_for(found.index, check.model)
    if key is None:
        return None
    try:
        patch = build_patch(found.tree, found.index, check, key)
    except (TrackerError, KeyError, UnicodeDecodeError):
        return None  # the issue still says which inner model to delegate to
    return {
        "path": patch.path,
        "diff": patch.diff,
        "members": list(patch.members),
        "skipped": list(patch.skipped),
    }


def _class_site(found: IndexedTree, model: str) -> dict[str, Any] | None:
    from tracker.analysis.compat import class_key_for

    key = class_key_for(found.index, model)
    if key is None:
        return None
    info = found.index.classes[key]
    return {"path": info.path, "line": info.facts.line, "function": info.name}


# ----------------------------------------------------------------- member issues


def _member_document(
    report: IssueFacts, change: Change, old: Interface, new: Interface, compat: Compat
) -> dict[str, Any]:
    req = change.new if isinstance(change.new, Requirement) else None
    before = change.old if isinstance(change.old, Requirement) else None
    shown = req or before
    assert shown is not None
    lacking = []
    if change.kind.group != "removed":  # who lacks a member gone is no news
        for c in compat.checks:
            # Classes in their kind's own role: every generative class lacks a new draft
            # member when loaded as a draft, which would drown the draft classes.
            if (
                c.algorithm == report.algorithm
                and c.role == report.role
                and c.role == natural_role(c.kind)
                and report.subject in c.missing
            ):
                lacking.append(
                    {
                        "model": c.model,
                        "path": c.path,
                        "delegation": any(d.member == report.subject for d in c.delegations),
                    }
                )
    return {
        "member": requirement_doc(shown),
        "previous": requirement_doc(before) if before is not None else None,
        # Removed members are shown where they were, at the old tag.
        "sites_tag": report.version if req is not None else report.previous,
        "message": change.message,
        "lacking": sorted(lacking, key=lambda x: (not x["delegation"], x["model"])),
    }


# ------------------------------------------------------------------- lifecycle


def fixed_reason(report: IssueFacts, interface: Interface, compat: Compat) -> str | None:
    """Why the version of `interface`/`compat` no longer shows what `report` reports, or
    None while it still does (or the report is not one a release can resolve)."""
    from tracker.sources.versions import parse_version

    here, then = parse_version(interface.version), parse_version(report.version)
    if here is not None and then is not None and here <= then:
        return None  # only a later release can fix it
    if report.kind not in CLOSABLE_KINDS or report.algorithm not in interface.algorithms:
        return None
    if report.kind in MODEL_KINDS:
        check = compat.check_for(report.subject, report.algorithm)
        if check is None or check.status != "ok":
            return None
        if ChangeKind.of(report.kind).contract:
            if check.contract_unknown:
                return None  # ok only because the contract could not be followed
            return (
                f"`{report.subject}` no longer breaks {report.algorithm}'s "
                f"aux-hidden-state contract at {interface.version}."
            )
        members = ", ".join(f"`{p.member}`" for p in check.provisions) or "every member"
        return (
            f"`{report.subject}` provides what {report.algorithm} requires of a "
            f"{report.role} model at {interface.version} ({members})."
        )
    still = [
        r
        for r in interface.for_algorithm(report.algorithm, report.role)
        if r.member == report.subject and r.status == "required"
    ]
    if still:
        return None
    return (
        f"{report.algorithm} no longer requires `{report.subject}` of the "
        f"{report.role} model at {interface.version}."
    )


def fixed_comment(report: IssueFacts, version: str, reason: str) -> str:
    """The comment that closes an issue (markdown; `reason` is fixed_reason's sentence)."""
    return (
        f"{closed_marker(version)}\nFixed in **{md_text(version)}**: {md_prose(reason)}\n\n"
        f"Closed by sglang-tracker (this issue reported {md_text(report.kind)} for "
        f"{md_text(report.algorithm)} at {md_text(report.version)}).\n"
    )


def closed_marker(version: str) -> str:
    # A tag may hold `>` (git allows it): percent-encoded, it cannot end the comment.
    return f"<!-- sglang-tracker:fixed-in={quote(version, safe='+')} -->"


# ----------------------------------------------------------------------- output


def issues_document(issues: Sequence[IssueDoc], old: str, new: str, source: str) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "from": old,
        "to": new,
        "source": source,
        "issues": [i.to_dict() for i in issues],
    }


def front_matter(issue: IssueDoc) -> str:
    """The issue as one markdown file: the title and labels as front matter (JSON scalars
    are valid YAML), then the body."""
    return (
        "---\n"
        f"title: {json_text(json.dumps(issue.title, ensure_ascii=False))}\n"
        f"labels: {json.dumps(list(issue.labels))}\n"
        f"fingerprint: {issue.fingerprint}\n"
        "---\n" + issue.body
    )


def as_markdown(issues: Sequence[IssueDoc]) -> str:
    if not issues:
        return ""
    return "\n".join(front_matter(i) for i in issues)
