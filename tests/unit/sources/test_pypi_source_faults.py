"""The package-index source when things go wrong: an unreachable index, damaged cached
archives, releases the index does not have.

pip is replaced through TRACKER_PIP by a small script that serves tiny locally built wheels
(or fails as pip does when it cannot connect), so these tests are fast and offline; the
real index is exercised in tests/integration/test_sources_real.py.
"""

from __future__ import annotations

import json
import logging
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracker.cli import cli
from tracker.common.errors import (
    NoSpeculativeDecodingError,
    NotSGLangError,
    SourceError,
    UnknownVersionError,
)
from tracker.sources import expand_spec
from tracker.sources.base import content_id
from tracker.sources.pypi import PypiSource
from tracker.sources.versions import canonical_tag

WORKER = "python/sglang/srt/speculative/eagle_worker.py"
WORKER_TEXT = b"class EAGLEWorker:\n    def init(self):\n        self.model.get_embed_and_head()\n"

from tests import fake_pip  # noqa: E402


def build_wheel(folder: Path, version: str, *, with_srt: bool = True) -> Path:
    """A tiny wheel shaped like sglang's: package files, a non-Python file, dist-info."""
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"sglang-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("sglang/", b"")  # platform wheels list directories too
        archive.writestr("sglang/__init__.py", f"__version__ = '{version}'\n")
        archive.writestr("sglang/README.md", "# sglang\n")
        if with_srt:
            archive.writestr("sglang/srt/__init__.py", "")
            archive.writestr("sglang/srt/speculative/eagle_worker.py", WORKER_TEXT * 50)
        archive.writestr(f"sglang-{version}.dist-info/METADATA", "Name: sglang\n")
    return wheel


class FakeIndex:
    """Controls the fake pip: what the index serves, whether it is reachable, what was run."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.wheels, self.log = fake_pip.install(root, monkeypatch)
        self._monkeypatch = monkeypatch
        self.serve("0.5.10, 0.5.9, 0.5.9rc1, 0.5.8.post1, 0.5.8, 0.4.10, 0.4.9")

    def serve(self, versions: str) -> None:
        self._monkeypatch.setenv("FAKE_PIP_VERSIONS", versions)

    def go_offline(self) -> None:
        self._monkeypatch.setenv("FAKE_PIP_OFFLINE", "1")

    def calls(self, command: str) -> list[str]:
        return [line for line in self.log.read_text().splitlines() if line.startswith(command)]


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeIndex:
    fake = FakeIndex(tmp_path, monkeypatch)
    build_wheel(fake.wheels, "0.5.9")
    build_wheel(fake.wheels, "0.5.10")
    return fake


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "pypi"  # where the autouse fixture's TRACKER_CACHE_DIR points


# -- listing releases ---------------------------------------------------------------------------


def test_releases_from_the_first_with_a_speculative_worker_on_are_listed_without_prereleases(
    index: FakeIndex,
) -> None:
    index.serve(
        "0.5.10, 0.5.9, 0.5.9rc1, 0.5.8.post1, 0.4.10, 0.4.9, 0.4.1.post4, 0.4.1.post3, "
        "0.4.1, 0.3.0"
    )
    assert PypiSource().versions() == [
        "v0.4.1.post4",
        "v0.4.9",
        "v0.4.10",
        "v0.5.8.post1",
        "v0.5.9",
        "v0.5.10",
    ]


def test_pip_is_asked_for_one_fixed_platform_so_platform_wheels_are_found(
    index: FakeIndex,
) -> None:
    PypiSource().tree("v0.5.9")
    for call in [*index.calls("index"), *index.calls("download")]:
        assert "--only-binary=:all: --platform manylinux_2_34_x86_64" in call
        assert "--python-version 3.11 --implementation cp" in call
    assert "--no-deps" in index.calls("download")[0]


def test_an_unreachable_index_with_an_empty_cache_is_a_clear_source_error(
    index: FakeIndex,
) -> None:
    index.go_offline()
    with pytest.raises(SourceError) as caught:
        PypiSource().versions()
    assert str(caught.value) == (
        "the package index could not be reached to list sglang releases and nothing is cached "
        "(pip: [Errno 111] Connection refused)"
    )


def test_a_failing_pip_command_with_an_empty_cache_is_a_source_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "failing_pip.sh"
    script.write_text("#!/bin/sh\necho 'ERROR: Could not reach the index' >&2\nexit 1\n")
    script.chmod(0o755)
    monkeypatch.setenv("TRACKER_PIP", str(script))
    with pytest.raises(SourceError, match=r"could not be reached .*Could not reach the index"):
        PypiSource().resolve("v0.5.9")


def test_a_pip_command_that_does_not_exist_is_a_source_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRACKER_PIP", str(tmp_path / "no-such-pip"))
    with pytest.raises(SourceError, match="could not be reached"):
        PypiSource().versions()


def test_an_unreachable_index_falls_back_to_the_cached_list_with_a_warning(
    index: FakeIndex,
) -> None:
    online = PypiSource().versions()
    assert online[-1] == "v0.5.10"
    index.go_offline()
    source = PypiSource()
    assert source.versions() == online
    assert len(source.warnings) == 1
    assert "could not be reached" in source.warnings[0]


def test_a_list_got_minutes_ago_is_reused_when_asked_to_and_an_older_one_is_not(
    index: FakeIndex, cache: Path
) -> None:
    import os
    import time

    PypiSource().versions()
    asked = len(index.calls("index"))
    index.serve("0.5.11, 0.5.10, 0.5.9")  # a release published since
    recent = PypiSource()
    recent.start_listing(reuse_within=600)
    assert recent.versions()[-1] == "v0.5.10" and len(index.calls("index")) == asked
    hour_ago = time.time() - 3600
    os.utime(cache / "versions.json", (hour_ago, hour_ago))
    stale = PypiSource()
    stale.start_listing(reuse_within=600)
    assert stale.versions()[-1] == "v0.5.11" and len(index.calls("index")) == asked + 1


def test_cached_archives_count_as_releases_when_the_index_is_unreachable(
    index: FakeIndex, cache: Path
) -> None:
    build_wheel(cache, "0.5.8.post1")
    index.go_offline()
    assert PypiSource().versions() == ["v0.5.8.post1"]


def test_a_cached_release_is_read_without_asking_the_index(index: FakeIndex, cache: Path) -> None:
    PypiSource().tree("0.5.9")
    index.go_offline()
    calls_before = len(index.log.read_text().splitlines())
    tree = PypiSource().tree("v0.5.9")
    assert tree.read(WORKER) == WORKER_TEXT * 50
    assert len(index.log.read_text().splitlines()) == calls_before


def test_a_release_the_cached_list_names_is_fetched_without_listing_again(
    index: FakeIndex,
) -> None:
    PypiSource().versions()
    tree = PypiSource().tree("v0.5.10")  # another process: nothing in memory
    assert tree.read(WORKER) == WORKER_TEXT * 50
    assert len(index.calls("index")) == 1
    assert len(index.calls("download")) == 1


def test_a_version_the_index_does_not_have_names_the_nearest_releases(index: FakeIndex) -> None:
    with pytest.raises(UnknownVersionError) as caught:
        PypiSource().tree("0.5.99")
    assert (
        str(caught.value) == "unknown version 0.5.99; nearest known: v0.5.8.post1, v0.5.9, v0.5.10"
    )
    assert index.calls("download") == []


@pytest.mark.parametrize("spec", ["v0.4.1.post3", "0.3.0", "v0.0.1"])
def test_a_release_before_speculative_decoding_is_refused_in_one_line_without_the_index(
    index: FakeIndex, spec: str
) -> None:
    index.serve("0.5.9, 0.4.1.post4, 0.4.1.post3, 0.3.0")
    with pytest.raises(NoSpeculativeDecodingError) as caught:
        PypiSource().tree(spec)
    assert str(caught.value) == (
        f"sglang {canonical_tag(spec)} predates speculative decoding: v0.4.1.post4 is the first "
        "release with a speculative worker"
    )
    assert index.log.read_text() == ""  # decided from the version: no listing, no download


def test_a_range_that_starts_before_speculative_decoding_is_refused_the_same_way(
    index: FakeIndex,
) -> None:
    index.serve("0.5.9, 0.4.1.post4, 0.4.1.post3, 0.3.0")
    with pytest.raises(NoSpeculativeDecodingError, match=r"^sglang v0\.3\.0 predates"):
        expand_spec(PypiSource(), "v0.3.0..v0.5.9")
    assert expand_spec(PypiSource(), "v0.4.1.post4..v0.5.9") == ["v0.4.1.post4", "v0.5.9"]


def test_the_first_release_with_speculative_decoding_is_served(index: FakeIndex) -> None:
    index.serve("0.5.9, 0.4.1.post4, 0.4.1.post3")
    build_wheel(index.wheels, "0.4.1.post4")
    assert WORKER in PypiSource().tree("0.4.1.post4").files


def test_a_failed_download_is_a_source_error_with_pips_reason(index: FakeIndex) -> None:
    # Listed by the index but without a wheel to serve.
    with pytest.raises(SourceError) as caught:
        PypiSource().tree("v0.5.8")
    assert str(caught.value) == (
        "cannot download sglang==0.5.8 from the package index "
        "(pip: its index has no sglang==0.5.8 archive for this platform)"
    )


def test_an_index_that_lists_no_sglang_says_so_rather_than_quoting_pip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pip without retries (or behind some proxies) prints no connection error, only this.
    script = tmp_path / "no_match_pip.sh"
    script.write_text(
        "#!/bin/sh\necho 'ERROR: No matching distribution found for sglang' >&2\nexit 1\n"
    )
    script.chmod(0o755)
    monkeypatch.setenv("TRACKER_PIP", str(script))
    with pytest.raises(SourceError) as caught:
        PypiSource().versions()
    assert str(caught.value).endswith("(pip: its index has no sglang archive for this platform)")


# -- archives ---------------------------------------------------------------------------------


def test_wheel_paths_are_mapped_to_repo_paths_and_only_python_files_listed(
    index: FakeIndex,
) -> None:
    tree = PypiSource().tree("v0.5.9")
    assert set(tree.files) == {
        "python/sglang/__init__.py",
        "python/sglang/srt/__init__.py",
        WORKER,
    }
    assert tree.files[WORKER] == content_id(WORKER_TEXT * 50)
    assert tree.identity.location == "sglang-0.5.9-py3-none-any.whl"


def test_a_downloaded_archive_is_kept_in_the_cache_with_its_file_index(
    index: FakeIndex, cache: Path
) -> None:
    tree = PypiSource().tree("v0.5.9")
    archive = cache / "sglang-0.5.9-py3-none-any.whl"
    assert archive.read_bytes() == (index.wheels / archive.name).read_bytes()
    listed = json.loads((cache / (archive.name + ".files.json")).read_text())
    assert listed["files"] == dict(tree.files)
    assert [path.name for path in cache.iterdir() if path.name.startswith(".")] == []


def test_a_truncated_cached_archive_is_fetched_again(index: FakeIndex, cache: Path) -> None:
    PypiSource().tree("v0.5.9")
    archive = cache / "sglang-0.5.9-py3-none-any.whl"
    archive.write_bytes(archive.read_bytes()[:200])
    tree = PypiSource().tree("v0.5.9")
    assert tree.read(WORKER) == WORKER_TEXT * 50
    assert len(index.calls("download")) == 2
    assert zipfile.ZipFile(archive).testzip() is None


def test_a_cached_archive_with_a_corrupt_member_is_fetched_again(
    index: FakeIndex, cache: Path
) -> None:
    PypiSource().tree("v0.5.9")
    archive = cache / "sglang-0.5.9-py3-none-any.whl"
    data = bytearray(archive.read_bytes())
    with zipfile.ZipFile(archive) as opened:
        info = opened.getinfo("sglang/srt/speculative/eagle_worker.py")
    # Inside the member's compressed bytes: the zip still opens, only its CRC check fails.
    middle = info.header_offset + 30 + len(info.filename) + info.compress_size // 2
    data[middle] ^= 0xFF
    archive.write_bytes(bytes(data))

    tree = PypiSource().tree("v0.5.9")
    assert tree.read(WORKER) == WORKER_TEXT * 50
    assert len(index.calls("download")) == 2


def test_a_missing_or_corrupt_file_index_is_rebuilt_without_downloading(
    index: FakeIndex, cache: Path
) -> None:
    expected = dict(PypiSource().tree("v0.5.9").files)
    index_file = cache / "sglang-0.5.9-py3-none-any.whl.files.json"
    for damage in ("{not json", None):
        if damage is None:
            index_file.unlink()
        else:
            index_file.write_text(damage)
        assert dict(PypiSource().tree("v0.5.9").files) == expected
        assert json.loads(index_file.read_text())["files"] == expected
    assert len(index.calls("download")) == 1


def test_a_file_index_left_from_another_archive_is_not_trusted(
    index: FakeIndex, cache: Path
) -> None:
    PypiSource().tree("v0.5.9")
    index_file = cache / "sglang-0.5.9-py3-none-any.whl.files.json"
    stale = json.loads(index_file.read_text())
    stale["files"][WORKER] = "0" * 40
    stale["sha256"] = "0" * 64
    index_file.write_text(json.dumps(stale))
    assert PypiSource().tree("v0.5.9").files[WORKER] == content_id(WORKER_TEXT * 50)


def test_an_archive_without_sglang_srt_is_not_sglang(index: FakeIndex) -> None:
    (index.wheels / "sglang-0.5.10-py3-none-any.whl").unlink()
    build_wheel(index.wheels, "0.5.10", with_srt=False)
    with pytest.raises(NotSGLangError, match="has no sglang/srt/"):
        PypiSource().tree("v0.5.10")


def test_a_damaged_archive_from_the_index_is_rejected_and_not_cached(
    index: FakeIndex, cache: Path
) -> None:
    served = index.wheels / "sglang-0.5.10-py3-none-any.whl"
    served.write_bytes(served.read_bytes()[:100])
    with pytest.raises(SourceError, match="damaged archive"):
        PypiSource().tree("v0.5.10")
    assert not (cache / served.name).exists()


# -- fetch, and a cache that cannot be written ----------------------------------------------------


def test_fetch_with_the_index_out_of_reach_fails_and_lists_nothing(index: FakeIndex) -> None:
    PypiSource().versions()  # a cached list exists: fetch must not pass it off as fresh
    index.go_offline()
    with pytest.raises(SourceError, match=r"^the package index could not be reached") as caught:
        PypiSource().fetch()
    assert "Connection refused" in str(caught.value) and "unchanged" in str(caught.value)


def test_the_fetch_command_exits_2_without_claiming_it_listed_anything(index: FakeIndex) -> None:
    PypiSource().versions()
    index.go_offline()
    result = CliRunner().invoke(cli, ["fetch", "--source", "pypi"])
    assert result.exit_code == 2, result.output
    assert "listed" not in result.stdout
    assert result.stderr.startswith("tracker: error: the package index could not be reached")


def test_an_unwritable_cache_lists_and_downloads_uncached_with_one_warning(
    index: FakeIndex, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    source = PypiSource(archive_dir=blocker / "pypi")  # no folder can be made there
    with caplog.at_level(logging.WARNING, logger="tracker"):
        assert source.versions()[-1] == "v0.5.10"
        assert source.tree("v0.5.9").files[WORKER] == content_id(WORKER_TEXT * 50)
        assert source.tree("v0.5.10").files[WORKER] == content_id(WORKER_TEXT * 50)
    assert source.warnings == []
    [warning] = [r.getMessage() for r in caplog.records]
    assert warning.startswith(f"cannot write to the cache in {blocker / 'pypi'} (Not a directory)")


def test_a_download_failing_on_a_full_disk_says_so_not_exception(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "full_disk_pip.sh"
    script.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = index ]; then echo "sglang (0.5.9)"; echo "Available versions: 0.5.9";'
        " exit 0; fi\n"
        "echo 'ERROR: Exception:' >&2\n"
        "echo 'Traceback (most recent call last):' >&2\n"
        "echo '  File \"pip/_internal/cli/base_command.py\", line 180, in exc_logging' >&2\n"
        "echo 'OSError: [Errno 28] No space left on device' >&2\n"
        "exit 2\n"
    )
    script.chmod(0o755)
    monkeypatch.setenv("TRACKER_PIP", str(script))
    with pytest.raises(SourceError) as caught:
        PypiSource().tree("v0.5.9")
    assert str(caught.value) == (
        "cannot download sglang==0.5.9 from the package index "
        "(pip: OSError: [Errno 28] No space left on device)"
    )


def test_a_listing_started_early_is_the_one_versions_answers_with(
    index: FakeIndex, cache: Path
) -> None:
    source = PypiSource(cache)
    source.start_listing()
    source.start_listing()  # asked once, however often it is started
    listed = source.versions()
    assert listed == PypiSource(cache).versions()  # what a plain listing gives
    assert len(index.calls("index versions")) == 2  # one each, none twice
