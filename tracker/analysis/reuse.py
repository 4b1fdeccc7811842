"""Reusing one version's analysis for another whose analysed code is byte-identical.

The interface and the compat table are functions of the index alone (the facts of the
modules the loader read, and the pins), plus the version's name, which they only carry as a
label and at the head of version-specific warnings. Two versions whose loaded modules have
the same paths and content ids, read the same way, under the same pins, therefore get the
same analysis up to that label. Between adjacent commits most changes touch files the
analysis never reads (layers, kernels, tests, docs), so the key is taken after loading:
an added file that a base class now resolves to is loaded, and changes the key.

The interface alone depends on less: the workers, runners and managers it follows, never
the model files, which are read for their definitions only and hold no call or read a
requirement could come from (tests/integration/test_incremental_analysis.py checks, on
real releases, that blanking every model file leaves the interface as it was). A commit
that changes only model files takes the interface of the version before it and rebuilds
the compat table alone.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tracker.analysis.compat import Compat
    from tracker.analysis.index import VersionIndex
    from tracker.analysis.interface import Interface
    from tracker.sources.base import Pins

ContentKey = tuple["Pins", tuple[tuple[str, str, bool], ...]]

MODELS_PREFIX = "python/sglang/srt/models/"


def content_key(index: VersionIndex) -> ContentKey:
    """What the analysis of `index` depends on: its pins and every loaded module as
    (repo path, content id, read for definitions only)."""
    modules = tuple(
        sorted((f.path, f.content_id, f.definitions_only) for f in index.by_path.values())
    )
    return index.pins, modules


def interface_key(index: VersionIndex) -> ContentKey:
    """What the interface of `index` depends on: its pins and every loaded module but the
    model files read for their definitions."""
    modules = tuple(
        sorted(
            (f.path, f.content_id, f.definitions_only)
            for f in index.by_path.values()
            if not (f.definitions_only and f.path.startswith(MODELS_PREFIX))
        )
    )
    return index.pins, modules


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
