"""The CLI tests on a machine that never ran them: an empty test cache, nothing downloaded by
an earlier test. Their commands never ask the package index (`TRACKER_PIP=false`), so the
fixtures must fill the cache first."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

Tracker = Callable[..., Result]  # the `tracker` fixture of tests/cli/conftest.py

pytestmark = pytest.mark.realdata

TESTS = Path(__file__).resolve().parents[1]

# Runs `tracker triage` offline: it analyses v0.5.9 and lists the later releases.
INNER_TEST = """
KIMI_ERROR = ("AttributeError: 'KimiK25ForConditionalGeneration' object has no attribute "
              "'get_embed_and_head'")


def test_triage_runs_offline(tracker):
    result = tracker("triage", KIMI_ERROR, "--at", "v0.5.9", "--source", "pypi",
                     "--until", "v0.5.10")
    assert result.exit_code == 0, result.stderr
    assert "fixed in v0.5.10" in result.stdout
"""


def test_the_cli_fixtures_fill_an_empty_test_cache_before_the_commands_run_offline(
    pytester: pytest.Pytester,
    tracker: Tracker,
    real_cache: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A test session of its own, with this suite's fixtures and an empty test cache. Its
    # "package index" is the archives this session already holds (the outer `tracker`
    # fixture put them there), so nothing is downloaded twice; pip itself still runs.
    pytester.makeconftest((TESTS / "conftest.py").read_text())
    (pytester.path / "cli").mkdir()
    (pytester.path / "cli" / "conftest.py").write_text((TESTS / "cli" / "conftest.py").read_text())
    (pytester.path / "cli" / "test_offline.py").write_text(INNER_TEST)
    empty = pytester.path / "fresh-test-cache"
    monkeypatch.setenv("TRACKER_TEST_CACHE", str(empty))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(real_cache / "pypi"))
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider", "cli")
    result.assert_outcomes(passed=1)
    assert (empty / "pypi" / "versions.json").is_file()
    assert (empty / "pypi" / "sglang-0.5.9-py3-none-any.whl").is_file()
