"""The call graph through graphviz `dot`: its source, and `dot -Tsvg` trimmed to fit many
graphs on one page."""

from __future__ import annotations

import re
import subprocess

from tracker.render.inert import visible
from tracker.render.report.graph import CallGraphView, style_of


def dot_source(view: CallGraphView) -> str:
    def q(text: str) -> str:
        return '"' + "\\n".join(_dot_text(line) for line in text.split("\n")) + '"'

    lines = [
        "digraph callgraph {",
        '  graph [rankdir=TB, nodesep=0.25, ranksep=0.45, bgcolor="transparent"];',
        '  node [shape=box, style="rounded,filled", fontname="DejaVu Sans Mono", fontsize=10, '
        'margin="0.14,0.06"];',
        '  edge [color="#98a2b3", arrowsize=0.6];',
    ]
    for node in view.nodes.values():
        fill, stroke, ink = style_of(node)
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
    """One line of a DOT string: quoted, and with every control character written out
    (`\\x1b`): graphviz would copy one into the SVG, which XML cannot hold."""
    return visible(text).replace("\\", "\\\\").replace('"', '\\"')


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
