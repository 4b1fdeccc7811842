"""`history MODEL` reads only that class's entries and checks of each stored snapshot, and
gives the history that the fully read snapshots give."""

from __future__ import annotations

import json
from pathlib import Path

from tracker.cli.models import _release_before
from tracker.common.cachedir import CUT_COPIES
from tracker.compare.matrix import build_matrix
from tracker.compare.snapshot import load_file, shipped_dir
from tracker.compare.workspace import Workspace, shipped_versions
from tracker.render.documents import history_document
from tracker.sources import open_source
from tracker.sources.versions import expand_range

from .conftest import Tracker

MODEL = "KimiK25ForConditionalGeneration"
RANGE = "v0.5.8..v0.5.10"


def test_one_models_history_is_the_one_the_full_snapshots_give(tracker: Tracker) -> None:
    result = tracker("history", MODEL, RANGE, "-a", "EAGLE3", "--format", "json")
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)

    ws = Workspace(open_source("pypi", None, shipped_dir()))
    snaps = ws.snapshots(RANGE)
    assert all(len(s.compat.entries) > 100 for s in snaps)  # read whole
    kind = next(e.kind for s in snaps for e in s.compat.entries if e.name == MODEL)
    before, starts = _release_before(ws, snaps[0].version)
    matrix = build_matrix(snaps, "EAGLE3", (kind,), before, starts)
    expected = history_document(MODEL, kind, [matrix], ws.source.describe())
    assert got["events"] == expected["events"] and got["events"]
    assert got["rows"] == expected["rows"]


def test_history_answered_again_from_the_cut_copies_is_the_same(
    tracker: Tracker, use_real_cache: Path
) -> None:
    first = tracker("history", MODEL, RANGE, "--format", "json")
    assert first.exit_code == 0, first.output
    # A copy per release read (the range and the release before it), for this one class.
    copies = {p.parent.name for p in (use_real_cache / CUT_COPIES).glob("*/*.json")}
    assert len(copies) >= len(expand_range(RANGE, shipped_versions())) + 1
    again = tracker("history", MODEL, RANGE, "--format", "json")
    assert again.stdout == first.stdout


def test_a_snapshot_read_for_one_model_holds_exactly_its_entries_and_checks() -> None:
    path = shipped_dir() / f"{shipped_versions()[-1]}.json"
    full, one = load_file(path), load_file(path, frozenset({MODEL}))
    assert full is not None and one is not None
    assert one.compat.entries == [e for e in full.compat.entries if e.name == MODEL]
    assert one.compat.checks == [c for c in full.compat.checks if c.model == MODEL]
    assert one.compat.checks and one.interface == full.interface


def test_a_misspelt_model_is_still_answered_with_the_nearest_name(tracker: Tracker) -> None:
    result = tracker("history", "KimiK25ForConditionalGen", RANGE)
    assert result.exit_code == 2
    assert f"did you mean {MODEL}" in result.stderr
