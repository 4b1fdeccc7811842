"""Python source bytes -> ModuleFacts, with tree-sitter and the queries in `queries/`.

The only module that imports tree_sitter. Each file is parsed once and every query runs on
the same tree; what the queries capture becomes plain facts. The conditions around each
site are found in one sweep over byte intervals (no per-site walk up the tree), which keeps
extraction within a small factor of the bare parse.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import tree_sitter_python
from tree_sitter import Language, Node, Parser, Query, QueryCursor, Tree

from tracker.common.resources import queries_dir
from tracker.extract.facts import (
    Assign,
    Branch,
    Call,
    ClassDef,
    Cond,
    Context,
    Effect,
    Forward,
    FunctionDef,
    Import,
    ModuleFacts,
    Param,
    Read,
    Return,
)

# Every query file; a full pass runs FULL_QUERIES, a definitions-only pass the others.
QUERY_NAMES = (
    "definitions",
    "call_sites",
    "attribute_reads",
    "assignments",
    "imports",
    "returns",
    "branches",
    "definition_assignments",
    "capture_sites",
    "getattr_forwards",
)
FULL_QUERIES = (
    "definitions",
    "call_sites",
    "attribute_reads",
    "assignments",
    "imports",
    "returns",
    "branches",
    "getattr_forwards",
)
# The queries for a "definitions only" pass: what a class's provision and the index need
# (classes, methods, assignments, imports, returns), without the calls, reads and
# conditions that only code a worker runs can use. Model files are read this way.
# The narrow capture_sites query adds what the aux-hidden-state contract follows in model
# classes; files read in full hold workers, not models, and go without it.
DEFINITION_QUERIES = (
    "definitions", "definition_assignments", "imports", "returns", "capture_sites",
    "getattr_forwards",
)

_DOTTED = re.compile(r"[A-Za-z_][\w.]*")
_MAX_TEXT = 160  # source excerpts kept in facts (argument and condition text) are shortened
_LANGUAGE = Language(tree_sitter_python.language())


@cache
def query_text(name: str) -> str:
    return (queries_dir() / f"{name}.scm").read_text(encoding="utf-8")


@cache
def query_set_hash() -> str:
    """A digest of every query file and of the code that turns captures into facts:
    facts from other queries, or extracted differently, are other facts."""
    digest = hashlib.sha256()
    for name in QUERY_NAMES:
        digest.update(name.encode())
        digest.update(query_text(name).encode())
    here = Path(__file__).resolve().parent
    for module in ("parse.py", "facts.py"):
        digest.update((here / module).read_bytes())
    return digest.hexdigest()[:16]


@cache
def compiled_query(name: str) -> Query:
    return Query(_LANGUAGE, query_text(name))


@cache
def _combined_query(names: tuple[str, ...] = FULL_QUERIES) -> tuple[Query, tuple[str, ...]]:
    """The queries as one: a single pass over the tree instead of one per file.

    Returns the query and, per pattern index, the name of the file it came from.
    """
    owners: list[str] = []
    for name in names:
        owners.extend([name] * compiled_query(name).pattern_count)
    text = "\n".join(query_text(name) for name in names)
    return Query(_LANGUAGE, text), tuple(owners)


@cache
def _parser() -> Parser:
    return Parser(_LANGUAGE)


class ParseTimeout(Exception):
    """tree-sitter took longer than the file's time budget (see parse_tree)."""


_COMMENT_RUN = re.compile(rb"(?:^[ \t]*#[^\n]*\n){200,}", re.MULTILINE)


def parse_tree(source: bytes) -> Tree:
    """Parse; with a time budget when the file has a long run of comment lines, on which
    tree-sitter-python is quadratic: one generated file must not hang a whole run.

    The budgeted parse reads through a callback, and a tree parsed that way serves every
    Node.text through the callback again: so it only decides whether the file can be
    parsed in time, and the tree used is then parsed from the bytes."""
    parser = _parser()
    if _COMMENT_RUN.search(source) is None:
        return parser.parse(source)
    budget = max(5.0, len(source) / 100_000)  # generous: real files parse at ~7 MB/s
    deadline = time.monotonic() + budget

    def read(offset: int, _point: object) -> bytes:
        return source[offset : offset + (1 << 20)]

    def cancel(_offset: int, _has_error: bool) -> bool:
        return time.monotonic() > deadline

    try:
        parser.parse(read, progress_callback=cancel)
    except ValueError as exc:  # "Parsing failed": the callback cancelled it
        parser.reset()  # else the next parse resumes this one
        raise ParseTimeout(f"parsing took longer than {budget:.0f} s") from exc
    return parser.parse(source)


def run_query(name: str, source: bytes) -> list[tuple[int, dict[str, list[Node]]]]:
    """Matches of one query on `source`: for the query fixture tests and debugging."""
    tree = _parser().parse(source)
    return list(QueryCursor(compiled_query(name)).matches(tree.root_node))


def _text(node: Node) -> str:
    raw = node.text
    return raw.decode("utf-8", "replace") if raw is not None else ""


def _short(node: Node) -> str:
    text = _text(node)
    if "\n" in text or "  " in text or "\t" in text:
        text = " ".join(text.split())
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 1] + "…"


def _line(node: Node) -> int:
    return node.start_point.row + 1


# ---------------------------------------------------------------------------- conditions


_MAX_DEPTH = 40  # deeper expressions are kept as text: no recursion limit on generated code


def cond_of(node: Node, depth: int = 0) -> Cond:
    """An expression node as a Cond tree (see tracker.extract.facts.Cond)."""
    kind = node.type
    if depth > _MAX_DEPTH:
        return Cond("other", _short(node))
    depth += 1
    if kind == "parenthesized_expression":
        inner = node.named_children
        return cond_of(inner[0], depth) if len(inner) == 1 else Cond("other", _short(node))
    if kind == "boolean_operator":
        op_node = node.child_by_field_name("operator")
        op = _text(op_node) if op_node is not None else "and"
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
            )[
                :4
            ]
        return Cond("call", _short(func) if func is not None else "", call_args)
    if kind in ("identifier", "attribute"):
        return Cond("ref", _short(node))
    if kind == "comparison_operator":
        # `0 < k <= 8`: operators in order, comma-separated (some contain spaces: `not in`).
        operators = ",".join(" ".join(_text(c).split()) for c in node.children if not c.is_named)
        operands = tuple(cond_of(c, depth) for c in node.named_children)
        return Cond("cmp", operators, operands)
    if kind in ("tuple", "list", "set", "expression_list"):  # `return a, b` is a tuple too
        return Cond("seq", "", tuple(cond_of(c, depth) for c in node.named_children[:16]))
    if kind == "string":
        parts = [c for c in node.named_children if c.type == "string_content"]
        if len(parts) == 1 and not any(c.type == "interpolation" for c in node.named_children):
            return Cond("str", _text(parts[0]))
    return Cond("other", _short(node))


def _value_of(node: Node) -> Cond:
    """An assigned value, only as deep as the analysis looks at it: a name or attribute
    chain (aliases), a callee (constructions), a literal; anything else as its text.
    Building the full tree of every right-hand side was most of the extraction time."""
    kind = node.type
    if kind in ("identifier", "attribute"):
        return Cond("ref", _short(node))
    if kind == "call":
        func = node.child_by_field_name("function")
        return Cond("call", _short(func) if func is not None else "")
    return Cond("other", _short(node))


# ------------------------------------------------------------------------------ intervals


@dataclass(slots=True)
class _Interval:
    start: int
    end: int
    kind: str  # "scope" | "branch" | "try" | "message"
    name: str = ""  # scope name
    branches: tuple[Branch, ...] = ()
    context: Context | None = None
    is_class: bool = False  # a class scope (its body runs where it is defined)


def _if_intervals(stmt: Node, out: list[_Interval]) -> None:
    """if/elif/else: each body runs under its own test and the negation of the ones before."""
    cond_node = stmt.child_by_field_name("condition")
    body = stmt.child_by_field_name("consequence")
    if cond_node is None or body is None:
        return
    previous: list[Branch] = []
    test = cond_of(cond_node)
    out.append(_Interval(body.start_byte, body.end_byte, "branch", branches=(Branch(test, True),)))
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
                _Interval(
                    alt_cond.start_byte, alt_cond.end_byte, "branch", branches=tuple(previous)
                )
            )
            alt_test = cond_of(alt_cond)
            out.append(
                _Interval(
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
                    _Interval(
                        else_body.start_byte, else_body.end_byte, "branch", branches=tuple(previous)
                    )
                )
    if not alternatives and _exits(body):
        # Guard clause: `if not ready: return` -- the rest of the block runs under `ready`.
        parent = stmt.parent
        if parent is not None and parent.end_byte > stmt.end_byte:
            out.append(
                _Interval(stmt.end_byte, parent.end_byte, "branch", branches=(Branch(test, False),))
            )


def _exits(block: Node) -> bool:
    last = block.named_children[-1] if block.named_child_count else None
    return last is not None and last.type in (
        "return_statement",
        "raise_statement",
        "continue_statement",
        "break_statement",
    )


_CATCHING_ATTRIBUTE_ERROR = frozenset({"AttributeError", "Exception", "BaseException"})


def _tolerates_attribute_error(handlers: list[Node]) -> bool:
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
        return _text(value.named_children[0])
    return _text(value)


def _reraises(handler: Node) -> bool:
    stack = list(handler.named_children)
    while stack:
        node = stack.pop()
        if node.type == "raise_statement" and node.named_child_count == 0:
            return True
        if node.type not in ("function_definition", "class_definition"):
            stack.extend(node.named_children)
    return False


def _build_contexts(
    intervals: list[_Interval], sites: list[tuple[int, int, int]], contexts: list[Context | None]
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
    stack: list[_Interval] = []
    for pos, rank, _neg_end, order, payload in events:
        while stack and stack[-1].end <= pos:
            stack.pop()
        parent = stack[-1].context if stack else root
        assert parent is not None
        if rank != 1:
            contexts[order] = parent
            continue
        iv: _Interval = payload
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


# --------------------------------------------------------------------------------- facts


def _params(node: Node) -> tuple[Param, ...]:
    params: list[Param] = []
    keyword_only = False
    for child in node.named_children:
        kind = child.type
        if kind == "identifier":
            params.append(Param(_text(child), "keyword_only" if keyword_only else "positional"))
        elif kind in ("typed_parameter", "default_parameter", "typed_default_parameter"):
            name_node = child.child_by_field_name("name")
            if name_node is None:  # typed_parameter holds its name (or a splat) as a child
                first = child.named_children[0] if child.named_child_count else None
                splat_type = child.child_by_field_name("type")
                splat_annotation = _short(splat_type) if splat_type is not None else None
                if first is not None and first.type == "list_splat_pattern":
                    params.append(
                        Param(
                            _text(first).lstrip("*"), "var_positional", annotation=splat_annotation
                        )
                    )
                    keyword_only = True
                    continue
                if first is not None and first.type == "dictionary_splat_pattern":
                    params.append(
                        Param(_text(first).lstrip("*"), "var_keyword", annotation=splat_annotation)
                    )
                    continue
                name_node = first
            type_node = child.child_by_field_name("type")
            default_node = child.child_by_field_name("value")
            params.append(
                Param(
                    _text(name_node) if name_node is not None else "?",
                    "keyword_only" if keyword_only else "positional",
                    has_default=kind != "typed_parameter",
                    annotation=_short(type_node) if type_node is not None else None,
                    default=_short(default_node) if default_node is not None else None,
                )
            )
        elif kind == "list_splat_pattern":
            params.append(Param(_text(child).lstrip("*"), "var_positional"))
            keyword_only = True
        elif kind == "keyword_separator":
            keyword_only = True
        elif kind == "dictionary_splat_pattern":
            params.append(Param(_text(child).lstrip("*"), "var_keyword"))
    return tuple(params)


def _argument_shape(
    arguments: Node,
) -> tuple[int, tuple[tuple[str, str], ...], bool, tuple[str, ...]]:
    if arguments.type != "argument_list":  # f(x for x in xs)
        return 1, (), False, (_short(arguments),)
    positional = 0
    keywords: list[tuple[str, str]] = []
    star = False
    texts: list[str] = []
    for arg in arguments.named_children:
        kind = arg.type
        if kind == "keyword_argument":
            name = arg.child_by_field_name("name")
            value = arg.child_by_field_name("value")
            keywords.append(
                (
                    _text(name) if name is not None else "?",
                    _short(value) if value is not None else "",
                )
            )
        elif kind in ("list_splat", "dictionary_splat"):
            star = True
        elif kind != "comment":
            positional += 1
            if len(texts) < 6:
                texts.append(_short(arg))
    return positional, tuple(keywords), star, tuple(texts)


def _relative_module(node: Node) -> tuple[str, int]:
    if node.type == "relative_import":
        text = _text(node)
        stripped = text.lstrip(".")
        return stripped, len(text) - len(stripped)
    return _text(node), 0


class _Builder:
    """Collects facts of one module; contexts are filled in by the sweep at the end."""

    def __init__(self, source: bytes) -> None:
        self.root = parse_tree(source).root_node
        self.intervals: list[_Interval] = []
        self.sites: list[tuple[int, int, int]] = []  # (start byte, rank, slot)
        self.contexts: list[Context | None] = []

    def site(self, node: Node, *, definition: bool = False) -> int:
        """Register a site at `node`; returns the slot its Context will be stored in.
        A definition's context is the one around it, not its own scope."""
        slot = len(self.contexts)
        self.contexts.append(None)
        self.sites.append((node.start_byte, 0 if definition else 2, slot))
        return slot

    def all_matches(self, names: tuple[str, ...]) -> dict[str, list[dict[str, list[Node]]]]:
        query, owners = _combined_query(names)
        grouped: dict[str, list[dict[str, list[Node]]]] = {name: [] for name in QUERY_NAMES}
        for pattern, caps in QueryCursor(query).matches(self.root):
            grouped[owners[pattern]].append(caps)
        return grouped


def extract_facts(path: str, content_id: str, source: bytes, *, full: bool = True) -> ModuleFacts:
    """Every fact of one file. Never raises on bad input: ERROR nodes are recorded, and a
    file that cannot be read at all gets empty facts that say why (`problem`)."""
    problem = ""
    try:
        source.decode("utf-8")
    except UnicodeDecodeError as exc:
        declared = _declared_encoding(source)
        if declared is not None:
            # PEP 263: `# -*- coding: latin-1 -*-` makes the file valid Python.
            try:
                source = source.decode(declared).encode("utf-8")
            except (LookupError, UnicodeDecodeError):
                declared = None
        if declared is None:
            # Python itself refuses such a file; tree-sitter's text predicates choke on it.
            problem = f"not UTF-8 (byte {exc.start}); read with the bad bytes replaced"
            source = source.decode("utf-8", "replace").encode("utf-8")
    try:
        facts = _extract(path, content_id, source, full)
    except ParseTimeout as exc:
        return ModuleFacts(path, content_id, problem=str(exc), definitions_only=not full)
    except RecursionError:
        return ModuleFacts(path, content_id, problem="nested too deeply to analyse",
                           definitions_only=not full)
    return facts._replace(problem=problem) if problem else facts


_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


def _declared_encoding(source: bytes) -> str | None:
    """The PEP 263 encoding declared on the first or second line, if any."""
    for line in source.split(b"\n", 2)[:2]:
        found = _CODING.match(line)
        if found is not None:
            return found.group(1).decode("ascii", "replace")
    return None


def _extract(path: str, content_id: str, source: bytes, full: bool) -> ModuleFacts:
    b = _Builder(source)
    found = b.all_matches(FULL_QUERIES if full else DEFINITION_QUERIES)

    # Scopes and definitions.
    decorators: dict[int, list[str]] = {}
    class_sites: list[tuple[int, Node, Node, Node | None]] = []
    func_sites: list[tuple[int, Node, Node, Node]] = []
    for caps in found["definitions"]:
        for deco in caps.get("definition.decorator", ()):
            parent = deco.parent
            target = parent.child_by_field_name("definition") if parent is not None else None
            if target is not None:
                decorators.setdefault(target.start_byte, []).append(_short(deco).lstrip("@"))
        if "class.definition" in caps:
            node = caps["class.definition"][0]
            bases = caps.get("class.bases", [None])[0]
            b.intervals.append(
                _Interval(
                    node.start_byte,
                    node.end_byte,
                    "scope",
                    name=_text(caps["class.name"][0]),
                    is_class=True,
                )
            )
            class_sites.append((b.site(node, definition=True), node, caps["class.name"][0], bases))
        elif "function.definition" in caps:
            node = caps["function.definition"][0]
            b.intervals.append(
                _Interval(
                    node.start_byte, node.end_byte, "scope", name=_text(caps["function.name"][0])
                )
            )
            func_sites.append(
                (
                    b.site(node, definition=True),
                    node,
                    caps["function.name"][0],
                    caps["function.parameters"][0],
                )
            )

    # Branches, guards, try blocks.
    asserted_calls: set[tuple[int, int]] = set()
    seen_try: set[int] = set()
    for caps in found["branches"]:
        if "if.statement" in caps:
            stmt = caps["if.statement"][0]
            _if_intervals(stmt, b.intervals)
            cond_node = caps["if.condition"][0]
            body = caps["if.consequence"][0]
            if (
                cond_node.type == "not_operator"
                and body.named_child_count
                and body.named_children[-1].type == "raise_statement"
            ):
                arg = cond_node.child_by_field_name("argument")
                if arg is not None and arg.type == "call":
                    asserted_calls.add((arg.start_byte, arg.end_byte))
        elif "boolean.expression" in caps:
            expr = caps["boolean.expression"][0]
            left = caps["boolean.left"][0]
            right = caps["boolean.right"][0]
            op_node = expr.child_by_field_name("operator")
            holds = op_node is None or _text(op_node) == "and"
            b.intervals.append(
                _Interval(
                    right.start_byte,
                    right.end_byte,
                    "branch",
                    branches=(Branch(cond_of(left), holds),),
                )
            )
        elif "ternary.expression" in caps:
            parts = caps["ternary.expression"][0].named_children
            if len(parts) == 3:
                then_node, test_node, else_node = parts
                test = cond_of(test_node)
                b.intervals.append(
                    _Interval(
                        then_node.start_byte,
                        then_node.end_byte,
                        "branch",
                        branches=(Branch(test, True),),
                    )
                )
                b.intervals.append(
                    _Interval(
                        else_node.start_byte,
                        else_node.end_byte,
                        "branch",
                        branches=(Branch(test, False),),
                    )
                )
        elif "try.body" in caps:
            body = caps["try.body"][0]
            statement = body.parent
            # One match per handler: judge all of a statement's handlers together, once.
            if statement is not None and statement.start_byte not in seen_try:
                seen_try.add(statement.start_byte)
                handlers = [c for c in statement.named_children if c.type == "except_clause"]
                if _tolerates_attribute_error(handlers):
                    b.intervals.append(_Interval(body.start_byte, body.end_byte, "try"))
        elif "assert.test" in caps:
            test_node = caps["assert.test"][0]
            if test_node.type == "call":
                asserted_calls.add((test_node.start_byte, test_node.end_byte))
        else:
            message = next(
                (caps[c][0] for c in ("message.raised", "message.asserted", "message.logged")
                 if c in caps),
                None,
            )
            if message is not None:
                b.intervals.append(_Interval(message.start_byte, message.end_byte, "message"))

    # Calls.
    call_function_spans: set[tuple[int, int]] = set()
    call_rows: list[tuple[int, Node, str, str | None, Node]] = []
    for caps in found["call_sites"]:
        site = caps["call.site"][0]
        member = caps["call.member"][0]
        receiver_nodes = caps.get("call.receiver")
        receiver = _short(receiver_nodes[0]) if receiver_nodes else None
        if receiver_nodes:
            call_function_spans.add((receiver_nodes[0].start_byte, member.end_byte))
        call_rows.append((b.site(site), site, _text(member), receiver, caps["call.arguments"][0]))

    # `__getattr__` forwards. The class a forward target holds flows through local names
    # (`cls = _SUPPORT_VERSION[v]; inner = cls(...); self.inner = inner`): a module that
    # forwards gets its local assignments even when read for definitions only.
    forward_rows = [
        (b.site(caps["forward.definition"][0], definition=True), caps["forward.definition"][0],
         caps["forward.param"][0], caps["forward.body"][0])
        for caps in found["getattr_forwards"]
    ]
    if forward_rows and not full:
        found["assignments"] = b.all_matches(("assignments",))["assignments"]

    # Assignments (their attribute targets are writes, not reads).
    store_spans: set[tuple[int, int]] = set()
    assign_rows: list[tuple[int, Node, Node, Node]] = []
    for caps in found["assignments"] + found["definition_assignments"]:
        site = caps["assign.site"][0]
        target = caps["assign.target"][0]
        value = caps["assign.value"][0]
        targets = (
            [t for t in target.named_children if t.type != "comment"]
            if target.type in ("pattern_list", "tuple_pattern", "list_pattern")
            else [target]
        )
        for t in targets:
            if (t.start_byte, t.end_byte) in store_spans:
                continue  # `self.x = ...` matched by both assignment queries
            store_spans.add((t.start_byte, t.end_byte))
            assign_rows.append((b.site(site), t, value, site))

    # Reads.
    read_rows: list[tuple[int, str, str, int, str]] = []
    for caps in found["attribute_reads"]:
        if "read.site" in caps:
            site = caps["read.site"][0]
            span = (site.start_byte, site.end_byte)
            if span in call_function_spans or span in store_spans:
                continue
            read_rows.append(
                (
                    b.site(site),
                    _text(caps["read.member"][0]),
                    _short(caps["read.receiver"][0]),
                    _line(site),
                    "attr",
                )
            )
        elif "read.key_site" in caps:
            site = caps["read.key_site"][0]
            if (site.start_byte, site.end_byte) in store_spans:
                continue
            if len(site.children_by_field_name("subscript")) != 1:
                continue  # `frame["a", "b"]` indexes with a tuple, not a constant key
            read_rows.append(
                (
                    b.site(site),
                    _text(caps["read.key"][0]),
                    _short(caps["read.receiver"][0]),
                    _line(site),
                    "key",
                )
            )

    effect_rows = _effect_rows(b, found["capture_sites"])

    # Returns and imports.
    return_rows = [
        (b.site(caps["return.site"][0]), caps["return.value"][0]) for caps in found["returns"]
    ]
    import_rows: list[tuple[int, str, str | None, str | None, int, int]] = []
    for caps in found["imports"]:
        if "import.from" in caps:
            module, level = _relative_module(caps["import.from"][0])
            if "import.wildcard" in caps:
                name: str | None = "*"
                anchor = caps["import.wildcard"][0]
            else:
                anchor = caps["import.name"][0]
                name = _text(anchor)
        else:
            anchor = caps["import.module"][0]
            module, level, name = _text(anchor), 0, None
        alias_nodes = caps.get("import.alias")
        alias = _text(alias_nodes[0]) if alias_nodes else None
        import_rows.append((b.site(anchor), module, name, alias, level, _line(anchor)))

    _build_contexts(b.intervals, b.sites, b.contexts)
    ctx = b.contexts

    def context(slot: int) -> Context:
        found = ctx[slot]
        assert found is not None
        return found

    classes = tuple(
        ClassDef(
            name=_text(name),
            qualname=_join(context(slot).scope, _text(name)),
            line=_line(node),
            end_line=node.end_point.row + 1,
            bases=tuple(
                _short(a)
                for a in bases.named_children
                if a.type not in ("keyword_argument", "comment")
            )
            if bases is not None
            else (),
            decorators=tuple(decorators.get(node.start_byte, ())),
        )
        for slot, node, name, bases in class_sites
    )
    class_names = {c.qualname for c in classes}
    functions = []
    for slot, node, fn_name, params in func_sites:
        outer = context(slot).scope
        functions.append(
            FunctionDef(
                name=_text(fn_name),
                qualname=_join(outer, _text(fn_name)),
                line=_line(node),
                end_line=node.end_point.row + 1,
                params=_params(params),
                decorators=tuple(decorators.get(node.start_byte, ())),
                owner=outer if outer in class_names else None,
            )
        )
    calls = []
    for slot, site, member_name, receiver, arguments in call_rows:
        positional, keywords, star, texts = _argument_shape(arguments)
        calls.append(
            Call(
                name=member_name,
                receiver=receiver,
                line=_line(site),
                context=context(slot),
                positional=positional,
                keywords=keywords,
                star_args=star,
                args=texts,
                asserted=(site.start_byte, site.end_byte) in asserted_calls,
            )
        )
    assigns = []
    for slot, target, value, site in assign_rows:
        while value.type == "assignment":  # `self.model = model = Ctor(...)`
            inner = value.child_by_field_name("right")
            if inner is None:
                break
            value = inner
        value_call = None
        value_names: tuple[str, ...] = ()
        if value.type == "call":
            func = value.child_by_field_name("function")
            value_call = _short(func) if func is not None else None
        elif value.type in ("list", "tuple"):
            value_names = tuple(
                _short(v) for v in value.named_children if v.type in ("identifier", "attribute")
            )
        elif value.type == "dictionary":
            value_names = _dict_value_names(value)
        operator = site.child_by_field_name("operator")
        assigns.append(
            Assign(
                target=_short(target),
                line=_line(site),
                context=context(slot),
                value_call=value_call,
                value_names=value_names,
                value=_value_of(value),
                op=_text(operator) if operator is not None else "=",
            )
        )
    reads = tuple(
        Read(name=n, receiver=r, line=line, context=context(slot), kind=kind)
        for slot, n, r, line, kind in read_rows
    )
    returns = tuple(
        Return(cond_of(value), _line(value), context(slot)) for slot, value in return_rows
    )
    imports = []
    for slot, module, name, alias, level, line in import_rows:
        c = context(slot)
        imports.append(
            Import(
                module=module,
                name=name,
                alias=alias,
                level=level,
                line=line,
                scope=c.scope,
                type_checking=any(_is_type_checking(br) for br in c.branches),
            )
        )
    effects = tuple(
        Effect(kind, text, line, context(slot).scope, value, args)
        for slot, kind, text, line, value, args in effect_rows
    )
    forwards = []
    for slot, node, param, body in forward_rows:
        owner = context(slot).scope
        if owner in class_names:
            forwards.append(_forward_fact(owner, _line(node), _param_name(param), body))
    return ModuleFacts(
        path=path,
        content_id=content_id,
        classes=classes,
        functions=tuple(functions),
        imports=tuple(imports),
        calls=tuple(calls),
        reads=reads,
        assigns=tuple(assigns),
        returns=returns,
        effects=effects,
        forwards=tuple(forwards),
        error_lines=_error_lines(b.root),
        definitions_only=not full,
    )


_EffectRow = tuple[int, str, str, int, str, tuple[str, ...]]


def _effect_rows(b: _Builder, matches: list[dict[str, list[Node]]]) -> list[_EffectRow]:
    """capture_sites matches as (slot, kind, text, line, value, args); a call both
    patterns match is kept once, and an attribute written is not also read."""
    rows: list[_EffectRow] = []
    written: set[tuple[int, int]] = set()
    seen_calls: set[tuple[int, int]] = set()
    reads: list[Node] = []
    for caps in matches:
        if "write.site" in caps:
            target = caps["write.target"][0]
            written.add((target.start_byte, target.end_byte))
            rows.append((b.site(caps["write.site"][0]), "write", _short(target),
                         _line(target), _short(caps["write.value"][0]), ()))
        elif "unpack.site" in caps:
            targets = caps["unpack.targets"][0]
            names = ",".join(_short(t) for t in targets.named_children if t.type != "comment")
            rows.append((b.site(caps["unpack.site"][0]), "unpack", names, _line(targets),
                         _short(caps["unpack.value"][0]), ()))
        elif "loop.site" in caps:
            site = caps["loop.site"][0]
            rows.append((b.site(site), "loop", _short(caps["loop.target"][0]), _line(site),
                         _short(caps["loop.iter"][0]), ()))
        elif "local.site" in caps:
            site = caps["local.site"][0]
            rows.append((b.site(site), "local", _text(caps["local.name"][0]), _line(site),
                         _short(caps["local.value"][0]), ()))
        elif "read.site" in caps:
            reads.append(caps["read.site"][0])
        elif "call.site" in caps:
            site = caps["call.site"][0]
            if (site.start_byte, site.end_byte) in seen_calls:
                continue
            seen_calls.add((site.start_byte, site.end_byte))
            rows.append((b.site(site), "call", _short(caps["call.function"][0]), _line(site),
                         "", _argument_texts(caps["call.arguments"][0])))
    for node in reads:
        if (node.start_byte, node.end_byte) not in written:
            rows.append((b.site(node), "read", _short(node), _line(node), "", ()))
    return rows


def _argument_texts(arguments: Node) -> tuple[str, ...]:
    """Every argument's text, keywords as `name=value`, splats as written."""
    return tuple(_short(a) for a in arguments.named_children if a.type != "comment")
def _dict_value_names(node: Node) -> tuple[str, ...]:
    """The names a dict literal maps its keys to (`{(2, 6): MiniCPMV2_6}` -> MiniCPMV2_6)."""
    out = []
    for pair in node.named_children:
        value = pair.child_by_field_name("value") if pair.type == "pair" else None
        if value is not None and value.type in ("identifier", "attribute"):
            out.append(_short(value))
    return tuple(out)


# ------------------------------------------------------------------------------ forwards


def _param_name(node: Node) -> str:
    """The name of a parameter node (`name`, `name: str`, `name="x"`)."""
    if node.type == "identifier":
        return _text(node)
    named = node.child_by_field_name("name")
    if named is not None:
        return _text(named)
    first = node.named_children[0] if node.named_child_count else None
    return _text(first) if first is not None and first.type == "identifier" else ""


def _forward_fact(owner: str, line: int, param: str, body: Node) -> Forward:
    shape = _ForwardShape(param)
    shape.block(body, guarded=False)
    problem = "; ".join(shape.problems)
    if not problem and not shape.targets and not shape.tries_super:
        problem = "forwards the name to nothing the analysis can name"
    return Forward(owner, line, tuple(dict.fromkeys(shape.targets)),
                   tuple(dict.fromkeys(shape.exempt)), shape.tries_super, problem)


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
            elif kind in ("try_statement", "with_statement", "except_clause", "else_clause",
                          "finally_clause", "block", "for_statement", "while_statement"):
                # The body and every handler: a fallback in `except AttributeError` is
                # a forward as much as the attempt before it.
                self.block(stmt, guarded)

    def branch(self, stmt: Node, guarded: bool) -> None:
        clauses = [(stmt.child_by_field_name("condition"),
                    stmt.child_by_field_name("consequence"))]
        for alt in stmt.children_by_field_name("alternative"):
            if alt.type == "elif_clause":
                clauses.append((alt.child_by_field_name("condition"),
                                alt.child_by_field_name("consequence")))
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
            text = _short(value) if value is not None else "None"
            self.problems.append(f"returns {text} (line {_line(stmt)})")

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
        if _text(func) == "getattr" and len(args) in (2, 3) and _text(args[1]) == self.param:
            obj = args[0]
        elif (func.type == "attribute" and len(args) == 1 and _text(args[0]) == self.param
              and _text(func).endswith(".__getattr__")):
            obj = func.child_by_field_name("object")
        if obj is None:
            return None, False
        if _text(obj).startswith("super("):
            return None, True
        return _short(obj), False

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


def _is_type_checking(branch: Branch) -> bool:
    test, holds = branch.test, branch.holds
    while test.op == "not" and test.args:
        test, holds = test.args[0], not holds
    return holds and test.op == "ref" and test.text.rpartition(".")[2] == "TYPE_CHECKING"


def _join(outer: str, name: str) -> str:
    return f"{outer}.{name}" if outer else name


def _error_lines(root: Node) -> tuple[int, ...]:
    if not root.has_error:
        return ()
    lines: set[int] = set()
    # Walk only into subtrees that contain an error: cheap for mostly valid files.
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            lines.add(node.start_point.row + 1)
            continue
        stack.extend(c for c in node.children if c.has_error or c.is_missing)
    return tuple(sorted(lines))


def function_header(source: bytes, line: int) -> tuple[str, str] | None:
    """(parameters text, decorators text) of the function defined at `line` (1-based), as
    written; None when no function starts there. For patches that copy a signature."""
    root = _parser().parse(source).root_node
    cursor = QueryCursor(compiled_query("definitions"))
    for _, caps in cursor.matches(root):
        node = caps.get("function.definition", [None])[0]
        if node is None or node.start_point.row + 1 != line:
            continue
        params = caps["function.parameters"][0]
        parent = node.parent
        decorators = ""
        if parent is not None and parent.type == "decorated_definition":
            decorators = "\n".join(_text(d) for d in parent.named_children if d.type == "decorator")
        return _text(params), decorators
    return None
