"""The one interface every SGLang source (git, PyPI release archives, a directory) offers.

Everything downstream sees only `VersionTree`: repo paths (`python/sglang/srt/...`), a
content id per file (the git blob sha1 of its bytes, identical for every source, so the
facts cache is shared) and the bytes on demand.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass

SRT_PREFIX = "python/sglang/srt/"


def content_id(data: bytes) -> str:
    """The git blob id of `data`: what `git hash-object` prints for the same bytes."""
    header = b"blob %d\x00" % len(data)
    return hashlib.sha1(header + data, usedforsecurity=False).hexdigest()


@dataclass(frozen=True)
class SourceIdentity:
    """Which bytes a version was read from: enough to tell a fork's v0.5.9 from the release."""

    kind: str  # "git" | "pypi" | "dir"
    location: str  # repository path/URL, archive file name, or directory path
    version: str  # the canonical version name (tag), e.g. "v0.5.9"
    revision: str  # commit sha, archive sha256, or "" for a directory


class VersionTree(ABC):
    """The Python files of one SGLang version below `python/sglang/`."""

    identity: SourceIdentity

    @property
    @abstractmethod
    def files(self) -> Mapping[str, str]:
        """Repo path -> content id, for every `.py` file under `python/sglang/`."""

    @abstractmethod
    def read(self, path: str) -> bytes:
        """The bytes of one file listed in `files`; raises KeyError for other paths."""


class Source(ABC):
    """A place SGLang versions come from."""

    kind: str
    location: str

    @abstractmethod
    def versions(self) -> list[str]:
        """Every version the source knows, oldest first, as tags (`v0.5.9`)."""

    @abstractmethod
    def resolve(self, spec: str) -> str:
        """Canonical version name for one spec (`0.5.9`, `v0.5.9`, `latest`, a commit-ish
        for git); raises UnknownVersionError naming the nearest known versions."""

    # Not abstract: only the package index leaves releases out; git and dir serve all.
    def refuse_unanalysable(self, spec: str) -> None:  # noqa: B027
        """Raise a TrackerError saying why when `spec` names a version this source leaves
        out on purpose (a release from before speculative decoding); else do nothing."""

    @abstractmethod
    def tree(self, version: str) -> VersionTree:
        """The files of a resolved version; raises NotSGLangError when it holds no
        `python/sglang/srt/`."""

    def describe(self) -> str:
        return f"{self.kind}:{self.location}"
