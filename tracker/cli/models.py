"""Model wrapper commands: check, matrix, history, fix, why."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from tracker.cli.checkpoints import Checkpoints, checkpoint_options
from tracker.cli.options import (
    Failed,
    algorithm_option,
    algorithms_option,
    config_option,
    describe_snapshot,
    emit,
    emit_lines,
    flush_warnings,
    format_option,
    note_line,
    rendering_options,
    say,
    source_options,
    suggest,
    warn_unknown_accepted,
    warn_workerless,
)
from tracker.common.errors import TrackerError

if TYPE_CHECKING:
    from tracker.analysis.compat import Compat, ModelCheck
    from tracker.analysis.index import VersionIndex
    from tracker.analysis.interface import Interface
    from tracker.compare.workspace import Workspace
    from tracker.render.documents import RenderOptions

KIND_CHOICE = click.Choice(["target", "draft", "all"])


def _kinds(kind: str) -> tuple[str, ...]:
    return ("target", "draft") if kind == "all" else (kind,)


@click.command()
@click.argument("version", required=False)
@algorithms_option
@click.option("-m", "--model", "models", multiple=True, help="Only this entry class (repeatable).")
@click.option(
    "--kind",
    type=KIND_CHOICE,
    default="target",
    show_default=True,
    help="Which rows: classes checked as target models, as draft models (draft classes, "
    "and generative classes where the algorithm loads such classes as its draft), or both.",
)
@click.option(
    "--role",
    type=click.Choice(["target", "draft"]),
    help="Check each -m CLASS against what the algorithms ask of this role, whatever its "
    "kind (an ordinary model loaded as a draft, say).",
)
@click.option(
    "--explain-kinds",
    is_flag=True,
    help="Say under each model what decided its kind (a LogitsProcessor or Pooler it "
    "constructs, an inner model, or its name as a last resort) and why it is checked in "
    "its role. JSON always carries both (kind_evidence, role_evidence).",
)
@click.option(
    "--requirements",
    "requirements_spec",
    metavar="VERSION",
    help="Take the requirements from this version...",
)
@click.option(
    "--models",
    "models_spec",
    metavar="VERSION",
    help="...and the model classes from this one (e.g. dir:PATH, a patched tree).",
)
@click.option("--all", "show_all", is_flag=True, help="List models that are ok too.")
@click.option(
    "--fail-on",
    type=click.Choice(["broken", "unknown", "at-risk"]),
    help="Exit 1 when a selected model is broken, unsupported ones included; `unknown`: broken "
    "or unknown; `at-risk`: broken, unknown, or lacking a member needed only under a condition.",
)
@checkpoint_options
@source_options
@config_option
@format_option("text", "md", "json", "sarif")
@rendering_options
def check(
    version: str | None,
    algorithms: tuple[str, ...],
    models: tuple[str, ...],
    kind: str,
    role: str | None,
    explain_kinds: bool,
    requirements_spec: str | None,
    models_spec: str | None,
    show_all: bool,
    fail_on: str | None,
    checkpoints: Checkpoints,
    ws: Workspace,
    fmt: str,
    render_options: RenderOptions,
) -> None:
    """Which model wrappers lack what the algorithms require at VERSION.

    Each class is checked in the roles its kind implies: a generative class as the target,
    and as the draft where the algorithm loads such classes as its draft (`--kind draft`
    or `all` shows those rows); a draft class as the draft of its algorithms. `--role`
    checks the named classes in one role, whatever their kind.

    A broken class that provides none of the members, and whose inner model and module
    neighbours do not either, reads "unsupported": it never took the algorithm up (it is
    still broken for --fail-on, and in JSON `status`).

    With --model-config (and --draft-config), the checkpoints instead: the class the
    release loads for each, decided from its own code, checked against what the algorithm
    asks once the conditions that read their configs are decided."""
    from tracker.compare.snapshot import pick_algorithms
    from tracker.render.documents import check_document

    if checkpoints.given:
        others = {
            "-m": bool(models),
            "--role": role is not None,
            "--kind": kind != "target",
            "--requirements": requirements_spec is not None,
            "--models": models_spec is not None,
            "--explain-kinds": explain_kinds,
        }
        from tracker.cli.checkpoint_commands import check_checkpoints

        check_checkpoints(
            ws, version, algorithms, checkpoints, fmt, render_options, fail_on, others
        )
        return
    req_spec = requirements_spec or version
    mod_spec = models_spec or version
    if req_spec is None or mod_spec is None:
        raise TrackerError("give a VERSION, or both --requirements and --models")
    if role is not None and not models:
        raise TrackerError("--role needs -m/--model: the classes to check in that role")
    rsrc, rversion = ws.resolve(req_spec)
    req_snap = ws.snapshot_of(rsrc, rversion)
    index: VersionIndex | None = None  # built only when the models come from another version
    if mod_spec == req_spec:
        compat = req_snap.compat
        models_version = req_snap.version
        fix_options = ws.fix_options(rsrc, rversion)
    else:
        compat, index, models_version, fix_options = _models_against(
            ws, mod_spec, req_snap.interface, ws.version_arg(rsrc, rversion)
        )
    chosen = pick_algorithms(
        req_snap.interface.algorithms,
        algorithms,
        aliases=req_snap.interface.aliases,
        note=note_line,
    )
    warn_unknown_accepted(ws, req_snap.interface.algorithms)
    warn_workerless(req_snap.interface, chosen)
    _require_registered(models, compat, models_version)
    selected = _selected_checks(
        ws, mod_spec, index, compat, req_snap.interface, models, chosen, kind, role
    )
    source = describe_snapshot(ws, req_snap, "json")  # a `dir:PATH` version names its own
    doc = check_document(compat, selected, req_snap.version, models_version, source)
    doc["requirements"] = _required_sites(req_snap.interface, chosen)
    doc["show_all"] = show_all or bool(models)
    doc["explain_kinds"] = explain_kinds
    doc["fix_options"] = fix_options
    if (req_snap.basis or req_snap.source.kind == "dir") and fmt in ("text", "md"):
        # For people only, like describe_snapshot: JSON does not depend on shipped data.
        # A directory is named by its path (its version, `local`, says nothing).
        doc["label"] = describe_snapshot(ws, req_snap)
    flush_warnings(ws)
    emit(_check_output(doc, fmt, render_options, show_all, compat))
    bad = {"broken"} if fail_on == "broken" else {"broken", "unknown"} if fail_on else set()
    # Accepted breaks (tracker.toml) are reported above but fail nothing.
    if any(c.status in bad and not c.accepted for c in selected):
        raise Failed
    if fail_on == "at-risk" and any(c.at_risk and not c.accepted for c in selected):
        raise Failed


def _check_output(
    doc: dict[str, Any], fmt: str, render_options: RenderOptions, show_all: bool, compat: Compat
) -> str:
    from tracker.render.documents import document_json, render
    from tracker.render.sarif import check_sarif

    if fmt == "sarif":
        # Each alert sits at its class's definition (else where EntryClass registers it).
        lines = {e.name: e.class_line or e.line for e in compat.entries}
        return document_json(check_sarif(doc, render_options, lines))
    return render("check", fmt, doc, replace(render_options, show_all=show_all))


def _models_against(
    ws: Workspace, mod_spec: str, itf: Interface, requirements_arg: str
) -> tuple[Compat, VersionIndex, str, str]:
    """The classes of `mod_spec` checked against another version's requirements `itf`:
    their compat, the index it was built from (kept for `--role`), the version to show
    and the `tracker fix` options that name both versions."""
    from tracker.analysis.compat import build_compat

    msrc, mversion = ws.resolve(mod_spec)
    analysis = ws.analyse(msrc, mversion)
    compat = ws.mark(build_compat(analysis.index, itf))
    models_version = mod_spec if mversion == "local" else mversion
    return compat, analysis.index, models_version, ws.fix_options(msrc, mversion, requirements_arg)


def _require_registered(models: tuple[str, ...], compat: Compat, models_version: str) -> None:
    known = {e.name for e in compat.entries}
    for name in models:
        if name not in known:
            hint = suggest(name, sorted(known))
            raise TrackerError(f"{models_version} registers no entry class {name}{hint}")


def _selected_checks(
    ws: Workspace,
    mod_spec: str,
    index: VersionIndex | None,
    compat: Compat,
    itf: Interface,
    models: tuple[str, ...],
    algorithms: tuple[str, ...],
    kind: str,
    role: str | None,
) -> list[ModelCheck]:
    """The rows to show: the named classes in `role`, or every check (of the named classes)
    in the roles `kind` picks."""
    if role is not None:
        return _in_role(ws, mod_spec, index, compat, itf, models, algorithms, role)
    selected = [
        c
        for c in compat.checks
        if c.algorithm in algorithms
        and c.role in _kinds(kind)
        and (not models or c.model in models)
    ]
    if models:
        _note_unchecked(models, selected, compat, algorithms, kind)
    return selected


def _note_unchecked(
    models: tuple[str, ...],
    selected: list[ModelCheck],
    compat: Compat,
    algorithms: tuple[str, ...],
    kind: str,
) -> None:
    """Say why a class the user named got no row, and how to check it anyway."""
    entries = {e.name: e for e in compat.entries}
    for name in models:
        if any(c.model == name for c in selected):
            continue
        entry = entries[name]
        say(
            f"tracker: note: {name} is not checked for {', '.join(algorithms)} in the "
            f"{' or '.join(_kinds(kind))} role (its kind is {entry.kind}: "
            f"{entry.kind_evidence}); --role checks it in any role"
        )


def _in_role(
    ws: Workspace,
    mod_spec: str,
    index: VersionIndex | None,
    compat: Compat,
    itf: Interface,
    models: tuple[str, ...],
    algorithms: tuple[str, ...],
    role: str,
) -> list[ModelCheck]:
    """The named classes checked in `role` for each algorithm: the check the analysis
    made where there is one, else a new one (which needs the version's index)."""
    from tracker.analysis.compat import Needs, check_entry

    entries = {e.name: e for e in compat.entries}
    out: list[ModelCheck] = []
    for name in dict.fromkeys(models):
        for algorithm in algorithms:
            found = compat.check_for(name, algorithm, role)
            if found is None:
                if index is None:
                    index = ws.analyse(*ws.resolve(mod_spec)).index
                drafts = itf.draft_models.get(algorithm) if role == "draft" else None
                found = check_entry(
                    index,
                    entries[name],
                    algorithm,
                    role,
                    Needs.of(itf),
                    # STANDALONE loads any generative model: that is why, not the request.
                    drafts.evidence
                    if drafts is not None and drafts.generative
                    else f"checked as the {role} model on request (--role {role})",
                )
            out.append(found)
    return out


def _required_sites(itf: Any, algorithms: tuple[str, ...]) -> dict[str, Any]:
    from tracker.render.documents import site_doc

    out: dict[str, dict[str, dict[str, Any]]] = {}
    for r in itf.requirements:
        if r.algorithm in algorithms and r.status == "required":
            out.setdefault(r.algorithm, {}).setdefault(r.role, {})[r.member] = [
                site_doc(s) for s in r.sites
            ]
    return out


@click.command()
@click.argument("range_spec", metavar="RANGE")
@algorithm_option()
@click.option(
    "--kind",
    type=KIND_CHOICE,
    default="target",
    show_default=True,
    help="Which rows: classes checked as targets, as drafts (`NAME (as draft)` for a "
    "generative class the algorithm may load as its draft), or both.",
)
@click.option("--events-only", is_flag=True, help="Only the events, not the grid.")
@source_options
@config_option
@format_option("text", "md", "json")
@rendering_options
def matrix(
    range_spec: str,
    algorithm: str,
    kind: str,
    events_only: bool,
    ws: Workspace,
    fmt: str,
    render_options: RenderOptions,
) -> None:
    """Models x versions over RANGE (ok / broken / unknown / n/a / absent), and the events:
    first appearance, broke, fixed, removed."""
    from tracker.compare.matrix import build_matrix
    from tracker.compare.snapshot import aliases_of
    from tracker.render.documents import accepted_rows, matrix_document, render

    snaps = ws.snapshots(range_spec)
    name = algorithm.upper()
    aliases = aliases_of(*snaps)
    if name in aliases and not any(name in s.interface.algorithms for s in snaps):
        note_line(f"{name} runs as {aliases[name][0]} ({aliases[name][1]})")
        name = aliases[name][0]
    if not any(name in s.interface.algorithms for s in snaps):
        raise TrackerError(f"no version in {range_spec} has the algorithm {name}")
    before, starts = _release_before(ws, snaps[0].version)
    result = build_matrix(snaps, name, _kinds(kind), before, starts)
    doc = matrix_document(result, ws.source.describe())
    doc["events_only"] = events_only
    accepted = accepted_rows((s.compat for s in snaps), (name,), _kinds(kind))
    if accepted:  # the cells hold a status only: accepted breaks are listed apart
        doc["accepted"] = accepted
    flush_warnings(ws)
    emit(render("matrix", fmt, doc, render_options))


@click.command()
@click.argument("model")
@click.argument("range_spec", metavar="[RANGE]", required=False)
@algorithms_option
@source_options
@config_option
@format_option("text", "md", "json")
@rendering_options
def history(
    model: str,
    range_spec: str | None,
    algorithms: tuple[str, ...],
    ws: Workspace,
    fmt: str,
    render_options: RenderOptions,
) -> None:
    """One model's events across releases (default: every release the source has)."""
    from tracker.compare.matrix import build_matrix
    from tracker.compare.snapshot import algorithms_of, aliases_of, pick_algorithms
    from tracker.render.documents import accepted_rows, history_document, render

    # One class's rows need only its own entries and checks: the others are not decoded.
    ws.only_models(frozenset({model}))
    if range_spec is None:
        ws.read_shipped_while_listing()
    spec = range_spec or _full_range(ws)
    snaps = ws.snapshots(spec)
    present = {e.name: e.kind for s in snaps for e in s.compat.entries}
    if model not in present:
        ws.only_models(None)
        known = sorted({e.name for s in ws.snapshots(spec) for e in s.compat.entries})
        raise TrackerError(f"no version in {spec} registers {model}{suggest(model, known)}")
    names = algorithms_of(*snaps)
    chosen = pick_algorithms(names, algorithms, aliases=aliases_of(*snaps), note=note_line)
    kinds = (present[model],)
    before, starts = _release_before(ws, snaps[0].version)
    matrices = [build_matrix(snaps, a, kinds, before, starts) for a in chosen]
    doc = history_document(model, present[model], matrices, ws.source.describe())
    accepted = accepted_rows((s.compat for s in snaps), chosen, model=model)
    if accepted:
        doc["accepted"] = accepted
    flush_warnings(ws)
    emit(render("history", fmt, doc, render_options))


def _release_before(ws: Workspace, first: str) -> tuple[Any, bool]:
    """(the snapshot of the release before a range starting at `first`, or None; whether
    `first` starts the source's history), for telling classes new at `first` from those
    already there."""
    try:
        previous = ws.release_before(first)
        if previous is None:
            return None, True
        return ws.snapshot_of(ws.source, previous), False
    except TrackerError as exc:
        ws.feedback.warn(
            f"cannot read the release before {first} ({exc}); the classes "
            f"at {first} are shown as present since before it"
        )
        return None, False


def _full_range(ws: Any) -> str:
    from tracker.compare.workspace import shipped_versions

    try:
        known = ws.source.versions()
    except TrackerError:
        known = shipped_versions()
    if not known:
        raise TrackerError("the source lists no versions")
    return f"{known[0]}..{known[-1]}"


@click.command()
@click.argument("model", required=False)
@click.option("--at", "version", required=True, help="The version to patch.")
@algorithm_option()
@click.option(
    "--requirements",
    "requirements_spec",
    metavar="VERSION",
    help="Take the requirements from this version (default: the one patched).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the patch to this file instead of stdout.",
)
@checkpoint_options
@source_options
def fix(
    model: str | None,
    version: str,
    algorithm: str,
    requirements_spec: str | None,
    output: Path | None,
    checkpoints: Checkpoints,
    ws: Workspace,
) -> None:
    """A unified diff that adds to MODEL the members its inner model provides and the
    algorithm requires (apply with `git apply` or `patch -p1`). With --model-config (and
    --draft-config) instead of MODEL: to the classes the release loads for the checkpoints,
    what they lack once the configs decide the requirements.

    Exits 1 when the patch leaves the class broken: a member no inner model provides, or an
    inner attribute that another branch of `__init__` fills with a class lacking the member
    (the lines on stderr say which).

    Reads VERSION's source files: a release's archive is downloaded (once, then cached)
    even when its snapshot ships with the tool."""
    from tracker.release.fixpatch import build_patch

    if checkpoints.given:
        from tracker.cli.checkpoint_commands import checks_to_fix

        if requirements_spec is not None:
            raise TrackerError("--requirements does not go with --model-config")
        analysis, name, resolved, targets = checks_to_fix(
            ws, model, version, algorithm, checkpoints
        )
    elif model is None:
        raise TrackerError("give the MODEL to patch, or --model-config PATH")
    else:
        analysis, name, resolved, targets = _class_to_fix(
            ws, model, version, algorithm, requirements_spec
        )
    patches = []
    for found, key in targets:
        _refuse_contract(found, name, resolved)
        patches.append((found.model, build_patch(analysis.tree, analysis.index, found, key)))
    if patches:
        _emit_patches(patches, output)


def _class_to_fix(
    ws: Workspace, model: str, version: str, algorithm: str, requirements_spec: str | None
) -> tuple[Any, str, str, list[tuple[ModelCheck, str]]]:
    """(the analysis, the algorithm, the version, [(MODEL's check, its key)]: empty, with a
    note, when it lacks nothing)."""
    from tracker.analysis.compat import build_compat, class_key_for
    from tracker.compare.snapshot import pick_algorithms

    src, resolved = ws.resolve(version)
    analysis = ws.analyse(src, resolved)
    interface, compat = analysis.interface, analysis.compat
    if requirements_spec is not None:
        interface = ws.snapshot(requirements_spec).interface
        compat = build_compat(analysis.index, interface)
    (name,) = pick_algorithms(
        interface.algorithms, (algorithm,), aliases=interface.aliases, note=note_line
    )
    found = compat.check_for(model, name)
    if found is None:
        raise TrackerError(f"{resolved} registers no entry class {model} checked for {name}")
    if found.status == "ok":
        say(f"tracker: {model} already provides what {name} requires at {resolved}")
        return analysis, name, resolved, []
    key = class_key_for(analysis.index, model)
    if key is None:
        raise TrackerError(f"cannot find the class {model} at {resolved}")
    return analysis, name, resolved, [(found, key)]


def _refuse_contract(found: ModelCheck, name: str, resolved: str) -> None:
    """Exit 2, as for a wrapper with no inner model to delegate to: the patch asked for
    cannot be written; what is wrong is said, with where to read more."""
    if not found.contract:
        return
    model = found.model
    broken = "; ".join(dict.fromkeys(f.headline for f in found.contract))
    raise TrackerError(
        f"{model} provides every member {name} requires at {resolved} but breaks its "
        f"aux-hidden-state contract ({broken}); tracker fix only adds missing members "
        f"and writes no patch for that: `tracker why {model} --at {resolved}` shows the sites"
    )


def _emit_patches(patches: list[tuple[str, Any]], output: Path | None) -> None:
    diff = "".join(p.diff for _, p in patches)
    if output is not None:
        emit(diff, output)  # the patch as it is, to apply
    else:
        # On stdout each line is made visible: the context lines and signatures are the
        # version's source, which may hold control characters.
        lines = diff.split("\n")
        emit_lines(lines[:-1] if lines[-1] == "" else lines)
    partial = [(model, p) for model, p in patches if not p.complete]
    for model, patch in partial:
        for line in _partial_lines(model, patch):
            say(line)
    if partial:
        raise Failed  # the class stays broken (for some checkpoints) with the patch


def _partial_lines(model: str, patch: Any) -> list[str]:
    """Why a patch leaves the class broken: members nothing delegates to, and inner
    classes (another branch of `__init__`) that lack what the patch delegates."""
    out = []
    if patch.skipped:
        names = ", ".join(patch.skipped)
        them = "it" if len(patch.skipped) == 1 else "them"
        out.append(
            f"tracker: partial patch: no inner model of {model} provides {names}; "
            f"the patch does not add {them}, and {model} stays broken"
        )
    for member, lacking in patch.partial.items():
        which = ", ".join(lacking)
        verb, them = ("lacks", "it") if len(lacking) == 1 else ("lack", "them")
        out.append(
            f"tracker: partial patch: {member} is delegated, but the inner model may be "
            f"{which}, which {verb} it: checkpoints that build {them} still fail"
        )
    return out


@click.command()
@click.argument("name", metavar="[MEMBER|CLASS]", required=False)
@click.option("--at", "version", required=True, help="The version to explain.")
@algorithm_option()
@click.option(
    "--role",
    type=click.Choice(["target", "draft"]),
    default=None,
    help="For a MEMBER: only what the algorithm requires of this model (default: of both). "
    "A CLASS is explained in the role it is checked in.",
)
@click.option(
    "-m", "--model", "model", help="Also how this entry class provides it, and its contract."
)
@checkpoint_options
@source_options
@format_option("text", "json")
def why(
    name: str | None,
    version: str,
    algorithm: str,
    role: str | None,
    model: str | None,
    checkpoints: Checkpoints,
    ws: Workspace,
    fmt: str,
) -> None:
    """Why ALGORITHM needs MEMBER at VERSION: each site, its condition, and the call path
    from the algorithm's worker to it. Given an entry CLASS instead (or -m CLASS): how it
    provides each member, and whether it keeps EAGLE3's aux-hidden-state contract.

    With --model-config (and --draft-config): the same for the classes the checkpoints
    load, with the requirements as their configs decide them (NAME may be left out)."""
    from tracker.compare.snapshot import pick_algorithms
    from tracker.render.documents import check_doc, document_json, requirement_doc

    if checkpoints.given:
        from tracker.cli.checkpoint_commands import why_checkpoints

        why_checkpoints(ws, name, version, algorithm, role, model, checkpoints, fmt)
        return
    if name is None:
        raise TrackerError("give a MEMBER or a CLASS to explain, or --model-config PATH")
    snap = ws.snapshot(version)
    (alg,) = pick_algorithms(
        snap.interface.algorithms, (algorithm,), aliases=snap.interface.aliases, note=note_line
    )
    registered = sorted(e.name for e in snap.compat.entries)
    member: str | None = name
    if name in registered and model is None:
        member, model = None, name
    check = None
    if model is not None:
        if model not in registered:
            hint = suggest(model, registered)
            raise TrackerError(f"{snap.version} registers no entry class {model}{hint}")
        check = snap.compat.check_for(model, alg)
        if check is None:
            raise TrackerError(
                f"{model} is not checked for {alg} at {snap.version} "
                "(the algorithm asks nothing of its kind of class)"
            )
    if member is not None:
        reqs = [r for r in snap.interface.for_algorithm(alg, role) if r.member == member]
        if not reqs:
            raise TrackerError(_not_required(snap.interface, alg, role, member))
    else:
        assert check is not None
        checked = {p.member for p in check.provisions}
        reqs = [r for r in snap.interface.for_algorithm(alg, check.role) if r.member in checked]
    flush_warnings(ws)
    if fmt == "json":
        doc: dict[str, Any] = {
            "schema": "sglang-tracker/why@2",
            "version": snap.version,
            "algorithm": alg,
        }
        if member is not None:
            doc["member"] = member
        if check is not None:
            doc.update(model=check.model, check=check_doc(check))
        doc["requirements"] = [requirement_doc(r) for r in reqs]
        emit(document_json(doc))
        return
    lines = _why_member_lines(snap, alg, member, reqs) if member is not None else []
    if check is not None:
        lines += _why_model_lines(check, reqs, snap.version)
    emit_lines(lines)


def _why_member_lines(snap: Any, alg: str, member: str, reqs: list[Any]) -> list[str]:
    workers = ", ".join(snap.interface.workers.get(alg, ())) or "none found"
    lines = [f"{member} at {snap.version} for {alg} (workers: {workers})"]
    for r in reqs:
        lines.append(f"  {r.role} model · {r.kind} · {r.status}")
        for s in r.sites:
            where = f"{s.path}:{s.line} in {s.function}"
            lines.append(f"    {where}")
            if s.condition:
                lines.append(f"      if {s.condition}")
            if s.guard:
                lines.append(f"      guarded by {s.guard}")
            if s.call_path:
                lines.append("      call path:")
                for step in s.call_path:
                    lines.append(f"        → {step}")
            else:
                lines.append("      call path: none found from the worker")
    return lines


_HOW = {
    "defined": "defined in",
    "inherited": "inherited from",
    "attribute": "set by",
    "torch": "from",
    "alternative": "stands in:",
    "unknown": "unknown:",
}


def _why_model_lines(check: Any, reqs: list[Any], version: str) -> list[str]:
    """How the class provides each member it is checked for, then its aux-hidden-state
    contract: each finding with its sites, what serving it does and what a fix must do."""
    from tracker.analysis.contract import ContractRule
    from tracker.analysis.roles import load_rules

    sites = {r.member: r.sites[0] for r in reqs if r.role == check.role}
    other = f" --algorithm {check.algorithm}" if check.algorithm != "EAGLE3" else ""
    lines = [
        f"{check.model} at {version} for {check.algorithm}: {check.status} "
        f"({check.role} model · {check.path})"
    ]
    for p in check.provisions:
        if p.how == "missing":
            at = sites.get(p.member)
            where = f" · required at {at.path}:{at.line} in {at.function}" if at else ""
            lines.append(f"  {p.member:<32} missing{where}")
            for d in check.delegations:
                if d.member == p.member:
                    lines.append(
                        f"      its self.{d.attribute} ({d.inner_class}) provides it "
                        f"→ tracker fix {check.model} --at {version}{other}"
                    )
        else:
            lines.append(f"  {p.member:<32} {_HOW.get(p.how, p.how)} {p.where}".rstrip())
    hooks = {h.hook for h in load_rules().capture_hooks}
    followed = check.contract or check.contract_unknown
    if not followed and (
        check.role != "target" or not hooks & {p.member for p in check.provisions}
    ):
        return lines
    if check.contract:
        lines.append("  aux-hidden-state contract: broken")
        for f in check.contract:
            rule = ContractRule.of(f.rule)
            lines.append(f"    {f.headline}: {f.message}")
            lines += [f"      {s.path}:{s.line}  {s.what}" for s in f.sites]
            lines.append(f"      serving it: {rule.symptom}")
            lines.append(f"      to fix: {rule.remedy} (tracker fix writes no patch for this)")
    elif check.contract_unknown:
        lines.append(f"  aux-hidden-state contract: not followed ({check.contract_unknown})")
    elif check.missing or check.unknown:
        lines.append("  aux-hidden-state contract: not checked while members are missing")
    else:
        lines.append("  aux-hidden-state contract: holds as far as the tracker follows it")
    return lines


def _not_required(itf: Interface, algorithm: str, role: str | None, member: str) -> str:
    """Why-not, saying who does require the member: of which model, by which algorithms."""
    of_role = f" of the {role} model" if role else ""
    by_role: dict[str, set[str]] = {}
    for r in itf.requirements:
        if r.member == member:
            by_role.setdefault(r.role, set()).add(r.algorithm)
    where = [
        f"of the {other} model by {', '.join(sorted(algs))}"
        for other, algs in sorted(by_role.items())
    ]
    also = f" (it is required {'; '.join(where)})" if where else ""
    return f"{algorithm} at {itf.version} requires no member {member}{of_role}{also}"


def register(group: click.Group) -> None:
    for command in (check, matrix, history, fix, why):
        group.add_command(command)
