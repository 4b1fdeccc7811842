"""What an expression in a worker may denote: the data flow that tells which class a receiver
is (so a call dispatches on the concrete class) and whether it is the target or the draft
model (so its members are requirements).

Values are followed through local names, `self.x` assignments (only in the methods the
object's own class really runs: an overridden `__init__` assigns nothing), properties,
constructor arguments (`TpModelWorker(..., is_draft_worker=True)` is remembered on the
object), parameters bound by the caller, and what helpers in any module return
(`bundle = build_draft_tp_worker(...)`; `bundle.draft_model`). An object whose class holds the
model (roles.toml `[[model_holder]]`: a `ModelRunner`'s `.model`) gives the target or the draft
model by its role flag (`is_draft_worker`). Where the flow loses the object, the value is
empty: the role rules' receiver patterns still apply to the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from tracker.analysis.algorithms import parse_bool
from tracker.analysis.index import VersionIndex, key, split_key
from tracker.analysis.roles import RoleRules
from tracker.extract.facts import Assign, Call, Cond, FunctionDef, Read, Return, split_top

_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")
_QUOTED = re.compile(r"""(['"])\w+\1""")

# Nesting of objects held in constructor arguments, and depth of one evaluation: beyond them
# a value is cut to what is known so far (generated or pathological code stays cheap).
MAX_NESTING = 2
MAX_DEPTH = 24
# Contexts (bound parameters) kept per function by the walk before they are merged.
MAX_CONTEXTS = 6


class Obj(NamedTuple):
    """An instance of an SGLang class, with the constructor arguments worth remembering."""

    cls: str
    fields: tuple[tuple[str, Value], ...] = ()
    # The algorithm its methods run as, when it was built after the code set
    # `server_args.speculative_algorithm` to another one (a fork's worker building an inner
    # EAGLEWorker); "" for the algorithm being walked.
    runs_as: str = ""

    def field(self, name: str) -> Value | None:
        for n, v in self.fields:
            if n == name:
                return v
        return None


class Value(NamedTuple):
    """What an expression may be: instances, the target/draft model ("runner": the model of a
    runner whose role is not known), a literal (its source text), class or function objects,
    or a method of one of the instances (`self.helper` as a value)."""

    objs: frozenset[Obj] = frozenset()
    models: frozenset[str] = frozenset()
    literal: str | None = None
    classes: frozenset[str] = frozenset()
    functions: frozenset[str] = frozenset()
    # It may also be something the flow does not know (an assignment it could not read);
    # `nullable`: one of the things it may be is None.
    unknown: bool = False
    nullable: bool = False
    # Read from a per-batch object (roles.toml `[runtime]`): a parameter bound to
    # `logits_output.hidden_states` is tested both ways over a server's life.
    runtime: bool = False

    def __bool__(self) -> bool:
        return bool(self.objs or self.models or self.literal or self.classes or self.functions)

    def union(self, other: Value) -> Value:
        """Either value; an empty side is something unknown."""
        if not other and not self:
            return EMPTY
        literal = self.literal if self.literal == other.literal else None
        return Value(
            self.objs | other.objs,
            self.models | other.models,
            literal,
            self.classes | other.classes,
            self.functions | other.functions,
            unknown=self.unknown or other.unknown or not self or not other,
            nullable=self.nullable or other.nullable,
            runtime=self.runtime and other.runtime,
        )

    def truth(self) -> bool | None:
        """Whether it is truthy, when the flow can tell: objects are, None and False are
        not."""
        if self.unknown or not self:
            return None
        if self.literal is not None and not (self.objs or self.classes or self.functions):
            if self.literal in ("None", "False", ""):
                return False
            return True if self.literal == "True" or self.literal else None
        if self.nullable:
            return None
        if self.objs or self.classes or self.functions:
            return True
        return None


EMPTY = Value()


def join(values: Iterable[Value]) -> Value:
    """What any of `values` may be (an empty one among them: something unknown)."""
    out: Value | None = None
    for v in values:
        out = v if out is None else out.union(v)
    return out if out is not None else EMPTY


class Frame(NamedTuple):
    """A function as one call runs it: the object `self` is, and the parameters its caller
    bound to something the flow knows."""

    function: str
    self_obj: Obj | None = None
    params: tuple[tuple[str, Value], ...] = ()

    def param(self, name: str) -> Value | None:
        for n, v in self.params:
            if n == name:
                return v
        return None


# ----------------------------------------------------------------------- expressions

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LITERALS = frozenset({"True", "False", "None"})
# Calls that build a mapping from their arguments: a subscript of one is one of its values.
_CONTAINERS = frozenset({"dict", "defaultdict", "collections.defaultdict"})
_STRING = re.compile(r"""^(?:[rbuf]?)(['"])([^'"\\]*)\1$""")


def parse_chain(text: str) -> tuple[str, list[tuple[str, str]]] | None:
    """`self.a[0].b(x).c` -> ("self", [("attr", "a"), ("index", "0"), ("attr", "b"),
    ("call", "x"), ("attr", "c")]); None for anything but a chain of names, subscripts and
    calls (operators, literals, comprehensions)."""
    text = text.strip()
    head = _NAME.match(text)
    if head is None:
        return None
    steps: list[tuple[str, str]] = []
    pos = head.end()
    if text.startswith("super()"):
        after = _rest(text, len("super()"), steps)
        return None if after is None else ("super()", after)
    rest = _rest(text, pos, steps)
    return None if rest is None else (head.group(0), rest)


def _rest(text: str, pos: int, steps: list[tuple[str, str]]) -> list[tuple[str, str]] | None:
    n = len(text)
    while pos < n:
        ch = text[pos]
        if ch == ".":
            name = _NAME.match(text, pos + 1)
            if name is None:
                return None
            steps.append(("attr", name.group(0)))
            pos = name.end()
        elif ch in "[(":
            end = _closing(text, pos)
            if end < 0:
                return None
            steps.append(("index" if ch == "[" else "call", text[pos + 1 : end]))
            pos = end + 1
        else:
            return None
    return steps


def _closing(text: str, start: int) -> int:
    """The index of the bracket that closes the one at `start`, or -1."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack: list[str] = []
    quote = ""
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if ch == quote:
                quote = ""
            continue
        if ch in "'\"":
            quote = ch
        elif ch in pairs:
            stack.append(pairs[ch])
        elif stack and ch == stack[-1]:
            stack.pop()
            if not stack:
                return i
    return -1


def literal_of(text: str) -> str | None:
    text = text.strip()
    if text in _LITERALS:
        return text
    found = _STRING.match(text)
    return found.group(2) if found is not None else None


# --------------------------------------------------------------------------- the flow


@dataclass(frozen=True)
class Holder:
    """A class whose instances hold a model in an attribute, its role told by a flag."""

    cls: str  # class name (it or a base of the object's class)
    attribute: str  # "model"


@dataclass
class Flow:
    """Evaluates expressions of one version's code in frames (see the module docstring)."""

    index: VersionIndex
    rules: RoleRules
    holders: tuple[Holder, ...] = ()
    # The algorithm names (`SpeculativeAlgorithm` members): a rewrite sets one of them.
    algorithms: frozenset[str] = frozenset()
    _calls: dict[str, list[Call]] = field(default_factory=dict)
    _reads: dict[str, list[Read]] = field(default_factory=dict)
    _assigns: dict[str, list[Assign]] = field(default_factory=dict)
    _returns: dict[str, list[Return]] = field(default_factory=dict)
    _attr_memo: dict[tuple[Obj, str], Value] = field(default_factory=dict)
    _return_memo: dict[Frame, Value] = field(default_factory=dict)
    _live: dict[str, frozenset[str]] = field(default_factory=dict)
    _inits: dict[Obj, tuple[Frame, ...]] = field(default_factory=dict)
    _busy: set[tuple[object, ...]] = field(default_factory=set)
    _depth: int = 0
    # Memos of answers that depend on the code only (not on what is being evaluated).
    _self_assign_memo: dict[tuple[str, str], list[Assign]] = field(default_factory=dict)
    _spelled_memo: dict[tuple[str, str, Cond, int], Cond] = field(default_factory=dict)
    _runtime_memo: dict[Cond, bool] = field(default_factory=dict)
    _value_memo: dict[tuple[Frame, str, int], Value] = field(default_factory=dict)
    # Functions that set `speculative_algorithm` to a value the analysis cannot follow
    # (function -> line): what they build is walked as the algorithm being walked.
    unfollowed_rewrites: dict[str, int] = field(default_factory=dict)
    _rewrite_memo: dict[tuple[str, int], tuple[str, ...] | None] = field(default_factory=dict)
    # Method names some code calls on an object other than its own (`worker.m()`), passes
    # on as a bound method (`f(self.m)`) or names to getattr: what may be called from
    # outside the class that defines them.
    called_from_outside: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        outside = self.called_from_outside
        for facts in self.index.iter_modules():
            module = facts.module_name
            for call in facts.calls:
                if call.receiver not in (None, "self", "cls") and not (
                    call.receiver or ""
                ).startswith("super("):
                    outside.add(call.name)
                for text in (*call.args, *(v for _, v in call.keywords)):
                    if _DOTTED.fullmatch(text):
                        outside.add(text.rpartition(".")[2])
                    elif call.name in ("getattr", "hasattr") and _QUOTED.fullmatch(text):
                        outside.add(text[1:-1])
                if call.context.scope:
                    self._calls.setdefault(key(module, call.context.scope), []).append(call)
            for read in facts.reads:
                if read.context.scope:
                    self._reads.setdefault(key(module, read.context.scope), []).append(read)
            for a in facts.assigns:
                if a.context.scope:
                    self._assigns.setdefault(key(module, a.context.scope), []).append(a)
            for r in facts.returns:
                if r.context.scope:
                    self._returns.setdefault(key(module, r.context.scope), []).append(r)

    # ------------------------------------------------------------------- look-ups

    def calls_in(self, function: str) -> list[Call]:
        return self._calls.get(function, [])

    def reads_in(self, function: str) -> list[Read]:
        return self._reads.get(function, [])

    def assigns_in(self, function: str) -> list[Assign]:
        return self._assigns.get(function, [])

    def returns_in(self, function: str) -> list[Return]:
        return self._returns.get(function, [])

    def call_at(self, function: str, line: int, name: str) -> Call | None:
        """The call of `name` at `line` (or, for a call spread over several lines, the
        first one below it)."""
        best: Call | None = None
        for call in self._calls.get(function, ()):
            if call.name != name or not line <= call.line <= line + 12:
                continue
            if best is None or call.line < best.line:
                best = call
        return best

    def rewrite_before(self, function: str, line: int) -> tuple[str, ...]:
        """The algorithms the function last set `<x>.speculative_algorithm` to above `line`
        (`server_args.speculative_algorithm = "EAGLE"`, or a name or a helper's result that
        can only be one of a few literal names), or () for none: no rewrite, a restore of
        what it read before (`= original_algo`), or a value the analysis cannot follow
        (kept in `unfollowed_rewrites`)."""
        last: Assign | None = None
        for a in self.assigns_in(function):
            if a.line >= line or a.target.rpartition(".")[2] != "speculative_algorithm":
                continue
            if a.value is not None and (last is None or a.line > last.line):
                last = a
        if last is None or last.value is None:
            return ()
        # Asked at every construction below the assignment: its names are worked out once.
        memo = (function, last.line)
        if memo not in self._rewrite_memo:
            self._rewrite_memo[memo] = self._algorithm_names(function, last.value, last.line, 0)
        names = self._rewrite_memo[memo]
        if names is None:
            self.unfollowed_rewrites.setdefault(function, last.line)
            return ()
        return names

    def built_as(self, frame: Frame, line: int) -> tuple[str, ...]:
        """The algorithms an object the frame's function builds at `line` runs as: what the
        function set `speculative_algorithm` to above it, else what the object building it
        runs as ("" for the algorithm being walked)."""
        rewritten = self.rewrite_before(frame.function, line)
        if rewritten:
            return rewritten
        return (frame.self_obj.runs_as if frame.self_obj is not None else "",)

    def _algorithm_names(
        self, function: str, value: Cond, line: int, depth: int
    ) -> tuple[str, ...] | None:
        """The algorithm names `value` may be; () when it reads the algorithm already set
        (a restore); None when it cannot be followed."""
        if value.op in ("str", "other"):
            text = value.text if value.op == "str" else value.text.strip("'\"")
            name = text.upper()
            if name in self.algorithms:
                return (name,)
            return () if text.rpartition(".")[2] == "speculative_algorithm" else None
        if depth > 3 or value.op not in ("ref", "call"):
            return None
        if value.op == "ref":
            tail = value.text.rpartition(".")[2]
            if tail == "speculative_algorithm":
                return ()
            if "." in value.text and tail in self.algorithms:  # SpeculativeAlgorithm.EAGLE3
                return (tail,)
            if "." in value.text:
                # An attribute (`server_args.algo`): the algorithm as configured, read where
                # it is kept; no rewrite to follow.
                return ()
            sources = [
                a
                for a in self.assigns_in(function)
                if a.target == value.text and a.line < line and a.op == "=" and a.value
            ]
            if not sources:
                return None
            source = max(sources, key=lambda a: a.line)
            assert source.value is not None
            return self._algorithm_names(function, source.value, source.line, depth + 1)
        if value.text.rpartition(".")[2] == "from_string":
            # SpeculativeAlgorithm.from_string(x): the name x is.
            args = [
                c.args[0]
                for c in self.calls_in(function)
                if c.name == "from_string" and line <= c.line <= line + 3 and c.args
            ]
            if not args:
                return None
            text = args[0]
            quoted = text[:1] in ("'", '"') and text[-1:] == text[:1]
            arg = Cond("str", text[1:-1]) if quoted else Cond("ref", text)
            return self._algorithm_names(function, arg, line, depth + 1)
        # A helper whose every return is one of the names.
        found: set[str] = set()
        callees = self._helpers(function, value.text)
        if not callees:
            return None
        for callee in callees:
            returns = self._returns.get(callee, ())
            if not returns:
                return None
            for r in returns:
                names = self._algorithm_names(callee, r.value, r.line, depth + 1)
                if not names:
                    return None
                found |= set(names)
        return tuple(sorted(found))

    def _helpers(self, function: str, callee: str) -> list[str]:
        """The functions `callee()` names from inside `function`: `self.m` on the
        function's own class, or a module-level or imported name."""
        module, scope = split_key(function)
        head, _, name = callee.rpartition(".")
        if head in ("self", "cls"):
            owner = self.owner_of(function)
            method = self.index.find_method(owner, name) if owner is not None else None
            return [method] if method is not None else []
        found = self.index.resolve_name(module, callee, scope)
        return [found] if found is not None and found in self.index.functions else []

    def module_of(self, function: str) -> str:
        return split_key(function)[0]

    def owner_of(self, function: str) -> str | None:
        fn = self.index.functions.get(function)
        if fn is None or fn.owner is None:
            return None
        return key(split_key(function)[0], fn.owner)

    # ------------------------------------------------------------------ evaluation

    def value(self, frame: Frame, text: str, line: int) -> Value:
        """What `text`, read at `line` of the frame's function, may be."""
        memo = (frame, text, line)
        known = self._value_memo.get(memo)
        if known is not None:
            return known
        found = self._value(frame, text, line)
        self._value_memo[memo] = found
        return found

    def _value(self, frame: Frame, text: str, line: int) -> Value:
        text = _unwrapped(text)
        literal = literal_of(text)
        if literal is not None:
            return Value(literal=literal, nullable=literal == "None")
        chain = parse_chain(text)
        if chain is None:
            if text.startswith("{"):  # a dict display, maybe subscripted: `{...}[key]`
                end = _closing(text, 0)
                steps = _rest(text, end + 1, []) if end > 0 else None
                if steps is not None:
                    shown = self._element(frame, text[: end + 1], line)
                    return self._steps(frame, shown, steps, line)
            return self._ternary(frame, text, line)
        head, steps = chain
        if self._depth > MAX_DEPTH:
            return EMPTY
        self._depth += 1
        try:
            current = self._head(frame, head, line)
            return self._steps(frame, current, steps, line, head)
        finally:
            self._depth -= 1

    def model_access(self, frame: Frame, receiver: str, line: int) -> list[tuple[str, str | None]]:
        """(role, member) for each model `receiver` reaches: member None when the receiver
        is the model itself, else the first name read after it (`<model>.layers[0].attn`:
        `layers`). A name called right after the model is a site of its own: left out."""
        chain = parse_chain(receiver)
        if chain is None:
            return []
        head, steps = chain
        if self._depth > MAX_DEPTH:
            return []
        self._depth += 1
        try:
            current = self._head(frame, head, line)
            i = 0
            while current:
                if current.models:
                    if i == len(steps):
                        return [(role, None) for role in sorted(current.models)]
                    kind, name = steps[i]
                    called = i + 1 < len(steps) and steps[i + 1][0] == "call"
                    if kind == "attr" and not called:
                        return [(role, name) for role in sorted(current.models)]
                    return []
                if i >= len(steps):
                    return []
                kind, text = steps[i]
                if kind == "attr" and i + 1 < len(steps) and steps[i + 1][0] == "call":
                    current = self.method_result(frame, current, text, steps[i + 1][1], line)
                    i += 2
                elif kind == "attr":
                    current = self.attribute_of(current, text)
                    i += 1
                elif kind == "call":
                    callee = steps[i - 1][1] if i else head
                    current = self._invoke(
                        frame, current, self.call_at(frame.function, line, callee)
                    )
                    i += 1
                else:
                    current = Value(objs=current.objs, models=current.models)
                    i += 1
            return []
        finally:
            self._depth -= 1

    def is_runtime(self, frame: Frame, cond: Cond, line: int) -> bool:
        """Whether the test reads only per-batch objects (roles.toml `[runtime]`), a local
        name counting by what it was assigned (`target_hidden = batch.spec_info.x`) and a
        parameter by what the caller passed."""
        if self._runtime(cond):
            return True
        memo = (frame.function, frame.self_obj.cls if frame.self_obj else "", cond, line)
        spelled = self._spelled_memo.get(memo)
        if spelled is None:
            spelled = self._spelled_memo[memo] = self._spelled_out(frame, cond, line, 0)
        if self._runtime(spelled):
            return True
        return self._param_runtime(frame, spelled)

    def _runtime(self, cond: Cond) -> bool:
        known = self._runtime_memo.get(cond)
        if known is None:
            known = self._runtime_memo[cond] = self.rules.is_runtime(cond)
        return known

    def _param_runtime(self, frame: Frame, cond: Cond) -> bool:
        if cond.op in ("and", "or", "not"):
            return bool(cond.args) and all(self._param_runtime(frame, a) for a in cond.args)
        if cond.op == "cmp" and cond.args:
            return self._param_runtime(frame, cond.args[0])
        if cond.op in ("ref", "call"):
            text = cond.args[0].text if cond.op == "call" and cond.args else cond.text
            head = text.partition(".")[0]
            bound = frame.param(head)
            return bound is not None and bound.runtime
        return False

    def _spelled_out(self, frame: Frame, cond: Cond, line: int, depth: int) -> Cond:
        """The test with local names (and the object's own attributes) replaced by what
        was assigned to them, as text."""
        if cond.op in ("and", "or", "not", "cmp") or (cond.op == "call" and cond.args):
            args = tuple(self._spelled_out(frame, a, line, depth) for a in cond.args)
            return cond._replace(args=args)
        if cond.op not in ("ref", "call") or depth > 4:
            return cond
        head, dot, rest = cond.text.partition(".")
        source: Assign | None = None
        if head == "self" and frame.self_obj is not None and dot:
            name, dot2, rest2 = rest.partition(".")
            found = self._self_assigns(frame.self_obj, name)
            if len(found) == 1:
                source, head, dot, rest = found[0], f"self.{name}", dot2, rest2
        else:
            for a in reversed(self.assigns_in(frame.function)):
                if a.target == head and a.line < line and a.op == "=":
                    source = a
                    break
        if (
            source is None
            or source.value is None
            or source.value.op not in ("ref", "call", "other")
        ):
            return cond
        spelled = source.value.text + ("()" if source.value.op == "call" else "")
        if spelled == head:
            return cond
        text = spelled + (dot + rest if dot else "")
        inner = Frame(frame.function) if head.startswith("self.") else frame
        return self._spelled_out(inner, cond._replace(text=text), line, depth + 1)

    def _self_assigns(self, obj: Obj, name: str) -> list[Assign]:
        memo = (obj.cls, name)
        known = self._self_assign_memo.get(memo)
        if known is None:
            target = f"self.{name}"
            known = [
                a
                for fn in sorted(self.live_methods(obj.cls))
                for a in self.assigns_in(fn)
                if a.target == target and a.op == "="
            ]
            self._self_assign_memo[memo] = known
        return known

    def condition(self, frame: Frame, cond: Cond, line: int) -> bool | None:
        """Whether a test holds in the frame, where the flow can tell: `self.draft_worker
        is not None` when every assignment stores an object, `if self.draft_worker:` when
        a property returns None."""
        op = cond.op
        if op == "not":
            inner = self.condition(frame, cond.args[0], line)
            return None if inner is None else not inner
        if op in ("and", "or"):
            parts = [self.condition(frame, a, line) for a in cond.args]
            if op == "and":
                return False if False in parts else None if None in parts else True
            return True if True in parts else None if None in parts else False
        if op == "ref":
            return self.value(frame, cond.text, line).truth()
        if op == "cmp" and cond.text in ("is", "is not", "==", "!=") and len(cond.args) == 2:
            left, right = cond.args
            if right.text != "None":
                return None
            v = self.value(frame, left.render(), line)
            if v.unknown or not v:
                return None
            if v.literal == "None" and not (v.objs or v.classes or v.functions or v.models):
                is_none: bool | None = True
            elif v.nullable:
                is_none = None
            else:
                is_none = False
            if is_none is None:
                return None
            return is_none if cond.text in ("is", "==") else not is_none
        return None

    def _ternary(self, frame: Frame, text: str, line: int) -> Value:
        """`A if c else B` and `A or B`: either side. `A if on_last_rank else None`, a test
        that differs between batches or ranks: A, since some batch or rank runs it."""
        for sep in (" if ", " or "):
            parts = split_top(text, sep)
            if len(parts) == 2:
                left, right = parts
                test = ""
                if sep == " if ":
                    tail = split_top(right, " else ")
                    if len(tail) != 2:
                        continue
                    test, right = tail
                if not (left.strip() and right.strip()):
                    continue
                a, b = self.value(frame, left, line), self.value(frame, right, line)
                cond = parse_bool(test) if test else None
                if cond is not None and self.is_runtime(frame, cond, line):
                    if b.literal == "None" and a:
                        return a._replace(runtime=True)
                    if a.literal == "None" and b:
                        return b._replace(runtime=True)
                return a.union(b)
        return EMPTY

    def _steps(
        self, frame: Frame, current: Value, steps: list[tuple[str, str]], line: int, head: str = ""
    ) -> Value:
        i = 0
        while i < len(steps) and current:
            kind, text = steps[i]
            if kind == "attr" and i + 1 < len(steps) and steps[i + 1][0] == "call":
                current = self.method_result(frame, current, text, steps[i + 1][1], line)
                i += 2
                continue
            if kind == "attr":
                current = self.attribute_of(current, text)
            elif kind == "call":
                callee = steps[i - 1][1] if i else head
                current = self._invoke(frame, current, self.call_at(frame.function, line, callee))
            else:  # a subscript: an element of a list (or dict) of objects is one of them
                current = Value(
                    objs=current.objs,
                    models=current.models,
                    classes=current.classes,
                    functions=current.functions,
                )
            i += 1
        return current

    def _head(self, frame: Frame, head: str, line: int) -> Value:
        if head == "self":
            return Value(objs=frozenset({frame.self_obj})) if frame.self_obj else EMPTY
        bound = frame.param(head)
        if bound is not None:
            return bound
        local = self._local(frame, head, line)
        if local is not None:
            return local
        fn = self.index.functions.get(frame.function)
        if fn is not None and any(p.name == head for p in fn.params):
            return self._unbound_param(frame.function, fn, head)
        module = self.module_of(frame.function)
        scope = split_key(frame.function)[1]
        found = self.index.resolve_name(module, head, scope)
        if found is None or found.startswith(("ext:", "mod:")):
            return EMPTY
        if found in self.index.classes:
            return Value(classes=frozenset({found}))
        if found in self.index.functions:
            return Value(functions=frozenset({found}))
        return EMPTY

    def _unbound_param(self, function: str, fn: FunctionDef, name: str) -> Value:
        """A parameter no caller bound: a class or function its default names, its literal
        default (the scheduler builds the target TpModelWorker without `is_draft_worker`),
        or an instance of its annotated SGLang class (`type[X]`: the class X)."""
        module, scope = split_key(function)
        for p in fn.params:
            if p.name != name:
                continue
            if p.default is not None:
                literal = literal_of(p.default)
                if literal is not None:
                    return Value(literal=literal, nullable=literal == "None")
                found = self.index.resolve_name(module, p.default.strip(), scope)
                if found is not None and found in self.index.classes:
                    return Value(classes=frozenset({found}))
                if found is not None and found in self.index.functions:
                    return Value(functions=frozenset({found}))
            if p.annotation:
                text = p.annotation.strip()
                as_class = re.fullmatch(r"(?:typing\.)?[Tt]ype\[(.+)\]", text)
                for candidate in _annotation_names(as_class.group(1) if as_class else text):
                    res = self.index.resolve_class(module, candidate, scope)
                    if res.symbol is not None:
                        if as_class:
                            return Value(classes=frozenset({res.symbol}))
                        return Value(objs=frozenset({Obj(res.symbol)}))
        return EMPTY

    def _local(self, frame: Frame, name: str, line: int) -> Value | None:
        """A local name's value: the union of its assignments above `line` in the function
        (None when it has none)."""
        found = [
            self.assigned(frame, a)
            for a in self.assigns_in(frame.function)
            # `x = x.y` on one line: the right side reads the older x
            if a.target == name and a.line < line and a.op == "="
        ]
        return join(found) if found else None

    def assigned(self, frame: Frame, a: Assign) -> Value:
        """The value an assignment stores."""
        marker = ("assign", frame, a.line, a.target)
        if marker in self._busy:
            return EMPTY
        self._busy.add(marker)
        try:
            if a.value_call:
                return self.call_value(frame, a.value_call, a.line)
            if a.value is not None:
                return self.value(frame, a.value.text, a.line)
            return EMPTY
        finally:
            self._busy.discard(marker)

    # --------------------------------------------------------------- attributes

    def attribute_of(self, current: Value, name: str) -> Value:
        parts = [self.attribute(obj, name) for obj in current.objs]
        if current.unknown:
            parts.append(EMPTY)
        for cls in current.classes:
            method = self.index.find_method(cls, name)
            parts.append(Value(functions=frozenset({method})) if method is not None else EMPTY)
        return join(parts)

    def attribute(self, obj: Obj, name: str) -> Value:
        memo = (obj, name)
        known = self._attr_memo.get(memo)
        if known is not None:
            return known
        marker = ("attr", obj, name)
        if marker in self._busy:
            return EMPTY
        self._busy.add(marker)
        try:
            found = self._attribute(obj, name)
        finally:
            self._busy.discard(marker)
        # Kept even when a cycle was cut short inside: the walk asks in one fixed order, so
        # the answer is the same on every run (never recomputing keeps cyclic code cheap).
        self._attr_memo[memo] = found
        return found

    def _attribute(self, obj: Obj, name: str) -> Value:
        holder = self.holder_of(obj.cls)
        if holder is not None and name == holder.attribute:
            return Value(models=frozenset({self.role_of_holder(obj)}))
        stored = obj.field(name)
        if stored is not None and self.index.find_method(obj.cls, "__init__") is None:
            return stored  # a dataclass-like object's field, as constructed
        method = self.index.find_method(obj.cls, name)
        if method is not None:
            fn = self.index.functions[method]
            if any(d.split("(")[0].rpartition(".")[2] in _PROPERTIES for d in fn.decorators):
                return self.returns(Frame(method, obj))
            return Value(functions=frozenset({method}))
        parts = []
        live = self.live_methods(obj.cls)
        for frame in self.frames_assigning(obj, live):
            for a in self.assigns_in(frame.function):
                if a.target == f"self.{name}" and a.op == "=":
                    parts.append(self.assigned(frame, a))
        return join(parts)

    def frames_assigning(self, obj: Obj, live: frozenset[str]) -> list[Frame]:
        """The frames in which the object's live methods run: its `__init__`s with what
        the construction (or a `super().__init__(...)`) bound, the others unbound."""
        inits = self.init_frames(obj)
        seen = {f.function for f in inits}
        return [*inits, *(Frame(m, obj) for m in sorted(live) if m not in seen)]

    def init_frames(self, obj: Obj) -> tuple[Frame, ...]:
        known = self._inits.get(obj)
        if known is not None:
            return known
        self._inits[obj] = ()
        frames: list[Frame] = []
        first = self.index.find_method(obj.cls, "__init__")
        pending = [Frame(first, obj, obj.fields)] if first else []
        while pending and len(frames) < 8:
            frame = pending.pop(0)
            if any(f.function == frame.function for f in frames):
                continue
            frames.append(frame)
            for call in self.calls_in(frame.function):
                if call.name != "__init__":
                    continue
                base = self._super_target(frame, call)
                if base is not None:
                    pending.append(Frame(base, obj, self.bind(frame, call, base)))
        self._inits[obj] = tuple(frames)
        return self._inits[obj]

    def _super_target(self, frame: Frame, call: Call) -> str | None:
        """The method `super().m(...)` or `Base.m(self, ...)` runs, for the frame's object."""
        obj = frame.self_obj
        if obj is None or call.receiver is None:
            return None
        if call.receiver == "super()":
            owner = self.owner_of(frame.function)
            mro = self.index.mro(obj.cls)[0]
            after = mro[mro.index(owner) + 1 :] if owner in mro else []
            for cls in after:
                info = self.index.classes[cls]
                if call.name in info.methods:
                    return key(info.module, info.methods[call.name].qualname)
            return None
        if call.args and call.args[0].strip() == "self":
            module, scope = split_key(frame.function)
            res = self.index.resolve_class(module, call.receiver, scope)
            if res.symbol is not None:
                return self.index.find_method(res.symbol, call.name)
        return None

    def live_methods(self, cls: str) -> frozenset[str]:
        """The methods an instance of `cls` really runs: what each name resolves to through
        its MRO, and the base methods those reach through `super()` or `Base.m(self)`."""
        known = self._live.get(cls)
        if known is not None:
            return known
        names: set[str] = set()
        for c in self.index.mro(cls)[0]:
            names |= set(self.index.classes[c].methods)
        live: set[str] = set()
        pending = [m for n in sorted(names) if (m := self.index.find_method(cls, n))]
        obj = Obj(cls)
        while pending:
            m = pending.pop()
            if m in live:
                continue
            live.add(m)
            for call in self.calls_in(m):
                base = self._super_target(Frame(m, obj), call)
                if base is not None and base not in live:
                    pending.append(base)
        self._live[cls] = frozenset(live)
        return self._live[cls]

    def holder_of(self, cls: str) -> Holder | None:
        if not self.holders:
            return None
        names = {self.index.classes[c].name for c in self.index.mro(cls)[0]}
        for holder in self.holders:
            if holder.cls in names:
                return holder
        return None

    def role_of_holder(self, obj: Obj) -> str:
        """ "target" or "draft" by the holder's role flag (`is_draft_worker`), else "runner"."""
        for flag, values in self.rules.role_flags.items():
            bound = obj.field(flag)
            literal = bound.literal if bound is not None else None
            if literal is None:
                literal = self.attribute(obj, flag).literal
            for role, value in values.items():
                if literal == str(value):
                    return role
        return "runner"

    # -------------------------------------------------------------------- calls

    def method_result(self, frame: Frame, current: Value, name: str, args: str, line: int) -> Value:
        """What `current.name(args)` returns."""
        call = self.call_at(frame.function, line, name)
        parts = []
        for obj in current.objs:
            method = self.index.find_method(obj.cls, name)
            if method is None:
                parts.append(EMPTY)
                continue
            fn = self.index.functions[method]
            if any(d.split("(")[0].rpartition(".")[2] in _PROPERTIES for d in fn.decorators):
                parts.append(EMPTY)
                continue
            params = self.bind(frame, call, method) if call is not None else ()
            parts.append(self.returns(Frame(method, obj, params)))
        for cls in current.classes:
            method = self.index.find_method(cls, name)
            params = self.bind(frame, call, method) if call is not None and method else ()
            parts.append(self.returns(Frame(method, None, params)) if method else EMPTY)
        if current.unknown or current.models:
            parts.append(EMPTY)
        return join(parts)

    def call_value(self, frame: Frame, callee: str, line: int) -> Value:
        """What the call of `callee` (its text: `ModelRunner`, `self.helper`,
        `worker.get_runner`) at `line` returns."""
        parts = split_top(callee, ".")
        receiver, name = ".".join(parts[:-1]), parts[-1]
        if len(parts) > 1:
            chain = parse_chain(receiver)
            if chain is None:
                return EMPTY
            current = self.value(frame, receiver, line)
            return self.method_result(frame, current, name, "", line)
        call = self.call_at(frame.function, line, callee)
        if callee in _CONTAINERS and call is not None:
            return join(self._element(frame, arg, line) for arg in call.args)
        return self._invoke(frame, self.value(frame, callee, line), call)

    def _element(self, frame: Frame, text: str, line: int) -> Value:
        """What an argument of `dict(...)`/`defaultdict(...)` puts in the container: the
        body of a default factory, the values of a dict display, a keyword's value."""
        text = text.strip()
        if text.startswith("lambda"):
            return self.value(frame, text.partition(":")[2], line)
        if text.startswith("{") and text.endswith("}"):
            pairs = [split_top(e, ":") for e in split_top(text[1:-1], ",") if e.strip()]
            return join(self.value(frame, ":".join(p[1:]), line) for p in pairs if len(p) > 1)
        name, eq, rest = text.partition("=")
        if eq and _NAME.fullmatch(name.strip()):
            return self.value(frame, rest, line)
        return self.value(frame, text, line)

    def call_result(self, frame: Frame, current: Value, args: str, line: int) -> Value:
        return self._invoke(frame, current, None)

    def _invoke(self, frame: Frame, callee: Value, call: Call | None) -> Value:
        """What calling `callee` gives: an instance of a class (its arguments remembered),
        or what a function returns."""
        parts = []
        for cls in sorted(callee.classes):
            init = self.index.find_method(cls, "__init__")
            if call is None:
                fields: tuple[tuple[str, Value], ...] = ()
            elif init is not None:
                fields = self.bind(frame, call, init)
            else:  # a dataclass, NamedTuple or struct: its fields are its keywords
                fields = self.bind_keywords(frame, call)
            line = call.line if call is not None else 0
            kept = _nested(fields, 0)
            parts.append(
                Value(objs=frozenset(Obj(cls, kept, r) for r in self.built_as(frame, line)))
            )
        for fn in sorted(callee.functions):
            params = self.bind(frame, call, fn) if call is not None else ()
            parts.append(self.returns(Frame(fn, self._bound_self(frame, fn), params)))
        if callee.unknown or callee.objs or callee.models:
            parts.append(EMPTY)  # calling an instance or a model: not followed
        return join(parts)

    def _bound_self(self, frame: Frame, fn: str) -> Obj | None:
        """`self.helper` looked up on the frame's object: the callee runs on it."""
        obj = frame.self_obj
        if obj is not None and fn in self.live_methods(obj.cls):
            return obj
        return None

    def returns(self, frame: Frame) -> Value:
        if in_models(frame.function):
            return EMPTY  # model files are read for definitions only, and the interface never
            # depends on them (tracker.analysis.reuse keys it without them)
        known = self._return_memo.get(frame)
        if known is not None:
            return known
        marker = ("returns", frame)
        if marker in self._busy:
            return EMPTY
        self._busy.add(marker)
        try:
            parts = []
            for r in self._returns.get(frame.function, ()):
                text = r.value.render() if r.value.op != "other" else r.value.text
                if r.value.op == "call":
                    parts.append(self.call_value(frame, r.value.text, r.line))
                else:
                    parts.append(self.value(frame, text, r.line))
            out = join(parts)
        finally:
            self._busy.discard(marker)
        self._return_memo[frame] = out
        return out

    def bind_keywords(self, frame: Frame, call: Call) -> tuple[tuple[str, Value], ...]:
        out = {}
        for name, text in call.keywords:
            v = self._argument(frame, text, call.line)
            if v is not None:
                out[name] = v
        return tuple(sorted(out.items()))

    def bind(self, frame: Frame, call: Call | None, callee: str) -> tuple[tuple[str, Value], ...]:
        """The callee's parameters bound to the call's arguments, where the flow knows what
        an argument is."""
        fn = self.index.functions.get(callee)
        if fn is None or call is None:
            return ()
        params = list(fn.params)
        if fn.owner is not None and params and params[0].name in ("self", "cls"):
            params = params[1:]
        args = list(call.args)
        if call.receiver is not None and args and args[0].strip() == "self":
            args = args[1:]  # `Base.__init__(self, ...)`
        positional = [p.name for p in params if p.kind == "positional"]
        names = {p.name for p in params}
        out: dict[str, Value] = {}
        for i, text in enumerate(args[: call.positional]):
            if i < len(positional):
                v = self._argument(frame, text, call.line)
                if v is not None:
                    out[positional[i]] = v
        for name, text in call.keywords:
            if name in names:
                v = self._argument(frame, text, call.line)
                if v is not None:
                    out[name] = v
        return tuple(sorted(out.items()))

    def _argument(self, frame: Frame, text: str, line: int) -> Value | None:
        v = self.value(frame, text, line)
        if v:
            return v
        if self.is_runtime(frame, Cond("ref", text), line):
            return Value(unknown=True, runtime=True)
        return None


_PROPERTIES = frozenset({"property", "cached_property"})


def in_models(symbol: str) -> bool:
    return ".models." in f".{split_key(symbol)[0]}."


def _unwrapped(text: str) -> str:
    """`( A if c else B )` -> `A if c else B`."""
    text = text.strip()
    while text.startswith("(") and _closing(text, 0) == len(text) - 1:
        text = text[1:-1].strip()
    return text


def _nested(fields: tuple[tuple[str, Value], ...], depth: int) -> tuple[tuple[str, Value], ...]:
    """Constructor arguments, objects inside them cut to `MAX_NESTING` levels."""
    out = []
    for name, v in fields:
        if v.functions or v.classes:
            v = Value(v.objs, v.models, v.literal)
        if v.objs:
            if depth >= MAX_NESTING:
                v = Value(frozenset(Obj(o.cls) for o in v.objs), v.models, v.literal)
            else:
                v = Value(
                    frozenset(Obj(o.cls, _nested(o.fields, depth + 1)) for o in v.objs),
                    v.models,
                    v.literal,
                )
        if v:
            out.append((name, v))
    return tuple(out)


def _annotation_names(text: str) -> Iterable[str]:
    cleaned = text.replace("Optional[", "").replace("Union[", "").replace("]", "")
    for name in re.findall(r"[A-Za-z_][A-Za-z0-9_.]*", cleaned.replace("'", "").replace('"', "")):
        if name not in ("None", "Optional", "Union", "list", "List", "tuple", "Tuple"):
            yield name
