"""Plain facts about one Python module: what the parse stage hands to everything above it.

Nothing here knows tree-sitter. Every value is an immutable NamedTuple of strings, ints,
bools and tuples, so facts can be cached by content id, compared in tests, and built by
hand for tests of the analysis stages. (NamedTuples rather than dataclasses: a warm run
unpickles tens of thousands of them, and tuples load about four times faster.)

Lines are 1-based. `scope` is the dotted qualified name of the enclosing function or class
inside the module (`EAGLEWorker.__init__`), or "" at module level.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

# Bumped whenever the shape or meaning of the facts changes: part of every cache key.
FACTS_FORMAT = 5


class Cond(NamedTuple):
    """A boolean expression as a small tree, enough to decide which algorithms it admits.

    op: "and" | "or" | "not" (args are operands), "call" (text is the callee, e.g.
    `self.spec_algorithm.is_eagle3`), "ref" (a name or attribute chain), "cmp" (text is the
    operator, args the operands), "seq" (a tuple/list/set literal, args its items),
    "str" (a string literal, text its value), or "other" (text is the source, shortened).
    """

    op: str
    text: str  # for "cmp": the operators in order, comma-separated ("<,<=")
    args: tuple[Cond, ...] = ()

    def render(self) -> str:
        if self.op in ("and", "or"):
            return f" {self.op} ".join(_paren(a) for a in self.args)
        if self.op == "not":
            inner = self.args[0]
            text = inner.render()
            bare = inner.op in ("call", "ref", "str", "seq") or " " not in text
            return f"not {text}" if bare else f"not ({text})"
        if self.op == "call":
            return f"{self.text}({', '.join(a.render() for a in self.args)})"
        if self.op == "cmp":
            parts = [self.args[0].render()] if self.args else []
            for operator, operand in zip(self.text.split(","), self.args[1:], strict=False):
                parts += [operator, operand.render()]
            return " ".join(parts)
        if self.op == "seq":
            return "(" + ", ".join(a.render() for a in self.args) + ")"
        if self.op == "str":
            return repr(self.text)
        return self.text


def _paren(cond: Cond) -> str:
    text = cond.render()
    return f"({text})" if cond.op in ("and", "or") else text


def split_top(text: str, sep: str) -> list[str]:
    """`text` split at `sep` outside brackets and strings."""
    parts, depth, start, i, quote = [], 0, 0, 0, ""
    while i < len(text):
        ch = text[i]
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            i += len(sep)
            start = i
            continue
        i += 1
    parts.append(text[start:])
    return parts


# Constants a test or a value may be written as, and their truth.
_CONSTANT_TRUTH = {"True": True, "False": False, "None": False, "0": False, "1": True}


def literal_truth(text: str) -> bool | None:
    """The truth of a constant written as `text` (`False`, `None`, `0`, ...), or None
    when it is not one."""
    return _CONSTANT_TRUTH.get(text.strip())


def conjoin(conditions: Iterable[str]) -> str:
    """Rendered conditions that all hold, as one: a part with an `or` at its top level is
    parenthesised, or `a or b` then `c` would read `a or (b and c)`."""
    parts = [c for c in conditions if c]
    if len(parts) == 1:
        return parts[0]
    return " and ".join(f"({c})" if len(split_top(c, " or ")) > 1 else c for c in parts)


class Branch(NamedTuple):
    """One enclosing condition of a site: the site runs only when `test` is `holds`."""

    test: Cond
    holds: bool
    # The other way raises (`if bad: raise ...` above the site): the code asserts the
    # branch, so only a test the algorithm decides makes the site conditional.
    raises: bool = False

    def render(self) -> str:
        """The condition under which the site runs, with double negations worked out:
        `if not x: return` leaves `x`, and `not (not a or not b)` reads `a and b`."""
        return simplified(self.test if self.holds else Cond("not", "", (self.test,))).render()


# A comparison and the one that holds exactly when it does not. Orderings are left alone:
# `not (a < b)` is not `a >= b` for values without a total order (NaN, sets).
_NEGATED = {
    "==": "!=",
    "!=": "==",
    "is": "is not",
    "is not": "is",
    "in": "not in",
    "not in": "in",
}


def simplified(cond: Cond) -> Cond:
    """`cond` with `not` pushed through an and/or at least half of whose operands are
    negated (De Morgan), `not not x` dropped and `not (a != b)` read `a == b`; other negations stay
    where they are."""
    if cond.op != "not" or not cond.args:
        if cond.op in ("and", "or"):
            return cond._replace(args=tuple(simplified(a) for a in cond.args))
        return cond
    inner = cond.args[0]
    negated = _negation(inner)
    if negated is not None:
        return simplified(negated)
    if inner.op in ("and", "or"):
        operands = [_negation(a) for a in inner.args]
        # Pushed through when that removes as many negations as it adds:
        # `not (not a or b)` reads `a and not b`.
        if 2 * sum(o is not None for o in operands) >= len(operands):
            flipped = "or" if inner.op == "and" else "and"
            return Cond(
                flipped,
                "",
                tuple(
                    simplified(o if o is not None else Cond("not", "", (a,)))
                    for o, a in zip(operands, inner.args, strict=True)
                ),
            )
    return Cond("not", "", (simplified(inner),))


def _negation(cond: Cond) -> Cond | None:
    """`cond`'s opposite without a `not` in front, or None when it has none: `not x` gives
    `x`, and one comparison (a chain `a < b < c` is not one) `a != b` gives `a == b`."""
    if cond.op == "not" and cond.args:
        return cond.args[0]
    if cond.op == "cmp" and cond.text in _NEGATED and len(cond.args) == 2:
        return cond._replace(text=_NEGATED[cond.text])
    return None


class Context(NamedTuple):
    """Where a site sits: its enclosing function/class and the conditions around it."""

    scope: str
    branches: tuple[Branch, ...] = ()
    # Inside `try:` whose handlers catch AttributeError: an absent member is tolerated.
    catches_attribute_error: bool = False
    # Inside an error message: what a `raise` raises, an `assert`'s message, the arguments
    # of a logging call. What is read there describes a failure; it is not used to serve.
    in_message: bool = False


class Param(NamedTuple):
    name: str
    kind: str  # "positional" | "keyword_only" | "var_positional" | "var_keyword"
    has_default: bool = False
    annotation: str | None = None
    # The default's text (shortened): `language_model_cls=Qwen3_5ForCausalLM` picks the
    # class a base's `__init__` constructs.
    default: str | None = None


class FunctionDef(NamedTuple):
    name: str
    qualname: str
    line: int
    end_line: int
    params: tuple[Param, ...]
    decorators: tuple[str, ...] = ()
    # Qualified name of the class whose body defines it, or None for plain functions.
    owner: str | None = None


class ClassDef(NamedTuple):
    name: str
    qualname: str
    line: int
    end_line: int
    bases: tuple[str, ...]  # as written: "nn.Module", "DeepseekV2ForCausalLM"
    decorators: tuple[str, ...] = ()


class Call(NamedTuple):
    """A call `receiver.name(...)` or `name(...)`."""

    name: str
    receiver: str | None  # full text of the object the method is called on, or None
    line: int
    context: Context
    positional: int = 0
    # Keyword arguments as (name, value text shortened).
    keywords: tuple[tuple[str, str], ...] = ()
    star_args: bool = False  # *args or **kwargs: the arity is not exact
    # Text of the first positional arguments (shortened): hasattr/getattr/get operands,
    # and models passed on to helpers (`configure(model=self.model)`, `f(target_model)`).
    args: tuple[str, ...] = ()
    # The call is the test of an `assert`, or of `if not <call>: raise ...`: when it is
    # false the program stops, so whatever it checks is required, not optional.
    asserted: bool = False


class Read(NamedTuple):
    """An attribute read `receiver.name`, or a constant-key subscript `receiver["name"]`."""

    name: str
    receiver: str
    line: int
    context: Context
    kind: str = "attr"  # "attr" | "key"


class Assign(NamedTuple):
    """`target = value` (also annotated and augmented assignments)."""

    target: str  # "self.language_model", "EntryClass", "target_model"
    line: int
    context: Context
    value_call: str | None = None  # callee text when the value is a call
    # Names/attribute chains in a list/tuple value, or the values of a dict literal
    # (`{(2, 6): MiniCPMV2_6, ...}`: a class picked by key).
    value_names: tuple[str, ...] = ()
    value: Cond | None = None  # the value as an expression tree (shortened)
    op: str = "="  # "=", or an augmented operator ("+=", "|=", ...)


class Return(NamedTuple):
    value: Cond
    line: int
    context: Context


class Effect(NamedTuple):
    """A statement EAGLE3's aux-hidden-state contract follows (queries/capture_sites.scm).

    kind: "write" (text: the attribute written, `self.model.layers_to_capture`; value: the
    value), "unpack" (text: the targets comma-joined; value: what is unpacked), "loop"
    (text: the loop target; value: the iterable), "local" (text: a name; value: the
    subscript bound to it), "read" (text: a capture attribute read, `layer._is_layer_to_capture`),
    "call" (text: the callee, `self.model`, `aux_hidden_states.append`; args: argument
    texts, keywords as `name=value`).
    """

    kind: str
    text: str
    line: int
    scope: str
    value: str = ""
    args: tuple[str, ...] = ()


class Forward(NamedTuple):
    """A class's `__getattr__`: where an attribute the class lacks is looked up next.

    `targets`: the objects the name is forwarded to, as written (`self.minicpmv` for
    `return getattr(self.minicpmv, name)`). `exempt`: names answered before any forward
    (`if name == "minicpmv": return None`); one ending in `*` is a prefix (`name.startswith`).
    `tries_super`: `super().__getattr__(name)` is tried too (before or after, in a
    `try/except AttributeError`). `problem`: why the body is not a forward the analysis
    can follow, or "".
    """

    owner: str  # qualified name of the class
    line: int
    targets: tuple[str, ...] = ()
    exempt: tuple[str, ...] = ()
    tries_super: bool = False
    problem: str = ""


class Import(NamedTuple):
    """`import module as alias` (name None) or `from module import name as alias`."""

    module: str  # absolute or relative without dots: "sglang.srt.models", "x.y"
    name: str | None
    alias: str | None
    level: int  # leading dots of a relative import
    line: int
    scope: str
    type_checking: bool = False


class ModuleFacts(NamedTuple):
    path: str
    content_id: str
    classes: tuple[ClassDef, ...] = ()
    functions: tuple[FunctionDef, ...] = ()
    imports: tuple[Import, ...] = ()
    calls: tuple[Call, ...] = ()
    reads: tuple[Read, ...] = ()
    assigns: tuple[Assign, ...] = ()
    returns: tuple[Return, ...] = ()
    effects: tuple[Effect, ...] = ()
    forwards: tuple[Forward, ...] = ()
    error_lines: tuple[int, ...] = ()  # lines of ERROR/MISSING nodes
    # Read with the definition queries only (no calls, reads or conditions): model files.
    definitions_only: bool = False
    # Why the facts are incomplete or empty (not UTF-8, parse time budget exceeded), or "".
    problem: str = ""

    @property
    def module_name(self) -> str:
        return module_name(self.path)


def module_name(path: str) -> str:
    """`python/sglang/srt/models/kimi_k25.py` -> `sglang.srt.models.kimi_k25`."""
    rel = path.removeprefix("python/")
    rel = rel.removesuffix(".py")
    rel = rel.removesuffix("/__init__")
    return rel.replace("/", ".")
