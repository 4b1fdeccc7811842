"""Where each site sits: the scopes, branches, `try` blocks and error messages around it.

Handlers record intervals (byte spans with what holds inside them) and sites (byte
positions); one sweep in byte order gives every site its Context, with no per-site walk up
the tree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tree_sitter import Node

from tracker.extract.facts import Branch, Context
from tracker.extract.nodes import cond_of, node_text

_DOTTED = re.compile(r"[A-Za-z_][\w.]*")


@dataclass(slots=True)
class Interval:
    start: int
    end: int
    kind: str  # "scope" | "branch" | "try" | "message"
    name: str = ""  # scope name
    branches: tuple[Branch, ...] = ()
    context: Context | None = None
    is_class: bool = False  # a class scope (its body runs where it is defined)


def if_intervals(stmt: Node, out: list[Interval]) -> None:
    """if/elif/else: each body runs under its own test and the negation of the ones before."""
    cond_node = stmt.child_by_field_name("condition")
    body = stmt.child_by_field_name("consequence")
    if cond_node is None or body is None:
        return
    previous: list[Branch] = []
    test = cond_of(cond_node)
    out.append(Interval(body.start_byte, body.end_byte, "branch", branches=(Branch(test, True),)))
    previous.append(Branch(test, False))
    alternatives = stmt.children_by_field_name("alternative")
    for alt in alternatives:
        if alt.type == "elif_clause":
            alt_cond = alt.child_by_field_name("condition")
            alt_body = alt.child_by_field_name("consequence")
            if alt_cond is None or alt_body is None:
                continue
            # The elif test itself is evaluated only when the earlier tests failed.
            out.append(
                Interval(alt_cond.start_byte, alt_cond.end_byte, "branch", branches=tuple(previous))
            )
            alt_test = cond_of(alt_cond)
            out.append(
                Interval(
                    alt_body.start_byte,
                    alt_body.end_byte,
                    "branch",
                    branches=(*previous, Branch(alt_test, True)),
                )
            )
            previous.append(Branch(alt_test, False))
        elif alt.type == "else_clause":
            else_body = alt.child_by_field_name("body")
            if else_body is not None:
                out.append(
                    Interval(
                        else_body.start_byte, else_body.end_byte, "branch", branches=tuple(previous)
                    )
                )
    if not alternatives and _exits(body):
        # Guard clause: `if not ready: return` -- the rest of the block runs under `ready`.
        parent = stmt.parent
        if parent is not None and parent.end_byte > stmt.end_byte:
            # In an `except` handler the raise is the error going on, not a check: the
            # rest of the handler is a fallback that runs only sometimes.
            raises = _last(body) == "raise_statement" and not _in_handler(stmt)
            out.append(
                Interval(
                    stmt.end_byte,
                    parent.end_byte,
                    "branch",
                    branches=(Branch(test, False, raises),),
                )
            )


def _in_handler(node: Node) -> bool:
    parent = node.parent
    while parent is not None and parent.type not in ("function_definition", "class_definition"):
        if parent.type == "except_clause":
            return True
        parent = parent.parent
    return False


def _last(block: Node) -> str:
    last = block.named_children[-1] if block.named_child_count else None
    return last.type if last is not None else ""


def _exits(block: Node) -> bool:
    return _last(block) in (
        "return_statement",
        "raise_statement",
        "continue_statement",
        "break_statement",
    )


_CATCHING_ATTRIBUTE_ERROR = frozenset({"AttributeError", "Exception", "BaseException"})


def tolerates_attribute_error(handlers: list[Node]) -> bool:
    """Python runs the first handler that matches: that one decides. It tolerates a
    missing member unless it re-raises (even only sometimes: `if not pp: raise`)."""
    for handler in sorted(handlers, key=lambda h: h.start_byte):
        value = handler.child_by_field_name("value")
        if value is None:
            # A bare `except:` catches everything.
            if not any(c.type not in ("except", ":", "block", "comment") for c in handler.children):
                return not _reraises(handler)
            continue
        names = {n.rpartition(".")[2] for n in _DOTTED.findall(_exception_types(value))}
        if names & _CATCHING_ATTRIBUTE_ERROR:
            return not _reraises(handler)
    return False


def _exception_types(value: Node) -> str:
    """The exception types of `except X`, `except (X, Y)`, `except X as e`."""
    if value.type == "as_pattern" and value.named_child_count:
        return node_text(value.named_children[0])
    return node_text(value)


def _reraises(handler: Node) -> bool:
    stack = list(handler.named_children)
    while stack:
        node = stack.pop()
        if node.type == "raise_statement" and node.named_child_count == 0:
            return True
        if node.type not in ("function_definition", "class_definition"):
            stack.extend(node.named_children)
    return False


def build_contexts(
    intervals: list[Interval], sites: list[tuple[int, int, int]], contexts: list[Context | None]
) -> None:
    """Sweep intervals and site positions in byte order; store each site's Context in
    `contexts[slot]`. `sites` holds (start byte, rank, slot): rank 0 sorts before
    intervals starting at the same byte, rank 2 after."""
    root = Context("")
    # At one position: definitions first (a class's own name lives outside its scope),
    # then intervals outermost first, then the sites inside them.
    events: list[tuple[int, int, int, int, Any]] = []
    for interval in intervals:
        # Same span: the branch (or try body) is outside the function it holds.
        kind_rank = 1 if interval.kind == "scope" else 0
        events.append((interval.start, 1, -interval.end, kind_rank, interval))
    for pos, rank, slot in sites:
        events.append((pos, rank, 0, slot, None))
    events.sort(key=lambda e: (e[0], e[1], e[2], e[3]))
    stack: list[Interval] = []
    for pos, rank, _neg_end, order, payload in events:
        while stack and stack[-1].end <= pos:
            stack.pop()
        parent = stack[-1].context if stack else root
        assert parent is not None
        if rank != 1:
            contexts[order] = parent
            continue
        iv: Interval = payload
        if iv.kind == "scope":
            scope = f"{parent.scope}.{iv.name}" if parent.scope else iv.name
            if iv.is_class:
                # A class body runs where the class is defined: it keeps the conditions.
                iv.context = parent._replace(scope=scope)
            else:
                # A function body runs when called, not where it is defined: fresh ones.
                iv.context = Context(scope)
        elif iv.kind == "branch":
            iv.context = parent._replace(branches=parent.branches + iv.branches)
        elif iv.kind == "message":
            iv.context = parent._replace(in_message=True)
        else:  # try
            iv.context = parent._replace(catches_attribute_error=True)
        stack.append(iv)
