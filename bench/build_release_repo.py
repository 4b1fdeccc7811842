"""Build a git repository holding SGLang's released sources, one tagged commit per release.

The git source is normally pointed at a clone of SGLang, which this workplace cannot reach;
a repository built from the release archives has the same layout (`python/sglang/...`) and
the same bytes, so it benchmarks and tests the git source on real data, and it lets a test
check that both sources give identical snapshots of a release.

    python bench/build_release_repo.py DEST --versions v0.4.10..v0.5.23
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import IO

if importlib.util.find_spec("tracker") is None:  # run as a script from a source checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tracker.errors import TrackerError
from tracker.sources import expand_spec
from tracker.sources.pypi import PypiSource, PypiTree
from tracker.versions import sort_versions

BRANCH = "refs/heads/main"
# Fixed names and dates so that the same releases always give the same commit ids.
IDENTITY = b"sglang-tracker bench <bench@sglang-tracker.invalid>"
FIRST_DATE = 1_700_000_000
DAY = 86_400


def build_release_repo(
    dest: Path, versions: list[str], archive_dir: Path | None = None, *, checkout: bool = True
) -> Path:
    """Create a git repository at `dest` with one commit per release in `versions` (specs or
    ranges, built oldest first), each tagged `vX` with an annotated tag and holding the
    release's `sglang/**/*.py` at `python/sglang/**`. Archives come through PypiSource, so
    they are cached (in `archive_dir` when given). With `checkout`, the work tree holds the
    newest release. Returns `dest`."""
    if dest.exists() and any(dest.iterdir()):
        raise TrackerError(f"{dest} exists and is not empty")
    source = PypiSource(archive_dir)
    tags = sort_versions({tag for spec in versions for tag in expand_spec(source, spec)})
    if not tags:
        raise TrackerError("no versions to build")
    # Fetched (and verified) before the repository is started, so a download failure
    # leaves nothing half-built behind.
    trees = [source.tree(tag) for tag in tags]

    dest.mkdir(parents=True, exist_ok=True)
    _git(dest, "init", "-q", "-b", "main")
    # Light compression and no deltas: fast-import would only delta a blob against the one
    # sent before it (another file), which costs most of the run and saves nothing.
    importer = subprocess.Popen(
        ["git", "-c", "pack.compression=1", "fast-import", "--depth=0", "--quiet", "--done"],
        cwd=dest,
        stdin=subprocess.PIPE,
    )
    assert importer.stdin is not None
    try:
        _write_history(importer.stdin, trees)
        importer.stdin.write(b"done\n")
    except BrokenPipeError:
        pass  # fast-import stopped early; its exit status below says so
    finally:
        with contextlib.suppress(BrokenPipeError):
            importer.stdin.close()  # also on errors: fast-import would wait for input forever
        status = importer.wait()
    if status != 0:
        raise TrackerError(f"git fast-import failed in {dest} (exit status {status})")
    if checkout:
        _git(dest, "reset", "-q", "--hard", BRANCH)
    return dest


def _write_history(stream: IO[bytes], trees: Iterable[PypiTree]) -> None:
    """One fast-import stream for every release. A file's content is sent once, the first
    time its content id is seen; releases share most files, so most are never unpacked."""
    marks: dict[str, int] = {}  # content id -> blob mark
    next_mark = 1
    for number, tree in enumerate(trees):
        tag = tree.identity.version
        entries: list[tuple[str, int]] = []
        for path, cid in sorted(tree.files.items()):
            if cid not in marks:
                marks[cid] = next_mark
                next_mark += 1
                stream.write(b"blob\nmark :%d\n" % marks[cid])
                _data(stream, tree.read(path))
            entries.append((path, marks[cid]))
        tree.close()
        commit_mark = next_mark
        next_mark += 1
        when = b"%d +0000" % (FIRST_DATE + number * DAY)
        stream.write(b"commit %s\nmark :%d\n" % (BRANCH.encode(), commit_mark))
        stream.write(b"author %s %s\ncommitter %s %s\n" % (IDENTITY, when, IDENTITY, when))
        _data(stream, f"sglang {tag} from {tree.identity.location}\n".encode())
        # Each commit is the whole release: files a release dropped disappear with it.
        stream.write(b"deleteall\n")
        for path, mark in entries:
            stream.write(b"M 100644 :%d %s\n" % (mark, path.encode()))
        stream.write(b"\n")
        stream.write(b"tag %s\nfrom :%d\n" % (tag.encode(), commit_mark))
        stream.write(b"tagger %s %s\n" % (IDENTITY, when))
        _data(stream, f"sglang {tag}\n".encode())


def _data(stream: IO[bytes], payload: bytes) -> None:
    stream.write(b"data %d\n" % len(payload))
    stream.write(payload)
    stream.write(b"\n")


def _git(cwd: Path, *args: str) -> None:
    result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise TrackerError(f"git {args[0]} failed in {cwd}: {result.stderr.strip()}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dest", type=Path, help="where to create the repository")
    parser.add_argument(
        "--versions",
        required=True,
        help="comma-separated versions or ranges, e.g. v0.4.10..v0.5.23 or v0.5.8,v0.5.9",
    )
    parser.add_argument(
        "--archive-dir", type=Path, default=None, help="cache folder for release archives"
    )
    parser.add_argument(
        "--no-checkout", action="store_true", help="leave the work tree empty (faster)"
    )
    options = parser.parse_args(argv)
    specs = [spec.strip() for spec in options.versions.split(",") if spec.strip()]
    try:
        repo = build_release_repo(
            options.dest, specs, options.archive_dir, checkout=not options.no_checkout
        )
    except TrackerError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(repo)
    return 0


if __name__ == "__main__":
    sys.exit(main())
