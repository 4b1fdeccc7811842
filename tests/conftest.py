"""Fixtures shared by every test.

Each test runs with a fresh cache and none of the developer's `TRACKER_*` settings or git
configuration, so results do not depend on the machine. Tests that need real SGLang
releases share one cache kept across runs (downloaded once).
"""

from __future__ import annotations

import itertools
import os
import subprocess
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

import pytest

from bench.build_replay_repo import ReplayHistory, replay_trees
from tracker.extract import pack, store
from tracker.sources import clear_memo
from tracker.sources.base import VersionTree
from tracker.sources.pypi import PypiSource

# pytester: a test can run a session of this suite's own fixtures (tests/cli/test_fresh_cache.py)
pytest_plugins = ["pytester"]

REAL_CACHE_ENV = "TRACKER_TEST_CACHE"
DEFAULT_REAL_CACHE = Path.home() / ".cache" / "sglang-tracker-tests"

GitRunner = Callable[..., str]
RepoFactory = Callable[..., Path]
Replayer = Callable[[str, str], ReplayHistory]


# -- isolation ------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _isolated_environment(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    for name in ("TRACKER_REPO", "TRACKER_PIP", "TRACKER_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    if "use_real_cache" not in request.fixturenames:
        monkeypatch.setenv("TRACKER_CACHE_DIR", str(tmp_path / "cache"))
    # The developer's ~/.gitconfig (signing, hooks, default branch) must not leak in.
    empty_config = tmp_path / "gitconfig"
    empty_config.touch()
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(empty_config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Test")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "test@example.invalid")
    clear_memo()
    # The shipped facts are on unless a test (or a workspace it made) turns them off; the
    # pack is opened afresh, so a test that swapped it leaves nothing behind.
    store.use_shipped(True)
    pack.forget_shipped()
    yield
    clear_memo()  # closes the git helper processes of the sources the test opened
    store.use_shipped(True)
    pack.forget_shipped()


# -- throwaway git repositories --------------------------------------------------------------


def _run_git(repo: Path, *args: str) -> str:
    result = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {result.stderr}")
    return result.stdout


@pytest.fixture
def git() -> GitRunner:
    """`git(repo, *args) -> stdout`, failing the test when git fails."""
    return _run_git


@pytest.fixture
def make_git_repo(tmp_path: Path) -> RepoFactory:
    """`make_git_repo({tag: {path: text}}, annotated=True, name=None) -> Path`.

    One commit per tag, in the order given, each holding exactly the files listed for it
    (files of the previous tag that are not listed are deleted), so a history reads as a
    series of snapshots. `annotated` chooses annotated or lightweight tags.
    """
    numbers = itertools.count()

    def make(
        history: Mapping[str, Mapping[str, str]],
        *,
        annotated: bool = True,
        name: str | None = None,
    ) -> Path:
        repo = tmp_path / (name or f"repo{next(numbers)}")
        repo.mkdir(parents=True)
        _run_git(repo, "init", "-q", "-b", "main")
        # One fast-import stream instead of add/commit/tag per snapshot: tests build many
        # repositories, and a process per step made that the slowest part of the suite.
        stream = bytearray()
        for number, (tag, files) in enumerate(history.items(), start=1):
            when = b"%d +0000" % (1_700_000_000 + number * 60)
            message = f"release {tag}\n".encode()
            stream += b"commit refs/heads/main\nmark :%d\n" % number
            stream += b"author Test <test@example.invalid> %s\n" % when
            stream += b"committer Test <test@example.invalid> %s\n" % when
            stream += b"data %d\n%s" % (len(message), message)
            stream += b"deleteall\n"
            for path, text in files.items():
                data = text.encode()
                stream += b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data)
            stream += b"\n"
            if annotated:
                stream += b"tag %s\nfrom :%d\n" % (tag.encode(), number)
                stream += b"tagger Test <test@example.invalid> %s\n" % when
                stream += b"data %d\n%s" % (len(message), message)
            else:
                stream += b"reset refs/tags/%s\nfrom :%d\n\n" % (tag.encode(), number)
        subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, input=bytes(stream), check=True)
        if history:
            _run_git(repo, "reset", "-q", "--hard", "main")
        return repo

    return make


# -- real SGLang releases ---------------------------------------------------------------------


@pytest.fixture(scope="session")
def real_cache() -> Path:
    """The cache of real release archives, kept across runs (`TRACKER_TEST_CACHE`)."""
    root = Path(os.environ.get(REAL_CACHE_ENV) or DEFAULT_REAL_CACHE)
    root.mkdir(parents=True, exist_ok=True)
    return root


@pytest.fixture
def use_real_cache(real_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point TRACKER_CACHE_DIR at the persistent real cache for this test."""
    monkeypatch.setenv("TRACKER_CACHE_DIR", str(real_cache))
    return real_cache


@pytest.fixture(scope="session")
def real_pypi(real_cache: Path) -> PypiSource:
    """One PypiSource over the real cache for the session, so each release is read once."""
    return PypiSource(real_cache / "pypi")


def stock_release_cache(source: PypiSource, tags: Iterable[str]) -> None:
    """Put the list of releases and the archives of `tags` into `source`'s cache through the
    real pip, fetching only what is missing (a warm cache needs no network).

    Runs with `TRACKER_PIP=false` read nothing but the cache, so whatever they need must be
    there before they start, not left to whichever test happened to download it first. The
    list is needed too: without it a command lists the cached archives, which depend on what
    other tests fetched.
    """
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("TRACKER_PIP", raising=False)
        if not (source.archive_dir / "versions.json").is_file():
            source.fetch()
            if source.warnings:
                raise AssertionError(
                    "the test cache has no list of sglang releases and it could not be "
                    f"fetched: {source.warnings[-1]}"
                )
        for tag in tags:
            source.archive(tag)


@pytest.fixture(scope="session")
def stocked_releases(real_pypi: PypiSource, real_cache: Path) -> Callable[..., Path]:
    """`stocked_releases(*tags) -> the real cache`, holding the release list and `tags`
    (see `stock_release_cache`); each release is fetched at most once per session."""
    done: set[str] = set()

    def stock(*tags: str) -> Path:
        stock_release_cache(real_pypi, [tag for tag in tags if tag not in done])
        done.update(tags)
        return real_cache

    return stock


@pytest.fixture
def real_tree(real_pypi: PypiSource, use_real_cache: Path) -> Callable[[str], VersionTree]:
    """`real_tree("v0.5.9") -> VersionTree` of a real release (downloaded once, then cached)."""
    return real_pypi.tree


@pytest.fixture(scope="session")
def replayed_history(real_pypi: PypiSource, tmp_path_factory: pytest.TempPathFactory) -> Replayer:
    """`replayed_history("v0.5.8", "v0.5.9") -> ReplayHistory`: a git repository whose history
    replays the change between two real releases one file per commit, tags at both ends
    (bench/build_replay_repo.py says how). Built once per pair per session."""
    built: dict[tuple[str, str], ReplayHistory] = {}

    def replay(old: str, new: str) -> ReplayHistory:
        if (old, new) not in built:
            # Through the session's source: missing releases are fetched into the real cache.
            repo = tmp_path_factory.mktemp("replay") / "repo"
            built[old, new] = replay_trees(repo, real_pypi.tree(old), real_pypi.tree(new))
        return built[old, new]

    return replay


# -- goldens ------------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-goldens",
        action="store_true",
        help="rewrite the expected renders under tests/cli/goldens/ instead of comparing",
    )


@pytest.fixture
def update_goldens(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-goldens"))
