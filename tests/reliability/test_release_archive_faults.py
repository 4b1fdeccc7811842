"""Release archives and the package index when things go wrong, through the CLI: damaged
archives in the cache are fetched again, an unreachable index is one clear line, and what
is cached keeps working offline. pip is the stand-in of tests/fake_pip.py (no network)."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from tests.reliability.support import (
    FakeIndex,
    assert_one_line_error,
    run_cli,
    run_process,
    tracker_env,
)

WHEEL = "sglang-0.5.9-py3-none-any.whl"
INTERFACE = ("interface", "v0.5.9", "--no-shipped", "--format", "json")


def _damage(archive: Path, how: str) -> None:
    data = archive.read_bytes()
    if how == "truncated":
        archive.write_bytes(data[: len(data) // 2])
    elif how == "empty":
        archive.write_bytes(b"")
    elif how == "an html error page":
        archive.write_bytes(b"<html><body>502 Bad Gateway</body></html>\n")
    elif how == "a corrupt member":
        with zipfile.ZipFile(archive) as opened:
            info = opened.getinfo("sglang/srt/speculative/eagle_worker.py")
        damaged = bytearray(data)
        damaged[info.header_offset + 30 + len(info.filename) + info.compress_size // 2] ^= 0xFF
        archive.write_bytes(bytes(damaged))
    elif how == "its end cut off":
        archive.write_bytes(data[:-22])  # the end-of-central-directory record
    else:
        raise AssertionError(how)


@pytest.mark.parametrize(
    "how", ["truncated", "empty", "an html error page", "a corrupt member", "its end cut off"]
)
def test_a_damaged_archive_in_the_cache_is_fetched_again_and_the_answer_is_unchanged(
    fake_index: FakeIndex, cache_dir: Path, how: str
) -> None:
    first = run_cli(*INTERFACE)
    assert first.code == 0, first.stderr
    archive = cache_dir / "pypi" / WHEEL
    _damage(archive, how)
    shutil.rmtree(cache_dir / "snapshots")  # so the archive itself is read again

    again = run_cli(*INTERFACE)
    assert again.code == 0, again.stderr
    assert again.stdout == first.stdout
    assert len(fake_index.calls("download")) == 2
    with zipfile.ZipFile(archive) as opened:
        assert opened.testzip() is None
    assert archive.read_bytes() == (fake_index.wheels / WHEEL).read_bytes()
    assert sorted(p.name for p in (cache_dir / "pypi").iterdir() if p.name.startswith(".")) == []


def test_a_directory_in_place_of_a_cached_archive_is_a_clear_error_or_fetched_again(
    fake_index: FakeIndex, cache_dir: Path
) -> None:
    (cache_dir / "pypi" / WHEEL).mkdir(parents=True)
    run = run_process(*INTERFACE)
    assert "internal error" not in run.stderr, run.stderr
    if run.code != 0:
        assert_one_line_error(run, WHEEL)


def test_a_damaged_archive_with_the_index_unreachable_is_one_clear_error(
    fake_index: FakeIndex, cache_dir: Path
) -> None:
    assert run_cli(*INTERFACE).code == 0
    _damage(cache_dir / "pypi" / WHEEL, "truncated")
    shutil.rmtree(cache_dir / "snapshots")
    fake_index.go_offline()
    run = run_process(*INTERFACE)
    assert_one_line_error(run, "sglang==0.5.9", "Connection refused")
    assert run.stdout == ""


@pytest.mark.parametrize(
    "args",
    [INTERFACE, ("versions",), ("diff", "v0.5.9", "v0.5.10", "--no-shipped")],
    ids=["interface", "versions", "diff"],
)
def test_an_unreachable_index_with_nothing_cached_is_one_clear_error(
    fake_index: FakeIndex, args: tuple[str, ...]
) -> None:
    fake_index.go_offline()
    run = run_process(*args)
    assert_one_line_error(run, "Connection refused")
    assert run.stdout == ""


def test_a_pip_that_cannot_be_started_is_one_clear_error(tmp_path: Path) -> None:
    env_pip = str(tmp_path / "no-such-pip")
    run = run_process(*INTERFACE, env=tracker_env(TRACKER_PIP=env_pip))
    assert_one_line_error(run, "could not be reached")


def test_cached_releases_answer_offline_exactly_as_online(
    fake_index: FakeIndex, cache_dir: Path
) -> None:
    online = run_cli(*INTERFACE)
    online_versions = run_cli("versions")
    assert online.code == online_versions.code == 0
    fake_index.go_offline()
    calls_before = fake_index.log.read_text()
    shutil.rmtree(cache_dir / "snapshots")  # analysed again, from the cached archive

    offline = run_cli(*INTERFACE)
    assert offline.code == 0, offline.stderr
    assert offline.stdout == online.stdout
    assert fake_index.log.read_text() == calls_before  # the index was not even asked

    versions = run_cli("versions")
    assert versions.code == 0
    assert versions.stdout == online_versions.stdout
    assert len(versions.error_lines) == 1
    assert versions.error_lines[0].startswith("tracker: warning:")
    assert "could not be reached" in versions.error_lines[0]


def test_shipped_snapshots_answer_offline_with_an_empty_cache(fake_index: FakeIndex) -> None:
    from tracker.compare.snapshot import current_builder, is_current, load_file, shipped_dir

    for version in ("v0.5.8", "v0.5.9"):
        shipped = load_file(shipped_dir() / f"{version}.json")
        if shipped is None or not is_current(shipped, current_builder()):
            pytest.skip(f"the shipped snapshot of {version} is stale (being refreshed)")
    fake_index.go_offline()
    run = run_process("diff", "v0.5.8", "v0.5.9", "-a", "EAGLE3", "--format", "json")
    assert run.code == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["from"] == "v0.5.8"
    assert doc["to"] == "v0.5.9"
    assert fake_index.calls("download") == []
