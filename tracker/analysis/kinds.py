"""What kind of model an entry class is, and the evidence that decided it.

Structure first: a class that (or whose base) constructs a `LogitsProcessor`, or holds an
inner model that does, generates text and is checked as a target; one that constructs only
a `Pooler`-like head is a pooling model (embedding, reward, classification). Names are the
last resort, except for drafts, whose name rules come first: a draft builds a
`LogitsProcessor` too. The markers and the name rules are data (queries/roles.toml).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NamedTuple

from tracker.analysis.index import VersionIndex
from tracker.analysis.roles import MODEL_KINDS, RoleRules
from tracker.sources.base import SRT_PREFIX

POOLING_KINDS = frozenset({"embedding", "reward", "classification"})
NOT_DRAFT = frozenset(MODEL_KINDS) - {"draft"}
# Inner models inside inner models: a vision-language wrapper around a wrapper is the
# deepest SGLang goes; the limit only guards against cycles in broken code.
MAX_DEPTH = 3

_CONSTRUCTOR = re.compile(r"\b([A-Z][A-Za-z0-9_]*(?:\.[A-Z][A-Za-z0-9_]*)*)\(")


@dataclass(frozen=True)
class KindDecision:
    kind: str  # "target" | "draft" | "embedding" | "reward" | "classification"
    evidence: str  # what decided it, for people: "constructs LogitsProcessor in ..."
    basis: str  # "structure" | "inner" | "name" | "code" (the code loads it as a draft)
    algorithms: tuple[str, ...] = ()  # a draft's algorithms (empty: all)


class Construction(NamedTuple):
    """`self.<attribute> = <constructor>(...)` in a method of a class."""

    attribute: str
    constructor: str  # as written: "LogitsProcessor", "nn.Linear"
    scope: str  # the method's qualname: "QWenLMHeadModel.__init__"
    path: str
    line: int


@dataclass
class KindFinder:
    """Decides kinds over one index, remembering what it worked out per class."""

    index: VersionIndex
    rules: RoleRules
    # Classes the version's code loads as drafts (tracker.analysis.drafts.draft_classes):
    # name -> (algorithms, evidence).
    loaded_drafts: dict[str, tuple[tuple[str, ...], str]] = field(default_factory=dict)
    _constructions: dict[str, list[Construction]] = field(default_factory=dict)
    _names: dict[tuple[str, str, str], frozenset[str]] = field(default_factory=dict)
    _generative: dict[str, str | None] = field(default_factory=dict)

    def decide(self, name: str, cls: str) -> KindDecision:
        """The kind of the entry class `name` (index key `cls`, "" when unresolved)."""
        draft = self.rules.name_rule(name, frozenset({"draft"}))
        loaded = self.loaded_drafts.get(name)
        if loaded is not None:
            algorithms = loaded[0] or (draft[2] if draft is not None else ())
            return KindDecision("draft", loaded[1], "code", algorithms)
        if draft is not None:
            return KindDecision("draft", f"name matches rule '{draft[1]}'", "name", draft[2])
        if cls:
            own = self.marker_site(cls, "generative")
            if own is not None:
                return KindDecision("target", own, "structure")
            inner = self.generative_inner(cls, (cls,))
            if inner is not None:
                return KindDecision("target", inner, "inner")
            pooling = self.marker_site(cls, "pooling")
            if pooling is not None:
                return self._pooling(name, pooling)
        rule = self.rules.name_rule(name, NOT_DRAFT)
        kind, pattern = (rule[0], rule[1]) if rule is not None else ("target", "")
        found = "class not resolved" if not cls else "no LogitsProcessor or Pooler constructed"
        why = f"name matches rule '{pattern}'" if pattern else "no name rule matches"
        return KindDecision(kind, f"{found}; {why}", "name")

    def _pooling(self, name: str, site: str) -> KindDecision:
        rule = self.rules.name_rule(name, POOLING_KINDS)
        if rule is None:
            return KindDecision("embedding", f"{site}; no LogitsProcessor", "structure")
        return KindDecision(
            rule[0],
            f"{site}; no LogitsProcessor; {rule[0]} by name rule '{rule[1]}'",
            "structure",
        )

    # ------------------------------------------------------------------ structure

    def nearest_markers(self, cls: str) -> tuple[str, dict[str, Construction]] | None:
        """The first class in the MRO of `cls` that constructs any marker, and the
        construction of each marker kind it holds. The nearest decides: a subclass whose
        own `__init__` builds only a Pooler (EmbeddingGemmaModel, which skips
        Gemma3ForCausalLM's `__init__`) is a pooling model, though a base builds a
        LogitsProcessor; a generative model that also builds a Pooler stays generative."""
        kinds = [(k, self.rules.markers(k)) for k in ("generative", "pooling")]
        for c in self.index.mro(cls)[0]:
            module = self.index.classes[c].module
            found: dict[str, Construction] = {}
            for made in self.constructions(c):
                names = self.constructed_names(module, made)
                for kind, markers in kinds:
                    if kind not in found and names & markers:
                        found[kind] = made
            if found:
                return c, found
        return None

    def marker_site(self, cls: str, marker_kind: str) -> str | None:
        """Evidence text when the nearest marker-constructing class of `cls` builds a
        marker of this kind, else None."""
        nearest = self.nearest_markers(cls)
        if nearest is None or marker_kind not in nearest[1]:
            return None
        made = nearest[1][marker_kind]
        marker = min(
            self.constructed_names(self.index.classes[nearest[0]].module, made)
            & self.rules.markers(marker_kind)
        )
        text = (
            f"constructs {marker} in {made.scope} "
            f"({made.path.removeprefix(SRT_PREFIX)}:{made.line})"
        )
        if marker_kind == "pooling":
            farther = self._farther_generative(cls, nearest[0])
            if farther is not None:
                text += f", nearer than the LogitsProcessor of its base {farther}"
        return text

    def _farther_generative(self, cls: str, nearest: str) -> str | None:
        mro = self.index.mro(cls)[0]
        markers = self.rules.markers("generative")
        for c in mro[mro.index(nearest) + 1 :]:
            module = self.index.classes[c].module
            if any(self.constructed_names(module, m) & markers for m in self.constructions(c)):
                return self.index.classes[c].name
        return None

    def generative_inner(self, cls: str, chain: tuple[str, ...]) -> str | None:
        """Evidence that an inner model `cls` holds (through its MRO) is generative."""
        if len(chain) > MAX_DEPTH:
            return None
        for c in self.index.mro(cls)[0]:
            info = self.index.classes[c]
            for made in self.constructions(c):
                res = self.index.resolve_class(info.module, made.constructor, made.scope)
                inner = res.symbol
                if inner is None or inner in chain:
                    continue
                why = self.generative(inner, (*chain, inner))
                if why is not None:
                    inner_name = self.index.classes[inner].name
                    return f"inner model self.{made.attribute}: {inner_name}, which {why}"
        return None

    def generative(self, cls: str, chain: tuple[str, ...]) -> str | None:
        if cls in self._generative:
            return self._generative[cls]
        found = self.marker_site(cls, "generative") or self.generative_inner(cls, chain)
        # Remember only an answer that did not depend on where the chain stopped.
        if found is not None or len(chain) <= 1:
            self._generative[cls] = found
        return found

    def constructed_names(self, module: str, made: Construction) -> frozenset[str]:
        """The class name constructed and, when it resolves, the names of its bases."""
        memo_key = (module, made.scope, made.constructor)
        cached = self._names.get(memo_key)
        if cached is not None:
            return cached
        names = {made.constructor.rpartition(".")[2]}
        res = self.index.resolve_class(module, made.constructor, made.scope)
        if res.external:
            names.add(res.external.rpartition(".")[2])
        if res.symbol is not None:
            mro, external = self.index.mro(res.symbol)
            names |= {self.index.classes[c].name for c in mro}
            names |= {(r.external or r.text).rpartition(".")[2] for r in external}
        self._names[memo_key] = frozenset(names)
        return self._names[memo_key]

    def constructions(self, cls: str) -> list[Construction]:
        cached = self._constructions.get(cls)
        if cached is not None:
            return cached
        info = self.index.classes[cls]
        facts = self.index.modules[info.module]
        qual = info.facts.qualname
        out = []
        for a in facts.assigns:
            target = a.target
            if not target.startswith("self.") or target.count(".") != 1:
                continue
            if a.context.scope.rpartition(".")[0] != qual:
                continue
            if a.value_call:
                callees = [a.value_call]
            elif a.value is not None and a.value.op == "other":
                # `LogitsProcessor(config) if tie else None` and the like.
                callees = _CONSTRUCTOR.findall(a.value.text)
            else:
                callees = []
            for callee in callees:
                out.append(Construction(target[5:], callee, a.context.scope, facts.path, a.line))
        self._constructions[cls] = out
        return out
