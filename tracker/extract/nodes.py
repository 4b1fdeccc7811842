"""Small readers from tree-sitter nodes to plain values: text, lines, and expressions as
Cond trees. Shared by the query handlers and the context sweep."""

from __future__ import annotations

from tree_sitter import Node

from tracker.extract.facts import Cond

MAX_TEXT = 160  # source excerpts kept in facts (argument and condition text) are shortened


def node_text(node: Node) -> str:
    raw = node.text
    return raw.decode("utf-8", "replace") if raw is not None else ""


def short_text(node: Node) -> str:
    text = node_text(node)
    if "\n" in text or "  " in text or "\t" in text:
        text = " ".join(text.split())
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def line_of(node: Node) -> int:
    return node.start_point.row + 1


# ---------------------------------------------------------------------------- conditions


_MAX_DEPTH = 40  # deeper expressions are kept as text: no recursion limit on generated code


def cond_of(node: Node, depth: int = 0) -> Cond:
    """An expression node as a Cond tree (see tracker.extract.facts.Cond)."""
    kind = node.type
    if depth > _MAX_DEPTH:
        return Cond("other", short_text(node))
    depth += 1
    if kind == "parenthesized_expression":
        inner = node.named_children
        return cond_of(inner[0], depth) if len(inner) == 1 else Cond("other", short_text(node))
    if kind == "boolean_operator":
        op_node = node.child_by_field_name("operator")
        op = node_text(op_node) if op_node is not None else "and"
        args: list[Cond] = []
        for side in (node.child_by_field_name("left"), node.child_by_field_name("right")):
            if side is None:
                continue
            sub = cond_of(side, depth)
            args.extend(sub.args if sub.op == op else (sub,))
        return Cond(op, "", tuple(args))
    if kind == "not_operator":
        arg = node.child_by_field_name("argument")
        return Cond("not", "", (cond_of(arg, depth),)) if arg is not None else Cond("other", "")
    if kind == "call":
        func = node.child_by_field_name("function")
        arguments = node.child_by_field_name("arguments")
        call_args: tuple[Cond, ...] = ()
        if arguments is not None and arguments.type == "argument_list":
            call_args = tuple(
                cond_of(a, depth) for a in arguments.named_children if a.type != "comment"
            )[:4]
        return Cond("call", short_text(func) if func is not None else "", call_args)
    if kind in ("identifier", "attribute"):
        return Cond("ref", short_text(node))
    if kind == "comparison_operator":
        # `0 < k <= 8`: operators in order, comma-separated (some contain spaces: `not in`).
        operators = ",".join(
            " ".join(node_text(c).split()) for c in node.children if not c.is_named
        )
        operands = tuple(cond_of(c, depth) for c in node.named_children)
        return Cond("cmp", operators, operands)
    if kind in ("tuple", "list", "set", "expression_list"):  # `return a, b` is a tuple too
        return Cond("seq", "", tuple(cond_of(c, depth) for c in node.named_children[:16]))
    if kind == "string":
        parts = [c for c in node.named_children if c.type == "string_content"]
        if len(parts) == 1 and not any(c.type == "interpolation" for c in node.named_children):
            return Cond("str", node_text(parts[0]))
    return Cond("other", short_text(node))


def value_of(node: Node) -> Cond:
    """An assigned value, only as deep as the analysis looks at it: a name or attribute
    chain (aliases), a callee (constructions), a literal; anything else as its text.
    Building the full tree of every right-hand side was most of the extraction time."""
    kind = node.type
    if kind in ("identifier", "attribute"):
        return Cond("ref", short_text(node))
    if kind == "call":
        func = node.child_by_field_name("function")
        return Cond("call", short_text(func) if func is not None else "")
    return Cond("other", short_text(node))
