"""SGLang read from a plain directory: a patched working copy or an unpacked release.

The seed's situation: someone has patched their SGLang files by hand and wants to know
whether the patch is complete. Such a tree has no tag and may not be committed, so it is
one version named `local`, identified by what its files contain.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from tracker.common.atomic import write_text_atomic
from tracker.common.cachedir import cache_root
from tracker.common.errors import NotSGLangError, SourceError, UnknownVersionError
from tracker.common.regular import NotRegularFile, read_regular
from tracker.sources.base import (
    MAX_FILE_BYTES,
    Source,
    SourceIdentity,
    VersionTree,
    content_id,
    is_utf8_path,
    pyproject_requirements,
    requires_dist,
    skip_file,
    too_large,
)

LOCAL = "local"
REPO_SGLANG = "python/sglang"


class DirTree(VersionTree):
    """The `.py` files below one directory's `sglang/`, listed with their content ids."""

    def __init__(self, identity: SourceIdentity, root: Path, files: Mapping[str, str]) -> None:
        self.identity = identity
        self._root = root  # the directory that maps to `python/sglang`
        self._files = MappingProxyType(dict(files))

    def requirements(self) -> tuple[list[str], str] | None:
        """`pyproject.toml` beside `sglang/` (a checkout's `python/`), else the METADATA of
        an unpacked release wheel."""
        parent = self._root.parent
        try:
            pyproject = parent / "pyproject.toml"
            if pyproject.is_file():
                text = pyproject.read_text(encoding="utf-8", errors="replace")
                return pyproject_requirements(text), str(pyproject)
            for metadata in sorted(parent.glob("sglang-*.dist-info/METADATA")):
                text = metadata.read_text(encoding="utf-8", errors="replace")
                return requires_dist(text), str(metadata)
        except OSError:
            return None
        return None

    @property
    def files(self) -> Mapping[str, str]:
        return self._files

    def read(self, path: str) -> bytes:
        expected = self._files[path]
        disk_path = self._root / path.removeprefix(REPO_SGLANG + "/")
        try:
            data = read_regular(disk_path)
        except OSError as error:
            raise SourceError(f"cannot read {disk_path}: {error.strerror}") from None
        # Facts are cached by content id: bytes that no longer match the listed id would
        # be stored under the wrong key, so a file edited mid-run must stop the run.
        if content_id(data) != expected:
            raise SourceError(f"{disk_path} changed while it was being read; run again")
        return data


class DirSource(Source):
    """A directory holding `python/sglang/srt/` (a checkout) or `sglang/srt/` (a release)."""

    kind = "dir"

    def __init__(self, path: str | os.PathLike[str], *, cwd: Path | None = None) -> None:
        directory = Path(path).expanduser()
        if not directory.is_absolute():
            directory = (cwd or Path.cwd()) / directory
        directory = directory.resolve()
        if not directory.is_dir():
            what = "is not a directory" if directory.exists() else "does not exist"
            raise SourceError(f"{directory} {what}")
        for candidate in (directory / REPO_SGLANG, directory / "sglang"):
            if (candidate / "srt").is_dir():
                _refuse_linked(directory, candidate / "srt")
                self.sglang_root = candidate
                break
        else:
            raise NotSGLangError(
                f"{directory} has neither python/sglang/srt/ nor sglang/srt/: not an SGLang tree"
            )
        self.location = str(directory)
        self._tree: DirTree | None = None

    def versions(self) -> list[str]:
        return [LOCAL]

    def resolve(self, spec: str) -> str:
        # A directory holds exactly one version. Any other name would be answered with the
        # directory's files under that name, a release's answer that is not the release's.
        if spec in (LOCAL, "latest"):
            return LOCAL
        raise UnknownVersionError(
            f"{self.describe()} holds one version, {LOCAL}, not {spec}; ask for {LOCAL}, or "
            f"compare the two with `tracker diff {spec} {self.describe()}`"
        )

    def tree(self, version: str = LOCAL) -> DirTree:
        if self._tree is None:
            files = _list_python_files(self.sglang_root)
            listing = "".join(f"{path}\0{cid}\n" for path, cid in sorted(files.items()))
            revision = hashlib.sha1(listing.encode(), usedforsecurity=False).hexdigest()
            identity = SourceIdentity(
                kind=self.kind, location=self.location, version=LOCAL, revision=revision
            )
            self._tree = DirTree(identity, self.sglang_root, files)
        return self._tree

    def fetch(self) -> str:
        return f"{self.location} is a directory: nothing to fetch"


def _refuse_linked(directory: Path, srt: Path) -> None:
    """A symlinked `srt/` (or folder above it, or `srt/models/`) is not followed, as git
    does not follow it: say so, rather than analyse a tree without it (no model class
    checked, and exit 0)."""
    for folder in (srt.parent.parent, srt.parent, srt, srt / "models"):
        if folder != directory and folder.is_symlink():
            raise NotSGLangError(
                f"{folder} is a symlink, not followed: give dir: the tree it points to"
            )


def _list_python_files(root: Path) -> dict[str, str]:
    """Repo path -> content id of every regular `.py` file below `root`.

    Symbolic links are skipped, as the git source skips them, so a checkout read from disk
    and the same commit read from git list the same files; a linked directory is said in a
    warning (a linked `srt/` or `models/` would otherwise read as a tree without them).
    So are files whose name is not UTF-8 and files over MAX_FILE_BYTES. A file whose size,
    mtime and inode are those recorded at the last listing keeps its content id unread
    (`_Listing`), so only what was edited since is read and hashed.
    """
    listing = _Listing(root)
    files: dict[str, str] = {}
    todo = [str(root)]
    # Plain strings, not Paths: a Path per file costs more than the stat.
    cut = len(todo[0]) + 1
    while todo:
        folder = todo.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as error:
            raise SourceError(f"cannot read {folder}: {error.strerror}") from None
        for entry in sorted(entries, key=lambda e: e.name):
            relative = entry.path[cut:].replace(os.sep, "/")
            if entry.is_symlink():
                if entry.is_dir():  # followed here only to say it is not followed
                    skip_file(f"{REPO_SGLANG}/{relative}/", "not followed: symlink")
                continue
            if entry.is_dir():
                if entry.name != "__pycache__":
                    todo.append(entry.path)
            elif entry.name.endswith(".py") and entry.is_file():
                repo_path = f"{REPO_SGLANG}/{relative}"
                if not is_utf8_path(repo_path):
                    skip_file(repo_path, "its name is not UTF-8")
                    continue
                cid = listing.content_id(relative, entry, repo_path)
                if cid is not None:
                    files[repo_path] = cid
    listing.save()
    return dict(sorted(files.items()))


# A file changed less than this long before it was listed may change again within the same
# mtime tick: its id is not remembered (git's "racy" entries).
_RACY_SECONDS = 2.0


class _Listing:
    """The content ids of one directory's files at its last listing, by (size, mtime,
    inode), in the user cache (`listings/`); a damaged or missing record is rebuilt."""

    def __init__(self, root: Path) -> None:
        self.root = str(root)
        key = hashlib.sha1(self.root.encode(), usedforsecurity=False).hexdigest()
        self.path = cache_root() / "listings" / f"{key}.json"
        self.before: dict[str, list[Any]] = {}
        self.now: dict[str, list[Any]] = {}
        self.started = time.time()
        try:
            loaded = json.loads(self.path.read_text(encoding="utf-8"))
            if isinstance(loaded, dict) and loaded.get("root") == self.root:
                self.before = loaded["files"]
        except (OSError, ValueError, KeyError, TypeError):
            pass

    def content_id(self, relative: str, entry: os.DirEntry[str], repo_path: str) -> str | None:
        """The file's content id; None (with a warning) for a file over MAX_FILE_BYTES or
        one that stopped being a regular file."""
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError as error:
            raise SourceError(f"cannot read {entry.path}: {error.strerror}") from None
        if info.st_size > MAX_FILE_BYTES:
            skip_file(repo_path, too_large(info.st_size))
            return None
        stamp = [info.st_size, info.st_mtime_ns, info.st_ino]
        known = self.before.get(relative)
        if isinstance(known, list) and known[:3] == stamp and isinstance(known[3], str):
            cid: str = known[3]
        else:
            try:
                data = read_regular(Path(entry.path), MAX_FILE_BYTES)
            except NotRegularFile as error:
                if error.errno == errno.EFBIG:
                    skip_file(repo_path, too_large(info.st_size))
                return None  # a FIFO or device put in place of the file: skipped like one
            except OSError as error:
                raise SourceError(f"cannot read {entry.path}: {error.strerror}") from None
            cid = content_id(data)
        if info.st_mtime_ns / 1e9 < self.started - _RACY_SECONDS:
            self.now[relative] = [*stamp, cid]
        return cid

    def save(self) -> None:
        if self.now == self.before:
            return
        # A read-only cache costs speed, not correctness.
        with contextlib.suppress(OSError):
            write_text_atomic(self.path, json.dumps({"root": self.root, "files": self.now}))
