"""Model wrapper commands: check, matrix, history, fix, why."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from tracker.cli import (
    ALGORITHM_HELP,
    Failed,
    _emit,
    _flush_warnings,
    _format_option,
    _pick_algorithms,
    _render_options,
    _source_options,
    suggest,
)
from tracker.errors import TrackerError

if TYPE_CHECKING:
    from tracker.app import Workspace
    from tracker.interface import Interface
    from tracker.render import RenderOptions

KIND_CHOICE = click.Choice(["target", "draft", "all"])


def _kinds(kind: str) -> tuple[str, ...]:
    return ("target", "draft") if kind == "all" else (kind,)


@click.command()
@click.argument("version", required=False)
@click.option("-a", "--algorithm", "algorithms", multiple=True, help=ALGORITHM_HELP)
@click.option("-m", "--model", "models", multiple=True, help="Only this entry class (repeatable).")
@click.option(
    "--kind",
    type=KIND_CHOICE,
    default="target",
    show_default=True,
    help="Which entry classes: target models, draft models, or both.",
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
    type=click.Choice(["broken", "unknown"]),
    help="Exit 1 when a selected model is broken (or broken or unknown).",
)
@_source_options
@_format_option("text", "md", "json", "sarif")
@_render_options
def check(
    version: str | None,
    algorithms: tuple[str, ...],
    models: tuple[str, ...],
    kind: str,
    requirements_spec: str | None,
    models_spec: str | None,
    show_all: bool,
    fail_on: str | None,
    ws: Workspace,
    fmt: str,
    render_options: RenderOptions,
) -> None:
    """Which model wrappers lack what the algorithms require at VERSION."""
    from tracker.compat import build_compat
    from tracker.render import check_document, render
    from tracker.sarif import check_sarif

    req_spec = requirements_spec or version
    mod_spec = models_spec or version
    if req_spec is None or mod_spec is None:
        raise TrackerError("give a VERSION, or both --requirements and --models")
    rsrc, rversion = ws.resolve(req_spec)
    req_snap = ws.snapshot_of(rsrc, rversion)
    if mod_spec == req_spec:
        compat = req_snap.compat
        models_version = req_snap.version
        fix_options = ws.fix_options(rsrc, rversion)
    else:
        msrc, mversion = ws.resolve(mod_spec)
        analysis = ws.analyse(msrc, mversion)
        compat = build_compat(analysis.index, req_snap.interface)
        models_version = mod_spec if mversion == "local" else mversion
        fix_options = ws.fix_options(msrc, mversion, ws.version_arg(rsrc, rversion))
    chosen = _pick_algorithms(req_snap.interface.algorithms, algorithms)
    known = {e.name for e in compat.entries}
    for name in models:
        if name not in known:
            hint = suggest(name, sorted(known))
            raise TrackerError(f"{models_version} registers no entry class {name}{hint}")
    selected = [
        c
        for c in compat.checks
        if c.algorithm in chosen and c.kind in _kinds(kind) and (not models or c.model in models)
    ]
    if models:
        unchecked = [n for n in models if not any(c.model == n for c in selected)]
        for n in unchecked:
            click.echo(
                f"tracker: note: {n} is not checked for {', '.join(chosen)} "
                "(its kind is not asked anything by these algorithms)",
                err=True,
            )
    doc = check_document(compat, selected, req_snap.version, models_version, ws.source.describe())
    doc["requirements"] = _required_sites(req_snap.interface, chosen)
    doc["show_all"] = show_all or bool(models)
    doc["fix_options"] = fix_options
    _flush_warnings(ws)
    if fmt == "sarif":
        from tracker.render import to_json

        _emit(to_json(check_sarif(doc, render_options)))
    else:
        _emit(render("check", fmt, doc, replace(render_options, show_all=show_all)))
    bad = {"broken"} if fail_on == "broken" else {"broken", "unknown"} if fail_on else set()
    if any(c.status in bad for c in selected):
        raise Failed


def _required_sites(itf: Any, algorithms: tuple[str, ...]) -> dict[str, Any]:
    from tracker.render import site_doc

    out: dict[str, dict[str, dict[str, Any]]] = {}
    for r in itf.requirements:
        if r.algorithm in algorithms and r.status == "required":
            out.setdefault(r.algorithm, {}).setdefault(r.role, {})[r.member] = [
                site_doc(s) for s in r.sites
            ]
    return out


@click.command()
@click.argument("range_spec", metavar="RANGE")
@click.option(
    "-a", "--algorithm", "algorithm", default="EAGLE3", show_default=True, help=ALGORITHM_HELP
)
@click.option("--kind", type=KIND_CHOICE, default="target", show_default=True)
@click.option("--events-only", is_flag=True, help="Only the events, not the grid.")
@_source_options
@_format_option("text", "md", "json")
@_render_options
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
    from tracker.matrix import build_matrix
    from tracker.render import matrix_document, render

    snaps = ws.snapshots(range_spec)
    name = algorithm.upper()
    if not any(name in s.interface.algorithms for s in snaps):
        raise TrackerError(f"no version in {range_spec} has the algorithm {name}")
    before, starts = _release_before(ws, snaps[0].version)
    result = build_matrix(snaps, name, _kinds(kind), before, starts)
    doc = matrix_document(result, ws.source.describe())
    doc["events_only"] = events_only
    _flush_warnings(ws)
    _emit(render("matrix", fmt, doc, render_options))


@click.command()
@click.argument("model")
@click.argument("range_spec", metavar="[RANGE]", required=False)
@click.option("-a", "--algorithm", "algorithms", multiple=True, help=ALGORITHM_HELP)
@_source_options
@_format_option("text", "md", "json")
@_render_options
def history(
    model: str,
    range_spec: str | None,
    algorithms: tuple[str, ...],
    ws: Workspace,
    fmt: str,
    render_options: RenderOptions,
) -> None:
    """One model's events across releases (default: every release the source has)."""
    from tracker.matrix import build_matrix
    from tracker.render import history_document, render

    spec = range_spec or _full_range(ws)
    snaps = ws.snapshots(spec)
    present = {e.name: e.kind for s in snaps for e in s.compat.entries}
    if model not in present:
        hint = suggest(model, sorted(present))
        raise TrackerError(f"no version in {spec} registers {model}{hint}")
    names = tuple(dict.fromkeys(a for s in snaps for a in s.interface.algorithms))
    chosen = _pick_algorithms(names, algorithms)
    kinds = (present[model],)
    before, starts = _release_before(ws, snaps[0].version)
    matrices = [build_matrix(snaps, a, kinds, before, starts) for a in chosen]
    doc = history_document(model, present[model], matrices, ws.source.describe())
    _flush_warnings(ws)
    _emit(render("history", fmt, doc, render_options))


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
        ws.reporter.warn(f"cannot read the release before {first} ({exc}); the classes "
                         f"at {first} are shown as present since before it")
        return None, False


def _full_range(ws: Any) -> str:
    from tracker.app import shipped_versions

    try:
        known = ws.source.versions()
    except TrackerError:
        known = shipped_versions()
    if not known:
        raise TrackerError("the source lists no versions")
    return f"{known[0]}..{known[-1]}"


@click.command()
@click.argument("model")
@click.option("--at", "version", required=True, help="The version to patch.")
@click.option(
    "-a", "--algorithm", "algorithm", default="EAGLE3", show_default=True, help=ALGORITHM_HELP
)
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
@_source_options
def fix(
    model: str,
    version: str,
    algorithm: str,
    requirements_spec: str | None,
    output: Path | None,
    ws: Workspace,
) -> None:
    """A unified diff that adds to MODEL the members its inner model provides and the
    algorithm requires (apply with `git apply` or `patch -p1`)."""
    from tracker.compat import build_compat, class_key_for
    from tracker.fixpatch import build_patch

    src, resolved = ws.resolve(version)
    analysis = ws.analyse(src, resolved)
    interface, compat = analysis.interface, analysis.compat
    if requirements_spec is not None:
        interface = ws.snapshot(requirements_spec).interface
        compat = build_compat(analysis.index, interface)
    name = algorithm.upper()
    _pick_algorithms(interface.algorithms, (name,))
    found = compat.check_for(model, name)
    if found is None:
        raise TrackerError(f"{resolved} registers no entry class {model} checked for {name}")
    if found.status == "ok":
        click.echo(
            f"tracker: {model} already provides what {name} requires at {resolved}", err=True
        )
        return
    key = class_key_for(analysis.index, model)
    if key is None:
        raise TrackerError(f"cannot find the class {model} at {resolved}")
    patch = build_patch(analysis.tree, analysis.index, found, key)
    if patch.skipped:
        click.echo(
            f"tracker: warning: no inner model provides {', '.join(patch.skipped)}; "
            "the patch does not add them",
            err=True,
        )
    _emit(patch.diff, output)


@click.command()
@click.argument("member")
@click.option("--at", "version", required=True, help="The version to explain.")
@click.option(
    "-a", "--algorithm", "algorithm", default="EAGLE3", show_default=True, help=ALGORITHM_HELP
)
@click.option("--role", type=click.Choice(["target", "draft"]), default=None)
@_source_options
@_format_option("text", "json")
def why(
    member: str,
    version: str,
    algorithm: str,
    role: str | None,
    ws: Workspace,
    fmt: str,
) -> None:
    """Why ALGORITHM needs MEMBER at VERSION: each site, its condition, and the call path
    from the algorithm's worker to it."""
    from tracker.render import requirement_doc, to_json

    snap = ws.snapshot(version)
    name = algorithm.upper()
    _pick_algorithms(snap.interface.algorithms, (name,))
    reqs = [r for r in snap.interface.for_algorithm(name, role) if r.member == member]
    if not reqs:
        raise TrackerError(_not_required(snap.interface, name, role, member))
    _flush_warnings(ws)
    if fmt == "json":
        _emit(
            to_json(
                {
                    "schema": "sglang-tracker/why@1",
                    "version": snap.version,
                    "algorithm": name,
                    "member": member,
                    "requirements": [requirement_doc(r) for r in reqs],
                }
            )
        )
        return
    workers = ", ".join(snap.interface.workers.get(name, ())) or "none found"
    lines = [f"{member} at {snap.version} for {name} (workers: {workers})"]
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
    _emit("\n".join(lines) + "\n")


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
