"""The report as plain data (`build_report`): per algorithm the heatmap rows, cell details,
sites, timeline of interface changes and call graphs (as nodes and edges; drawing them is
the HTML render's business), so the page is a template over one document."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
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
from tracker.render.report.graph import CallGraphView, build_call_graph, source_link

SCHEMA = "sglang-tracker/report@1"
GRAPH_MODES = ("all", "changes", "none")
STATUSES = CELL_STATUSES


@dataclass(frozen=True)
class ReportOptions:
    link_pattern: str = DEFAULT_LINK
    template_dir: Path | None = None
    graphs: str = "changes"  # which versions get a call graph: all | changes | none
    layout: str = "auto"  # auto (dot when installed) | dot | python
    # Which rows the heatmap shows: classes checked in these roles (a generative class is
    # a draft row too where the algorithm loads such classes as its draft).
    kinds: tuple[str, ...] = ("target",)


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
    contract = (
        old.contract
        if change.kind is ChangeKind.MODEL_WRAPPER_CONTRACT_FIXED and old
        else (new.contract if new else ())
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


def _cell_detail(check: ModelCheck) -> dict[str, Any]:
    """Why a cell is broken or unknown: what the model lacks, and where that is unclear."""
    return {
        "role": check.role,
        "missing": list(check.missing),
        "unknown": [
            {"member": p.member, "why": p.where} for p in check.provisions if p.how == "unknown"
        ],
        "delegations": [
            {"member": d.member, "attribute": d.attribute, "inner": d.inner_class}
            for d in check.delegations
        ],
    }


@dataclass
class _Heatmap:
    """The heatmap's rows, with one table of distinct cell details that cells refer to by
    index (the same missing members repeat across most releases, so this keeps the page
    small), and per version the (role, member) pairs whose sites the details link to."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    details: list[dict[str, Any]] = field(default_factory=list)
    detail_index: dict[str, int] = field(default_factory=dict)
    wanted: dict[str, set[tuple[str, str]]] = field(default_factory=lambda: defaultdict(set))

    def detail(self, check: ModelCheck) -> int:
        detail = _cell_detail(check)
        text = json.dumps(detail, sort_keys=True)
        if text not in self.detail_index:
            self.detail_index[text] = len(self.details)
            self.details.append(detail)
        return self.detail_index[text]


def _row_doc(m: Matrix, model: str, cells: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "model": model,
        "class": m.classes.get(model, model),
        "role": m.roles.get(model, ""),
        "kind": m.kinds.get(model, ""),
        "cells": cells,
        "broken": sum(1 for c in cells if c["status"] == "broken"),
        "first": next((i for i, c in enumerate(cells) if c["status"] != "absent"), len(cells)),
        "newest": cells[-1]["status"] if cells else "absent",
        "events": sorted({c["event"] for c in cells} - {""}),
    }


def _heatmap(snapshots: Sequence[Snapshot], algorithm: str, m: Matrix) -> _Heatmap:
    checks: dict[str, dict[str, ModelCheck]] = {
        s.version: {check_row(c): c for c in s.compat.checks if c.algorithm == algorithm}
        for s in snapshots
    }
    events: dict[str, dict[str, str]] = defaultdict(dict)
    for e in m.events:
        events[e.model][e.version] = e.kind
    heat = _Heatmap()
    for model in m.models:
        cells = []
        for v in m.versions:
            status = m.cells[model][v]
            cell: dict[str, Any] = {
                "status": status,
                "event": events.get(model, {}).get(v, ""),
                "detail": None,  # index into `details` for broken and unknown cells
            }
            check = checks[v].get(model)
            if check is not None and status in ("broken", "unknown"):
                cell["detail"] = heat.detail(check)
                heat.wanted[v] |= {(check.role, x) for x in (*check.missing, *check.unknown)}
            cells.append(cell)
        heat.rows.append(_row_doc(m, model, cells))
    return heat


def _wanted_sites(
    snapshots: Sequence[Snapshot],
    algorithm: str,
    wanted: Mapping[str, set[tuple[str, str]]],
    pattern: str,
) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """version -> "role:member" -> the sites of the members the cell details name."""
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
    return sites


def _graphs(
    snapshots: Sequence[Snapshot],
    algorithm: str,
    options: ReportOptions,
    timeline: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    views = {
        s.version: build_call_graph(s, algorithm, options.link_pattern)
        for s in snapshots
        if algorithm in s.interface.algorithms and options.graphs != "none"
    }
    chosen = _graph_versions(snapshots, algorithm, options.graphs, views, timeline)
    return [
        {"version": v, "reasons": why, "graph": views[v].document()} for v, why in chosen.items()
    ]


def _notable(timeline: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every model that broke, and new models that came unsupported and are notable."""
    return [
        {"version": e["version"], "kind": kind, **item}
        for e in timeline
        for kind in ("broke", "new_unsupported")
        for item in e["models"][kind]
        if kind == "broke" or item["notable"]
    ]


def _algorithm_doc(
    snapshots: Sequence[Snapshot], algorithm: str, options: ReportOptions
) -> dict[str, Any]:
    pattern = options.link_pattern
    m: Matrix = build_matrix(snapshots, algorithm, options.kinds)
    versions = m.versions
    heat = _heatmap(snapshots, algorithm, m)
    sites = _wanted_sites(snapshots, algorithm, heat.wanted, pattern)
    timeline = _timeline(snapshots, algorithm, options)
    graphs = _graphs(snapshots, algorithm, options, timeline)
    counts = {v: m.counts(v, STATUSES) for v in versions}
    newest = versions[-1]
    event_counts = {
        k: sum(1 for e in m.events if e.kind == k) for k in (ModelEvent.BROKE, ModelEvent.FIXED)
    }
    present = [s.version for s in snapshots if algorithm in s.interface.algorithms]
    first = next((s for s in snapshots if algorithm in s.interface.algorithms), None)
    return {
        "name": algorithm,
        "versions": versions,
        "present": present,
        "workers": {s.version: list(s.interface.workers.get(algorithm, ())) for s in snapshots},
        "rows": heat.rows,
        "details": heat.details,
        "sites": sites,
        "counts": counts,
        "summary": {
            "newest": newest,
            "models": sum(1 for r in heat.rows if r["newest"] != "absent"),
            "at_newest": counts[newest] if versions else {},
            "events": event_counts,
            "interface_changes": sum(1 for e in timeline if e["interface"]),
        },
        "notable": _notable(timeline),
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


def present_algorithms(snapshots: Sequence[Snapshot]) -> tuple[str, ...]:
    """Every algorithm any of the snapshots has, in first-seen enum order."""
    return tuple(dict.fromkeys(a for s in snapshots for a in s.interface.algorithms))
