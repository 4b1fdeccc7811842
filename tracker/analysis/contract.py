"""The aux-hidden-state contract, beyond members: a class can define
`get_embed_and_head` and `set_eagle3_layers_to_capture` and still never hand the drafter
the hidden states of the layers the setter chose. The same holds for every hook through
which an algorithm asks the target for hidden states (roles.toml `[[capture_hook]]`:
DFLASH's, DSPARK's), and for a draft, whose own forward must find the capture state it
reads.

From facts only (the capture_sites effects of model methods, returns, the index). The
hook is followed through delegation (`self.model.set_eagle3_layers_to_capture(...)`,
helpers, `super()`, a `__getattr__` forward) to the capture state it writes, as (object,
attribute) pairs relative to the checked class (`("model", "layers_to_capture")`,
`("model.layers[]", "_is_layer_to_capture")` for a flag on every decoder layer). `forward`
is followed into the inner models it calls or hands to a helper (`general_mm_embed_routine(
language_model=self.model)`) and the base forwards it runs (`super().forward(...)`), down
to the decoder that returns `(hidden_states, aux_hidden_states)`; an inner model is the
one the class's own `__init__` path builds last. On the way back the pair must not be cut
to its first element, must carry the aux list (not another stream), and the list must be
filled (by the decoder, or by layers that take it by name, not swallow it in `**kwargs`).
Values are out of reach: which tensor is appended and which layer ids a draft asks for
are not checked. A step the analysis cannot follow makes the contract "unknown", with why.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from enum import Enum

from tracker.analysis.index import VersionIndex, key, split_key
from tracker.analysis.roles import CaptureHook, load_rules
from tracker.extract.facts import Effect, FunctionDef, Return

SETTER = "set_eagle3_layers_to_capture"
LOGITS = "self.logits_processor"
MODELS = "sglang.srt.models."
# wrapper -> causal LM -> decoder is three; each `super().forward` on the way adds one.
_MAX_DEPTH = 6
_SELF_CHAIN = re.compile(r"^self((?:\.[A-Za-z_]\w*)*)(\[[^\]]*\])?$")
_WORD = re.compile(r"[A-Za-z_]\w*")
_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


# Why a contract is not followed when the class has no forward (nn.Module's raises).
NO_FORWARD = "no forward to follow"

# What a user sees when the forward unpacks (hidden_states, aux) from a bare tensor.
UNPACK_ERROR = "ValueError: too many values to unpack (expected 2)"


class ContractRule(Enum):
    """The rules, each with the id scripts see, the headline a reader sees, what serving
    the class with EAGLE3 does (the error a user would paste into `tracker triage`), and
    what the fix has to do (`tracker fix` writes no patch for a contract break)."""

    CAPTURE_STATE_MISMATCH = (
        "capture_state_mismatch",
        "aux hidden states never captured",
        "the decoder collects no aux hidden states: a forward that unpacks them from its "
        f"bare return fails with {UNPACK_ERROR}; otherwise the draft gets none",
        "make set_eagle3_layers_to_capture set the state the decoder reads, on the object "
        "it reads it from (or call the inner model's own setter)",
    )
    AUX_NEVER_RETURNED = (
        "aux_never_returned",
        "aux hidden states never returned",
        "the inner forward returns a bare tensor where a (hidden_states, aux_hidden_states) "
        f"pair is unpacked: {UNPACK_ERROR}",
        "make the decoder on the forward path append the captured layers' outputs and "
        "return (hidden_states, aux_hidden_states) when capture is on",
    )
    CAPTURE_ATTRIBUTE_MISSING = (
        "capture_attribute_missing",
        "capture attribute never created",
        "AttributeError on the first forward: the attribute is read before anything sets it",
        "create the attribute in the __init__ that actually runs (call the parent's "
        "__init__), or set it in set_eagle3_layers_to_capture",
    )
    AUX_SLOT_OTHER_STREAM = (
        "aux_slot_other_stream",
        "another stream where the aux hidden states go",
        "no error where it happens: the forward output carries another tensor as the aux "
        "hidden states, so the draft gets the wrong states (or fails on their shape)",
        "return the aux list the decoder fills in the pair's second place, and pass the "
        "other stream some other way",
    )
    AUX_NOT_TO_LOGITS = (
        "aux_not_to_logits",
        "aux hidden states never reach the logits",
        "no error where it happens: the forward output carries no aux hidden states, so "
        "the EAGLE3 draft does not get the captured layers",
        "pass the unpacked aux hidden states on to self.logits_processor",
    )

    def __init__(self, rule_id: str, headline: str, symptom: str, remedy: str) -> None:
        self.id = rule_id
        self.headline = headline
        self.symptom = symptom
        self.remedy = remedy

    @classmethod
    def of(cls, rule_id: str) -> ContractRule:
        return next(r for r in cls if r.id == rule_id)

    @property
    def unpacks(self) -> bool:
        """Whether a user meets this break as the unpack ValueError."""
        return UNPACK_ERROR in self.symptom


@dataclass(frozen=True, order=True)
class ContractSite:
    path: str
    line: int
    what: str  # "set_eagle3_layers_to_capture writes self.model.layers_to_capture"

    def render(self) -> str:
        return f"{self.what} ({self.path.rpartition('/')[2]}:{self.line})"


@dataclass(frozen=True, order=True)
class ContractFinding:
    rule: str  # ContractRule id
    message: str
    sites: tuple[ContractSite, ...] = ()

    @property
    def headline(self) -> str:
        return ContractRule.of(self.rule).headline

    def render(self) -> str:
        return f"{self.headline}: " + "; ".join(s.render() for s in self.sites)


@dataclass(frozen=True)
class ContractResult:
    status: str  # "ok" | "broken" | "unknown"
    findings: tuple[ContractFinding, ...] = ()
    unknown: str = ""  # why the contract could not be followed ("" when it could)


@dataclass
class _Frame:
    """One `forward` on the path: the class whose forward runs, seen from the checked
    class through `prefix` (`"model."`)."""

    cls: str
    fn: str  # function key
    prefix: str
    inner: list[_Frame] = field(default_factory=list)


Written = dict[tuple[str, str], ContractSite]


class _Contract:
    def __init__(self, index: VersionIndex, hook: CaptureHook | None = None) -> None:
        self.index = index
        self.hook = hook or default_hook()
        self.setter = self.hook.hook
        # Setter delegations to an inner model whose class lacks the setter.
        self.undefined: list[ContractSite] = []
        self.unknown: list[str] = []
        self._effects: dict[str, dict[str, list[Effect]]] = {}
        self._returns: dict[str, dict[str, list[Return]]] = {}

    # ------------------------------------------------------------------ facts by function

    def effects(self, fn: str) -> list[Effect]:
        module, qual = split_key(fn)
        if module not in self._effects:
            by_scope: dict[str, list[Effect]] = defaultdict(list)
            facts = self.index.modules.get(module)
            for e in facts.effects if facts is not None else ():
                by_scope[e.scope].append(e)
            self._effects[module] = by_scope
        return self._effects[module].get(qual, [])

    def nested_effects(self, fn: str) -> list[Effect]:
        """The effects of functions defined inside `fn` (a closure a layer is handed)."""
        module, qual = split_key(fn)
        self.effects(fn)
        scopes = self._effects[module]
        return [e for scope, es in scopes.items() if scope.startswith(qual + ".") for e in es]

    def returns(self, fn: str) -> list[Return]:
        module, qual = split_key(fn)
        if module not in self._returns:
            by_scope: dict[str, list[Return]] = defaultdict(list)
            facts = self.index.modules.get(module)
            for r in facts.returns if facts is not None else ():
                by_scope[r.context.scope].append(r)
            self._returns[module] = by_scope
        return self._returns[module].get(qual, [])

    def path(self, fn: str) -> str:
        return self.index.path_of_module(split_key(fn)[0]) or ""

    def fdef(self, fn: str) -> FunctionDef:
        return self.index.functions[fn]

    def label(self, fn: str) -> str:
        return split_key(fn)[1]

    # ---------------------------------------------------------------------- inner models

    def inner_classes(self, cls: str, attr: str) -> set[str]:
        """Classes `self.<attr>` holds: constructors the index resolves, a constructor
        passed as an `__init__` parameter (`language_model_cls=Qwen3_5ForCausalLM`), or
        one a method returns (`self.model = self._init_model(...)`)."""
        found = set(self.index.attr_types(cls, attr))
        mro = self.index.mro(cls)[0]
        for c in mro:
            info = self.index.classes[c]
            for text, _scope in info.attr_constructors.get(attr, []):
                # An import inside the method (`from ...llama4 import Llama4ForCausalLM`
                # in `__init__`) binds the name in the method's scope only.
                for method in info.methods.values():
                    res = self.index.resolve_class(info.module, text, method.qualname)
                    if res.symbol is not None:
                        found.add(res.symbol)
                if text.startswith("self."):
                    found |= self._returned_classes(cls, text[5:])
                elif "." not in text:
                    found |= self._parameter_default(mro, text)
        if len(found) > 1:
            # A subclass that builds another decoder than its base: the assignment that
            # runs last on the `__init__` path decides (`super().__init__()`, then
            # `self.model = OtherModel(...)`).
            last = self._last_built(cls, attr)
            if last is not None and last <= found:
                return last
        return found

    def _last_built(self, cls: str, attr: str) -> set[str] | None:
        """The classes the `__init__` that runs last among those assigning `self.<attr>`
        constructs there (its branches are alternatives: `if ...: self.model = A(...)
        else: self.model = B(...)`); None when one `__init__` decides anyway, or one of its
        values is not a plain construction."""
        writes = self._init_writes(cls, None, attr, set())
        if len({scope for _m, scope, _v in writes}) < 2:
            return None
        last = writes[-1][1]
        out: set[str] = set()
        for module, scope, value in writes:
            if scope != last or value == "None":
                continue
            name = value.partition("(")[0].strip()
            symbol = (
                self.index.resolve_class(module, name, scope).symbol
                if "(" in value and _DOTTED.fullmatch(name)
                else None
            )
            if symbol is None:
                return None
            out.add(symbol)
        return out or None

    def _init_writes(
        self, cls: str, init: str | None, attr: str, seen: set[str]
    ) -> list[tuple[str, str, str]]:
        """(module, scope, value) of each `self.<attr> = ...` in the order the `__init__`
        chain of `cls` runs them, starting at `init`'s (the first in the MRO if None)."""
        mro = self.index.mro(cls)[0]
        if init is None:
            init = next((c for c in mro if "__init__" in self.index.classes[c].methods), None)
        if init is None or init in seen:
            return []
        seen.add(init)
        info = self.index.classes[init]
        fdef = info.methods["__init__"]
        fn = key(info.module, fdef.qualname)
        following = self._next_init(cls, init, self.helpers(cls, fn))
        events: list[tuple[int, list[tuple[str, str, str]]]] = []
        for e in self.effects(fn):
            if e.kind == "write" and e.text == f"self.{attr}":
                events.append((e.line, [(info.module, fdef.qualname, e.value)]))
            elif e.kind == "call" and e.text.endswith(".__init__") and following is not None:
                events.append((e.line, self._init_writes(cls, following, attr, seen)))
                following = None
        return [w for _line, ws in sorted(events, key=lambda x: x[0]) for w in ws]

    def _returned_classes(self, cls: str, method: str) -> set[str]:
        fn = self.index.find_method(cls, method)
        out: set[str] = set()
        if fn is None:
            return self._class_attr_class(cls, method)
        module = split_key(fn)[0]
        for r in self.returns(fn):
            if r.value.op == "call":
                res = self.index.resolve_class(module, r.value.text, self.label(fn))
                if res.symbol is not None:
                    out.add(res.symbol)
        return out

    def _class_attr_class(self, cls: str, name: str) -> set[str]:
        """`self.model = self.body_cls(...)` with `body_cls = qwen3_5.Qwen3_5ForCausalLM` in
        the class body: the class the most derived class body names."""
        for c in self.index.mro(cls)[0]:
            info = self.index.classes[c]
            facts = self.index.modules.get(info.module)
            for a in facts.assigns if facts is not None else ():
                if a.target != name or a.context.scope != info.facts.qualname:
                    continue
                if a.value is None or a.value.op != "ref":
                    return set()
                res = self.index.resolve_class(info.module, a.value.text, info.facts.qualname)
                return {res.symbol} if res.symbol is not None else set()
        return set()

    def _parameter_default(self, mro: list[str], name: str) -> set[str]:
        """The most derived `__init__` with a parameter `name` decides its default."""
        for c in mro:
            info = self.index.classes[c]
            init = info.methods.get("__init__")
            if init is None:
                continue
            for p in init.params:
                if p.name == name and p.default:
                    res = self.index.resolve_class(info.module, p.default, init.qualname)
                    return {res.symbol} if res.symbol is not None else set()
        return set()

    # ----------------------------------------------------------------- objects and names

    def aliases(self, fns: list[str]) -> dict[str, str]:
        """Locals naming an object below self: `for layer in self.layers` and
        `layer = self.layers[i]` make `layer` one of `layers[]`."""
        out: dict[str, str] = {}
        for fn in fns:
            for e in self.effects(fn):
                if e.kind == "loop":
                    name = e.text.split(",")[-1].strip()
                    source = e.value.removeprefix("enumerate(").removesuffix(")")
                    obj = _object(source.split("[")[0], {})
                    if obj is not None and _WORD.fullmatch(name):
                        out[name] = f"{obj}[]"
                elif e.kind == "local":
                    obj = _object(e.value, {})
                    if obj is not None:
                        out[e.text] = obj
        return out

    def helpers(self, cls: str, fn: str, depth: int = 0) -> list[str]:
        """`fn` and the methods of `cls` it calls as `self.m(...)`, transitively."""
        out = [fn]
        if depth > 2:
            return out
        for e in self.effects(fn):
            name = e.text.removeprefix("self.")
            if e.kind != "call" or not e.text.startswith("self.") or "." in name:
                continue
            called = self.index.find_method(cls, name)
            if called is not None and called not in out and name != "forward":
                out += [h for h in self.helpers(cls, called, depth + 1) if h not in out]
        return out

    def classes_at(self, cls: str, obj: str) -> set[str]:
        """The classes an object path below `cls` (`model`, `model.layers[]`) may hold."""
        found = {cls}
        for part in obj.split(".") if obj else ():
            if part.endswith("[]"):
                return set()  # elements of a module list: their class is not followed
            found = {inner for c in found for inner in self.inner_classes(c, part)}
        return found

    # ------------------------------------------------------------------------ the setter

    def setter_writes(self, cls: str, fn: str, prefix: str, depth: int = 0) -> Written:
        """The capture state the setter `fn` writes, seen from the checked class."""
        out: Written = {}
        fns = self.helpers(cls, fn)
        aliases = self.aliases(fns)
        name = self.fdef(fn).name
        for f in fns:
            for e in self.effects(f):
                if e.kind == "write":
                    target = _target(e.text, aliases)
                    if target is not None:
                        obj, attr = target
                        site = ContractSite(self.path(f), e.line, f"{name} writes {e.text}")
                        out.setdefault((_join(prefix, obj), attr), site)
                elif e.kind == "call" and e.text == "setattr" and len(e.args) >= 2:
                    obj_or_none = _object(e.args[0], aliases)
                    attr = e.args[1].strip("'\"")
                    if obj_or_none is not None and _WORD.fullmatch(attr):
                        site = ContractSite(self.path(f), e.line, f"{name} sets {e.args[0]}.{attr}")
                        out.setdefault((_join(prefix, obj_or_none), attr), site)
                elif e.kind == "call" and e.text.endswith("." + self.setter) and depth < _MAX_DEPTH:
                    out.update(
                        {
                            k: v
                            for k, v in self._delegated(cls, f, e, prefix, depth).items()
                            if k not in out
                        }
                    )
        return out

    def _delegated(self, cls: str, fn: str, call: Effect, prefix: str, depth: int) -> Written:
        receiver = call.text[: -len(self.setter) - 1]
        if receiver.startswith("super("):
            owner = self.fdef(fn).owner or ""
            mro = self.index.mro(cls)[0]
            here = key(split_key(fn)[0], owner)
            rest = mro[mro.index(here) + 1 :] if here in mro else []
            for c in rest:
                if self.setter in self.index.classes[c].methods:
                    parent = key(
                        self.index.classes[c].module,
                        self.index.classes[c].methods[self.setter].qualname,
                    )
                    return self.setter_writes(cls, parent, prefix, depth + 1)
            return {}
        obj = _object(receiver, {})
        if obj is None or not obj or "[" in obj:
            self.unknown.append(f"{self.label(fn)} calls {call.text}: receiver not followed")
            return {}
        out: Written = {}
        inner = self.classes_at(cls, obj)
        if not inner:
            self.unknown.append(
                f"{self.label(fn)} calls {call.text}: the class of {receiver} is not known"
            )
        lacking = []
        for c in sorted(inner):
            setter = self.index.find_method(c, self.setter)
            if setter is not None:
                out.update(self.setter_writes(c, setter, _join(prefix, obj), depth + 1))
            elif all(r.external in _TORCH for r in self.index.mro(c)[1]):
                lacking.append(self.index.classes[c].name)
        guarded = any(
            e.kind == "call"
            and e.text in ("hasattr", "getattr")
            and len(e.args) >= 2
            and e.args[0].strip() == receiver
            and e.args[1].strip("'\"") == self.setter
            for e in self.effects(fn)
        )  # `if hasattr(self.model, setter): ... else: self.model.x = ...`
        if lacking and len(lacking) == len(inner) and not guarded:
            what = (
                f"{self.label(fn)} calls {call.text}, which {', '.join(lacking)} does not "
                "define (AttributeError)"
            )
            self.undefined.append(ContractSite(self.path(fn), call.line, what))
        return out

    # ----------------------------------------------------------------------- the forward

    def chain(
        self, cls: str, prefix: str, seen: frozenset[str], fn: str | None = None
    ) -> _Frame | None:
        """`cls.forward` (or the base's forward `fn` it runs through `super()`) and, below
        it, the forwards of the inner models it runs."""
        fn = fn or self.index.find_method(cls, "forward")
        if fn is None:
            return None
        frame: _Frame = _Frame(cls, fn, prefix)
        if len(seen) >= _MAX_DEPTH:
            return frame
        attrs: set[str] = set()
        for f in self.helpers(cls, fn):
            for e in self.effects(f):
                if e.kind != "call":
                    continue
                # `self.model(...)`, `self.model.forward(...)`, or handed to a helper.
                called = e.text.removesuffix(".forward")
                for text in (called, *(a.partition("=")[2] or a for a in e.args)):
                    found = _SELF_CHAIN.match(text.strip())
                    if found is not None and found.group(1).count(".") == 1:
                        attrs.add(found.group(1)[1:])
        parent = self._super_forward(cls, fn)
        if parent is not None:
            # The base's forward runs on the same object, with the inner models it runs.
            below = self.chain(cls, prefix, seen | {parent}, parent)
            frame.inner.append(below or _Frame(cls, parent, prefix))
        for attr in sorted(attrs):
            if self.index.find_method(cls, attr) is not None:
                continue  # a method (a helper above), not an inner model
            for inner in sorted(self.inner_classes(cls, attr) - seen):
                if not inner.startswith(MODELS):
                    continue  # a layer (`ParallelLMHead`), not a model that decodes
                below = self.chain(inner, _join(prefix, attr), seen | {inner})
                if below is not None:
                    frame.inner.append(below)
        return frame

    def _super_forward(self, cls: str, fn: str) -> str | None:
        """`return super().forward(...)`, or `output = super().forward(...)`: the parent's
        forward runs on the same object."""
        if not any(
            r.value.op == "call"
            and r.value.text.startswith("super(")
            and r.value.text.endswith(".forward")
            for r in self.returns(fn)
        ) and not any(e.kind == "call" and e.text == "super().forward" for e in self.effects(fn)):
            return None
        mro = self.index.mro(cls)[0]
        here = key(split_key(fn)[0], self.fdef(fn).owner or "")
        for c in mro[mro.index(here) + 1 :] if here in mro else []:
            if "forward" in self.index.classes[c].methods:
                info = self.index.classes[c]
                return key(info.module, info.methods["forward"].qualname)
        return None

    # ------------------------------------------------------------------- the __init__ path

    def created(self, cls: str, attr: str) -> bool | None:
        """Whether an instance of `cls` has `attr` after `__init__` as actually called:
        a class attribute or method anywhere in the MRO, or a `self.attr = ...` on the
        chain of `__init__`s that really run (`super().__init__()`, `Base.__init__(self)`;
        `nn.Module.__init__(self)` runs none of ours). None when a base is not analysed."""
        mro, external = self.index.mro(cls)
        for c in mro:
            info = self.index.classes[c]
            if attr in info.class_attrs or attr in info.methods:
                return True
        # Where the chain stopped: None when it ran to an `__init__` that calls no other
        # (or none at all), a class when it came back to one it ran already.
        stopped: str | None = None
        for _, _, fns, following in self._init_chain(cls):
            if any(
                e.kind == "write" and e.text == f"self.{attr}" for f in fns for e in self.effects(f)
            ):
                return True
            stopped = following
        if stopped is None and any(r.external not in _TORCH for r in external):
            return None
        return False

    def _init_chain(self, cls: str) -> Iterator[tuple[str, str, list[str], str | None]]:
        """The `__init__`s an instance of `cls` really runs, in order: (its class, its
        function, the helpers it runs, the class whose `__init__` it calls next or None)."""
        mro = self.index.mro(cls)[0]
        init = next((c for c in mro if "__init__" in self.index.classes[c].methods), None)
        seen: set[str] = set()
        while init is not None and init not in seen:
            seen.add(init)
            info = self.index.classes[init]
            fn = key(info.module, info.methods["__init__"].qualname)
            fns = self.helpers(cls, fn)
            following = self._next_init(cls, init, fns)
            yield init, fn, fns, following
            init = following

    def skipping_init(self, cls: str) -> ContractSite | None:
        """Where the chain of `__init__`s that really run stops short of a base that has
        one: the call (`nn.Module.__init__(self)`) that runs torch's instead."""
        mro = self.index.mro(cls)[0]
        for init, fn, fns, following in self._init_chain(cls):
            if following is None:
                rest = mro[mro.index(init) + 1 :] if init in mro else []
                skipped = next(
                    (c for c in rest if "__init__" in self.index.classes[c].methods), None
                )
                call = next(
                    (
                        e
                        for f in fns
                        for e in self.effects(f)
                        if e.kind == "call" and e.text.endswith(".__init__")
                    ),
                    None,
                )
                if skipped is None or call is None:
                    return None
                what = (
                    f"{self.label(fn)} calls {call.text}, skipping "
                    f"{self.index.classes[skipped].name}.__init__"
                )
                return ContractSite(self.path(fn), call.line, what)
        return None

    def _next_init(self, cls: str, current: str, fns: list[str]) -> str | None:
        mro = self.index.mro(cls)[0]
        info = self.index.classes[current]
        for f in fns:
            for e in self.effects(f):
                if e.kind != "call" or not e.text.endswith(".__init__"):
                    continue
                base = e.text[: -len(".__init__")]
                if base.startswith("super("):
                    rest = mro[mro.index(current) + 1 :] if current in mro else []
                    return next(
                        (c for c in rest if "__init__" in self.index.classes[c].methods), None
                    )
                res = self.index.resolve_class(info.module, base, info.facts.qualname)
                if res.symbol is not None:
                    return next(
                        (
                            c
                            for c in self.index.mro(res.symbol)[0]
                            if "__init__" in self.index.classes[c].methods
                        ),
                        None,
                    )
        return None


_TORCH = {None, "torch.nn.Module", "torch.nn.modules.module.Module", "object"}


def _object(text: str, aliases: dict[str, str]) -> str | None:
    """An expression as an object path below self: `self` -> "", `self.model` -> "model",
    `self.layers[i]` -> "layers[]", an alias -> what it names; None for anything else."""
    text = text.strip()
    head, dot, rest = text.partition(".")
    if head in aliases:
        base = aliases[head]
        return _join(base, rest) if dot else base
    found = _SELF_CHAIN.match(text)
    if found is None:
        return None
    chain = found.group(1).lstrip(".")
    return chain + "[]" if found.group(2) else chain


def _target(text: str, aliases: dict[str, str]) -> tuple[str, str] | None:
    """`self.model.layers_to_capture` -> ("model", "layers_to_capture")."""
    owner, dot, attr = text.rpartition(".")
    if not dot or not _WORD.fullmatch(attr):
        return None
    obj = _object(owner, aliases)
    return (obj, attr) if obj is not None else None


def _join(prefix: str, obj: str) -> str:
    return f"{prefix}.{obj}" if prefix and obj else prefix or obj


def _mentions(texts: tuple[str, ...], names: set[str]) -> bool:
    return any(w in names for t in texts for w in _WORD.findall(t))


def _frames(frame: _Frame) -> list[_Frame]:
    out = [frame]
    for sub in frame.inner:
        out += _frames(sub)
    return out


def default_hook() -> CaptureHook:
    """EAGLE3's hook (roles.toml `[[capture_hook]]`)."""
    return next(h for h in load_rules().capture_hooks if h.hook == SETTER)


def check_contract(
    index: VersionIndex, cls: str, hook: CaptureHook | None = None
) -> ContractResult:
    """The aux-hidden-state contract of the class keyed `cls` through `hook` (EAGLE3's
    `set_eagle3_layers_to_capture` unless given), which the class defines or inherits."""
    c = _Contract(index, hook)
    if index.find_method(cls, "forward") is None:
        return ContractResult("unknown", unknown=NO_FORWARD)
    setter = index.find_method(cls, c.setter)
    if setter is not None:
        writes = c.setter_writes(cls, setter, "")
    else:
        forwarded = _forwarded_setters(c, cls)
        if forwarded is None:
            return ContractResult("unknown", unknown=f"no {c.setter} to follow")
        writes = forwarded
    top = c.chain(cls, "", frozenset({cls}))
    if top is None:
        return ContractResult("unknown", unknown=NO_FORWARD)
    findings: list[ContractFinding] = []
    for frame in _frames(top):
        findings += _capture_reads(c, cls, frame, writes)
    pairs = [f for f in _frames(top) if _pair_return(c, f)]
    for frame in _frames(top):
        if _reads(c, frame):  # the forward that unpacks reads the capture flag first
            findings += _unpacks(c, frame)
    for frame in pairs:
        if _reads(c, frame):  # a decoder: the forward that reads capture state
            findings += _aux_filled(c, frame)
    findings += _logits(c, top)
    findings += [
        ContractFinding(
            ContractRule.CAPTURE_STATE_MISMATCH.id,
            f"the hook hands the layer ids to an inner model without {c.setter}",
            (site,),
        )
        for site in c.undefined
    ]
    if findings:
        unpack = next((u for f in _frames(top) for u in _unpack_sites(c, f)), None)
        if unpack is not None:  # where a decoder that collects nothing makes it crash
            findings = [
                replace(f, sites=(*f.sites, unpack))
                if f.rule == ContractRule.CAPTURE_STATE_MISMATCH.id
                else f
                for f in findings
            ]
        return ContractResult("broken", tuple(sorted(set(findings))))
    if not pairs:
        c.unknown.append("no forward on the path returns (hidden_states, aux_hidden_states)")
    if c.unknown:
        return ContractResult("unknown", unknown="; ".join(dict.fromkeys(c.unknown)))
    return ContractResult("ok")


def _forwarded_setters(c: _Contract, cls: str) -> Written | None:
    """The writes of the setter a `__getattr__` forward finds (`return getattr(self.inner,
    name)`): the forwarded object's own setter runs, on that object; None when no class
    that `self.<attr>` may hold defines one."""
    out: Written = {}
    found = False
    for owner in c.index.mro(cls)[0]:
        fwd = c.index.classes[owner].forward
        if fwd is None or fwd.problem:
            continue
        for target in fwd.targets:
            attr = target.removeprefix("self.")
            if not target.startswith("self.") or not attr.isidentifier():
                continue
            for inner in sorted(c.index.attr_candidates(cls, attr).classes):
                setter = c.index.find_method(inner, c.setter)
                if setter is not None:
                    found = True
                    writes = c.setter_writes(inner, setter, attr)
                    out.update({k: v for k, v in writes.items() if k not in out})
        if found:
            return out
    return None


def check_draft_contract(index: VersionIndex, cls: str) -> ContractResult:
    """What a draft's own forward path reads for capture on its own objects must exist
    once the `__init__`s that really run are done (a draft whose `__init__` calls
    `nn.Module.__init__` directly skips the base's, which created the flag its
    inherited forward reads): else the first draft forward raises AttributeError."""
    c = _Contract(index)
    top = c.chain(cls, "", frozenset({cls}))
    findings: list[ContractFinding] = []
    for frame in _frames(top) if top is not None else []:
        for obj, attr, guarded, site in _reads(c, frame):
            if guarded or obj != frame.prefix or c.created(frame.cls, attr) is not False:
                continue
            skip = c.skipping_init(frame.cls)
            message = f"{attr} is read on {obj or 'self'} but no __init__ that runs creates it"
            sites = (site, skip) if skip is not None else (site,)
            findings.append(
                ContractFinding(ContractRule.CAPTURE_ATTRIBUTE_MISSING.id, message, sites)
            )
    if findings:
        return ContractResult("broken", tuple(sorted(set(findings))))
    return ContractResult("ok")


def _reads(c: _Contract, frame: _Frame) -> list[tuple[str, str, bool, ContractSite]]:
    """Capture state a forward reads: (object, attribute, guarded, site)."""
    fns = c.helpers(frame.cls, frame.fn)
    aliases = c.aliases(fns)
    label = c.label(frame.fn)
    out = []
    for f in fns:
        for e in c.effects(f):
            if e.kind == "read":
                target = _target(e.text, aliases)
                if target is not None and c.hook.state.search(target[1]):
                    site = ContractSite(c.path(f), e.line, f"{label} reads {e.text}")
                    out.append((_join(frame.prefix, target[0]), target[1], False, site))
            elif e.kind == "call" and e.text in ("getattr", "hasattr") and len(e.args) >= 2:
                attr = e.args[1].strip("'\"")
                obj = _object(e.args[0], aliases)
                if obj is not None and c.hook.state.search(attr):
                    what = f"{label} reads {e.args[0]}.{attr} ({e.text})"
                    guarded = e.text == "hasattr" or len(e.args) >= 3
                    out.append(
                        (
                            _join(frame.prefix, obj),
                            attr,
                            guarded,
                            ContractSite(c.path(f), e.line, what),
                        )
                    )
    return out


def _capture_reads(c: _Contract, cls: str, frame: _Frame, writes: Written) -> list[ContractFinding]:
    """Rules 1 and 3: what a forward reads for capture, the setter must write on the
    same object; what it reads unguarded must exist (setter or `__init__` path)."""
    out = []
    reads = _reads(c, frame)
    # One mechanism the setter drives is enough: a decoder may also read the state of
    # another (`_is_layer_to_capture` for DFLASH beside `layers_to_capture`).
    matched = any((obj, attr) in writes for obj, attr, _g, _s in reads)
    for obj, attr, guarded, site in reads:
        if (obj, attr) in writes or (matched and guarded):
            continue
        setter_site = _closest_write(writes, frame.prefix, attr)
        sites = (setter_site, site) if setter_site is not None else (site,)
        classes = c.classes_at(cls, obj)
        created = [c.created(k, attr) for k in sorted(classes)]
        if matched and created and all(created):
            continue
        if guarded or (created and all(created)):
            message = f"the decoder reads {attr} on {obj or 'self'}, which the setter never sets"
            out.append(ContractFinding(ContractRule.CAPTURE_STATE_MISMATCH.id, message, sites))
        elif created and not any(x is None for x in created) and not all(created):
            message = f"{attr} is read on {obj or 'self'} but nothing creates it"
            out.append(ContractFinding(ContractRule.CAPTURE_ATTRIBUTE_MISSING.id, message, sites))
        else:
            c.unknown.append(f"{site.what}: whether {obj or 'self'} has {attr} is not known")
    return out


def _closest_write(writes: Written, obj: str, attr: str) -> ContractSite | None:
    """The setter write to name beside a read it does not match: one on the decoder's
    own object, the attribute sharing the longest ending (`layers_to_capture` for
    `_is_layer_to_capture`)."""

    def score(item: tuple[tuple[str, str], ContractSite]) -> tuple[bool, int, str, str]:
        (o, a), _site = item
        common = next(
            (i for i, (x, y) in enumerate(zip(a[::-1], attr[::-1], strict=False)) if x != y),
            min(len(a), len(attr)),
        )
        return (o != obj, -common, o, a)

    ranked = sorted(writes.items(), key=score)
    return ranked[0][1] if ranked else None


_PAIR_TEXT = re.compile(r"\(\s*([A-Za-z_]\w*)\s*,\s*([A-Za-z_]\w*)\s*\)")


def _frame_returns(c: _Contract, frame: _Frame) -> list[Return]:
    """What a forward returns, with the returns of the method it returns the result of
    (`return self._forward_impl(...)`), in their own order."""
    out = []
    for r in c.returns(frame.fn):
        out.append(r)
        name = r.value.text.removeprefix("self.")
        if r.value.op == "call" and r.value.text.startswith("self.") and _WORD.fullmatch(name):
            impl = c.index.find_method(frame.cls, name)
            if impl is not None and impl != frame.fn and name != "forward":
                out += c.returns(impl)
    return out


def _pair_return(c: _Contract, frame: _Frame) -> Return | None:
    """A return of a tuple, also inside a conditional (`(h, aux) if aux else h`)."""
    for r in _frame_returns(c, frame):
        if r.value.op == "seq" and len(r.value.args) >= len(c.hook.returns):
            return r
        if r.value.op == "other" and _PAIR_TEXT.search(r.value.text):
            return r
    return None


def _returned_names(r: Return) -> set[str] | None:
    """The names a pair return hands back after the first; None if one is not a name."""
    if r.value.op == "other":
        found = _PAIR_TEXT.search(r.value.text)
        return {found.group(2)} if found is not None else None
    names = {a.text for a in r.value.args[1:] if a.op == "ref" and _WORD.fullmatch(a.text)}
    return names if len(names) == len(r.value.args) - 1 else None


def _unpack_sites(c: _Contract, frame: _Frame) -> list[ContractSite]:
    """Where a forward unpacks (hidden, aux) from a name holding an inner call's result."""
    return [
        ContractSite(
            c.path(frame.fn), e.line, f"{c.label(frame.fn)} unpacks {e.text.replace(',', ', ')}"
        )
        for e in c.effects(frame.fn)
        if e.kind == "unpack" and e.text.count(",") == 1 and _WORD.fullmatch(e.value)
    ]


def _reaches(c: _Contract, frame: _Frame) -> bool:
    """Whether a (hidden_states, aux) pair reaches the caller of this forward: it returns
    one, or hands on what a forward below returns, without stripping it."""
    if _pair_return(c, frame) is not None:
        return True
    if _strip_site(c, frame) is not None:
        return False
    return any(_reaches(c, sub) for sub in frame.inner)


def _strip_site(c: _Contract, frame: _Frame) -> ContractSite | None:
    """Where a forward that returns no pair unpacks a name holding its inner call's pair
    and returns only the first element (`hidden_states, self.extra = output; return
    hidden_states`): the aux states never reach the caller that unpacks them."""
    if _pair_return(c, frame) is not None or not frame.inner:
        return None
    if not any(_pair_return(c, f) for sub in frame.inner for f in _frames(sub)):
        return None
    firsts = {
        e.text.split(",")[0]: e
        for e in c.effects(frame.fn)
        if e.kind == "unpack" and e.text.count(",") == 1 and _WORD.fullmatch(e.value)
    }
    for r in c.returns(frame.fn):
        if r.value.op == "ref" and r.value.text in firsts:
            unpack = firsts[r.value.text]
            what = (
                f"{c.label(frame.fn)} unpacks {unpack.text.replace(',', ', ')} and returns "
                f"{r.value.text} alone"
            )
            return ContractSite(c.path(frame.fn), r.line, what)
    return None


def _unpacks(c: _Contract, frame: _Frame) -> list[ContractFinding]:
    """Rule 2: a forward that unpacks (hidden, aux) from an inner model whose forwards
    never return a pair."""
    if not frame.inner:
        return []
    below = [f for sub in frame.inner for f in _frames(sub)]
    if any(_reaches(c, sub) for sub in frame.inner):
        return []
    strips = [site for f in below if (site := _strip_site(c, f)) is not None]
    if strips:  # a pair is returned below, and cut down to its first element on the way
        message = (
            "a forward on the way strips (hidden_states, aux_hidden_states) to its first element"
        )
        return [
            ContractFinding(ContractRule.AUX_NEVER_RETURNED.id, message, (*strips, site))
            for site in _unpack_sites(c, frame)
        ]
    out = []
    for site in _unpack_sites(c, frame):
        sites = (
            site,
            *(
                ContractSite(c.path(f.fn), c.fdef(f.fn).line, f"{c.label(f.fn)} returns no pair")
                for f in frame.inner
            ),
        )
        message = "the inner forward never returns (hidden_states, aux_hidden_states)"
        out.append(ContractFinding(ContractRule.AUX_NEVER_RETURNED.id, message, sites))
    return out


def _pair_returns(c: _Contract, frame: _Frame) -> list[Return]:
    return [
        r
        for r in _frame_returns(c, frame)
        if (r.value.op == "seq" and len(r.value.args) >= len(c.hook.returns))
        or (r.value.op == "other" and _PAIR_TEXT.search(r.value.text))
    ]


def _aux_filled(c: _Contract, frame: _Frame) -> list[ContractFinding]:
    """Rule 2: the aux list a decoder returns must be filled (appended to, extended,
    handed to a layer that takes it, or unpacked from an inner call), and every pair the
    decoder returns must carry it (not another stream in its place)."""
    named = [(r, _returned_names(r)) for r in _pair_returns(c, frame)]
    if not named or any(not names for _r, names in named):
        return []  # an element that is not a plain name: not followed
    label = c.label(frame.fn)
    filled: set[str] = set()
    swallowed: dict[str, list[ContractSite]] = {}
    for name in sorted({n for _r, names in named for n in names or ()}):
        how = _filled(c, frame, name)
        if how is None:
            filled.add(name)
        elif how:
            swallowed[name] = how
    aux = filled or set(swallowed)
    if not aux:
        r, names = named[0]
        site = ContractSite(
            c.path(frame.fn), r.line, f"{label} returns {', '.join(sorted(names or ()))}"
        )
        message = "the decoder returns an aux list it never appends to"
        return [ContractFinding(ContractRule.AUX_NEVER_RETURNED.id, message, (site,))]
    r_aux = next(r for r, names in named if names and names & aux)
    aux_site = ContractSite(
        c.path(frame.fn), r_aux.line, f"{label} returns {', '.join(sorted(aux))}"
    )
    out = []
    if not filled:
        lost = tuple(site for sites in swallowed.values() for site in sites)
        message = "the decoder hands its aux list to layers that never fill it"
        out.append(ContractFinding(ContractRule.AUX_NEVER_RETURNED.id, message, (*lost, aux_site)))
    for r, names in named:
        # A pair returned after the aux one is the path without capture (`if capturing:
        # return (h, extra), aux` then `return h, extra`); one before it cuts that path off.
        later = r.context.scope == r_aux.context.scope and r.line > r_aux.line
        if names and not names & aux and not later:
            other = ", ".join(sorted(names))
            site = ContractSite(c.path(frame.fn), r.line, f"{label} returns {other} as the aux")
            message = f"the decoder returns {other} where the aux hidden states go"
            out.append(
                ContractFinding(ContractRule.AUX_SLOT_OTHER_STREAM.id, message, (site, aux_site))
            )
    return out


# Calls that look at a list without filling it (`if len(aux_hidden_states) == 0:`).
_LOOKS_ONLY = frozenset({"len", "bool", "isinstance", "print", "type", "id"})


def _filled(c: _Contract, frame: _Frame, name: str) -> list[ContractSite] | None:
    """None when the forward fills `name` (appends to it, hands it on, unpacks into it);
    else where it is lost: the layers that take it in `**kwargs` and never read it (empty
    when it is never handed on at all)."""
    lost: list[ContractSite] = []
    for f in c.helpers(frame.cls, frame.fn):
        for e in c.effects(f) + c.nested_effects(f):
            if e.kind == "unpack" and name in e.text.split(","):
                return None
            if e.kind == "read" and e.text.split(".")[0] == name:
                return None  # one of its methods handed on (`capture = aux.capture`)
            if (
                e.kind != "call"
                or e.text in _LOOKS_ONLY
                or not (e.text.split(".")[0] == name or _mentions(e.args, {name}))
            ):
                continue
            keyword = next(
                (
                    a.partition("=")[0].strip()
                    for a in e.args
                    if "=" in a and _mentions((a.partition("=")[2],), {name})
                ),
                "",
            )
            if e.text.split(".")[0] == name or not _WORD.fullmatch(keyword):
                return None
            if e.text.startswith("self.") and "." not in e.text[5:]:
                return None  # a helper or an inner model: followed elsewhere, or not at all
            takers = _swallowers(c, frame, keyword)
            if not takers:
                return None
            site = ContractSite(
                c.path(f), e.line, f"{c.label(frame.fn)} hands {name} to {e.text} as {keyword}"
            )
            lost += [site, *takers]
    return lost


def _swallowers(c: _Contract, frame: _Frame, keyword: str) -> list[ContractSite]:
    """The layer forwards of the decoder's module that take `keyword` in `**kwargs` and
    never read it nor hand `**kwargs` on; empty when any forward there takes it by name
    or reads it (the layer that receives it), or none takes keywords at all."""
    module = split_key(frame.fn)[0]
    out = []
    for k, info in sorted(c.index.classes.items()):
        fdef = info.methods.get("forward") if info.module == module else None
        if fdef is None:
            continue
        if any(p.name == keyword for p in fdef.params):
            return []
        var = next((p.name for p in fdef.params if p.kind == "var_keyword"), None)
        if var is None:
            continue
        fn = key(module, fdef.qualname)
        texts = [t for f in c.helpers(k, fn) for e in c.effects(f) for t in (e.text, *e.args)]
        if any(keyword in t or f"**{var}" in t for t in texts):
            return []
        what = f"{fdef.qualname} takes {keyword} in **{var} and never reads it"
        out.append(ContractSite(c.path(fn), fdef.line, what))
    return out


def _logits(c: _Contract, top: _Frame) -> list[ContractFinding]:
    """Rule 4: the forward that calls the logits processor hands it the aux states."""
    callers = [
        (f, e)
        for f in _frames(top)
        for g in c.helpers(f.cls, f.fn)
        for e in c.effects(g)
        if e.kind == "call" and e.text == LOGITS
    ]
    if not callers:
        c.unknown.append("no call of self.logits_processor on the forward path it follows")
        return []
    out = []
    for frame, call in callers:
        below = [f for sub in frame.inner for f in _frames(sub)]
        if not any(_pair_return(c, f) for f in below):
            continue
        # The aux states are unpacked from a local (`h, aux = hidden_states`) or straight
        # from the inner call (`h, aux = self.model(...)`, v0.4.x).
        aux = {
            n
            for e in c.effects(frame.fn)
            if e.kind == "unpack" and (_WORD.fullmatch(e.value) or e.value.endswith(")"))
            for n in e.text.split(",")[1:]
        }
        if aux and _mentions(call.args, aux):
            continue
        label = c.label(frame.fn)
        # Where the aux states come from, then where they are dropped.
        origin = _unpack_sites(c, frame)[:1]
        if not aux:
            origin = [
                ContractSite(c.path(f.fn), r.line, f"{c.label(f.fn)} returns a pair")
                for f in below
                if (r := _pair_return(c, f)) is not None
            ][:1]
        what = f"{label} calls self.logits_processor without the aux states"
        message = (
            "the logits processor is called without the aux hidden states"
            if aux
            else "the inner (hidden_states, aux) pair is never unpacked"
        )
        out.append(
            ContractFinding(
                ContractRule.AUX_NOT_TO_LOGITS.id,
                message,
                (*origin, ContractSite(c.path(frame.fn), call.line, what)),
            )
        )
    return out


__all__ = [
    "NO_FORWARD",
    "UNPACK_ERROR",
    "ContractFinding",
    "ContractResult",
    "ContractRule",
    "ContractSite",
    "check_contract",
    "check_draft_contract",
]
