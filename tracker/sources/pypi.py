"""SGLang versions read from the released `sglang` archives on the package index.

The default source when no repository is known. Archives come through pip itself, so
whatever index, mirror or proxy the user configured for pip applies here too; they are
kept in the cache and reused offline. Wheel paths (`sglang/...`) are mapped to repo paths
(`python/sglang/...`) so a release reads exactly like the tagged commit in git.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
import zlib
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import MappingProxyType
from typing import Any

from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version

from tracker.common.atomic import write_text_atomic
from tracker.common.cachedir import cache_root, cannot_write_cache
from tracker.common.errors import (
    NoSpeculativeDecodingError,
    NotSGLangError,
    SourceError,
    TrackerError,
)
from tracker.common.regular import read_regular, read_regular_text
from tracker.sources.base import (
    Source,
    SourceIdentity,
    VersionTree,
    content_id,
    requires_dist,
)
from tracker.sources.versions import (
    canonical_tag,
    is_range,
    match_version,
    parse_version,
    sort_versions,
)

PACKAGE = "sglang"
# The first release with a speculative worker, and so the oldest one the tool lists and
# analyses. Found in the archives on the index: v0.4.1.post2 and .post3 hold only a stub
# `sglang/srt/speculative/spec_info.py` (the enum, nothing uses it); v0.4.1.post4 adds
# `speculative/eagle_worker.py` (EAGLEWorker), the `--speculative-algorithm` server argument
# and the scheduler code that starts the worker. Earlier releases have no `speculative/`.
FIRST_SPECULATIVE_RELEASE = Version("0.4.1.post4")
WHEEL_ROOT = "sglang/"
WHEEL_SRT = "sglang/srt/"
REPO_PREFIX = "python/"

# From 0.5.11 on, sglang ships platform wheels (cp311 manylinux_2_34_x86_64); earlier ones
# are py3-none-any. Asking for one fixed platform gets both on any host, so the archive a
# version maps to does not depend on the machine.
PLATFORM_ARGS = (
    "--only-binary=:all:",
    "--platform",
    "manylinux_2_34_x86_64",
    "--platform",
    "manylinux2014_x86_64",
    "--python-version",
    "3.11",
    "--implementation",
    "cp",
)

# What reading a damaged zip raises: a bad directory, a short file, a broken deflate stream
# (zlib.error, which testzip() does not turn into a CRC report), an unknown compression.
_ZIP_DAMAGE = (zipfile.BadZipFile, OSError, EOFError, zlib.error, NotImplementedError)

# The cause pip mentions in its retry warnings ("... Failed to establish a new connection:
# [Errno 111] Connection refused')"), which its final error line leaves out.
_CONNECTION_ERROR = re.compile(
    r"(?:Failed to establish a new connection|ProxyError|SSLError|NameResolutionError)"
    r"[:(]\s*([^'\"]+)"
)

# pip's last line when the index has nothing that matches (or it did not answer at all).
_NO_MATCH = re.compile(r"No matching distribution found for (\S+)")

_INDEX_SCHEMA = "sglang-tracker/archive-index@1"
_VERSIONS_SCHEMA = "sglang-tracker/pypi-versions@1"


def wheel_path_to_repo_path(member: str) -> str:
    """`sglang/srt/x.py` -> `python/sglang/srt/x.py`."""
    return REPO_PREFIX + member


def repo_path_to_wheel_path(path: str) -> str:
    return path.removeprefix(REPO_PREFIX)


def wheel_python_members(archive: zipfile.ZipFile) -> list[str]:
    """The `.py` files below `sglang/` in a wheel (directory entries left out)."""
    return sorted(
        name
        for name in archive.namelist()
        if name.startswith(WHEEL_ROOT) and name.endswith(".py") and not name.endswith("/")
    )


class PypiTree(VersionTree):
    """The `.py` files of one release archive; the archive is opened on the first read."""

    def __init__(self, identity: SourceIdentity, archive: Path, files: Mapping[str, str]) -> None:
        self.identity = identity
        self.archive = archive
        self._files = MappingProxyType(dict(files))
        self._zip: zipfile.ZipFile | None = None

    @property
    def files(self) -> Mapping[str, str]:
        return self._files

    def read(self, path: str) -> bytes:
        if path not in self._files:
            raise KeyError(path)
        if self._zip is None:
            # Kept open: reopening the archive (thousands of entries) per file is slow.
            # ZipFile closes its file when collected, so an unclosed tree leaks nothing.
            self._zip = zipfile.ZipFile(self.archive)
        try:
            return self._zip.read(repo_path_to_wheel_path(path))
        except _ZIP_DAMAGE as error:
            raise SourceError(
                f"cannot read {path} from {self.archive}: {error}; delete the archive and run again"
            ) from None

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()
            self._zip = None

    def requirements(self) -> tuple[list[str], str] | None:
        """The `Requires-Dist` lines of the wheel's METADATA (the release's pins)."""
        try:
            with zipfile.ZipFile(self.archive) as opened:
                names = [n for n in opened.namelist() if _is_metadata(n)]
                if not names:
                    return None
                text = opened.read(names[0]).decode("utf-8", "replace")
        except _ZIP_DAMAGE:
            return None
        return requires_dist(text), f"the Requires-Dist of {self.archive.name}"


# One thread to ask the index for the list of releases while a command reads its snapshots.
_LISTER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tracker-list")


class PypiSource(Source):
    """Releases of the `sglang` package, fetched with pip and cached in `archive_dir`."""

    kind = "pypi"

    def __init__(self, archive_dir: Path | None = None) -> None:
        self.archive_dir = archive_dir if archive_dir is not None else cache_root() / "pypi"
        self.location = PACKAGE
        # Things the user should hear about but that did not stop the work (the CLI shows
        # them): e.g. the index was unreachable and the cached list of releases was used.
        self.warnings: list[str] = []
        self._versions: list[str] | None = None
        # The list being asked for on another thread (start_listing), if it is.
        self._listing: Future[list[str]] | None = None
        self._trees: dict[str, PypiTree] = {}
        self._scratch: Path | None = None  # downloads of this run when the cache is read-only

    # -- Source -------------------------------------------------------------------------------

    def versions(self) -> list[str]:
        """Releases with speculative decoding (FIRST_SPECULATIVE_RELEASE on), oldest first,
        asking the index; the cached list (plus the cached archives) when the index cannot be
        reached."""
        if self._versions is None:
            listing, self._listing = self._listing, None
            self._versions = listing.result() if listing else self._list_versions()
        return list(self._versions)

    def start_listing(self, reuse_within: float = 0.0) -> None:
        """Ask the index for the list of releases on another thread, now: pip takes about
        a second to start, which a command can spend reading what it already has.
        `versions()` then waits for that answer instead of asking again. A list the cache
        got from the index less than `reuse_within` seconds ago is taken as it is (a report
        over every release, run again, need not ask again)."""
        if self._versions is not None or self._listing is not None:
            return
        if reuse_within > 0:
            try:
                age = time.time() - self._versions_file.stat().st_mtime
            except OSError:
                age = reuse_within
            recent = self._read_cached_versions() if 0 <= age < reuse_within else []
            if recent:
                self._versions = recent
                return
        self._listing = _LISTER.submit(self._list_versions)

    def resolve(self, spec: str) -> str:
        if is_range(spec):
            raise TrackerError(f"{spec} is a range; give one version here")
        self.refuse_unanalysable(spec)
        tag = canonical_tag(spec)
        # A release already in the cache needs no index: this is what keeps work offline.
        # Nor does one the cached list names (releases are never withdrawn): a run over
        # many uncached releases asks the index once, not once per release.
        if (
            tag is not None
            and _supported(tag)
            and (self._cached_archive(tag) is not None or tag in self._read_cached_versions())
        ):
            return tag
        return match_version(spec, self.versions())

    def refuse_unanalysable(self, spec: str) -> None:
        # Decided from the version alone, so the answer needs no index and no download.
        version = parse_version(spec)
        if version is not None and version < FIRST_SPECULATIVE_RELEASE:
            raise NoSpeculativeDecodingError(
                f"{PACKAGE} {canonical_tag(spec)} predates speculative decoding: "
                f"v{FIRST_SPECULATIVE_RELEASE} is the first release with a speculative worker"
            )

    def tree(self, version: str) -> PypiTree:
        tag = self.resolve(version)
        if tag not in self._trees:
            archive, sha256, files = self._archive_with_index(tag)
            identity = SourceIdentity(
                kind=self.kind, location=archive.name, version=tag, revision=sha256
            )
            self._trees[tag] = PypiTree(identity, archive, files)
        return self._trees[tag]

    def fetch(self) -> str:
        """Refresh the list of releases from the index; a SourceError when it cannot be
        reached (listing is all `fetch` is for: the cached list is no answer to it)."""
        if self._listing is not None:
            self._listing.result()  # an answer from before the refresh
            self._listing = None
        self._versions = self._list_versions(strict=True)
        tags = self._versions
        newest = f", newest {tags[-1]}" if tags else ""
        return f"listed {PACKAGE} on the package index: {len(tags)} releases{newest}"

    def archive(self, version: str) -> Path:
        """The verified archive of one release, downloaded into the cache when missing."""
        return self._archive_with_index(self.resolve(version))[0]

    # -- release list -------------------------------------------------------------------------

    def _list_versions(self, strict: bool = False) -> list[str]:
        result = self._pip("index", "versions", PACKAGE, *PLATFORM_ARGS)
        listed = _parse_available(result.stdout) if result.returncode == 0 else None
        if listed is not None:
            tags = _release_tags(listed)
            document = {"schema": _VERSIONS_SCHEMA, "package": PACKAGE, "versions": tags}
            try:
                write_text_atomic(self._versions_file, json.dumps(document, indent=1) + "\n")
            except OSError as exc:  # a read-only cache: the list is good for this run
                cannot_write_cache(self.archive_dir, exc)
            return tags
        reason = _pip_reason(result)
        if strict:
            raise SourceError(
                f"the package index could not be reached to list {PACKAGE} releases "
                f"(pip: {reason}); the cached list is unchanged"
            )
        cached = sort_versions({*self._read_cached_versions(), *self._cached_archive_tags()})
        if not cached:
            raise SourceError(
                f"the package index could not be reached to list {PACKAGE} releases and "
                f"nothing is cached (pip: {reason})"
            )
        self.warnings.append(
            f"the package index could not be reached (pip: {reason}); using the "
            f"{len(cached)} cached {PACKAGE} releases"
        )
        return cached

    @property
    def _versions_file(self) -> Path:
        return self.archive_dir / "versions.json"

    def _read_cached_versions(self) -> list[str]:
        document = _read_json(self._versions_file)
        if document is None or document.get("schema") != _VERSIONS_SCHEMA:
            return []
        versions = document.get("versions")
        if not isinstance(versions, list):
            return []
        return _release_tags(str(item) for item in versions)

    def _cached_archive_tags(self) -> list[str]:
        return _release_tags(
            str(version) for version, _ in _wheels_in(self.archive_dir) if version is not None
        )

    def _cached_archive(self, tag: str) -> Path | None:
        wanted = parse_version(tag)
        matches = sorted(
            path for version, path in _wheels_in(self.archive_dir) if version == wanted
        )
        return matches[0] if matches else None

    # -- archives -----------------------------------------------------------------------------

    def _archive_with_index(self, tag: str) -> tuple[Path, str, dict[str, str]]:
        """(archive, its sha256, repo path -> content id), fetching the archive again when
        the cached one is damaged."""
        cached = self._cached_archive(tag)
        if cached is not None:
            loaded = _load_archive(cached)
            if loaded is not None:
                return (cached, *loaded)
            # Truncated or corrupt (an interrupted copy, a bad disk): fetch it again.
            if cached.is_dir():  # a wheel unpacked in place of the archive
                shutil.rmtree(cached)
            else:
                cached.unlink(missing_ok=True)
            _index_file(cached).unlink(missing_ok=True)
        archive = self._download(tag)
        loaded = _load_archive(archive)
        if loaded is None:  # verified a moment ago; only a concurrent writer gets here
            raise SourceError(f"the archive {archive} changed while it was being read")
        return (archive, *loaded)

    def _download_dir(self) -> Path:
        """Where archives are downloaded: the cache, else a folder for this run only."""
        try:
            self.archive_dir.mkdir(parents=True, exist_ok=True)
            probe = Path(tempfile.mkdtemp(prefix=".download-", dir=self.archive_dir))
            probe.rmdir()
            return self.archive_dir
        except OSError as exc:
            cannot_write_cache(self.archive_dir, exc)
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix="sglang-tracker-"))
            atexit.register(shutil.rmtree, self._scratch, True)
        return self._scratch

    def _download(self, tag: str) -> Path:
        version = tag.removeprefix("v")
        folder = self._download_dir()
        # Download beside the cache (same file system) so the final move is one rename.
        scratch = Path(tempfile.mkdtemp(prefix=".download-", dir=folder))
        try:
            result = self._pip(
                "download", "--no-deps", *PLATFORM_ARGS, "-d", str(scratch), f"{PACKAGE}=={version}"
            )
            if result.returncode != 0:
                raise SourceError(
                    f"cannot download {PACKAGE}=={version} from the package index "
                    f"(pip: {_pip_reason(result)})"
                )
            wheels = sorted(scratch.glob("*.whl"))
            if not wheels:
                raise SourceError(
                    f"pip downloaded no wheel for {PACKAGE}=={version} (the index may hold "
                    "only a source archive)"
                )
            wheel = wheels[0]
            problem = _verify_zip(wheel)
            if problem is not None:
                raise SourceError(
                    f"the package index served a damaged archive {wheel.name}: {problem}"
                )
            with wheel.open("rb") as handle:
                os.fsync(handle.fileno())
            target = folder / wheel.name
            wheel.replace(target)
            return target
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _pip(self, *args: str) -> subprocess.CompletedProcess[str]:
        # TRACKER_PIP replaces the pip command (a wrapper, another interpreter's pip; tests
        # use it to stand in for an index that cannot be reached).
        override = os.environ.get("TRACKER_PIP")
        command = shlex.split(override) if override else [sys.executable, "-m", "pip"]
        try:
            return subprocess.run(
                [*command, *args],
                capture_output=True,
                text=True,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except OSError as error:  # e.g. TRACKER_PIP names a program that does not exist
            return subprocess.CompletedProcess([*command, *args], 127, "", str(error))


# -- archive verification and per-archive index ---------------------------------------------


def _index_file(archive: Path) -> Path:
    return archive.with_name(archive.name + ".files.json")


def _load_archive(archive: Path) -> tuple[str, dict[str, str]] | None:
    """(sha256, repo path -> content id) of a cached archive, or None when it is damaged.

    The index beside the archive records the sha256 it was built from; when it matches, the
    archive is the one verified earlier and nothing is re-hashed. Otherwise the archive is
    checked from end to end (every member's CRC) and the index rebuilt.
    """
    try:
        data = read_regular(archive)
    except OSError:
        return None
    sha256 = hashlib.sha256(data).hexdigest()
    index = _read_json(_index_file(archive))
    if index is not None and index.get("schema") == _INDEX_SCHEMA and index.get("sha256") == sha256:
        files = index.get("files")
        if isinstance(files, dict) and all(
            isinstance(key, str) and isinstance(value, str) for key, value in files.items()
        ):
            return sha256, files
    if _verify_zip(archive) is not None:
        return None
    try:
        with zipfile.ZipFile(archive) as opened:
            files = {
                wheel_path_to_repo_path(member): content_id(opened.read(member))
                for member in wheel_python_members(opened)
            }
    except _ZIP_DAMAGE:
        return None
    document = {"schema": _INDEX_SCHEMA, "sha256": sha256, "files": files}
    # Unwritable (a read-only cache): the archive is checked again next time, that is all.
    with contextlib.suppress(OSError):
        write_text_atomic(_index_file(archive), json.dumps(document, indent=0, sort_keys=True))
    return sha256, files


def _is_metadata(member: str) -> bool:
    """`sglang-0.5.9.dist-info/METADATA`: the wheel's own metadata, at the archive root."""
    head, _, tail = member.partition("/")
    return tail == "METADATA" and head.startswith(f"{PACKAGE}-") and head.endswith(".dist-info")


def _verify_zip(archive: Path) -> str | None:
    """What is wrong with a release archive, or None: it must be a readable zip whose every
    member passes its CRC check and which holds `sglang/srt/`."""
    try:
        with zipfile.ZipFile(archive) as opened:
            bad = opened.testzip()
            if bad is not None:
                return f"member {bad} is corrupt"
            if not any(name.startswith(WHEEL_SRT) for name in opened.namelist()):
                raise NotSGLangError(
                    f"{archive.name} has no {WHEEL_SRT}: not an SGLang release archive"
                )
    except _ZIP_DAMAGE as error:
        return f"not a readable zip archive ({error})"
    return None


# -- helpers ----------------------------------------------------------------------------------


def _supported(tag: str) -> bool:
    version = parse_version(tag)
    return (
        version is not None and not version.is_prerelease and version >= FIRST_SPECULATIVE_RELEASE
    )


def _release_tags(versions: Iterable[str]) -> list[str]:
    """Supported releases as tags, oldest first."""
    tags = {f"v{version}" for text in versions if (version := parse_version(text)) is not None}
    return [tag for tag in sort_versions(tags) if _supported(tag)]


def _wheels_in(directory: Path) -> list[tuple[Version | None, Path]]:
    if not directory.is_dir():
        return []
    found: list[tuple[Version | None, Path]] = []
    for path in directory.glob(f"{PACKAGE}-*.whl"):
        try:
            name, version, _, _ = parse_wheel_filename(path.name)
        except InvalidWheelFilename:
            continue
        if name == PACKAGE:
            found.append((version, path))
    return found


def _parse_available(output: str) -> list[str] | None:
    """The versions on pip's `Available versions: a, b, c` line, or None without one."""
    for line in output.splitlines():
        if line.startswith("Available versions:"):
            listed = line.partition(":")[2]
            return [item.strip() for item in listed.split(",") if item.strip()]
    return None


_RAISED = re.compile(r"^(?:OSError|IOError|PermissionError|[A-Za-z]+Error): \[Errno \d+\] ")


def _pip_reason(result: subprocess.CompletedProcess[str]) -> str:
    """Why pip failed, in one line. After a failed connection pip's last line only says "No
    matching distribution found", which reads as if the release did not exist: the
    connection error from its retry warnings is the reason then."""
    lines = [line.strip() for line in (result.stderr + "\n" + result.stdout).splitlines()]
    lines = [line for line in lines if line]
    connection = [match.group(1) for line in lines if (match := _CONNECTION_ERROR.search(line))]
    if connection:
        return connection[-1].strip()
    # pip's own error line is only "Exception:" when the traceback's last line is the cause
    # (a full disk: "OSError: [Errno 28] No space left on device").
    raised = [line for line in lines if _RAISED.match(line)]
    if raised and any(line.startswith("ERROR: Exception") for line in lines):
        return raised[-1]
    errors = [line.removeprefix("ERROR:").strip() for line in lines if line.startswith("ERROR:")]
    if not errors:
        return lines[-1] if lines else f"exit status {result.returncode}"
    missing = _NO_MATCH.fullmatch(errors[-1])
    if missing:
        return f"its index has no {missing.group(1)} archive for this platform"
    return errors[-1]


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        document = json.loads(read_regular_text(path))
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) else None
