"""Choosing where SGLang's source comes from: an explicit `--source`, `--repo`, the current
checkout, or the released archives on the package index.

Sources are kept per process (and each keeps its trees), so naming the same repository or
release twice in one command reads and lists it once.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from tracker.common.cachedir import cache_root
from tracker.common.errors import TrackerError
from tracker.sources.base import Source, VersionTree
from tracker.sources.dir import LOCAL, DirSource
from tracker.sources.pypi import PypiSource
from tracker.sources.versions import expand_range, is_range, range_ends

__all__ = [
    "DirSource",
    "GitSource",
    "PypiSource",
    "Source",
    "VersionTree",
    "clear_memo",
    "expand_spec",
    "open_source",
    "split_spec",
]

SOURCE_FORMS = "pypi, git:PATH_OR_URL or dir:PATH"

# A URL's user name, `https://user` before `@host/...`, or `git` before `@host:path`.
_URL_USER = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/@]*")
_SCP_USER = re.compile(r"[\w.-]+")
_SCP_HOST = re.compile(r"[\w.-]+:")

_memo: dict[tuple[str, str], Source] = {}


def open_source(source: str | None, repo: str | None, cwd: Path) -> Source:
    """The source a command reads from.

    `source` is `--source` (`pypi`, `git:PATH_OR_URL`, `dir:PATH`) and wins when given;
    `repo` is `--repo`/`TRACKER_REPO`. With neither: `TRACKER_REPO`, else the git checkout
    around `cwd` when its HEAD holds `python/sglang/srt/`, else the package index.
    """
    if source is not None:
        return _open_named(source, repo, cwd)
    if repo:
        return _git(repo, cwd)
    from_env = os.environ.get("TRACKER_REPO")
    if from_env:
        return _git(from_env, cwd)
    checkout = _checkout_at(cwd)
    if checkout is not None:
        return _git(str(checkout), cwd)
    return _pypi()


def _checkout_at(cwd: Path) -> Path | None:
    """The SGLang checkout around `cwd` (tracker.sources.git). gitpython takes a tenth of a
    second to import: a directory with no `.git` above it is not asked."""
    if not any((folder / ".git").exists() for folder in (cwd, *cwd.parents)):
        return None
    from tracker.sources.git import sglang_checkout_at

    return sglang_checkout_at(cwd)


def __getattr__(name: str) -> object:
    # GitSource is imported on first use, with gitpython (see _checkout_at).
    if name == "GitSource":
        from tracker.sources.git import GitSource

        return GitSource
    raise AttributeError(name)


def split_spec(spec: str, default: Source, cwd: Path | None = None) -> tuple[Source, str]:
    """(source, resolved version) for one version spec.

    `dir:PATH` and `git:PATH_OR_URL@REV` name their own source (the seed's patched working
    copy compared against a release); `git:PATH` alone means its HEAD. Anything else is
    resolved on `default`.
    """
    base = cwd or Path.cwd()
    if is_range(spec) and not spec.startswith(("dir:", "git:")):
        raise TrackerError(f"{spec} is a range; give one version here")
    if spec.startswith("dir:"):
        source: Source = _dir(spec.removeprefix("dir:"), base)
        return source, source.resolve(LOCAL)
    if spec.startswith("git:"):
        location, rev = _split_git_spec(spec.removeprefix("git:"))
        source = _git(location, base)
        return source, source.resolve(rev)
    return default, default.resolve(spec)


def expand_spec(source: Source, spec: str) -> list[str]:
    """The versions one spec names on `source`: every release of a range `A..B` (release
    order, both ends included), else the one resolved version."""
    if is_range(spec):
        for end in range_ends(spec):
            source.refuse_unanalysable(end)
        # A range's ends are matched against the source's releases, then resolved by the
        # source itself so the names are the ones it serves.
        return [source.resolve(name) for name in expand_range(spec, source.versions())]
    return [source.resolve(spec)]


def clear_memo() -> None:
    """Forget the sources opened so far (tests; a long-running process after `fetch`)."""
    for source in _memo.values():
        close = getattr(source, "close", None)
        if source.kind == "git" and close is not None:  # its helper processes
            close()
    _memo.clear()


def _open_named(source: str, repo: str | None, cwd: Path) -> Source:
    kind, _, location = source.partition(":")
    if kind == "pypi" and not location:
        return _pypi()
    if kind == "git":
        if location:
            return _git(location, cwd)
        if repo:
            return _git(repo, cwd)
        checkout = _checkout_at(cwd)
        if checkout is None:
            raise TrackerError(
                "--source git needs a repository: git:PATH_OR_URL, --repo, or run inside an "
                "SGLang checkout"
            )
        return _git(str(checkout), cwd)
    if kind == "dir" and location:
        return _dir(location, cwd)
    raise TrackerError(f"unknown source {source!r}; use {SOURCE_FORMS}")


def _split_git_spec(text: str) -> tuple[str, str]:
    """`PATH_OR_URL@REV` -> (PATH_OR_URL, REV); without a REV, HEAD.

    The cut is the last `@` that starts neither a reflog selector (`HEAD@{1}`) nor the host
    after a user name (`git@github.com:...`, `https://user@host/...`).
    """
    at = len(text)
    while (at := text.rfind("@", 0, at)) > 0:
        location, rev = text[:at], text[at + 1 :]
        if rev.startswith("{") or _URL_USER.fullmatch(location):
            continue
        if _SCP_USER.fullmatch(location) and _SCP_HOST.match(rev):
            continue
        return location, rev
    return text, "HEAD"


def _key_path(location: str, cwd: Path, url: bool = False) -> str:
    if url:
        return location
    path = Path(location).expanduser()
    return str((path if path.is_absolute() else cwd / path).resolve())


def _git(location: str, cwd: Path) -> Source:
    from tracker.sources.git import GitSource, is_url

    key = ("git", _key_path(location, cwd, is_url(location)))
    if key not in _memo:
        _memo[key] = GitSource(location, cwd=cwd)
    return _memo[key]


def _dir(location: str, cwd: Path) -> Source:
    key = ("dir", _key_path(location, cwd))
    if key not in _memo:
        _memo[key] = DirSource(location, cwd=cwd)
    return _memo[key]


def _pypi() -> Source:
    # Keyed by the cache folder so a test (or a user) switching TRACKER_CACHE_DIR gets a
    # source that reads from the new one.
    key = ("pypi", str(cache_root()))
    if key not in _memo:
        _memo[key] = PypiSource()
    return _memo[key]
