"""The call-graph model of the report: the part of one version's call graph that leads from
an algorithm's workers to the functions where it touches the model.

It needs no re-analysis: every requirement site in a snapshot carries its call path (worker
entry -> ... -> the function holding the site), and the union of those chains per algorithm
is exactly the part of the call graph that matters. Both layouts (`layout`, `dot`) draw it
with the palette below.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from tracker.analysis.interface import STATUS_ORDER, Requirement, Site
from tracker.compare.snapshot import Snapshot


def source_link(pattern: str, tag: str, path: str, line: int) -> str:
    return pattern.format(tag=tag, path=path, line=line)


def module_of(path: str) -> str:
    """`python/sglang/srt/x/y.py` -> `sglang.srt.x.y` (the module half of a call-path key)."""
    name = path.removeprefix("python/").removesuffix(".py").replace("/", ".")
    return name.removesuffix(".__init__")


def path_of(module: str) -> str:
    return "python/" + module.replace(".", "/") + ".py"


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


_Uses = dict[tuple[str, str], list[tuple[Requirement, Site]]]  # (role, member) -> sites


@dataclass
class _Paths:
    """The union of an algorithm's call paths: worker entries, runner functions reached
    without a recorded path, caller -> callee edges, and what each function touches."""

    roots: set[str] = field(default_factory=set)
    detached: set[str] = field(default_factory=set)
    edges: dict[tuple[str, str], None] = field(default_factory=dict)  # ordered set
    uses: dict[str, _Uses] = field(default_factory=lambda: defaultdict(dict))

    def functions(self) -> set[str]:
        return set(self.roots) | self.detached | {f for e in self.edges for f in e} | set(self.uses)


def _paths(snap: Snapshot, algorithm: str) -> _Paths:
    paths = _Paths()
    for r in snap.interface.for_algorithm(algorithm):
        for s in r.sites:
            k = _site_key(s)
            if s.call_path:
                paths.roots.add(s.call_path[0])
                for a, b in pairwise(s.call_path):
                    paths.edges[(a, b)] = None
            else:
                # Runner code reached without a recorded path from the worker.
                paths.detached.add(k)
            paths.uses[k].setdefault((r.role, r.member), []).append((r, s))
    return paths


def _member_uses(uses: _Uses, link: Callable[[int], str]) -> list[MemberUse]:
    """The members one function touches, target first, strongest status first."""
    members = []
    for (role, member), found in uses.items():
        first = min(s.line for _, s in found)
        members.append(
            MemberUse(
                role,
                member,
                "call" if any(r.kind == "call" for r, _ in found) else "attribute",
                _strongest(s.status for _, s in found),
                first,
                link(first),
            )
        )
    members.sort(key=lambda m: (m.role != "target", STATUS_ORDER.get(m.status, 9), m.member))
    return members


def _node_classes(k: str, paths: _Paths, members: Sequence[MemberUse]) -> list[str]:
    classes = ["function"]
    if k in paths.roots:
        classes.append("root")
    elif k in paths.detached:
        classes.append("detached")
    if any(m.role == "target" for m in members):
        classes.append("target-site")
    elif members:
        classes.append("draft-site")
    return classes


def build_call_graph(snap: Snapshot, algorithm: str, link_pattern: str) -> CallGraphView:
    """From the call paths stored with each requirement site: no re-analysis needed."""
    view = CallGraphView(algorithm, snap.version)
    # A function's own sites give it a line to link to; others link to their file.
    lines: dict[str, int] = {}
    files: dict[str, str] = {}
    for r in snap.interface.requirements:
        for s in r.sites:
            k = _site_key(s)
            lines[k] = min(lines.get(k, s.line), s.line)
            files[k.partition(":")[0]] = s.path
    paths = _paths(snap, algorithm)
    for k in sorted(paths.functions()):
        module, _, qual = k.partition(":")
        scope, _, name = qual.rpartition(".")
        path = files.get(module, path_of(module))

        def link(line: int, path: str = path) -> str:
            return source_link(link_pattern, snap.version, path, line)

        members = _member_uses(paths.uses.get(k, {}), link)
        classes = _node_classes(k, paths, members)
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
            link(lines.get(k, 1)),
            title,
            tuple(members),
        )
    view.edges = sorted(paths.edges)
    return view


# fill, stroke, text colour per node class (the page's legend uses the same palette).
_NODE_STYLE: dict[str, tuple[str, str, str]] = {
    "function": ("#ffffff", "#98a2b3", "#1d2939"),
    "root": ("#e0ecff", "#2f6fdb", "#102a56"),
    "target-site": ("#fff0e5", "#e8590c", "#5a2300"),
    "draft-site": ("#f4f1ff", "#7048e8", "#2b1a66"),
}


def style_of(node: GraphNode) -> tuple[str, str, str]:
    fill, stroke, ink = _NODE_STYLE["function"]
    if "root" in node.classes:
        fill, stroke, ink = _NODE_STYLE["root"]
    for cls in ("target-site", "draft-site"):
        if cls in node.classes:
            site_fill, stroke, site_ink = _NODE_STYLE[cls]
            if "root" not in node.classes:  # a worker entry keeps its blue fill
                fill, ink = site_fill, site_ink
    return fill, stroke, ink
