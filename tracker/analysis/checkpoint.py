"""The answer for a pair of checkpoints rather than a class name: which classes the
release loads for them (tracker.analysis.architectures), what the algorithm then asks of
each once the conditions that read their configs are decided (tracker.analysis.site_values),
and each class's check against that.

A site whose condition the configs make false is no longer a requirement ("not needed:
draft config sets eagle_config.use_aux_hidden_state = false"); a conditional site whose
every condition they make true is required. Nothing else changes: what the configs do
not decide stays as the interface says, and the tests that could not be decided are listed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from tracker.analysis.algorithms import discover
from tracker.analysis.architectures import Choice, LoadRules, Reader, decide, load_rules
from tracker.analysis.compat import Compat, EntryClass, ModelCheck, Needs, check_entry
from tracker.analysis.config_values import CheckpointConfig
from tracker.analysis.drafts import DRAFT_CLASSES
from tracker.analysis.index import VersionIndex
from tracker.analysis.interface import Interface, Requirement, Site
from tracker.analysis.roles import RoleRules
from tracker.analysis.site_values import Pair, SiteEvaluator
from tracker.analysis.vocabulary import STATUS_ORDER, RequirementStatus
from tracker.extract.facts import Branch, ModuleFacts, module_name
from tracker.sources.base import SRT_PREFIX

NOT_NEEDED = "not needed"


@dataclass(frozen=True)
class Change:
    """A requirement whose status the checkpoints' configs changed."""

    role: str
    member: str
    before: str
    after: str  # a RequirementStatus, or NOT_NEEDED
    because: tuple[str, ...]  # the config facts ("draft config sets ... = false")
    site: str  # the site whose condition decided it ("model_executor/model_runner.py:622")
    condition: str


@dataclass(frozen=True)
class Undecided:
    what: str  # the test, or the rewrite
    where: str
    why: str
    kind: str = "condition"  # "condition" (a site's test) | "rewrite" (of the architecture)


@dataclass(frozen=True)
class RoleAnswer:
    role: str
    # How the checkpoint was given: "--model-config", "--draft-config", or the target's
    # own (no --draft-config, and the algorithm falls back to it).
    given_as: str
    choice: Choice | None
    check: ModelCheck | None
    # Why there is no class to check: the algorithm refuses to start without a draft
    # path, or the tracker found no fallback; "" when there is one.
    refusal: str = ""


@dataclass
class Answer:
    version: str
    algorithm: str
    target: RoleAnswer
    draft: RoleAnswer | None  # None: the algorithm loads no draft model
    changes: list[Change] = field(default_factory=list)
    undecided: list[Undecided] = field(default_factory=list)
    requirements: list[Requirement] = field(default_factory=list)  # as decided

    @property
    def roles(self) -> list[RoleAnswer]:
        return [self.target] + ([self.draft] if self.draft is not None else [])

    @property
    def status(self) -> str:
        """broken, unknown or ok over both roles (a draft the tracker has no class for
        leaves the answer unknown)."""
        statuses = [r.check.status for r in self.roles if r.check is not None]
        if "broken" in statuses:
            return "broken"
        unknown = "unknown" in statuses or any(r.refusal for r in self.roles)
        return "unknown" if unknown else "ok"


@dataclass(frozen=True)
class Request:
    """What was asked: the algorithm (as it runs), the checkpoints, the override args."""

    algorithm: str
    target: CheckpointConfig
    draft: CheckpointConfig | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)


class UnregisteredArchitecture(Exception):
    """The release registers none of a checkpoint's architectures (after its rewrites)."""

    def __init__(self, choice: Choice) -> None:
        super().__init__(", ".join(choice.architectures))
        self.choice = choice


def registry_of(compat: Compat) -> dict[str, str]:
    """Entry class name -> where `EntryClass` registers it."""
    return {e.name: f"{e.path.removeprefix(SRT_PREFIX)}:{e.line}" for e in compat.entries}


def answer(
    index: VersionIndex,
    interface: Interface,
    compat: Compat,
    read: Reader,
    request: Request,
    rules: RoleRules,
) -> Answer:
    """The answer for `request` at the version of `index` (see the module docstring);
    UnregisteredArchitecture when a checkpoint names no class the release registers."""
    load = load_rules(index, read, registry_of(compat))
    flag = rules.draft_models.draft_model_flag
    target = decide(load, request.target, request.algorithm, flag, request.overrides)
    if not target.class_name:
        raise UnregisteredArchitecture(target)
    draft_given, draft, refusal = _draft_choice(load, interface, request, flag)
    entries = {e.name: e for e in compat.entries}
    configs = {"target": target.config}
    classes = {"target": entries[target.class_name].key}
    if draft is not None:
        configs["draft"] = draft.config
        classes["draft"] = entries[draft.class_name].key
    pair = Pair(index, discover(index, rules), rules, read, request.algorithm, configs, classes)
    decided, changes = decide_requirements(pair, interface)
    needs = Needs.of(replace(interface, requirements=decided))
    target_check = _check(index, entries[target.class_name], request.algorithm, "target", needs)
    result = Answer(
        interface.version,
        request.algorithm,
        RoleAnswer("target", "--model-config", target, target_check),
        None,
        changes,
        requirements=[r for r in decided if r.algorithm == request.algorithm],
    )
    if draft is not None:
        draft_check = _check(index, entries[draft.class_name], request.algorithm, "draft", needs)
        result.draft = RoleAnswer("draft", draft_given, draft, draft_check)
    elif refusal:
        result.draft = RoleAnswer("draft", draft_given, None, None, refusal)
    result.undecided = _undecided(pair, target, draft)
    return result


def _draft_choice(
    load: LoadRules, interface: Interface, request: Request, flag: str
) -> tuple[str, Choice | None, str]:
    """(how the draft checkpoint is given, the class loaded for it, or why none is)."""
    if request.draft is not None:
        found = decide(load, request.draft, request.algorithm, flag, request.overrides)
        if not found.class_name:
            raise UnregisteredArchitecture(found)
        return "--draft-config", found, ""
    drafts = interface.draft_models.get(request.algorithm)
    if drafts is None:
        return "", None, ""  # nothing is asked of a draft model (NGRAM)
    if drafts.mode == DRAFT_CLASSES:
        return "", None, f"needs --draft-config: {drafts.evidence}"
    own = CheckpointConfig("draft", request.target.path, request.target.values, from_target=True)
    found = decide(load, own, request.algorithm, flag, request.overrides)
    if not found.class_name:
        raise UnregisteredArchitecture(found)
    return f"the target's checkpoint ({drafts.evidence})", found, ""


def _check(
    index: VersionIndex, entry: EntryClass, algorithm: str, role: str, needs: Needs
) -> ModelCheck:
    return check_entry(index, entry, algorithm, role, needs, f"loaded as the {role} model")


def _undecided(pair: Pair, target: Choice, draft: Choice | None) -> list[Undecided]:
    out = [Undecided(what, where, why) for what, where, why in pair.undecided]
    for choice in (target, draft):
        if choice is None:
            continue
        for what, where, condition in choice.undecided:
            why = f"loading the {choice.role} checkpoint, under {condition}" if condition else ""
            row = Undecided(what, where, why, "rewrite")
            if row not in out:
                out.append(row)
    return out


# ----------------------------------------------------------------- requirements


def decide_requirements(pair: Pair, interface: Interface) -> tuple[list[Requirement], list[Change]]:
    """The interface's requirements with the algorithm's decided on the checkpoints."""
    out: list[Requirement] = []
    changes: list[Change] = []
    for req in interface.requirements:
        if req.algorithm != pair.algorithm or req.role not in pair.configs:
            out.append(req)
            continue
        found, change = _decide(pair, req)
        if found is not None:
            out.append(found)
        if change is not None:
            changes.append(change)
    return out, changes


def _decide(pair: Pair, req: Requirement) -> tuple[Requirement | None, Change | None]:
    if req.status == RequirementStatus.OPTIONAL:
        return req, None
    kept: list[Site] = []
    dropped: list[tuple[Site, tuple[str, ...]]] = []
    raised: list[tuple[Site, tuple[str, ...]]] = []
    for site in req.sites:
        if site.status == RequirementStatus.OPTIONAL:
            kept.append(site)
            continue
        verdict, because = _site_verdict(pair, req, site)
        if verdict is False:
            dropped.append((site, because))
            continue
        if verdict is True and site.status == RequirementStatus.CONDITIONAL:
            raised.append((site, because))
            site = replace(site, status=RequirementStatus.REQUIRED)
        kept.append(site)
    if not kept:
        site, because = dropped[0]
        return None, _change(req, NOT_NEEDED, site, because)
    status = min((s.status for s in kept), key=STATUS_ORDER.__getitem__)
    new = replace(req, sites=tuple(kept), status=status)
    if status == req.status:
        return new, None
    site, because = (raised or dropped)[0]
    return new, _change(req, status, site, because)


def _change(req: Requirement, after: str, site: Site, because: tuple[str, ...]) -> Change:
    where = f"{site.path.removeprefix(SRT_PREFIX)}:{site.line}"
    return Change(req.role, req.member, req.status, after, because, where, site.condition)


def _site_verdict(pair: Pair, req: Requirement, site: Site) -> tuple[bool | None, tuple[str, ...]]:
    """Whether the site runs for the checkpoints (None: not decided), and the config facts
    that say so. A site the workers reach only under conditions of their own (an opt-in
    worker) is never made required by its local ones."""
    module = module_name(site.path)
    facts = pair.index.modules.get(module)
    if facts is None or facts.definitions_only:
        return None, ()
    branches = _branches_at(facts, site, req.member)
    if branches is None:
        return None, ()
    here = SiteEvaluator(pair, req.role, facts, site.function, site.line)
    found = here.branches(branches)
    because = tuple(dict.fromkeys(f.text() for f in found.facts))
    if found.false and because:
        return False, because
    if found.true and because and not _carried(site, branches):
        return True, because
    return None, because


def _branches_at(facts: ModuleFacts, site: Site, member: str) -> tuple[Branch, ...] | None:
    """The conditions of the call or read the site is (the first one on its line that
    names the member, else the first one on its line)."""
    rows = [
        (
            c.name == member or member in (c.receiver or "") or any(member in a for a in c.args),
            c.context,
        )
        for c in facts.calls
        if c.line == site.line and c.context.scope == site.function
    ]
    rows += [
        (r.name == member or member in r.receiver, r.context)
        for r in facts.reads
        if r.line == site.line and r.context.scope == site.function
    ]
    if not rows:
        return None
    best = next((ctx for named, ctx in rows if named), rows[0][1])
    return best.branches


def _carried(site: Site, branches: tuple[Branch, ...]) -> bool:
    """The site's condition holds more than its own branches (conditions on the way)."""
    left = site.condition
    for b in branches:
        left = left.replace(b.render(), "")
    return bool(left.replace(" and ", "").strip())
