"""What one algorithm's workers run: a walk from the worker objects its factory builds, as
Python dispatches their calls.

Each worker class the factory returns for the algorithm is a variant (v1, v2/overlap,
multi-layer), entered at `__init__` and the public methods its MRO resolves. A call runs what
the *concrete* object's class resolves it to (`self.m()` through that class's MRO, so an
override replaces the base body; `super().m()` from the defining class on); a call on
`self.draft_worker` runs on the classes this worker really puts there (tracker.analysis.flow),
never on every subclass in the tree. Calls under a condition that is false for the algorithm
(`if self.speculative_algorithm.is_eagle3():` when walking EAGLE, or an alias of it) are not
followed; calls under conditions the algorithm does not decide are followed, their conditions
carried to what they reach.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from tracker.analysis.algorithms import Algorithms
from tracker.analysis.flow import EMPTY, MAX_CONTEXTS, Flow, Frame, Obj, Value, in_models
from tracker.analysis.index import key, split_key
from tracker.extract.facts import Branch, Call

# Undecided conditions carried along one path; a longer path keeps the first ones.
MAX_GUARDS = 4


@dataclass(frozen=True)
class Variant:
    """One worker class of an algorithm and the conditions that pick it."""

    worker: str  # class key
    branches: tuple[Branch, ...]
    # Picked only when the user turns something on that is off by default
    # (`enable_multi_layer_eagle`): what it alone needs is conditional on that.
    opt_in: tuple[Branch, ...] = ()


@dataclass
class Reach:
    """Where one algorithm's walk went."""

    algorithm: str
    variants: tuple[Variant, ...]
    # function -> the variants that reach it with no undecided condition on the way
    plain: dict[str, set[int]] = field(default_factory=dict)
    # function -> the undecided conditions of the first path that reaches it, per variant
    guarded: dict[str, dict[int, tuple[Branch, ...]]] = field(default_factory=dict)
    # function -> a shortest call path from a worker entry (function keys)
    paths: dict[str, list[str]] = field(default_factory=dict)
    # The frames each function ran in (receivers are evaluated in them).
    frames: dict[str, list[Frame]] = field(default_factory=dict)
    # caller -> callee -> line, in the order found (the call graph export)
    edges: dict[str, dict[str, int]] = field(default_factory=dict)
    # function -> the algorithms it runs as, where a worker rewrote the algorithm before
    # building what calls it (`server_args.speculative_algorithm = "EAGLE"`)
    effective: dict[str, set[str]] = field(default_factory=dict)

    def runs_as(self, function: str) -> set[str]:
        return self.effective.get(function) or {self.algorithm}

    @property
    def functions(self) -> set[str]:
        return set(self.plain) | set(self.guarded)

    def reaches(self, function: str) -> bool:
        return function in self.plain or function in self.guarded


def entry_methods(flow: Flow, worker: str) -> list[str]:
    """`__init__` and the public methods (properties too) an instance of the worker class
    resolves through its MRO: what the scheduler calls on a worker object. A public method
    the worker's own classes call on `self`, and nothing calls from outside, is not one: it
    runs where those calls are, under their conditions (`if self.is_p_eagle:
    self.draft_forward_p_eagle()`), not whenever the worker runs."""
    index = flow.index
    names: set[str] = set()
    on_self: set[str] = set()
    for cls in index.mro(worker)[0]:
        names |= set(index.classes[cls].methods)
        for fn in index.classes[cls].methods.values():
            on_self |= {
                c.name
                for c in flow.calls_in(key(split_key(cls)[0], fn.qualname))
                if c.receiver in ("self", "cls") or (c.receiver or "").startswith("super(")
            }
    internal = {n for n in on_self - flow.called_from_outside if not n.startswith("_")}
    out = []
    for name in sorted(names - internal):
        if name == "__init__" or not name.startswith("_"):
            method = index.find_method(worker, name)
            if method is not None:
                out.append(method)
    init = index.find_method(worker, "__init__")
    if init in out:  # construction first: it explains a path best
        out.remove(init)
        out.insert(0, init)
    return out


class Walker:
    """Walks each algorithm of one version over one flow."""

    def __init__(self, flow: Flow, algos: Algorithms) -> None:
        self.flow = flow
        self.algos = algos
        self.index = flow.index
        # Functions defined inside a function: closures run when their parent does.
        self._nested: dict[str, list[str]] = {}
        for fn_key in self.index.functions:
            module, qual = split_key(fn_key)
            parent = qual.rpartition(".")[0]
            if parent and key(module, parent) in self.index.functions:
                self._nested.setdefault(key(module, parent), []).append(fn_key)

    def walk(self, algorithm: str, variants: tuple[Variant, ...]) -> Reach:
        reach = Reach(algorithm, variants)
        queue: deque[tuple[Frame, int, tuple[Branch, ...], list[str], str]] = deque()
        for v, variant in enumerate(variants):
            obj = Obj(variant.worker)
            for method in entry_methods(self.flow, variant.worker):
                queue.append((Frame(method, obj), v, (), [method], algorithm))
        seen: dict[tuple[Frame, int, str], int] = {}
        contexts: dict[str, set[Frame]] = {}
        while queue:
            frame, v, guards, path, runs_as = queue.popleft()
            frame = self._bounded(frame, contexts)
            fn = frame.function
            known = seen.get((frame, v, runs_as))
            if known is not None and known <= len(guards):
                continue
            seen[(frame, v, runs_as)] = len(guards)
            self._record(reach, frame, v, guards, path)
            reach.effective.setdefault(fn, set()).add(runs_as)
            for callee, line, more in self._callees(runs_as, frame):
                if in_models(callee.function):
                    continue  # model code is the models' own: never a worker's requirement
                carried = (guards + more)[:MAX_GUARDS] if more else guards
                reach.edges.setdefault(fn, {}).setdefault(callee.function, line)
                # What a worker builds after rewriting the algorithm, and every method of
                # such an object, runs as the algorithm it was rewritten to.
                built_as = callee.self_obj.runs_as if callee.self_obj is not None else ""
                then = (built_as,) if built_as else self.flow.rewrite_before(fn, line)
                for name in then or (runs_as,):
                    queue.append((callee, v, carried, [*path, callee.function], name))
        return reach

    def _bounded(self, frame: Frame, contexts: dict[str, set[Frame]]) -> Frame:
        """Past MAX_CONTEXTS contexts of one function, new ones lose their parameters (and
        then the object's arguments): the walk stays finite on any code."""
        known = contexts.setdefault(frame.function, set())
        if frame in known or len(known) < MAX_CONTEXTS:
            known.add(frame)
            return frame
        plain = Frame(frame.function, frame.self_obj)
        if plain in known or len(known) < 2 * MAX_CONTEXTS:
            known.add(plain)
            return plain
        obj = frame.self_obj
        return Frame(frame.function, Obj(obj.cls) if obj is not None else None)

    def _record(
        self, reach: Reach, frame: Frame, v: int, guards: tuple[Branch, ...], path: list[str]
    ) -> None:
        fn = frame.function
        if fn not in reach.paths or len(path) < len(reach.paths[fn]):
            reach.paths[fn] = path
        frames = reach.frames.setdefault(fn, [])
        if frame not in frames:
            frames.append(frame)
        if guards:
            if v not in reach.plain.get(fn, set()):
                reach.guarded.setdefault(fn, {}).setdefault(v, guards)
        else:
            reach.plain.setdefault(fn, set()).add(v)
            reach.guarded.get(fn, {}).pop(v, None)

    # ------------------------------------------------------------------ callees

    def _callees(self, algorithm: str, frame: Frame) -> list[tuple[Frame, int, tuple[Branch, ...]]]:
        out: list[tuple[Frame, int, tuple[Branch, ...]]] = []
        for call in self.flow.calls_in(frame.function):
            if call.context.in_message:
                continue
            undecided = self.admits(algorithm, call.context.branches, frame, call.line)
            if undecided is None:
                continue  # false for this algorithm (or this object): never runs
            for callee in self._targets(frame, call):
                out.append((callee, call.line, undecided))
        for read in self.flow.reads_in(frame.function):
            if read.kind != "attr" or read.context.in_message:
                continue
            undecided = self.admits(algorithm, read.context.branches, frame, read.line)
            if undecided is None:
                continue
            for prop in self._properties(frame, read.receiver, read.name, read.line):
                out.append((prop, read.line, undecided))
        for a in self.flow.assigns_in(frame.function):
            # `runners[self.device](self)`: a call of a subscript, which the call facts do not
            # hold; what the subscript may be (a dict of classes) is constructed.
            if not a.value_call or not a.value_call.endswith("]"):
                continue
            undecided = self.admits(algorithm, a.context.branches, frame, a.line)
            if undecided is None:
                continue
            picked = self.flow.value(frame, a.value_call, a.line)
            for callee in self._constructed_or_called(frame, picked, None, a.line):
                out.append((callee, a.line, undecided))
        for nested in self._nested.get(frame.function, ()):
            out.append((Frame(nested, frame.self_obj, frame.params), 0, ()))
        out.sort(key=lambda t: (t[1], t[0].function))
        return out

    def admits(
        self, algorithm: str, branches: tuple[Branch, ...], frame: Frame, line: int
    ) -> tuple[Branch, ...] | None:
        """None when the branches are false for the algorithm (in both roles) or, by the
        data flow, for this frame's objects; else the branches neither decides."""
        if not branches:
            return ()
        allowed, _ = self.algos.admitted(branches)
        if not any(a == algorithm for a, _ in allowed):
            return None
        out = []
        for b in branches:
            if self.algos.evaluate(b.test).decided:
                continue
            holds = self.flow.condition(frame, b.test, line)
            if holds is None:
                # A batch's tests go both ways; the code asserts what it would raise on.
                if not b.raises and not self.flow.is_runtime(frame, b.test, line):
                    out.append(b)
            elif holds != b.holds:
                return None
        return tuple(out)

    def _targets(self, frame: Frame, call: Call) -> list[Frame]:
        flow, index = self.flow, self.index
        module, scope = split_key(frame.function)
        obj = frame.self_obj
        receiver = call.receiver
        if receiver is None:
            return self._constructed_or_called(frame, flow.value(frame, call.name, call.line), call)
        if receiver in ("self", "cls"):
            if obj is None:
                owner = flow.owner_of(frame.function)
                obj = Obj(owner) if owner is not None else None
            if obj is None:
                return []
            method = index.find_method(obj.cls, call.name)
            return [Frame(method, obj, flow.bind(frame, call, method))] if method else []
        base = flow._super_target(frame, call)
        if base is not None:
            return [Frame(base, obj, flow.bind(frame, call, base))]
        if receiver == "super()":
            return []
        found = index.resolve_name(module, f"{receiver}.{call.name}", scope)
        if found is not None and found in index.functions:
            return [Frame(found, None, flow.bind(frame, call, found))]
        if found is not None and found in index.classes:
            return self._constructed_or_called(frame, Value(classes=frozenset({found})), call)
        target = flow.value(frame, receiver, call.line)
        out = []
        for o in sorted(target.objs, key=repr):
            method = index.find_method(o.cls, call.name)
            if method is not None and not _is_property(index.functions[method].decorators):
                out.append(Frame(method, o, flow.bind(frame, call, method)))
        for cls in sorted(target.classes):
            method = index.find_method(cls, call.name)
            if method is not None:
                out.append(Frame(method, None, flow.bind(frame, call, method)))
        return out

    def _constructed_or_called(
        self, frame: Frame, callee: Value, call: Call | None, line: int = 0
    ) -> list[Frame]:
        flow, index = self.flow, self.index
        line = call.line if call is not None else line
        out = []
        for cls in sorted(callee.classes):
            init = index.find_method(cls, "__init__")
            if init is None:
                continue
            fields = flow.bind(frame, call, init)
            for runs_as in flow.built_as(frame, line):
                out.append(Frame(init, Obj(cls, _cut(fields), runs_as), fields))
        for fn in sorted(callee.functions):
            self_obj = frame.self_obj if fn in _live(flow, frame) else None
            out.append(Frame(fn, self_obj, flow.bind(frame, call, fn)))
        return out

    def _properties(self, frame: Frame, receiver: str, name: str, line: int) -> list[Frame]:
        """Reading `receiver.name` where `name` is a property of the receiver's class runs
        its body."""
        flow, index = self.flow, self.index
        if receiver == "self":
            target = Value(objs=frozenset({frame.self_obj})) if frame.self_obj else EMPTY
        else:
            target = flow.value(frame, receiver, line)
        out = []
        for o in sorted(target.objs, key=repr):
            method = index.find_method(o.cls, name)
            if method is not None and _is_property(index.functions[method].decorators):
                out.append(Frame(method, o))
        return out


def _live(flow: Flow, frame: Frame) -> frozenset[str]:
    obj = frame.self_obj
    return flow.live_methods(obj.cls) if obj is not None else frozenset()


def _cut(fields: tuple[tuple[str, Value], ...]) -> tuple[tuple[str, Value], ...]:
    from tracker.analysis.flow import _nested

    return _nested(fields, 0)


def _is_property(decorators: tuple[str, ...]) -> bool:
    return any(
        d.split("(")[0].rpartition(".")[2] in ("property", "cached_property") for d in decorators
    )
