"""The speculative algorithms of one version, read from its own code, and the evaluation of
conditions over them.

The algorithms are the members of the `SpeculativeAlgorithm` enum; its `is_*()` methods
are predicates over those members; the workers are the classes the code returns or builds
under a condition that names some algorithms (`create_worker`, or the scheduler in older
releases); flags such as `eagle_use_aux_hidden_state` imply the algorithms (and runner
role) under which they are set. A new algorithm in a new release appears by itself.

Conditions are evaluated over pairs (algorithm, role), role being "target" or "draft":
each atom says where it may be true and where it may be false, and whether it is decided
by the algorithm/role at all (`is_eagle3()` is; `batch.is_extend()` is not).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import product

from tracker.analysis.index import VersionIndex, split_key
from tracker.analysis.roles import RoleRules
from tracker.analysis.vocabulary import MODEL_ROLES
from tracker.extract.facts import Branch, Cond, ModuleFacts, literal_truth, split_top
from tracker.sources.base import SRT_PREFIX

ROLES = MODEL_ROLES
Pair = tuple[str, str]


@dataclass(frozen=True)
class Verdict:
    may_true: frozenset[Pair]
    may_false: frozenset[Pair]
    decided: bool


@dataclass
class Algorithms:
    enum: str | None  # key of the enum class, None when the version has none
    members: tuple[str, ...]
    predicates: dict[str, frozenset[str]]  # method name -> members it is true for
    workers: dict[str, list[str]] = field(default_factory=dict)  # member -> worker keys
    flags: dict[str, frozenset[Pair]] = field(default_factory=dict)  # flag -> pairs
    role_flags: dict[str, dict[str, bool]] = field(default_factory=dict)
    # Registry-style versions: member -> (module, qualname of its worker factory function)
    factories: dict[str, tuple[str, str]] = field(default_factory=dict)
    # Registry-style versions: member -> the flags it was registered with
    member_flags: dict[str, frozenset[str]] = field(default_factory=dict)
    # member -> (worker key, the conditions that pick it), as the factory reads
    variants: dict[str, list[tuple[str, tuple[Branch, ...]]]] = field(default_factory=dict)
    # Names bound to an algorithm predicate (`self.is_p_eagle = algo.is_eagle()`): the
    # predicate's expression, so a test of the name is decided like the predicate.
    predicate_aliases: dict[str, Cond] = field(default_factory=dict)
    # Names a user may pass that the code rewrites before building a worker
    # (`NEXTN` -> `EAGLE`): alias -> (the algorithm it runs as, where the code says so).
    aliases: dict[str, tuple[str, str]] = field(default_factory=dict)
    # ServerArgs fields and their default values (literal source text).
    defaults: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # Verdicts already worked out (a test recurs at thousands of sites); cleared when the
    # aliases or flags they depend on change (tracker.analysis.algorithms.discover).
    _verdicts: dict[Cond, Verdict] = field(default_factory=dict, repr=False, compare=False)
    _universe: frozenset[Pair] | None = field(default=None, repr=False, compare=False)

    @property
    def speculative(self) -> tuple[str, ...]:
        return tuple(m for m in self.members if m != "NONE")

    @property
    def universe(self) -> frozenset[Pair]:
        if self._universe is None or len(self._universe) != len(self.members) * len(ROLES):
            self._universe = frozenset(product(self.members, ROLES))
        return self._universe

    def pairs(
        self, members: frozenset[str] | set[str], roles: tuple[str, ...] = ROLES
    ) -> frozenset[Pair]:
        return frozenset(product(members, roles))

    # ------------------------------------------------------------------- evaluation

    def evaluate(self, cond: Cond) -> Verdict:
        known = self._verdicts.get(cond)
        if known is None:
            known = self._verdicts[cond] = self._evaluate(cond)
        return known

    def forget(self) -> None:
        """Drop the verdicts worked out so far (the aliases or flags changed)."""
        self._verdicts.clear()
        self._universe = None

    def _evaluate(self, cond: Cond) -> Verdict:
        u = self.universe
        op = cond.op
        if op == "not":
            inner = self.evaluate(cond.args[0])
            return Verdict(inner.may_false, inner.may_true, inner.decided)
        if op in ("and", "or"):
            parts = [self.evaluate(a) for a in cond.args]
            decided = all(p.decided for p in parts)
            if op == "and":
                t = frozenset.intersection(*(p.may_true for p in parts))
                f = frozenset.union(*(p.may_false for p in parts))
            else:
                t = frozenset.union(*(p.may_true for p in parts))
                f = frozenset.intersection(*(p.may_false for p in parts))
            return Verdict(t, f, decided)
        truth = literal_truth(cond.text) if op in ("ref", "other") else None
        if truth is not None:
            # `if False:`, `x if False else y`: code switched off by hand never runs.
            return Verdict(u, frozenset(), True) if truth else Verdict(frozenset(), u, True)
        if op == "call":
            name = cond.text.rpartition(".")[2]
            if name in self.predicates and cond.text != name:
                t = self.pairs(self.predicates[name])
                return Verdict(t, u - t, True)
        if op == "ref":
            name = cond.text.rpartition(".")[2]
            alias = self.predicate_aliases.get(name)
            if alias is not None:
                return self.evaluate(alias)
            if name in self.role_flags:
                roles = tuple(r for r, v in self.role_flags[name].items() if v)
                t = self.pairs(set(self.members), roles)
                return Verdict(t, u - t, True)
            if name in self.flags:
                # Off by configuration is possible anywhere; on only where it is set.
                return Verdict(self.flags[name], u, True)
        if op == "cmp":
            members = self._compared_members(cond)
            if members is not None:
                t = self.pairs(members)
                return Verdict(t, u - t, True)
        return Verdict(u, u, False)

    def _compared_members(self, cond: Cond) -> frozenset[str] | None:
        """`algo == SpeculativeAlgorithm.EAGLE3`, `algo in (...)`, `name == "EAGLE3"`."""
        if len(cond.args) != 2 or self.enum is None:
            return None
        enum_name = self.enum.rpartition(":")[2]
        left, right = cond.args
        if "algorithm" not in left.render().lower() and left.text not in ("self",):
            return None
        found = _named_members(right, enum_name, self.members)
        if found is None:
            return None
        if cond.text in ("!=", "not in", "is not"):
            return frozenset(self.members) - found
        if cond.text in ("==", "in", "is"):
            return found
        return None

    def admitted(self, branches: tuple[Branch, ...]) -> tuple[frozenset[Pair], bool]:
        """The (algorithm, role) pairs under which code with these branches can run, and
        whether that depends on nothing but the algorithm and role."""
        allowed = self.universe
        decided = True
        for br in branches:
            verdict = self.evaluate(br.test)
            allowed = allowed & (verdict.may_true if br.holds else verdict.may_false)
            decided = decided and verdict.decided
        return allowed, decided


def _named_members(cond: Cond, enum_name: str, members: tuple[str, ...]) -> frozenset[str] | None:
    if cond.op == "seq":
        found: set[str] = set()
        for item in cond.args:
            sub = _named_members(item, enum_name, members)
            if sub is None:
                return None
            found |= sub
        return frozenset(found)
    if cond.op == "ref":
        prefix, _, name = cond.text.rpartition(".")
        if prefix.endswith(enum_name) and name in members:
            return frozenset({name})
    if cond.op == "str" and cond.text.upper() in members:
        return frozenset({cond.text.upper()})
    return None


# ---------------------------------------------------------------------- discovery


def discover(index: VersionIndex, rules: RoleRules) -> Algorithms:
    enum_keys = index.classes_named(rules.algorithm_enum)
    if not enum_keys:
        algos = Algorithms(None, (), {}, role_flags=dict(rules.role_flags))
        algos.warnings.append(
            f"no class {rules.algorithm_enum} found: cannot tell the speculative algorithms"
        )
        return algos
    enum_key = sorted(enum_keys, key=lambda k: ("speculative" not in k, k))[0]
    info = index.classes[enum_key]
    members = tuple(
        sorted(
            (a for a in info.class_attrs if a.isupper() and not a.startswith("_")),
            key=lambda a: _member_order(index, enum_key, a),
        )
    )
    algos = Algorithms(enum_key, members, {}, role_flags=dict(rules.role_flags))
    if not members:
        _discover_registry(index, rules, algos)
    algos.predicates = _predicates(
        index, enum_key, algos.members, algos.member_flags, rules.flag_method
    )
    algos.defaults = _server_defaults(index)
    algos.forget()
    _discover_predicate_aliases(index, algos)
    algos.forget()
    _discover_flags(index, algos)
    algos.forget()
    _discover_workers(index, rules, algos)
    _discover_aliases(index, rules, algos)
    register = info.methods.get("register")
    if register is not None:
        # A fork's plugin API (`SpeculativeAlgorithm.register(name, factory)`): what a
        # plugin registers is outside the tree, so its algorithms cannot be listed.
        path = (index.path_of_module(split_key(enum_key)[0]) or "").removeprefix(SRT_PREFIX)
        algos.warnings.append(
            f"{rules.algorithm_enum}.register ({path}:{register.line}) lets plugins add "
            "algorithms at run time: those are not in this tree and are not analysed"
        )
    missing = [m for m in algos.speculative if not algos.workers.get(m)]
    if missing:
        algos.warnings.append(
            "no worker class found for "
            + ", ".join(missing)
            + " (looked for classes of "
            + ", ".join(rules.worker_packages)
            + " returned or built under a condition naming the algorithm)"
        )
    return algos


def _certain(algos: Algorithms, br: Branch, member: str) -> bool:
    """The branch holds whenever `member` runs (in either role)."""
    verdict = algos.evaluate(br.test)
    possible = verdict.may_false if br.holds else verdict.may_true
    return not any(m == member for m, _ in possible)


def _member_order(index: VersionIndex, enum_key: str, attr: str) -> int:
    info = index.classes[enum_key]
    facts = index.modules[info.module]
    for a in facts.assigns:
        if a.target == attr and a.context.scope == info.facts.qualname:
            return a.line
    return 0


_STRING = re.compile(r"""["']([^"']+)["']""")


def _discover_registry(index: VersionIndex, rules: RoleRules, algos: Algorithms) -> None:
    """Members registered by calls at import time, with their flags and worker factory."""
    assert algos.enum is not None
    module = algos.enum.partition(":")[0]
    facts = index.modules[module]
    enum_name = algos.enum.rpartition(":")[2]
    members: list[str] = []
    for call in facts.calls:
        if call.context.scope or call.name not in rules.registry_calls or not call.args:
            continue
        if call.receiver not in (None, enum_name):
            continue
        found = _STRING.fullmatch(call.args[0].strip())
        if found is None:
            continue
        member = found.group(1).upper()
        if member not in members:
            members.append(member)
        keywords = dict(call.keywords)
        flags = keywords.get(rules.registry_flags_keyword, "")
        algos.member_flags[member] = frozenset(f.upper() for f in _STRING.findall(flags))
        factory = keywords.get(rules.registry_worker_keyword)
        if factory and factory.isidentifier():
            resolved = index.resolve_name(module, factory)
            if resolved is not None and resolved in index.functions:
                mod, _, qual = resolved.partition(":")
                algos.factories[member] = (mod, qual)
    algos.members = tuple(members)


def _predicates(
    index: VersionIndex,
    enum_key: str,
    members: tuple[str, ...],
    member_flags: dict[str, frozenset[str]],
    flag_method: str,
) -> dict[str, frozenset[str]]:
    info = index.classes[enum_key]
    facts = index.modules[info.module]
    enum_name = info.name
    bodies: dict[str, list[Cond]] = {}
    for ret in facts.returns:
        scope = ret.context.scope
        owner, _, method = scope.rpartition(".")
        if owner == info.facts.qualname and not ret.context.branches:
            bodies.setdefault(method, []).append(ret.value)
    out: dict[str, frozenset[str]] = {}

    def solve(method: str, stack: tuple[str, ...]) -> frozenset[str] | None:
        if method in out:
            return out[method]
        if method in stack or method not in bodies or len(bodies[method]) != 1:
            return None
        result = evaluate_members(bodies[method][0], (*stack, method))
        if result is not None:
            out[method] = result
        return result

    def evaluate_members(cond: Cond, stack: tuple[str, ...]) -> frozenset[str] | None:
        everything = frozenset(members)
        if cond.op == "not":
            inner = evaluate_members(cond.args[0], stack)
            return None if inner is None else everything - inner
        if cond.op in ("and", "or"):
            parts = [evaluate_members(a, stack) for a in cond.args]
            if any(p is None for p in parts):
                return None
            sets = [p for p in parts if p is not None]
            return frozenset.intersection(*sets) if cond.op == "and" else frozenset.union(*sets)
        if (
            cond.op == "call"
            and cond.text == f"self.{flag_method}"
            and cond.args
            and cond.args[0].op == "str"
        ):
            flag = cond.args[0].text.upper()
            return frozenset(m for m in members if flag in member_flags.get(m, ()))
        if cond.op == "call" and cond.text.startswith("self."):
            return solve(cond.text[5:], stack)
        if cond.op == "cmp" and len(cond.args) == 2 and cond.args[0].text == "self":
            found = _named_members(cond.args[1], enum_name, members)
            if found is None:
                return None
            if cond.text in ("==", "in", "is"):
                return found
            if cond.text in ("!=", "not in", "is not"):
                return everything - found
        return None

    for method in sorted(bodies):
        solve(method, ())
    return out


def _discover_flags(index: VersionIndex, algos: Algorithms) -> None:
    """A flag set to something other than False/None only under conditions that narrow
    the algorithms (or the runner role), or to a predicate of them, implies them:
    `eagle_use_aux_hidden_state`; `Config(is_dspark=algo.is_dspark())`."""
    found: dict[str, dict[tuple[str, str], set[Pair]]] = {}
    spoiled: set[str] = set()
    for facts in index.iter_modules():
        for name, kind, owner, value, branches, keyword in _flag_settings(facts):
            if literal_truth(value) is False:
                continue
            allowed, _ = algos.admitted(branches)
            expr = parse_bool(value) if value else None
            verdict = algos.evaluate(expr) if expr is not None else None
            if verdict is not None and verdict.decided and verdict.may_true != algos.universe:
                # Set to a predicate of the algorithm: on exactly where that holds.
                allowed = allowed & verdict.may_true
            elif keyword:
                continue  # an argument passed on (`flag=cfg.flag`): says nothing either way
            elif not branches or allowed == algos.universe:
                # Set unconditionally to something that may be true: not an algorithm flag.
                spoiled.add(name)
                continue
            found.setdefault(name, {}).setdefault((kind, owner), set()).update(allowed)
    for name, owners in found.items():
        # A server option is the user's to set as well: code setting it for some
        # algorithms does not make it imply them.
        if name in spoiled or name in algos.role_flags or name in algos.defaults:
            continue
        # Functions that fill a config object set one flag between them: their union.
        # Classes each hold their own flag of that name; one read elsewhere
        # (`model_runner.eagle_use_aux_hidden_state`) is on only where every class's
        # assignments allow it: their intersection (with the functions' union).
        by_classes = [frozenset(p) for (kind, _), p in owners.items() if kind == "class"]
        by_functions = [p for (kind, _), p in owners.items() if kind == "function"]
        bounds = list(by_classes)
        if by_functions:
            bounds.append(frozenset().union(*by_functions))
        algos.flags[name] = frozenset.intersection(*bounds)


def _flag_settings(
    facts: ModuleFacts,
) -> Iterable[tuple[str, str, str, str, tuple[Branch, ...], bool]]:
    """(name, "class"|"function", owner, value text, branches, from a keyword argument) for
    each `x.name = value` and each `name=value` keyword argument (a construction setting an
    object's field)."""
    module = facts.module_name
    for a in facts.assigns:
        receiver, dot, name = a.target.rpartition(".")
        if not dot or not name.isidentifier() or not receiver.isidentifier():
            continue
        scope = a.context.scope
        # `self.flag` belongs to its class; `config.flag` to the function setting it.
        kind = "class" if receiver == "self" else "function"
        owner = f"{module}:{scope.rpartition('.')[0] if kind == 'class' else scope}"
        text = a.value.text if a.value is not None else ""
        if a.value is not None and a.value.op == "call":
            text += "()"
        yield name, kind, owner, text, a.context.branches, False
    for call in facts.calls:
        for name, value in call.keywords:
            if name.isidentifier():
                where = f"{module}:{call.context.scope}"
                yield name, "function", where, value, call.context.branches, True


def _discover_workers(index: VersionIndex, rules: RoleRules, algos: Algorithms) -> None:
    packages = rules.worker_packages

    def worker_class(symbol: str | None) -> str | None:
        if symbol is None or symbol not in index.classes:
            return None
        if not any(symbol.startswith(p + ".") for p in packages):
            return None
        return symbol if "Worker" in index.classes[symbol].name else None

    speculative = frozenset(algos.speculative)
    everything = frozenset(algos.members)

    def add(member: str, cls: str, branches: tuple[Branch, ...] = ()) -> None:
        if cls not in algos.workers.setdefault(member, []):
            algos.workers[member].append(cls)
        # The conditions that may be false for this algorithm: which of its workers.
        picked = tuple(b for b in branches if not _certain(algos, b, member))
        variants = algos.variants.setdefault(member, [])
        if all(w != cls for w, _ in variants):
            variants.append((cls, picked))

    for facts in index.iter_modules():
        module = facts.module_name
        for name, scope, branches in _worker_references(facts):
            if not branches:
                continue
            cls = worker_class(index.resolve_name(module, name, scope))
            if cls is None:
                continue
            allowed, _ = algos.admitted(branches)
            named = {m for m, _ in allowed}
            if named >= everything:
                continue  # the condition does not depend on the algorithm
            for m in named & speculative:
                add(m, cls, branches)
    # Registry-style versions name each algorithm's worker factory at registration.
    for member, (module, factory) in algos.factories.items():
        factory_facts = index.modules.get(module)
        if factory_facts is not None:
            for name, scope, _branches in _worker_references(factory_facts):
                if scope == factory or scope.startswith(factory + "."):
                    cls = worker_class(index.resolve_name(module, name, scope))
                    if cls is not None:
                        add(member, cls, _branches)
    for m in algos.workers:
        algos.workers[m].sort()
        algos.variants[m].sort(key=lambda v: v[0])


_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def _worker_references(facts: ModuleFacts) -> list[tuple[str, str, tuple[Branch, ...]]]:
    """Names that may denote a worker class, with where they occur: constructions,
    returned names, and names in assigned values (`W = EAGLEWorkerV2 if x else EAGLEWorker`)."""
    out: list[tuple[str, str, tuple[Branch, ...]]] = []
    for call in facts.calls:
        if call.receiver is None:
            out.append((call.name, call.context.scope, call.context.branches))
    for ret in facts.returns:
        if ret.value.op == "ref":
            out.append((ret.value.text, ret.context.scope, ret.context.branches))
    for a in facts.assigns:
        if a.value is not None and "Worker" in a.value.render():
            for name in _IDENTIFIER.findall(a.value.render()):
                if "Worker" in name:
                    out.append((name, a.context.scope, a.context.branches))
    return out


# ----------------------------------------------------------- aliases and defaults


def _server_defaults(index: VersionIndex) -> dict[str, str]:
    """The fields of the version's `ServerArgs` and their literal defaults."""
    out: dict[str, str] = {}
    holders = list(index.classes_named("ServerArgs"))
    holders += [k for k in index.classes if k.startswith(OPTION_NAMESPACES)]
    for cls in holders:
        info = index.classes[cls]
        for a in index.modules[info.module].assigns:
            if a.context.scope == info.facts.qualname and a.value is not None:
                out.setdefault(a.target, a.value.text)
    return out


# Where releases from v0.5.16 on declare the server options (ServerArgs assembles them).
OPTION_NAMESPACES = ("sglang.srt.arg_groups.fields.",)


def opt_in_branches(algos: Algorithms, branches: tuple[Branch, ...]) -> tuple[Branch, ...]:
    """The branches that hold only when a ServerArgs field that is off by default is turned
    on (`server_args.enable_multi_layer_eagle`): a worker picked so is opt-in."""
    out = []
    for br in branches:
        positive: list[Cond] = []
        test = br.test
        if br.holds:
            positive = list(test.args) if test.op == "and" else [test]
        elif test.op == "not":
            positive = [test.args[0]]
        for atom in positive:
            if atom.op != "ref":
                continue
            default = algos.defaults.get(atom.text.rpartition(".")[2])
            if default is not None and literal_truth(default) is False:
                out.append(br)
                break
    return tuple(out)


# Pure on its text, and asked for the same assigned values over and over (every flag and
# predicate alias is read at each site that tests it): kept, a Cond is immutable.
@functools.lru_cache(maxsize=1 << 16)
def parse_bool(text: str) -> Cond | None:
    """A boolean expression of names and argument-free calls, from its source text
    (`a.is_eagle() or a.is_standalone()`): assigned values are kept as text."""
    text = text.strip()
    while text.startswith("(") and _balanced(text[1:-1]) and text.endswith(")"):
        text = text[1:-1].strip()
    for op in (" or ", " and "):
        parts = split_top(text, op)
        if len(parts) > 1:
            args = [parse_bool(p) for p in parts]
            if any(a is None for a in args):
                return None
            return Cond(op.strip(), "", tuple(a for a in args if a is not None))
    if text.startswith("not "):
        inner = parse_bool(text[4:])
        return Cond("not", "", (inner,)) if inner is not None else None
    if re.fullmatch(r"[A-Za-z_][\w.]*\(\)", text):
        return Cond("call", text[:-2])
    if re.fullmatch(r"[A-Za-z_][\w.]*", text):
        return Cond("ref", text)
    return None


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += 1 if ch == "(" else -1 if ch == ")" else 0
        if depth < 0:
            return False
    return depth == 0


def _discover_predicate_aliases(index: VersionIndex, algos: Algorithms) -> None:
    """Names every assignment binds to the same algorithm predicate expression."""
    found: dict[str, set[frozenset[Pair]]] = {}
    exprs: dict[str, Cond] = {}
    for facts in index.iter_modules():
        if facts.definitions_only:
            continue
        for a in facts.assigns:
            name = a.target.rpartition(".")[2]
            if not name.isidentifier() or a.value is None:
                continue
            if a.value.op == "call":
                expr: Cond | None = Cond("call", a.value.text)
            elif a.value.op == "other":
                expr = parse_bool(a.value.text)
            else:
                expr = None
            verdict = algos.evaluate(expr) if expr is not None else None
            if expr is None or verdict is None or not verdict.decided:
                found.setdefault(name, set()).add(frozenset())  # something else: no alias
                continue
            found.setdefault(name, set()).add(verdict.may_true)
            exprs.setdefault(name, expr)
        # A keyword argument binds the parameter of that name the same way
        # (`configure(is_dspark=self.spec_algorithm.is_dspark())`).
        for call in facts.calls:
            for name, text in call.keywords:
                expr = parse_bool(text)
                verdict = algos.evaluate(expr) if expr is not None else None
                if expr is None or verdict is None or not verdict.decided:
                    found.setdefault(name, set()).add(frozenset())
                    continue
                found.setdefault(name, set()).add(verdict.may_true)
                exprs.setdefault(name, expr)
    for name, outcomes in found.items():
        if len(outcomes) == 1 and frozenset() not in outcomes:
            algos.predicate_aliases[name] = exprs[name]


def _discover_aliases(index: VersionIndex, rules: RoleRules, algos: Algorithms) -> None:
    """Names the code rewrites to an algorithm before any worker is built:
    `if x.speculative_algorithm == "NEXTN": x.speculative_algorithm = "EAGLE"`, a function
    returning "EAGLE" where the name it was given is "NEXTN", a registration's
    `aliases=("NEXTN",)`, and a set of names that `from_string` maps to a member."""
    members = set(algos.members)
    for facts in index.iter_modules():
        if facts.definitions_only:
            continue
        for a in facts.assigns:
            if a.target.rpartition(".")[2] != "speculative_algorithm" or a.value is None:
                continue
            runs_as = _string_value(a.value)
            if runs_as in members:
                for alias in _compared_names(a.context.branches):
                    if alias not in members:
                        _alias(algos, alias, runs_as, facts.path, a.line, a.context.scope)
        for ret in facts.returns:
            runs_as = _string_value(ret.value) or _member_ref(ret.value, algos)
            if runs_as not in members:
                continue
            for alias in _compared_names(ret.context.branches):
                if alias not in members and not _narrowed(ret.context.branches):
                    _alias(algos, alias, runs_as, facts.path, ret.line, ret.context.scope)
            for alias in _set_members(index, facts.module_name, ret.context.branches):
                if alias not in members:
                    _alias(algos, alias, runs_as, facts.path, ret.line, ret.context.scope)
        for call in facts.calls:
            if call.name not in rules.registry_calls or not call.args:
                continue
            member = _STRING.fullmatch(call.args[0].strip())
            names = dict(call.keywords).get("aliases", "")
            if member is None or member.group(1).upper() not in members:
                continue
            for alias in _STRING.findall(names):
                if alias.upper() not in members:
                    _alias(algos, alias.upper(), member.group(1).upper(), facts.path, call.line, "")


def _alias(algos: Algorithms, alias: str, runs_as: str, path: str, line: int, scope: str) -> None:
    where = f"{path.removeprefix('python/sglang/srt/')}:{line}" + (f" in {scope}" if scope else "")
    algos.aliases.setdefault(alias.upper(), (runs_as, where))


def _string_value(cond: Cond) -> str | None:
    if cond.op == "str":
        return cond.text.upper()
    if cond.op == "other":
        found = _STRING.fullmatch(cond.text.strip())
        return found.group(1).upper() if found else None
    return None


def _member_ref(cond: Cond, algos: Algorithms) -> str | None:
    """`cls.EAGLE` / `SpeculativeAlgorithm.EAGLE` as a returned value."""
    if cond.op != "ref" or algos.enum is None:
        return None
    prefix, _, name = cond.text.rpartition(".")
    enum_name = algos.enum.rpartition(":")[2]
    return name if prefix in ("cls", enum_name) and name in algos.members else None


def _compared_names(branches: tuple[Branch, ...]) -> list[str]:
    """The strings a holding branch compares an algorithm name with (`== "NEXTN"`, `in
    ("NEXTN",)`), joined by `or`."""
    out: list[str] = []
    for br in branches:
        if not br.holds:
            continue
        tests = br.test.args if br.test.op == "or" else (br.test,)
        for t in tests:
            if t.op == "cmp" and t.text in ("==", "in") and len(t.args) == 2:
                if "algorithm" not in t.args[0].render().lower():
                    continue
                other = t.args[1]
                items = other.args if other.op == "seq" else (other,)
                out += [i.text.upper() for i in items if i.op == "str"]
    return out


def _narrowed(branches: tuple[Branch, ...]) -> bool:
    """A branch beyond the name comparisons (`and is_gemma4_draft`): a rewrite that only
    happens sometimes is not what the name runs as."""
    for br in branches:
        if not br.holds:
            continue
        tests = br.test.args if br.test.op == "and" else (br.test,)
        if len(tests) > 1 or not _compared_names((Branch(tests[0], True),)):
            return True
    return False


def _set_members(index: VersionIndex, module: str, branches: tuple[Branch, ...]) -> list[str]:
    """`if upper in _RESERVED_ALIASES:` with `_RESERVED_ALIASES = frozenset({"NEXTN"})` at
    module level (in this module or one it imports from)."""
    out: list[str] = []
    for br in branches:
        t = br.test
        if not br.holds or t.op != "cmp" or t.text != "in" or len(t.args) != 2:
            continue
        if t.args[1].op != "ref":
            continue
        name = t.args[1].text
        for facts in _modules_binding(index, module, name):
            for a in facts.assigns:
                if a.target == name and not a.context.scope and a.value is not None:
                    out += [s.upper() for s in _STRING.findall(a.value.text)]
    return out


def _modules_binding(index: VersionIndex, module: str, name: str) -> list[ModuleFacts]:
    """The module itself and the modules `name` is imported from into it."""
    out = [index.modules[module]] if module in index.modules else []
    for imp in index.imports_of(module):
        if (imp.alias or imp.name) == name and imp.name is not None:
            path = index.path_of_module(module) or ""
            target = index.absolute_module(module, imp, path.endswith("__init__.py"))
            if target in index.modules:
                out.append(index.modules[target])
    return out
