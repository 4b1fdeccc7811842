"""What a new user meets first: which source a header names, usage errors, the command list
in --help, and reports whose columns line up. Run through the real entry point."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
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


def test_check_on_a_directory_names_the_directory_it_read(tmp_path: Path) -> None:
    patched = sglang_dir(tmp_path / "patched")
    result = tracker("check", f"dir:{patched}", "-a", "EAGLE3", "-q")
    assert result.returncode in (0, 1), result.stderr
    assert result.stdout.splitlines()[0].startswith(f"sglang dir:{patched} (analysed) · ")


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


def help_text(*args: str, columns: int = 80) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "tracker", *args, "--help"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "COLUMNS": str(columns)},
    )
    return result.stdout


def test_the_top_level_help_fits_in_80_columns() -> None:
    text = help_text()
    assert [line for line in text.splitlines() if len(line) > 80] == []


def test_the_top_level_help_names_dir_path_as_a_version_and_what_needs_the_archive() -> None:
    text = " ".join(help_text().split("Options:")[0].split())
    assert "and dir:PATH: a patched tree or an unpacked release" in text
    assert (
        "fix, graph, facts and snapshot read the release's source: its archive is "
        "downloaded (once, then cached) even when its snapshot ships" in text
    )


@pytest.mark.parametrize("command", ["fix", "graph", "triage"])
def test_the_commands_that_read_a_release_archive_say_so(command: str) -> None:
    text = " ".join(help_text(command).split("Options:")[0].split())
    assert "a release's archive is downloaded (once, then cached) even when its snapshot" in text


@pytest.mark.parametrize("command", ["fetch", "versions"])
def test_commands_that_read_no_snapshot_offer_no_no_shipped(command: str) -> None:
    assert "--no-shipped" not in help_text(command)
    assert "--no-shipped" in help_text("interface")


def test_every_option_of_every_command_has_help_text() -> None:
    bare = [
        f"{name} {param.opts[0]}"
        for name, command in cli.commands.items()
        for param in command.params
        if isinstance(param, click.Option) and not param.help
    ]
    assert bare == []


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
            ["diff", "v0.5.5..v0.5.23"],
            "diff compares two versions, not a range: tracker diff v0.5.5 v0.5.23 "
            "(see tracker diff --help)",
        ),
        (
            ["changelog", "v0.5.8..v0.5.9", "-a", "EAGLE3"],
            "changelog compares two versions, not a range: tracker changelog v0.5.8 v0.5.9 "
            "(see tracker changelog --help)",
        ),
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


# -- aligned columns ------------------------------------------------------------------------

CHILD = """
from sglang.srt.models.llama import LlamaForCausalLM


class ChildForCausalLM(LlamaForCausalLM):
    pass


EntryClass = ChildForCausalLM
"""

FIXED_WRAPPER = """
from torch import nn

from sglang.srt.models.llama import LlamaForCausalLM


class WrapperForConditionalGeneration(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.language_model = LlamaForCausalLM(config)

    def get_embed_and_head(self):
        return self.language_model.get_embed_and_head()

    def set_eagle3_layers_to_capture(self, layer_ids=None):
        self.language_model.set_eagle3_layers_to_capture(layer_ids)


EntryClass = [WrapperForConditionalGeneration]
"""


def column_starts(lines: list[str], skip: int) -> set[int]:
    """Where the field after the first `skip` fields starts on each line (fields are
    separated by runs of spaces)."""
    starts = set()
    for line in lines:
        fields = [(m.start(), m.group()) for m in re.finditer(r"\S+", line)]
        starts.add(fields[skip][0])
    return starts


def test_diff_lines_up_the_unchanged_members_of_both_roles(tmp_path: Path) -> None:
    old = sglang_dir(tmp_path / "old")
    new = sglang_dir(tmp_path / "new", {"models/wrapper.py": None})
    result = tracker("diff", f"dir:{old}", f"dir:{new}", "-a", "EAGLE3", "-q")
    rows = [line for line in result.stdout.splitlines() if line.startswith("    ")]
    assert {row.split()[0] for row in rows} == {"target", "draft"}
    assert len(column_starts(rows, 1)) == 1, rows  # required
    assert len(column_starts(rows, 2)) == 1, rows  # the member
    assert len(column_starts(rows, 3)) == 1, rows  # its site


def test_check_lines_up_how_each_member_is_provided(tmp_path: Path) -> None:
    root = sglang_dir(tmp_path / "tree", {"models/child.py": CHILD})
    result = tracker("check", f"dir:{root}", "-a", "EAGLE3", "--all", "-q")
    rows = [line for line in result.stdout.splitlines() if line.startswith("    ")]
    # Detail lines under a row are not columns: the delegation and the contract notes.
    rows = [
        row
        for row in rows
        if not row.lstrip().startswith(("delegation:", "contract not followed:"))
    ]
    assert {"defined", "inherited", "missing"} <= {row.split()[0] for row in rows}
    assert len(column_starts(rows, 1)) == 1, rows  # the member
    assert len(column_starts(rows, 2)) == 1, rows  # where, or "needed at"


def test_matrix_events_line_up_across_versions_of_different_lengths(
    make_git_repo: Callable[..., Path],
) -> None:
    repo = make_git_repo({"v1.0.9": tree(), "v1.0.10": tree({"models/wrapper.py": FIXED_WRAPPER})})
    result = tracker("matrix", "v1.0.9..v1.0.10", "--repo", str(repo), "-a", "EAGLE3", "-q")
    assert result.returncode == 0, result.stderr
    rows = result.stdout.split("\nevents\n", 1)[1].splitlines()
    rows = [row for row in rows if row.startswith("  v")]
    assert {row.split()[0] for row in rows} == {"v1.0.9", "v1.0.10"}
    assert len(column_starts(rows, 1)) == 1, rows  # the event
    assert len(column_starts(rows, 2)) == 1, rows  # the model
