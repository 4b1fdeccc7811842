"""The static HTML report: a compatibility heatmap, a timeline of interface changes and
the workers' call graphs, for people who would rather look than read a terminal table.

Why a module of its own: the text renders answer one question at a time; the report puts
a whole release range on one page that opens from disk (file://) on any machine, mailed
or archived as CI output. So it must load nothing from the network: CSS and JavaScript
are inlined, the call graphs are inline SVG, and a Content-Security-Policy forbids any
other load. Links to the source (the configurable link pattern) are plain `<a href>`s.

Like the other reports it is first a document (plain data: `build_report`), then a
jinja2 render of it (`render_html`, templates in `tracker/render/templates/report/`).

The call graphs need no re-analysis: every requirement site in a snapshot carries its
call path (worker entry -> ... -> the function holding the site), and the union of those
chains per algorithm is exactly the part of the call graph that matters. It is laid out
by graphviz `dot` when installed, else by the small layered layout below.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from tracker import __version__
from tracker.analysis.compat import ModelCheck
from tracker.analysis.interface import STATUS_ORDER, FieldUse, Requirement, Site
from tracker.analysis.vocabulary import CELL_STATUSES
from tracker.compare.changes import MODEL_GROUPS, ChangeKind, ModelEvent
from tracker.compare.diff import Change, diff
from tracker.compare.matrix import Matrix, build_matrix, check_row
from tracker.compare.snapshot import Snapshot
from tracker.render.documents import DEFAULT_LINK, short_path

SCHEMA = "sglang-tracker/report@1"
GRAPH_MODES = ("all", "changes", "none")
LAYOUTS = ("auto", "dot", "python")
STATUSES = CELL_STATUSES
# Class names in the page; "n/a" is not a valid CSS class name.
STATUS_CLASS = {
    "ok": "ok",
    "broken": "broken",
    "unknown": "unknown",
    "n/a": "na",
    "absent": "absent",
}


@dataclass(frozen=True)
class ReportOptions:
    link_pattern: str = DEFAULT_LINK
    template_dir: Path | None = None
    graphs: str = "changes"  # which versions get a call graph: all | changes | none
    layout: str = "auto"  # auto (dot when installed) | dot | python
    # Which rows the heatmap shows: classes checked in these roles (a generative class is
    # a draft row too where the algorithm loads such classes as its draft).
    kinds: tuple[str, ...] = ("target",)


def source_link(pattern: str, tag: str, path: str, line: int) -> str:
    return pattern.format(tag=tag, path=path, line=line)


def module_of(path: str) -> str:
    """`python/sglang/srt/x/y.py` -> `sglang.srt.x.y` (the module half of a call-path key)."""
    name = path.removeprefix("python/").removesuffix(".py").replace("/", ".")
    return name.removesuffix(".__init__")


def path_of(module: str) -> str:
    return "python/" + module.replace(".", "/") + ".py"


# ------------------------------------------------------------------------ call graphs


@dataclass(frozen=True)
class MemberUse:
    """A model member a function touches: listed inside the function's node."""

    role: str  # "target" | "draft"
    member: str
    kind: str  # "call" | "attribute"
    status: str  # required | conditional | optional (strongest over the function's sites)
    line: int
    href: str

    @property
    def text(self) -> str:
        name = f"{self.member}()" if self.kind == "call" else self.member
        return name if self.status == "required" else f"{name} · {self.status}"


@dataclass(frozen=True)
class GraphNode:
    id: str  # the call-path key, "module:Qual.name"
    scope: str  # "EagleDraftWorker" ("" for a module-level function)
    name: str  # "init_lm_head"
    module: str  # "speculative.eagle_worker_v2"
    classes: tuple[str, ...]  # function, root, detached, target-site, draft-site
    href: str
    title: str
    members: tuple[MemberUse, ...] = ()


@dataclass
class CallGraphView:
    """The part of one version's call graph that leads from an algorithm's workers to the
    functions where it touches the model; each of those lists the members it touches."""

    algorithm: str
    version: str
    nodes: dict[str, GraphNode] = field(default_factory=dict)
    edges: list[tuple[str, str]] = field(default_factory=list)  # (caller, callee)

    @property
    def roots(self) -> list[str]:
        return [n.id for n in self.nodes.values() if {"root", "detached"} & set(n.classes)]

    def signature(self) -> tuple[frozenset[str], frozenset[tuple[str, str]]]:
        """What makes two versions' graphs "the same" for `--graphs changes`."""
        return frozenset(self.nodes), frozenset(self.edges)

    def document(self) -> dict[str, Any]:
        return {
            "algorithm": self.algorithm,
            "version": self.version,
            "nodes": [
                {
                    "id": n.id,
                    "scope": n.scope,
                    "name": n.name,
                    "module": n.module,
                    "classes": list(n.classes),
                    "href": n.href,
                    "title": n.title,
                    "members": [
                        {
                            "role": m.role,
                            "member": m.member,
                            "kind": m.kind,
                            "status": m.status,
                            "line": m.line,
                            "href": m.href,
                        }
                        for m in n.members
                    ],
                }
                for n in self.nodes.values()
            ],
            "edges": [list(e) for e in self.edges],
        }

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> CallGraphView:
        view = cls(doc["algorithm"], doc["version"])
        for n in doc["nodes"]:
            members = tuple(MemberUse(**m) for m in n["members"])
            view.nodes[n["id"]] = GraphNode(
                n["id"],
                n["scope"],
                n["name"],
                n["module"],
                tuple(n["classes"]),
                n["href"],
                n["title"],
                members,
            )
        view.edges = [(a, b) for a, b in doc["edges"]]
        return view


def _site_key(site: Site) -> str:
    if site.call_path:
        return site.call_path[-1]
    return f"{module_of(site.path)}:{site.function}"


def _short_module(module: str) -> str:
    """The last two parts of a module name: enough to tell files apart in a node, short
    enough to keep nodes narrow (the tooltip has the full name)."""
    return ".".join(module.removeprefix("sglang.srt.").split(".")[-2:])


def _strongest(statuses: Iterable[str]) -> str:
    return min(statuses, key=lambda s: STATUS_ORDER.get(s, 9))


def build_call_graph(snap: Snapshot, algorithm: str, link_pattern: str) -> CallGraphView:
    """From the call paths stored with each requirement site: no re-analysis needed."""
    view = CallGraphView(algorithm, snap.version)
    # A function's own sites give it a line to link to; others link to their file.
    lines: dict[str, int] = {}
    paths: dict[str, str] = {}
    for r in snap.interface.requirements:
        for s in r.sites:
            k = _site_key(s)
            lines[k] = min(lines.get(k, s.line), s.line)
            paths[k.partition(":")[0]] = s.path
    roots: set[str] = set()
    detached: set[str] = set()
    edges: dict[tuple[str, str], None] = {}
    uses: dict[str, dict[tuple[str, str], list[tuple[Requirement, Site]]]] = defaultdict(dict)
    for r in snap.interface.for_algorithm(algorithm):
        for s in r.sites:
            k = _site_key(s)
            if s.call_path:
                roots.add(s.call_path[0])
                for a, b in pairwise(s.call_path):
                    edges[(a, b)] = None
            else:
                # Runner code reached without a recorded path from the worker.
                detached.add(k)
            uses[k].setdefault((r.role, r.member), []).append((r, s))
    functions = set(roots) | detached | {f for e in edges for f in e} | set(uses)
    for k in sorted(functions):
        module, _, qual = k.partition(":")
        scope, _, name = qual.rpartition(".")
        members = []
        for (role, member), found in uses.get(k, {}).items():
            first = min(s.line for _, s in found)
            members.append(
                MemberUse(
                    role,
                    member,
                    "call" if any(r.kind == "call" for r, _ in found) else "attribute",
                    _strongest(s.status for _, s in found),
                    first,
                    source_link(
                        link_pattern, snap.version, paths.get(module, path_of(module)), first
                    ),
                )
            )
        members.sort(key=lambda m: (m.role != "target", STATUS_ORDER.get(m.status, 9), m.member))
        classes = ["function"]
        if k in roots:
            classes.append("root")
        elif k in detached:
            classes.append("detached")
        if any(m.role == "target" for m in members):
            classes.append("target-site")
        elif members:
            classes.append("draft-site")
        title = k
        if "detached" in classes:
            title += "\n(runner code: no call path from the worker recorded)"
        for m in members:
            title += f"\n{m.role} model: {m.text} (line {m.line})"
        view.nodes[k] = GraphNode(
            k,
            scope,
            name,
            _short_module(module),
            tuple(classes),
            source_link(
                link_pattern, snap.version, paths.get(module, path_of(module)), lines.get(k, 1)
            ),
            title,
            tuple(members),
        )
    view.edges = sorted(edges)
    return view


# -------------------------------------------------------------- layered layout (no dot)

# DejaVu Sans Mono advances 0.602em: character widths at the sizes used below.
_W_SCOPE = 6.7  # 11px
_W_NAME = 7.9  # 13px bold
_W_MODULE = 6.1  # 10px
_W_MEMBER = 6.7  # 11px
_HEAD_H = 50  # scope, name, module
_MEMBER_H = 16
_V_GAP = 46
_H_GAP = 26
_MARGIN = 14

# fill, stroke, text colour per node class (the page's legend uses the same palette).
_NODE_STYLE: dict[str, tuple[str, str, str]] = {
    "function": ("#ffffff", "#98a2b3", "#1d2939"),
    "root": ("#e0ecff", "#2f6fdb", "#102a56"),
    "target-site": ("#fff0e5", "#e8590c", "#5a2300"),
    "draft-site": ("#f4f1ff", "#7048e8", "#2b1a66"),
}
_ROLE_INK = {"target": "#c2410c", "draft": "#5b3cc4"}


def _style_of(node: GraphNode) -> tuple[str, str, str]:
    fill, stroke, ink = _NODE_STYLE["function"]
    if "root" in node.classes:
        fill, stroke, ink = _NODE_STYLE["root"]
    for cls in ("target-site", "draft-site"):
        if cls in node.classes:
            site_fill, stroke, site_ink = _NODE_STYLE[cls]
            if "root" not in node.classes:  # a worker entry keeps its blue fill
                fill, ink = site_fill, site_ink
    return fill, stroke, ink


def _node_size(node: GraphNode) -> tuple[float, float]:
    width = max(
        len(node.scope) * _W_SCOPE,
        len(node.name) * _W_NAME,
        len(node.module) * _W_MODULE,
        max((len(m.text) * _W_MEMBER + 14 for m in node.members), default=0.0),
    )
    height = _HEAD_H + (len(node.members) * _MEMBER_H + 8 if node.members else 0)
    return width + 24, float(height)


def layers_of(view: CallGraphView) -> list[list[str]]:
    """Rows by breadth-first depth from the worker roots (top to bottom, as a call chain
    reads). Within a row, nodes are ordered by the barycentre of their neighbours (a few
    sweeps both ways), which removes most edge crossings of these small graphs."""
    succ: dict[str, list[str]] = defaultdict(list)
    pred: dict[str, list[str]] = defaultdict(list)
    for a, b in view.edges:
        succ[a].append(b)
        pred[b].append(a)
    depth: dict[str, int] = {}
    queue: deque[str] = deque()
    for r in sorted(view.roots):
        depth[r] = 0
        queue.append(r)
    while queue:
        fn = queue.popleft()
        for nxt in succ[fn]:
            if nxt not in depth:
                depth[nxt] = depth[fn] + 1
                queue.append(nxt)
    for n in view.nodes:  # unreachable (a cycle without a root): never with call paths
        depth.setdefault(n, 0)
    rows: list[list[str]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    for n in sorted(view.nodes, key=lambda i: (view.nodes[i].module, i)):
        rows[depth[n]].append(n)
    for _ in range(4):
        for i in range(1, len(rows)):
            rows[i] = _by_barycentre(rows[i], rows[:i], pred)
        for i in range(len(rows) - 2, -1, -1):
            rows[i] = _by_barycentre(rows[i], rows[i + 1 :], succ)
    return rows


def _by_barycentre(
    row: list[str], others: list[list[str]], neighbours: Mapping[str, list[str]]
) -> list[str]:
    position = {n: i / max(len(r), 1) for r in others for i, n in enumerate(r)}

    def weight(item: tuple[int, str]) -> tuple[float, int]:
        i, n = item
        near = [position[m] for m in neighbours.get(n, []) if m in position]
        return (sum(near) / len(near) if near else i / max(len(row), 1), i)

    return [n for _, n in sorted(enumerate(row), key=weight)]


def svg_python(view: CallGraphView, prefix: str) -> str:
    """The graph as SVG: rows of nodes top to bottom, edges as curves, every node and
    every member line a link to its source."""
    rows = layers_of(view)
    size = {n: _node_size(view.nodes[n]) for n in view.nodes}
    row_w = [sum(size[n][0] for n in r) + _H_GAP * max(len(r) - 1, 0) for r in rows]
    row_h = [max((size[n][1] for n in r), default=0.0) for r in rows]
    total_w = max(row_w, default=0.0) + 2 * _MARGIN
    total_h = sum(row_h) + _V_GAP * max(len(rows) - 1, 0) + 2 * _MARGIN
    box: dict[str, tuple[float, float, float, float]] = {}  # id -> x, y, w, h
    y = float(_MARGIN)
    for r, width, height in zip(rows, row_w, row_h, strict=True):
        x = (total_w - width) / 2
        for n in r:
            w, h = size[n]
            box[n] = (x, y, w, h)
            x += w + _H_GAP
        y += height + _V_GAP
    esc = _xml
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="callgraph" '
        f'viewBox="0 0 {total_w:.0f} {total_h:.0f}" width="{total_w:.0f}" '
        f'height="{total_h:.0f}" role="img" '
        f'aria-label="{esc(view.algorithm)} call graph at {esc(view.version)}" '
        'font-family="DejaVu Sans Mono, Menlo, Consolas, monospace">',
        f"<title>{esc(view.algorithm)} call graph at {esc(view.version)}</title>",
        f'<defs><marker id="{prefix}-arrow" viewBox="0 0 10 10" refX="9" refY="5" '
        'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M0,0 L10,5 L0,10 z" fill="#667085"/></marker></defs>',
        '<g class="edges" fill="none" stroke="#98a2b3" stroke-width="1.3">',
    ]
    for a, b in view.edges:
        ax, ay, aw, ah = box[a]
        bx, by, bw, bh = box[b]
        if by > ay + ah:  # downwards, the usual case: bottom centre to top centre
            x1, y1, x2, y2 = ax + aw / 2, ay + ah, bx + bw / 2, by - 1
            bend = max((y2 - y1) / 2, 20.0)
            d = f"M{x1:.1f},{y1:.1f} C{x1:.1f},{y1 + bend:.1f} {x2:.1f},{y2 - bend:.1f} "
        else:  # a call back up or across a row: loop out on the right
            x1, y1, x2, y2 = ax + aw, ay + ah / 2, bx + bw + 1, by + bh / 2
            d = f"M{x1:.1f},{y1:.1f} C{x1 + 60:.1f},{y1:.1f} {x2 + 60:.1f},{y2:.1f} "
        out.append(
            f'<path class="edge" data-from="{esc(a)}" data-to="{esc(b)}" '
            f'd="{d}{x2:.1f},{y2:.1f}" marker-end="url(#{prefix}-arrow)"/>'
        )
    out.append("</g>")
    out.append('<g class="nodes">')
    for r in rows:
        for n in r:
            out.append(_svg_node(view.nodes[n], box[n]))
    out.append("</g></svg>")
    return "\n".join(out)


def _svg_node(node: GraphNode, at: tuple[float, float, float, float]) -> str:
    esc = _xml
    x, y, w, h = at
    fill, stroke, ink = _style_of(node)
    width = 2.2 if {"target-site", "root"} & set(node.classes) else 1.2
    dash = ' stroke-dasharray="5 3"' if "detached" in node.classes else ""
    classes = " ".join(("node", *node.classes))
    name_y = 30 if node.scope else 26
    parts = [
        f'<g class="{esc(classes)}" data-id="{esc(node.id)}" '
        f'transform="translate({x:.1f},{y:.1f})">',
        f"<title>{esc(node.title)}</title>",
        f'<rect width="{w:.1f}" height="{h:.0f}" rx="7" fill="{fill}" stroke="{stroke}" '
        f'stroke-width="{width}"{dash}/>',
        f'<a href="{esc(node.href)}" target="_blank">',
    ]
    if node.scope:
        parts.append(
            f'<text x="12" y="14" font-size="11" fill="{ink}" fill-opacity="0.8">'
            f"{esc(node.scope)}</text>"
        )
    parts.append(
        f'<text class="name" x="12" y="{name_y}" font-size="13" font-weight="bold" '
        f'fill="{ink}">{esc(node.name)}</text>'
    )
    parts.append(
        f'<text x="12" y="{_HEAD_H - 6}" font-size="10" fill="{ink}" fill-opacity="0.6">'
        f"{esc(node.module)}</text></a>"
    )
    if node.members:
        parts.append(
            f'<line x1="1" x2="{w - 1:.1f}" y1="{_HEAD_H + 2}" y2="{_HEAD_H + 2}" '
            f'stroke="{stroke}" stroke-opacity="0.35"/>'
        )
    for i, m in enumerate(node.members):
        my = _HEAD_H + 16 + i * _MEMBER_H
        colour = _ROLE_INK.get(m.role, ink)
        weight = ' font-weight="bold"' if m.status == "required" else ""
        opacity = ' fill-opacity="0.7"' if m.status == "optional" else ""
        parts.append(
            f'<a class="member {esc(m.role)} {esc(m.status)}" href="{esc(m.href)}" '
            f'target="_blank"><circle cx="15" cy="{my - 4}" r="3.5" fill="{colour}"/>'
            f'<text x="24" y="{my}" font-size="11" fill="{colour}"{weight}{opacity}>'
            f"{esc(m.text)}</text></a>"
        )
    parts.append("</g>")
    return "".join(parts)


def _xml(text: str) -> str:
    return html.escape(text, quote=True)


# ------------------------------------------------------------------- graphviz (dot)


def dot_source(view: CallGraphView) -> str:
    def q(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'

    lines = [
        "digraph callgraph {",
        '  graph [rankdir=TB, nodesep=0.25, ranksep=0.45, bgcolor="transparent"];',
        '  node [shape=box, style="rounded,filled", fontname="DejaVu Sans Mono", fontsize=10, '
        'margin="0.14,0.06"];',
        '  edge [color="#98a2b3", arrowsize=0.6];',
    ]
    for node in view.nodes.values():
        fill, stroke, ink = _style_of(node)
        style = "rounded,filled" + (",dashed" if "detached" in node.classes else "")
        label = "\\n".join(
            _dot_text(t)
            for t in (node.scope, node.name, node.module, *(f"• {m.text}" for m in node.members))
            if t
        )
        attrs = {
            "href": node.href,
            "target": "_blank",
            "tooltip": node.title,
            "class": " ".join(("node", *node.classes)),
            "fillcolor": fill,
            "color": stroke,
            "fontcolor": ink,
            "style": style,
            "penwidth": "2" if {"target-site", "root"} & set(node.classes) else "1",
        }
        rendered = ", ".join([f'label="{label}"', *(f"{k}={q(v)}" for k, v in attrs.items())])
        lines.append(f"  {q(node.id)} [{rendered}];")
    for a, b in view.edges:
        lines.append(f"  {q(a)} -> {q(b)};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _dot_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def svg_dot(view: CallGraphView, prefix: str, dot: str) -> str:
    """`dot -Tsvg`, trimmed to the <svg> element and with ids made unique per graph (many
    graphs share one page)."""
    done = subprocess.run(
        [dot, "-Tsvg"],
        input=dot_source(view),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0 or "<svg" not in done.stdout:
        raise RuntimeError(done.stderr.strip() or f"dot exited with {done.returncode}")
    svg = done.stdout[done.stdout.index("<svg") :]
    svg = re.sub(r"<!--.*?-->", "", svg, flags=re.S)
    svg = re.sub(r'\bid="([^"]*)"', lambda m: f'id="{prefix}-{m.group(1)}"', svg)
    svg = re.sub(r"url\(#([^)]*)\)", lambda m: f"url(#{prefix}-{m.group(1)})", svg)
    return svg.replace("<svg ", '<svg class="callgraph" ', 1).strip()


def render_svg(view: CallGraphView, prefix: str, layout: str) -> tuple[str, str, str]:
    """(svg, engine used, note): `dot` when asked for or installed, else the Python layout
    (also when dot fails: a report with a plainer graph beats no report)."""
    dot = shutil.which("dot") if layout in ("auto", "dot") else None
    if layout == "dot" and dot is None:
        return svg_python(view, prefix), "python", "graphviz dot is not installed"
    if dot is not None:
        try:
            return svg_dot(view, prefix, dot), "dot", ""
        except (OSError, RuntimeError, subprocess.TimeoutExpired) as exc:
            return svg_python(view, prefix), "python", f"dot failed: {exc}"
    return svg_python(view, prefix), "python", ""


# ----------------------------------------------------------------------- the document


def _site_doc(site: Site, tag: str, pattern: str) -> dict[str, Any]:
    return {
        "path": short_path(site.path),
        "line": site.line,
        "function": site.function,
        "condition": site.condition,
        "status": site.status,
        "url": source_link(pattern, tag, site.path, site.line),
    }


# The report's glyphs for a change's direction (ChangeKind.sign): a true minus sign.
_GLYPH = {"+": "+", "-": "−"}


def _change_doc(change: Change, tag: str, previous: str, pattern: str) -> dict[str, Any]:
    side = change.new if change.new is not None else change.old
    sites: list[dict[str, Any]] = []
    status = side.status if isinstance(side, Requirement) else ""
    if isinstance(side, Requirement | FieldUse):
        # A removed member's sites are the old version's: link to that tag.
        at = tag if change.new is not None else previous
        sites = [_site_doc(s, at, pattern) for s in side.sites[:3]]
    return {
        "kind": change.kind,
        "sign": _GLYPH.get(change.kind.sign, "~"),
        "subject": change.subject,
        "role": change.role,
        "status": status,
        "message": change.message,
        "breaking": change.breaking,
        "sites": sites,
    }


def _model_event_doc(change: Change) -> dict[str, Any]:
    old = change.old if isinstance(change.old, ModelCheck) else None
    new = change.new if isinstance(change.new, ModelCheck) else None
    members = (old.missing if change.kind is ChangeKind.MODEL_WRAPPER_FIXED and old else ()) or (
        new.missing if new else ()
    )
    # A contract break or fix names the rules (as the matrix events do).
    contract = old.contract if change.kind is ChangeKind.MODEL_WRAPPER_CONTRACT_FIXED and old else (
        new.contract if new else ()
    )
    members += tuple(sorted({f"contract: {f.headline}" for f in contract}))
    inner = sorted(
        {f"self.{d.attribute} ({d.inner_class})" for d in (new.delegations if new else ())}
    )
    return {
        "model": change.subject,
        "members": list(members),
        "notable": change.notable,
        "inner": inner,
    }


def _timeline(
    snapshots: Sequence[Snapshot], algorithm: str, options: ReportOptions
) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    pattern = options.link_pattern
    for prev, cur in pairwise(snapshots):
        if algorithm not in prev.interface.algorithms + cur.interface.algorithms:
            continue
        d = diff(prev.interface, prev.compat, cur.interface, cur.compat, (algorithm,))
        interface = [
            _change_doc(c, cur.version, prev.version, pattern)
            for c in d.changes
            if not c.kind.model_event
        ]
        models: dict[str, list[dict[str, Any]]] = {g: [] for g in MODEL_GROUPS}
        for c in d.changes:
            group = c.kind.group
            check = c.new if isinstance(c.new, ModelCheck) else c.old
            if not c.kind.model_event or not isinstance(check, ModelCheck):
                continue
            if check.role in options.kinds:
                models[group].append(_model_event_doc(c))
        if interface or any(models.values()):
            entries.append(
                {
                    "version": cur.version,
                    "previous": prev.version,
                    "interface": interface,
                    "models": models,
                }
            )
    return entries


def _baseline(snap: Snapshot, algorithm: str, pattern: str) -> list[dict[str, Any]]:
    """What the algorithm asks of the models at the first version: the timeline's start."""
    out = []
    for r in sorted(
        snap.interface.for_algorithm(algorithm),
        key=lambda r: (r.role != "target", STATUS_ORDER.get(r.status, 9), r.member),
    ):
        out.append(
            {
                "role": r.role,
                "member": r.member,
                "kind": r.kind,
                "status": r.status,
                "sites": [_site_doc(s, snap.version, pattern) for s in r.sites[:3]],
            }
        )
    return out


def _graph_versions(
    snapshots: Sequence[Snapshot],
    algorithm: str,
    mode: str,
    views: Mapping[str, CallGraphView],
    timeline: list[dict[str, Any]],
) -> dict[str, list[str]]:
    """version -> why it gets a graph (in version order)."""
    present = [s.version for s in snapshots if algorithm in s.interface.algorithms]
    if mode == "none" or not present:
        return {}
    if mode == "all":
        return {v: ["every release"] for v in present}
    reasons: dict[str, list[str]] = defaultdict(list)
    reasons[present[0]].append("first release in range")
    changed = {e["version"] for e in timeline if e["interface"]}
    previous: CallGraphView | None = None
    for v in present:
        view = views[v]
        if v in changed:
            reasons[v].append("interface changed")
        if previous is not None and view.signature() != previous.signature():
            reasons[v].append("call graph changed")
        previous = view
    reasons[present[-1]].append("newest")
    return {v: reasons[v] for v in present if v in reasons}


def _algorithm_doc(
    snapshots: Sequence[Snapshot], algorithm: str, options: ReportOptions
) -> dict[str, Any]:
    pattern = options.link_pattern
    m: Matrix = build_matrix(snapshots, algorithm, options.kinds)
    versions = m.versions
    checks: dict[str, dict[str, ModelCheck]] = {
        s.version: {check_row(c): c for c in s.compat.checks if c.algorithm == algorithm}
        for s in snapshots
    }
    # One table of distinct cell details; cells refer to it by index (the same missing
    # members repeat across most releases, so this keeps the page small).
    details: list[dict[str, Any]] = []
    detail_index: dict[str, int] = {}
    wanted: dict[str, set[tuple[str, str]]] = defaultdict(set)  # version -> (role, member)
    events: dict[str, dict[str, str]] = defaultdict(dict)
    for e in m.events:
        events[e.model][e.version] = e.kind
    rows = []
    for model in m.models:
        cells = []
        for v in versions:
            status = m.cells[model][v]
            cell: dict[str, Any] = {
                "status": status,
                "event": events.get(model, {}).get(v, ""),
                "detail": None,  # index into `details` for broken and unknown cells
            }
            check = checks[v].get(model)
            if check is not None and status in ("broken", "unknown"):
                detail = {
                    "role": check.role,
                    "missing": list(check.missing),
                    "unknown": [
                        {"member": p.member, "why": p.where}
                        for p in check.provisions
                        if p.how == "unknown"
                    ],
                    "delegations": [
                        {"member": d.member, "attribute": d.attribute, "inner": d.inner_class}
                        for d in check.delegations
                    ],
                }
                text = json.dumps(detail, sort_keys=True)
                if text not in detail_index:
                    detail_index[text] = len(details)
                    details.append(detail)
                cell["detail"] = detail_index[text]
                wanted[v] |= {(check.role, x) for x in (*check.missing, *check.unknown)}
            cells.append(cell)
        broken = sum(1 for c in cells if c["status"] == "broken")
        rows.append(
            {
                "model": model,
                "class": m.classes.get(model, model),
                "role": m.roles.get(model, ""),
                "kind": m.kinds.get(model, ""),
                "cells": cells,
                "broken": broken,
                "first": next(
                    (i for i, c in enumerate(cells) if c["status"] != "absent"), len(cells)
                ),
                "newest": cells[-1]["status"] if cells else "absent",
                "events": sorted({c["event"] for c in cells} - {""}),
            }
        )
    sites: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for snap in snapshots:
        need = wanted.get(snap.version)
        if not need:
            continue
        per: dict[str, list[dict[str, Any]]] = {}
        for r in snap.interface.for_algorithm(algorithm):
            if (r.role, r.member) in need:
                per.setdefault(f"{r.role}:{r.member}", []).extend(
                    _site_doc(s, snap.version, pattern) for s in r.sites
                )
        sites[snap.version] = per
    timeline = _timeline(snapshots, algorithm, options)
    views = {
        s.version: build_call_graph(s, algorithm, pattern)
        for s in snapshots
        if algorithm in s.interface.algorithms and options.graphs != "none"
    }
    chosen = _graph_versions(snapshots, algorithm, options.graphs, views, timeline)
    graphs = [
        {"version": v, "reasons": why, "graph": views[v].document()} for v, why in chosen.items()
    ]
    counts = {
        v: {s: sum(1 for model in m.models if m.cells[model][v] == s) for s in STATUSES}
        for v in versions
    }
    newest = versions[-1]
    event_counts = {
        k: sum(1 for e in m.events if e.kind == k) for k in (ModelEvent.BROKE, ModelEvent.FIXED)
    }
    notable = [
        {"version": e["version"], "kind": kind, **item}
        for e in timeline
        for kind in ("broke", "new_unsupported")
        for item in e["models"][kind]
        if kind == "broke" or item["notable"]
    ]
    present = [s.version for s in snapshots if algorithm in s.interface.algorithms]
    first = next((s for s in snapshots if algorithm in s.interface.algorithms), None)
    return {
        "name": algorithm,
        "versions": versions,
        "present": present,
        "workers": {s.version: list(s.interface.workers.get(algorithm, ())) for s in snapshots},
        "rows": rows,
        "details": details,
        "sites": sites,
        "counts": counts,
        "summary": {
            "newest": newest,
            "models": sum(1 for r in rows if r["newest"] != "absent"),
            "at_newest": counts[newest] if versions else {},
            "events": event_counts,
            "interface_changes": sum(1 for e in timeline if e["interface"]),
        },
        "notable": notable,
        "baseline": {
            "version": first.version if first else "",
            "members": _baseline(first, algorithm, pattern) if first else [],
        },
        "timeline": timeline,
        "interface_changed": sorted(
            {e["version"] for e in timeline if e["interface"]}, key=versions.index
        ),
        "graphs": graphs,
    }


def build_report(
    snapshots: Sequence[Snapshot],
    algorithms: Sequence[str],
    source: str,
    options: ReportOptions | None = None,
) -> dict[str, Any]:
    """The report as plain data: per algorithm the heatmap rows, cell details, sites,
    timeline and call graphs (as nodes and edges; SVG is the render's business)."""
    options = options or ReportOptions()
    if options.graphs not in GRAPH_MODES:
        raise ValueError(f"graphs must be one of {', '.join(GRAPH_MODES)}")
    if not snapshots:
        raise ValueError("a report needs at least one snapshot")
    versions = [s.version for s in snapshots]
    return {
        "schema": SCHEMA,
        "tool": __version__,
        "source": source,
        "range": f"{versions[0]}..{versions[-1]}" if len(versions) > 1 else versions[0],
        "versions": versions,
        "kinds": list(options.kinds),
        "link_pattern": options.link_pattern,
        "graphs": options.graphs,
        "algorithms": [_algorithm_doc(snapshots, a, options) for a in algorithms],
    }


# --------------------------------------------------------------------------- render


@dataclass
class WrittenReport:
    index: Path
    graphs: list[Path]
    engines: set[str]
    notes: list[str]
    bytes: int


def graph_file_name(algorithm: str, version: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", f"{algorithm}-{version}") + ".svg"


def _script_json(data: Any) -> str:
    """JSON safe inside <script type="application/json">: no `</script>` can close it."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_html(
    doc: Mapping[str, Any], options: ReportOptions | None = None
) -> tuple[str, dict[str, str], set[str], list[str]]:
    """(page, {file name: svg}, layout engines used, notes)."""
    import jinja2
    from markupsafe import Markup

    options = options or ReportOptions()
    loaders: list[jinja2.BaseLoader] = []
    if options.template_dir is not None:
        loaders.append(jinja2.FileSystemLoader(str(options.template_dir)))
    loaders.append(jinja2.PackageLoader("tracker.render", "templates"))
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders),
        undefined=jinja2.StrictUndefined,
        autoescape=True,  # HTML: every value is escaped unless marked safe below
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["status_class"] = lambda s: STATUS_CLASS.get(str(s), "absent")
    svgs: dict[str, str] = {}
    inline: dict[tuple[str, str], Markup] = {}
    engines: set[str] = set()
    notes: list[str] = []
    for algo in doc["algorithms"]:
        for i, g in enumerate(algo["graphs"]):
            view = CallGraphView.from_document(g["graph"])
            prefix = re.sub(r"[^A-Za-z0-9]", "", f"g{algo['name']}{i}")
            svg, engine, note = render_svg(view, prefix, options.layout)
            engines.add(engine)
            if note and note not in notes:
                notes.append(note)
            svgs[graph_file_name(algo["name"], g["version"])] = svg
            inline[(algo["name"], g["version"])] = Markup(svg)
    assert env.loader is not None
    css, _, _ = env.loader.get_source(env, "report/report.css")
    js, _, _ = env.loader.get_source(env, "report/report.js")
    data = {
        a["name"]: {
            "versions": a["versions"],
            "details": a["details"],
            "sites": a["sites"],
            "workers": a["workers"],
        }
        for a in doc["algorithms"]
    }
    page = env.get_template("report/index.html.j2").render(
        doc=doc,
        svgs=inline,
        graph_file=graph_file_name,
        engines=sorted(engines),
        css=Markup(css),
        js=Markup(js),
        data=Markup(_script_json(data)),
        statuses=STATUSES,
    )
    return page, svgs, engines, notes


def write_report(
    doc: Mapping[str, Any], out_dir: Path, options: ReportOptions | None = None
) -> WrittenReport:
    """index.html (self-contained) and graphs/*.svg (the same graphs, to share alone)."""
    from tracker.common.atomic import write_text_atomic

    page, svgs, engines, notes = render_html(doc, options)
    out_dir.mkdir(parents=True, exist_ok=True)
    index = out_dir / "index.html"
    write_text_atomic(index, page)
    written = []
    graph_dir = out_dir / "graphs"
    if svgs:
        graph_dir.mkdir(exist_ok=True)
    for name, svg in sorted(svgs.items()):
        target = graph_dir / name
        write_text_atomic(target, svg + "\n")
        written.append(target)
    # Graphs of an earlier run with other versions would be stale next to this index.
    if graph_dir.is_dir():
        for old in graph_dir.glob("*.svg"):
            if old.name not in svgs:
                old.unlink()
    size = index.stat().st_size + sum(p.stat().st_size for p in written)
    return WrittenReport(index, written, engines, notes, size)


def present_algorithms(snapshots: Sequence[Snapshot]) -> tuple[str, ...]:
    """Every algorithm any of the snapshots has, in first-seen enum order."""
    return tuple(dict.fromkeys(a for s in snapshots for a in s.interface.algorithms))
