"""Running the `tracker` command group with click's CliRunner (colour off, stdout and stderr
apart); the group itself maps the tool's errors to exit codes and one-line messages."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from tracker.cli import cli
from tracker.sources import clear_memo

Tracker = Callable[..., Result]

# The package index is never asked by the command under test: the releases come from the
# test cache, which `stocked_releases` fills first (through the real pip, once).
OFFLINE = {"TRACKER_PIP": "false", "NO_COLOR": "1"}

# Every release the CLI tests name. The shipped snapshots answer most commands, but `issues`
# and `triage` analyse a release and list the later ones, and every command reads the
# archives while the shipped snapshots are stale.
RELEASES = ("v0.5.1", "v0.5.2", "v0.5.8", "v0.5.9", "v0.5.10")


def run_tracker(*args: str, input: str | None = None) -> Result:
    return CliRunner(env=OFFLINE).invoke(cli, list(args), input=input, color=False)


@pytest.fixture
def tracker(use_real_cache: Path, stocked_releases: Callable[..., Path]) -> Tracker:
    """`tracker(*args) -> Result` over the real releases in the test cache."""
    stocked_releases(*RELEASES)
    return run_tracker


@contextlib.contextmanager
def real_releases(real_cache: Path) -> Iterator[None]:
    """The environment of `tracker` for a module-scoped fixture (the autouse isolation is
    per test): the persistent real cache, no repository from the environment."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRACKER_CACHE_DIR", str(real_cache))
        mp.delenv("TRACKER_REPO", raising=False)
        clear_memo()
        try:
            yield
        finally:
            clear_memo()


@pytest.fixture(scope="session")
def cli_run() -> Tracker:
    """`run_tracker` for module-scoped fixtures (inside `real_releases`)."""
    return run_tracker


@pytest.fixture(scope="session")
def real_env(
    stocked_releases: Callable[..., Path],
) -> Callable[[], contextlib.AbstractContextManager[None]]:
    real_cache = stocked_releases(*RELEASES)
    return lambda: real_releases(real_cache)
