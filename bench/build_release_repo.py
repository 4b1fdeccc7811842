"""Build a git repository holding SGLang's released sources, one tagged commit per release.

The git source is normally pointed at a clone of SGLang, which this workplace cannot reach;
a repository built from the release archives has the same layout (`python/sglang/...`) and
the same bytes, so it benchmarks and tests the git source on real data, and it lets a test
check that both sources give identical snapshots of a release.

    python bench/build_release_repo.py DEST --versions v0.4.10..v0.5.23
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Iterable
from functools import partial
from pathlib import Path

if importlib.util.find_spec("tracker") is None:  # run as a script from a source checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
else:  # the `bench` helpers below come from this checkout, after the installed tracker
    sys.path.append(str(Path(__file__).resolve().parent.parent))

from bench.release_repo import BRANCH, DAY, FIRST_DATE, FastImport, git
from tracker.common.errors import TrackerError
from tracker.sources import expand_spec
from tracker.sources.pypi import PypiSource, PypiTree
from tracker.sources.versions import sort_versions


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
    with FastImport(dest) as importer:
        _write_history(importer, trees)
    if checkout:
        git(dest, "reset", "-q", "--hard", BRANCH)
    return dest


def _write_history(importer: FastImport, trees: Iterable[PypiTree]) -> None:
    """One commit and one annotated tag per release, in the order given."""
    for number, tree in enumerate(trees):
        tag = tree.identity.version
        files = [
            (path, importer.blob(cid, partial(tree.read, path)))
            for path, cid in sorted(tree.files.items())
        ]
        tree.close()
        when = FIRST_DATE + number * DAY
        # Each commit is the whole release: files a release dropped disappear with it.
        mark = importer.commit(
            f"sglang {tag} from {tree.identity.location}\n", when, files=files, replace_all=True
        )
        importer.tag(tag, mark, when, f"sglang {tag}\n")


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
