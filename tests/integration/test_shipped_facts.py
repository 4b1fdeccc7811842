"""A patched release tree takes from the shipped facts pack and snapshots what its release
already gave: unchanged files are not parsed, an unchanged interface is not rebuilt, a tree
whose analysed files are all the release's reads no facts at all; and every answer is the
one a fresh analysis (`--no-shipped`) gives."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sgl_trees import unpack_wheel

from tools.build_facts_pack import build_pack
from tracker.analysis import interface
from tracker.analysis.index import VersionIndex
from tracker.cli import cli
from tracker.compare.snapshot import to_json
from tracker.compare.workspace import Workspace
from tracker.extract import pack, store
from tracker.extract.facts import ModuleFacts
from tracker.sources import clear_memo, open_source
from tracker.sources.pypi import PypiSource

pytestmark = pytest.mark.realdata

RELEASE = "v0.5.9"
KIMI = "python/sglang/srt/models/kimi_k25.py"
# Not among the modules v0.5.9's analysis loads.
UNREAD = "python/sglang/srt/layers/activation.py"
KIMI_FIX = """\
    def get_embed_and_head(self):
        return self.language_model.get_embed_and_head()

"""


@pytest.fixture
def shipped_v059(
    stocked_releases: Callable[..., Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[PypiSource, Path]:
    """(the release source, its wheel unpacked as a checkout), with a facts pack of v0.5.9
    in the shipped pack's place."""
    archives = stocked_releases(RELEASE) / "pypi"
    release = PypiSource(archives)
    path = tmp_path / "facts.pack"
    monkeypatch.setenv("TRACKER_CACHE_DIR", str(archives.parent))
    build_pack(release, [RELEASE], path)
    monkeypatch.setattr(pack, "shipped_pack_path", lambda: path)
    [wheel] = archives.glob("sglang-0.5.9-*.whl")
    tree = unpack_wheel(wheel, tmp_path / "tree")
    return release, tree


class _Counts:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.parsed: list[str] = []
        self.shipped: list[str] = []
        self.built: list[str] = []
        parse, shipped, build = (
            store._parse_and_store,
            store.read_shipped,
            interface.build_interface,
        )

        def counted_parse(base: Path, path: str, *args: Any) -> ModuleFacts:
            self.parsed.append(path)
            return parse(base, path, *args)

        def counted_shipped(content_id: str, full: bool) -> ModuleFacts | None:
            self.shipped.append(content_id)
            return shipped(content_id, full)

        def counted_build(version: str, index: VersionIndex) -> interface.Interface:
            self.built.append(version)
            return build(version, index)

        monkeypatch.setattr(store, "_parse_and_store", counted_parse)
        monkeypatch.setattr(store, "read_shipped", counted_shipped)
        monkeypatch.setattr(interface, "build_interface", counted_build)


def _fresh(root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The tree's snapshot from a fresh analysis with no shipped data, on a cache of its
    own and nothing in memory."""
    monkeypatch.setenv("TRACKER_CACHE_DIR", str(tmp_path / "fresh-cache"))
    _forget()
    source = open_source(f"dir:{root}", None, tmp_path)
    return to_json(
        Workspace(source, use_shipped=False, use_cache=False).snapshot_of(source, "local")
    )


def _forget() -> None:
    for _ in range(2):
        store.recent.next_version()
    clear_memo()
    pack.forget_shipped()


def _based(root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("TRACKER_CACHE_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("TRACKER_JOBS", "1")
    _forget()
    source = open_source(f"dir:{root}", None, tmp_path)
    return Workspace(source, use_cache=False).snapshot_of(source, "local")


def test_a_patched_model_file_is_the_only_file_parsed_and_the_interface_is_the_releases(
    shipped_v059: tuple[PypiSource, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, root = shipped_v059
    kimi = root / KIMI
    text = kimi.read_text()
    body = text.index("    def __init__(", text.index("class KimiK25ForConditionalGeneration("))
    kimi.write_text(text[:body] + KIMI_FIX + text[body:])
    counts = _Counts(monkeypatch)
    snap = _based(root, tmp_path, monkeypatch)
    assert counts.parsed == [KIMI]
    assert counts.built == []  # only a model file changed: v0.5.9's interface holds
    assert len(counts.shipped) > 200
    assert snap.basis == "v0.5.9 + 1 changed file"
    assert to_json(snap) == _fresh(root, tmp_path, monkeypatch)


def _pin_as_released(release: PypiSource, root: Path) -> None:
    """The release's requirements written as the checkout's pyproject.toml: pins read the
    same from another place (without them a tree is judged at its release's pins, and
    says so in every provision, which the release's own analysis does not)."""
    requirements = release.tree(RELEASE).requirements()
    assert requirements is not None
    project = "[project]\nname = 'sglang'\ndependencies = [\n"
    project += "".join(f"  {json.dumps(line)},\n" for line in requirements[0]) + "]\n"
    (root / "python" / "pyproject.toml").write_text(project)


def test_a_tree_changed_only_where_the_analysis_does_not_read_reads_no_facts(
    shipped_v059: tuple[PypiSource, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release, root = shipped_v059
    _pin_as_released(release, root)
    unread = root / UNREAD
    unread.write_text(unread.read_text() + "\n# a local change\n")
    counts = _Counts(monkeypatch)
    snap = _based(root, tmp_path, monkeypatch)
    assert (counts.parsed, counts.shipped, counts.built) == ([], [], [])
    assert snap.basis == "v0.5.9 + 1 changed file"
    assert to_json(snap) == _fresh(root, tmp_path, monkeypatch)
    assert counts.parsed  # the fresh analysis did parse


def test_notes_on_an_analysis_made_by_another_builder_are_not_trusted(
    shipped_v059: tuple[PypiSource, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release, root = shipped_v059
    _pin_as_released(release, root)
    unread = root / UNREAD
    unread.write_text(unread.read_text() + "\n# a local change\n")
    opened = pack.open_pack(pack.shipped_pack_path())
    assert opened is not None
    real = opened.document

    def other_builder(name: str) -> Any:
        found = real(name)
        if name.startswith("release/"):
            found["builder"]["rules"] = "0" * 16
        return found

    monkeypatch.setattr(pack, "shipped_pack", lambda: opened)
    monkeypatch.setattr(opened, "document", other_builder)
    counts = _Counts(monkeypatch)
    snap = _based(root, tmp_path, monkeypatch)
    assert counts.built == ["local"] and len(counts.shipped) > 200
    # Which release the tree is, is read from the file lists, whatever made the notes.
    assert snap.basis == "v0.5.9 + 1 changed file"


def test_check_names_the_release_a_patched_tree_is_based_on_in_its_header(
    shipped_v059: tuple[PypiSource, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, root = shipped_v059
    kimi = root / KIMI
    kimi.write_text(kimi.read_text() + "\n# patched\n")
    monkeypatch.setenv("TRACKER_CACHE_DIR", str(tmp_path / "empty-cache"))
    _forget()
    args = ["check", f"dir:{root}", "-a", "EAGLE3", "-m", "KimiK25ForConditionalGeneration"]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    first = result.stdout.splitlines()[0]
    assert first.startswith(f"sglang dir:{root} (v0.5.9 + 1 changed file) · 1 broken")
    # JSON does not depend on the shipped data: the version stays the tree's own.
    result = CliRunner().invoke(cli, [*args, "--format", "json"], catch_exceptions=False)
    assert json.loads(result.stdout)["requirements_version"] == "local"
