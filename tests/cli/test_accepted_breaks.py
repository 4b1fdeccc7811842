"""Accepted breaks on real releases: a `tracker.toml` entry keeps a break in every report,
marked with its reason, but it fails no `--fail-on` and files no issue."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from tracker.sources.pypi import PypiSource

Tracker = Callable[..., Result]  # the `tracker` fixture of tests/cli/conftest.py

pytestmark = pytest.mark.realdata

KIMI = "KimiK25ForConditionalGeneration"
REASON = "patched in our fork, see PR 123"
CHECK_KIMI = ("check", "v0.5.9", "-a", "EAGLE3", "-m", KIMI, "--source", "pypi")
# Both broke for EAGLE3 at v0.5.4.post2 (set_eagle3_layers_to_capture went missing).
GLM = ("Glm4vForConditionalGeneration", "Glm4vMoeForConditionalGeneration")


def accept(
    folder: Path,
    model: str = KIMI,
    *,
    until: str | None = None,
    algorithm: str | None = "EAGLE3",
    name: str = "tracker.toml",
    table: str = "accepted",
) -> Path:
    lines = [f"[[{table}]]", f'model = "{model}"', f'reason = "{REASON}"']
    if algorithm:
        lines.append(f'algorithm = "{algorithm}"')
    if until:
        lines.append(f'until = "{until}"')
    path = folder / name
    with path.open("a") as handle:
        handle.write("\n".join(lines) + "\n\n")
    return path


@pytest.fixture(scope="module", autouse=True)
def releases(real_pypi: PypiSource) -> None:
    """The releases these tests read, in the test cache before tracker runs offline."""
    for tag in ("v0.5.4.post1", "v0.5.4.post2", "v0.5.8", "v0.5.8.post1", "v0.5.9", "v0.5.10"):
        real_pypi.tree(tag)


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty current directory: no tracker.toml unless the test writes one."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


# ----------------------------------------------------------------------- check


def test_an_accepted_break_no_longer_fails_check_but_is_still_shown_with_its_reason(
    tracker: Tracker, here: Path
) -> None:
    before = tracker(*CHECK_KIMI, "--fail-on", "broken")
    assert before.exit_code == 1, before.stderr
    accept(here)
    after = tracker(*CHECK_KIMI, "--fail-on", "broken")
    assert after.exit_code == 0, after.stderr
    assert f"✗ {KIMI} · EAGLE3 · target model · broken (accepted)" in after.stdout
    assert f"    accepted: {REASON}" in after.stdout
    assert "1 broken, 0 unsupported, 0 unknown, 0 ok · 1 accepted" in after.stdout


def test_accepting_one_class_leaves_the_other_broken_classes_failing(
    tracker: Tracker, here: Path
) -> None:
    accept(here)
    result = tracker(
        "check",
        "v0.5.9",
        "-a",
        "EAGLE3",
        "--source",
        "pypi",
        "--fail-on",
        "broken",
        "--format",
        "json",
    )
    assert result.exit_code == 1
    checks = json.loads(result.stdout)["checks"]
    accepted = [c["model"] for c in checks if "accepted" in c]
    assert accepted == [KIMI]
    assert sum(c["status"] == "broken" for c in checks) > 1


def test_an_entry_until_the_checked_release_no_longer_applies_there(
    tracker: Tracker, here: Path
) -> None:
    accept(here, until="v0.5.9")
    assert tracker(*CHECK_KIMI, "--fail-on", "broken").exit_code == 1
    (here / "tracker.toml").unlink()
    accept(here, until="v0.5.10")  # v0.5.10 comes after v0.5.9 in release order
    assert tracker(*CHECK_KIMI, "--fail-on", "broken").exit_code == 0


def test_an_entry_for_another_algorithm_does_not_accept_the_eagle3_break(
    tracker: Tracker, here: Path
) -> None:
    accept(here, algorithm="EAGLE")
    assert tracker(*CHECK_KIMI, "--fail-on", "broken").exit_code == 1
    accept(here, algorithm=None)  # every algorithm
    assert tracker(*CHECK_KIMI, "--fail-on", "broken").exit_code == 0


def test_json_gives_the_accepted_reason_and_markdown_shows_it(tracker: Tracker, here: Path) -> None:
    accept(here)
    doc = json.loads(tracker(*CHECK_KIMI, "--format", "json").stdout)
    (kimi,) = doc["checks"]
    assert kimi["status"] == "broken"
    assert kimi["accepted"] == {"reason": REASON}
    md = tracker(*CHECK_KIMI, "--format", "md").stdout
    assert f"| `{KIMI}` | EAGLE3 | broken (accepted: {REASON}) |" in md


def test_sarif_marks_an_accepted_break_as_a_suppression_with_its_justification(
    tracker: Tracker, here: Path
) -> None:
    plain = json.loads(tracker(*CHECK_KIMI, "--format", "sarif").stdout)
    assert all("suppressions" not in r for r in plain["runs"][0]["results"])
    accept(here)
    results = json.loads(tracker(*CHECK_KIMI, "--format", "sarif").stdout)["runs"][0]["results"]
    assert len(results) == 1  # one alert for the class and algorithm, still reported
    for r in results:
        assert r["suppressions"] == [
            {"kind": "external", "status": "accepted", "justification": REASON}
        ]


def test_config_picks_another_file_and_pyproject_tool_tracker_works_too(
    tracker: Tracker, here: Path
) -> None:
    elsewhere = here / "ci"
    elsewhere.mkdir()
    path = accept(elsewhere, name="accepted.toml")
    assert tracker(*CHECK_KIMI, "--fail-on", "broken").exit_code == 1
    assert tracker(*CHECK_KIMI, "--fail-on", "broken", "--config", str(path)).exit_code == 0
    accept(here, name="pyproject.toml", table="tool.tracker.accepted")
    assert tracker(*CHECK_KIMI, "--fail-on", "broken").exit_code == 0


def test_a_bad_entry_stops_every_command_with_one_line_naming_file_and_entry(
    tracker: Tracker, here: Path
) -> None:
    (here / "tracker.toml").write_text(f'[[accepted]]\nmodel = "{KIMI}"\nalgorithm = "EAGLE3"\n')
    for args in (
        CHECK_KIMI,
        ("diff", "v0.5.8", "v0.5.9"),
        ("issues", "v0.5.8", "v0.5.9"),
        ("changelog", "v0.5.8", "v0.5.9"),
    ):
        result = tracker(*args)
        assert result.exit_code == 2, args
        assert result.stderr == (
            f"tracker: error: tracker.toml: accepted[0] ({KIMI}): reason is missing\n"
        )


def test_an_entry_naming_an_algorithm_the_release_lacks_is_warned_about(
    tracker: Tracker, here: Path
) -> None:
    accept(here, algorithm="EAGEL3")
    result = tracker(*CHECK_KIMI)
    assert (
        f"tracker: warning: tracker.toml: accepted[0] ({KIMI}): no algorithm EAGEL3 here"
    ) in result.stderr


# ------------------------------------------------------------------ diff, changelog


def test_an_accepted_wrapper_that_broke_does_not_fail_new_breaks(
    tracker: Tracker, here: Path
) -> None:
    args = (
        "diff",
        "v0.5.4.post1",
        "v0.5.4.post2",
        "-a",
        "EAGLE3",
        "--source",
        "pypi",
        "--fail-on",
        "new-breaks",
    )
    assert tracker(*args).exit_code == 1
    accept(here, GLM[0])
    assert tracker(*args).exit_code == 1  # the other one still broke
    accept(here, GLM[1])
    result = tracker(*args)
    assert result.exit_code == 0, result.stderr
    assert (
        f"✗ {GLM[0]} (broke) · missing set_eagle3_layers_to_capture\n"
        f"      accepted: {REASON}" in result.stdout
    )
    broke = [
        c
        for c in json.loads(tracker(*args, "--format", "json").stdout)["changes"]
        if c["kind"] == "model_wrapper_broke"
    ]
    assert sorted(c["subject"] for c in broke) == list(GLM)
    assert all(c["new"]["accepted"] == {"reason": REASON} for c in broke)


def test_the_changelog_marks_an_accepted_break(tracker: Tracker, here: Path) -> None:
    accept(here)
    md = tracker("changelog", "v0.5.8", "v0.5.9", "-a", "EAGLE3", "--source", "pypi").stdout
    line = next(x for x in md.splitlines() if x.startswith(f"- `{KIMI}`"))
    assert line.endswith(f"(accepted: {REASON})")
    other = next(x for x in md.splitlines() if x.startswith("- `StepVLForConditionalGeneration`"))
    assert "accepted" not in other


# ---------------------------------------------------------------- issues, watch


def test_issues_files_no_issue_for_an_accepted_break_and_says_so(
    tracker: Tracker, here: Path
) -> None:
    args = ("issues", "v0.5.8", "v0.5.9", "-a", "EAGLE3", "--source", "pypi", "--format", "json")
    before = [i["report"]["subject"] for i in json.loads(tracker(*args).stdout)["issues"]]
    assert KIMI in before
    accept(here)
    result = tracker(*args)
    after = [i["report"]["subject"] for i in json.loads(result.stdout)["issues"]]
    assert after == [s for s in before if s != KIMI]
    assert f"tracker: note: not filed, accepted: {KIMI} · EAGLE3 ({REASON})" in result.stderr


def test_watch_files_no_issue_for_an_accepted_break(tracker: Tracker, here: Path) -> None:
    accept(here)
    out = here / "issues"
    result = tracker(
        "watch",
        "--source",
        "pypi",
        "--out",
        str(out),
        "--state",
        str(here / "state.json"),
        "-a",
        "EAGLE3",
        "--since",
        "v0.5.8.post1",
        "--until",
        "v0.5.9",
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.stderr
    (release,) = json.loads(result.stdout)["releases"]
    assert KIMI not in " ".join(f["title"] for f in release["filed"])
    assert len(release["filed"]) == 2
    assert release["accepted"] == [
        {
            "kind": "model_wrapper_added_unsupported",
            "algorithm": "EAGLE3",
            "subject": KIMI,
            "reason": REASON,
        }
    ]
    index = json.loads((out / "issues.json").read_text())
    assert KIMI not in [e["report"]["subject"] for e in index["issues"]]


# --------------------------------------------------------------- matrix, history


def test_matrix_and_history_list_the_accepted_breaks_with_their_versions(
    tracker: Tracker, here: Path
) -> None:
    plain = json.loads(
        tracker(
            "matrix", "v0.5.8..v0.5.10", "-a", "EAGLE3", "--source", "pypi", "--format", "json"
        ).stdout
    )
    assert "accepted" not in plain
    accept(here, until="v0.5.10")
    doc = json.loads(
        tracker(
            "matrix", "v0.5.8..v0.5.10", "-a", "EAGLE3", "--source", "pypi", "--format", "json"
        ).stdout
    )
    # Broken at v0.5.9 only (fixed at v0.5.10, where the entry would have stopped anyway).
    assert doc["accepted"] == [
        {"model": KIMI, "algorithm": "EAGLE3", "reason": REASON, "versions": ["v0.5.9"]}
    ]
    kimi = next(m for m in doc["models"] if m["model"] == KIMI)
    assert kimi["cells"] == plain_cells(plain, KIMI)  # the cells still say broken
    text = tracker("history", KIMI, "v0.5.8..v0.5.10", "--source", "pypi").stdout
    assert f"accepted (still broken, fail nothing)\n  {KIMI} · EAGLE3 · v0.5.9 · {REASON}" in text


def plain_cells(doc: dict[str, object], model: str) -> list[str]:
    models = doc["models"]
    assert isinstance(models, list)
    return list(next(m for m in models if m["model"] == model)["cells"])
