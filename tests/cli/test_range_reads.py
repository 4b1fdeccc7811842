"""A range reads each shipped snapshot once: asking which versions lack one and then
reading them must not load every file twice."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tracker.compare import workspace as workspace_module
from tracker.compare.workspace import Workspace
from tracker.sources import open_source

pytestmark = pytest.mark.realdata


def test_a_range_of_shipped_releases_reads_each_snapshot_file_once(
    tracker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRACKER_PIP", "false")  # the release list comes from the test cache
    reads: Counter[str] = Counter()
    real_load = workspace_module.load_file

    def counting(path: Path, models: frozenset[str] | None = None) -> Any:
        reads[path.name] += 1
        return real_load(path, models)

    monkeypatch.setattr(workspace_module, "load_file", counting)
    ws = Workspace(open_source("pypi", None, Path.cwd()))
    snaps = ws.snapshots("v0.5.8..v0.5.10")
    assert [s.version for s in snaps] == ["v0.5.8", "v0.5.8.post1", "v0.5.9", "v0.5.10"]
    assert all(s.origin == "shipped" for s in snaps)
    assert set(reads.values()) == {1}, reads
