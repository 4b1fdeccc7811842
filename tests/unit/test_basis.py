"""Which release a tree is based on: the one sharing the most of its srt/ files (the later
one on a tie), none below half, and what the tree changed from it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from tracker.compare.basis import (
    INDEX_DOCUMENT,
    Basis,
    find_basis,
    release_document,
    release_index,
)
from tracker.extract import pack
from tracker.sources.base import SourceIdentity, VersionTree

SRT = "python/sglang/srt/"


class Tree(VersionTree):
    def __init__(self, files: Mapping[str, str]) -> None:
        self.identity = SourceIdentity("dir", "/x", "local", "")
        self._files = dict(files)

    @property
    def files(self) -> Mapping[str, str]:
        return self._files

    def read(self, path: str) -> bytes:
        raise KeyError(path)


def _files(**ids: str) -> dict[str, str]:
    return {f"{SRT}{name}.py": cid for name, cid in ids.items()}


RELEASES = {
    "v1": _files(a="a1", b="b1", c="c1", d="d1"),
    "v2": _files(a="a1", b="b2", c="c1", d="d2"),
    "v3": _files(a="a1", b="b2", c="c3", d="d2"),
}


@pytest.fixture
def opened(tmp_path: Path) -> pack.Pack:
    notes = {tag: {"files": files} for tag, files in RELEASES.items()}
    documents = {release_document(tag): n for tag, n in notes.items()}
    documents[INDEX_DOCUMENT] = release_index(notes)
    pack.write_pack(tmp_path / "p.pack", [], documents)
    found = pack.open_pack(tmp_path / "p.pack")
    assert found is not None
    return found


def test_a_tree_is_based_on_the_release_sharing_most_of_its_files(opened: pack.Pack) -> None:
    tree = Tree({**_files(a="a1", b="b2", c="c1", d="dX", e="e1"), "python/sglang/x.py": "q"})
    basis = find_basis(tree, opened)
    assert basis is not None and basis.release == "v2"
    assert basis.changed == (f"{SRT}d.py", f"{SRT}e.py")
    assert basis.added == (f"{SRT}e.py",)
    assert basis.label() == "v2 + 2 changed files"


def test_a_tie_goes_to_the_later_release_and_no_change_is_said(opened: pack.Pack) -> None:
    basis = find_basis(Tree(RELEASES["v3"]), opened)
    assert basis is not None and basis.release == "v3"
    assert basis.label() == "v3, no srt/ file changed"
    one = find_basis(Tree(_files(a="a1", b="b2", c="cX", d="dX")), opened)
    assert one is not None and one.release == "v3"  # v2 and v3 share a and b alike


def test_a_tree_sharing_less_than_half_its_files_has_no_release(opened: pack.Pack) -> None:
    assert find_basis(Tree(_files(a="a1", b="x", c="y", d="z")), opened) is None
    assert isinstance(find_basis(Tree(_files(a="a1", b="b1", c="y", d="z")), opened), Basis)
