"""Reads a class's `__getattr__` body into a Forward fact: which objects it forwards
attribute names to, which names it answers first, whether it tries `super()`."""

from __future__ import annotations

from tree_sitter import Node

from tracker.extract.facts import Cond, Forward
from tracker.extract.nodes import cond_of, line_of, node_text, short_text


def param_name(node: Node) -> str:
    """The name of a parameter node (`name`, `name: str`, `name="x"`)."""
    if node.type == "identifier":
        return node_text(node)
    named = node.child_by_field_name("name")
    if named is not None:
        return node_text(named)
    first = node.named_children[0] if node.named_child_count else None
    return node_text(first) if first is not None and first.type == "identifier" else ""


def forward_fact(owner: str, line: int, param: str, body: Node) -> Forward:
    shape = _ForwardShape(param)
    shape.block(body, guarded=False)
    problem = "; ".join(shape.problems)
    if not problem and not shape.targets and not shape.tries_super:
        problem = "forwards the name to nothing the analysis can name"
    return Forward(
        owner,
        line,
        tuple(dict.fromkeys(shape.targets)),
        tuple(dict.fromkeys(shape.exempt)),
        shape.tries_super,
        problem,
    )


class _ForwardShape:
    """Reads a `__getattr__` body: `return getattr(self.x, name)` (a forward to `self.x`),
    `return super().__getattr__(name)`, and guards that answer some names first
    (`if name == "x": return None`), through `if`, `try/except` and `with` blocks."""

    def __init__(self, param: str) -> None:
        self.param = param
        self.targets: list[str] = []
        self.exempt: list[str] = []
        self.tries_super = False
        self.problems: list[str] = []

    def block(self, block: Node, guarded: bool) -> None:
        for stmt in block.named_children:
            kind = stmt.type
            if kind == "return_statement":
                self.returned(stmt, guarded)
            elif kind == "if_statement":
                self.branch(stmt, guarded)
            elif kind in (
                "try_statement",
                "with_statement",
                "except_clause",
                "else_clause",
                "finally_clause",
                "block",
                "for_statement",
                "while_statement",
            ):
                # The body and every handler: a fallback in `except AttributeError` is
                # a forward as much as the attempt before it.
                self.block(stmt, guarded)

    def branch(self, stmt: Node, guarded: bool) -> None:
        clauses = [(stmt.child_by_field_name("condition"), stmt.child_by_field_name("consequence"))]
        for alt in stmt.children_by_field_name("alternative"):
            if alt.type == "elif_clause":
                clauses.append(
                    (alt.child_by_field_name("condition"), alt.child_by_field_name("consequence"))
                )
            else:
                clauses.append((None, alt.child_by_field_name("body")))
        for cond, body in clauses:
            if body is None:
                continue
            names = _guard_names(cond_of(cond), self.param) if cond is not None else None
            if names is not None and not self.forwards_in(body):
                self.exempt.extend(names)
                self.block(body, guarded=True)
            else:
                self.block(body, guarded)

    def returned(self, stmt: Node, guarded: bool) -> None:
        value = stmt.named_children[0] if stmt.named_child_count else None
        target, is_super = self.forward_of(value)
        if target is not None:
            self.targets.append(target)
        elif is_super:
            self.tries_super = True
        elif not guarded:
            text = short_text(value) if value is not None else "None"
            self.problems.append(f"returns {text} (line {line_of(stmt)})")

    def forward_of(self, value: Node | None) -> tuple[str | None, bool]:
        """(the object `value` forwards the name to, or None; whether it is `super()`)."""
        if value is None or value.type != "call":
            return None, False
        func = value.child_by_field_name("function")
        arguments = value.child_by_field_name("arguments")
        if func is None or arguments is None:
            return None, False
        args = [a for a in arguments.named_children if a.type != "comment"]
        obj: Node | None = None
        if (
            node_text(func) == "getattr"
            and len(args) in (2, 3)
            and node_text(args[1]) == self.param
        ):
            obj = args[0]
        elif (
            func.type == "attribute"
            and len(args) == 1
            and node_text(args[0]) == self.param
            and node_text(func).endswith(".__getattr__")
        ):
            obj = func.child_by_field_name("object")
        if obj is None:
            return None, False
        if node_text(obj).startswith("super("):
            return None, True
        return short_text(obj), False

    def forwards_in(self, block: Node) -> bool:
        stack = list(block.named_children)
        while stack:
            node = stack.pop()
            if node.type == "return_statement" and node.named_child_count:
                if self.forward_of(node.named_children[0]) != (None, False):
                    return True
            elif node.type not in ("function_definition", "class_definition"):
                stack.extend(node.named_children)
        return False


def _guard_names(test: Cond, param: str) -> list[str] | None:
    """The names a guard on the attribute name admits (`name == "x"`, `name in ("a", "b")`,
    `name.startswith("_")` as `_*`, joined by `or`), or None for any other test."""
    if test.op == "or":
        out: list[str] = []
        for arg in test.args:
            found = _guard_names(arg, param)
            if found is None:
                return None
            out += found
        return out
    if test.op == "cmp" and test.text in ("==", "in") and len(test.args) == 2:
        left, right = test.args
        if test.text == "==" and right.op == "ref" and right.text == param:
            left, right = right, left
        if left.op != "ref" or left.text != param:
            return None
        items = right.args if test.text == "in" and right.op == "seq" else (right,)
        if test.text == "==" and right.op == "seq":
            return None
        strings = [i.text for i in items if i.op == "str"]
        return strings if len(strings) == len(items) and strings else None
    if test.op == "call" and test.text == f"{param}.startswith" and len(test.args) == 1:
        arg = test.args[0]
        items = arg.args if arg.op == "seq" else (arg,)
        strings = [f"{i.text}*" for i in items if i.op == "str"]
        return strings if len(strings) == len(items) and strings else None
    return None
