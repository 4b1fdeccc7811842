"""Build a git history that replays the change between two SGLang releases one file per commit.

SGLang's own commit history is not reachable from here, so commit-level work (bisecting the
commit that broke a model, analysing commit after commit) is tested and benchmarked on a
history made from the real releases: the first commit holds OLD and carries the tag OLD,
then every file that differs between OLD and NEW gets its own commit (added, modified or
deleted), and the last commit carries the tag NEW and holds exactly NEW.

The order is fixed: the changed files sorted by repo path (plain string order of
`python/sglang/...`), so the same pair of releases always gives the same commits, with the
same ids. Commit k (k = 1 for the first changed file) has the subject
"<add|modify|delete> <path>", its own author `replay-k <replay-k@sglang-tracker.invalid>`
and the date FIRST_DATE + k minutes; the OLD commit is k = 0.

    python bench/build_replay_repo.py v0.5.8 v0.5.9 OUT [--manifest FILE] [--archive-dir D]

The manifest (`ReplayHistory.to_json()`, printed or written to FILE) maps each commit id to
the path it changes and how, so a test knows which commit adds `models/kimi_k25.py`.
"""

from __future__ import annotations

import argparse
import enum
import importlib.util
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

if importlib.util.find_spec("tracker") is None:  # run as a script from a source checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
else:  # the `bench` helpers below come from this checkout, after the installed tracker
    sys.path.append(str(Path(__file__).resolve().parent.parent))

from bench.release_repo import BRANCH, FIRST_DATE, FastImport, git
from tracker.common.errors import TrackerError
from tracker.sources.base import VersionTree
from tracker.sources.pypi import PypiSource

MANIFEST_SCHEMA = "sglang-tracker-bench/replay-manifest@1"
ORDER = "changed files sorted by repo path"
MINUTE = 60


class Change(enum.Enum):
    """How one commit of the replay changes its file; the value starts the subject."""

    ADDED = "add"
    MODIFIED = "modify"
    DELETED = "delete"


@dataclass(frozen=True)
class FileChange:
    """One file that differs between the two releases (blob ids: git blob sha1)."""

    path: str
    change: Change
    old_blob: str | None
    new_blob: str | None


@dataclass(frozen=True)
class ReplayCommit:
    """One commit of the replay: the file it changes, and what git records about it."""

    commit: str
    number: int  # 1 for the first changed file; the OLD commit is 0
    file: FileChange
    subject: str
    author: str  # "name <email>"
    date: int  # seconds since the epoch, UTC


@dataclass(frozen=True)
class ReplayHistory:
    """The repository `build_replay_repo` made and what each of its commits does."""

    repo: Path
    old: str
    new: str
    base: str  # the commit tagged OLD
    commits: tuple[ReplayCommit, ...]  # oldest first; the last one is tagged NEW

    @property
    def head(self) -> str:
        """The commit tagged NEW (the base when the releases hold the same files)."""
        return self.commits[-1].commit if self.commits else self.base

    def changing(self, path: str) -> ReplayCommit:
        """The commit that changes `path`; KeyError when the releases agree on it."""
        for commit in self.commits:
            if commit.file.path == path:
                return commit
        raise KeyError(path)

    def parent(self, commit: str) -> str:
        """The commit before `commit` (each commit has exactly one parent but the base)."""
        ids = [self.base, *(c.commit for c in self.commits)]
        index = ids.index(commit)
        if index == 0:
            raise KeyError(f"{commit} is the first commit")
        return ids[index - 1]

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": MANIFEST_SCHEMA,
            "old": self.old,
            "new": self.new,
            "order": ORDER,
            "base": self.base,
            "head": self.head,
            "commits": [
                {
                    "commit": c.commit,
                    "number": c.number,
                    "path": c.file.path,
                    "change": c.file.change.value,
                    "old_blob": c.file.old_blob,
                    "new_blob": c.file.new_blob,
                    "subject": c.subject,
                    "author": c.author,
                    "date": c.date,
                }
                for c in self.commits
            ],
        }


def file_changes(old: Mapping[str, str], new: Mapping[str, str]) -> list[FileChange]:
    """Every path whose blob differs between `old` and `new` (path -> blob id), in replay
    order: sorted by path."""
    changes = []
    for path in sorted(old.keys() | new.keys()):
        before, after = old.get(path), new.get(path)
        if before == after:
            continue
        if before is None:
            change = Change.ADDED
        elif after is None:
            change = Change.DELETED
        else:
            change = Change.MODIFIED
        changes.append(FileChange(path, change, before, after))
    return changes


def build_replay_repo(
    dest: Path, old: str, new: str, archive_dir: Path | None = None, *, checkout: bool = False
) -> ReplayHistory:
    """Replay release `old` → `new` (specs such as `v0.5.8`, archives through PypiSource,
    cached in `archive_dir` when given) into a new repository at `dest`."""
    if dest.exists() and any(dest.iterdir()):
        raise TrackerError(f"{dest} exists and is not empty")
    source = PypiSource(archive_dir)
    # Fetched (and verified) before the repository is started, so a download failure
    # leaves nothing half-built behind.
    old_tree, new_tree = source.tree(old), source.tree(new)
    try:
        return replay_trees(dest, old_tree, new_tree, checkout=checkout)
    finally:
        old_tree.close()
        new_tree.close()


def replay_trees(
    dest: Path, old: VersionTree, new: VersionTree, *, checkout: bool = False
) -> ReplayHistory:
    """Replay any two version trees (their `identity.version` names the tags)."""
    old_tag, new_tag = old.identity.version, new.identity.version
    if old_tag == new_tag:
        raise TrackerError(f"cannot replay {old_tag} onto itself")
    changes = file_changes(old.files, new.files)
    written: list[tuple[int, FileChange, str, bytes, int]] = []
    with FastImport(dest) as importer:
        files = [
            (path, importer.blob(cid, partial(old.read, path)))
            for path, cid in sorted(old.files.items())
        ]
        base = importer.commit(
            f"sglang {old_tag}\n\nThe tree of {old.identity.location}.\n",
            FIRST_DATE,
            files=files,
            replace_all=True,
        )
        importer.tag(old_tag, base, FIRST_DATE, f"sglang {old_tag}\n")
        last = base
        for number, change in enumerate(changes, start=1):
            subject = f"{change.change.value} {change.path}"
            author = b"replay-%d <replay-%d@sglang-tracker.invalid>" % (number, number)
            when = FIRST_DATE + number * MINUTE
            body = f"{subject}\n\nReplays this file's change from sglang {old_tag} to {new_tag}.\n"
            if change.new_blob is None:
                last = importer.commit(body, when, deleted=[change.path], author=author)
            else:
                blob = importer.blob(change.new_blob, partial(new.read, change.path))
                last = importer.commit(body, when, files=[(change.path, blob)], author=author)
            written.append((last, change, subject, author, when))
        importer.tag(new_tag, last, FIRST_DATE + len(changes) * MINUTE, f"sglang {new_tag}\n")
    if checkout:
        git(dest, "reset", "-q", "--hard", BRANCH)
    commits = tuple(
        ReplayCommit(importer.commit_ids[mark], number, change, subject, author.decode(), when)
        for number, (mark, change, subject, author, when) in enumerate(written, start=1)
    )
    return ReplayHistory(dest, old_tag, new_tag, importer.commit_ids[base], commits)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", help="the release the history starts from, e.g. v0.5.8")
    parser.add_argument("new", help="the release it ends at, e.g. v0.5.9")
    parser.add_argument("dest", type=Path, help="where to create the repository")
    parser.add_argument(
        "--manifest", type=Path, default=None, help="write the manifest JSON here (default: stdout)"
    )
    parser.add_argument(
        "--archive-dir", type=Path, default=None, help="cache folder for release archives"
    )
    parser.add_argument("--checkout", action="store_true", help="check out NEW in the work tree")
    options = parser.parse_args(argv)
    try:
        history = build_replay_repo(
            options.dest, options.old, options.new, options.archive_dir, checkout=options.checkout
        )
    except TrackerError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    manifest = json.dumps(history.to_json(), indent=2) + "\n"
    if options.manifest is None:
        sys.stdout.write(manifest)
    else:
        options.manifest.write_text(manifest)
        print(f"{options.dest}: {len(history.commits) + 1} commits, manifest {options.manifest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
