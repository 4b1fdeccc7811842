"""The use cases the commands share: a version's snapshot (shipped, cached, or built),
its full analysis when a command needs more than the snapshot, and ranges of versions.

Sits between the CLI (which parses options and prints) and the pipeline stages.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from tracker.common.cachedir import cache_root, cannot_write_cache
from tracker.common.errors import TrackerError
from tracker.compare.snapshot import (
    Snapshot,
    content_digest,
    current_builder,
    is_current,
    load_cached,
    load_file,
    shipped_dir,
    write_cached,
)
from tracker.sources.base import Source, VersionTree

if TYPE_CHECKING:
    from tracker.analysis.compat import Compat
    from tracker.analysis.index import VersionIndex
    from tracker.analysis.interface import Interface
    from tracker.analysis.reuse import CheckMemo, ContentKey
    from tracker.compare.accepted import AcceptedBreaks
    from tracker.compare.basis import Basis

log = logging.getLogger(__name__)


# Marks the warnings about files (syntax errors, undecodable, too slow to parse) that are
# repeated whenever the snapshot is used, not only when it is built.
FILE_WARNING = ": python/"
# How old a release list `history` takes from the cache without asking the index again:
# releases come days apart, and asking costs pip's start-up, most of the command.
LIST_REUSE_SECONDS = 10 * 60


def shipped_versions() -> list[str]:
    from tracker.sources.versions import sort_versions

    return sort_versions(p.stem for p in shipped_dir().glob("v*.json"))


class Feedback:
    """Progress and notes from long work; the CLI shows them, tests ignore them."""

    def phase(self, message: str) -> None:
        log.info(message)

    def progress(self, label: str) -> Callable[[int, int], None] | None:
        return None

    def warn(self, message: str) -> None:
        log.warning(message)


@dataclass
class SourceAnalysis:
    """A version analysed from its files (not from a snapshot)."""

    tree: VersionTree
    index: VersionIndex
    interface: Interface
    compat: Compat


@dataclass
class Workspace:
    source: Source
    feedback: Feedback = field(default_factory=Feedback)
    use_shipped: bool = True
    use_cache: bool = True
    # Breaks the user accepts (tracker.toml): marked on every snapshot this workspace hands
    # out, after the analysis and before any report, never in what is cached.
    accepted: AcceptedBreaks | None = None
    # For a command about these entry classes only (`history MODEL`): snapshots read from
    # the shipped set or the cache hold just their entries and checks (`only_models`).
    models: frozenset[str] | None = None
    _analyses: dict[tuple[int, str], SourceAnalysis] = field(default_factory=dict)
    # The last few analyses by what they read (tracker.analysis.reuse), whatever the source.
    _by_content: dict[ContentKey, tuple[Interface, Compat]] = field(default_factory=dict)
    # The last few interfaces as built (before file warnings), by their interface key.
    _interfaces: dict[ContentKey, Interface] = field(default_factory=dict)
    # Versions a command will analyse next, in order: while one is analysed, the worker
    # pool parses the next one's files (snapshots_of).
    _next: list[tuple[Source, str]] = field(default_factory=list)
    # The checks of the version whose compat table was built last (tracker.analysis.reuse).
    _checks: CheckMemo = field(default_factory=lambda: _check_memo())
    # Snapshots found shipped or cached, by (source, version): a range first asks which
    # versions lack one, then reads them all; each file is read once.
    _found: dict[tuple[int, str], tuple[Snapshot, Path, str]] = field(default_factory=dict)
    # The release each tree is based on (tracker.compare.basis), and the shipped snapshots
    # of those releases that may be reused (None: made by another tool).
    _bases: dict[tuple[int, str], Basis | None] = field(default_factory=dict)
    _release_snapshots: dict[str, Snapshot | None] = field(default_factory=dict)

    def only_models(self, models: frozenset[str] | None) -> None:
        """Read only these entry classes of stored snapshots from now on (None: all)."""
        self.models = models
        self._found.clear()  # what was read before holds other classes, or fewer

    def mark(self, compat: Compat) -> Compat:
        """`compat` with the accepted breaks marked (the same object when none are)."""
        if self.accepted is None:
            return compat
        from tracker.compare.accepted import mark

        return mark(compat, self.accepted)

    # ------------------------------------------------------------------ versions

    def resolve(self, spec: str) -> tuple[Source, str]:
        from tracker.sources import split_spec
        from tracker.sources.versions import canonical_tag

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
        from tracker.common.errors import SourceError
        from tracker.sources import expand_spec
        from tracker.sources.versions import expand_range, is_range, range_ends

        if self.source.kind == "pypi" and self.use_shipped and is_range(spec):
            for end in range_ends(spec):
                self.source.refuse_unanalysable(end)
            try:
                known = self.source.versions()
            except SourceError as exc:
                known = shipped_versions()
                if not known:
                    raise
                self.feedback.warn(f"{exc}; using the releases with shipped snapshots")
            return expand_range(spec, known)
        return expand_spec(self.source, spec)

    def read_shipped_while_listing(self) -> None:
        """For a command over every release of the package index: ask the index for its
        list on another thread while the shipped snapshots are read (pip takes about a
        second to answer; reading them, a fraction of one)."""
        start = getattr(self.source, "start_listing", None)
        if self.source.kind != "pypi" or not self.use_shipped or start is None:
            return
        start(reuse_within=LIST_REUSE_SECONDS)
        for version in shipped_versions():
            self._lookup(self.source, version)

    def version_arg(self, source: Source, version: str) -> str:
        """`version` of `source` as another command takes it (`--at ...`): a directory as
        `dir:PATH` (its one version, `local`, means nothing elsewhere), a repository other
        than the default one as `git:LOCATION@REV`, anything else by its name. Quoted for a
        shell."""
        import shlex

        if source.kind == "dir":
            return shlex.quote(f"dir:{source.location}")
        if source.kind == "git" and source is not self.source:
            return shlex.quote(f"git:{source.location}@{version}")
        return shlex.quote(version)

    def source_options(self, source: Source) -> str:
        """What a suggested command needs to read `source` again: `--repo LOCATION` for a
        git repository (bisect reads nothing else), "" for the package index and for a
        directory (whose versions are named as `dir:PATH`)."""
        import shlex

        return f"--repo {shlex.quote(source.location)}" if source.kind == "git" else ""

    def fix_options(self, source: Source, version: str, requirements: str = "") -> str:
        """The options of the `tracker fix` command that patches a class of `version`
        (against the requirements of another version, when they come from one)."""
        options = f"--at {self.version_arg(source, version)}"
        if requirements:
            options += f" --requirements {requirements}"
        return options

    def release_before(self, version: str) -> str | None:
        """The source's release just before `version`, None when it has none (or lists
        none)."""
        from tracker.common.errors import SourceError
        from tracker.sources.versions import parse_version, sort_versions

        here = parse_version(version)
        if here is None:
            return None
        try:
            known = self.source.versions()
        except SourceError:
            if self.source.kind != "pypi" or not self.use_shipped:
                raise
            known = shipped_versions()
        earlier = [v for v in sort_versions(known) if (p := parse_version(v)) and p < here]
        return earlier[-1] if earlier else None

    # ------------------------------------------------------------------ analysis

    def analyse(self, source: Source, version: str) -> SourceAnalysis:
        memo = (id(source), version)
        if memo in self._analyses:
            return self._analyses[memo]
        from tracker.analysis.compat import build_compat
        from tracker.analysis.loader import load_index
        from tracker.analysis.reuse import content_key, relabel
        from tracker.extract.store import use_shipped

        # The shipped facts are shipped data too: `--no-shipped` parses every file.
        use_shipped(self.use_shipped)
        self.feedback.phase(f"reading {version} from {source.describe()}")
        tree = source.tree(version)
        index = load_index(
            tree,
            progress=self.feedback.progress(f"parsing {version}"),
            on_phase=self.feedback.phase,
            after_seeds=self._parse_next_ahead,
        )
        file_warnings = _file_warnings(version, index, tree)
        content = content_key(index)
        same = self._by_content.get(content)
        if same is not None:
            # The code it reads is byte-identical to an analysed version's (a commit that
            # changes only files the analysis never loads): that answer, relabelled.
            interface, compat = relabel(*same, version)
        else:
            interface = self._stored_interface(source, version) or self._interface(
                version, index, self.reusable_basis(source, version)
            )
            # Kept with the interface, so a snapshot read from the cache says it again.
            interface.warnings.extend(file_warnings)
            compat = build_compat(index, interface, memo=self._checks)
        for warning in file_warnings:
            self.feedback.warn(warning)
        analysis = SourceAnalysis(tree, index, interface, compat)
        # Its own copy: callers may extend what they are handed.
        self._by_content.pop(content, None)
        if len(self._by_content) >= 8:
            del self._by_content[next(iter(self._by_content))]
        self._by_content[content] = relabel(interface, compat, version)
        # Keep the last few: a command asks for one or two versions again (check, then
        # fix); a range of forty must not hold forty indexes in memory.
        if len(self._analyses) >= 2:
            del self._analyses[next(iter(self._analyses))]
        self._analyses[memo] = analysis
        return analysis

    def _stored_interface(self, source: Source, version: str) -> Interface | None:
        """A release's interface from its shipped or cached snapshot, which this tool built
        from the same archive: what building it again would give (commands that need the
        index too, as a checkpoint's check, skip the interface build)."""
        if source.kind != "pypi":
            return None
        from tracker.analysis.reuse import relabel_interface

        snap = self._lookup(source, version)[0]
        if snap is None:
            return None
        # The caller adds the tree's file warnings again.
        warnings = [w for w in snap.interface.warnings if FILE_WARNING not in w]
        return relabel_interface(replace(snap.interface, warnings=warnings), version)

    def _interface(
        self, version: str, index: VersionIndex, based: tuple[Basis, Snapshot] | None = None
    ) -> Interface:
        """The version's interface: that of an analysed version whose interface key is the
        same (only model files differ), or of the release the tree is based on when its
        interface key is that one's, relabelled; or built."""
        from tracker.analysis.interface import build_interface
        from tracker.analysis.reuse import interface_key, relabel_interface

        key = interface_key(index)
        same = self._interfaces.pop(key, None)
        if same is None and based is not None and based[0].same_interface(index):
            shipped = based[1].interface
            # As built: the release's file warnings are the release's (the caller adds
            # the tree's own).
            warnings = [w for w in shipped.warnings if FILE_WARNING not in w]
            same = replace(shipped, warnings=warnings)
        if same is None:
            same = build_interface(version, index)
        if len(self._interfaces) >= 8:
            del self._interfaces[next(iter(self._interfaces))]
        self._interfaces[key] = same
        return relabel_interface(same, version)

    def _parse_next_ahead(self) -> None:
        """Hand the next version's files to the worker pool, which this version's seed
        files have just left free: they are parsed while this one is analysed."""
        if not self._next:
            return
        from tracker.analysis.loader import parse_seeds_ahead

        source, version = self._next.pop(0)
        parse_seeds_ahead(source.tree(version))

    def snapshots_of(self, wanted: list[tuple[Source, str]]) -> list[Snapshot]:
        """Several versions' snapshots, as `snapshot_of` gives them; those that must be
        built are built one after another, each version's files parsed while the one before
        it is analysed."""
        self._next = [(s, v) for s, v in wanted if self._lookup(s, v)[0] is None][1:]
        try:
            return [self.snapshot_of(s, v) for s, v in wanted]
        finally:
            self._next = []

    def snapshot(self, spec: str) -> Snapshot:
        source, version = self.resolve(spec)
        return self.snapshot_of(source, version)

    def snapshot_of(self, source: Source, version: str) -> Snapshot:
        """The version's snapshot: shipped, cached, or built (and cached); the accepted
        breaks marked."""
        found, cache_file, digest = self._lookup(source, version)
        basis = self.basis_of(source, version)
        label = basis.label() if basis is not None else ""
        if found is not None:
            for warning in found.interface.warnings:
                if FILE_WARNING in warning:
                    self.feedback.warn(warning)
            return replace(found, compat=self.mark(found.compat), basis=label)
        snap = self._as_basis(source, version, digest)
        if snap is None:
            analysis = self.analyse(source, version)
            snap = Snapshot(
                version=version,
                source=analysis.tree.identity,
                content_digest=digest or content_digest(analysis.tree.files),
                builder=current_builder(),
                interface=analysis.interface,
                compat=analysis.compat,
            )
        if self.use_cache:
            try:
                write_cached(cache_file, snap)
            except OSError as exc:
                cannot_write_cache(cache_file.parent, exc)
        return replace(snap, compat=self.mark(snap.compat), basis=label)

    def stored_snapshot(self, source: Source, version: str) -> Snapshot | None:
        """The version's snapshot when one is shipped or cached and current, else None:
        never an analysis (for hints that may look at every release)."""
        return self._lookup(source, version)[0]

    def basis_of(self, source: Source, version: str) -> Basis | None:
        """The release a tree of a git or directory source is based on (its label is
        shown whatever built the pack's notes), or None."""
        memo = (id(source), version)
        if memo not in self._bases:
            self._bases[memo] = self._find_basis(source, version)
        return self._bases[memo]

    def _find_basis(self, source: Source, version: str) -> Basis | None:
        if source.kind == "pypi" or not self.use_shipped:
            return None
        from tracker.compare.basis import find_basis
        from tracker.extract import pack

        shipped = pack.shipped_pack()
        if shipped is None:
            return None
        try:
            return find_basis(source.tree(version), shipped)
        except pack.PackError as exc:
            pack.reject(exc)
            return None

    def reusable_basis(self, source: Source, version: str) -> tuple[Basis, Snapshot] | None:
        """The tree's release with that release's shipped snapshot, when both the snapshot
        and the pack's notes on its analysis were made by this tool: what may be reused."""
        basis = self.basis_of(source, version)
        if basis is None:
            return None
        if basis.release not in self._release_snapshots:
            snap = load_file(shipped_dir() / f"{basis.release}.json")
            builder = current_builder()
            usable = snap is not None and is_current(snap, builder) and basis.made_by(builder)
            self._release_snapshots[basis.release] = snap if usable else None
        found = self._release_snapshots[basis.release]
        return (basis, found) if found is not None else None

    def _as_basis(self, source: Source, version: str, digest: str) -> Snapshot | None:
        """The snapshot of a tree whose analysis reads exactly what its release's did: the
        release's shipped snapshot, relabelled, without reading a file's facts."""
        based = self.reusable_basis(source, version)
        if based is None:
            return None
        from tracker.analysis.externals import judged_at
        from tracker.analysis.reuse import relabel

        basis, shipped = based
        tree = source.tree(version)
        if not basis.same_analysis(tree, [list(row) for row in judged_at(tree.pins())]):
            return None
        self.feedback.phase(f"{version}: the analysis of {basis.release} holds ({basis.label()})")
        interface, compat = relabel(shipped.interface, shipped.compat, version)
        return Snapshot(
            version=version,
            source=tree.identity,
            content_digest=digest or content_digest(tree.files),
            builder=current_builder(),
            interface=interface,
            compat=compat,
        )

    def _lookup(self, source: Source, version: str) -> tuple[Snapshot | None, Path, str]:
        """(a usable shipped or cached snapshot or None, where a built one is cached, the
        content digest when it had to be computed)."""
        memo = (id(source), version)
        if memo in self._found:
            return self._found[memo]
        result = self._read_lookup(source, version)
        if result[0] is not None:
            self._found[memo] = (result[0], result[1], result[2])
        return result

    def _read_lookup(self, source: Source, version: str) -> tuple[Snapshot | None, Path, str]:
        builder = current_builder()

        def usable(snap: Snapshot | None, digest: str = "") -> bool:
            return (
                snap is not None
                and is_current(snap, builder)
                and snap.version == version
                and (not digest or snap.content_digest == digest)
            )

        def found(snap: Snapshot | None, origin: str) -> Snapshot:
            assert snap is not None
            snap.origin = origin
            return snap

        if source.kind == "pypi":
            cache_file = cache_root() / "snapshots" / f"pypi-{version}.json"
            # Releases on the package index never change: the shipped snapshot of a
            # release is that release's answer as long as the same tool built it.
            if self.use_shipped:
                shipped = self._load_shipped(version)
                if usable(shipped) and shipped is not None and shipped.source.kind == "pypi":
                    return found(shipped, "shipped"), cache_file, ""
            if self.use_cache and usable(cached := load_cached(cache_file, self.models)):
                return found(cached, "cache"), cache_file, ""
            return None, cache_file, ""
        # A commit names its content: a snapshot cached for it needs no file listing.
        sha = source.commit_of(version)
        by_commit = cache_root() / "snapshots" / f"git-{sha}.json" if sha else None
        if (
            self.use_cache
            and by_commit is not None
            and usable(cached := load_cached(by_commit, self.models))
        ):
            return found(cached, "cache"), by_commit, ""
        digest = content_digest(source.tree(version).files)
        if self.use_shipped:
            # The same files as a release: that release's shipped answer holds.
            shipped = self._load_shipped(version)
            if usable(shipped, digest):
                return found(shipped, "shipped"), by_commit or Path(), digest
        cache_file = by_commit or cache_root() / "snapshots" / f"{source.kind}-{digest}.json"
        if self.use_cache and usable(cached := load_cached(cache_file, self.models), digest):
            return found(cached, "cache"), cache_file, digest
        return None, cache_file, digest

    def _load_shipped(self, version: str) -> Snapshot | None:
        path = shipped_dir() / f"{version}.json"
        if self.models is not None and self.use_cache:
            from tracker.compare.slices import load_cut

            return load_cut(path, self.models)
        return load_file(path, self.models)

    def snapshots(self, spec: str) -> list[Snapshot]:
        versions = self.expand(spec)
        if not versions:
            raise TrackerError(f"{spec} names no versions")
        if self.use_cache and len(versions) > 2:
            self._build_in_parallel(versions)
        out = []
        for i, version in enumerate(versions, 1):
            self.feedback.phase(f"[{i}/{len(versions)}] {version}")
            out.append(self.snapshot_of(self.source, version))
        return out

    def _build_in_parallel(self, versions: list[str]) -> None:
        """Fill the snapshot cache for the versions that lack one, on every core: one
        contiguous segment of versions per two workers, walked from both ends
        (tracker.compare.parallel), so each worker parses only what changed from one version
        to the next. The serial loop afterwards only reads."""
        missing = [v for v in versions if self._lookup(self.source, v)[0] is None]
        if len(missing) < 2:
            return  # imports below only now: a range answered from snapshots needs none
        from tracker.analysis.loader import reads_in_full, seed_paths
        from tracker.compare.parallel import build_segments, split_segments, version_costs
        from tracker.extract.store import default_jobs

        if default_jobs() < 2:
            return
        files = []
        for version in missing:
            tree = self.source.tree(version)
            files.append({(tree.files[p], reads_in_full(p)) for p in seed_paths(tree)})
        workers = min(default_jobs(), len(missing))
        segments = split_segments(version_costs(files), (workers + 1) // 2)
        self.feedback.phase(f"analysing {len(missing)} versions in {workers} processes")
        build_segments(
            self.source.kind,
            self.source.location,
            [[missing[i] for i in segment] for segment in segments],
            workers,
            use_shipped=self.use_shipped,
            progress=self.feedback.progress("analysing"),
        )


def _check_memo() -> CheckMemo:
    from tracker.analysis.reuse import CheckMemo

    return CheckMemo()


def _file_warnings(version: str, index: VersionIndex, tree: VersionTree) -> list[str]:
    """The version's files that could not be read, or only in part; a syntax error at the
    line Python gives (tracker.compare.syntax), else at tree-sitter's error lines."""
    from tracker.compare.syntax import python_syntax_error

    out = []
    for facts in sorted(index.modules.values(), key=lambda f: f.path):
        if facts.problem:
            out.append(f"{version}: {facts.path}: {facts.problem}")
        elif facts.error_lines:
            found = python_syntax_error(tree.read(facts.path))
            if found is not None and found[0] > 0:
                where = f"a syntax error at line {found[0]}: {found[1]}"
            else:
                where = "syntax errors at line(s) " + ", ".join(map(str, facts.error_lines[:5]))
            out.append(f"{version}: {facts.path} has {where}; analysed what tree-sitter recovered")
    return out
