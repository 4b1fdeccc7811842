"""The release a tree is based on (a patched checkout, a fork's commit), and what of that
release's shipped analysis holds for it.

The facts pack (tracker.extract.pack) carries, beside the facts, one document listing every
release's files under `srt/` by content id, and one per release saying what its analysis
read: the modules it loaded, its content key and interface key (tracker.analysis.reuse),
and the builder that made them. A tree is based on the release sharing the most of its
`srt/` files; then

- when every module that release's analysis loaded is in the tree with the same bytes, no
  `srt/` file was added (a new file could be loaded), and the pins read the same, the
  tree's analysis is the release's: its shipped snapshot, relabelled, with no file read;
- else, when the tree's interface key is the release's (only model files differ), the
  interface is the shipped one and only the compat table is built.

Both hold only while the shipped snapshot and the documents were made by this builder.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tracker.sources.base import SRT_PREFIX, VersionTree

if TYPE_CHECKING:
    from tracker.analysis.index import VersionIndex
    from tracker.compare.snapshot import Builder
    from tracker.extract.pack import Pack

INDEX_DOCUMENT = "releases"
# A tree sharing fewer of its srt/ files with every release is based on none of them.
MIN_SHARED = 0.5


def release_document(tag: str) -> str:
    return f"release/{tag}"


def _digest(value: object) -> str:
    return hashlib.sha256(repr(value).encode()).hexdigest()


def srt_files(files: Mapping[str, str]) -> dict[str, str]:
    return {p: c for p, c in files.items() if p.startswith(SRT_PREFIX)}


# ----------------------------------------------------------------------- writing (tools/)


def release_notes(tree: VersionTree, index: VersionIndex, builder: Builder) -> dict[str, Any]:
    """What the pack records of one release's analysis (`index`, built from `tree`)."""
    from dataclasses import asdict

    from tracker.analysis.externals import judged_at
    from tracker.analysis.reuse import content_key, interface_digest

    return {
        "files": srt_files(tree.files),
        "loaded": sorted(
            [f.path, f.content_id, f.definitions_only] for f in index.by_path.values()
        ),
        "judged_at": [list(row) for row in judged_at(index.pins)],
        "content_key": _digest(content_key(index)),
        "interface_digest": interface_digest(index),
        "builder": asdict(builder),
    }


def release_index(notes: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The document a tree's release is found with: the tags in order, and for each content
    id of an `srt/` file the positions of the tags that have it."""
    tags = list(notes)
    where: dict[str, list[int]] = {}
    for position, tag in enumerate(tags):
        for cid in set(notes[tag]["files"].values()):
            where.setdefault(cid, []).append(position)
    return {"tags": tags, "files": where}


# ----------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class Basis:
    """A tree seen as a release plus changes."""

    release: str
    # srt/ paths whose bytes differ from the release's, or that only one of them has
    changed: tuple[str, ...]
    added: tuple[str, ...]
    notes: Mapping[str, Any]

    def label(self) -> str:
        """`v0.5.9 + 1 changed file`: what a report's header says of the tree (files under
        `srt/`, the part the analysis reads from)."""
        count = len(self.changed)
        if not count:
            return f"{self.release}, no srt/ file changed"
        return f"{self.release} + {count} changed file{'' if count == 1 else 's'}"

    def made_by(self, builder: Builder) -> bool:
        from dataclasses import asdict

        return dict(self.notes.get("builder", {})) == asdict(builder)

    def same_analysis(self, tree: VersionTree, judged: list[list[str]]) -> bool:
        """Whether `tree` loads what the release's analysis loaded, byte for byte, with
        the pins read the same (`judged`: `judged_at` of the tree's pins, as lists)."""
        if self.added or judged != self.notes["judged_at"]:
            return False
        files = tree.files
        return all(files.get(path) == cid for path, cid, _ in self.notes["loaded"])

    def same_interface(self, index: VersionIndex) -> bool:
        from tracker.analysis.reuse import interface_digest

        return bool(interface_digest(index) == self.notes["interface_digest"])


def find_basis(tree: VersionTree, pack: Pack) -> Basis | None:
    """The release in `pack` that shares the most `srt/` files with `tree` (the latest on a
    tie), or None when none shares at least half. Raises PackError when the pack is
    damaged."""
    listing = pack.document(INDEX_DOCUMENT)
    if not listing:
        return None
    tags, where = listing["tags"], listing["files"]
    mine = srt_files(tree.files)
    if not mine or not tags:
        return None
    shared = [0] * len(tags)
    for cid in mine.values():
        for position in where.get(cid, ()):
            shared[position] += 1
    best = max(range(len(tags)), key=lambda i: (shared[i], i))
    if shared[best] < MIN_SHARED * len(mine):
        return None
    notes = pack.document(release_document(tags[best]))
    if notes is None:
        return None
    theirs: dict[str, str] = notes["files"]
    changed = sorted(p for p in mine.keys() | theirs.keys() if mine.get(p) != theirs.get(p))
    added = tuple(p for p in changed if p not in theirs)
    return Basis(tags[best], tuple(changed), added, notes)
