"""What the conditions around a requirement's site are worth for one pair of checkpoints.

A site's test may read the checkpoints' configs three ways, and each is followed in the
release's own code:
- directly (`getattr(self.draft_model_runner.model_config.hf_config, "eagle_config")`),
  the draft's config when the chain names a draft, the target's when it names a target;
- through a flag set from a config key (`self.eagle_use_aux_hidden_state =
  eagle_config.get("use_aux_hidden_state", True)` in model_runner.py): every assignment of
  the flag is run in source order under its own conditions;
- through an attribute of the model (`self.draft_runner.model.load_lm_head_from_target`)
  that the loaded class's `__init__` sets from its config (`if config.draft_vocab_size is
  None: self.load_lm_head_from_target = True`).
Algorithm predicates and role flags are decided as the interface decides them. Anything
else is not decided here, and a test of a config key, flag or model attribute that stays
undecided is listed with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tracker.analysis.algorithms import Algorithms
from tracker.analysis.architectures import LoadEvaluator, Reader
from tracker.analysis.compat import provision
from tracker.analysis.config_values import (
    UNKNOWN,
    CheckpointConfig,
    ConfigFact,
    Evaluator,
    Val,
    chain,
    known,
    literal,
)
from tracker.analysis.index import VersionIndex, key
from tracker.analysis.roles import RoleRules
from tracker.analysis.vocabulary import PROVIDED
from tracker.extract.facts import Assign, Cond, ModuleFacts
from tracker.sources.base import SRT_PREFIX

_CONFIG_HOLDERS = ("hf_config", "hf_text_config")


@dataclass(frozen=True)
class Node:
    """A part of a config read at a site: which checkpoint, which key, and whether the
    file has it (what `.get` or a subscript below it reads)."""

    role: str
    key: str
    present: bool
    value: Any = None
    default: Any = None  # what the code takes when it is absent (getattr's default)


class _Raises:
    """A read that raises (`None.get(...)`): inside a `try`, the assignment does not run."""


RAISES = _Raises()


@dataclass
class Pair:
    """What one answer knows: the release, its algorithms, the two checkpoints and the
    classes they load, the algorithm asked about."""

    index: VersionIndex
    algos: Algorithms
    rules: RoleRules
    read: Reader
    algorithm: str
    configs: Mapping[str, CheckpointConfig]  # role -> its config
    classes: Mapping[str, str]  # role -> index key of the class it loads
    undecided: list[tuple[str, str, str]] = field(default_factory=list)  # (what, where, why)
    _flags: dict[tuple[str, str, str], Val] = field(default_factory=dict)
    _busy: set[str] = field(default_factory=set)
    _assigned: dict[str, list[tuple[ModuleFacts, Assign]]] | None = None

    def assignments(self, name: str) -> list[tuple[ModuleFacts, Assign]]:
        """Every `<name>.<attr> = ...` of the code read in full whose attribute is `name`."""
        if self._assigned is None:
            self._assigned = {}
            for facts in self.index.iter_modules():
                if facts.definitions_only:
                    continue
                for a in facts.assigns:
                    receiver, dot, last = a.target.rpartition(".")
                    if dot and receiver.isidentifier():
                        self._assigned.setdefault(last, []).append((facts, a))
        return self._assigned.get(name, [])

    def note(self, what: str, where: str, why: str) -> None:
        row = (what, where, why)
        if row not in self.undecided:
            self.undecided.append(row)


def where_of(facts: ModuleFacts, line: int) -> str:
    return f"{facts.path.removeprefix(SRT_PREFIX)}:{line}"


class SiteEvaluator(Evaluator):
    """A test at one place of the serving code, for the algorithm and one role."""

    def __init__(self, pair: Pair, role: str, facts: ModuleFacts, scope: str, line: int) -> None:
        super().__init__()
        self.pair = pair
        self.role = role
        self.facts = facts
        self.scope = scope
        self.line = line

    @property
    def where(self) -> str:
        return where_of(self.facts, self.line)

    def atom(self, cond: Cond) -> Val | None:
        if cond.op in ("call", "ref", "cmp"):
            decided = self.algorithm_verdict(cond)
            if decided is not None:
                return decided
        if cond.op in ("ref", "other"):
            parts = chain(cond.text)
            return self.read(parts, cond.text) if parts is not None else None
        if cond.op == "call":
            return self.call(cond)
        return None

    def algorithm_verdict(self, cond: Cond) -> Val | None:
        verdict = self.pair.algos.evaluate(cond)
        if not verdict.decided:
            return None
        here = (self.pair.algorithm, self.role)
        true, false = here in verdict.may_true, here in verdict.may_false
        return known(true) if true != false else None

    # ---------------------------------------------------------------- names and chains

    def read(self, parts: tuple[str | int, ...], text: str) -> Val | None:
        holder = next((i for i, p in enumerate(parts) if p in _CONFIG_HOLDERS), None)
        if holder is not None:
            return self.config_node(parts[:holder], parts[holder + 1 :], text)
        if len(parts) == 1 and isinstance(parts[0], str):
            local = self.local(parts[0])
            if local is not None:
                return local
        name = parts[-1]
        if name == self.pair.rules.draft_models.draft_path_attribute:
            return self.draft_path(name)
        if len(parts) >= 2 and isinstance(name, str):
            receiver = _text(parts[:-1])
            role = self.model_role(receiver, name)
            if role is not None:
                return self.attribute(role, name, text)
        if isinstance(name, str):
            owner = self.own_class() if parts[0] == "self" and len(parts) == 2 else None
            return flag_value(self.pair, name, self.role, owner, text, self.where)
        return None

    def draft_path(self, option: str) -> Val:
        """`server_args.speculative_draft_model_path`: set exactly when the draft comes
        from a checkpoint of its own (--draft-config); the answer gives it a path."""
        draft = self.pair.configs.get("draft")
        given = draft is not None and not draft.from_target
        return known(given, ConfigFact("draft", option, given, of_path=True))

    def config_node(
        self, prefix: tuple[str | int, ...], rest: tuple[str | int, ...], text: str
    ) -> Val:
        role = _named_role(prefix)
        config = self.pair.configs.get(role or "")
        if role is None or config is None:
            self.pair.note(
                text, self.where, "the tracker cannot tell which checkpoint's config this is"
            )
            return UNKNOWN
        if not rest:
            return known(Node(role, "", True, dict(config.values)))
        present, value = config.lookup(rest)
        dotted = _dotted(rest)
        return known(Node(role, dotted, present, value), ConfigFact(role, dotted, present, value))

    def local(self, name: str) -> Val | None:
        """A local of the site's function assigned above it (`eagle_config = getattr(...)`)."""
        found = [
            a
            for a in self.facts.assigns
            if a.target == name and a.context.scope == self.scope and a.line < self.line
        ]
        if not found:
            return None
        last = max(found, key=lambda a: a.line)
        return SiteEvaluator(self.pair, self.role, self.facts, self.scope, last.line).assigned(last)

    def assigned(self, a: Assign) -> Val:
        """The value `a` assigns, its call read with its arguments."""
        if a.value is None:
            return UNKNOWN
        if a.value.op != "call":
            return self.value(a.value)
        receiver, _, name = a.value.text.rpartition(".")
        for call in self.facts.calls:
            if (
                call.line == a.line
                and call.context.scope == a.context.scope
                and call.name == name
                and (call.receiver or "") == receiver
            ):
                return self.value(
                    Cond("call", a.value.text, tuple(_argument(t) for t in call.args))
                )
        return UNKNOWN

    def own_class(self) -> str | None:
        fn = self.pair.index.functions.get(key(self.facts.module_name, self.scope))
        return fn.owner if fn is not None else None

    def model_role(self, receiver: str, member: str) -> str | None:
        """ "target" or "draft" when `receiver.member` touches that model (role rules)."""
        owner = self.own_class()
        cls = owner.rpartition(".")[2] if owner else None
        touched = self.pair.rules.touched(self.facts.module_name, cls, receiver, member)
        if touched is None or touched[2] != "direct":
            return None
        role = touched[0].role
        return self.role if role == "runner" else role

    # ---------------------------------------------------------------------- calls

    def call(self, cond: Cond) -> Val | None:
        name, args = cond.text, cond.args
        if name in ("getattr", "hasattr") and len(args) >= 2 and args[1].op == "str":
            return self.probe(name, args)
        receiver, dot, method = name.rpartition(".")
        if dot and method == "get" and args and args[0].op == "str":
            parent = self.value(Cond("ref", receiver))
            default = args[1] if len(args) > 1 else Cond("other", "None")
            return _child(parent, args[0].text, self.value(default), default.render())
        return None

    def probe(self, name: str, args: tuple[Cond, ...]) -> Val | None:
        obj, member = args[0], args[1].text
        parts = chain(obj.text) if obj.op in ("ref", "other") else None
        if parts is None:
            return None
        role = self.model_role(_text(parts), member)
        if role is not None:
            if name == "hasattr":
                return self.has(role, member, obj.text)
            return self.attribute(role, member, f"{obj.text}.{member}")
        parent = self.value(obj)
        if not parent.known or not isinstance(parent.value, Node):
            return None
        default = args[2] if len(args) > 2 else None
        child = _child(
            parent,
            member,
            self.value(default) if default else UNKNOWN,
            default.render() if default else "",
        )
        if name == "hasattr" and child.known and isinstance(child.value, Node):
            return known(child.value.present, *child.facts)
        return child

    # ------------------------------------------------------------ model attributes

    def has(self, role: str, member: str, text: str) -> Val:
        cls = self.pair.classes.get(role)
        if cls is None:
            return UNKNOWN
        how = provision(self.pair.index, cls, member).how
        if how == "unknown":
            self.pair.note(f"hasattr({text}, {member!r})", self.where, "its provision is unknown")
            return UNKNOWN
        name = self.pair.index.classes[cls].name
        has = how in PROVIDED
        return known(has, ConfigFact(role, f"{name}.{member}", has, of_class=True))

    def attribute(self, role: str, member: str, text: str) -> Val:
        cls = self.pair.classes.get(role)
        config = self.pair.configs.get(role)
        if cls is None or config is None:
            return UNKNOWN
        found, why = attribute_value(self.pair, cls, member, config)
        # A class that lacks the member altogether: the check reports that already.
        if not found.known and provision(self.pair.index, cls, member).how != "missing":
            self.pair.note(text, self.where, why)
        return found


def _child(parent: Val, name: str, default: Val, default_text: str) -> Val:
    """`parent.get(name, default)` / `getattr(parent, name, default)` on a config part."""
    if not parent.known or not isinstance(parent.value, Node):
        return UNKNOWN
    node = parent.value
    dotted = f"{node.key}.{name}" if node.key else name
    if node.present and isinstance(node.value, Mapping):
        if name in node.value:
            value = node.value[name]
            return known(
                Node(node.role, dotted, True, value), ConfigFact(node.role, dotted, True, value)
            )
        fact = ConfigFact(node.role, dotted, False, default=default_text)
        return (
            known(Node(node.role, dotted, False, default.value), fact) if default.known else UNKNOWN
        )
    if node.present or node.default is None:
        return known(RAISES)  # `.get` of None, or of a value that is no mapping
    fact = ConfigFact(node.role, dotted, False, default=default_text)
    return known(Node(node.role, dotted, False, default.value), fact) if default.known else UNKNOWN


def plain(found: Val) -> Val:
    """A config part as the value it holds (the default where the file lacks it)."""
    if found.known and isinstance(found.value, Node):
        node = found.value
        return Val(True, node.value if node.present else node.default, found.facts)
    return found


def _named_role(prefix: tuple[str | int, ...]) -> str | None:
    text = _text(prefix).lower()
    if "draft" in text:
        return "draft"
    if "target" in text:
        return "target"
    return None


def _text(parts: tuple[str | int, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts).lstrip(".")


def _dotted(parts: tuple[str | int, ...]) -> str:
    return _text(parts)


_QUOTED = re.compile(r"""^(["'])(.*)\1$""")


def _argument(text: str) -> Cond:
    """A call argument's text as the Cond the conditions would hold."""
    quoted = _QUOTED.match(text.strip())
    if quoted is not None:
        return Cond("str", quoted.group(2))
    if chain(text) is not None and not literal(text).known:
        return Cond("ref", text.strip())
    return Cond("other", text.strip())


# ------------------------------------------------------------- a class's attribute


def attribute_value(pair: Pair, cls: str, member: str, config: CheckpointConfig) -> tuple[Val, str]:
    """What `member` holds on an instance of `cls` once `__init__` has run for
    `config`, and why not when that is not known. Assignments outside `__init__`
    (`load_weights` setting `hot_token_id` from the weights) leave it undecided."""
    index = pair.index
    for c in index.mro(cls)[0]:
        info = index.classes[c]
        facts = pair.read(info.module)
        if facts is None:
            return UNKNOWN, f"cannot read {info.path}"
        prefix = info.facts.qualname + "."
        sets = [
            a
            for a in facts.assigns
            if a.target == f"self.{member}" and a.context.scope.startswith(prefix)
        ]
        if not sets:
            continue
        elsewhere = sorted(
            {a.context.scope for a in sets if not a.context.scope.endswith(".__init__")}
        )
        if elsewhere:
            return UNKNOWN, f"{info.name} also sets it outside __init__ ({', '.join(elsewhere)})"
        found, missing = _run_assignments(pair, sets, config)
        why = "; ".join(missing) or "its conditions there are not decided"
        return found, f"{info.name}.__init__ sets it from its config: {why}"
    return UNKNOWN, f"{index.classes[cls].name}.__init__ does not set it"


def _run_assignments(
    pair: Pair, sets: list[Assign], config: CheckpointConfig
) -> tuple[Val, list[str]]:
    """The value left by `sets` (one `__init__`, in source order) for `config`, and the
    keys it lacks that left it undecided."""
    flag = pair.rules.draft_models.draft_model_flag
    architectures = list(config.values.get("architectures") or ())
    current = UNKNOWN
    facts: list[ConfigFact] = []
    missing: list[str] = []
    for a in sorted(sets, key=lambda a: a.line):
        evaluator = LoadEvaluator(config, architectures, pair.algorithm, flag)
        runs = evaluator.branches(a.context.branches)
        missing += [why for _, why in evaluator.undecided if why not in missing]
        facts += runs.facts
        if runs.false:
            continue
        value = evaluator.value(a.value) if a.value is not None else UNKNOWN
        if not runs.known:
            same = value.known and current.known and value.value == current.value
            current = current if same else UNKNOWN
            continue
        current = value
        facts += value.facts
    if not current.known:
        return UNKNOWN, missing
    return Val(True, current.value, tuple(dict.fromkeys(facts))), missing


# --------------------------------------------------------------------------- flags


def flag_value(
    pair: Pair, name: str, role: str, owner: str | None, text: str, where: str
) -> Val | None:
    """What a flag holds when every assignment of it in the release runs for this pair
    (None when no assignment reads a config: then it is not the checkpoints' to decide).
    `owner`: the class whose `self.<name>` is read, to run only its own assignments."""
    memo = (name, role, owner or "")
    if memo in pair._flags:
        return pair._flags[memo]
    if name in pair._busy:
        return UNKNOWN
    pair._busy.add(name)
    try:
        found = _flag_value(pair, name, role, owner)
    finally:
        pair._busy.discard(name)
    if found is not None and not found.known:
        pair.note(text, where, f"the assignments of {name} are not decided for these checkpoints")
    if found is not None:
        pair._flags[memo] = found
    return found


def _flag_value(pair: Pair, name: str, role: str, owner: str | None) -> Val | None:
    groups: dict[str, list[tuple[ModuleFacts, Assign]]] = {}
    reads_config = False
    for facts, a in pair.assignments(name):
        scope = a.context.scope
        receiver = a.target.rpartition(".")[0]
        mine = scope.rpartition(".")[0] if receiver == "self" else scope
        groups.setdefault(f"{facts.module_name}:{mine}", []).append((facts, a))
        if not reads_config and _reads_call(a):
            here = SiteEvaluator(pair, role, facts, scope, a.line)
            found = here.assigned(a)
            reads_config = found.known and (isinstance(found.value, Node) or bool(found.facts))
    if not reads_config:
        return None
    if owner is not None and owner in {g.partition(":")[2] for g in groups}:
        groups = {g: rows for g, rows in groups.items() if g.partition(":")[2] == owner}
    values = [v for v in (_run_flag(pair, role, rows) for rows in groups.values()) if v is not None]
    if not values or not all(v.known for v in values):
        return UNKNOWN
    if len({repr(v.value) for v in values}) != 1:
        return UNKNOWN
    return Val(True, values[0].value, tuple(dict.fromkeys(f for v in values for f in v.facts)))


def _reads_call(a: Assign) -> bool:
    """The value is a call that may read a config: a `.get` or a `getattr`."""
    if a.value is None or a.value.op != "call":
        return False
    return a.value.text.endswith(".get") or a.value.text == "getattr"


def _run_flag(pair: Pair, role: str, rows: list[tuple[ModuleFacts, Assign]]) -> Val | None:
    """The flag's value after one owner's assignments ran in source order; None when
    none of them runs for the pair."""
    current: Val | None = None
    for facts, a in sorted(rows, key=lambda r: r[1].line):
        here = SiteEvaluator(pair, role, facts, a.context.scope, a.line)
        runs = here.branches(a.context.branches)
        if runs.false:
            continue
        value = plain(here.assigned(a))
        if value.known and value.value is RAISES:
            if a.context.catches_attribute_error:
                continue  # the try/except around it keeps the value before
            value = UNKNOWN
        if not runs.known:
            if current is None or not (
                value.known and current.known and value.value == current.value
            ):
                current = UNKNOWN
            continue
        current = Val(True, bool(value.value), value.facts) if value.known else UNKNOWN
    return current
