"""A checkpoint's `config.json` values, and conditions evaluated on them in three values.

A condition of the analysed code (a `Cond` tree) is true, false, or not decided by what
the tracker knows. What decides it is kept with the answer (`ConfigFact`: "draft config
sets eagle_config.use_aux_hidden_state = false"), so every changed verdict says why.
What an atom means (a config key, a flag, a model attribute, an algorithm predicate) is
left to the caller (`Evaluator.atom`): this module only knows literals, comparisons and
the boolean operators.
"""

from __future__ import annotations

import ast
import itertools
import json
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from tracker.extract.facts import Branch, Cond


@dataclass(frozen=True)
class CheckpointConfig:
    """A checkpoint's `config.json`, as given on the command line."""

    role: str  # "target" | "draft": which model the checkpoint is loaded as
    path: str  # where it was read, for messages
    values: Mapping[str, Any]
    # The draft read from the target's own checkpoint (no --draft-config): the code falls
    # back to the target's path, and rewrites what it reads as a draft.
    from_target: bool = False

    def lookup(self, key: Sequence[str | int], text_first: bool = False) -> tuple[bool, Any]:
        """(whether `key` is there, its value). A multimodal checkpoint nests its language
        model's keys under `text_config`; SGLang copies those onto the top-level config when
        it has no key of that name, and `hf_text_config` reads the nested one first."""
        orders = [("text_config", *key), tuple(key)] if text_first else [tuple(key)]
        if not text_first:
            orders.append(("text_config", *key))
        for path in orders:
            found, value = _walk(self.values, path)
            if found:
                return True, value
        return False, None


def _walk(values: Any, path: Sequence[str | int]) -> tuple[bool, Any]:
    node = values
    for part in path:
        if isinstance(part, int):
            if not isinstance(node, list) or not -len(node) <= part < len(node):
                return False, None
            node = node[part]
        elif isinstance(node, Mapping) and part in node:
            node = node[part]
        else:
            return False, None
    return True, node


@dataclass(frozen=True)
class ConfigFact:
    """One value read from a checkpoint's config (or its absence). With `of_class`,
    whether the class loaded for it has a member (`key` is "Class.member"); with
    `of_path`, whether the checkpoint's path is given at all (`key` is the option)."""

    role: str
    key: str  # dotted: "eagle_config.use_aux_hidden_state"
    present: bool
    value: Any = field(default=None, hash=False)  # JSON: may be a dict or a list
    # What the code takes when the key is absent (a getattr/get default), as source text.
    default: str = ""
    of_class: bool = False
    of_path: bool = False

    def text(self) -> str:
        if self.of_path:
            given = "is given" if self.present else "is not given"
            return f"a {self.role} checkpoint path ({self.key}) {given}"
        if self.of_class:
            cls, _, member = self.key.partition(".")
            verb = "has" if self.present else "lacks"
            return f"the {self.role} class {cls} {verb} {member}"
        if self.present:
            return f"{self.role} config sets {self.key} = {json.dumps(self.value)}"
        tail = f" (the code's default {self.default} applies)" if self.default else ""
        return f"{self.role} config has no {self.key}{tail}"


@dataclass(frozen=True)
class Val:
    """A value the tracker knows (`known`), with the config facts that decided it."""

    known: bool
    value: Any = None
    facts: tuple[ConfigFact, ...] = ()

    @property
    def true(self) -> bool:
        return self.known and bool(self.value)

    @property
    def false(self) -> bool:
        return self.known and not self.value


UNKNOWN = Val(False)


def known(value: Any, *facts: ConfigFact) -> Val:
    return Val(True, value, tuple(dict.fromkeys(facts)))


_LITERAL = re.compile(r"""True|False|None|-?\d+(\.\d+)?|\{\}|\[\]|\(\)|"[^"\\]*"|'[^'\\]*'""")


def literal(text: str) -> Val:
    """A Python literal written in the source (`True`, `None`, `{}`, `"x"`, `3`)."""
    text = text.strip()
    if not _LITERAL.fullmatch(text):
        return UNKNOWN
    try:
        return known(ast.literal_eval(text))
    except (ValueError, SyntaxError):
        return UNKNOWN


_SEGMENT = re.compile(r"""\.?([A-Za-z_]\w*)|\[(-?\d+)\]|\[\s*["']([^"']+)["']\s*\]""")


def chain(text: str) -> tuple[str | int, ...] | None:
    """`self.hf_config.architectures[0]` as its parts ("self", "hf_config",
    "architectures", 0); None for anything that is not a plain chain."""
    text = text.replace(" ", "")
    parts: list[str | int] = []
    at = 0
    while at < len(text):
        found = _SEGMENT.match(text, at)
        if found is None or (at == 0 and text.startswith(".")):
            return None
        name, index, key = found.groups()
        parts.append(name if name is not None else int(index) if index is not None else key)
        at = found.end()
    return tuple(parts) if parts and isinstance(parts[0], str) else None


def _same(a: Any, b: Any) -> bool:
    """`is` on values read from JSON: identity for None and the booleans, else equality
    (two equal strings from a file and a literal are the same object only by chance)."""
    if a is None or b is None or isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return bool(a == b)


def _contains(a: Any, b: Any) -> bool:
    return bool(a in b)


def _lacks(a: Any, b: Any) -> bool:
    return a not in b


def _other(a: Any, b: Any) -> bool:
    return not _same(a, b)


_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "is": _same,
    "is not": _other,
    "in": _contains,
    "not in": _lacks,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


@dataclass
class Evaluator:
    """Evaluates conditions in three values. `atom` says what a name, a call or a whole
    comparison is worth here (a subclass's job); everything else is worked out."""

    # The atoms it could not decide although they read a config key, a flag or a model
    # attribute (a subclass adds them): listed with the answer.
    undecided: list[tuple[str, str]] = field(default_factory=list)

    def atom(self, cond: Cond) -> Val | None:
        """What `cond` is worth as a whole, or None to work it out from its parts."""
        return None

    def branches(self, branches: Sequence[Branch]) -> Val:
        """Whether code under all of `branches` runs. A branch whose other way raises
        (`if bad: raise ...` above) is the code's own check of its input: the code below
        runs once the checkpoint gets past it, and what that check says is not ours."""
        return self.lazy_all([partial(self.branch, b) for b in branches if not b.raises])

    def branch(self, branch: Branch) -> Val:
        found = self.test(branch.test)
        if not found.known:
            return found
        return known(bool(found.value) == branch.holds, *found.facts)

    def test(self, cond: Cond) -> Val:
        if cond.op == "not" and cond.args:
            inner = self.test(cond.args[0])
            return known(not inner.value, *inner.facts) if inner.known else UNKNOWN
        if cond.op == "and":
            return self.lazy_all([partial(self.test, a) for a in cond.args])
        if cond.op == "or":
            return self.lazy_any([partial(self.test, a) for a in cond.args])
        found = self.value(cond)
        return known(bool(found.value), *found.facts) if found.known else UNKNOWN

    def value(self, cond: Cond) -> Val:
        whole = self.atom(cond)
        if whole is not None:
            return whole
        if cond.op == "str":
            return known(cond.text)
        if cond.op == "seq":
            items = [self.value(a) for a in cond.args]
            if all(i.known for i in items):
                return known(tuple(i.value for i in items), *(f for i in items for f in i.facts))
            return UNKNOWN
        if cond.op == "cmp":
            return self.compare(cond)
        if cond.op in ("and", "or", "not"):
            return self.test(cond)
        if cond.op in ("other", "ref"):
            return literal(cond.text)
        return UNKNOWN

    def compare(self, cond: Cond) -> Val:
        operators = cond.text.split(",")
        if len(cond.args) != len(operators) + 1:
            return UNKNOWN
        values = [self.value(a) for a in cond.args]
        if not all(v.known for v in values):
            return UNKNOWN
        facts = tuple(f for v in values for f in v.facts)
        for op, (left, right) in zip(operators, itertools.pairwise(values), strict=True):
            check = _COMPARE.get(op.strip())
            if check is None:
                return UNKNOWN
            try:
                holds = bool(check(_comparable(left.value), _comparable(right.value)))
            except TypeError:
                return UNKNOWN
            if not holds:
                return known(False, *facts)
        return known(True, *facts)

    @classmethod
    def lazy_all(cls, parts: Sequence[Callable[[], Val]]) -> Val:
        """`and` as Python runs it: what follows a false operand is never evaluated (so
        `hasattr(m, "x") and m.x` does not ask for `m.x` of a class without it)."""
        done: list[Val] = []
        for part in parts:
            done.append(part())
            if done[-1].false:
                break
        return cls.all_of(done)

    @classmethod
    def lazy_any(cls, parts: Sequence[Callable[[], Val]]) -> Val:
        done: list[Val] = []
        for part in parts:
            done.append(part())
            if done[-1].true:
                break
        return cls.any_of(done)

    @staticmethod
    def all_of(parts: Sequence[Val]) -> Val:
        false = [p for p in parts if p.false]
        if false:
            return known(False, *false[0].facts)
        if all(p.known for p in parts):
            return known(True, *(f for p in parts for f in p.facts))
        return UNKNOWN

    @staticmethod
    def any_of(parts: Sequence[Val]) -> Val:
        true = [p for p in parts if p.true]
        if true:
            return known(True, *true[0].facts)
        if all(p.known for p in parts):
            return known(False, *(f for p in parts for f in p.facts))
        return UNKNOWN


def _comparable(value: Any) -> Any:
    """Lists compare with tuples as Python's `in` does with a list literal."""
    return tuple(value) if isinstance(value, list) else value
