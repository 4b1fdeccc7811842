"""The README says what the commands do: the formats each command takes are those its
`--format` offers, and every command is in the table."""

from __future__ import annotations

import re
from pathlib import Path

import click

from tracker.cli import cli

README = Path(__file__).resolve().parents[2] / "README.md"


def commands_table() -> dict[str, str]:
    """command name -> its `--format` cell, from the README's Commands table."""
    text = README.read_text(encoding="utf-8")
    table = text.split("| command | `--format` | does |\n| --- | --- | --- |\n", 1)[1]
    rows: dict[str, str] = {}
    for line in table.splitlines():
        if not line.startswith("| `"):
            break
        found = re.match(r"\| `([a-z]+)[^`]*` \| ([^|]*) \|", line)
        assert found is not None, line
        rows[found.group(1)] = found.group(2).strip()
    return rows


def format_choices(command: click.Command) -> str:
    for param in command.params:
        if isinstance(param, click.Option) and "--format" in param.opts:
            assert isinstance(param.type, click.Choice)
            return ", ".join(str(c) for c in param.type.choices)
    return "—"


def test_the_readme_lists_every_command_with_the_formats_it_takes() -> None:
    documented = commands_table()
    assert sorted(documented) == sorted(cli.commands)
    for name, command in cli.commands.items():
        assert documented[name] == format_choices(command), name
