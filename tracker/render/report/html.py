"""Writing the report: index.html, self-contained (CSS, JavaScript and the call graphs
inline), and graphs/*.svg. Each graph is laid out by graphviz `dot` when installed, else
by the built-in layout."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracker.render.inert import visible
from tracker.render.report.document import STATUSES, ReportOptions
from tracker.render.report.dot import svg_dot
from tracker.render.report.graph import CallGraphView
from tracker.render.report.layout import svg_python

LAYOUTS = ("auto", "dot", "python")
# Class names in the page; "n/a" is not a valid CSS class name.
STATUS_CLASS = {
    "ok": "ok",
    "broken": "broken",
    "unknown": "unknown",
    "n/a": "na",
    "absent": "absent",
}


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


@dataclass
class WrittenReport:
    index: Path
    graphs: list[Path]
    engines: set[str]
    notes: list[str]
    bytes: int


def graph_file_name(algorithm: str, version: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", f"{algorithm}-{version}") + ".svg"


# Kept as they are in the page's text: the rest of the control, format and separator
# characters are written out (`\x1b`), as on a terminal.
_KEPT = "\n\t"


def _shown(value: Any) -> Any:
    """`value` with every string in it, keys too, written out visibly: the page's script
    puts the data's names in the page as text."""
    if isinstance(value, str):
        return visible(value, keep=_KEPT)
    if isinstance(value, dict):
        return {_shown(k): _shown(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_shown(v) for v in value]
    return value


def _script_json(data: Any) -> str:
    """JSON safe inside <script type="application/json">: no `</script>` can close it."""
    text = json.dumps(_shown(data), ensure_ascii=False, separators=(",", ":"), sort_keys=True)
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
        # ...and written out visibly first: analysed text holds terminal controls too.
        finalize=lambda v: visible(v, keep=_KEPT) if type(v) is str else v,
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


# What a report wrote in its folder, so that a later one removes only its own old graphs.
REPORT_MANIFEST = ".sglang-tracker-report.json"


def refuse_foreign_index(out_dir: Path) -> None:
    """A folder's `index.html` that no report of this tool wrote (none is recorded in the
    folder's manifest) is the user's: never overwritten. Raises a TrackerError saying so."""
    from tracker.common.errors import TrackerError

    index = out_dir / "index.html"
    if index.exists() and not (out_dir / REPORT_MANIFEST).is_file():
        raise TrackerError(
            f"{index} was not written by tracker report; not overwriting it: "
            "give -o an empty or new folder, or one an earlier report wrote"
        )


def write_report(
    doc: Mapping[str, Any], out_dir: Path, options: ReportOptions | None = None
) -> WrittenReport:
    """index.html (self-contained) and graphs/*.svg (the same graphs, to share alone),
    written as one set with index.html last; graphs an earlier report wrote and this one
    does not are removed, no other file."""
    from tracker.common.fileset import write_file_set

    refuse_foreign_index(out_dir)
    page, svgs, engines, notes = render_html(doc, options)
    files: dict[str, str] = {"index.html": page}
    for name, svg in sorted(svgs.items()):
        files[f"graphs/{name}"] = svg + "\n"
    paths = write_file_set(out_dir, files, last="index.html", manifest=REPORT_MANIFEST)
    index, written = paths[0], paths[1:]
    size = sum(len(text.encode("utf-8")) for text in files.values())
    return WrittenReport(index, written, engines, notes, size)
