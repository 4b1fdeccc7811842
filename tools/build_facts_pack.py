"""Build the facts pack shipped with the tool (`tracker/data/facts.pack`) from the releases.

For each release: the facts of every module its analysis loads (from the facts cache, else
parsed), its `srt/` file list and what its analysis read (tracker.compare.basis). Run by
`tools/refresh_snapshots.py` after the snapshots, so the facts are cached by then.

    python tools/build_facts_pack.py [RANGE] [--out PATH]   # default: every release
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from tracker.analysis.loader import load_index
from tracker.compare.basis import INDEX_DOCUMENT, release_document, release_index, release_notes
from tracker.compare.snapshot import current_builder
from tracker.extract.facts import ModuleFacts
from tracker.extract.pack import PACK_NAME, write_pack
from tracker.extract.store import use_shipped
from tracker.sources import open_source
from tracker.sources.base import Source
from tracker.sources.versions import expand_range

ROOT = Path(__file__).resolve().parent.parent


def build_pack(source: Source, versions: list[str], out: Path) -> tuple[int, int]:
    """Write the pack of `versions` (in release order) to `out`; (entries, bytes)."""
    use_shipped(False)  # the facts come from the cache or a parse, never an older pack
    builder = current_builder()
    facts: dict[tuple[str, bool], ModuleFacts] = {}
    notes = {}
    for version in versions:
        tree = source.tree(version)
        index = load_index(tree)
        for item in index.by_path.values():
            facts.setdefault((item.content_id, item.definitions_only), item)
        notes[version] = release_notes(tree, index, builder)
    documents = {release_document(v): n for v, n in notes.items()}
    documents[INDEX_DOCUMENT] = release_index(notes)
    entries = write_pack(out, facts.values(), documents)
    return entries, out.stat().st_size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("range", nargs="?", help="releases, e.g. v0.5.8..v0.5.9 (default: all)")
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT / "tracker" / "data" / PACK_NAME,
        help="default: the checkout's tracker/data/facts.pack",
    )
    options = parser.parse_args(argv)
    source = open_source("pypi", None, ROOT)
    known = source.versions()
    wanted = expand_range(options.range, known) if options.range else known
    out = options.out
    started = time.monotonic()
    entries, size = build_pack(source, wanted, out)
    print(
        f"{out}: {entries} entries from {len(wanted)} releases, {size / 1e6:.1f} MB, "
        f"in {time.monotonic() - started:.0f}s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
