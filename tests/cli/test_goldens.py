"""One golden per output format of the main reports, rendered from the shipped snapshots
of v0.5.8 and v0.5.9 (no network, no analysis). Update deliberately with
`python -m pytest tests/cli/test_goldens.py --update-goldens` and review the diff."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracker.cli import cli

GOLDENS = Path(__file__).parent / "goldens"

CASES = {
    "diff-eagle3.txt": ["diff", "v0.5.8", "v0.5.9", "-a", "EAGLE3"],
    "diff-eagle3.md": ["diff", "v0.5.8", "v0.5.9", "-a", "EAGLE3", "--format", "md"],
    "diff-eagle3.json": ["diff", "v0.5.8", "v0.5.9", "-a", "EAGLE3", "--format", "json"],
    "interface-eagle3.txt": ["interface", "v0.5.9", "-a", "EAGLE3"],
    "interface-eagle3.md": ["interface", "v0.5.9", "-a", "EAGLE3", "--format", "md"],
    "interface-eagle3-target.json": [
        "interface",
        "v0.5.9",
        "-a",
        "EAGLE3",
        "--role",
        "target",
        "--format",
        "json",
    ],
    "check-kimi.txt": ["check", "v0.5.9", "-a", "EAGLE3", "-m", "KimiK25ForConditionalGeneration"],
    "check-kimi.md": [
        "check",
        "v0.5.9",
        "-a",
        "EAGLE3",
        "-m",
        "KimiK25ForConditionalGeneration",
        "--format",
        "md",
    ],
    "check-kimi.json": [
        "check",
        "v0.5.9",
        "-a",
        "EAGLE3",
        "-m",
        "KimiK25ForConditionalGeneration",
        "--format",
        "json",
    ],
    "check-kimi.sarif": [
        "check",
        "v0.5.9",
        "-a",
        "EAGLE3",
        "-m",
        "KimiK25ForConditionalGeneration",
        "--format",
        "sarif",
    ],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_render_matches_its_golden(
    name: str, update_goldens: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The package index must not be needed: the shipped snapshots answer.
    monkeypatch.setenv("TRACKER_PIP", "false")
    result = CliRunner().invoke(cli, CASES[name], color=False)
    assert result.exit_code == 0, result.output
    if name.startswith(("diff", "interface")) and name.endswith(".txt"):
        assert "(shipped snapshot)" in result.stdout, (
            "the shipped snapshots are stale: run tools/refresh_snapshots.py"
        )
    golden = GOLDENS / name
    if update_goldens:
        golden.write_text(result.stdout)
    assert result.stdout == golden.read_text()
    if name.endswith((".json", ".sarif")):
        doc = json.loads(result.stdout)
        assert doc.get("schema", doc.get("$schema"))
