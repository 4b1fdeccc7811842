"""What each speculative algorithm requires of the target and draft model, at one version.

From the index, the call graph and the role rules: every call or attribute read on a
receiver that means the target or draft model (directly, through a local alias, or through
a parameter a caller bound to it), the algorithms whose workers reach it, narrowed by the
conditions around it, and whether a missing member would crash (required), depends on
runtime state (conditional) or is tolerated (optional: hasattr, getattr default,
`except AttributeError`). Also the fields read from the forward output and the
configuration keys read.
"""

from __future__ import annotations

import fnmatch
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from tracker.analysis.algorithms import Algorithms, Pair, discover, opt_in_branches
from tracker.analysis.callgraph import CallGraph
from tracker.analysis.drafts import DraftClass, DraftModels, draft_classes, draft_models
from tracker.analysis.externals import every_model_has
from tracker.analysis.flow import Flow, Frame, Holder, Obj
from tracker.analysis.index import VersionIndex, key, split_key
from tracker.analysis.roles import ReceiverRule, RoleRules, load_rules
from tracker.analysis.vocabulary import STATUS_ORDER as STATUS_ORDER
from tracker.analysis.vocabulary import Guard, RequirementStatus
from tracker.analysis.walk import Reach, Variant, Walker
from tracker.extract.facts import (
    Assign,
    Branch,
    Call,
    Cond,
    Context,
    FunctionDef,
    ModuleFacts,
    Read,
    conjoin,
    literal_truth,
)
from tracker.sources.base import SRT_PREFIX


@dataclass(frozen=True, order=True)
class Site:
    path: str
    line: int
    function: str  # qualname inside the module: "EAGLEWorker.__init__"
    condition: str = ""  # the enclosing conditions, rendered; "" when unconditional
    status: str = "required"
    guard: str = ""  # a Guard, or "" for none
    arity: str = ""  # "0", "1", "1+kw", "*" for calls; "" for reads
    call_path: tuple[str, ...] = ()  # worker entry -> ... -> the function holding the site


@dataclass(frozen=True)
class Requirement:
    algorithm: str
    role: str  # "target" | "draft"
    member: str
    kind: str  # "call" | "attribute"
    status: str  # strongest over the sites
    sites: tuple[Site, ...]
    # Members that stand in for this one: `if not hasattr(model, "alt"): model.member()`,
    # or the others of a group one of which must be there.
    alternatives: tuple[str, ...] = ()
    # The exception the start raises when none of the group is there ("ValueError"), for
    # a group from an `elif`/`else: raise` chain; "" otherwise.
    raises: str = ""

    @property
    def arities(self) -> tuple[str, ...]:
        return tuple(sorted({s.arity for s in self.sites if s.arity}))

    @property
    def uses(self) -> tuple[str, ...]:
        """How the sites use the member: "call", "attribute" (read) and/or "hasattr"
        (tested with hasattr, or read only where such a test found it)."""
        return tuple(sorted({_use(s) for s in self.sites}))


def _use(site: Site) -> str:
    if site.arity:
        return "call"
    return "hasattr" if site.guard and Guard.of(site.guard).probes else "attribute"


@dataclass(frozen=True)
class FieldUse:
    """A field of the forward output (`logits_output.X`) or a configuration key."""

    algorithm: str
    owner: str  # "logits_output" or the config receiver ("eagle_config")
    name: str
    sites: tuple[Site, ...]


@dataclass
class Interface:
    version: str
    algorithms: tuple[str, ...]
    workers: dict[str, tuple[str, ...]]
    requirements: list[Requirement] = field(default_factory=list)
    output_fields: list[FieldUse] = field(default_factory=list)
    config_keys: list[FieldUse] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # Per algorithm that asks anything of a draft model: which classes it may load as one.
    draft_models: dict[str, DraftModels] = field(default_factory=dict)
    # Names a user may pass that the code rewrites first: alias -> (what it runs as, the
    # site that rewrites it).
    aliases: dict[str, tuple[str, str]] = field(default_factory=dict)
    # Classes the code loads as drafts (model_config.py's architecture rewrites).
    draft_classes: dict[str, DraftClass] = field(default_factory=dict)
    # algorithm -> the files its workers run that do not parse (tree-sitter's recovery
    # lines): what the algorithm asks there is not all known, so no class is "ok" for it.
    unparsed: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def for_algorithm(self, algorithm: str, role: str | None = None) -> list[Requirement]:
        return [
            r
            for r in self.requirements
            if r.algorithm == algorithm and (role is None or r.role == role)
        ]


# ------------------------------------------------------------------------- analysis


@dataclass(frozen=True)
class _Binding:
    role: str  # "target" | "draft" | "runner"
    scope: str  # "worker" | "runner"
    via: str  # what it was bound from, for messages


_SIMPLE_EXPR = re.compile(r"[A-Za-z_][\w.\[\]()*]*")
# A receiver that reads as a model object (`self.draft_model`, `target_model`, `model`):
# when nothing follows it to the target or the draft, the interface says so.
_MODEL_NAME = re.compile(r"(^|[._])(draft_|target_)?model$")


class _Reachability:
    def __init__(self, version: str, index: VersionIndex, rules: RoleRules) -> None:
        self.version = version
        self.index = index
        self.rules = rules
        self.graph = CallGraph(index)
        self.algos: Algorithms = discover(index, rules)
        self.speculative = frozenset(self.algos.speculative)
        self.flow = Flow(
            index,
            rules,
            tuple(Holder(c, a) for c, a in rules.holders),
            frozenset(self.algos.members),
        )
        self.walker = Walker(self.flow, self.algos)
        # What each algorithm's workers run (tracker.analysis.walk), and which algorithms
        # reach each function.
        self.walks: dict[str, Reach] = {}
        self.reached_by: dict[str, set[str]] = defaultdict(set)
        for algorithm in self.algos.speculative:
            variants = tuple(
                Variant(w, br, opt_in_branches(self.algos, br))
                for w, br in self.algos.variants.get(algorithm, [])
            )
            reach = self.walker.walk(algorithm, variants)
            self.walks[algorithm] = reach
            for fn in reach.functions:
                self.reached_by[fn].add(algorithm)
        self._target_walks: dict[str, Reach] = {}
        # Only code a worker reaches, or runner code the rules name, can hold a site.
        runner_globs = [g for r in rules.receivers if r.scope == "runner" for g in r.modules]
        self.runner_modules = frozenset(
            m for m in index.modules if any(fnmatch.fnmatchcase(m, g) for g in runner_globs)
        )
        self.modules = sorted({split_key(fn)[0] for fn in self.reached_by} | self.runner_modules)
        self.aliases = {m: _aliases(index.modules[m]) for m in self.modules}
        self.bindings = self._bind_parameters()
        extra = {split_key(fn)[0] for fn in self.bindings} - set(self.modules)
        for m in extra:
            self.aliases[m] = _aliases(index.modules[m])
        self.modules = sorted(set(self.modules) | extra)

    def runs_as(self, algorithm: str, function: str) -> set[str]:
        walk = self.walks.get(algorithm)
        return walk.runs_as(function) if walk is not None else {algorithm}

    def target_walk(self, algorithm: str) -> Reach:
        """The walk from the target worker the scheduler builds (what the target's own
        runner runs under the algorithm): call paths to runner code on the target."""
        found = self._target_walks.get(algorithm)
        if found is None:
            roots: set[str] = set()
            for variant in self.walks[algorithm].variants:
                value = self.flow.attribute(Obj(variant.worker), "target_worker")
                roots |= {o.cls for o in value.objs}
            if not roots:
                roots = set(self.index.classes_named("TpModelWorker"))
            found = self.walker.walk(algorithm, tuple(Variant(r, ()) for r in sorted(roots)))
            self._target_walks[algorithm] = found
        return found

    def model_roles(
        self, module: str, scope: str, line: int, receiver: str
    ) -> dict[str, set[tuple[str, str | None]]]:
        """algorithm -> (role, member after the model or None) that the receiver is in the
        frames each algorithm's walk ran the function in (worker code only: runner code
        follows the runner rules)."""
        out: dict[str, set[tuple[str, str | None]]] = {}
        if module in self.runner_modules:
            return out
        fn = key(module, scope)
        for algorithm in sorted(self.reached_by.get(fn, ())):
            found: set[tuple[str, str | None]] = set()
            for frame in self.walks[algorithm].frames.get(fn, ()):
                found |= set(self.flow.model_access(frame, receiver, line))
            found = {(r, m) for r, m in found if r in ("target", "draft")}
            if found:
                out[algorithm] = found
        return out

    def flowed_branches(
        self, algorithm: str, module: str, scope: str, branches: tuple[Branch, ...], line: int
    ) -> tuple[Branch, ...] | None:
        """A site's branches less those the data flow finds true in every frame the
        algorithm's walk ran its function in; None when it finds one false in every frame
        (the site never runs for the algorithm)."""
        reach = self.walks.get(algorithm)
        frames = reach.frames.get(key(module, scope)) if reach is not None else None
        if not frames or not branches or module in self.runner_modules:
            return branches
        kept = []
        for b in branches:
            if self.algos.evaluate(b.test).decided:
                kept.append(b)
                continue
            verdicts = {self.flow.condition(f, b.test, line) for f in frames}
            if verdicts == {not b.holds}:
                return None
            if verdicts != {b.holds}:
                kept.append(b)
        return tuple(kept)

    def is_runtime(self, algorithm: str, module: str, scope: str, br: Branch, line: int) -> bool:
        """The test changes from batch to batch in every frame the function ran in."""
        reach = self.walks.get(algorithm)
        frames = reach.frames.get(key(module, scope)) if reach is not None else None
        frames = frames or [Frame(key(module, scope))]
        return all(self.flow.is_runtime(f, br.test, line) for f in frames)

    def reach_of(self, algorithm: str, module: str, scope: str) -> tuple[bool, str]:
        """(whether a plain variant of the algorithm's workers reaches the function with no
        undecided condition on the way; the conditions it needs otherwise)."""
        reach = self.walks.get(algorithm)
        fn = key(module, scope)
        if reach is None or not reach.reaches(fn):
            return True, ""
        plain = reach.plain.get(fn, set())
        if any(not reach.variants[v].opt_in for v in plain):
            return True, ""
        guards: list[Branch] = []
        for v in sorted(plain):
            guards += list(reach.variants[v].opt_in)
            break
        if not guards:
            for _, carried in sorted(reach.guarded.get(fn, {}).items()):
                guards = list(carried)
                break
        return False, conjoin(b.render() for b in guards)

    # -------------------------------------------------------------- receiver roles

    def owner_class_name(self, module: str, scope: str) -> str | None:
        fn = self.index.functions.get(key(module, scope))
        if fn is None or fn.owner is None:
            return None
        return fn.owner.rpartition(".")[2]

    def expand(self, module: str, scope: str, line: int, receiver: str) -> str:
        """Substitute local aliases: `target_model.x` -> `self.target_worker....model.x`."""
        table = self.aliases.get(module, {}).get(scope)
        if not table:
            return receiver
        for _ in range(4):
            head = re.match(r"[A-Za-z_]\w*", receiver)
            if head is None:
                return receiver
            name = head.group(0)
            candidates = [(ln, v) for ln, v in table.get(name, []) if ln <= line]
            if not candidates:
                return receiver
            value = max(candidates)[1]
            if value.startswith(name + ".") or value == name:
                return receiver
            receiver = value + receiver[len(name) :]
        return receiver

    def role_of(
        self, module: str, scope: str, line: int, receiver: str, member: str
    ) -> tuple[ReceiverRule | _Binding, str, str] | None:
        """(rule or binding, member on the model, "direct"|"attribute") or None."""
        expanded = self.expand(module, scope, line, receiver)
        cls = self.owner_class_name(module, scope)
        touched = self.rules.touched(module, cls, expanded, member)
        if touched is not None:
            return touched
        bound = self.bindings.get(key(module, scope))
        if bound:
            head, _, rest = expanded.partition(".")
            if head in bound:
                if not rest:
                    return bound[head], member, "direct"
                first = re.match(r"[A-Za-z_]\w*", rest)
                if first is not None:
                    return bound[head], first.group(0), "attribute"
        return None

    def _bind_parameters(self) -> dict[str, dict[str, _Binding]]:
        """Parameters that callers pass the model to: `configure(model=self.model)`."""
        bindings: dict[str, dict[str, _Binding]] = {}
        # First every call that passes a model named by the rules; then, for helpers that
        # pass it on, only the calls inside functions that just gained a binding.
        pending: list[str] | None = None
        for _ in range(4):
            gained: set[str] = set()
            if pending is None:
                calls = [(m, c) for m in self.modules for c in self.index.modules[m].calls]
            else:
                calls = [(split_key(fn)[0], c) for fn in pending for c in self.graph.calls_in(fn)]
            for module, call in calls:
                scope = call.context.scope
                if not scope or (not call.args and not call.keywords):
                    continue
                passed = self._passed_models(module, scope, call, bindings)
                if not passed:
                    continue
                local_types = self.graph.local_types(module)
                for callee in self.graph.callees(module, scope, call, local_types):
                    fn = self.index.functions.get(callee)
                    if fn is None:
                        continue
                    for param, binding in _match_params(fn, passed):
                        slot = bindings.setdefault(callee, {})
                        if param not in slot:
                            slot[param] = binding
                            gained.add(callee)
            if not gained:
                break
            pending = sorted(gained)
        return bindings

    def _passed_models(
        self, module: str, scope: str, call: Call, bindings: dict[str, dict[str, _Binding]]
    ) -> list[tuple[int | str, _Binding]]:
        out: list[tuple[int | str, _Binding]] = []
        items: list[tuple[int | str, str]] = list(enumerate(call.args))
        items += [(name, value) for name, value in call.keywords]
        cls = self.owner_class_name(module, scope)
        own = bindings.get(key(module, scope), {})
        for slot, text in items:
            if not _SIMPLE_EXPR.fullmatch(text):
                continue
            expanded = self.expand(module, scope, call.line, text)
            for rule in self.rules.rules_in(module, cls):
                if rule.regex.fullmatch(expanded):
                    out.append((slot, _Binding(rule.role, rule.scope, rule.pattern)))
                    break
            else:
                if expanded in own:
                    out.append((slot, own[expanded]))
        return out

    # -------------------------------------------------------------------- sites

    def context_pairs(
        self, module: str, scope: str, role: str, rule_scope: str, branches: tuple[Branch, ...]
    ) -> tuple[set[Pair], bool]:
        roles = ("target", "draft") if role == "runner" else (role,)
        admitted, decided = self.algos.admitted(branches)
        if rule_scope == "worker":
            fn = key(module, scope)
            pairs = set()
            for a in self.reached_by.get(fn, set()):
                # Code a worker built after rewriting the algorithm runs as that one.
                runs_as = self.walks[a].runs_as(fn)
                pairs |= {(a, r) for r in roles if any((x, r) in admitted for x in runs_as)}
            return pairs, decided
        # Runner code runs with every algorithm and without one: only what the
        # conditions narrow counts as a speculative requirement.
        pairs = {(a, r) for a, r in admitted if r in roles}
        kept: set[Pair] = set()
        for r in roles:
            algorithms = {a for a, rr in pairs if rr == r}
            if not (self.speculative <= algorithms and "NONE" in algorithms):
                kept |= {(a, r) for a in algorithms}
        return kept, decided

    def path_to(
        self, algorithm: str, module: str, scope: str, role: str = "", rule_scope: str = ""
    ) -> tuple[str, ...]:
        """A call path the algorithm really runs to the function: for runner code on the
        target, the one through the target's own runner."""
        fn = key(module, scope)
        if role == "target" and rule_scope == "runner":
            path = self.target_walk(algorithm).paths.get(fn)
            if path:
                return tuple(path)
        walk = self.walks.get(algorithm)
        path = walk.paths.get(fn) if walk is not None else None
        return tuple(path) if path else ()


def _aliases(facts: ModuleFacts) -> dict[str, dict[str, list[tuple[int, str]]]]:
    """scope -> local name -> [(line, value text)] for `name = <dotted expression>`."""
    out: dict[str, dict[str, list[tuple[int, str]]]] = {}
    for a in facts.assigns:
        if not a.context.scope or not a.target.isidentifier() or a.value is None:
            continue
        if a.value.op == "ref" or (a.value.op == "other" and _SIMPLE_EXPR.fullmatch(a.value.text)):
            out.setdefault(a.context.scope, {}).setdefault(a.target, []).append(
                (a.line, a.value.text)
            )
    return out


def _match_params(
    fn: FunctionDef, passed: list[tuple[int | str, _Binding]]
) -> Iterable[tuple[str, _Binding]]:
    params = list(fn.params)
    if fn.owner is not None and params and params[0].name in ("self", "cls"):
        params = params[1:]
    positional = [p for p in params if p.kind == "positional"]
    names = {p.name for p in params}
    for slot, binding in passed:
        if isinstance(slot, int):
            if slot < len(positional):
                yield positional[slot].name, binding
        elif slot in names:
            yield slot, binding


def _guard_of(
    site_receiver: str,
    member: str,
    context: Context,
    analysis: _Reachability,
    module: str,
    line: int,
) -> str:
    if context.catches_attribute_error:
        return Guard.EXCEPT_ATTRIBUTE_ERROR
    for br in context.branches:
        # `if hasattr(...):` around the site, or `if not hasattr(...): return` above it.
        test = br.test if br.holds else _negation(br.test)
        if test is not None and _mentions_hasattr(
            test, site_receiver, member, analysis, module, context.scope, line
        ):
            return Guard.HASATTR
        scope = context.scope
        if br.holds and _probe_flag(br.test, site_receiver, member, analysis, module, scope):
            return Guard.HASATTR
    return ""


def _probe_flag(
    test: Cond,
    receiver: str,
    member: str,
    an: _Reachability,
    module: str,
    scope: str,
) -> bool:
    """`if self.flag and ...` where the class only ever sets `self.flag` to False, None
    or the result of a helper that returns something else only past a probe of the member
    on the object passed in (`self.enabled = _configure(target_model=self...model)`, and
    `if not isinstance(target_model, _SupportsX): return False`): the flag is the probe."""
    conjuncts = test.args if test.op == "and" else (test,)
    owner = scope.partition(".")[0]
    cls = key(module, owner)
    if cls not in an.index.classes:
        return False
    for flag in conjuncts:
        if flag.op != "ref" or not flag.text.startswith("self.") or flag.text.count(".") != 1:
            continue
        assigns = [
            a
            for fn in an.index.classes[cls].methods.values()
            for a in an.flow.assigns_in(key(module, fn.qualname))
            if a.target == flag.text and a.op == "="
        ]
        if assigns and all(_sets_probed(a, receiver, member, an, module) for a in assigns):
            return True
    return False


def _sets_probed(a: Assign, receiver: str, member: str, an: _Reachability, module: str) -> bool:
    value = a.value
    if value is None:
        return False
    if value.op in ("ref", "other") and literal_truth(value.text) is False:
        return True
    if value.op != "call":
        return False
    scope = a.context.scope
    helper = an.index.resolve_name(module, value.text, scope)
    returns = an.flow.returns_in(helper or "")
    if helper is None or not returns:
        return False
    call = an.flow.call_at(key(module, scope), a.line, value.text.rpartition(".")[2])
    if call is None:
        return False
    bound = {name: an.expand(module, scope, a.line, text) for name, text in call.keywords}
    helper_module = split_key(helper)[0]
    for r in returns:
        if r.value.op in ("ref", "other") and literal_truth(r.value.text) is False:
            continue
        probed = False
        for br in r.context.branches:
            probe = br.test if br.holds else _negation(br.test)
            if probe is None:
                continue
            for c in probe.args if probe.op == "and" else (probe,):
                if (
                    c.op == "call"
                    and c.text == "isinstance"
                    and len(c.args) == 2
                    and bound.get(c.args[0].render()) == receiver
                    and _protocol_declares(
                        an.index, helper_module, r.context.scope, c.args[1].render(), member
                    )
                ):
                    probed = True
        if not probed:
            return False
    return True


def _negation(test: Cond) -> Cond | None:
    """What holds below a branch that was not taken, where that reads as probes: `not p`
    gives p, and `not p or not q` (`if not hasattr(m, "a") or not hasattr(m, "b"): return`)
    gives p and q."""
    if test.op == "not":
        return test.args[0]
    if test.op == "or" and all(a.op == "not" for a in test.args):
        return Cond("and", "", tuple(a.args[0] for a in test.args))
    return None


def _mentions_hasattr(
    test: object,
    receiver: str,
    member: str,
    analysis: _Reachability,
    module: str,
    scope: str,
    line: int,
) -> bool:
    from tracker.extract.facts import Cond

    assert isinstance(test, Cond)
    if test.op == "and":
        return any(
            _mentions_hasattr(a, receiver, member, analysis, module, scope, line) for a in test.args
        )
    if test.op == "call" and test.text == "hasattr" and len(test.args) >= 2:
        obj, name = test.args[0], test.args[1]
        return (
            name.op == "str"
            and name.text == member
            and analysis.expand(module, scope, line, obj.render()) == receiver
        )
    if test.op == "call" and test.text == "isinstance" and len(test.args) == 2:
        # `isinstance(model, _SupportsX)` with a runtime-checkable Protocol that declares
        # the member: a probe of it, as hasattr is.
        obj, kind = test.args
        return analysis.expand(
            module, scope, line, obj.render()
        ) == receiver and _protocol_declares(analysis.index, module, scope, kind.render(), member)
    return False


def _protocol_declares(
    index: VersionIndex, module: str, scope: str, name: str, member: str
) -> bool:
    found = index.resolve_class(module, name, scope).symbol
    if found is None:
        return False
    info = index.classes[found]
    protocol = any(b.rpartition(".")[2].startswith("Protocol") for b in info.facts.bases)
    return protocol and member in info.methods


def _arity(call: Call) -> str:
    if call.star_args:
        return "*"
    kw = len(call.keywords)
    return f"{call.positional}+{kw}kw" if kw else str(call.positional)


class _Collector:
    """Gathers the sites of one version into requirements and field uses."""

    def __init__(self, an: _Reachability) -> None:
        self.an = an
        # Members every object and every torch.nn.Module has (at the pinned torch): using
        # one asks nothing of a model class (`model.__class__.__name__`, `named_modules()`).
        self.universal = every_model_has(an.index.pins)
        # (algorithm, role, member) -> sites, and the members that can stand in. One slot
        # per member whether it is called or read: a site's arity tells which use it is.
        self.found: dict[tuple[str, str, str], list[Site]] = defaultdict(list)
        self.alternatives: dict[tuple[str, str, str], set[str]] = defaultdict(set)
        self.outputs: dict[tuple[str, str, str], list[Site]] = defaultdict(list)
        self.configs: dict[tuple[str, str, str], list[Site]] = defaultdict(list)
        self.raises: dict[tuple[str, str, str], str] = {}
        # Receivers named like a model that neither the data flow nor the rules follow to
        # the target or the draft: (receiver, function) -> first line.
        self.untyped: dict[tuple[str, str], int] = {}

    def member(
        self,
        module: str,
        path: str,
        line: int,
        context: Context,
        target: ReceiverRule | _Binding | dict[str, set[str]],
        receiver: str,
        member: str,
        guard: str,
        arity: str,
        skip: frozenset[str] = frozenset(),
        only: frozenset[Pair] | None = None,
    ) -> None:
        """One use of `member` on a model whose receiver (aliases expanded) is `receiver`:
        a call when `arity` is given, else an attribute read or probe. `target` is the rule
        or binding that made the receiver a model, or the roles the data flow found per
        algorithm; `skip`: algorithms the data flow decided otherwise; `only`: the
        (algorithm, role) pairs to record it for, when not all that `target` gives."""
        if member in self.universal or context.in_message:
            return
        an = self.an
        scope = context.scope
        alternatives, plain = _unless_provided(an, module, scope, line, context.branches, receiver)
        if isinstance(target, dict):
            admitted, _ = an.algos.admitted(context.branches)
            fn = key(module, scope)
            pairs = {
                (a, r)
                for a, roles in target.items()
                for r in roles
                if any((x, r) in admitted for x in an.runs_as(a, fn))
            }
            rule_scope = "worker"
        else:
            pairs, _ = an.context_pairs(module, scope, target.role, target.scope, context.branches)
            pairs = {(a, r) for a, r in pairs if a not in skip}
            rule_scope = target.scope
        if only is not None:
            pairs = set(pairs) & only
        for algorithm, role in sorted(pairs):
            if algorithm == "NONE":
                continue
            branches = an.flowed_branches(algorithm, module, scope, context.branches, line)
            if branches is None:
                continue
            # `if not hasattr(model, "alt"): model.member()` needs member unless alt is
            # there: decided as far as the algorithms go, with alt as an alternative.
            # A test that changes from batch to batch goes both ways while serving.
            kept = {
                id(b)
                for b in branches
                if not b.raises and not an.is_runtime(algorithm, module, scope, b, line)
            }
            _, decided = an.algos.admitted(tuple(b for b in plain if id(b) in kept))
            status, carried = _status(decided, guard), ""
            if rule_scope == "worker":
                # Code the workers reach only under a condition of their own (an opt-in
                # worker, an undecided test on the way) needs the member only then.
                plain_reach, carried = an.reach_of(algorithm, module, scope)
                if not plain_reach and status == RequirementStatus.REQUIRED:
                    status = RequirementStatus.CONDITIONAL
            slot = (algorithm, role, member)
            self.found[slot].append(
                _site(
                    an,
                    algorithm,
                    module,
                    path,
                    scope,
                    line,
                    branches,
                    status,
                    guard,
                    arity,
                    carried=carried,
                    role=role,
                    rule_scope=rule_scope,
                )
            )
            self.alternatives[slot] |= {
                alt for alt, also in alternatives.items() if _usable(an, algorithm, also)
            }

    def field(
        self,
        module: str,
        path: str,
        line: int,
        context: Context,
        owner: str,
        name: str,
        bucket: dict[tuple[str, str, str], list[Site]],
    ) -> None:
        an = self.an
        scope = context.scope
        if not scope or context.in_message:
            return
        pairs, decided = an.context_pairs(module, scope, "target", "worker", context.branches)
        if not pairs:
            pairs, decided = an.context_pairs(module, scope, "runner", "runner", context.branches)
        for algorithm in sorted({a for a, _ in pairs} - {"NONE"}):
            # No call path: a field read is understood without one, and snapshots omit it.
            site = _site(
                an,
                algorithm,
                module,
                path,
                scope,
                line,
                context.branches,
                _status(decided, ""),
                "",
                "",
                with_path=False,
            )
            bucket[(algorithm, owner, name)].append(site)

    def uses(
        self, module: str, scope: str, line: int, receiver: str, name: str
    ) -> list[tuple[ReceiverRule | _Binding | dict[str, set[str]], str, str, frozenset[str]]]:
        """Each model `receiver.name` touches: (who says so, member, "direct"|"attribute",
        algorithms to leave to the data flow). The data flow's answer for an algorithm's
        frames comes first; the role rules answer for the other algorithms."""
        an = self.an
        flowed = an.model_roles(module, scope, line, receiver)
        by_member: dict[tuple[str, str], dict[str, set[str]]] = {}
        for algorithm, found in flowed.items():
            for role, after in found:
                slot = (name, "direct") if after is None else (after, "attribute")
                by_member.setdefault(slot, {}).setdefault(algorithm, set()).add(role)
        out: list[tuple[ReceiverRule | _Binding | dict[str, set[str]], str, str, frozenset[str]]]
        out = [(target, m, how, frozenset()) for (m, how), target in sorted(by_member.items())]
        ruled = an.role_of(module, scope, line, receiver, name)
        if ruled is not None:
            out.append((ruled[0], ruled[1], ruled[2], frozenset(flowed)))
        elif not out and _MODEL_NAME.search(receiver) and module not in an.runner_modules:
            fn = key(module, scope)
            if an.reached_by.get(fn):
                self.untyped.setdefault((receiver, fn), line)
        return out

    def raised(self, module: str, path: str, call: Call) -> None:
        """An exception raised where the tests above it found none of a group of members:
        `if hasattr(m, "a"): ... elif hasattr(m, "b"): ... else: raise ValueError(...)`
        requires one of a and b (each the other's alternative)."""
        an = self.an
        scope = call.context.scope
        groups: dict[str, list[tuple[str, tuple[Cond, ...]]]] = {}
        rest: list[Branch] = []
        for br in call.context.branches:
            probes = _negated_probes(br) if not br.holds else None
            if not probes:
                rest.append(br)
                continue
            for receiver, member, also in probes:
                groups.setdefault(receiver, []).append((member, also))
        if not groups:
            return
        context = call.context._replace(branches=tuple(rest), in_message=False)
        for receiver, members in groups.items():
            for target, _m, how, skip in self.uses(
                module, scope, call.line, receiver, members[0][0]
            ):
                if how != "direct":
                    continue
                for algorithm, role, group in self._groups_for(
                    module, target, skip, members, context
                ):
                    for member in group:
                        slot = (algorithm, role, member)
                        before = len(self.found[slot])
                        self.member(
                            module,
                            path,
                            call.line,
                            context,
                            target,
                            an.expand(module, scope, call.line, receiver),
                            member,
                            Guard.ONE_OF,
                            "",
                            skip,
                            frozenset({(algorithm, role)}),
                        )
                        if len(self.found[slot]) > before:
                            self.alternatives[slot] |= set(group) - {member}
                            self.raises[slot] = call.name

    def _groups_for(
        self,
        module: str,
        target: ReceiverRule | _Binding | dict[str, set[str]],
        skip: frozenset[str],
        members: list[tuple[str, tuple[Cond, ...]]],
        context: Context,
    ) -> list[tuple[str, str, tuple[str, ...]]]:
        """(algorithm, role, the members of the group it may use): a member whose test
        also needs something the algorithm rules out (`is_dspark and hasattr(...)` under
        DFLASH) is no way out for it."""
        an = self.an
        if isinstance(target, dict):
            pairs = {(a, r) for a, roles in target.items() for r in roles}
        else:
            found, _ = an.context_pairs(
                module, context.scope, target.role, target.scope, context.branches
            )
            pairs = {(a, r) for a, r in found if a not in skip}
        out = []
        for algorithm, role in sorted(pairs):
            if algorithm == "NONE":
                continue
            usable = [member for member, also in members if _usable(an, algorithm, also)]
            if usable:
                out.append((algorithm, role, tuple(sorted(set(usable)))))
        return out

    def call(self, module: str, path: str, call: Call) -> None:
        an = self.an
        scope = call.context.scope
        if not scope:
            return
        if (
            call.receiver is None
            and call.context.in_message
            and an.rules.draft_models.refusal_calls.search(call.name)
        ):
            self.raised(module, path, call)
            return
        if call.receiver is None and call.name in ("hasattr", "getattr") and len(call.args) >= 2:
            obj, name = call.args[0], call.args[1]
            if not (name[:1] in "'\"" and name[-1:] == name[:1]):
                return
            guard: str
            if call.name == "hasattr":
                guard = Guard.HASATTR_RAISES if call.asserted else Guard.HASATTR
            elif len(call.args) >= 3 or call.keywords:
                raising = _raises_when_none(an, module, scope, call)
                guard = Guard.GETATTR_RAISES if raising else Guard.GETATTR_DEFAULT
            else:
                guard = ""
            for target, member, _how, skip in self.uses(module, scope, call.line, obj, name[1:-1]):
                self.member(
                    module,
                    path,
                    call.line,
                    call.context,
                    target,
                    an.expand(module, scope, call.line, obj),
                    member,
                    guard,
                    "",
                    skip,
                )
            return
        if call.receiver is None:
            return
        receiver = an.expand(module, scope, call.line, call.receiver)
        for target, member, how, skip in self.uses(
            module, scope, call.line, call.receiver, call.name
        ):
            guard = _guard_of(receiver, call.name, call.context, an, module, call.line)
            # `model.inner.run()` calls a method of what the member holds: a read of it.
            self.member(
                module,
                path,
                call.line,
                call.context,
                target,
                receiver,
                member,
                guard,
                _arity(call) if how == "direct" else "",
                skip,
            )
        rules = an.rules
        if (
            call.name == "get"
            and call.args
            and any(p.fullmatch(call.receiver) for p in rules.config_receivers)
        ):
            self.field(
                module,
                path,
                call.line,
                call.context,
                call.receiver.rpartition(".")[2],
                call.args[0].strip("'\""),
                self.configs,
            )

    def read(self, module: str, path: str, read: Read) -> None:
        an = self.an
        scope = read.context.scope
        if scope and read.kind == "attr":
            receiver = an.expand(module, scope, read.line, read.receiver)
            for target, member, _how, skip in self.uses(
                module, scope, read.line, read.receiver, read.name
            ):
                guard = _guard_of(receiver, read.name, read.context, an, module, read.line)
                self.member(
                    module,
                    path,
                    read.line,
                    read.context,
                    target,
                    receiver,
                    member,
                    guard,
                    "",
                    skip,
                )
        rules = an.rules
        patterns = rules.config_receivers if read.kind == "key" else rules.output_receivers
        if any(p.fullmatch(read.receiver) for p in patterns):
            self.field(
                module,
                path,
                read.line,
                read.context,
                read.receiver.rpartition(".")[2],
                read.name,
                self.configs if read.kind == "key" else self.outputs,
            )


def _negated_probes(br: Branch) -> list[tuple[str, str, tuple[Cond, ...]]]:
    """For a branch that failed (`not (x and hasattr(m, "a"))`): each (receiver, member,
    the other tests the probe came with) it probes."""
    test = br.test
    alternatives = test.args if test.op == "or" else (test,)
    out = []
    for alt in alternatives:
        conjuncts = alt.args if alt.op == "and" else (alt,)
        probes = [
            c
            for c in conjuncts
            if c.op == "call" and c.text == "hasattr" and len(c.args) >= 2 and c.args[1].op == "str"
        ]
        if len(probes) != 1:
            continue
        probe = probes[0]
        also = tuple(c for c in conjuncts if c is not probe)
        out.append((probe.args[0].render(), probe.args[1].text, also))
    return out


def _raises_when_none(an: _Reachability, module: str, scope: str, call: Call) -> bool:
    """`x = getattr(model, "m", None)` and, below, a raise under `x is None` / `not x`:
    the default only reaches an error. The getattr may sit inside the value
    (`x = unwrap_lora_layer(getattr(model, "lm_head", None))`): what wraps it hands the
    None on, or the test below would not be there."""
    facts = an.index.modules[module]
    holders = [
        a
        for a in facts.assigns
        if a.context.scope == scope and a.target.isidentifier() and _holds_the_getattr(a, call.line)
    ]
    if not holders:
        return False
    # The nearest assignment above the call is the one whose value holds it.
    nearest = max(a.line for a in holders)
    names = {a.target for a in holders if a.line == nearest}
    pattern = an.rules.draft_models.refusal_calls
    for other in an.flow.calls_in(key(module, scope)):
        if other.line <= call.line or not other.context.in_message or other.receiver is not None:
            continue
        if not pattern.search(other.name):
            continue
        for br in other.context.branches:
            if _tests_missing(br, names):
                return True
    return False


# How many lines a value may run on before the getattr call inside it (an argument list
# split over lines by a formatter).
_VALUE_SPAN = 3


def _holds_the_getattr(a: Assign, line: int) -> bool:
    """The assignment's value is the getattr call at `line`, or a call around it."""
    if a.value_call == "getattr" or (a.value is not None and "getattr(" in a.value.text):
        return a.line == line
    return a.value_call is not None and a.line <= line <= a.line + _VALUE_SPAN


def _tests_missing(br: Branch, names: set[str]) -> bool:
    """The branch holds when one of `names` is None or falsy (`x is None`, `not x`,
    `x is None or ...`), or fails when it is set (`if x is not None: ... else: raise`)."""

    def missing(c: Cond) -> bool:
        if c.op == "cmp" and c.text in ("is", "==") and len(c.args) == 2:
            return c.args[0].text in names and c.args[1].text == "None"
        if c.op == "not" and c.args and c.args[0].op == "ref":
            return c.args[0].text in names
        if c.op == "or":
            return any(missing(a) for a in c.args)
        return False

    def present(c: Cond) -> bool:
        if c.op == "cmp" and c.text in ("is not", "!=") and len(c.args) == 2:
            return c.args[0].text in names and c.args[1].text == "None"
        if c.op == "ref":
            return c.text in names
        if c.op == "and":
            return any(present(a) for a in c.args)
        return False

    return missing(br.test) if br.holds else present(br.test)


def _unless_provided(
    an: _Reachability,
    module: str,
    scope: str,
    line: int,
    branches: tuple[Branch, ...],
    receiver: str,
) -> tuple[dict[str, tuple[Cond, ...]], tuple[Branch, ...]]:
    """Members whose absence alone lets the site run (`not (x and hasattr(model, "alt"))`),
    each with the other tests that must hold for it to stand in (`x`), and the other
    branches."""
    alternatives: dict[str, tuple[Cond, ...]] = {}
    plain: list[Branch] = []
    for br in branches:
        found = None
        also: tuple[Cond, ...] = ()
        if not br.holds:
            conjuncts = br.test.args if br.test.op == "and" else (br.test,)
            for c in conjuncts:
                if (
                    c.op == "call"
                    and c.text == "hasattr"
                    and len(c.args) >= 2
                    and c.args[1].op == "str"
                    and an.expand(module, scope, line, c.args[0].render()) == receiver
                ):
                    found = c.args[1].text
                    also = tuple(x for x in conjuncts if x is not c)
        if found is None:
            plain.append(br)
        else:
            alternatives[found] = also
    return alternatives, tuple(plain)


def _usable(an: _Reachability, algorithm: str, also: tuple[Cond, ...]) -> bool:
    """The tests that come with a probe can hold under the algorithm."""
    return all(any(a == algorithm for a, _ in an.algos.evaluate(c).may_true) for c in also)


def algorithm_walks(
    version: str, index: VersionIndex, algorithm: str, rules: RoleRules | None = None
) -> tuple[Reach, Reach]:
    """What `algorithm`'s workers run (the walk the interface's sites come from), and what
    the target worker the scheduler builds runs under it (the path to runner code on the
    target): the call graph `tracker graph` draws."""
    an = _Reachability(version, index, rules or load_rules())
    if algorithm not in an.walks:
        empty = Reach(algorithm, ())
        return empty, empty
    return an.walks[algorithm], an.target_walk(algorithm)


def build_interface(version: str, index: VersionIndex, rules: RoleRules | None = None) -> Interface:
    rules = rules or load_rules()
    an = _Reachability(version, index, rules)
    algos = an.algos
    interface = Interface(
        version=version,
        algorithms=algos.speculative,
        workers={
            a: tuple(sorted(w.rpartition(":")[2] for w in ws))
            for a, ws in sorted(algos.workers.items())
        },
        warnings=list(algos.warnings),
        aliases={a: v for a, v in sorted(algos.aliases.items()) if v[0] in algos.speculative},
    )
    collect = _Collector(an)
    for module in an.modules:
        facts = index.modules[module]
        for call in facts.calls:
            collect.call(module, facts.path, call)
        for read in facts.reads:
            collect.read(module, facts.path, read)

    for slot, sites in sorted(collect.found.items()):
        algorithm, role, member = slot
        kind = "call" if any(s.arity for s in sites) else "attribute"
        # The plainest site first: required before guarded, unconditional before nested.
        unique = sorted(
            set(sites), key=lambda s: (STATUS_ORDER[s.status], len(s.condition), s.path, s.line)
        )
        status = min((s.status for s in unique), key=STATUS_ORDER.__getitem__)
        interface.requirements.append(
            Requirement(
                algorithm,
                role,
                member,
                kind,
                status,
                tuple(unique),
                tuple(sorted(collect.alternatives[slot])),
                collect.raises.get(slot, "") if status == RequirementStatus.REQUIRED else "",
            )
        )
    for bucket, uses in (
        (collect.outputs, interface.output_fields),
        (collect.configs, interface.config_keys),
    ):
        for (algorithm, owner, name), field_sites in sorted(bucket.items()):
            uses.append(FieldUse(algorithm, owner, name, tuple(sorted(set(field_sites)))))
    for algorithm in algos.speculative:
        if algorithm in algos.workers and not interface.for_algorithm(algorithm, "target"):
            workers = ", ".join(interface.workers.get(algorithm, ()))
            interface.warnings.append(
                f"{version}: {algorithm} requires no target-model member: its workers "
                f"({workers}) use none, or the role rules do not know their receivers"
            )
    for (receiver, fn), line in sorted(collect.untyped.items()):
        where, scope = _place(index, fn, line)
        algorithms = ", ".join(sorted(an.reached_by.get(fn, ())))
        interface.warnings.append(
            f"{version}: {algorithms}: the receiver {receiver} at {where} (in {scope}) is not "
            "followed to the target or the draft model: what it is asked is not counted"
        )
    for fn, line in sorted(an.flow.unfollowed_rewrites.items()):
        where, scope = _place(index, fn, line)
        interface.warnings.append(
            f"{version}: {where} (in {scope}) sets speculative_algorithm to a value the "
            "analysis cannot follow: what it builds afterwards is counted under the algorithm "
            "that reached it"
        )
    if not any(r.role == "target" for r in interface.requirements):
        interface.warnings.append(f"{version}: no receiver of the role rules matched anywhere")
    interface.draft_classes = draft_classes(index, algos, rules.draft_models.draft_model_flag)
    for algorithm in algos.speculative:
        broken = sorted(
            {
                index.modules[m].path
                for m in {split_key(fn)[0] for fn in an.walks[algorithm].functions}
                if index.modules[m].error_lines
            }
        )
        if broken:
            interface.unparsed[algorithm] = tuple(broken)
    interface.draft_models = draft_models(index, algos, rules.draft_models, an.reached_by)
    return interface


def _place(index: VersionIndex, fn: str, line: int) -> tuple[str, str]:
    """(`speculative/x.py:12`, `Class.method`) of a line of a function, for a warning."""
    module, scope = split_key(fn)
    return f"{index.modules[module].path.removeprefix(SRT_PREFIX)}:{line}", scope


def _site(
    an: _Reachability,
    algorithm: str,
    module: str,
    path: str,
    scope: str,
    line: int,
    branches: tuple[Branch, ...],
    status: str,
    guard: str,
    arity: str,
    *,
    with_path: bool = True,
    carried: str = "",
    role: str = "",
    rule_scope: str = "",
) -> Site:
    """`carried`: the conditions on the way to the function (rendered), before its own."""
    local = [b.render() for b in branches]
    return Site(
        path=path,
        line=line,
        function=scope,
        condition=conjoin([carried, *local]),
        status=status,
        guard=guard,
        arity=arity,
        call_path=an.path_to(algorithm, module, scope, role, rule_scope) if with_path else (),
    )


def _status(decided: bool, guard: str) -> str:
    if guard and Guard.of(guard).tolerates:
        return RequirementStatus.OPTIONAL
    return RequirementStatus.REQUIRED if decided else RequirementStatus.CONDITIONAL
