"""One handler per query file, found by the query's name: each turns that query's matches
into rows, and its rows into facts once every site has its Context.

A new query is its `queries/<name>.scm` (declaring its pass), a handler registered here with
`@handles("<name>")`, and its fixture `tests/queries/test_<name>.py`;
tests/queries/test_query_files.py fails when one of the three is missing. Handlers run in
registration order; `after` names the handlers whose shared state (see Extraction) one
reads, and registration checks they come first.
"""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from tracker.extract.contexts import Interval, if_intervals, tolerates_attribute_error
from tracker.extract.extraction import Captures, Extraction, Matches
from tracker.extract.facts import (
    Assign,
    Branch,
    Call,
    ClassDef,
    Effect,
    FunctionDef,
    Import,
    Param,
    Read,
    Return,
)
from tracker.extract.forwards import forward_fact, param_name
from tracker.extract.nodes import cond_of, line_of, node_text, short_text, value_of

Handler = Callable[[Extraction, Matches], None]

# Query name -> its handler, in run order.
HANDLERS: dict[str, Handler] = {}


def handles(query: str, *, after: tuple[str, ...] = ()) -> Callable[[Handler], Handler]:
    """Register the handler of `query`, to run after the handlers of `after`."""

    def register(handler: Handler) -> Handler:
        if query in HANDLERS:
            raise ValueError(f"two handlers for query {query!r}")
        missing = [name for name in after if name not in HANDLERS]
        if missing:
            raise ValueError(f"the handler of {query!r} must be registered after {missing}")
        HANDLERS[query] = handler
        return handler

    return register


# --------------------------------------------------------------------------- definitions


@handles("definitions")
def on_definitions(ex: Extraction, matches: Matches) -> None:
    """Classes and functions: scopes for the sweep, ClassDef and FunctionDef facts."""
    decorators: dict[int, list[str]] = {}
    class_sites: list[tuple[int, Node, Node, Node | None]] = []
    func_sites: list[tuple[int, Node, Node, Node]] = []
    for caps in matches:
        for deco in caps.get("definition.decorator", ()):
            parent = deco.parent
            target = parent.child_by_field_name("definition") if parent is not None else None
            if target is not None:
                decorators.setdefault(target.start_byte, []).append(short_text(deco).lstrip("@"))
        if "class.definition" in caps:
            node = caps["class.definition"][0]
            bases = caps.get("class.bases", [None])[0]
            ex.intervals.append(
                Interval(
                    node.start_byte,
                    node.end_byte,
                    "scope",
                    name=node_text(caps["class.name"][0]),
                    is_class=True,
                )
            )
            class_sites.append((ex.site(node, definition=True), node, caps["class.name"][0], bases))
        elif "function.definition" in caps:
            node = caps["function.definition"][0]
            ex.intervals.append(
                Interval(
                    node.start_byte,
                    node.end_byte,
                    "scope",
                    name=node_text(caps["function.name"][0]),
                )
            )
            func_sites.append(
                (
                    ex.site(node, definition=True),
                    node,
                    caps["function.name"][0],
                    caps["function.parameters"][0],
                )
            )
    ex.later(lambda: _definition_facts(ex, decorators, class_sites, func_sites))


def _definition_facts(
    ex: Extraction,
    decorators: dict[int, list[str]],
    class_sites: list[tuple[int, Node, Node, Node | None]],
    func_sites: list[tuple[int, Node, Node, Node]],
) -> None:
    for slot, node, name, bases in class_sites:
        ex.facts.classes.append(
            ClassDef(
                name=node_text(name),
                qualname=_join(ex.context(slot).scope, node_text(name)),
                line=line_of(node),
                end_line=node.end_point.row + 1,
                bases=tuple(
                    short_text(a)
                    for a in bases.named_children
                    if a.type not in ("keyword_argument", "comment")
                )
                if bases is not None
                else (),
                decorators=tuple(decorators.get(node.start_byte, ())),
            )
        )
    ex.class_names.update(c.qualname for c in ex.facts.classes)
    for slot, node, fn_name, params in func_sites:
        outer = ex.context(slot).scope
        ex.facts.functions.append(
            FunctionDef(
                name=node_text(fn_name),
                qualname=_join(outer, node_text(fn_name)),
                line=line_of(node),
                end_line=node.end_point.row + 1,
                params=_params(params),
                decorators=tuple(decorators.get(node.start_byte, ())),
                owner=outer if outer in ex.class_names else None,
            )
        )


# ------------------------------------------------------------------------------ branches


@handles("branches")
def on_branches(ex: Extraction, matches: Matches) -> None:
    """Everything that makes code run only sometimes, as intervals for the sweep; and the
    calls that are asserted (`assert f()`, `if not f(): raise`)."""
    seen_try: set[int] = set()
    for caps in matches:
        if "if.statement" in caps:
            _on_if(ex, caps)
        elif "boolean.expression" in caps:
            expr = caps["boolean.expression"][0]
            right = caps["boolean.right"][0]
            op_node = expr.child_by_field_name("operator")
            holds = op_node is None or node_text(op_node) == "and"
            branch = Branch(cond_of(caps["boolean.left"][0]), holds)
            ex.intervals.append(
                Interval(right.start_byte, right.end_byte, "branch", branches=(branch,))
            )
        elif "ternary.expression" in caps:
            _on_ternary(ex, caps["ternary.expression"][0])
        elif "try.body" in caps:
            _on_try(ex, caps["try.body"][0], seen_try)
        elif "assert.test" in caps:
            test_node = caps["assert.test"][0]
            if test_node.type == "call":
                ex.asserted_calls.add((test_node.start_byte, test_node.end_byte))
        else:
            message = next(
                (caps[c][0] for c in ("message.raised", "message.asserted") if c in caps),
                None,
            )
            if message is not None:
                ex.intervals.append(Interval(message.start_byte, message.end_byte, "message"))


def _on_if(ex: Extraction, caps: Captures) -> None:
    if_intervals(caps["if.statement"][0], ex.intervals)
    cond_node = caps["if.condition"][0]
    body = caps["if.consequence"][0]
    if (
        cond_node.type == "not_operator"
        and body.named_child_count
        and body.named_children[-1].type == "raise_statement"
    ):
        arg = cond_node.child_by_field_name("argument")
        if arg is not None and arg.type == "call":
            ex.asserted_calls.add((arg.start_byte, arg.end_byte))


def _on_ternary(ex: Extraction, expression: Node) -> None:
    parts = expression.named_children
    if len(parts) != 3:
        return
    then_node, test_node, else_node = parts
    test = cond_of(test_node)
    ex.intervals.append(
        Interval(then_node.start_byte, then_node.end_byte, "branch", branches=(Branch(test, True),))
    )
    ex.intervals.append(
        Interval(
            else_node.start_byte, else_node.end_byte, "branch", branches=(Branch(test, False),)
        )
    )


def _on_try(ex: Extraction, body: Node, seen_try: set[int]) -> None:
    statement = body.parent
    # One match per handler: judge all of a statement's handlers together, once.
    if statement is None or statement.start_byte in seen_try:
        return
    seen_try.add(statement.start_byte)
    handlers = [c for c in statement.named_children if c.type == "except_clause"]
    if tolerates_attribute_error(handlers):
        ex.intervals.append(Interval(body.start_byte, body.end_byte, "try"))


# --------------------------------------------------------------------------------- calls


@handles("call_sites", after=("branches",))
def on_call_sites(ex: Extraction, matches: Matches) -> None:
    """Call facts; the spans of `receiver.member` callees, which are not attribute reads."""
    rows: list[tuple[int, Node, str, str | None, Node]] = []
    for caps in matches:
        site = caps["call.site"][0]
        member = caps["call.member"][0]
        receiver_nodes = caps.get("call.receiver")
        receiver = short_text(receiver_nodes[0]) if receiver_nodes else None
        if receiver_nodes:
            ex.call_function_spans.add((receiver_nodes[0].start_byte, member.end_byte))
        rows.append((ex.site(site), site, node_text(member), receiver, caps["call.arguments"][0]))

    def finish() -> None:
        for slot, site, member_name, receiver, arguments in rows:
            positional, keywords, star, texts = _argument_shape(arguments)
            ex.facts.calls.append(
                Call(
                    name=member_name,
                    receiver=receiver,
                    line=line_of(site),
                    context=ex.context(slot),
                    positional=positional,
                    keywords=keywords,
                    star_args=star,
                    args=texts,
                    asserted=(site.start_byte, site.end_byte) in ex.asserted_calls,
                )
            )

    ex.later(finish)


# ------------------------------------------------------------------------------ forwards


@handles("getattr_forwards", after=("definitions",))
def on_getattr_forwards(ex: Extraction, matches: Matches) -> None:
    """Forward facts for `__getattr__` methods of classes.

    The class a forward target holds flows through local names
    (`cls = _SUPPORT_VERSION[v]; inner = cls(...); self.inner = inner`): a module that
    forwards gets its local assignments even when its pass does not run `assignments`."""
    rows = [
        (
            ex.site(caps["forward.definition"][0], definition=True),
            caps["forward.definition"][0],
            caps["forward.param"][0],
            caps["forward.body"][0],
        )
        for caps in matches
    ]
    if rows:
        ex.ensure("assignments")

    def finish() -> None:
        for slot, node, param, body in rows:
            owner = ex.context(slot).scope
            if owner in ex.class_names:
                ex.facts.forwards.append(
                    forward_fact(owner, line_of(node), param_name(param), body)
                )

    ex.later(finish)


# --------------------------------------------------------------------------- assignments


@handles("assignments", after=("getattr_forwards",))
def on_assignments(ex: Extraction, matches: Matches) -> None:
    """Assign facts; their targets' spans (attribute targets are writes, not reads)."""
    _assignment_rows(ex, matches)


@handles("definition_assignments", after=("assignments",))
def on_definition_assignments(ex: Extraction, matches: Matches) -> None:
    """Assign facts of what a class or module defines (a `self.x = ...` both assignment
    queries match is kept once)."""
    _assignment_rows(ex, matches)


def _assignment_rows(ex: Extraction, matches: Matches) -> None:
    rows: list[tuple[int, Node, Node, Node]] = []
    for caps in matches:
        site = caps["assign.site"][0]
        target = caps["assign.target"][0]
        value = caps["assign.value"][0]
        targets = (
            [t for t in target.named_children if t.type != "comment"]
            if target.type in ("pattern_list", "tuple_pattern", "list_pattern")
            else [target]
        )
        for t in targets:
            if (t.start_byte, t.end_byte) in ex.store_spans:
                continue  # `self.x = ...` matched by both assignment queries
            ex.store_spans.add((t.start_byte, t.end_byte))
            rows.append((ex.site(site), t, value, site))
    ex.later(lambda: ex.facts.assigns.extend(_assign(ex, *row) for row in rows))


def _assign(ex: Extraction, slot: int, target: Node, value: Node, site: Node) -> Assign:
    while value.type == "assignment":  # `self.model = model = Ctor(...)`
        inner = value.child_by_field_name("right")
        if inner is None:
            break
        value = inner
    value_call = None
    value_names: tuple[str, ...] = ()
    if value.type == "call":
        func = value.child_by_field_name("function")
        value_call = short_text(func) if func is not None else None
    elif value.type in ("list", "tuple"):
        value_names = tuple(
            short_text(v) for v in value.named_children if v.type in ("identifier", "attribute")
        )
    elif value.type == "dictionary":
        value_names = _dict_value_names(value)
    operator = site.child_by_field_name("operator")
    return Assign(
        target=short_text(target),
        line=line_of(site),
        context=ex.context(slot),
        value_call=value_call,
        value_names=value_names,
        value=value_of(value),
        op=node_text(operator) if operator is not None else "=",
    )


# --------------------------------------------------------------------------------- reads


@handles("attribute_reads", after=("call_sites", "assignments", "definition_assignments"))
def on_attribute_reads(ex: Extraction, matches: Matches) -> None:
    """Read facts, except callees of method calls and assignment targets."""
    rows: list[tuple[int, str, str, int, str]] = []
    for caps in matches:
        if "read.site" in caps:
            site = caps["read.site"][0]
            span = (site.start_byte, site.end_byte)
            if span in ex.call_function_spans or span in ex.store_spans:
                continue
            member, kind = caps["read.member"][0], "attr"
        elif "read.key_site" in caps:
            site = caps["read.key_site"][0]
            if (site.start_byte, site.end_byte) in ex.store_spans:
                continue
            if len(site.children_by_field_name("subscript")) != 1:
                continue  # `frame["a", "b"]` indexes with a tuple, not a constant key
            member, kind = caps["read.key"][0], "key"
        else:
            continue
        rows.append(
            (
                ex.site(site),
                node_text(member),
                short_text(caps["read.receiver"][0]),
                line_of(site),
                kind,
            )
        )
    ex.later(
        lambda: ex.facts.reads.extend(
            Read(name=n, receiver=r, line=line, context=ex.context(slot), kind=kind)
            for slot, n, r, line, kind in rows
        )
    )


# --------------------------------------------------------------------------------- effects


@handles("capture_sites")
def on_capture_sites(ex: Extraction, matches: Matches) -> None:
    """Effect facts: the statements EAGLE3's aux-hidden-state contract follows."""
    rows = _effect_rows(ex, matches)
    ex.later(
        lambda: ex.facts.effects.extend(
            Effect(kind, text, line, ex.context(slot).scope, value, args)
            for slot, kind, text, line, value, args in rows
        )
    )


_EffectRow = tuple[int, str, str, int, str, tuple[str, ...]]


def _effect_rows(ex: Extraction, matches: Matches) -> list[_EffectRow]:
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
        if "read.site" in caps:
            reads.append(caps["read.site"][0])
            continue
        if "call.site" in caps:
            site = caps["call.site"][0]
            if (site.start_byte, site.end_byte) in seen_calls:
                continue
            seen_calls.add((site.start_byte, site.end_byte))
        row = _effect_row(ex, caps)
        if row is not None:
            rows.append(row)
    for node in reads:
        if (node.start_byte, node.end_byte) not in written:
            rows.append((ex.site(node), "read", short_text(node), line_of(node), "", ()))
    return rows


def _effect_row(ex: Extraction, caps: Captures) -> _EffectRow | None:
    """The row of one write, unpack, loop, local or call match."""
    if "write.site" in caps:
        target = caps["write.target"][0]
        site, kind, text, line = caps["write.site"][0], "write", short_text(target), line_of(target)
        value = short_text(caps["write.value"][0])
    elif "unpack.site" in caps:
        targets = caps["unpack.targets"][0]
        text = ",".join(short_text(t) for t in targets.named_children if t.type != "comment")
        site, kind, line = caps["unpack.site"][0], "unpack", line_of(targets)
        value = short_text(caps["unpack.value"][0])
    elif "loop.site" in caps:
        site, kind, text = caps["loop.site"][0], "loop", short_text(caps["loop.target"][0])
        line, value = line_of(site), short_text(caps["loop.iter"][0])
    elif "local.site" in caps:
        site, kind, text = caps["local.site"][0], "local", node_text(caps["local.name"][0])
        line, value = line_of(site), short_text(caps["local.value"][0])
    elif "call.site" in caps:
        site = caps["call.site"][0]
        args = _argument_texts(caps["call.arguments"][0])
        return (
            ex.site(site),
            "call",
            short_text(caps["call.function"][0]),
            line_of(site),
            "",
            args,
        )
    else:
        return None
    return (ex.site(site), kind, text, line, value, ())


# ------------------------------------------------------------------------ returns, imports


@handles("returns")
def on_returns(ex: Extraction, matches: Matches) -> None:
    """Return facts: `SpeculativeAlgorithm.is_*()` bodies, what worker factories return."""
    rows = [(ex.site(caps["return.site"][0]), caps["return.value"][0]) for caps in matches]
    ex.later(
        lambda: ex.facts.returns.extend(
            Return(cond_of(value), line_of(value), ex.context(slot)) for slot, value in rows
        )
    )


@handles("imports")
def on_imports(ex: Extraction, matches: Matches) -> None:
    """Import facts, with their scope and whether they sit under `if TYPE_CHECKING:`."""
    rows: list[tuple[int, str, str | None, str | None, int, int]] = []
    for caps in matches:
        if "import.from" in caps:
            module, level = _relative_module(caps["import.from"][0])
            if "import.wildcard" in caps:
                name: str | None = "*"
                anchor = caps["import.wildcard"][0]
            else:
                anchor = caps["import.name"][0]
                name = node_text(anchor)
        else:
            anchor = caps["import.module"][0]
            module, level, name = node_text(anchor), 0, None
        alias_nodes = caps.get("import.alias")
        alias = node_text(alias_nodes[0]) if alias_nodes else None
        rows.append((ex.site(anchor), module, name, alias, level, line_of(anchor)))

    def finish() -> None:
        for slot, module, name, alias, level, line in rows:
            context = ex.context(slot)
            ex.facts.imports.append(
                Import(
                    module=module,
                    name=name,
                    alias=alias,
                    level=level,
                    line=line,
                    scope=context.scope,
                    type_checking=any(_is_type_checking(br) for br in context.branches),
                )
            )

    ex.later(finish)


# -------------------------------------------------------------------------------- helpers


def _params(node: Node) -> tuple[Param, ...]:
    params: list[Param] = []
    keyword_only = False
    for child in node.named_children:
        kind = child.type
        if kind == "identifier":
            params.append(Param(node_text(child), "keyword_only" if keyword_only else "positional"))
        elif kind in ("typed_parameter", "default_parameter", "typed_default_parameter"):
            name_node = child.child_by_field_name("name")
            if name_node is None:  # typed_parameter holds its name (or a splat) as a child
                first = child.named_children[0] if child.named_child_count else None
                splat_type = child.child_by_field_name("type")
                splat_annotation = short_text(splat_type) if splat_type is not None else None
                if first is not None and first.type == "list_splat_pattern":
                    params.append(
                        Param(
                            node_text(first).lstrip("*"),
                            "var_positional",
                            annotation=splat_annotation,
                        )
                    )
                    keyword_only = True
                    continue
                if first is not None and first.type == "dictionary_splat_pattern":
                    params.append(
                        Param(
                            node_text(first).lstrip("*"), "var_keyword", annotation=splat_annotation
                        )
                    )
                    continue
                name_node = first
            type_node = child.child_by_field_name("type")
            default_node = child.child_by_field_name("value")
            params.append(
                Param(
                    node_text(name_node) if name_node is not None else "?",
                    "keyword_only" if keyword_only else "positional",
                    has_default=kind != "typed_parameter",
                    annotation=short_text(type_node) if type_node is not None else None,
                    default=short_text(default_node) if default_node is not None else None,
                )
            )
        elif kind == "list_splat_pattern":
            params.append(Param(node_text(child).lstrip("*"), "var_positional"))
            keyword_only = True
        elif kind == "keyword_separator":
            keyword_only = True
        elif kind == "dictionary_splat_pattern":
            params.append(Param(node_text(child).lstrip("*"), "var_keyword"))
    return tuple(params)


def _argument_shape(
    arguments: Node,
) -> tuple[int, tuple[tuple[str, str], ...], bool, tuple[str, ...]]:
    if arguments.type != "argument_list":  # f(x for x in xs)
        return 1, (), False, (short_text(arguments),)
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
                    node_text(name) if name is not None else "?",
                    short_text(value) if value is not None else "",
                )
            )
        elif kind in ("list_splat", "dictionary_splat"):
            star = True
        elif kind != "comment":
            positional += 1
            if len(texts) < 6:
                texts.append(short_text(arg))
    return positional, tuple(keywords), star, tuple(texts)


def _relative_module(node: Node) -> tuple[str, int]:
    if node.type == "relative_import":
        text = node_text(node)
        stripped = text.lstrip(".")
        return stripped, len(text) - len(stripped)
    return node_text(node), 0


def _argument_texts(arguments: Node) -> tuple[str, ...]:
    """Every argument's text, keywords as `name=value`, splats as written."""
    return tuple(short_text(a) for a in arguments.named_children if a.type != "comment")


def _dict_value_names(node: Node) -> tuple[str, ...]:
    """The names a dict literal maps its keys to (`{(2, 6): MiniCPMV2_6}` -> MiniCPMV2_6)."""
    out = []
    for pair in node.named_children:
        value = pair.child_by_field_name("value") if pair.type == "pair" else None
        if value is not None and value.type in ("identifier", "attribute"):
            out.append(short_text(value))
    return tuple(out)


def _is_type_checking(branch: Branch) -> bool:
    test, holds = branch.test, branch.holds
    while test.op == "not" and test.args:
        test, holds = test.args[0], not holds
    return holds and test.op == "ref" and test.text.rpartition(".")[2] == "TYPE_CHECKING"


def _join(outer: str, name: str) -> str:
    return f"{outer}.{name}" if outer else name
