"""What a new user meets first: which source a header names, usage errors, the command list
in --help, and reports whose columns line up. Run through the real entry point."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from sgl_trees import tree

from tracker.cli import cli, command_summary


def tracker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tracker", *args], capture_output=True, text=True, check=False
    )


def sglang_dir(root: Path, overrides: dict[str, str | None] | None = None) -> Path:
    """A directory holding a small SGLang tree (tests/unit/sgl_trees.py) at `root`."""
    for path, text in tree(overrides).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


# -- which source a header names ------------------------------------------------------------


def test_a_directory_named_as_the_version_is_the_source_the_header_names(tmp_path: Path) -> None:
    patched = sglang_dir(tmp_path / "patched")
    result = tracker("interface", f"dir:{patched}", "-a", "EAGLE3", "-q")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == f"sglang local · source: dir:{patched} (analysed)"


def test_a_diff_across_two_sources_names_both(tmp_path: Path) -> None:
    old = sglang_dir(tmp_path / "old")
    new = sglang_dir(tmp_path / "new", {"models/wrapper.py": None})
    result = tracker("diff", f"dir:{old}", f"dir:{new}", "-a", "EAGLE3", "-q")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == (
        f"sglang local → local · EAGLE3 · source: dir:{old} (analysed) → dir:{new} (analysed)"
    )


def test_a_version_other_than_local_asked_of_a_directory_source_is_refused(
    tmp_path: Path,
) -> None:
    patched = sglang_dir(tmp_path / "patched")
    result = tracker("interface", "v0.5.9", "--source", f"dir:{patched}")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        f"tracker: error: dir:{patched} holds one version, local, not v0.5.9; ask for local, "
        f"or compare the two with `tracker diff v0.5.9 dir:{patched}`\n"
    )


# -- --help ---------------------------------------------------------------------------------


def help_summaries(columns: int) -> dict[str, str]:
    """The Commands section of `tracker --help` at a terminal width: name -> summary."""
    result = subprocess.run(
        [sys.executable, "-m", "tracker", "--help"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "COLUMNS": str(columns)},
    )
    rows: dict[str, str] = {}
    name = ""
    for line in result.stdout.split("\nCommands:\n", 1)[1].splitlines():
        if line.startswith("  ") and not line.startswith("   "):
            name, _, text = line.strip().partition(" ")
            rows[name] = text.strip()
        elif line.strip():
            rows[name] += " " + line.strip()
    return rows


@pytest.mark.parametrize("columns", [50, 80, 200])
def test_the_command_list_shows_each_first_sentence_whole_at_any_width(columns: int) -> None:
    commands = {name: cli.commands[name] for name in cli.commands if not cli.commands[name].hidden}
    summaries = help_summaries(columns)
    assert sorted(summaries) == sorted(commands)
    for name, summary in summaries.items():
        assert not summary.endswith("..."), (name, summary)
        # Wrapping may split a word at its hyphen; compare the words, not the spacing.
        assert summary.replace(" ", "") == command_summary(commands[name]).replace(" ", "")
        assert summary.endswith("."), (name, summary)


def test_a_summary_is_the_whole_first_sentence_or_the_explicit_short_help() -> None:
    long = click.Command("x", help="One sentence " + "that goes on " * 20 + "to here. Then more.")
    assert command_summary(long) == "One sentence " + "that goes on " * 20 + "to here."
    short = click.Command("y", help="The long help. More.", short_help="Short.")
    assert command_summary(short) == "Short."


# -- usage errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["diff", "--bogus"], "No such option '--bogus' (see tracker diff --help)"),
        (["--bogus"], "No such option '--bogus' (see tracker --help)"),
        (["nosuch"], "No such command 'nosuch' (see tracker --help)"),
        (["diff", "v0.5.8"], "Missing argument 'NEW' (see tracker diff --help)"),
        (
            ["diff", "v0.5.8", "v0.5.9", "--format", "xml"],
            "Invalid value for '--format': 'xml' is not one of 'text', 'md', 'json' "
            "(see tracker diff --help)",
        ),
    ],
)
def test_a_usage_error_is_one_line_and_exit_2(args: list[str], line: str) -> None:
    result = tracker(*args)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == f"tracker: error: {line}\n"


def test_the_group_itself_gives_the_one_line_usage_error_too() -> None:
    # Click's test runner (and any caller of the group) goes through click's own error
    # handling, not the console script's.
    result = CliRunner().invoke(cli, ["check", "v0.5.9", "--fail-on", "x"])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("tracker: error: Invalid value for '--fail-on'")
