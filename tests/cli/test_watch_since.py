"""`watch --since` starts a first run; scheduled runs resume from the state. The help's
example says so, and a --since that overrides a state says what it costs."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from sgl_trees import BASE, tree

Tracker = Callable[..., Result]  # the `cli_run` fixture of tests/cli/conftest.py

NEW_VL = BASE["models/wrapper.py"].replace(
    "WrapperForConditionalGeneration", "NewVLForConditionalGeneration"
)


def test_the_help_runs_a_scheduled_job_from_its_state_without_since(cli_run: Tracker) -> None:
    text = cli_run("watch", "--help").stdout
    commands = [
        " ".join(m.split()) for m in re.findall(r"tracker watch (?:[^\n]*\\\n)*[^\n]*", text)
    ]
    assert len(commands) == 2, text
    first, scheduled = commands
    assert "--since" in first and "--state" in first
    assert "--state" in scheduled and "--since" not in scheduled


@pytest.fixture
def repo(make_git_repo: Callable[..., Path]) -> Path:
    return make_git_repo(
        {
            "v1.0.0": tree(),
            "v1.1.0": tree({"models/new_vl.py": NEW_VL}),
        }
    )


def test_since_over_an_existing_state_warns_that_it_redoes_releases(
    repo: Path, cli_run: Tracker, tmp_path: Path
) -> None:
    args = (
        "watch",
        "--repo",
        str(repo),
        "--out",
        str(tmp_path / "issues"),
        "--state",
        str(tmp_path / "state.json"),
    )
    first = cli_run(*args, "--since", "v1.0.0")
    assert first.exit_code == 0, first.stderr
    assert "overrides" not in first.stderr
    scheduled = cli_run(*args)
    assert scheduled.exit_code == 0, scheduled.stderr
    assert "no release after v1.1.0" in scheduled.stdout
    again = cli_run(*args, "--since", "v1.0.0")
    assert again.exit_code == 0, again.stderr
    assert (
        f"tracker: --since v1.0.0 overrides {tmp_path / 'state.json'}, which had reached "
        "v1.1.0: the releases after v1.0.0 are handled again"
    ) in again.stderr
    assert " · 0 filed · " in again.stdout
