"""SGLang versions read from a git repository: a local clone, or a URL cloned into the cache.

Blobs are read at a revision straight from the object database, so the user's work tree,
index and HEAD are never touched: the tracker can run inside a checkout with uncommitted
patches (as in the seed story) and compare any two tags without disturbing it.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import git

from tracker.common.cachedir import cache_root
from tracker.common.errors import NotSGLangError, SourceError, UnknownVersionError
from tracker.sources.base import (
    MAX_FILE_BYTES,
    SRT_PREFIX,
    Source,
    SourceIdentity,
    VersionTree,
    is_utf8_path,
    pyproject_requirements,
    skip_file,
    too_large,
)
from tracker.sources.versions import match_version, sort_versions, unknown_version

SGLANG_DIR = "python/sglang"
PYPROJECT = "python/pyproject.toml"  # the package's dependencies, with their pins
_SYMLINK_MODE = 0o120000
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://|^[\w.-]+@[\w.-]+:")


def is_url(location: str) -> bool:
    """True for `https://...`, `file://...`, `ssh://...` and scp-like `git@host:owner/repo`."""
    return bool(_URL.match(location))


def clone_dir_for(url: str) -> Path:
    """Where a URL's clone lives in the cache: readable name plus a hash against collisions."""
    readable = re.sub(r"^[A-Za-z][A-Za-z0-9+.-]*://", "", url)
    readable = re.sub(r"^[^/@]*@", "", readable).rstrip("/")
    readable = readable.removesuffix(".git")
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", readable).strip("._")[:80] or "repo"
    digest = hashlib.sha1(url.encode(), usedforsecurity=False).hexdigest()[:10]
    return cache_root() / "git" / f"{readable}-{digest}"


def sglang_checkout_at(path: Path) -> Path | None:
    """The top of the git checkout containing `path` when its HEAD holds SGLang, else None.

    Used to pick the current directory as the source automatically, so it must not raise.
    """
    try:
        repo = git.Repo(path, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None
    try:
        if repo.bare or repo.working_tree_dir is None:
            return None
        try:
            repo.head.commit.tree / SRT_PREFIX.rstrip("/")
        except (KeyError, ValueError):  # no such directory / no commit yet
            return None
        return Path(repo.working_tree_dir)
    finally:
        repo.close()


@dataclass(frozen=True)
class CommitInfo:
    """What git records about a commit, for saying which one did something."""

    sha: str
    author: str
    date: str  # ISO 8601, as git prints it (%aI)
    subject: str


class GitTree(VersionTree):
    """The `.py` blobs below `python/sglang/` of one commit."""

    def __init__(
        self,
        identity: SourceIdentity,
        blobs: Mapping[str, git.Blob],
        pyproject: git.Blob | None = None,
    ) -> None:
        self.identity = identity
        self._blobs = dict(blobs)
        self._files = MappingProxyType({path: blob.hexsha for path, blob in blobs.items()})
        self._pyproject = pyproject

    @property
    def files(self) -> Mapping[str, str]:
        return self._files

    def read(self, path: str) -> bytes:
        blob = self._blobs[path]
        try:
            data: bytes = blob.data_stream.read()
        except (ValueError, git.GitCommandError) as error:
            raise SourceError(
                f"cannot read {path} at {self.identity.version} from {self.identity.location}: "
                f"{_last_line(error)}"
            ) from error
        return data

    def requirements(self) -> tuple[list[str], str] | None:
        """The dependencies `python/pyproject.toml` declares at this commit."""
        if self._pyproject is None:
            return None
        try:
            text = self._pyproject.data_stream.read().decode("utf-8", "replace")
        except (ValueError, git.GitCommandError):
            return None
        return pyproject_requirements(text), f"{PYPROJECT} at {self.identity.version}"


class GitSource(Source):
    """A git repository; `location` is a path to a clone or a URL to clone into the cache."""

    kind = "git"

    def __init__(self, location: str | os.PathLike[str], *, cwd: Path | None = None) -> None:
        text = os.fspath(location)
        self.url: str | None = text if is_url(text) else None
        self._repo: git.Repo | None = None
        self._tags: list[str] | None = None
        self._tag_commits: dict[str, str] = {}
        self._trees: dict[str, GitTree] = {}
        if self.url is not None:
            self.location = self.url
            return  # cloned on first use, so naming a URL costs nothing until it is read
        path = Path(text).expanduser()
        if not path.is_absolute():
            path = (cwd or Path.cwd()) / path
        if not path.exists():
            raise SourceError(f"{path} does not exist")
        try:
            repo = git.Repo(path)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            raise SourceError(f"{path} is not a git repository") from None
        if Path(repo.git_dir) == path.resolve() and not repo.bare:
            # A git directory with no config saying it is bare (a mirror's snapshot): git
            # would look for a repository around it, so name it outright.
            repo.git.update_environment(GIT_DIR=str(path))
        self._repo = self._closed_with_self(repo)
        self.location = str(path)

    # -- the repository ---------------------------------------------------------------------

    @property
    def repo(self) -> git.Repo:
        if self._repo is None:
            assert self.url is not None
            self._repo = self._closed_with_self(self._open_clone(self.url))
        return self._repo

    def _closed_with_self(self, repo: git.Repo) -> git.Repo:
        """`repo`, closed as soon as this source is dropped. A gitpython Repo sits in a
        reference cycle of its own, so without this it and the `git cat-file` helpers it
        keeps running would wait for a full garbage collection (rare under the collector
        settings of tracker.common.collector), and be torn down then in no set order:
        the helpers' pipes before the helpers."""
        weakref.finalize(self, repo.close)
        return repo

    def _open_clone(self, url: str) -> git.Repo:
        target = clone_dir_for(url)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            # Clone beside the target and rename: an interrupted clone never looks complete.
            scratch = Path(tempfile.mkdtemp(prefix=".clone-", dir=target.parent))
            try:
                try:
                    clone = git.Repo.clone_from(
                        url, scratch / "repo", bare=True, multi_options=["--filter=blob:none"]
                    )
                except git.GitCommandError as error:
                    raise SourceError(f"cannot clone {url}: {_last_line(error)}") from None
                # A bare clone has no fetch refspec; give it one so fetch() updates branches.
                clone.git.config("remote.origin.fetch", "+refs/heads/*:refs/heads/*")
                clone.close()
                try:
                    (scratch / "repo").rename(target)
                except OSError:
                    if not target.exists():  # not a lost race with another process
                        raise
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
        try:
            return git.Repo(target)
        except git.InvalidGitRepositoryError:
            raise SourceError(
                f"the cached clone {target} is damaged; delete it and run again"
            ) from None

    def fetch(self) -> str:
        """Update a cached clone (branches and tags); a local repository is left alone."""
        if self.url is None:
            return f"{self.location} is a local repository: nothing to fetch"
        try:
            self.repo.git.fetch("--prune", "--tags", "origin")
        except git.GitCommandError as error:
            raise SourceError(f"cannot fetch {self.url}: {_last_line(error)}") from None
        self._tags = None
        self._tag_commits = {}
        tags = self.versions()
        newest = f", newest {tags[-1]}" if tags else ""
        return f"fetched {self.url}: {len(tags)} release tags{newest}"

    def close(self) -> None:
        """Stop the git helper processes gitpython keeps running for object reads."""
        if self._repo is not None:
            self._repo.close()

    # -- Source -------------------------------------------------------------------------------

    def _tag_names(self) -> list[str]:
        if self._tags is None:
            # One call lists every tag with the commit it names (peeled for annotated tags):
            # resolving a range of tags then needs no process per tag.
            try:
                output = self.repo.git.for_each_ref(
                    "--format=%(refname:strip=2) %(objectname) %(*objectname)", "refs/tags"
                )
            except git.GitCommandError:
                # A tag whose object is missing (a shallow or damaged clone) makes git
                # refuse to peel; list the names alone and resolve each one when asked.
                output = self.repo.git.for_each_ref("--format=%(refname:strip=2)", "refs/tags")
            self._tags = []
            for line in output.splitlines():
                parts = line.split()
                if not parts:
                    continue
                self._tags.append(parts[0])
                if len(parts) >= 2:
                    self._tag_commits[parts[0]] = parts[-1]
        return self._tags

    def commit_of(self, version: str) -> str | None:
        """The commit a resolved version names (a tag's peeled commit), or None."""
        self._tag_names()
        return self._tag_commits.get(version) or self._commit_sha(version)

    def versions(self) -> list[str]:
        return sort_versions(self._tag_names())

    def resolve(self, spec: str) -> str:
        """A tag name for tags and release specs (`0.5.9` finds `v0.5.9`), the full commit sha
        for any other commit-ish (`main`, `HEAD~1`, an abbreviated sha)."""
        tags = self._tag_names()
        if spec in tags:
            return spec
        try:
            return match_version(spec, tags)
        except UnknownVersionError:
            pass
        sha = self._commit_sha(spec)
        if sha is None:
            raise unknown_version(spec, self.versions())
        return sha

    def tree(self, version: str) -> GitTree:
        version = self.resolve(version)  # lenient: a bare `0.5.9` works here too
        sha = self._commit_sha(version)
        if sha is None:
            if version in self._tag_names():
                raise self._tag_without_commit(version)
            # A tag deleted since resolve(): only a concurrent fetch does that.
            raise unknown_version(version, self.versions())
        key = f"{version}\0{sha}"
        if key not in self._trees:
            self._trees[key] = self._build_tree(version, sha)
        return self._trees[key]

    def first_parent_path(self, old: str, new: str) -> list[CommitInfo]:
        """The commits from `old` to `new` following first parents, oldest first, `old`
        included; raises SourceError when `old` is not on `new`'s first-parent path."""
        old_sha, new_sha = self._commit_sha(old), self._commit_sha(new)
        for spec, sha in ((old, old_sha), (new, new_sha)):
            if sha is None:
                raise unknown_version(spec, self.versions())
        assert old_sha is not None and new_sha is not None
        if old_sha == new_sha:
            raise SourceError(f"{old} and {new} are the same commit: nothing between them")
        # One call: every commit's id, first parent, author, date and subject, each field
        # ended by a NUL (`-z` ends each commit with one too). A subject holds any
        # character but NUL, line separators and carriage returns included, so nothing
        # else can split them.
        fmt = "--format=%H%x00%P%x00%an%x00%aI%x00%s"
        listing = self._git(
            "log", "-z", "--first-parent", "--reverse", fmt, f"{old_sha}..{new_sha}"
        )
        rows = _commit_rows(listing)
        if not rows or (rows[0][1].split() or [""])[0] != old_sha:
            raise SourceError(
                f"{old} is not an ancestor of {new} on its first-parent path "
                "(bisect needs OLD..NEW to be one line of history)"
            )
        head = _commit_rows(self._git("log", "-z", "-1", fmt, old_sha))
        return [
            CommitInfo(sha, author, date, subject)
            for sha, _, author, date, subject in [*head, *rows]
        ]

    # -- helpers ------------------------------------------------------------------------------

    def _commit_sha(self, rev: str) -> str | None:
        if not rev or rev.startswith("-"):
            return None
        try:
            sha: str = self.repo.git.rev_parse(
                "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"
            )
        except git.GitCommandError:
            return None
        return sha.strip()

    def _tag_without_commit(self, tag: str) -> SourceError:
        """Why a tag leads to no commit: it names a blob or a tree, or an object this clone
        does not have (a shallow clone, or tags fetched without their history)."""
        oid = self._git("for-each-ref", "--format=%(objectname)", f"refs/tags/{tag}").strip()
        kind = self._object_type(oid)
        # Annotated tags (of tags) are peeled by hand: what one names may be the missing part.
        for _ in range(16):
            if kind != "tag":
                break
            oid = self._git("cat-file", "tag", oid).partition("\n")[0].removeprefix("object ")
            kind = self._object_type(oid)
        if kind is None:
            return SourceError(
                f"tag {tag} names {oid[:12]}, which {self.location} does not have (a shallow "
                "clone, or tags fetched without their commits); fetch its history"
            )
        return SourceError(f"tag {tag} in {self.location} names a {kind}, not a commit")

    def _object_type(self, oid: str) -> str | None:
        """`commit`, `tag`, `tree` or `blob`; None when the object is not in the repository."""
        try:
            return self._git("cat-file", "-t", oid).strip() or None
        except SourceError:
            return None

    def _build_tree(self, version: str, sha: str) -> GitTree:
        root = self.repo.commit(sha).tree
        # One `git ls-tree` lists every file below python/sglang/; gitpython's traverse()
        # builds a tree object per directory on the way and took eight times as long, which
        # a range or a bisect pays once per version. Sizes come with the listing, except in
        # a partial clone, where asking for them would fetch each blob on its own.
        partial = self._promisor_remote() is not None
        sized = () if partial else ("-l",)
        listing = self._git("ls-tree", "-r", "-z", *sized, "--full-tree", sha, "--", SGLANG_DIR)
        blobs, sizes, has_srt, linked_srt = _listed_blobs(self.repo, listing)
        if not has_srt:
            linked = " (it is a symlink, not followed)" if linked_srt else ""
            raise NotSGLangError(
                f"{version} at {self.location} has no {SRT_PREFIX}{linked}: not an SGLang tree"
            )
        self._prefetch_missing(sha, {blob.hexsha for blob in blobs.values()})
        if partial:
            sizes = self._sizes(blobs)
        for path, size in sizes.items():
            if size > MAX_FILE_BYTES:
                skip_file(path, too_large(size))
                del blobs[path]
        identity = SourceIdentity(
            kind=self.kind, location=self.location, version=version, revision=sha
        )
        try:
            pyproject = root / PYPROJECT
        except KeyError:
            pyproject = None
        return GitTree(identity, blobs, pyproject if isinstance(pyproject, git.Blob) else None)

    def _sizes(self, blobs: Mapping[str, git.Blob]) -> dict[str, int]:
        """The size of each blob, from one `git cat-file --batch-check`."""
        answer = self._git(
            "cat-file",
            "--batch-check=%(objectname) %(objectsize)",
            stdin="".join(f"{blob.hexsha}\n" for blob in blobs.values()),
        )
        by_id = dict(line.split() for line in answer.splitlines() if len(line.split()) == 2)
        return {path: int(by_id.get(blob.hexsha, 0)) for path, blob in blobs.items()}

    def _prefetch_missing(self, sha: str, wanted: set[str]) -> None:
        """In a partial clone, fetch the blobs one version needs in a single request; left to
        itself git would fetch them lazily, one round trip per file."""
        remote = self._promisor_remote()
        if remote is None:
            return  # a complete repository: every blob is already here
        # --missing=print lists absent objects instead of fetching them.
        listing = self._git("rev-list", "--objects", "--no-walk", "--missing=print", sha)
        missing = sorted(
            line[1:].split()[0]
            for line in listing.splitlines()
            if line.startswith("?") and line[1:].split()[0] in wanted
        )
        if not missing:
            return
        # The same command git itself runs for a lazy fetch, given every id at once.
        self._git(
            "-c",
            "fetch.negotiationAlgorithm=noop",
            "fetch",
            remote,
            "--no-tags",
            "--no-write-fetch-head",
            "--recurse-submodules=no",
            "--filter=blob:none",
            "--stdin",
            stdin="".join(f"{oid}\n" for oid in missing),
        )

    def _promisor_remote(self) -> str | None:
        """The remote a partial clone fetches missing objects from, or None."""
        config = self.repo.config_reader("repository")
        if config.has_option("extensions", "partialclone"):
            return str(config.get_value("extensions", "partialclone"))
        for section in config.sections():
            match = re.fullmatch(r'remote "(.+)"', section)
            if match and str(config.get_value(section, "promisor", "false")).lower() == "true":
                return match.group(1)
        return None

    def _git(self, *args: str, stdin: str | None = None) -> str:
        result = subprocess.run(
            ["git", "--git-dir", self.repo.git_dir, *args],
            input=stdin.encode() if stdin is not None else None,
            capture_output=True,
            check=False,
        )
        # Decoded by hand: text mode would turn a carriage return in a file name or a
        # commit subject into a newline. Paths are bytes to git: one that is not UTF-8 keeps
        # its bytes as surrogates, so the listing can leave it out with a warning.
        if result.returncode != 0:
            stderr = result.stderr.decode("utf-8", "replace")
            reason = _reason(stderr) or f"exit status {result.returncode}"
            command = next((a for a in args if not a.startswith("-") and "=" not in a), "")
            raise SourceError(f"git {command} failed in {self.location}: {reason}")
        return result.stdout.decode("utf-8", "surrogateescape")


def _commit_rows(listing: str) -> list[list[str]]:
    """`git log -z` with five NUL-ended fields per commit, as one list per commit."""
    fields = listing.split("\0")
    if fields and fields[-1] in ("", "\n"):
        fields.pop()
    if len(fields) % 5:
        raise SourceError(f"git log gave {len(fields)} fields, not five per commit")
    return [fields[i : i + 5] for i in range(0, len(fields), 5)]


def _listed_blobs(
    repo: git.Repo, listing: str
) -> tuple[dict[str, git.Blob], dict[str, int], bool, bool]:
    """(the `.py` blobs to read, their sizes when listed, whether `srt/` has files, whether
    `srt` is a symlink) from `git ls-tree -r -z [-l]` output. A name that is not UTF-8 is
    left out, with a warning; so is a linked folder below `srt/`."""
    blobs: dict[str, git.Blob] = {}
    sizes: dict[str, int] = {}
    has_srt = linked_srt = False
    for entry in listing.split("\0"):
        meta, _, path = entry.partition("\t")
        if not path:
            continue
        mode, kind, oid, *size = meta.split()
        has_srt = has_srt or path.startswith(SRT_PREFIX)
        linked = int(mode, 8) == _SYMLINK_MODE
        if linked and (path + "/").startswith(SRT_PREFIX):
            # A linked folder (`srt/`, `models/`) would read as a tree without it.
            linked_srt = linked_srt or path == SRT_PREFIX[:-1]
            if not path.endswith(".py") and path != SRT_PREFIX[:-1]:
                skip_file(path, "not followed: symlink")
        # Submodule entries are commits, not blobs; symlinks are blobs, but their bytes
        # are a path, and a release archive would hold the target file (or nothing).
        if kind != "blob" or linked or not path.endswith(".py"):
            continue
        if not is_utf8_path(path):
            skip_file(path, "its name is not UTF-8")
            continue
        blobs[path] = git.Blob(repo, bytes.fromhex(oid), int(mode, 8), path)
        if size:
            sizes[path] = int(size[0])
    return blobs, sizes, has_srt, linked_srt


def _last_line(error: Exception) -> str:
    """The line of a git error that says why, for a one-line message (see `_reason`)."""
    return _reason(str(getattr(error, "stderr", "") or error)) or type(error).__name__


def _reason(stderr: str) -> str | None:
    """The line of git's stderr that says why: its `fatal:`/`error:` line when there is one
    (its last lines are often advice, "... and the repository exists."), else the last line."""
    lines = [re.sub(r"^stderr:\s*", "", line.strip()).strip("'\" ") for line in stderr.splitlines()]
    lines = [line for line in lines if line]
    for prefix in ("fatal:", "error:"):
        for line in lines:
            if line.startswith(prefix):
                return line
    return lines[-1] if lines else None
