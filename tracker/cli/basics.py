"""The basic commands: versions, fetch, facts, interface, snapshot, diff."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from tracker.cli.options import (
    Failed,
    algorithms_option,
    config_option,
    describe_pair,
    describe_snapshot,
    emit,
    emit_lines,
    flush_warnings,
    format_option,
    note_line,
    rendering_options,
    reverse_option,
    say,
    snapshot_pair,
    source_only_options,
    source_options,
    warn_workerless,
)
from tracker.common.errors import TrackerError

if TYPE_CHECKING:
    from tracker.compare.workspace import Workspace
    from tracker.render.documents import RenderOptions


@click.command()
@source_only_options
@format_option("text", "json")
def versions(ws: Workspace, fmt: str) -> None:
    """List the versions a source has, oldest first.

    The package index lists every release with speculative decoding: from v0.4.1.post4,
    the first with a speculative worker."""
    names = ws.source.versions()
    flush_warnings(ws)
    if fmt == "json":
        from tracker.render.documents import document_json

        emit(
            document_json(
                {
                    "schema": "sglang-tracker/versions@1",
                    "source": ws.source.describe(),
                    "versions": names,
                }
            )
        )
    else:
        emit_lines(names)


@click.command()
@source_only_options
def fetch(ws: Workspace) -> None:
    """Update a cloned repository's tags (git) or the list of releases (pypi)."""
    say(ws.source.fetch(), err=False)
    flush_warnings(ws)


@click.command()
@click.argument("version")
@click.argument("path")
@source_options
@format_option("text", "json")
def facts(
    version: str,
    path: str,
    ws: Workspace,
    fmt: str,
) -> None:
    """Show the facts extracted from one file (for debugging queries).

    PATH is a repo path such as python/sglang/srt/speculative/eagle_worker.py.
    """
    from tracker.extract.store import load_facts
    from tracker.render.facts_view import facts_document, facts_text

    src, resolved = ws.resolve(version)
    tree = src.tree(resolved)
    if path not in tree.files:
        near = [p for p in tree.files if p.endswith("/" + path.rsplit("/", 1)[-1])][:3]
        hint = f"; did you mean {', '.join(near)}" if near else ""
        raise TrackerError(f"{resolved} has no file {path}{hint}")
    found = load_facts(tree, [path])[path]
    if fmt == "json":
        from tracker.render.documents import document_json

        emit(document_json(facts_document(found, resolved)))
    else:
        emit(facts_text(found, resolved))


@click.command()
@click.argument("version")
@algorithms_option
@click.option("--role", type=click.Choice(["target", "draft"]), help="Only this role.")
@source_options
@format_option("text", "md", "json")
@rendering_options
def interface(
    version: str,
    algorithms: tuple[str, ...],
    role: str | None,
    ws: Workspace,
    fmt: str,
    render_options: RenderOptions,
) -> None:
    """What each algorithm requires of the target and draft models at VERSION."""
    from tracker.compare.snapshot import pick_algorithms
    from tracker.render.documents import interface_document, render

    snap = ws.snapshot(version)
    chosen = pick_algorithms(
        snap.interface.algorithms, algorithms, aliases=snap.interface.aliases, note=note_line
    )
    warn_workerless(snap.interface, chosen)
    doc = interface_document(snap.interface, describe_snapshot(ws, snap, fmt), chosen, role)
    flush_warnings(ws)
    emit(render("interface", fmt, doc, render_options))


@click.command()
@click.argument("version")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="File to write (default: snapshots/<version>.json in the current directory).",
)
@source_options
def snapshot(
    version: str,
    output: Path | None,
    ws: Workspace,
) -> None:
    """Write VERSION's interface and compatibility as a snapshot JSON file."""
    from tracker.compare.snapshot import to_json

    # A snapshot is always built from the source (or the cache, unless --no-shipped).
    ws.use_cache, ws.use_shipped = ws.use_shipped, False
    snap = ws.snapshot(version)
    target = output or Path("snapshots") / f"{snap.version}.json"
    emit(to_json(snap), target)


@click.command()
@click.argument("old")
@click.argument("new")
@algorithms_option
@click.option("--all", "show_all", is_flag=True, help="List every model event.")
@click.option(
    "--fail-on",
    type=click.Choice(["breaking", "new-breaks", "any"]),
    help="Exit 1 when the diff has breaking interface changes, new breaks (a wrapper "
    "that broke, or a new one lacking what its inner model or a sibling class provides), "
    "or any change.",
)
@reverse_option
@source_options
@config_option
@format_option("text", "md", "json")
@rendering_options
def diff(
    old: str,
    new: str,
    algorithms: tuple[str, ...],
    show_all: bool,
    fail_on: str | None,
    reverse: bool,
    ws: Workspace,
    fmt: str,
    render_options: RenderOptions,
) -> None:
    """What changed between OLD and NEW: interface members, output fields, and which
    model wrappers broke or were fixed."""
    from tracker.compare.diff import diff as compute
    from tracker.render.documents import diff_document, render

    a, b, nsrc, chosen = snapshot_pair(ws, old, new, algorithms, reverse)
    result = compute(a.interface, a.compat, b.interface, b.compat, chosen)
    doc = diff_document(result, describe_pair(ws, a, b, fmt), ws.fix_options(nsrc, b.version))
    flush_warnings(ws)
    emit(render("diff", fmt, doc, replace(render_options, show_all=show_all)))
    # Accepted breaks (tracker.toml) are shown above but fail nothing.
    counted = [c for c in result.changes if not c.accepted]
    if fail_on == "any" and counted:
        raise Failed
    if fail_on == "breaking" and any(c.breaking for c in counted):
        raise Failed
    if fail_on == "new-breaks" and any(c.new_break for c in counted):
        raise Failed


def register(group: click.Group) -> None:
    for command in (versions, fetch, facts, interface, snapshot, diff):
        group.add_command(command)
