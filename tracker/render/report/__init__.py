"""The static HTML report: a compatibility heatmap, a timeline of interface changes and
the workers' call graphs, for people who would rather look than read a terminal table.

Why a package of its own: the text renders answer one question at a time; the report puts
a whole release range on one page that opens from disk (file://) on any machine, mailed
or archived as CI output. So it must load nothing from the network: CSS and JavaScript
are inlined, the call graphs are inline SVG, and a Content-Security-Policy forbids any
other load. Links to the source (the configurable link pattern) are plain `<a href>`s.

Like the other reports it is first a document (plain data: `document.build_report`), then
a jinja2 render of it (`html.render_html`, templates in `tracker/render/templates/report/`).
The modules follow that flow: `graph` (the call-graph model, from the call paths stored in
snapshots) -> `layout` (built-in SVG layout) | `dot` (graphviz) -> `document` -> `html`.
"""

from tracker.render.report.document import (
    GRAPH_MODES,
    SCHEMA,
    STATUSES,
    ReportOptions,
    build_report,
    present_algorithms,
)
from tracker.render.report.dot import dot_source, svg_dot
from tracker.render.report.graph import CallGraphView, GraphNode, MemberUse, build_call_graph
from tracker.render.report.html import (
    LAYOUTS,
    WrittenReport,
    graph_file_name,
    render_html,
    render_svg,
    write_report,
)
from tracker.render.report.layout import layers_of, svg_python

__all__ = [
    "GRAPH_MODES",
    "LAYOUTS",
    "SCHEMA",
    "STATUSES",
    "CallGraphView",
    "GraphNode",
    "MemberUse",
    "ReportOptions",
    "WrittenReport",
    "build_call_graph",
    "build_report",
    "dot_source",
    "graph_file_name",
    "layers_of",
    "present_algorithms",
    "render_html",
    "render_svg",
    "svg_dot",
    "svg_python",
    "write_report",
]
