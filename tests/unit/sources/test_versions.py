"""Version specs: canonical tags, release ordering, ranges, and the nearest-version hint."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.version import Version

from tracker.common.errors import TrackerError, UnknownVersionError
from tracker.sources.versions import (
    canonical_tag,
    expand_range,
    match_version,
    nearest,
    sort_versions,
    unknown_version,
)

KNOWN = [
    "v0.5.12",
    "v0.5.8",
    "v0.5.10",
    "v0.5.9",
    "v0.5.8.post1",
    "v0.5.11",
    "v0.4.10",
]


@pytest.mark.parametrize(
    ("spec", "tag"),
    [
        ("0.5.9", "v0.5.9"),
        ("v0.5.9", "v0.5.9"),
        ("V0.5.9", "v0.5.9"),
        (" 0.5.9 ", "v0.5.9"),
        ("0.5.8.post1", "v0.5.8.post1"),
        ("0.5.8-post1", "v0.5.8.post1"),
        ("v0.5.0rc1", "v0.5.0rc1"),
    ],
)
def test_bare_and_tagged_specs_give_the_same_canonical_tag(spec: str, tag: str) -> None:
    assert canonical_tag(spec) == tag


@pytest.mark.parametrize("spec", ["latest", "main", "gateway-v0.1.0", "v0.5.8..v0.5.9", ""])
def test_specs_that_are_not_versions_have_no_canonical_tag(spec: str) -> None:
    assert canonical_tag(spec) is None


def test_versions_sort_in_release_order_not_string_order() -> None:
    assert sort_versions(KNOWN) == [
        "v0.4.10",
        "v0.5.8",
        "v0.5.8.post1",
        "v0.5.9",
        "v0.5.10",
        "v0.5.11",
        "v0.5.12",
    ]


def test_prereleases_are_left_out_of_lists_unless_asked_for() -> None:
    names = ["v0.5.1.dev3", "v0.5.0", "v0.5.0rc1"]
    assert sort_versions(names) == ["v0.5.0"]
    assert sort_versions(names, prereleases=True) == ["v0.5.0rc1", "v0.5.0", "v0.5.1.dev3"]


def test_names_that_are_not_versions_are_left_out_of_lists() -> None:
    assert sort_versions(["gateway-v0.1.0", "main", "v0.5.9", "router-v0.2"]) == ["v0.5.9"]


def test_one_version_tagged_twice_is_listed_once_in_its_v_spelling() -> None:
    assert sort_versions(["0.5.9", "v0.5.9", "0.5.8"]) == ["0.5.8", "v0.5.9"]


@given(
    st.lists(
        st.tuples(
            st.integers(0, 3),
            st.integers(0, 30),
            st.integers(0, 30),
            st.one_of(st.none(), st.integers(1, 4)),
        ),
        unique=True,
        max_size=20,
    ),
    st.randoms(use_true_random=False),
)
def test_sorting_any_shuffled_release_list_gives_pep440_order(
    parts: list[tuple[int, int, int, int | None]], shuffler: random.Random
) -> None:
    names = [
        f"v{major}.{minor}.{micro}" + ("" if post is None else f".post{post}")
        for major, minor, micro, post in parts
    ]
    expected = sorted(names, key=lambda name: Version(name))
    shuffler.shuffle(names)
    assert sort_versions(names) == expected


def test_latest_is_the_newest_release_and_never_a_prerelease() -> None:
    assert match_version("latest", ["v0.5.9", "v0.5.10", "v0.5.11rc1"]) == "v0.5.10"


def test_latest_without_any_release_is_an_unknown_version() -> None:
    with pytest.raises(UnknownVersionError, match="latest"):
        match_version("latest", ["main", "v0.6.0rc1"])


def test_a_spec_matches_the_spelling_the_source_uses() -> None:
    assert match_version("v0.5.9", ["0.5.8", "0.5.9"]) == "0.5.9"
    assert match_version("0.5.8.post1", KNOWN) == "v0.5.8.post1"


def test_a_prerelease_asked_for_by_name_is_found() -> None:
    assert match_version("0.5.0rc1", ["v0.5.0rc1", "v0.5.0"]) == "v0.5.0rc1"


def test_a_range_holds_both_ends_and_everything_between_in_release_order() -> None:
    assert expand_range("v0.5.8..v0.5.10", KNOWN) == [
        "v0.5.8",
        "v0.5.8.post1",
        "v0.5.9",
        "v0.5.10",
    ]


def test_a_range_accepts_bare_versions_and_latest() -> None:
    assert expand_range("0.5.10..latest", KNOWN) == ["v0.5.10", "v0.5.11", "v0.5.12"]


def test_a_range_from_a_version_to_itself_is_that_version() -> None:
    assert expand_range("v0.5.9..0.5.9", KNOWN) == ["v0.5.9"]


def test_a_range_leaves_out_prereleases_between_its_ends_but_keeps_an_end_that_is_one() -> None:
    known = ["v0.5.0", "v0.5.1rc1", "v0.5.1", "v0.5.2rc1"]
    assert expand_range("v0.5.0..v0.5.1", known) == ["v0.5.0", "v0.5.1"]
    assert expand_range("v0.5.1..v0.5.2rc1", known) == ["v0.5.1", "v0.5.2rc1"]


def test_a_single_spec_expands_to_one_version() -> None:
    assert expand_range("0.5.9", KNOWN) == ["v0.5.9"]


def test_a_range_end_that_is_not_known_names_the_nearest_versions() -> None:
    with pytest.raises(UnknownVersionError) as caught:
        expand_range("v0.5.8..v0.5.99", KNOWN)
    assert str(caught.value) == (
        "unknown version v0.5.99; nearest known: v0.5.10, v0.5.11, v0.5.12"
    )


def test_a_reversed_range_is_an_error_not_an_empty_list() -> None:
    with pytest.raises(TrackerError, match=r"v0\.5\.10 is newer than v0\.5\.8"):
        expand_range("v0.5.10..v0.5.8", KNOWN)


@pytest.mark.parametrize("spec", ["v0.5.8..", "..v0.5.9", "v0.5.8..v0.5.9..v0.5.10"])
def test_a_malformed_range_is_an_error(spec: str) -> None:
    with pytest.raises(TrackerError, match="malformed range"):
        expand_range(spec, KNOWN)


def test_unknown_version_message_names_the_nearest_known_versions() -> None:
    known = [f"v0.5.{n}" for n in range(10, 24)]
    assert str(unknown_version("v0.5.99", known)) == (
        "unknown version v0.5.99; nearest known: v0.5.21, v0.5.22, v0.5.23"
    )


def test_nearest_shows_neighbours_on_both_sides_of_a_missing_version() -> None:
    assert nearest("v0.5.8.post5", KNOWN) == ["v0.5.8", "v0.5.8.post1", "v0.5.9"]
    assert nearest("0.5.9.post1", KNOWN, n=2) == ["v0.5.9", "v0.5.10"]


def test_nearest_for_a_misspelt_name_goes_by_spelling() -> None:
    assert nearest("v0.5.9x", KNOWN, n=1) == ["v0.5.9"]


def test_nearest_for_an_unrelated_name_offers_the_newest_releases() -> None:
    assert nearest("feature-branch", KNOWN, n=2) == ["v0.5.11", "v0.5.12"]


def test_an_unknown_version_on_a_source_without_versions_says_so() -> None:
    assert str(unknown_version("v0.5.9", [])) == (
        "unknown version v0.5.9; the source lists no versions"
    )
