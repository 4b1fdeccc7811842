"""Real SGLang releases from the package index, and a git repository built from them.

The archives are downloaded once into the persistent test cache (TRACKER_TEST_CACHE,
default ~/.cache/sglang-tracker-tests), so later runs need no network.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from bench.build_release_repo import build_release_repo
from tracker.sources.base import VersionTree, content_id
from tracker.sources.git import GitSource
from tracker.sources.pypi import PypiSource
from tracker.sources.versions import parse_version

pytestmark = pytest.mark.realdata

WORKER = "python/sglang/srt/speculative/eagle_worker.py"
RealTree = Callable[[str], VersionTree]


def test_the_index_lists_releases_from_v0_4_1_post4_in_release_order(
    real_pypi: PypiSource,
) -> None:
    versions = real_pypi.versions()
    assert versions[0] == "v0.4.1.post4"
    for tag in ("v0.4.5", "v0.4.10", "v0.5.8.post1", "v0.5.9", "v0.5.23"):
        assert tag in versions
    order = [versions.index(tag) for tag in ("v0.5.8", "v0.5.8.post1", "v0.5.9", "v0.5.10")]
    assert order == sorted(order)
    assert [parse_version(tag) for tag in versions] == sorted(
        parse_version(tag) for tag in versions
    )


def test_eagle_worker_is_the_same_from_the_index_and_from_a_repo_built_from_releases(
    real_tree: RealTree, real_cache: Path, tmp_path: Path
) -> None:
    repo = build_release_repo(
        tmp_path / "releases", ["v0.5.8", "v0.5.9"], real_cache / "pypi", checkout=False
    )
    git_source = GitSource(repo)
    assert git_source.versions() == ["v0.5.8", "v0.5.9"]

    from_git = git_source.tree("v0.5.9")
    from_pypi = real_tree("v0.5.9")
    assert from_git.read(WORKER) == from_pypi.read(WORKER)
    assert from_git.files[WORKER] == from_pypi.files[WORKER] == content_id(from_pypi.read(WORKER))
    # Not just one file: both sources give the same snapshot of each release.
    assert dict(from_git.files) == dict(from_pypi.files)
    assert dict(git_source.tree("v0.5.8").files) == dict(real_tree("v0.5.8").files)


def test_the_v0_5_9_eagle_worker_asks_the_target_for_its_embedding_and_head_at_line_157(
    real_tree: RealTree,
) -> None:
    lines = real_tree("v0.5.9").read(WORKER).decode().splitlines()
    assert "get_embed_and_head()" in lines[157 - 1]


def test_eagle_worker_starts_reading_mm_input_embeds_in_v0_5_9(real_tree: RealTree) -> None:
    assert b"mm_input_embeds" not in real_tree("v0.5.8").read(WORKER)
    assert b"logits_output.mm_input_embeds" in real_tree("v0.5.9").read(WORKER)


def test_a_platform_wheel_release_reads_like_the_pure_python_ones(real_tree: RealTree) -> None:
    tree = real_tree("v0.5.11")  # the first release published as cp311 manylinux wheels
    assert tree.identity.location.endswith("-cp311-cp311-manylinux_2_34_x86_64.whl")
    assert WORKER in tree.files
    assert all(path.startswith("python/sglang/") and path.endswith(".py") for path in tree.files)
