"""One algorithm's worker call graph at one version, for `tracker graph`: every function on
a call path from the algorithm's worker entry points to a function where it touches the
target or draft model, each such site as a node of its own, written as DOT, GraphML or
node-link JSON for graphviz, Gephi, yEd or a script.

Built from the full analysis (the version's index and its workers' walks), not from the call paths
a snapshot stores, because a snapshot keeps one shortest path per site and names the
functions on it without saying where they are: a graph needs every route between the
entries and the sites, each function's `path:line` and the line of each call. The sites
themselves are the interface's, from the same analysis, so the graph and `tracker
interface` never disagree. GraphML and node-link JSON are networkx's own writers; DOT is
written here (no pydot or pygraphviz needed).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tracker.analysis.flow import Flow
from tracker.analysis.index import VersionIndex, key
from tracker.analysis.interface import Interface, Requirement, Site, algorithm_walks
from tracker.analysis.roles import load_rules
from tracker.analysis.walk import entry_methods
from tracker.render.inert import visible

if TYPE_CHECKING:
    import networkx as nx

SCHEMA = "sglang-tracker/graph@1"
FORMATS = ("dot", "graphml", "json")
ROLES = ("target", "draft")


@dataclass(frozen=True)
class _SiteUse:
    requirement: Requirement
    site: Site
    function: str  # call-path key of the function holding the site


def build_graph(
    index: VersionIndex,
    interface: Interface,
    algorithm: str,
    source: str,
    roles: Iterable[str] = ROLES,
) -> nx.DiGraph:
    """Function nodes (id: the call-path key `module:Qual.name`) and site nodes (id:
    `role:member@path:line`); `call` edges between functions carry the line of the call,
    `site` edges lead from a function to the sites in its body."""
    import networkx

    wanted = set(roles)
    uses = _site_uses(index, interface, algorithm, wanted)
    # The walks the interface's sites come from: the workers' (as Python dispatches their
    # calls) and the scheduler's target worker's (runner code on the target).
    walk, target_walk = algorithm_walks(interface.version, index, algorithm)
    reachable: nx.DiGraph = networkx.DiGraph()
    for reach in (walk, target_walk):
        for caller, callees in reach.edges.items():
            for callee, line in callees.items():
                if not reachable.has_edge(caller, callee):
                    reachable.add_edge(caller, callee, line=line)
        reachable.add_nodes_from(reach.functions)
    holders = {u.function for u in uses}
    keep: set[str] = set()
    for fn in holders & set(reachable):
        keep |= networkx.ancestors(reachable, fn) | {fn}
    entries = _entries(index, walk, target_walk)
    workers = [v.worker for v in walk.variants]

    graph = networkx.DiGraph(
        version=interface.version,
        algorithm=algorithm,
        source=source,
        workers=", ".join(w.rpartition(":")[2] for w in workers),
        roles=", ".join(r for r in ROLES if r in wanted),
    )
    for fn in sorted(keep | holders):
        graph.add_node(fn, **_function_attrs(index, fn, entries.get(fn, ""), fn not in keep))
    for a, b in sorted(reachable.subgraph(keep).edges):
        graph.add_edge(a, b, kind="call", line=int(reachable.edges[a, b].get("line", 0)))
    for use in sorted(uses, key=lambda u: (u.site.path, u.site.line, _site_id(u))):
        node = _site_id(use)
        if node not in graph:
            graph.add_node(node, **_site_attrs(use))
            graph.add_edge(use.function, node, kind="site", line=use.site.line)
    return graph


def _entries(index: VersionIndex, walk: Any, target_walk: Any) -> dict[str, str]:
    """Entry function -> "worker" (the algorithm's worker class defines it), "inherited" (a
    base does, and the worker's MRO resolves the name to it) or "target" (a method of the
    target worker the scheduler builds, whose runner the target's runner code is on)."""
    flow = Flow(index, load_rules())
    out: dict[str, str] = {}
    for variant in walk.variants:
        for method in entry_methods(flow, variant.worker):
            owner = index.functions[method].owner
            mine = owner is not None and key(method.partition(":")[0], owner) == variant.worker
            out.setdefault(method, "worker" if mine else "inherited")
    for variant in target_walk.variants:
        for method in entry_methods(flow, variant.worker):
            out.setdefault(method, "target")
    return out


def _site_uses(
    index: VersionIndex, interface: Interface, algorithm: str, roles: set[str]
) -> list[_SiteUse]:
    out = []
    for r in interface.for_algorithm(algorithm):
        if r.role not in roles:
            continue
        for s in r.sites:
            if s.call_path:
                holder = s.call_path[-1]
            else:  # runner code no worker path was found to: keyed the same way
                facts = index.by_path.get(s.path)
                module = facts.module_name if facts is not None else s.path
                holder = key(module, s.function)
            out.append(_SiteUse(r, s, holder))
    return out


def _site_id(use: _SiteUse) -> str:
    r, s = use.requirement, use.site
    return f"{r.role}:{r.member}@{s.path}:{s.line}"


def _function_attrs(index: VersionIndex, fn: str, entry: str, detached: bool) -> dict[str, Any]:
    module, _, qualname = fn.partition(":")
    facts = index.modules.get(module)
    found = index.functions.get(fn)
    return {
        "kind": "function",
        "label": qualname,
        "module": module,
        "path": facts.path if facts is not None else "",
        "line": found.line if found is not None else 0,
        # An entry point: a method of the algorithm's worker ("worker") or one it
        # inherits ("inherited"); "" for any other function.
        "entry": entry,
        # Holds a site, but no call path from a worker entry reaches it.
        "detached": detached,
    }


def _site_attrs(use: _SiteUse) -> dict[str, Any]:
    r, s = use.requirement, use.site
    return {
        "kind": "site",
        "label": f"{r.member}()" if r.kind == "call" else r.member,
        "role": r.role,
        "member": r.member,
        "member_kind": r.kind,
        # Plain strings: GraphML writes no enum values (statuses and guards are StrEnums).
        "status": str(s.status),
        "path": s.path,
        "line": s.line,
        "function": s.function,
        "condition": s.condition,
        "guard": str(s.guard),
        "arity": s.arity,
    }


# ------------------------------------------------------------------------- writers


def graph_document(graph: nx.DiGraph) -> dict[str, Any]:
    """networkx's node-link form, with the document's schema id first."""
    import networkx

    return {"schema": SCHEMA, **networkx.node_link_data(graph, edges="edges")}


def to_graphml(graph: nx.DiGraph) -> str:
    """networkx's GraphML writer, with the XML declaration a file on disk wants."""
    import io

    import networkx

    # XML 1.0 cannot hold a control character, escaped or not: names from the analysed
    # code have theirs written out (`\\x1b`), as every other output shows them.
    clean = networkx.DiGraph()
    clean.graph.update({k: _shown(v) for k, v in graph.graph.items()})
    for node, attrs in graph.nodes(data=True):
        clean.add_node(_shown(node), **{k: _shown(v) for k, v in attrs.items()})
    for a, b, attrs in graph.edges(data=True):
        clean.add_edge(_shown(a), _shown(b), **{k: _shown(v) for k, v in attrs.items()})
    out = io.BytesIO()
    networkx.write_graphml(clean, out, encoding="utf-8", prettyprint=True)
    return out.getvalue().decode("utf-8").rstrip("\n") + "\n"


def _shown(value: Any) -> Any:
    return visible(value) if isinstance(value, str) else value


# Fill and outline per node kind (the report's palette: workers blue, target orange,
# draft violet).
_DOT_STYLE = {
    "entry": ("#e0ecff", "#2f6fdb"),
    "function": ("#ffffff", "#98a2b3"),
    "target": ("#fff0e5", "#e8590c"),
    "draft": ("#f4f1ff", "#7048e8"),
}


def to_dot(graph: nx.DiGraph) -> str:
    """A `digraph` whose nodes also carry the GraphML attributes (kind, path, line, role,
    ...) as DOT attributes, so the text alone says which node is what."""
    g = graph.graph
    lines = [
        f"digraph {_q(g['algorithm'] + ' ' + g['version'])} {{",
        f'  graph [rankdir=TB, label={_q(_title(graph))}, labelloc=t, fontname="DejaVu Sans"];',
        '  node [fontname="DejaVu Sans Mono", fontsize=10];',
        '  edge [color="#98a2b3", arrowsize=0.6, fontsize=9];',
    ]
    for node, attrs in graph.nodes(data=True):
        lines.append(f"  {_q(node)} [{_attr_list(_dot_node(attrs))}];")
    for a, b, attrs in graph.edges(data=True):
        edge: dict[str, Any] = {"kind": attrs["kind"], "line": attrs["line"]}
        if attrs["kind"] == "call":
            edge["label"] = f":{attrs['line']}"
        else:
            edge["style"] = "dashed"
        lines.append(f"  {_q(a)} -> {_q(b)} [{_attr_list(edge)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _title(graph: nx.DiGraph) -> str:
    g = graph.graph
    workers = g["workers"] or "no worker found"
    return f"{g['algorithm']} at {g['version']} · workers: {workers} · {g['source']}"


def _dot_node(attrs: dict[str, Any]) -> dict[str, Any]:
    where = f"{attrs['path'].removeprefix('python/sglang/srt/')}:{attrs['line']}"
    out = dict(attrs)
    if attrs["kind"] == "function":
        fill, stroke = _DOT_STYLE["entry" if attrs["entry"] else "function"]
        style = "rounded,filled" + (",dashed" if attrs["detached"] else "")
        out.update(shape="box", label=f"{attrs['label']}\n{where}")
        out.update(style=style, penwidth=2 if attrs["entry"] == "worker" else 1)
    else:
        fill, stroke = _DOT_STYLE[attrs["role"]]
        text = f"{attrs['role']} · {attrs['label']} · {attrs['status']}\n{where}"
        out.update(shape="note", label=text, style="filled")
    out.update(fillcolor=fill, color=stroke)
    return out


def _attr_list(attrs: dict[str, Any]) -> str:
    parts = []
    for name, value in attrs.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        parts.append(f"{name}={_q(str(value))}")
    return ", ".join(parts)


def _q(text: str) -> str:
    """A DOT double-quoted string: quotes and backslashes escaped, the tool's own line
    breaks as `\\n`, and every other control character written out (`\\x1b`, shown as
    text): names from the analysed code reach the terminal and graphviz alike."""
    lines = [visible(line) for line in text.split("\n")]
    return '"' + "\\n".join(_dot_escape(line) for line in lines) + '"'


def _dot_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')
