"""Reusing one version's analysis for another whose analysed code is byte-identical.

The interface and the compat table are functions of the index alone (the facts of the
modules the loader read, and the pins), plus the version's name, which they only carry as a
label and at the head of version-specific warnings. Two versions whose loaded modules have
the same paths and content ids, read the same way, with external packages judged at the
same versions, therefore get the same analysis up to that label, whatever source each came
from: a fork's commit takes what the release it branched from gave for every file it left
alone. Between adjacent commits most changes touch files the analysis never reads (layers,
kernels, tests, docs), so the key is taken after loading: an added file that a base class
now resolves to is loaded, and changes the key.

The interface alone depends on less: the workers, runners and managers it follows, never
the model files, which are read for their definitions only and hold no call or read a
requirement could come from (tests/integration/test_incremental_analysis.py checks, on
real releases, that blanking every model file leaves the interface as it was). A commit
that changes only model files takes the interface of the version before it and rebuilds
the compat table alone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable
from dataclasses import replace
from typing import TYPE_CHECKING

from tracker.analysis.externals import judged_at

if TYPE_CHECKING:
    from tracker.analysis.compat import Compat, ModelCheck
    from tracker.analysis.index import VersionIndex
    from tracker.analysis.interface import Interface

# (what is read of the pins, every module that counts as (repo path, content id, read for
# definitions only))
ContentKey = tuple[tuple[tuple[str, ...], ...], tuple[tuple[str, str, bool], ...]]

MODELS_PREFIX = "python/sglang/srt/models/"


def content_key(index: VersionIndex) -> ContentKey:
    """What the analysis of `index` depends on: what it reads of the pins (the version and
    note each external package is judged at: `judged_at`) and every loaded module as
    (repo path, content id, read for definitions only)."""
    modules = tuple(
        sorted((f.path, f.content_id, f.definitions_only) for f in index.by_path.values())
    )
    return judged_at(index.pins), modules


def interface_key(index: VersionIndex) -> ContentKey:
    """What the interface of `index` depends on: the versions external packages are judged
    at (it reads only the members of `torch.nn.Module` there, never the note saying how the
    version was chosen) and every loaded module but the model files read for their
    definitions."""
    modules = tuple(
        sorted(
            (f.path, f.content_id, f.definitions_only)
            for f in index.by_path.values()
            if not (f.definitions_only and f.path.startswith(MODELS_PREFIX))
        )
    )
    versions = tuple((package, version) for package, version, _ in judged_at(index.pins))
    return versions, modules


def relabel_interface(interface: Interface, version: str) -> Interface:
    """An interface of another version with the same interface key, as `version`'s: fresh
    containers (callers extend the warnings) holding the same frozen requirements."""
    old = interface.version
    prefix = f"{old}: "
    warnings = [
        f"{version}: {w[len(prefix) :]}" if w.startswith(prefix) else w for w in interface.warnings
    ]
    return replace(
        interface,
        version=version,
        workers=dict(interface.workers),
        requirements=list(interface.requirements),
        output_fields=list(interface.output_fields),
        config_keys=list(interface.config_keys),
        warnings=warnings,
        draft_models=dict(interface.draft_models),
        aliases=dict(interface.aliases),
        draft_classes=dict(interface.draft_classes),
    )


def relabel(interface: Interface, compat: Compat, version: str) -> tuple[Interface, Compat]:
    """The analysis of another version with the same content key, as `version`'s: fresh
    containers (callers extend the warnings and mark the checks) holding the same frozen
    requirements and checks."""
    new_interface = relabel_interface(interface, version)
    new_compat = replace(
        compat, version=version, entries=list(compat.entries), checks=list(compat.checks)
    )
    return new_interface, new_compat


# ------------------------------------------------------------------ checks, class by class


class ModelClosures:
    """Per module of an index, a digest of the model files it reaches through imports
    (itself included), each as (path, content id).

    Within one interface key (`interface_key`: every other loaded module the same), a check
    of an entry class can only change when a model file it reads changes, and it reads the
    index only through names bound by imports: its bases, inner models, forwarded-to classes
    and the functions the contract follows. The walk goes through every loaded module (a
    model may reach another through a shared one) and through every loaded package a dotted
    import passes, as name resolution does. Holds what it needs of the index, not the index.
    """

    def __init__(self, index: VersionIndex) -> None:
        self._files: dict[str, list[tuple[str, str]]] = {}
        self._packages: set[str] = set()
        for facts in index.by_path.values():
            self._files.setdefault(facts.module_name, []).append((facts.path, facts.content_id))
            if facts.path.endswith("__init__.py"):
                self._packages.add(facts.module_name)
        self._imports = {m: index.imports_of(m) for m in self._files}
        self._absolute = index.absolute_module
        self._edges: dict[str, set[str]] = {}
        self._digests: dict[str, str] = {}

    def _imported(self, module: str) -> set[str]:
        found = self._edges.get(module)
        if found is None:
            found = set()
            for imp in self._imports.get(module, ()):
                target = self._absolute(module, imp, module in self._packages)
                names = [target] if imp.name in (None, "*") else [target, f"{target}.{imp.name}"]
                for name in names:
                    parts = name.split(".")
                    for cut in range(1, len(parts) + 1):
                        prefix = ".".join(parts[:cut])
                        if prefix in self._files:
                            found.add(prefix)
            self._edges[module] = found
        return found

    def digest(self, module: str) -> str:
        known = self._digests.get(module)
        if known is None:
            seen, todo = {module}, [module]
            while todo:
                for nxt in self._imported(todo.pop()):
                    if nxt not in seen:
                        seen.add(nxt)
                        todo.append(nxt)
            files = sorted(
                f for m in seen for f in self._files.get(m, ()) if f[0].startswith(MODELS_PREFIX)
            )
            known = hashlib.sha256(repr(files).encode()).hexdigest()
            self._digests[module] = known
        return known


def interface_digest(index: VersionIndex) -> str:
    """A digest of `interface_key(index)`, to compare versions by it cheaply."""
    return hashlib.sha256(repr(interface_key(index)).encode()).hexdigest()


# (entry class, members required, their stand-ins, why in this role) and the check
# (entry class, required members, conditional members with their conditions, the
# alternatives of each, why the class is checked in the role)
CheckInputs = tuple[
    Hashable,
    tuple[str, ...],
    tuple[tuple[str, str], ...],
    tuple[tuple[str, ...], ...],
    str,
]


class CheckMemo:
    """The checks of the version whose compat table was built last, with what each was
    computed from, for the version built next: when both have the same interface digest,
    pins as read (`judged_at`) and role rules, a check whose entry class, required
    members and stand-ins and reason are the same, and whose module reaches the same model
    files (`ModelClosures`), is taken as it was. Between releases the interface always
    differs and nothing more than that digest is compared."""

    def __init__(self) -> None:
        self._digest = ""
        # The closures of the table before and of the one being built.
        self._previous: ModelClosures | None = None
        self._closures: ModelClosures | None = None
        self._checks: dict[tuple[str, str, str], tuple[CheckInputs, ModelCheck]] = {}
        self._next: dict[tuple[str, str, str], tuple[CheckInputs, ModelCheck]] = {}

    def start(self, index: VersionIndex, rules_hash: str) -> None:
        """Begin a table for `index`: its checks may come from the table before only when
        both have the same interface digest, pins as read and role rules."""
        # The notes of the pins too: a provision names the version it was judged at and how
        # that was chosen, which the interface key leaves out.
        pins = hashlib.sha256(repr(judged_at(index.pins)).encode()).hexdigest()
        digest = f"{interface_digest(index)}:{pins}:{rules_hash}"
        same = digest == self._digest and self._closures is not None
        self._digest, self._next = digest, {}
        self._previous = self._closures if same else None
        self._closures = ModelClosures(index)

    def get(self, row: tuple[str, str, str], inputs: CheckInputs, module: str) -> ModelCheck | None:
        """The check of `row` from the table before, when nothing it depends on changed."""
        found = self._checks.get(row)
        previous, closures = self._previous, self._closures
        if found is None or previous is None or closures is None or found[0] != inputs:
            return None
        if not module or previous.digest(module) != closures.digest(module):
            return None
        return found[1]

    def put(self, row: tuple[str, str, str], inputs: CheckInputs, check: ModelCheck) -> None:
        self._next[row] = (inputs, check)

    def finish(self) -> None:
        self._checks, self._next = self._next, {}
