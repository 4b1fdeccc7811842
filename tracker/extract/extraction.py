"""The state of one module's extraction, shared by the query handlers (tracker.extract.handlers).

Handlers run in two steps: first each turns its query's matches into rows and registers
sites (positions whose Context is wanted) and intervals (spans with what holds inside); one
sweep then fills every site's Context, and the finishers the handlers left turn rows into
facts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tree_sitter import Node, QueryCursor

from tracker.extract.contexts import Interval, build_contexts
from tracker.extract.facts import (
    Assign,
    Call,
    ClassDef,
    Context,
    Effect,
    Forward,
    FunctionDef,
    Import,
    ModuleFacts,
    Read,
    Return,
)
from tracker.extract.queries import combined_query

Captures = dict[str, list[Node]]
Matches = list[Captures]
Span = tuple[int, int]  # (start byte, end byte) of a node


@dataclass(slots=True)
class FactLists:
    """The facts of one module as handlers build them, in the order they are found."""

    classes: list[ClassDef] = field(default_factory=list)
    functions: list[FunctionDef] = field(default_factory=list)
    imports: list[Import] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    reads: list[Read] = field(default_factory=list)
    assigns: list[Assign] = field(default_factory=list)
    returns: list[Return] = field(default_factory=list)
    effects: list[Effect] = field(default_factory=list)
    forwards: list[Forward] = field(default_factory=list)

    def module(
        self, path: str, content_id: str, error_lines: tuple[int, ...], definitions_only: bool
    ) -> ModuleFacts:
        return ModuleFacts(
            path=path,
            content_id=content_id,
            classes=tuple(self.classes),
            functions=tuple(self.functions),
            imports=tuple(self.imports),
            calls=tuple(self.calls),
            reads=tuple(self.reads),
            assigns=tuple(self.assigns),
            returns=tuple(self.returns),
            effects=tuple(self.effects),
            forwards=tuple(self.forwards),
            error_lines=error_lines,
            definitions_only=definitions_only,
        )


class Extraction:
    """One module: its queries' matches, sites, intervals, shared state and facts."""

    def __init__(self, root: Node, queries: tuple[str, ...]) -> None:
        self.root = root
        self.matches: dict[str, Matches] = self.run(queries)
        self.intervals: list[Interval] = []
        self.sites: list[tuple[int, int, int]] = []  # (start byte, rank, slot)
        self.contexts: list[Context | None] = []
        self.facts = FactLists()
        self._finishers: list[Callable[[], None]] = []
        # State one handler writes and a later one reads (see each handler's `after`).
        self.asserted_calls: set[Span] = set()  # branches -> call_sites
        self.call_function_spans: set[Span] = set()  # call_sites -> attribute_reads
        self.store_spans: set[Span] = set()  # assignments -> attribute_reads
        self.class_names: set[str] = set()  # definitions -> getattr_forwards (when finishing)

    def run(self, names: tuple[str, ...]) -> dict[str, Matches]:
        """The matches of the queries `names` on this module, per query, in one tree walk."""
        query, owners = combined_query(names)
        grouped: dict[str, Matches] = {name: [] for name in names}
        for pattern, caps in QueryCursor(query).matches(self.root):
            grouped[owners[pattern]].append(caps)
        return grouped

    def ensure(self, name: str) -> None:
        """Add the matches of query `name` when this module's pass does not run it."""
        if name not in self.matches:
            self.matches.update(self.run((name,)))

    def site(self, node: Node, *, definition: bool = False) -> int:
        """Register a site at `node`; returns the slot its Context will be stored in.
        A definition's context is the one around it, not its own scope."""
        slot = len(self.contexts)
        self.contexts.append(None)
        self.sites.append((node.start_byte, 0 if definition else 2, slot))
        return slot

    def context(self, slot: int) -> Context:
        """The Context of a site (only once `finish` has swept them)."""
        found = self.contexts[slot]
        assert found is not None
        return found

    def later(self, finisher: Callable[[], None]) -> None:
        """Run `finisher` once every site has its Context (in registration order)."""
        self._finishers.append(finisher)

    def finish(self) -> None:
        build_contexts(self.intervals, self.sites, self.contexts)
        for finisher in self._finishers:
            finisher()
        # The finishers close over this extraction: dropping them breaks the cycle, so the
        # tree and its matches are freed as soon as the facts are taken, not at the next
        # full collection.
        self._finishers.clear()
