"""The built-in layered SVG layout of a call graph, for machines without graphviz `dot`:
rows by call depth, ordered to avoid crossings, every node and member line a link."""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Mapping

from tracker.render.inert import xml_text
from tracker.render.report.graph import CallGraphView, GraphNode, style_of

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
_ROLE_INK = {"target": "#c2410c", "draft": "#5b3cc4"}


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
    fill, stroke, ink = style_of(node)
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
    # Escaped, and well-formed XML whatever a name holds (tracker.render.inert); the
    # tooltips' own line breaks stay.
    return xml_text(text, keep_newlines=True)
