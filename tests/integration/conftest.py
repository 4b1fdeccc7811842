"""Shared helpers for tests on real SGLang releases (downloaded once into the test cache)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tracker.cli import cli

Run = Callable[..., Any]


@pytest.fixture
def run(use_real_cache: Path) -> Run:
    """`run(*args, json_output=False, code=0)`: invoke the CLI on the real cache."""

    def invoke(*args: str, json_output: bool = False, code: int = 0) -> Any:
        result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
        assert result.exit_code == code, result.output
        return json.loads(result.stdout) if json_output else result.stdout

    return invoke
