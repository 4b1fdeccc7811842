"""The use cases the commands share: a version's snapshot (shipped, cached, or built),
its full analysis when a command needs more than the snapshot, and ranges of versions.

Sits between the CLI (which parses options and prints) and the pipeline stages.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tracker.cachedir import cache_root
from tracker.compat import Compat, build_compat
from tracker.errors import TrackerError
from tracker.index import VersionIndex
from tracker.interface import Interface, build_interface
from tracker.snapshot import (
    Snapshot,
    content_digest,
    current_builder,
    is_current,
    load_file,
    shipped_dir,
    write_file,
)
from tracker.sources.base import Source, VersionTree

log = logging.getLogger(__name__)


def shipped_versions() -> list[str]:
    from tracker.versions import sort_versions

    return sort_versions(p.stem for p in shipped_dir().glob("v*.json"))


class Reporter:
    """Progress and notes from long work; the CLI shows them, tests ignore them."""

    def phase(self, message: str) -> None:
        log.info(message)

    def progress(self, label: str) -> Callable[[int, int], None] | None:
        return None

    def warn(self, message: str) -> None:
        log.warning(message)


@dataclass
class Analysis:
    """A version analysed from its files (not from a snapshot)."""

    tree: VersionTree
    index: VersionIndex
    interface: Interface
    compat: Compat


@dataclass
class Workspace:
    source: Source
    reporter: Reporter = field(default_factory=Reporter)
    use_shipped: bool = True
    use_cache: bool = True
    _analyses: dict[tuple[int, str], Analysis] = field(default_factory=dict)

    # ------------------------------------------------------------------ versions

    def resolve(self, spec: str) -> tuple[Source, str]:
        from tracker.sources import split_spec
        from tracker.versions import canonical_tag

        tag = canonical_tag(spec)
        if (
            self.source.kind == "pypi"
            and self.use_shipped
            and tag is not None
            and (shipped_dir() / f"{tag}.json").is_file()
        ):
            # A shipped release needs no package index: this keeps `diff` offline.
            return self.source, tag
        return split_spec(spec, self.source)

    def expand(self, spec: str) -> list[str]:
        from tracker.errors import SourceError
        from tracker.sources import expand_spec
        from tracker.versions import expand_range, is_range

        if self.source.kind == "pypi" and self.use_shipped and is_range(spec):
            try:
                known = self.source.versions()
            except SourceError as exc:
                known = shipped_versions()
                if not known:
                    raise
                self.reporter.warn(f"{exc}; using the releases with shipped snapshots")
            return expand_range(spec, known)
        return expand_spec(self.source, spec)

    # ------------------------------------------------------------------ analysis

    def analyse(self, source: Source, version: str) -> Analysis:
        memo = (id(source), version)
        if memo in self._analyses:
            return self._analyses[memo]
        from tracker.loader import load_index

        self.reporter.phase(f"reading {version} from {source.describe()}")
        tree = source.tree(version)
        index = load_index(
            tree,
            progress=self.reporter.progress(f"parsing {version}"),
            on_phase=self.reporter.phase,
        )
        for facts in index.modules.values():
            if facts.error_lines:
                self.reporter.warn(
                    f"{version}: {facts.path} has syntax errors at line(s) "
                    + ", ".join(map(str, facts.error_lines[:5]))
                    + "; analysed what tree-sitter recovered"
                )
        interface = build_interface(version, index)
        compat = build_compat(index, interface)
        analysis = Analysis(tree, index, interface, compat)
        # Keep the last few: a command asks for one or two versions again (check, then
        # fix); a range of forty must not hold forty indexes in memory.
        if len(self._analyses) >= 2:
            del self._analyses[next(iter(self._analyses))]
        self._analyses[memo] = analysis
        return analysis

    def snapshot(self, spec: str) -> Snapshot:
        source, version = self.resolve(spec)
        return self.snapshot_of(source, version)

    def snapshot_of(self, source: Source, version: str) -> Snapshot:
        builder = current_builder()
        if source.kind == "pypi" and self.use_shipped:
            # Releases on the package index never change: the shipped snapshot of a
            # release is that release's answer as long as the same tool built it.
            shipped = load_file(shipped_dir() / f"{version}.json")
            if (
                shipped is not None
                and is_current(shipped, builder)
                and shipped.source.kind == "pypi"
                and shipped.version == version
            ):
                shipped.origin = "shipped"
                return shipped
        cache_file: Path | None = None
        tree: VersionTree | None = None
        digest = ""
        if source.kind == "pypi":
            cache_file = cache_root() / "snapshots" / f"pypi-{version}.json"
        else:
            tree = source.tree(version)
            digest = content_digest(tree.files)
            if self.use_shipped and source.kind == "git":
                shipped = load_file(shipped_dir() / f"{version}.json")
                if (
                    shipped is not None
                    and is_current(shipped, builder)
                    and shipped.content_digest == digest
                ):
                    shipped.origin = "shipped"
                    return shipped
            cache_file = cache_root() / "snapshots" / f"{source.kind}-{digest}.json"
        if self.use_cache and cache_file is not None:
            cached = load_file(cache_file)
            if (
                cached is not None
                and is_current(cached, builder)
                and (not digest or cached.content_digest == digest)
                and cached.version == version
            ):
                cached.origin = "cache"
                return cached
        analysis = self.analyse(source, version)
        tree = analysis.tree
        snap = Snapshot(
            version=version,
            source=tree.identity,
            content_digest=digest or content_digest(tree.files),
            builder=builder,
            interface=analysis.interface,
            compat=analysis.compat,
        )
        if self.use_cache and cache_file is not None:
            try:
                write_file(cache_file, snap)
            except OSError as exc:
                self.reporter.warn(f"could not cache the snapshot of {version}: {exc}")
        return snap

    def snapshots(self, spec: str) -> list[Snapshot]:
        versions = self.expand(spec)
        if not versions:
            raise TrackerError(f"{spec} names no versions")
        out = []
        for i, version in enumerate(versions, 1):
            self.reporter.phase(f"[{i}/{len(versions)}] {version}")
            out.append(self.snapshot_of(self.source, version))
        return out
