"""Which model entry classes provide what the algorithms require, at one version.

A class provides a member if its body defines it, an SGLang base class does (resolved
across modules; the MRO decides), it assigns `self.member = ...`, or an external base
provides it: `torch.nn.Module`, `transformers.PreTrainedModel`, ... as the shipped
inventory of their real source says, at the package versions the release pins
(`forward` is not one: nn.Module's raises). A class whose `__getattr__` forwards to
`self.x` provides what every class `self.x` may hold provides. "unknown" is left for a base
outside the inventory and a forward whose target's class cannot be found, and names it.
A wrapper whose inner model (`self.language_model = DeepseekV3ForCausalLM(...)`) provides
a missing member is a delegation candidate: a mechanical fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tracker.analysis.contract import (
    NO_FORWARD,
    ContractFinding,
    check_contract,
    check_draft_contract,
)
from tracker.analysis.externals import EMPTY_BASES, OBJECT_MEMBERS, ExternalBases, bases_for
from tracker.analysis.index import ClassInfo, Resolution, VersionIndex, key
from tracker.analysis.interface import Interface, Requirement
from tracker.analysis.kinds import KindFinder
from tracker.analysis.reuse import CheckMemo
from tracker.analysis.roles import CaptureHook, RoleRules, load_rules
from tracker.analysis.vocabulary import PROVIDED, CheckStatus, ProvisionKind
from tracker.extract.facts import ModuleFacts
from tracker.sources.base import SRT_PREFIX

# The base every model has: naming it on every missing member would say nothing.
UBIQUITOUS_BASE = "torch.nn.Module"
MAX_FORWARD_DEPTH = 3


@dataclass(frozen=True)
class Provision:
    member: str
    how: str  # a ProvisionKind (tracker.analysis.vocabulary)
    # The providing class ("transformers.PreTrainedModel (transformers 4.57.1)" for an
    # external one; the forward and its candidates for "forwarded"); why it is unknown; for
    # "missing", what else was looked at (external bases besides torch.nn.Module, forwarded-to
    # classes and which of them lack it), or "".
    where: str = ""
    line: int = 0


@dataclass(frozen=True)
class Delegation:
    member: str
    attribute: str  # "language_model"
    inner_class: str  # "DeepseekV3ForCausalLM"
    inner_key: str  # index key of the inner class
    provided_by: str  # class (in the inner class's MRO) that defines the member
    # The other classes the attribute may hold (other branches of `__init__` build them):
    # those that provide the member too, and those that lack it (a delegating patch still
    # fails for checkpoints that build one of these).
    also: tuple[str, ...] = ()
    lacking: tuple[str, ...] = ()


@dataclass(frozen=True)
class AtRisk:
    """A member the class lacks that the algorithm needs only under a condition: not a
    break, but the class fails when the condition holds."""

    member: str
    condition: str  # the condition of the member's first site ("if ..." without the "if")


@dataclass(frozen=True)
class EntryClass:
    name: str
    key: str  # index key, "" when the name does not resolve to a class
    path: str
    line: int
    kind: str  # "target" | "draft" | "embedding" | "reward" | "classification"
    # What decided the kind: "constructs LogitsProcessor in X.__init__ (models/x.py:12)",
    # "inner model self.language_model: ...", "name matches rule 'Eagle3$'".
    kind_evidence: str = ""
    # The line of the `class` statement in `path` (`line` is where EntryClass registers
    # it); 0 when the name resolves to no class.
    class_line: int = 0


@dataclass(frozen=True)
class ModelCheck:
    model: str
    path: str
    kind: str
    algorithm: str
    role: str
    status: str  # a CheckStatus (tracker.analysis.vocabulary)
    missing: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()
    provisions: tuple[Provision, ...] = ()
    delegations: tuple[Delegation, ...] = ()
    # EAGLE3's aux-hidden-state contract (tracker.analysis.contract), for a target that provides
    # the members: a finding makes the check "broken"; why it could not be followed.
    contract: tuple[ContractFinding, ...] = ()
    contract_unknown: str = ""
    # The contract followed: a target's capture hook (`set_dflash_layers_to_capture`),
    # DRAFT_CONTRACT for a draft's own forward, TARGET_WITHOUT_HOOK for a target's that no
    # hook prepares (set only when it breaks), "" when none was.
    contract_hook: str = ""
    kind_evidence: str = ""  # what decided the class's kind
    # Why a class is checked in a role its kind does not imply: the algorithm loads
    # generative classes as drafts (the interface's evidence), or the user asked for it.
    role_evidence: str = ""
    # Why the user accepts this break (tracker.compare.accepted), "" when not accepted: set after
    # the analysis, never stored in a snapshot.
    accepted: str = ""
    # Members needed only under a condition that the class lacks.
    at_risk: tuple[AtRisk, ...] = ()
    # Why the check cannot be ok whatever the members say: the class's own file or a
    # file the algorithm's workers run does not parse ("" when both do).
    problem: str = ""


@dataclass
class Compat:
    version: str
    entries: list[EntryClass] = field(default_factory=list)
    checks: list[ModelCheck] = field(default_factory=list)

    def check_for(self, model: str, algorithm: str, role: str | None = None) -> ModelCheck | None:
        """The model's check for the algorithm: in `role`, else in its kind's own role."""
        for c in self.checks:
            if (
                c.model == model
                and c.algorithm == algorithm
                and (c.role == role if role is not None else c.role == natural_role(c.kind))
            ):
                return c
        return None


def entry_classes(
    index: VersionIndex, rules: RoleRules, interface: Interface | None = None
) -> list[EntryClass]:
    """Every class a models module registers through `EntryClass`, with its kind (a class
    the interface says the code loads as a draft is one)."""
    loaded = {
        n: (d.algorithms, d.evidence)
        for n, d in (interface.draft_classes.items() if interface is not None else ())
    }
    finder = KindFinder(index, rules, loaded)
    out: dict[str, EntryClass] = {}
    for facts in index.iter_modules():
        if ".models." not in f".{facts.module_name}.":
            continue
        for a in facts.assigns:
            if a.target != "EntryClass" or a.context.scope:
                continue
            names: tuple[str, ...] = a.value_names
            if not names and a.value is not None and a.value.op == "ref":
                names = (a.value.text,)
            for name in names:
                res = index.resolve_class(facts.module_name, name)
                short = name.rpartition(".")[2]
                path = facts.path
                symbol = res.symbol or ""
                if symbol:
                    path = index.classes[symbol].path
                if short not in out:
                    decided = finder.decide(short, symbol)
                    out[short] = EntryClass(
                        short,
                        symbol,
                        path,
                        a.line,
                        decided.kind,
                        decided.evidence,
                        index.classes[symbol].facts.line if symbol else 0,
                    )
    return sorted(out.values(), key=lambda e: e.name)


def provision(index: VersionIndex, cls: str, member: str, depth: int = 0) -> Provision:
    """How `cls` provides `member` (see the module's docstring). Kept with the index: each
    algorithm and role asks a class for many of the same members."""
    memo_key = ("provision", cls, member, depth)
    found = index.derived.get(memo_key)
    if found is None:
        found = index.derived[memo_key] = _provision(index, cls, member, depth)
    assert isinstance(found, Provision)
    return found


def _provision(index: VersionIndex, cls: str, member: str, depth: int) -> Provision:
    mro, external = index.mro(cls)
    forwarding: ClassInfo | None = None
    for c in mro:
        info = index.classes[c]
        if member in info.methods:
            how = "defined" if c == cls else "inherited"
            return Provision(member, how, info.name, info.methods[member].line)
        if member in info.instance_attrs:
            return Provision(member, "attribute", info.name, min(info.instance_attrs[member]))
        if member in info.class_attrs:
            return Provision(member, "attribute", info.name)
        if forwarding is None and info.forward is not None:
            forwarding = info
    if member in OBJECT_MEMBERS:
        return Provision(member, "external", "object")
    found, consulted, unresolved = _external_provision(bases_for(index.pins), external, member)
    if found is not None:
        return found
    # Python asks `__getattr__` only when the normal lookup (bases included) fails.
    via = _forwarded(index, cls, forwarding, member, depth) if forwarding else None
    if via is not None and via.how != "missing":
        return via
    if unresolved:
        return Provision(member, "unknown", "; ".join(unresolved))
    if via is not None and via.where:
        return via
    noted = [label for label in consulted if not label.startswith(f"{UBIQUITOUS_BASE} (")]
    return Provision(member, "missing", f"not in {' nor '.join(consulted)}" if noted else "")


def _external_provision(
    ext: ExternalBases, external: list[Resolution], member: str
) -> tuple[Provision | None, list[str], list[str]]:
    """(the provision by an inventoried external base, or None; the inventory entries
    looked at; the bases that could not be looked at, each saying why)."""
    consulted: list[str] = []
    unresolved: list[str] = []
    for res in external:
        name = res.external
        if name is None:
            unresolved.append(f"base {res.text} not resolved")
            continue
        if name in EMPTY_BASES:
            continue
        if name.startswith("sglang."):
            unresolved.append(f"base {name} not found in the tree")
            continue
        found = ext.lookup(name)
        if found is None:
            unresolved.append(f"base {name} outside the inventory")
            continue
        if member in found.members:
            return Provision(member, "external", found.label), consulted, unresolved
        consulted.append(found.label)
        unresolved += [
            f"base {b} of {name} outside the inventory"
            for b in found.outside
            if b not in EMPTY_BASES
        ]
    return None, consulted, unresolved


def _forwarded(
    index: VersionIndex, cls: str, owner: ClassInfo, member: str, depth: int
) -> Provision:
    """What `owner.__getattr__` gives for `member`: the member of every class its target
    may hold, or why that is not known."""
    fwd = owner.forward
    assert fwd is not None
    name = f"{owner.name}.__getattr__"
    if fwd.problem:
        return Provision(member, "unknown", f"{name} {fwd.problem}")
    if any(member == e or (e.endswith("*") and member.startswith(e[:-1])) for e in fwd.exempt):
        return Provision(member, "missing", f"{name} does not forward {member}")
    if not fwd.targets:  # only `super().__getattr__`: nn.Module's finds registered parts
        return Provision(member, "missing")
    if depth >= MAX_FORWARD_DEPTH:
        return Provision(member, "unknown", f"{name}: forwards nested too deeply")
    verdicts = [_forward_target(index, cls, name, t, member, depth) for t in fwd.targets]
    # Several targets are tried in turn (`try: getattr(a) except: getattr(b)`).
    for how in ("forwarded", "unknown"):
        for v in verdicts:
            if v.how == how:
                return v
    return verdicts[0]


def _forward_target(
    index: VersionIndex, cls: str, name: str, target: str, member: str, depth: int
) -> Provision:
    attr = target.removeprefix("self.")
    if not target.startswith("self.") or not attr.isidentifier():
        return Provision(member, "unknown", f"{name} forwards to {target}, not an attribute")
    cands = index.attr_candidates(cls, attr)
    if not cands:
        why = f" ({', '.join(cands.unresolved)})" if cands.unresolved else ""
        return Provision(
            member, "unknown", f"{name} forwards to {target}, whose class could not be found{why}"
        )
    verdicts: dict[str, Provision] = {}
    for k in cands.classes:
        verdicts[index.classes[k].name] = provision(index, k, member, depth + 1)
    ext = bases_for(index.pins)
    for dotted in cands.external:
        found = ext.lookup(dotted)
        verdicts[dotted] = (
            Provision(member, "unknown", f"{dotted} outside the inventory")
            if found is None
            else Provision(
                member, "external" if member in found.members else "missing", found.label
            )
        )
    lacking = sorted(n for n, p in verdicts.items() if p.how == "missing")
    unsure = sorted(n for n, p in verdicts.items() if p.how == "unknown")
    having = sorted(n for n, p in verdicts.items() if p.how in PROVIDED)
    via = f" ({'; '.join(cands.via)})" if cands.via else ""
    head = f"{name} forwards to {target}"
    if lacking:
        verb = "provides" if len(having) == 1 else "provide"
        also = f"; {', '.join(having)} {verb} it" if having else ""
        lack = "lacks" if len(lacking) == 1 else "lack"
        return Provision(member, "missing", f"{head}: {', '.join(lacking)} {lack} it{also}{via}")
    if unsure:
        why = "; ".join(f"{n}: {verdicts[n].where}" for n in unsure)
        return Provision(member, "unknown", f"{head}: not known for {why}")
    return Provision(member, "forwarded", f"{head}: {', '.join(having)}{via}")


def provision_or_alternative(
    index: VersionIndex, cls: str, member: str, alternatives: tuple[str, ...]
) -> Provision:
    """The member's provision; when it is missing, a provided alternative stands in."""
    found = provision(index, cls, member)
    if found.how != "missing":
        return found
    for alt in alternatives:
        other = provision(index, cls, alt)
        if other.how in PROVIDED:
            return Provision(
                member, "alternative", f"{alt} ({other.how} in {other.where})", other.line
            )
    return found


def stood_in_by(stand_in: Provision) -> str:
    """The member an `alternative` provision (above) names as standing in."""
    return stand_in.where.partition(" ")[0]


def delegations(index: VersionIndex, cls: str, member: str) -> list[Delegation]:
    """Inner models held in `self.<attr>` whose class provides `member`."""
    memo_key = ("delegations", cls, member)
    known = index.derived.get(memo_key)
    if known is None:
        known = index.derived[memo_key] = tuple(_delegations(index, cls, member))
    return list(known)


def _delegations(index: VersionIndex, cls: str, member: str) -> list[Delegation]:
    """One per attribute whose classes (any branch may build one) include one that
    provides `member`: the first such class, the others that do, and those that do not."""
    found: list[Delegation] = []
    seen: set[str] = set()
    for c in index.mro(cls)[0]:
        info = index.classes[c]
        for attr in sorted(set(info.attr_constructors) | set(info.attr_annotations)):
            if attr in seen:
                continue
            seen.add(attr)
            inners = [k for k in sorted(index.attr_types(cls, attr)) if k != cls]
            having: list[tuple[str, Provision]] = []
            lacking: list[str] = []
            for inner in inners:
                prov = provision(index, inner, member)
                if prov.how in ("defined", "inherited", "attribute"):
                    having.append((inner, prov))
                elif prov.how == "missing":
                    lacking.append(index.classes[inner].name)
            if not having:
                continue
            (first, prov), *others = having
            found.append(
                Delegation(
                    member,
                    attr,
                    index.classes[first].name,
                    first,
                    prov.where,
                    tuple(index.classes[k].name for k, _ in others),
                    tuple(sorted(set(lacking))),
                )
            )
    return found


def natural_role(kind: str) -> str | None:
    """The role a class of this kind is checked in by default (pooling models: none)."""
    return kind if kind in ("target", "draft") else None


@dataclass(frozen=True)
class Needs:
    """What each (algorithm, role) requires: member names and their stand-ins; and the
    members it needs only under a condition, with that condition."""

    required: dict[tuple[str, str], tuple[str, ...]]
    alternatives: dict[tuple[str, str, str], tuple[str, ...]]
    conditional: dict[tuple[str, str], tuple[tuple[str, str], ...]] = field(default_factory=dict)
    # algorithm -> worker files that do not parse (Interface.unparsed)
    unparsed: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, interface: Interface) -> Needs:
        required: dict[tuple[str, str], set[str]] = {}
        conditional: dict[tuple[str, str], dict[str, str]] = {}
        alternatives: dict[tuple[str, str, str], tuple[str, ...]] = {}
        for req in interface.requirements:
            slot = (req.algorithm, req.role)
            if req.status == "required":
                required.setdefault(slot, set()).add(req.member)
            elif req.status == "conditional":
                conditional.setdefault(slot, {})[req.member] = conditional_text(req)
            else:
                continue
            alternatives[(req.algorithm, req.role, req.member)] = req.alternatives
        return cls(
            {k: tuple(sorted(v)) for k, v in required.items()},
            alternatives,
            {k: tuple(sorted(v.items())) for k, v in conditional.items()},
            dict(interface.unparsed),
        )


def conditional_text(req: Requirement) -> str:
    """The condition a conditional member is needed under: its plainest conditional site's."""
    for site in req.sites:
        if site.status == "conditional" and site.condition:
            return site.condition
    return ""


def draft_algorithms(name: str, interface: Interface, rules: RoleRules) -> tuple[str, ...]:
    """The algorithms a draft class is a draft of: those the code that loads it names, else
    those its name rule names (empty: any)."""
    loaded = interface.draft_classes.get(name)
    if loaded is not None and loaded.algorithms:
        return loaded.algorithms
    rule = rules.name_rule(name, frozenset({"draft"}))
    return rule[2] if rule is not None else ()


def rows_of(
    entry: EntryClass, interface: Interface, rules: RoleRules
) -> list[tuple[str, str, str]]:
    """(algorithm, role, why in this role) of each check an entry class gets by default:
    a target in the target role, and in the draft role where the algorithm loads
    generative classes as drafts; a draft for the algorithms its name rule names."""
    rows: list[tuple[str, str, str]] = []
    # Only algorithms that load a draft model and ask something of it check one (NGRAM has
    # none; STANDALONE loads any generative model and asks nothing of it).
    asking = {
        a
        for a in interface.algorithms
        if a in interface.draft_models and interface.for_algorithm(a, "draft")
    }
    if entry.kind == "draft":
        # A class the code loads for some algorithms, or whose name rule names some, only
        # for those.
        only = draft_algorithms(entry.name, interface, rules)
        return [
            (a, "draft", "")
            for a in interface.algorithms
            if a in asking and (not only or a in only)
        ]
    if entry.kind != "target":
        return rows
    for algorithm in interface.algorithms:
        rows.append((algorithm, "target", ""))
        drafts = interface.draft_models.get(algorithm)
        if drafts is not None and drafts.generative and algorithm in asking:
            rows.append((algorithm, "draft", drafts.evidence))
    return rows


def check_entry(
    index: VersionIndex,
    entry: EntryClass,
    algorithm: str,
    role: str,
    needs: Needs,
    role_evidence: str = "",
) -> ModelCheck:
    """One entry class against what `algorithm` requires of `role`, whatever its kind.
    An algorithm that asks nothing of the role makes the class "ok": a class is fixed
    when the last member it lacked stops being required."""
    members = needs.required.get((algorithm, role), ())
    risky = needs.conditional.get((algorithm, role), ())
    if not entry.key:
        return ModelCheck(
            entry.name,
            entry.path,
            entry.kind,
            algorithm,
            role,
            "unknown",
            unknown=members,
            provisions=tuple(Provision(m, "unknown", "class not resolved") for m in members),
            kind_evidence=entry.kind_evidence,
            role_evidence=role_evidence,
        )
    provs = tuple(
        provision_or_alternative(
            index, entry.key, m, needs.alternatives.get((algorithm, role, m), ())
        )
        for m in members
    )
    missing = tuple(p.member for p in provs if p.how == ProvisionKind.MISSING)
    unknown = tuple(p.member for p in provs if p.how == ProvisionKind.UNKNOWN)
    risk_provs = tuple(
        provision_or_alternative(
            index, entry.key, m, needs.alternatives.get((algorithm, role, m), ())
        )
        for m, _ in risky
        if m not in members
    )
    lacking = {p.member for p in risk_provs if p.how == ProvisionKind.MISSING}
    at_risk = tuple(AtRisk(m, cond) for m, cond in risky if m in lacking)
    delegs: list[Delegation] = []
    for m in (*missing, *(r.member for r in at_risk)):
        delegs.extend(delegations(index, entry.key, m))
    status: str = (
        CheckStatus.BROKEN if missing else CheckStatus.UNKNOWN if unknown else CheckStatus.OK
    )
    problem = unparsed_problem(index, entry.key, needs.unparsed.get(algorithm, ()))
    if problem and status == CheckStatus.OK:
        status = CheckStatus.UNKNOWN
    contract: tuple[ContractFinding, ...] = ()
    contract_unknown = hook = ""
    if status == CheckStatus.OK:
        status, contract, contract_unknown, hook = _contract(index, entry.key, role, provs)
    return ModelCheck(
        entry.name,
        entry.path,
        entry.kind,
        algorithm,
        role,
        status,
        missing,
        unknown,
        provs + risk_provs,
        tuple(delegs),
        contract=contract,
        contract_unknown=contract_unknown,
        contract_hook=hook if contract or contract_unknown else "",
        kind_evidence=entry.kind_evidence,
        role_evidence=role_evidence,
        at_risk=at_risk,
        problem=problem,
    )


# The contract a draft keeps (tracker.analysis.contract.check_draft_contract), and a
# target whose algorithm calls no capture hook.
DRAFT_CONTRACT = "draft forward"
TARGET_WITHOUT_HOOK = "target forward"


def capture_hook(provs: tuple[Provision, ...]) -> CaptureHook | None:
    """The hook through which the algorithm asks this target for aux hidden states: the
    first one in roles.toml's order that it requires and the class itself provides (an
    alternative stands in for the one the runner would call instead)."""
    provided = {p.member for p in provs if p.how in PROVIDED and p.how != "alternative"}
    return next((h for h in load_rules().capture_hooks if h.hook in provided), None)


def contract_slot(role: str, provs: tuple[Provision, ...]) -> str:
    """Which contract a check with these required provisions follows: DRAFT_CONTRACT for a
    draft, a target's capture hook, "" for none."""
    if role == "draft":
        return DRAFT_CONTRACT
    if role != "target":
        return ""
    hook = capture_hook(provs)
    return hook.hook if hook is not None else TARGET_WITHOUT_HOOK


def _contract(
    index: VersionIndex, cls: str, role: str, provs: tuple[Provision, ...]
) -> tuple[str, tuple[ContractFinding, ...], str, str]:
    """(status, findings, why not followed, contract followed) of a check whose members
    are all there: a target through its capture hook, a draft through its own forward."""
    slot = contract_slot(role, provs)
    if slot in (DRAFT_CONTRACT, TARGET_WITHOUT_HOOK):
        # The draft's own forward runs in this role, or a target's that no capture hook
        # prepares (a wrapper whose state only EAGLE3's setter creates fails under EAGLE):
        # what it reads of the capture state must be created by the __init__s that run.
        findings = check_draft_contract(index, cls).findings
        if not findings:
            return CheckStatus.OK, (), "", slot if slot == DRAFT_CONTRACT else ""
        return CheckStatus.BROKEN, findings, "", slot
    hook = next((h for h in load_rules().capture_hooks if h.hook == slot), None)
    if hook is None:
        return CheckStatus.OK, (), "", ""
    result = check_contract(index, cls, hook)
    # A contract the analysis could not follow proves nothing: the class is not ok. A
    # class with no forward at all is left as it is: nn.Module's raises, so the class
    # cannot serve anything, and no contract is there to follow.
    if result.findings:
        return CheckStatus.BROKEN, result.findings, result.unknown, slot
    if result.unknown and result.unknown != NO_FORWARD:
        return CheckStatus.UNKNOWN, (), result.unknown, slot
    return CheckStatus.OK, (), result.unknown, slot


def unparsed_problem(index: VersionIndex, cls: str, workers: tuple[str, ...]) -> str:
    """Why a check cannot be ok: the class's own file does not parse (it may not even
    import), or a worker file does (what it asks is not all known); "" when both parse."""
    module = index.modules.get(index.module_of(cls)) if cls else None
    if module is not None and module.error_lines:
        return f"{module.path.removeprefix(SRT_PREFIX)} does not parse"
    if module is not None:
        missing = missing_import(index, module)
        if missing:
            return missing
    return workers_problem(workers)


def missing_import(index: VersionIndex, facts: ModuleFacts) -> str:
    """`from sglang.srt.x import Name` at the top of a module, where x is a module read in
    full (not a package, whose submodules may not be loaded) that binds no Name: importing the
    module fails, so SGLang's registry never registers its classes. "" when none does. Kept
    per module in the index: every class of a model file, and every algorithm, asks it."""
    memo_key = ("missing_import", facts.module_name)
    known = index.derived.get(memo_key)
    if known is None:
        known = index.derived[memo_key] = _missing_import(index, facts)
    return known


def _missing_import(index: VersionIndex, facts: ModuleFacts) -> str:
    for imp in facts.imports:
        if imp.scope or imp.type_checking or imp.name in (None, "*"):
            continue
        target = index.absolute_module(facts.module_name, imp, facts.path.endswith("__init__.py"))
        source = index.modules.get(target)
        # Read for its definitions only, a module's names bound under a module-level `if`
        # are not all known: only fully read modules can be said to lack a name.
        if (
            source is None
            or source.definitions_only
            or source.path.endswith("__init__.py")
            or source.problem
        ):
            continue
        if imp.name not in _bound_names(index, source):
            return (
                f"not registered: {facts.path.removeprefix(SRT_PREFIX)} imports {imp.name}, "
                f"which {source.path.removeprefix(SRT_PREFIX)} does not define"
            )
    return ""


def _bound_names(index: VersionIndex, facts: ModuleFacts) -> set[str]:
    memo_key = ("bound_names", facts.module_name)
    known: set[str] | None = index.derived.get(memo_key)
    if known is None:
        known = index.derived[memo_key] = _module_names(facts)
    return known


def _module_names(facts: ModuleFacts) -> set[str]:
    names = {c.name for c in facts.classes if "." not in c.qualname}
    names |= {f.name for f in facts.functions if "." not in f.qualname}
    names |= {a.target for a in facts.assigns if not a.context.scope}
    names |= {a.target.partition("[")[0] for a in facts.assigns if not a.context.scope}
    for imp in facts.imports:
        if not imp.scope:
            names.add(imp.alias or imp.name or imp.module.split(".")[0])
    return names


def workers_problem(workers: tuple[str, ...]) -> str:
    """ "the worker file speculative/x.py does not parse", or "" for none."""
    if not workers:
        return ""
    files = ", ".join(p.removeprefix(SRT_PREFIX) for p in workers)
    if len(workers) == 1:
        return f"the worker file {files} does not parse"
    return f"the worker files {files} do not parse"


def build_compat(
    index: VersionIndex,
    interface: Interface,
    rules: RoleRules | None = None,
    memo: CheckMemo | None = None,
) -> Compat:
    """Every entry class's checks. With `memo` (the checks of the table built just
    before), a check whose inputs are unchanged is taken from it (tracker.analysis.reuse)."""
    rules = rules or load_rules()
    compat = Compat(interface.version, entries=entry_classes(index, rules, interface))
    needs = Needs.of(interface)
    memo = memo or CheckMemo()  # a fresh one reuses nothing
    memo.start(index, rules.source_hash)
    for entry in compat.entries:
        module = index.module_of(entry.key) if entry.key else ""
        for algorithm, role, why in rows_of(entry, interface, rules):
            members = needs.required.get((algorithm, role), ())
            risky = needs.conditional.get((algorithm, role), ())
            alternatives = tuple(
                needs.alternatives.get((algorithm, role, m), ())
                for m in (*members, *(r for r, _ in risky))
            )
            row = (entry.name, algorithm, role)
            inputs = (entry, members, risky, alternatives, why)
            check = memo.get(row, inputs, module)
            if check is None:
                check = check_entry(index, entry, algorithm, role, needs, why)
            memo.put(row, inputs, check)
            compat.checks.append(check)
    memo.finish()
    return compat


def class_key_for(index: VersionIndex, name: str) -> str | None:
    """The index key of an entry class named `name` (or any class of that name)."""
    candidates = index.classes_named(name)
    models = [c for c in candidates if ".models." in f".{c}"]
    chosen = models or candidates
    return chosen[0] if chosen else None


__all__ = [
    "AtRisk",
    "Compat",
    "Delegation",
    "EntryClass",
    "ModelCheck",
    "Needs",
    "Provision",
    "build_compat",
    "check_entry",
    "class_key_for",
    "delegations",
    "entry_classes",
    "key",
    "natural_role",
    "provision",
    "rows_of",
]
