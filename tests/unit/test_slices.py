"""A snapshot cut down to one class (tracker.compare.slices) is the snapshot that reading the
whole file for that class gives, whether it is cut now or read from its copy; a changed or
damaged file is never answered from an old copy."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tracker.common.cachedir import CUT_COPIES, CUT_COPIES_AGE, SWEEP_EVERY, sweep_leftovers
from tracker.compare.slices import load_cut
from tracker.compare.snapshot import load_file, shipped_dir

MODEL = "KimiK25ForConditionalGeneration"
ONE = frozenset({MODEL})


@pytest.fixture
def snapshot_file(tmp_path: Path) -> Path:
    """A shipped snapshot that registers MODEL, copied where a test may change it."""
    copy = tmp_path / "shipped" / "v0.5.9.json"
    copy.parent.mkdir()
    shutil.copyfile(shipped_dir() / "v0.5.9.json", copy)
    return copy


def _copies() -> list[Path]:
    return sorted((Path(os.environ["TRACKER_CACHE_DIR"]) / CUT_COPIES).rglob("*.json"))


def test_the_cut_is_the_snapshot_read_for_the_class_cut_now_and_read_back(
    snapshot_file: Path,
) -> None:
    expected = load_file(snapshot_file, ONE)
    assert expected is not None and expected.compat.checks
    cut_now = load_cut(snapshot_file, ONE)
    [copy] = _copies()
    read_back = load_cut(snapshot_file, ONE)
    assert cut_now == expected and read_back == expected
    # The copy holds the class's entry and checks only: a small part of the file.
    doc = json.loads(copy.read_text().partition("\n")[2])
    assert [e["name"] for e in doc["entry_classes"]] == [MODEL]
    assert {c["model"] for c in doc["checks"]} == {MODEL}
    assert copy.stat().st_size * 4 < snapshot_file.stat().st_size


def test_each_set_of_classes_has_its_own_copy(snapshot_file: Path) -> None:
    two = frozenset({MODEL, "LlamaForCausalLM"})
    assert load_cut(snapshot_file, ONE) == load_file(snapshot_file, ONE)
    got = load_cut(snapshot_file, two)
    assert got == load_file(snapshot_file, two)
    assert got is not None and {e.name for e in got.compat.entries} == two
    assert len(_copies()) == 2


def test_a_rewritten_file_is_cut_again_not_answered_from_the_old_copy(
    snapshot_file: Path,
) -> None:
    before = load_cut(snapshot_file, ONE)
    assert before is not None
    doc = json.loads(snapshot_file.read_text())
    [row] = [r for r in doc["checks"] if r["model"] == MODEL and r["role"] == "target"]
    row["status"]["EAGLE3"] = "ok" if row["status"]["EAGLE3"] != "ok" else "broken"
    snapshot_file.write_text(json.dumps(doc, indent=1, sort_keys=True))
    after = load_cut(snapshot_file, ONE)
    assert after == load_file(snapshot_file, ONE)
    assert after is not None and after.compat.checks != before.compat.checks
    assert len(_copies()) == 2  # a new copy beside the old one, which the sweep removes


def test_a_damaged_copy_is_cut_again_never_served(snapshot_file: Path) -> None:
    expected = load_cut(snapshot_file, ONE)
    [copy] = _copies()
    text = copy.read_text()
    # Still valid JSON, a verdict changed: only the digest line tells.
    flipped = ('"ok"', '"broken"') if '"ok"' in text else ('"broken"', '"ok"')
    copy.write_text(text.replace(*flipped, 1))
    assert copy.read_text() != text
    assert load_cut(snapshot_file, ONE) == expected
    assert copy.read_text() == text


def test_a_missing_or_foreign_file_is_none(tmp_path: Path) -> None:
    assert load_cut(tmp_path / "v0.0.1.json", ONE) is None
    foreign = tmp_path / "v0.0.2.json"
    foreign.write_text('{"schema": "other"}')
    assert load_cut(foreign, ONE) is None
    assert _copies() == []


def test_an_unwritable_cache_still_answers(
    snapshot_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder should be")
    monkeypatch.setenv("TRACKER_CACHE_DIR", str(blocked))
    assert load_cut(snapshot_file, ONE) == load_file(snapshot_file, ONE)


def test_the_sweep_removes_copies_unused_for_long_and_keeps_the_others(
    snapshot_file: Path,
) -> None:
    load_cut(snapshot_file, ONE)
    [copy] = _copies()
    root = Path(os.environ["TRACKER_CACHE_DIR"])
    old = copy.stat().st_mtime
    assert sweep_leftovers(root, now=old + SWEEP_EVERY + 1) == 0
    assert copy.exists()
    assert sweep_leftovers(root, now=old + CUT_COPIES_AGE + 2 * SWEEP_EVERY) == 1
    assert not copy.parent.exists() and (root / CUT_COPIES).is_dir()
