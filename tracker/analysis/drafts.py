"""Which classes an algorithm may load as its draft model, read from the version's code.

Users load ordinary models as drafts. Where the draft checkpoint falls back to the target's
(`ModelConfig(model_path=model_path or server_args.model_path)`: no draft path given), an
algorithm that loads a draft model loads the target's own class as its draft, unless its
code refuses to start without a draft path. Some algorithms take any generative model as
the draft by design (STANDALONE): that part is data (roles.toml `[draft_models]`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from tracker.analysis.algorithms import Algorithms
from tracker.analysis.index import VersionIndex, key
from tracker.analysis.roles import DraftModelRules
from tracker.extract.facts import Branch, Call, Cond
from tracker.sources.base import SRT_PREFIX

# Modes, in the words the outputs use.
DRAFT_CLASSES = "draft-classes"  # only the draft classes its name rules pick
TARGET_DEFAULT = "target-default"  # the target's class too, when no draft path is given
ANY_GENERATIVE = "any-generative"  # any generative model
GENERATIVE_MODES = frozenset({TARGET_DEFAULT, ANY_GENERATIVE})
SUMMARY = {
    DRAFT_CLASSES: "its draft classes only",
    TARGET_DEFAULT: "its draft classes, or the target's own class when no draft path is given",
    ANY_GENERATIVE: "any generative model",
}


@dataclass(frozen=True)
class DraftModels:
    """What an algorithm may load as its draft model, and the code (or data) that says so."""

    mode: str
    evidence: str

    @property
    def summary(self) -> str:
        return SUMMARY[self.mode]

    @property
    def generative(self) -> bool:
        """Generative entry classes are checked in the draft role for this algorithm."""
        return self.mode in GENERATIVE_MODES


@dataclass(frozen=True)
class _Found:
    path: str
    line: int
    scope: str
    text: str

    def where(self) -> str:
        scope = f" in {self.scope}" if self.scope else ""
        return f"{self.path.removeprefix(SRT_PREFIX)}:{self.line}{scope}"


def draft_models(
    index: VersionIndex,
    algos: Algorithms,
    rules: DraftModelRules,
    reached_by: Mapping[str, set[str]],
) -> dict[str, DraftModels]:
    """For each algorithm whose workers build a draft worker (a call passing
    `is_draft_worker=True`, in a function the algorithm's workers reach)."""
    fallback = _fallback(index, rules)
    refusals = _refusals(index, algos, rules)
    loaders = _loaders(index, rules, reached_by)
    out: dict[str, DraftModels] = {}
    for algorithm in algos.speculative:
        if algorithm not in loaders:
            continue  # NGRAM: no draft model at all
        refused = refusals.get(algorithm)
        if algorithm in rules.any_generative:
            out[algorithm] = DraftModels(
                ANY_GENERATIVE,
                "any generative model is a draft by design "
                "(roles.toml [draft_models] any_generative)",
            )
        elif refused is not None:
            out[algorithm] = DraftModels(
                DRAFT_CLASSES, f"refuses to start without a draft path: {refused.where()}"
            )
        elif fallback is not None:
            out[algorithm] = DraftModels(
                TARGET_DEFAULT,
                "the draft checkpoint defaults to the target's: "
                f"{fallback.where()} ({fallback.text})",
            )
        else:
            out[algorithm] = DraftModels(
                DRAFT_CLASSES, "no fallback of the draft checkpoint to the target's found"
            )
    return out


@dataclass(frozen=True)
class DraftClass:
    """An architecture the version's code loads as a draft: model_config.py rewrites a draft
    checkpoint's architecture to it (`if is_draft_model and arch == "DeepseekV3ForCausalLM":
    architectures[0] = "DeepseekV3ForCausalLMNextN"`)."""

    algorithms: tuple[str, ...]  # those the rewrite's conditions narrow it to; () for any
    evidence: str


_ARCHITECTURES = re.compile(r"(^|\.)architectures(\[0\])?$")
_QUOTED = re.compile(r"""["']([A-Za-z_][A-Za-z0-9_]*)["']""")


def draft_classes(index: VersionIndex, algos: Algorithms, flag: str) -> dict[str, DraftClass]:
    """Class name -> how the code loads it as a draft: every assignment of an architecture
    name under a test of `flag` (`is_draft_model`)."""
    out: dict[str, DraftClass] = {}
    for facts in index.iter_modules():
        if facts.definitions_only:
            continue
        for a in facts.assigns:
            if a.value is None or not _ARCHITECTURES.search(a.target):
                continue
            if not any(b.holds and _tests_flag(b.test, flag) for b in a.context.branches):
                continue
            names = _QUOTED.findall(a.value.text) if a.value.op == "other" else []
            if a.value.op == "str":
                names = [a.value.text]
            allowed, _ = algos.admitted(a.context.branches)
            narrowed = sorted({m for m, _ in allowed} & set(algos.speculative))
            algorithms = tuple(narrowed) if len(narrowed) < len(algos.speculative) else ()
            where = f"{facts.path.removeprefix(SRT_PREFIX)}:{a.line}"
            for name in names:
                if name not in out:
                    out[name] = DraftClass(
                        algorithms, f"the draft architecture rewrite at {where} loads it"
                    )
    return out


def _tests_flag(cond: Cond, flag: str) -> bool:
    if cond.op == "and":
        return any(_tests_flag(c, flag) for c in cond.args)
    return cond.op == "ref" and cond.text.rpartition(".")[2] == flag


def _loaders(
    index: VersionIndex, rules: DraftModelRules, reached_by: Mapping[str, set[str]]
) -> dict[str, _Found]:
    out: dict[str, _Found] = {}
    for facts in index.iter_modules():
        for call in facts.calls:
            if (rules.draft_worker_keyword, "True") not in call.keywords:
                continue
            function = key(facts.module_name, call.context.scope)
            for algorithm in sorted(reached_by.get(function, ())):
                out.setdefault(
                    algorithm, _Found(facts.path, call.line, call.context.scope, call.name)
                )
    return out


def _fallback(index: VersionIndex, rules: DraftModelRules) -> _Found | None:
    """The first call whose keyword makes the checkpoint fall back to the target's."""
    for facts in index.iter_modules():
        for call in facts.calls:
            for name, value in call.keywords:
                if name == rules.fallback_keyword and rules.fallback_value.search(value):
                    return _Found(facts.path, call.line, call.context.scope, f"{name}={value}")
    return None


def _refusals(index: VersionIndex, algos: Algorithms, rules: DraftModelRules) -> dict[str, _Found]:
    """Algorithm -> the first `raise ...Error(...)` under a test that the draft path is
    unset, narrowed to algorithms by its conditions or, failing that, by its function's
    name (`_handle_dflash`)."""
    out: dict[str, _Found] = {}
    for facts in index.iter_modules():
        for call in facts.calls:
            if not rules.refusal_calls.search(call.name):
                continue
            if not any(
                _draft_path_unset(b, rules.draft_path_attribute) for b in call.context.branches
            ):
                continue
            for algorithm in _algorithms_of(call, algos):
                out.setdefault(
                    algorithm,
                    _Found(facts.path, call.line, call.context.scope, call.name),
                )
    return out


def _draft_path_unset(branch: Branch, attribute: str) -> bool:
    """`x.<attribute> is None` holding, `x.<attribute> is not None` failing, or
    `not x.<attribute>` holding."""
    test = branch.test
    if test.op == "not" and test.args and _names(test.args[0], attribute):
        return branch.holds
    if test.op == "ref" and _names(test, attribute):
        return not branch.holds
    if test.op == "cmp" and len(test.args) == 2 and _names(test.args[0], attribute):
        if test.args[1].render() == "None" and test.text in ("is", "=="):
            return branch.holds
        if test.args[1].render() == "None" and test.text in ("is not", "!="):
            return not branch.holds
    return False


def _names(cond: Cond, attribute: str) -> bool:
    return cond.op == "ref" and cond.text.rpartition(".")[2] == attribute


def _algorithms_of(call: Call, algos: Algorithms) -> list[str]:
    allowed, _ = algos.admitted(call.context.branches)
    narrowed = sorted({a for a, _ in allowed} & set(algos.speculative))
    if narrowed and len(narrowed) < len(algos.speculative):
        return narrowed
    function = call.context.scope.rpartition(".")[2]
    words = set(re.split(r"_+", function.lower()))
    return [a for a in algos.speculative if a.lower() in words]
