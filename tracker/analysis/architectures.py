"""Which class a release loads for a checkpoint, decided from the release's own code.

SGLang reads `architectures` from the checkpoint's config, lets its config loader
(`get_config`, in `hf_transformers_utils.py` or `utils/hf_transformers/`) and
`ModelConfig` (configs/model_config.py) rewrite it (a draft's `DeepseekV3ForCausalLM`
becomes `DeepseekV3ForCausalLMNextN`, Janus's `multi_modality` becomes
`MultiModalityCausalLM`), applies `--json-model-override-args` in the loader, then takes
the first name its registry (every module's `EntryClass`) knows. Each rewrite here is an
assignment or `config.update({"architectures": [...]})` found in those modules, applied
in source order when its conditions hold on the checkpoint's values; one whose
conditions the tracker cannot decide is listed, not applied.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

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
from tracker.analysis.index import VersionIndex
from tracker.extract.facts import Branch, Cond, ModuleFacts, conjoin
from tracker.sources.base import SRT_PREFIX

# module name -> its facts read in full (calls, conditions), or None when absent.
Reader = Callable[[str], ModuleFacts | None]

# The names the loading code gives the config being loaded.
HOLDERS = ("hf_config", "hf_text_config", "config", "config_dict", "text_config")
# An attribute or key of a config (`config.architectures[0] = ...`); a bare local named
# `architectures` is a copy being read, not the config's list being set.
_TARGET = re.compile(r"""\.architectures(\[0\])?$|\[\s*["']architectures["']\s*\]$""")
_QUOTED = re.compile(r"""["']([A-Za-z_][A-Za-z0-9_]*)["']""")
_HELPER_VALUE = re.compile(r"""["']architectures["']\s*:\s*\[\s*([A-Za-z_]\w*)\s*\]""")


@dataclass(frozen=True)
class Rewrite:
    """One place the loading code sets the architectures."""

    path: str
    line: int
    scope: str
    branches: tuple[Branch, ...]
    names: tuple[str, ...]
    first_only: bool  # `architectures[0] = ...` rather than the whole list

    def where(self) -> str:
        scope = f" in {self.scope}" if self.scope else ""
        return f"{self.path.removeprefix(SRT_PREFIX)}:{self.line}{scope}"

    def condition(self) -> str:
        return conjoin(b.render() for b in self.branches)


@dataclass(frozen=True)
class Step:
    """Why the architecture is what it is at this point: a rule, where it is, the
    condition it ran under and the config values that decided that condition."""

    rule: str
    site: str
    architectures: tuple[str, ...]
    condition: str = ""
    because: tuple[str, ...] = ()


@dataclass(frozen=True)
class LoadRules:
    """The rewrites of one release, in the order they run, and where the override
    arguments are applied."""

    loader: tuple[Rewrite, ...]
    model_config: tuple[Rewrite, ...]
    override_site: str = ""
    registry: Mapping[str, str] = field(default_factory=dict)  # name -> "models/x.py:12"


@dataclass(frozen=True)
class Choice:
    """The class a release loads for one checkpoint in one role."""

    role: str
    config: CheckpointConfig
    given: tuple[str, ...]  # the config's own architectures
    architectures: tuple[str, ...]  # after the rewrites
    class_name: str  # "" when the registry knows none of them
    steps: tuple[Step, ...]
    # Rewrites whose conditions are not decided: (what it may set, where, the condition).
    undecided: tuple[tuple[str, str, str], ...] = ()


# ------------------------------------------------------------------------ discovery


def load_rules(index: VersionIndex, read: Reader, registry: Mapping[str, str]) -> LoadRules:
    """The release's rewrites: its `get_config` module's, then `ModelConfig`'s."""
    model_config = _model_config_module(index)
    in_class: list[Rewrite] = []
    override = ""
    loader: list[Rewrite] = []
    if model_config is not None:
        facts, qualname = model_config
        in_class = [r for r in rewrites_in(facts) if r.scope.startswith(qualname + ".")]
        found = _defining(index, facts, "get_config", read)
        if found is not None:
            loader = _reached_from(found, "get_config")
            override = _override_site(found)
    return LoadRules(tuple(loader), tuple(in_class), override, dict(registry))


def _model_config_module(index: VersionIndex) -> tuple[ModuleFacts, str] | None:
    for key in index.classes_named("ModelConfig"):
        module = index.module_of(key)
        if module.endswith(".model_config"):
            return index.modules[module], index.classes[key].facts.qualname
    return None


def _defining(
    index: VersionIndex, facts: ModuleFacts, name: str, read: Reader, depth: int = 0
) -> ModuleFacts | None:
    """The module that defines the function `name` imported into `facts`, following
    re-exports (`from .config import get_config` in a package's `__init__`)."""
    if depth > 3:
        return None
    if any(f.name == name and f.owner is None and f.qualname == name for f in facts.functions):
        return facts
    for imp in facts.imports:
        if imp.name != name:
            continue
        package = facts.path.endswith("__init__.py")
        target = index.absolute_module(facts.module_name, imp, package)
        found = read(target)
        if found is not None:
            return _defining(index, found, name, read, depth + 1)
    return None


def _reached_from(facts: ModuleFacts, entry: str, depth: int = 3) -> list[Rewrite]:
    """The rewrites `entry` makes, and those of the module's functions it calls (to
    `depth`), each under the conditions of the call that reaches it too."""
    functions = {f.qualname: f for f in facts.functions if f.owner is None}
    carried: dict[str, tuple[Branch, ...]] = {entry: ()}
    frontier = [entry]
    for _ in range(depth):
        following: list[str] = []
        for caller in frontier:
            for call in facts.calls:
                inside = call.context.scope == caller or call.context.scope.startswith(caller + ".")
                if not inside or call.receiver is not None or call.name not in functions:
                    continue
                if call.name not in carried:
                    carried[call.name] = carried[caller] + call.context.branches
                    following.append(call.name)
        frontier = following
    out = []
    for r in rewrites_in(facts):
        owner = next((f for f in carried if r.scope == f or r.scope.startswith(f + ".")), None)
        if owner is not None:
            out.append(replace(r, branches=carried[owner] + r.branches))
    return out


def _override_site(facts: ModuleFacts) -> str:
    for fn in facts.functions:
        if fn.qualname == "get_config":
            for p in fn.params:
                if "override" in p.name:
                    where = f"{facts.path.removeprefix(SRT_PREFIX)}:{fn.line}"
                    return f"{where} in get_config, as {p.name}"
    return ""


def rewrites_in(facts: ModuleFacts) -> list[Rewrite]:
    """Every assignment of architecture names in a module, and every call of
    `update({"architectures": [...]})` or of a helper that makes one."""
    found: list[Rewrite] = []
    for a in facts.assigns:
        if a.value is None or not _TARGET.search(a.target):
            continue
        names = (a.value.text,) if a.value.op == "str" else tuple(_QUOTED.findall(a.value.text))
        if names:
            first = a.target.endswith("[0]")
            found.append(_rewrite(facts, a.line, a.context.scope, a.context.branches, names, first))
    helpers = _helpers(facts)
    for call in facts.calls:
        set_to: tuple[str, ...] = ()
        if call.name == "update" and call.args and "architectures" in call.args[0]:
            set_to = tuple(n for n in _QUOTED.findall(call.args[0]) if n != "architectures")
        elif call.receiver is None and call.name in helpers:
            slot = helpers[call.name]
            if slot < len(call.args):
                set_to = tuple(_QUOTED.findall(call.args[slot]))[:1]
        if set_to:
            branches = call.context.branches
            found.append(_rewrite(facts, call.line, call.context.scope, branches, set_to, False))
    return sorted(found, key=lambda r: r.line)


def _rewrite(
    facts: ModuleFacts,
    line: int,
    scope: str,
    branches: tuple[Branch, ...],
    names: tuple[str, ...],
    first: bool,
) -> Rewrite:
    return Rewrite(facts.path, line, scope, branches, names, first)


def _helpers(facts: ModuleFacts) -> dict[str, int]:
    """Functions that set the architectures to one of their parameters
    (`def _set_architectures(config, arch_name): config.update({"architectures":
    [arch_name]})`): name -> the position of that parameter in a call."""
    out: dict[str, int] = {}
    for fn in facts.functions:
        if fn.owner is not None:
            continue
        params = [p.name for p in fn.params if p.kind == "positional"]
        for call in facts.calls:
            if call.context.scope != fn.qualname or call.name != "update" or not call.args:
                continue
            found = _HELPER_VALUE.search(call.args[0])
            if found is not None and found.group(1) in params:
                out[fn.name] = params.index(found.group(1))
    return out


# ------------------------------------------------------------------------- deciding


class LoadEvaluator(Evaluator):
    """Conditions of the loading code on the checkpoint being loaded: its config keys, the
    architectures as rewritten so far, whether it is loaded as a draft, the algorithm."""

    def __init__(
        self, config: CheckpointConfig, architectures: list[str], algorithm: str, flag: str
    ) -> None:
        super().__init__()
        self.config = config
        self.architectures = architectures
        self.algorithm = algorithm
        self.flag = flag

    def atom(self, cond: Cond) -> Val | None:
        if cond.op in ("ref", "other"):
            parts = chain(cond.text)
            return self.read(parts) if parts is not None else None
        if cond.op == "call":
            return self.call(cond)
        return None

    def read(self, parts: tuple[str | int, ...]) -> Val | None:
        if parts[0] == "self":
            parts = parts[1:]
        if not parts:
            return None
        if parts[-1] == self.flag and len(parts) == 1:
            return known(self.config.role == "draft")
        if parts == ("speculative_algorithm",):
            return known(self.algorithm)
        found = _holder(parts)
        if found is None:
            return None
        holder, key = found
        if key and key[0] == "architectures":
            return _index(list(self.architectures), key[1:])
        if not key:
            return None
        present, value = self.lookup(holder, key)
        if present:
            return known(value, ConfigFact(self.config.role, _dotted(key), True, value))
        # An attribute the file lacks may still have its config class's default.
        self.undecided.append((_dotted(key), f"{self.config.role} config has no {_dotted(key)}"))
        return UNKNOWN

    def lookup(self, holder: str, key: Sequence[str | int]) -> tuple[bool, Any]:
        if holder == "text_config":
            return self.config.lookup(("text_config", *key))
        return self.config.lookup(key, text_first=holder == "hf_text_config")

    def call(self, cond: Cond) -> Val | None:
        name = cond.text
        args = cond.args
        if name in ("getattr", "hasattr") and len(args) >= 2 and args[1].op == "str":
            parts = chain(args[0].text)
            found = _holder(parts[1:] if parts and parts[0] == "self" else parts or ())
            if found is None:
                return None
            holder, key = found
            full = (*key, args[1].text)
            present, value = self.lookup(holder, full)
            if name == "hasattr":
                return known(present, ConfigFact(self.config.role, _dotted(full), present, value))
            default = args[2].render() if len(args) >= 3 else ""
            if present:
                return known(value, ConfigFact(self.config.role, _dotted(full), True, value))
            fallback = literal(default) if default else UNKNOWN
            fact = ConfigFact(self.config.role, _dotted(full), False, default=default)
            return known(fallback.value, fact) if fallback.known else UNKNOWN
        return None


def _holder(parts: Sequence[str | int]) -> tuple[str, tuple[str | int, ...]] | None:
    """(the holder's name, the key after it) when a chain reads the config being loaded:
    `self.hf_config.architectures`, `config.model_type`, `model_config.hf_config.x`."""
    for at, part in enumerate(parts):
        if isinstance(part, str) and part in HOLDERS:
            return part, tuple(parts[at + 1 :])
    return None


def _index(values: list[str], rest: Sequence[str | int]) -> Val:
    if not rest:
        return known(tuple(values))
    if len(rest) == 1 and isinstance(rest[0], int) and -len(values) <= rest[0] < len(values):
        return known(values[rest[0]])
    return UNKNOWN


def _dotted(key: Sequence[str | int]) -> str:
    return "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in key).lstrip(".")


def decide(
    rules: LoadRules,
    config: CheckpointConfig,
    algorithm: str,
    flag: str,
    overrides: Mapping[str, Any] | None = None,
) -> Choice:
    """The class the release loads for `config` in its role, with every step that led to
    it; `class_name` is "" when the registry knows none of the names."""
    given = tuple(config.values.get("architectures") or ())
    architectures = list(given)
    values = dict(config.values)
    steps = [Step("the checkpoint's config.json", config.path, tuple(architectures))]
    undecided: list[tuple[str, str, str]] = []
    current = config
    for rewrite in rules.loader:
        _apply(rewrite, current, architectures, algorithm, flag, steps, undecided)
    if overrides:
        values.update(overrides)
        current = CheckpointConfig(config.role, config.path, values, config.from_target)
        if isinstance(overrides.get("architectures"), list):
            architectures[:] = [str(a) for a in overrides["architectures"]]
        site = rules.override_site or "the config loader"
        steps.append(
            Step("--override-args (--json-model-override-args)", site, tuple(architectures))
        )
    for rewrite in rules.model_config:
        _apply(rewrite, current, architectures, algorithm, flag, steps, undecided)
    chosen = next((a for a in architectures if a in rules.registry), "")
    if chosen:
        steps.append(Step("the registry's EntryClass", rules.registry[chosen], (chosen,)))
    return Choice(
        config.role, current, given, tuple(architectures), chosen, tuple(steps), tuple(undecided)
    )


def _apply(
    rewrite: Rewrite,
    config: CheckpointConfig,
    architectures: list[str],
    algorithm: str,
    flag: str,
    steps: list[Step],
    undecided: list[tuple[str, str, str]],
) -> None:
    verdict = LoadEvaluator(config, architectures, algorithm, flag).branches(rewrite.branches)
    if verdict.false:
        return
    target = " or ".join(rewrite.names)
    if not verdict.known:
        undecided.append(
            (f"may set the architecture to {target}", rewrite.where(), rewrite.condition())
        )
        return
    before = architectures[0] if architectures else ""
    if before == rewrite.names[0] and (rewrite.first_only or len(architectures) == 1):
        return  # it sets what is there already: nothing to say
    if rewrite.first_only and architectures:
        architectures[0] = rewrite.names[0]
    else:
        architectures[:] = list(rewrite.names)
    kind = (
        "the draft rewrite"
        if config.role == "draft" and _tests_flag(rewrite, flag)
        else "a rewrite"
    )
    rule = f"{kind}: {before} → {architectures[0]}" if before else f"{kind}: → {architectures[0]}"
    because = tuple(f.text() for f in verdict.facts)
    steps.append(Step(rule, rewrite.where(), tuple(architectures), rewrite.condition(), because))


def _tests_flag(rewrite: Rewrite, flag: str) -> bool:
    return any(flag in b.test.render() for b in rewrite.branches)
