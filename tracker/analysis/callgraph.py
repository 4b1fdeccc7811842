"""The call graph of one version: which function can call which (networkx stays here).

Edges come from `self.m()` through the class hierarchy, `super().m()`, calls through
attributes whose class is known from construction or annotation
(`self.model_runner = ModelRunner(...)`; `target_worker: TpModelWorker`), calls of
imported functions, and constructions (`Cls(...)` -> `Cls.__init__`). It over-approximates
where the code is dynamic and says nothing where the receiver is unknown.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from tracker.analysis.index import VersionIndex, key, split_key
from tracker.extract.facts import Assign, Call

if TYPE_CHECKING:
    import networkx as nx


class CallGraph:
    """Edges are resolved lazily, when a walk first reaches a function: a worker reaches a
    few hundred functions of the tens of thousands a release defines."""

    def __init__(self, index: VersionIndex) -> None:
        self.index = index
        # Plain adjacency (caller -> callee -> line), in the order the edges are found:
        # importing networkx costs more than a whole warm analysis, and only the graph
        # export needs it (`graph`, built on demand from the same edges in the same order).
        self._edges: dict[str, dict[str, int]] = {}
        self._found: list[tuple[str, str]] = []  # every edge, in the order found
        self._local_types: dict[str, dict[tuple[str, str], list[str]]] = {}
        self._calls: dict[str, list[Call]] = {}
        for facts in index.iter_modules():
            module = facts.module_name
            for call in facts.calls:
                if call.context.scope:
                    self._calls.setdefault(key(module, call.context.scope), []).append(call)
        self._expanded: set[str] = set()

    def successors(self, caller: str) -> list[str]:
        if caller not in self._expanded:
            self._expanded.add(caller)
            edges = self._edges.setdefault(caller, {})
            if caller in self.index.functions:
                module, scope = split_key(caller)
                local_types = self.local_types(module)
                for call in self._calls.get(caller, ()):
                    # Sorted: sets iterate in a per-process hash order, and the first edge
                    # decides between equally short paths; output must not depend on it.
                    for callee in sorted(set(self.callees(module, scope, call, local_types))):
                        if callee != caller and callee not in edges:
                            edges[callee] = call.line
                            self._edges.setdefault(callee, {})
                            self._found.append((caller, callee))
        return list(self._edges[caller])

    @property
    def graph(self) -> nx.DiGraph:
        """The functions expanded so far and their edges (`line` of the call) as a
        networkx graph, nodes and edges in the order they were found."""
        import networkx

        graph: nx.DiGraph = networkx.DiGraph()
        graph.add_nodes_from(self._edges)
        graph.add_edges_from((a, b, {"line": self._edges[a][b]}) for a, b in self._found)
        return graph

    def calls_in(self, function: str) -> list[Call]:
        return self._calls.get(function, [])

    def shortest_paths(self, *tiers: Iterable[str]) -> dict[str, list[str]]:
        """Breadth-first from the roots: function -> a shortest path from some root.

        Roots come in tiers: a function reached from the first tier keeps that path even
        when a later tier reaches it sooner (a worker's own methods explain a path better
        than the methods it inherits)."""
        paths: dict[str, list[str]] = {}
        for roots in tiers:
            frontier = []
            for root in sorted(set(roots)):
                if root not in paths:
                    paths[root] = [root]
                    frontier.append(root)
            while frontier:
                following = []
                for fn in frontier:
                    for nxt in self.successors(fn):
                        if nxt not in paths:
                            paths[nxt] = [*paths[fn], nxt]
                            following.append(nxt)
                frontier = following
        return paths

    def local_types(self, module: str) -> dict[tuple[str, str], list[str]]:
        cached = self._local_types.get(module)
        if cached is None:
            cached = _local_constructions(self.index.modules[module].assigns)
            self._local_types[module] = cached
        return cached

    def _owner_class(self, module: str, scope: str) -> str | None:
        fn = self.index.functions.get(key(module, scope))
        if fn is None or fn.owner is None:
            return None
        return key(module, fn.owner)

    def callees(
        self, module: str, scope: str, call: Call, local_types: dict[tuple[str, str], list[str]]
    ) -> Iterable[str]:
        index = self.index
        receiver = call.receiver
        if receiver is None:
            found = index.resolve_name(module, call.name, scope)
            if found is None or found.startswith(("ext:", "mod:")):
                return []
            if found in index.classes:
                init = index.find_method(found, "__init__")
                return [init] if init else []
            return [found]
        owner = self._owner_class(module, scope)
        if receiver in ("self", "cls") and owner is not None:
            targets = {owner} | index.subclasses.get(owner, set())
            found_methods = {index.find_method(t, call.name) for t in targets}
            return [m for m in found_methods if m]
        if receiver == "super()" and owner is not None:
            mro = index.mro(owner)[0]
            for cls in mro[1:]:
                info = index.classes[cls]
                if call.name in info.methods:
                    return [key(info.module, info.methods[call.name].qualname)]
            return []
        classes: set[str] = set()
        if receiver.startswith("self.") and receiver.count(".") == 1 and owner is not None:
            # A base class's method may use an attribute only its subclasses assign.
            for cls in {owner} | index.subclasses.get(owner, set()):
                classes |= index.attr_types(cls, receiver[5:])
        elif "." not in receiver:
            for text in local_types.get((scope, receiver), []):
                res = index.resolve_class(module, text, scope)
                if res.symbol:
                    classes.add(res.symbol)
            if not classes:
                found = index.resolve_name(module, f"{receiver}.{call.name}", scope)
                if found is not None and found in index.functions:
                    return [found]
                if found is not None and found in index.classes:
                    init = index.find_method(found, "__init__")
                    return [init] if init else []
        out = []
        for cls in classes:
            method = index.find_method(cls, call.name)
            if method:
                out.append(method)
        return out

    def path(self, roots: Iterable[str], target: str) -> list[str] | None:
        """A shortest call path from any root to `target` (inclusive), or None."""
        return self.shortest_paths(roots).get(target)


def _local_constructions(assigns: Iterable[Assign]) -> dict[tuple[str, str], list[str]]:
    """(function scope, local name) -> constructor texts, for `x = Cls(...)` locals."""
    out: dict[tuple[str, str], list[str]] = {}
    for a in assigns:
        if a.value_call and a.target.isidentifier():
            out.setdefault((a.context.scope, a.target), []).append(a.value_call)
    return out


def describe(symbol: str) -> str:
    module, qual = split_key(symbol)
    return f"{module.rpartition('.')[2]}.{qual}"
