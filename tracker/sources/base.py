"""The one interface every SGLang source (git, PyPI release archives, a directory) offers.

Everything downstream sees only `VersionTree`: repo paths (`python/sglang/srt/...`), a
content id per file (the git blob sha1 of its bytes, identical for every source, so the
facts cache is shared) and the bytes on demand.
"""

from __future__ import annotations

import hashlib
import logging
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from packaging.utils import canonicalize_name

from tracker.common.errors import TrackerError
from tracker.sources.versions import canonical_tag

log = logging.getLogger(__name__)

SRT_PREFIX = "python/sglang/srt/"
# Real SGLang source files stay under 400 KB (the largest in v0.4.3.post3 … v0.5.23,
# server_args.py of v0.5.16, is 375 KB). A file ten times that is generated or hostile:
# parsing a 50 MB one took minutes and gigabytes, so it is skipped, with a warning.
MAX_FILE_BYTES = 4 * 1024 * 1024
VERSION_FILE = "python/sglang/version.py"
# From v0.5.7 version.py asks setuptools-scm, and the version is a literal only in the
# `_version.py` it generates into every wheel (`__version__ = version = '0.5.9'`).
SCM_VERSION_FILE = "python/sglang/_version.py"
_VERSION_ASSIGN = re.compile(
    r"""^__version__\s*=\s*(?:[A-Za-z_]\w*\s*=\s*)*["']([^"']+)["']""", re.MULTILINE
)


_skipped: set[tuple[str, str]] = set()


def skip_file(path: str, reason: str) -> None:
    """Warn (once per path and reason in a process: a range lists a file once per version)
    that a file of the tree is left out of the analysis, and why."""
    if (path, reason) in _skipped:
        return
    _skipped.add((path, reason))
    log.warning("skipped %s: %s", shown_path(path), reason)


def too_large(size: int) -> str:
    return f"{size / 1024 / 1024:.1f} MB is over the {MAX_FILE_BYTES // 1024 // 1024} MB limit"


def is_utf8_path(path: str) -> bool:
    """False for a name that is not UTF-8 (os and git hand those over with surrogates)."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown_path(path: str) -> str:
    """`path` as it can be printed: bytes that are not UTF-8 shown escaped."""
    if is_utf8_path(path):
        return path
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


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


@dataclass(frozen=True)
class Pins:
    """The exact versions (`torch==2.9.1`) a version's packaging metadata pins.

    External base classes (`torch.nn.Module`, `transformers.PreTrainedModel`) provide
    different members in different releases of their package: the pins say which release
    of each a version of SGLang runs with.
    """

    versions: tuple[tuple[str, str], ...] = ()  # (canonical package name, version), sorted
    origin: str = ""  # where they were read, or "" when the tree has no packaging metadata
    release: str = ""  # the SGLang release the tree is (`v0.5.9`), when it says so

    def get(self, package: str) -> str | None:
        wanted = canonicalize_name(package)
        return next((v for name, v in self.versions if name == wanted), None)


def pins_from_requirements(lines: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """`torch==2.9.1` and the like, from requirement strings (Requires-Dist values,
    pyproject dependencies). An unconditional pin wins over one under a marker (an extra
    such as `cu130`); among several of one kind, the first listed."""
    # Deferred, as in pyproject_requirements: a command answered from snapshots reads no
    # pins, and these modules are a tenth of the start-up of one.
    from packaging.markers import Marker
    from packaging.requirements import InvalidRequirement, Requirement

    unconditional: dict[str, str] = {}
    conditional: dict[str, str] = {}
    for line in lines:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        specs = list(req.specifier)
        if len(specs) != 1 or specs[0].operator not in ("==", "===") or "*" in specs[0].version:
            continue
        chosen = conditional if isinstance(req.marker, Marker) else unconditional
        chosen.setdefault(canonicalize_name(req.name), specs[0].version)
    merged = {**conditional, **unconditional}
    return tuple(sorted(merged.items()))


def requires_dist(metadata: str) -> list[str]:
    """The `Requires-Dist:` values of a wheel's METADATA file."""
    return [
        line.partition(":")[2].strip()
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist:")
    ]


def pyproject_requirements(text: str) -> list[str]:
    """`[project] dependencies` then every optional-dependency group, in file order."""
    import tomllib

    try:
        project = tomllib.loads(text).get("project", {})
    except tomllib.TOMLDecodeError:
        return []
    if not isinstance(project, dict):
        return []
    out = [d for d in project.get("dependencies", []) if isinstance(d, str)]
    optional = project.get("optional-dependencies", {})
    if isinstance(optional, dict):
        for group in optional.values():
            if isinstance(group, list):
                out += [d for d in group if isinstance(d, str)]
    return out


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

    def requirements(self) -> tuple[list[str], str] | None:
        """The version's requirement strings and where they were read (a wheel's METADATA,
        `python/pyproject.toml`), or None when the source has no packaging metadata."""
        return None

    def pins(self) -> Pins:
        found = self.requirements()
        versions, origin = (pins_from_requirements(found[0]), found[1]) if found else ((), "")
        return Pins(versions, origin, self._release_name())

    def _release_name(self) -> str:
        """`v0.5.9` from the version name, else from `python/sglang/version.py` or the
        `_version.py` setuptools-scm writes beside it."""
        tag = canonical_tag(self.identity.version)
        if tag is not None:
            return tag
        for path in (VERSION_FILE, SCM_VERSION_FILE):
            if path not in self.files:
                continue
            try:
                text = self.read(path).decode("utf-8", "replace")
            except (KeyError, OSError, TrackerError):
                continue
            match = _VERSION_ASSIGN.search(text)
            tag = canonical_tag(match.group(1)) if match else None
            if tag is not None:
                return tag
        return ""


class Source(ABC):
    """A place SGLang versions come from."""

    kind: str
    location: str
    # Things the user should hear about but that did not stop the work (the CLI shows
    # them after the command's output), e.g. a cached list of releases used instead of the
    # unreachable index. Only the package index has any.
    warnings: Sequence[str] = ()

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

    @abstractmethod
    def fetch(self) -> str:
        """Bring the list of versions up to date (git tags, the index's releases); says
        what changed, in one line."""

    def commit_of(self, version: str) -> str | None:
        """The commit a resolved version is, for sources made of commits (git); else None.
        A commit names its content, so what was computed for it can be found without
        listing its files."""
        return None

    def describe(self) -> str:
        return f"{self.kind}:{self.location}"
