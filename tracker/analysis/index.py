"""One version's code as a whole: modules, names resolved through imports, classes with
their bases resolved across modules (and the MRO), and what each `self.x` holds.

Works on facts only. Symbols are keyed `module:qualname`
(`sglang.srt.models.kimi_k25:KimiK25ForConditionalGeneration`); names that resolve outside
SGLang keep their dotted import path (`torch.nn.Module`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from tracker.extract.facts import Assign, ClassDef, Forward, FunctionDef, Import, ModuleFacts, Param
from tracker.sources.base import Pins

log = logging.getLogger(__name__)


def key(module: str, qualname: str) -> str:
    return f"{module}:{qualname}"


def split_key(symbol: str) -> tuple[str, str]:
    module, _, qual = symbol.partition(":")
    return module, qual


@dataclass
class ClassInfo:
    key: str
    module: str
    path: str
    facts: ClassDef
    methods: dict[str, FunctionDef] = field(default_factory=dict)
    # self.<attr> assignments in the class's own methods: attr -> lines
    instance_attrs: dict[str, list[int]] = field(default_factory=dict)
    # self.<attr> = Ctor(...) in its own methods: attr -> (constructor text as written,
    # scope of the assignment: a method may import the class locally)
    attr_constructors: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    # self.<attr> = <param> where the parameter is annotated: attr -> annotation text
    attr_annotations: dict[str, list[str]] = field(default_factory=dict)
    # self.<attr> = <anything> in its own methods, as facts
    attr_assigns: dict[str, list[Assign]] = field(default_factory=dict)
    class_attrs: set[str] = field(default_factory=set)
    forward: Forward | None = None  # its `__getattr__`, when it defines one

    @property
    def name(self) -> str:
        return self.facts.name


@dataclass(frozen=True)
class Candidates:
    """The classes `self.<attr>` may hold, found from its assignments."""

    classes: tuple[str, ...] = ()  # SGLang class keys
    external: tuple[str, ...] = ()  # dotted names outside SGLang
    unresolved: tuple[str, ...] = ()  # expressions whose class could not be found
    via: tuple[str, ...] = ()  # how: "constructed", "picked from _SUPPORT_VERSION", ...

    def __bool__(self) -> bool:
        return bool(self.classes or self.external)


@dataclass
class _Found:
    classes: set[str] = field(default_factory=set)
    external: set[str] = field(default_factory=set)
    unresolved: list[str] = field(default_factory=list)
    via: list[str] = field(default_factory=list)

    def frozen(self) -> Candidates:
        return Candidates(
            tuple(sorted(self.classes)),
            tuple(sorted(self.external)),
            tuple(dict.fromkeys(self.unresolved)),
            tuple(dict.fromkeys(self.via)),
        )


@dataclass(frozen=True)
class Resolution:
    """What a base class name resolved to: an SGLang class key, an external dotted name,
    or nothing (`unresolved`, with the text as written)."""

    text: str
    symbol: str | None  # SGLang class key
    external: str | None  # dotted name outside the loaded modules


# Real class hierarchies are a dozen levels deep; past this many the MRO is cut (one
# warning) rather than the analysis stopped by Python's recursion limit.
MAX_INHERITANCE_DEPTH = 150


_deep_modules: set[str] = set()


def _too_deep(module: str, cls: str) -> None:
    """One warning per module (a generated module holds many such classes)."""
    if module in _deep_modules:
        return
    _deep_modules.add(module)
    log.warning(
        "%s inherits through more than %d classes: its bases beyond that are not followed "
        "(nor those of other such classes in %s)",
        cls,
        MAX_INHERITANCE_DEPTH,
        module,
    )


_ANNOTATION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_CONSTRUCTOR = re.compile(r"\b([A-Z][A-Za-z0-9_]*(?:\.[A-Z][A-Za-z0-9_]*)*)\(")
# `_SUPPORT_VERSION[version]`, `_SUPPORT_VERSION.get(version)`: a class picked from a dict.
_SUBSCRIPT = re.compile(r"^([A-Za-z_][\w.]*)\[")
_DOTTED_NAME = re.compile(r"^[A-Za-z_][\w.]*$")
# `A if cond else B`: either class.
_TERNARY = re.compile(r"^([A-Za-z_][\w.]*) if .+ else ([A-Za-z_][\w.]*)$")


class VersionIndex:
    def __init__(self, modules: Mapping[str, ModuleFacts], pins: Pins | None = None) -> None:
        """`modules`: repo path -> facts; `pins`: the package versions the version pins
        (which inventory of external base classes applies)."""
        # Answers derived from the whole index by later stages (tracker.analysis.compat
        # keeps provisions here: a class is asked for one member by several algorithms).
        # Dropped whenever modules are added or the pins change, like the caches below.
        self.derived: dict[Hashable, Any] = {}
        self.pins = pins if pins is not None else Pins()
        self.by_path = dict(modules)
        # module -> (function scope, local name) -> its assignments there
        self._locals: dict[str, dict[tuple[str, str], list[Assign]]] = {}
        self.modules: dict[str, ModuleFacts] = {f.module_name: f for f in modules.values()}
        self.classes: dict[str, ClassInfo] = {}
        self.functions: dict[str, FunctionDef] = {}
        self._function_module: dict[str, str] = {}
        self._imports: dict[str, list[Import]] = {}
        self._mro: dict[str, tuple[list[str], list[Resolution]]] = {}
        self._resolved: dict[tuple[str, str, str], str | None] = {}
        self._classes_resolved: dict[tuple[str, str, str], Resolution] = {}
        self._attr_types: dict[tuple[str, str, int], frozenset[str]] = {}
        # function key -> names/attribute chains it returns (for properties)
        self._returned_refs: dict[str, list[str]] = {}
        _parts.next_version()
        for facts in self.modules.values():
            self._add_module(facts)

    @property
    def pins(self) -> Pins:
        """The package versions the version pins (which inventory of external bases
        applies)."""
        return self._pins

    @pins.setter
    def pins(self, value: Pins) -> None:
        self._pins = value
        self.derived.clear()  # provisions by external bases depend on them

    def add_modules(self, modules: Mapping[str, ModuleFacts]) -> None:
        """Load more modules (base classes found later); derived caches are reset."""
        for facts in modules.values():
            if facts.path in self.by_path:
                continue
            self.by_path[facts.path] = facts
            self.modules[facts.module_name] = facts
            self._add_module(facts)
        self._mro.clear()
        self._resolved.clear()
        self._classes_resolved.clear()
        self._attr_types.clear()
        self.derived.clear()
        self._locals.clear()
        self.__dict__.pop("subclasses", None)

    def _add_module(self, facts: ModuleFacts) -> None:
        mod = facts.module_name
        if mod in self._imports:
            # Two files of one module name (`a.py` beside `a/__init__.py`): the second's
            # methods and attributes land on the first's classes, so those get copies of
            # their own before they change, and nothing of this merge is kept for reuse.
            for k, info in self.classes.items():
                if info.module == mod:
                    self.classes[k] = _copied(info)
            self._index_module(facts)
            return
        part = _parts.get(facts)
        if part is None:
            self._index_module(facts)
            part = _ModulePart.taken(self, facts)
            _parts.put(facts, part)
        else:
            part.merge_into(self)

    def _index_module(self, facts: ModuleFacts) -> None:
        mod = facts.module_name
        self._imports[mod] = list(facts.imports)
        for cls in facts.classes:
            self.classes[key(mod, cls.qualname)] = ClassInfo(
                key(mod, cls.qualname), mod, facts.path, cls
            )
        for fn in facts.functions:
            k = key(mod, fn.qualname)
            self.functions[k] = fn
            if fn.owner is not None:
                owner = self.classes.get(key(mod, fn.owner))
                if owner is not None:
                    owner.methods.setdefault(fn.name, fn)
        for fwd in facts.forwards:
            forwarding = self.classes.get(key(mod, fwd.owner))
            if forwarding is not None:
                forwarding.forward = fwd
        for ret in facts.returns:
            if ret.context.scope and ret.value.op == "ref":
                self._returned_refs.setdefault(key(mod, ret.context.scope), []).append(
                    ret.value.text
                )
        params: dict[str, dict[str, str]] = {}
        for fn in facts.functions:
            params[fn.qualname] = {p.name: p.annotation for p in fn.params if p.annotation}
        for assign in facts.assigns:
            scope = assign.context.scope
            target = assign.target
            if target.startswith("self.") and target.count(".") == 1:
                owner_qual = scope.rpartition(".")[0]
                info = self.classes.get(key(mod, owner_qual))
                if info is None:
                    continue
                attr = target[5:]
                info.instance_attrs.setdefault(attr, []).append(assign.line)
                info.attr_assigns.setdefault(attr, []).append(assign)
                if assign.value_call:
                    info.attr_constructors.setdefault(attr, []).append((assign.value_call, scope))
                elif assign.value is not None and assign.value.op == "other":
                    # `(EagleDraftWorker(...) if on_last_rank else None)` and the like.
                    for ctor in _CONSTRUCTOR.findall(assign.value.text):
                        info.attr_constructors.setdefault(attr, []).append((ctor, scope))
                elif assign.value is not None and assign.value.op == "ref":
                    annotation = params.get(scope, {}).get(assign.value.text)
                    if annotation:
                        info.attr_annotations.setdefault(attr, []).append(annotation)
            elif "." not in target and scope:
                info = self.classes.get(key(mod, scope))
                if info is not None:
                    info.class_attrs.add(target)

    # ----------------------------------------------------------------------- modules

    def module_of(self, symbol: str) -> str:
        return split_key(symbol)[0]

    def imports_of(self, module: str) -> list[Import]:
        """The import statements of a loaded module (every scope)."""
        return self._imports.get(module, [])

    def path_of_module(self, module: str) -> str | None:
        facts = self.modules.get(module)
        return facts.path if facts is not None else None

    @staticmethod
    def absolute_module(importer: str, imp: Import, importer_is_package: bool) -> str:
        if imp.level == 0:
            return imp.module
        parts = importer.split(".")
        # A package's own __init__ counts as level-1 base; a module's package is its parent.
        keep = len(parts) - imp.level + (1 if importer_is_package else 0)
        base = parts[: max(keep, 0)]
        return ".".join([*base, imp.module] if imp.module else base)

    def _is_package(self, module: str) -> bool:
        facts = self.modules.get(module)
        return facts is not None and facts.path.endswith("__init__.py")

    # ------------------------------------------------------------------ name binding

    def resolve_name(self, module: str, name: str, scope: str = "", depth: int = 0) -> str | None:
        """A dotted name as used in `module` (inside `scope`) -> class/function key,
        or an external dotted path prefixed with "ext:". None when unknown."""
        if depth > 6:
            return None
        if depth:  # inside a chain of re-exports: the depth limit may cut it short
            return self._resolve_name(module, name, scope, depth)
        memo_key = (module, name, scope)
        if memo_key not in self._resolved:
            self._resolved[memo_key] = self._resolve_name(module, name, scope, 0)
        return self._resolved[memo_key]

    def _resolve_name(self, module: str, name: str, scope: str, depth: int) -> str | None:
        head, _, rest = name.partition(".")
        # Local definitions win: a class or function of this module.
        for candidate in _scoped(scope, head):
            k = key(module, candidate)
            if k in self.classes or k in self.functions:
                return self._descend(k, rest, depth) if rest else k
        imports = self._imports.get(module, [])
        best: Import | None = None
        for imp in imports:
            if imp.scope and not (scope == imp.scope or scope.startswith(imp.scope + ".")):
                continue
            bound = imp.alias or (imp.name if imp.name is not None else imp.module.split(".")[0])
            if bound == head and (best is None or _closer(imp, best, scope)):
                best = imp
        if best is None:
            for imp in imports:
                if imp.name == "*":
                    target = self.absolute_module(module, imp, self._is_package(module))
                    found = self.resolve_name(target, name, "", depth + 1)
                    if found is not None:
                        return found
            return None
        target_module = self.absolute_module(module, best, self._is_package(module))
        if best.name is None:
            # `import a.b as c` binds c to a.b; plain `import a.b` binds a.
            dotted = target_module if best.alias else head
            full = f"{dotted}.{rest}" if rest else dotted
            return self._resolve_dotted(full, depth)
        full = f"{target_module}.{best.name}"
        return self._resolve_dotted(f"{full}.{rest}" if rest else full, depth)

    def _descend(self, symbol: str, rest: str, depth: int) -> str | None:
        if symbol in self.classes:
            info = self.classes[symbol]
            nested = key(info.module, f"{info.facts.qualname}.{rest}")
            if nested in self.classes or nested in self.functions:
                return nested
        return None

    def _resolve_dotted(self, dotted: str, depth: int) -> str | None:
        """`sglang.srt.models.deepseek_v2.DeepseekV3ForCausalLM` -> its key, following
        re-exports; outside the loaded modules -> "ext:<dotted>"."""
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:cut])
            if module in self.modules:
                rest = ".".join(parts[cut:])
                found = self.resolve_name(module, rest, "", depth + 1)
                # Not bound in that package: a submodule of it that is not loaded.
                return found if found is not None else f"ext:{dotted}"
        if dotted in self.modules:
            return f"mod:{dotted}"
        return f"ext:{dotted}"

    def resolve_class(self, module: str, text: str, scope: str = "") -> Resolution:
        memo_key = (module, text, scope)
        found = self._classes_resolved.get(memo_key)
        if found is None:
            found = self._classes_resolved[memo_key] = self._resolve_class(module, text, scope)
        return found

    def _resolve_class(self, module: str, text: str, scope: str) -> Resolution:
        name = _ANNOTATION_NAME.match(text.strip().strip("'\""))
        if name is None:
            return Resolution(text, None, None)
        found = self.resolve_name(module, name.group(0), scope)
        if found is None:
            return Resolution(text, None, None)
        if found.startswith("ext:"):
            return Resolution(text, None, found[4:])
        if found in self.classes:
            return Resolution(text, found, None)
        return Resolution(text, None, None)

    # -------------------------------------------------------------------- hierarchy

    def bases(self, cls: str) -> list[Resolution]:
        info = self.classes[cls]
        scope = info.facts.qualname.rpartition(".")[0]
        out = []
        for text in info.facts.bases:
            if text.startswith(("metaclass=", "Generic[")):
                continue
            out.append(self.resolve_class(info.module, text, scope))
        return out

    def mro(self, cls: str) -> tuple[list[str], list[Resolution]]:
        """SGLang classes in method resolution order (C3 where it is consistent, else
        depth-first), and the bases that are external or could not be resolved."""
        cached = self._mro.get(cls)
        if cached is None:
            cached = self._mro[cls] = self._compute_mro(cls)
        return cached

    def _compute_mro(self, cls: str) -> tuple[list[str], list[Resolution]]:
        external: list[Resolution] = []
        seen_ext: set[str] = set()

        def linearize(c: str, stack: tuple[str, ...]) -> list[str]:
            if c in stack:  # a cycle in broken code: stop here
                return [c]
            if len(stack) >= MAX_INHERITANCE_DEPTH:  # generated or hostile code: stop here
                _too_deep(self.classes[c].module, cls)
                return [c]
            parents: list[str] = []
            for res in self.bases(c):
                if res.symbol is not None:
                    parents.append(res.symbol)
                elif res.text not in seen_ext and res.text not in ("object",):
                    seen_ext.add(res.text)
                    external.append(res)
            seqs = [linearize(p, (*stack, c)) for p in parents] + [parents]
            return [c, *_c3_merge(seqs)]

        return linearize(cls, ()), external

    @cached_property
    def subclasses(self) -> Descendants:
        """Class -> every class below it (transitively), worked out when asked."""
        children: dict[str, set[str]] = {}
        for cls in self.classes:
            for res in self.bases(cls):
                if res.symbol is not None:
                    children.setdefault(res.symbol, set()).add(cls)
        return Descendants(children)

    def find_method(self, cls: str, name: str) -> str | None:
        """The key of the method `name` as `cls` resolves it, or None."""
        for c in self.mro(cls)[0]:
            info = self.classes[c]
            if name in info.methods:
                return key(info.module, info.methods[name].qualname)
        return None

    def attr_types(self, cls: str, attr: str, depth: int = 0) -> frozenset[str]:
        """Classes that `self.<attr>` may hold in instances of `cls` (through a property
        that returns `self.<other>` too)."""
        memo_key = (cls, attr, depth)
        known = self._attr_types.get(memo_key)
        if known is None:
            known = self._attr_types[memo_key] = frozenset(self._attr_types_of(cls, attr, depth))
        return known

    def _attr_types_of(self, cls: str, attr: str, depth: int) -> set[str]:
        found: set[str] = set()
        if depth > 3:
            return found
        prop = self.find_method(cls, attr)
        if prop is not None and "property" in self.functions[prop].decorators:
            for ref in self._returned_refs.get(prop, []):
                if ref.startswith("self.") and ref.count(".") == 1:
                    found |= self.attr_types(cls, ref[5:], depth + 1)
        for c in self.mro(cls)[0]:
            info = self.classes[c]
            scope = info.facts.qualname
            for text, where in info.attr_constructors.get(attr, []):
                res = self.resolve_class(info.module, text, where)
                if res.symbol is not None:
                    found.add(res.symbol)
            for text in info.attr_annotations.get(attr, []):
                for name in _annotation_names(text):
                    res = self.resolve_class(info.module, name, scope)
                    if res.symbol is not None:
                        found.add(res.symbol)
        return found

    # ------------------------------------------------------------------ forwards

    def attr_candidates(self, cls: str, attr: str) -> Candidates:
        """Every class `self.<attr>` may hold in instances of `cls`, from its assignments:
        a construction (`self.x = A(...)`), through local names, a class picked from a dict
        of classes (`cls = _SUPPORT_VERSION[v]; self.x = cls(...)`) or an if/else chain
        (`cls = A` / `cls = B`); a parameter's annotation only when nothing else is found."""
        found = _Found()
        annotations: list[tuple[str, str]] = []
        for c in self.mro(cls)[0]:
            info = self.classes[c]
            for assign in info.attr_assigns.get(attr, []):
                self._instance_of(info.module, assign, found, annotations, 0)
            annotations += [(info.module, a) for a in info.attr_annotations.get(attr, [])]
        if not (found.classes or found.external) and annotations:
            for module, text in annotations:
                for name in _annotation_names(text):
                    self._add_class(module, "", name, found)
            found.via.append("annotation")
        return found.frozen()

    def _instance_of(
        self,
        module: str,
        assign: Assign,
        found: _Found,
        annotations: list[tuple[str, str]],
        depth: int,
    ) -> None:
        """The classes of the object `assign` stores."""
        scope, value = assign.context.scope, assign.value
        if depth > 4 or value is None:
            return
        if assign.value_call:
            self._class_expr(module, scope, assign.value_call, found, depth, constructed=True)
        elif value.op == "ref":
            local = self._local_assigns(module, scope, value.text)
            for inner in local:
                self._instance_of(module, inner, found, annotations, depth + 1)
            if not local:
                params = {p.name: p.annotation for p in self._function_params(module, scope)}
                if params.get(value.text):
                    annotations.append((module, params[value.text] or ""))
                elif value.text not in ("None", "self"):
                    found.unresolved.append(value.text)
        elif value.op == "other":
            ctors = _CONSTRUCTOR.findall(value.text)
            for ctor in ctors:
                self._class_expr(module, scope, ctor, found, depth, constructed=True)
            if not ctors and value.text not in ("None", "[]", "{}", "()"):
                found.unresolved.append(value.text)

    def _class_expr(
        self,
        module: str,
        scope: str,
        text: str,
        found: _Found,
        depth: int,
        constructed: bool = False,
    ) -> None:
        """The classes an expression that evaluates to a class may be: a class name, a
        local holding one, a dict of classes indexed (`D[k]`, `D.get(k)`), `A if c else B`."""
        ternary = _TERNARY.match(text)
        if ternary is not None:
            for part in ternary.groups():
                self._class_expr(module, scope, part, found, depth + 1)
            return
        subscript = _SUBSCRIPT.match(text)
        dict_name = (
            subscript.group(1) if subscript else (text[:-4] if text.endswith(".get") else None)
        )
        if dict_name is not None:
            values = self._dict_values(module, dict_name)
            if values is None:
                found.unresolved.append(text)
                return
            found.via.append(f"picked from {dict_name}")
            for name in values:
                self._add_class(module, scope, name, found)
            return
        if not _DOTTED_NAME.match(text):
            found.unresolved.append(text)
            return
        local = self._local_assigns(module, scope, text) if "." not in text else []
        if local and depth <= 4:
            if len(local) > 1:
                found.via.append(f"one of the classes assigned to {text}")
            for assign in local:
                picked = assign.value_call
                if picked and (picked.endswith(".get") or _SUBSCRIPT.match(picked)):
                    self._class_expr(module, scope, picked, found, depth + 1)
                elif picked:  # a factory call: what it returns is not followed
                    found.unresolved.append(f"{text} = {picked}(...)")
                elif assign.value is not None:
                    self._class_expr(module, scope, assign.value.text, found, depth + 1)
            return
        if constructed:
            found.via.append("constructed")
        self._add_class(module, scope, text, found)

    def _add_class(self, module: str, scope: str, name: str, found: _Found) -> None:
        res = self.resolve_class(module, name, scope)
        if res.symbol is not None:
            found.classes.add(res.symbol)
        elif res.external is not None and not res.external.startswith("sglang."):
            found.external.add(res.external)
        else:
            found.unresolved.append(name)

    def _local_assigns(self, module: str, scope: str, name: str) -> list[Assign]:
        if not scope:
            return []
        table = self._locals.get(module)
        if table is None:
            table = self._locals[module] = {}
            facts = self.modules.get(module)
            for a in facts.assigns if facts is not None else ():
                if a.context.scope and "." not in a.target and "[" not in a.target:
                    table.setdefault((a.context.scope, a.target), []).append(a)
        return table.get((scope, name), [])

    def _function_params(self, module: str, scope: str) -> tuple[Param, ...]:
        fn = self.functions.get(key(module, scope))
        return fn.params if fn is not None else ()

    def _dict_values(self, module: str, name: str) -> list[str] | None:
        """The values of a module-level dict literal `name` (and of `name[k] = X` added
        later at module level), or None when `name` is no such dict."""
        facts = self.modules.get(module)
        values: list[str] | None = None
        for a in facts.assigns if facts is not None else ():
            if a.context.scope:
                continue
            if a.target == name and a.value is not None and a.value.text.startswith("{"):
                values = [*(values or []), *a.value_names]
            elif (
                a.target.startswith(f"{name}[")
                and a.value is not None
                and a.value.op == "ref"
                and values is not None
            ):
                values.append(a.value.text)
        return values

    def classes_named(self, name: str) -> list[str]:
        return sorted(k for k, info in self.classes.items() if info.name == name)

    def iter_modules(self) -> Iterable[ModuleFacts]:
        return (self.modules[m] for m in sorted(self.modules))


class Descendants:
    """Every class below a class, found breadth-first when first asked (no recursion: an
    inheritance chain thousands of classes deep is valid Python)."""

    def __init__(self, children: dict[str, set[str]]) -> None:
        self._children = children
        self._below: dict[str, set[str]] = {}

    def get(self, cls: str, default: set[str] | None = None) -> set[str]:
        if cls not in self._children:
            return default if default is not None else set()
        found = self._below.get(cls)
        if found is None:
            found = set()
            frontier = [cls]
            while frontier:
                following = []
                for c in frontier:
                    for child in self._children.get(c, ()):
                        if child != cls and child not in found:
                            found.add(child)
                            following.append(child)
                frontier = following
            self._below[cls] = found
        return found


@dataclass(frozen=True)
class _ModulePart:
    """What one module alone adds to an index: its imports, classes (with their methods
    and `self.x` assignments), functions and returned names. A function of the module's
    facts only, so it is shared by every index that loads the same facts (adjacent
    versions share most files); nothing changes a ClassInfo once its module is indexed."""

    module: str
    imports: list[Import]
    classes: dict[str, ClassInfo]
    functions: dict[str, FunctionDef]
    returned_refs: dict[str, list[str]]

    @staticmethod
    def taken(index: VersionIndex, facts: ModuleFacts) -> _ModulePart:
        """The part `index` just gained from `facts` (whose module shared no name with a
        module indexed before it, so every key under the module's name is its own)."""
        mod = facts.module_name
        classes = dict.fromkeys(key(mod, c.qualname) for c in facts.classes)
        functions = dict.fromkeys(key(mod, f.qualname) for f in facts.functions)
        refs = dict.fromkeys(key(mod, r.context.scope) for r in facts.returns)
        return _ModulePart(
            mod,
            index._imports[mod],
            {k: index.classes[k] for k in classes},
            {k: index.functions[k] for k in functions},
            {k: list(index._returned_refs[k]) for k in refs if k in index._returned_refs},
        )

    def merge_into(self, index: VersionIndex) -> None:
        index._imports[self.module] = list(self.imports)
        index.classes.update(self.classes)
        index.functions.update(self.functions)
        for k, refs in self.returned_refs.items():
            index._returned_refs[k] = list(refs)


class _PartCache:
    """Module parts of the last two indexes, by the facts object they were built from
    (the fact store hands the same object to adjacent versions for an unchanged file)."""

    def __init__(self) -> None:
        self.current: dict[int, tuple[ModuleFacts, _ModulePart]] = {}
        self.previous: dict[int, tuple[ModuleFacts, _ModulePart]] = {}

    def get(self, facts: ModuleFacts) -> _ModulePart | None:
        found = self.current.get(id(facts)) or self.previous.get(id(facts))
        if found is None or found[0] is not facts:
            return None
        self.current[id(facts)] = found
        return found[1]

    def put(self, facts: ModuleFacts, part: _ModulePart) -> None:
        self.current[id(facts)] = (facts, part)

    def next_version(self) -> None:
        self.previous, self.current = self.current, {}


_parts = _PartCache()


def _copied(info: ClassInfo) -> ClassInfo:
    return replace(
        info,
        methods=dict(info.methods),
        instance_attrs={k: list(v) for k, v in info.instance_attrs.items()},
        attr_constructors={k: list(v) for k, v in info.attr_constructors.items()},
        attr_annotations={k: list(v) for k, v in info.attr_annotations.items()},
        attr_assigns={k: list(v) for k, v in info.attr_assigns.items()},
        class_attrs=set(info.class_attrs),
    )


def _scoped(scope: str, name: str) -> list[str]:
    """Candidate qualnames for `name` seen from `scope`, innermost first."""
    out = []
    parts = scope.split(".") if scope else []
    for i in range(len(parts), -1, -1):
        out.append(".".join([*parts[:i], name]))
    return out


def _closer(a: Import, b: Import, scope: str) -> bool:
    """Prefer the import whose scope is innermost, then the later one."""
    if len(a.scope) != len(b.scope):
        return len(a.scope) > len(b.scope)
    return a.line > b.line


def _annotation_names(text: str) -> list[str]:
    cleaned = text.replace("Optional[", "").replace("Union[", "").replace("]", "")
    return [
        n
        for n in _ANNOTATION_NAME.findall(cleaned.replace("'", "").replace('"', ""))
        if n not in ("None", "Optional", "Union")
    ]


def _c3_merge(seqs: list[list[str]]) -> list[str]:
    seqs = [list(s) for s in seqs if s]
    result: list[str] = []
    while seqs:
        for seq in seqs:
            head = seq[0]
            if not any(head in s[1:] for s in seqs):
                break
        else:
            # Inconsistent hierarchy: fall back to depth-first order without duplicates.
            for seq in seqs:
                result.extend(c for c in seq if c not in result)
            return result
        result.append(head)
        seqs = [[c for c in s if c != head] for s in seqs]
        seqs = [s for s in seqs if s]
    return result
