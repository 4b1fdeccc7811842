"""The commands that draw: `report`, a static HTML report (heatmap, timeline, call graphs)
of a range, and `graph`, one algorithm's worker call graph as DOT, GraphML or JSON.

A module of its own so that their options (output directory, which versions get call
graphs, the layout engine, graph formats) do not crowd the other commands; `tracker.cli`
registers it like the other command modules.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from tracker.cli.options import (
    ALGORITHM_HELP,
    algorithm_option,
    emit,
    flush_warnings,
    note_line,
    rendering_options,
    say,
    source_options,
)

if TYPE_CHECKING:
    from tracker.compare.workspace import Workspace
    from tracker.render.documents import RenderOptions


@click.command()
@click.argument("range_spec", metavar="RANGE")
@click.option(
    "-a", "--algorithm", "algorithms", multiple=True, help=ALGORITHM_HELP + " Default: all."
)
@click.option(
    "-o",
    "--output",
    "output",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory to write index.html and graphs/*.svg into (created if missing).",
)
@click.option(
    "--kind",
    type=click.Choice(["target", "draft", "all"]),
    default="target",
    show_default=True,
    help="Which rows the heatmap shows: classes checked as targets, as drafts (draft "
    "classes, and generative classes where the algorithm loads such classes as its "
    "draft), or both.",
)
@click.option(
    "--graphs",
    type=click.Choice(["all", "changes", "none"]),
    default="changes",
    show_default=True,
    help="Which versions get a call graph: every one, the first, the newest and those "
    "where the interface or call graph changed, or none.",
)
@click.option(
    "--layout",
    type=click.Choice(["auto", "dot", "python"]),
    default="auto",
    show_default=True,
    help="Call graph layout: graphviz dot when installed (auto), or the built-in one.",
)
@source_options
@rendering_options
def report(
    range_spec: str,
    algorithms: tuple[str, ...],
    output: Path,
    kind: str,
    graphs: str,
    layout: str,
    ws: Workspace,
    render_options: RenderOptions,
) -> None:
    """A static HTML report of RANGE in DIR: models x versions heatmap per algorithm, a
    timeline of interface changes, and the workers' call graphs. Opens from disk; loads
    nothing from the network."""
    from tracker.common.fileset import make_output_dir
    from tracker.compare.snapshot import aliases_of, pick_algorithms
    from tracker.render.documents import plural
    from tracker.render.report import ReportOptions, build_report, present_algorithms, write_report
    from tracker.render.report.html import refuse_foreign_index

    make_output_dir(output)  # before the work: a folder that cannot be made is said at once
    refuse_foreign_index(output)
    snaps = ws.snapshots(range_spec)
    chosen = pick_algorithms(
        present_algorithms(snaps), algorithms, aliases=aliases_of(*snaps), note=note_line
    )
    options = ReportOptions(
        link_pattern=render_options.link_pattern,
        template_dir=render_options.template_dir,
        graphs=graphs,
        layout=layout,
        kinds=("target", "draft") if kind == "all" else (kind,),
    )
    doc = build_report(snaps, chosen, ws.source.describe(), options)
    written = write_report(doc, output, options)
    flush_warnings(ws)
    for note in written.notes:
        say(f"tracker: note: {note}; used the built-in layout")
    models = max((len(a["rows"]) for a in doc["algorithms"]), default=0)
    say(
        f"wrote {written.index} ({', '.join(chosen)} · {plural(models, 'model')} × "
        f"{plural(len(doc['versions']), 'version')} · "
        f"{plural(len(written.graphs), 'call graph')} · "
        f"{written.bytes // 1024} KiB)"
    )


@click.command()
@click.argument("version")
@algorithm_option(default=None)
@click.option("--role", type=click.Choice(["target", "draft"]), help="Only this role's sites.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["dot", "graphml", "json"]),
    default="dot",
    show_default=True,
    help="Output format: graphviz DOT, GraphML, or networkx node-link JSON.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the graph to this file instead of stdout.",
)
@source_options
def graph(
    version: str,
    algorithm: str,
    role: str | None,
    fmt: str,
    output: Path | None,
    ws: Workspace,
) -> None:
    """An algorithm's worker call graph at VERSION, as DOT, GraphML or JSON.

    Every function on a call path from the algorithm's worker entry points to a function
    that touches the target or draft model, with its path:line, and each of those sites
    marked with its role, member and status. Read from the version's source files: a
    release's archive is downloaded (once, then cached) even when its snapshot ships."""
    from tracker.compare.snapshot import pick_algorithms
    from tracker.render.documents import document_json
    from tracker.render.graph_export import ROLES, build_graph, graph_document, to_dot, to_graphml

    src, resolved = ws.resolve(version)
    analysis = ws.analyse(src, resolved)
    (name,) = pick_algorithms(
        analysis.interface.algorithms,
        (algorithm,),
        aliases=analysis.interface.aliases,
        note=note_line,
    )
    found = build_graph(
        analysis.index,
        analysis.interface,
        name,
        src.describe(),
        (role,) if role else ROLES,
    )
    if not found.graph["workers"]:
        say(f"tracker: note: no worker class found for {name} at {resolved}")
    flush_warnings(ws)
    if fmt == "json":
        emit(document_json(graph_document(found)), output)
    elif fmt == "graphml":
        emit(to_graphml(found), output)
    else:
        emit(to_dot(found), output)


def register(group: click.Group) -> None:
    group.add_command(report)
    group.add_command(graph)
