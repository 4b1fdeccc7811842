"""What the snapshot module shares with the reports: the algorithms a command picks, and the
JSON forms of sites and requirements (full in reports, compacted in snapshots)."""

from __future__ import annotations

import json

import pytest
from sgl_trees import build

from tracker.common.errors import TrackerError
from tracker.compare.matrix import build_matrix, status_counts
from tracker.compare.snapshot import (
    Builder,
    Snapshot,
    algorithms_of,
    from_json,
    pick_algorithms,
    requirement_doc,
    to_json,
)
from tracker.sources.base import SourceIdentity

AVAILABLE = ("EAGLE", "EAGLE3", "STANDALONE")


def snapshot(version: str) -> Snapshot:
    built = build(version=version)
    identity = SourceIdentity("git", "/repo", version, "r")
    return Snapshot(version, identity, "d", Builder("t", "q", "r"), built.interface, built.compat)


def test_no_algorithm_asked_for_picks_every_one_the_versions_have() -> None:
    assert pick_algorithms(AVAILABLE, ()) == AVAILABLE


def test_algorithms_are_picked_in_any_case_in_the_order_asked() -> None:
    assert pick_algorithms(AVAILABLE, ("standalone", "Eagle3")) == ("STANDALONE", "EAGLE3")


def test_an_unknown_algorithm_is_an_error_naming_those_the_versions_have() -> None:
    with pytest.raises(
        TrackerError,
        match=r"^unknown algorithm EAGLE4; this version has "
        r"EAGLE, EAGLE3, STANDALONE$",
    ):
        pick_algorithms(AVAILABLE, ("EAGLE3", "eagle4"))


def test_a_watch_leaves_out_an_algorithm_a_release_does_not_have_yet() -> None:
    assert pick_algorithms(("EAGLE",), ("EAGLE3", "eagle"), skip_unknown=True) == ("EAGLE",)


def test_the_algorithms_of_several_snapshots_are_listed_once_in_first_seen_order() -> None:
    one = snapshot("v1")
    assert algorithms_of(one, one) == ("EAGLE", "EAGLE3")


def test_a_snapshot_stores_the_report_form_of_a_requirement_without_what_is_empty() -> None:
    snap = snapshot("v1")
    stored = json.loads(to_json(snap))["requirements"]
    full = [requirement_doc(r) for r in snap.interface.requirements]
    assert len(stored) == len(full) > 0
    for kept, whole in zip(stored, full, strict=True):
        assert set(whole) - set(kept) >= {"arities", "uses"}
        for site, whole_site in zip(kept["sites"], whole["sites"], strict=True):
            assert site == {k: v for k, v in whole_site.items() if v not in ("", [])}
    # and reads back to the same requirements
    assert from_json(to_json(snap)).interface.requirements == snap.interface.requirements


def test_status_counts_follow_the_order_of_the_statuses_asked_for() -> None:
    counts = status_counts(["broken", "ok", "ok", "n/a"], ("ok", "broken", "unknown"))
    assert list(counts.items()) == [("ok", 2), ("broken", 1), ("unknown", 0)]


def test_a_matrix_counts_each_version_column() -> None:
    m = build_matrix([snapshot("v1"), snapshot("v2")], "EAGLE3")
    for version in m.versions:
        column = [m.cells[model][version] for model in m.models]
        assert m.counts(version) == {s: column.count(s) for s in ("ok", "broken", "unknown")}
    assert sum(m.counts("v1").values()) > 0
