"""The package versions a version of SGLang pins (`torch==2.9.1`), from each kind of source:
a release wheel's Requires-Dist, a checkout's `python/pyproject.toml`, an unpacked wheel."""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path

from tracker.sources.base import SourceIdentity, pins_from_requirements
from tracker.sources.dir import DirSource
from tracker.sources.git import GitSource
from tracker.sources.pypi import PypiTree

RepoFactory = Callable[..., Path]

PYPROJECT = """\
[project]
name = "sglang"
dependencies = ["requests", "torch==2.9.1", "transformers==4.57.1"]

[project.optional-dependencies]
cu130 = ["torch==2.9.0"]
"""
METADATA = """\
Metadata-Version: 2.4
Name: sglang
Version: 0.4.10
Requires-Dist: transformers==4.54.1; extra == "runtime-common"
Requires-Dist: torch==2.7.1; extra == "srt"
Requires-Dist: torch; extra == "srt-hip"
"""


def test_an_unconditional_pin_wins_over_one_under_an_extra() -> None:
    pins = pins_from_requirements(
        ['torch==2.9.0; extra == "cu130"', "torch==2.8.0", "Transformers==4.57.1"]
    )
    assert pins == (("torch", "2.8.0"), ("transformers", "4.57.1"))


def test_ranges_wildcards_and_bad_lines_pin_nothing() -> None:
    assert pins_from_requirements(["torch>=2.5", "numpy==1.*", "x y z", "torch<3,>=2"]) == ()


def test_among_pins_under_markers_the_first_listed_counts() -> None:
    pins = pins_from_requirements(
        ['torch==2.7.1; extra == "srt"', 'torch==2.7.0; extra == "blackwell"']
    )
    assert pins == (("torch", "2.7.1"),)


def test_a_release_wheel_pins_what_its_requires_dist_says(tmp_path: Path) -> None:
    wheel = tmp_path / "sglang-0.4.10-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("sglang/srt/__init__.py", "")
        archive.writestr("sglang-0.4.10.dist-info/METADATA", METADATA)
    tree = PypiTree(
        SourceIdentity("pypi", wheel.name, "v0.4.10", "sha"),
        wheel,
        {"python/sglang/srt/__init__.py": "cid"},
    )
    pins = tree.pins()
    assert pins.get("torch") == "2.7.1" and pins.get("transformers") == "4.54.1"
    assert pins.origin == f"the Requires-Dist of {wheel.name}" and pins.release == "v0.4.10"


def test_a_checkout_directory_pins_what_its_pyproject_says(tmp_path: Path) -> None:
    (tmp_path / "python" / "sglang" / "srt").mkdir(parents=True)
    (tmp_path / "python" / "sglang" / "version.py").write_text('__version__ = "0.5.9"\n')
    (tmp_path / "python" / "pyproject.toml").write_text(PYPROJECT)
    pins = DirSource(tmp_path).tree().pins()
    assert pins.get("torch") == "2.9.1" and pins.get("transformers") == "4.57.1"
    assert pins.origin.endswith("pyproject.toml")
    # A directory is version `local`: the release it is comes from version.py.
    assert pins.release == "v0.5.9"


def test_an_unpacked_wheel_pins_what_its_metadata_says(tmp_path: Path) -> None:
    (tmp_path / "sglang" / "srt").mkdir(parents=True)
    (tmp_path / "sglang-0.4.10.dist-info").mkdir()
    (tmp_path / "sglang-0.4.10.dist-info" / "METADATA").write_text(METADATA)
    assert DirSource(tmp_path).tree().pins().get("torch") == "2.7.1"


def test_a_tree_without_packaging_metadata_pins_nothing(tmp_path: Path) -> None:
    (tmp_path / "python" / "sglang" / "srt").mkdir(parents=True)
    pins = DirSource(tmp_path).tree().pins()
    assert pins.versions == () and pins.origin == "" and pins.release == ""


def test_a_git_tag_pins_what_its_pyproject_says_at_that_tag(
    make_git_repo: RepoFactory,
) -> None:
    srt = {"python/sglang/srt/__init__.py": ""}
    repo = make_git_repo(
        {
            "v0.5.8": {**srt, "python/pyproject.toml": PYPROJECT.replace("4.57.1", "4.57.0")},
            "v0.5.9": {**srt, "python/pyproject.toml": PYPROJECT},
            "v0.5.10": srt,
        }
    )
    source = GitSource(repo)
    assert source.tree("v0.5.8").pins().get("transformers") == "4.57.0"
    nine = source.tree("v0.5.9").pins()
    assert nine.get("transformers") == "4.57.1"
    assert nine.origin == "python/pyproject.toml at v0.5.9"
    assert source.tree("v0.5.10").pins().versions == ()
    assert source.tree("v0.5.10").pins().release == "v0.5.10"
