"""The commands' work when checkpoints stand in for class names (tracker.cli.checkpoints):
`check` answers for them, `why` explains the classes they load, `fix` patches those
classes, `triage` reads the error against them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tracker.cli.checkpoints import Checkpoints, answer_for, next_step
from tracker.cli.options import (
    Failed,
    describe_snapshot,
    emit,
    emit_lines,
    flush_warnings,
    note_line,
    say,
)
from tracker.common.errors import TrackerError

if TYPE_CHECKING:
    from tracker.analysis.checkpoint import Answer, RoleAnswer
    from tracker.analysis.compat import Compat, ModelCheck
    from tracker.analysis.interface import Interface
    from tracker.compare.workspace import SourceAnalysis, Workspace
    from tracker.render.documents import RenderOptions
    from tracker.sources.base import Source


def check_checkpoints(
    ws: Workspace,
    version: str | None,
    algorithms: tuple[str, ...],
    checkpoints: Checkpoints,
    fmt: str,
    render_options: RenderOptions,
    fail_on: str | None,
    others: dict[str, bool],
) -> None:
    """`check VERSION --model-config PATH [--draft-config PATH]`: one answer per algorithm."""
    from tracker.compare.snapshot import pick_algorithms
    from tracker.render.checkpoint_doc import checkpoint_document
    from tracker.render.documents import render

    clash = [name for name, on in others.items() if on]
    if clash:
        raise TrackerError(f"--model-config decides the classes itself: drop {', '.join(clash)}")
    if fmt == "sarif":
        raise TrackerError("--model-config answers in text, md or json (SARIF lists classes)")
    if version is None:
        raise TrackerError("give a VERSION to check the checkpoints at")
    src, resolved = ws.resolve(version)
    snap = ws.snapshot_of(src, resolved)
    itf = snap.interface
    chosen = pick_algorithms(itf.algorithms, algorithms, aliases=itf.aliases, note=note_line)
    answers = []
    for algorithm in chosen:
        found = answer_for(ws, src, resolved, algorithm, checkpoints)
        answers.append((found, next_step(ws, src, found, checkpoints)))
    doc = checkpoint_document(snap.version, describe_snapshot(ws, snap, "json"), answers)
    if snap.basis and fmt in ("text", "md"):
        doc["label"] = describe_snapshot(ws, snap)
    flush_warnings(ws)
    emit(render("checkpoint", fmt, doc, render_options))
    bad = {"broken"} if fail_on == "broken" else {"broken", "unknown"} if fail_on else set()
    if any(a.status in bad for a, _ in answers):
        raise Failed
    at_risk = any(r.check is not None and r.check.at_risk for a, _ in answers for r in a.roles)
    if fail_on == "at-risk" and at_risk:
        raise Failed


def checks_to_fix(
    ws: Workspace, model: str | None, version: str, algorithm: str, checkpoints: Checkpoints
) -> tuple[SourceAnalysis, str, str, list[tuple[ModelCheck, str]]]:
    """For `fix --model-config`: (the analysis, the algorithm, the version, [(the check of
    each class the checkpoints load that lacks something, its key)]); only MODEL's when
    it is named, which must be one of those classes."""
    from tracker.compare.snapshot import pick_algorithms

    src, resolved = ws.resolve(version)
    analysis = ws.analyse(src, resolved)
    itf = analysis.interface
    (name,) = pick_algorithms(itf.algorithms, (algorithm,), aliases=itf.aliases, note=note_line)
    found = answer_for(ws, src, resolved, name, checkpoints)
    keys = {e.name: e.key for e in analysis.compat.entries}
    checked = [r.check for r in found.roles if r.check is not None]
    if model is not None:
        if model not in {c.model for c in checked}:
            loaded = ", ".join(c.model for c in checked)
            raise TrackerError(f"the checkpoints load {loaded} at {resolved}, not {model}")
        checked = [c for c in checked if c.model == model]
    lacking = [c for c in checked if c.status != "ok"]
    if not lacking:
        classes = " and ".join(c.model for c in checked)
        say(
            f"tracker: {classes} already provide what {name} requires at {resolved} "
            "as the configs decide it"
        )
    return analysis, name, resolved, [(c, keys[c.model]) for c in lacking]


def why_checkpoints(
    ws: Workspace,
    name: str | None,
    version: str,
    algorithm: str,
    role: str | None,
    model: str | None,
    checkpoints: Checkpoints,
    fmt: str,
) -> None:
    """`why [MEMBER|CLASS] --model-config PATH`: a member's sites as the configs decide
    them, or how each class the checkpoints load was picked and provides each member."""
    from tracker.compare.snapshot import pick_algorithms

    src, resolved = ws.resolve(version)
    snap = ws.snapshot_of(src, resolved)
    itf = snap.interface
    (alg,) = pick_algorithms(itf.algorithms, (algorithm,), aliases=itf.aliases, note=note_line)
    found = answer_for(ws, src, resolved, alg, checkpoints)
    classes = {r.choice.class_name: r for r in found.roles if r.choice is not None}
    for named in (model, name if name in classes or name is None else None):
        if named is not None and named not in classes:
            raise TrackerError(
                f"the checkpoints load {', '.join(classes)} at {snap.version}, not {named}"
            )
    member = name if name is not None and name not in classes else None
    shown = [classes[n] for n in (model, name) if n in classes] or (
        found.roles if member is None else []
    )
    flush_warnings(ws)
    if fmt == "json":
        emit(_why_json(found, snap.version, alg, member, shown, role))
        return
    lines = _why_member(snap, found, member, role) if member is not None else []
    for r in shown:
        lines += _why_role(found, r, snap.version)
    lines += _why_decided(found, member)
    if member is None and found.status == "broken":
        from tracker.cli.checkpoints import fix_command_for

        command = fix_command_for(ws, src, found, checkpoints)
        lines += [f"→ {command}"] if command else []
    emit_lines(lines)


def _why_member(snap: Any, found: Answer, member: str, role: str | None) -> list[str]:
    from tracker.cli.models import _why_member_lines

    reqs = [
        r for r in found.requirements if r.member == member and (role is None or r.role == role)
    ]
    if reqs:
        return _why_member_lines(snap, found.algorithm, member, reqs)
    gone = [c for c in found.changes if c.member == member and (role is None or c.role == role)]
    if gone:
        return [
            f"{member} at {snap.version} for {found.algorithm}: not needed for these "
            f"checkpoints ({'; '.join(gone[0].because)}; {gone[0].site})"
        ]
    raise TrackerError(f"{found.algorithm} at {snap.version} requires no member {member}")


def _why_role(found: Answer, r: RoleAnswer, version: str) -> list[str]:
    from tracker.cli.models import _why_model_lines

    choice = r.choice
    if choice is None or r.check is None:
        return [f"{r.role} model: {r.refusal}"]
    lines = [f"{r.role} model: {choice.config.path} loads {choice.class_name}"]
    for at, s in enumerate(choice.steps):
        site = f" · {s.site}" if at and s.site else ""
        lines.append(f"  {', '.join(s.architectures)} · {s.rule}{site}")
        lines += [f"      if {s.condition}"] if s.condition else []
        lines += [f"      {b}" for b in s.because]
    reqs = [q for q in found.requirements if q.role == r.role]
    return lines + _why_model_lines(r.check, reqs, version)


def _why_decided(found: Answer, member: str | None) -> list[str]:
    lines = []
    changes = [c for c in found.changes if member is None or c.member == member]
    if changes:
        lines.append("decided by the configs:")
        lines += [
            f"  {c.role} {c.member}: {c.before} → {c.after} ({'; '.join(c.because)}) · {c.site}"
            for c in changes
        ]
    undecided = [u for u in found.undecided if u.kind == "condition"]
    if member is None and undecided:
        lines.append("not decided by the configs:")
        lines += [f"  {u.what} · {u.where}: {u.why}" for u in undecided]
    return lines


def _why_json(
    found: Answer,
    version: str,
    algorithm: str,
    member: str | None,
    shown: list[RoleAnswer],
    role: str | None,
) -> str:
    from tracker.render.checkpoint_doc import NextStep, answer_doc
    from tracker.render.documents import check_doc, document_json, requirement_doc

    doc: dict[str, Any] = {
        "schema": "sglang-tracker/why@2",
        "version": version,
        "algorithm": algorithm,
    }
    reqs = found.requirements
    if member is not None:
        doc["member"] = member
        reqs = [r for r in reqs if r.member == member and (role is None or r.role == role)]
    target = next((r for r in shown if r.check is not None), None)
    if target is not None and target.check is not None:
        doc.update(model=target.check.model, check=check_doc(target.check))
        if member is None:
            checked = {p.member for p in target.check.provisions}
            reqs = [r for r in reqs if r.role == target.role and r.member in checked]
    doc["requirements"] = [requirement_doc(r) for r in reqs]
    doc["checkpoint"] = answer_doc(found, NextStep())
    return document_json(doc)


def triage_compat(
    ws: Workspace,
    source: Source,
    version: str,
    algorithms: tuple[str, ...],
    checkpoints: Checkpoints,
    named: str,
    member: str,
    model: str | None,
    interface: Interface,
    compat: Compat,
) -> tuple[Interface, Compat, str]:
    """For `triage --model-config`: the interface with the algorithms' requirements and
    `compat` with the checks of the classes the checkpoints load as their configs decide
    them, and the class the error is about (the draft's when the error names it, else the
    target's)."""
    from dataclasses import replace

    answers = [answer_for(ws, source, version, a, checkpoints) for a in algorithms]
    requirements = [r for r in interface.requirements if r.algorithm not in algorithms]
    requirements += [r for found in answers for r in found.requirements]
    decided = {
        (r.check.model, r.check.algorithm, r.check.role): r.check
        for found in answers
        for r in found.roles
        if r.check is not None
    }
    classes = list(dict.fromkeys(m for m, _, _ in decided))
    if model is not None and model not in classes:
        raise TrackerError(f"the checkpoints load {', '.join(classes)} at {version}, not {model}")
    chosen = model or (named if named in classes else classes[0])
    loaded = " and ".join(classes)
    note_line(f"the checkpoints load {loaded} at {version}; the error is read against {chosen}")
    for found in answers:
        for c in found.changes:
            if c.member == member and c.after == "not needed":
                note_line(
                    f"{found.algorithm} does not need {member} of the {c.role} model for these "
                    f"checkpoints: {'; '.join(c.because)} ({c.site})"
                )
    checks = [decided.get((c.model, c.algorithm, c.role), c) for c in compat.checks]
    return replace(interface, requirements=requirements), replace(compat, checks=checks), chosen
