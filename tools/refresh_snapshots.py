"""Rebuild the shipped snapshots (`snapshots/<tag>.json`) and the facts pack
(`tracker/data/facts.pack`) from the released archives.

Run after any change to the queries, the role rules or the analysis code: the snapshots
and the pack record which builder made them, and a stale one is ignored (and fails the
test that compares shipped snapshots with fresh ones). The pack always covers every
release (its facts are cached by then, so this costs a minute, not a parse).

    python tools/refresh_snapshots.py [RANGE]     # default: every release the index lists
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from build_facts_pack import build_pack

from tracker.compare.snapshot import write_file
from tracker.compare.workspace import Workspace
from tracker.extract.pack import PACK_NAME
from tracker.sources import open_source
from tracker.sources.versions import expand_range

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> int:
    source = open_source("pypi", None, ROOT)
    known = source.versions()
    wanted = expand_range(argv[0], known) if argv else known
    ws = Workspace(source, use_shipped=False)
    out = ROOT / "snapshots"
    started = time.monotonic()
    # A range builds the missing snapshots on every core; then each is written out.
    for snap in ws.snapshots(f"{wanted[0]}..{wanted[-1]}"):
        if snap.version in wanted:
            write_file(out / f"{snap.version}.json", snap)
    print(f"{len(wanted)} snapshots in {time.monotonic() - started:.0f}s")
    started = time.monotonic()
    # The checkout's, as for the snapshots: not wherever the package happens to be installed.
    entries, size = build_pack(source, known, ROOT / "tracker" / "data" / PACK_NAME)
    print(
        f"facts pack: {entries} entries from {len(known)} releases, {size / 1e6:.1f} MB, "
        f"in {time.monotonic() - started:.0f}s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
