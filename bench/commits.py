"""Time commit-by-commit analysis on the replayed v0.5.8 → v0.5.9 history (issue 16).

    python bench/commits.py [--replay DIR] [--out bench/out/commits.json]

Builds the replay (bench/build_replay_repo.py) into bench/out/replay unless given, then, in
one process with a fresh empty TRACKER_CACHE_DIR (true cold: no facts, no snapshots):

1. one cold single-version analysis of v0.5.8 (the unit the bisect target is measured in);
2. a bisect by hand: binary search for the first commit whose tree holds kimi_k25.py,
   evaluating each midpoint with `Workspace.snapshot_of` in one workspace (what a bisect
   command does), timed per commit evaluated; the facts of every file it meets are cold;
3. the same evaluations again in a fresh workspace with the facts now cached (warm facts,
   no snapshots), each followed by the next commit that changes only a file the analysis
   does not read (the common case between adjacent commits: 606 of the 734);

plus peak RSS of the process. Pass `--tool DIR` to time another checkout's `tracker`
package (put first on sys.path), e.g. main's, for a before/after comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
KIMI_MODULE = "python/sglang/srt/models/kimi_k25.py"
READ = tuple(
    f"python/sglang/srt/{d}"
    for d in (
        "speculative/",
        "model_executor/",
        "models/",
        "managers/",
        "server_args.py",
        "configs/",
    )
)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--replay", type=Path, default=HERE / "out" / "replay")
    parser.add_argument("--tool", type=Path, default=HERE.parent)
    parser.add_argument("--out", type=Path, default=HERE / "out" / "commits.json")
    args = parser.parse_args()
    sys.path.insert(0, str(args.tool))
    os.environ["TRACKER_CACHE_DIR"] = tempfile.mkdtemp(prefix="tracker-commits-")
    manifest = args.replay.with_suffix(".json")
    if not manifest.is_file():
        sys.path.append(str(HERE.parent))
        from bench.build_replay_repo import main as build

        build(["v0.5.8", "v0.5.9", str(args.replay), "--manifest", str(manifest)])
    listed = json.loads(manifest.read_text())["commits"]
    commits = [c["commit"] for c in listed]
    # A commit changing a file the analysis never loads (outside srt/'s seed packages).
    unread = [not c["path"].startswith(READ) for c in listed]

    from tracker.compare.workspace import Workspace
    from tracker.sources import open_source

    source = open_source(f"git:{args.replay}", None, Path.cwd())

    def workspace() -> Workspace:
        return Workspace(source, use_shipped=False, use_cache=False)

    start = time.perf_counter()
    workspace().snapshot_of(source, "v0.5.8")
    cold_one = time.perf_counter() - start

    def bisect(ws: Workspace, neighbours: bool) -> list[float]:
        lo, hi, times = 0, len(commits) - 1, []
        while lo < hi:
            mid = (lo + hi) // 2
            after = next((i for i in range(mid + 1, len(commits)) if unread[i]), mid)
            for commit in [commits[mid], *([commits[after]] if neighbours else [])]:
                t = time.perf_counter()
                ws.snapshot_of(source, commit)
                times.append(time.perf_counter() - t)
            if KIMI_MODULE in source.tree(commits[mid]).files:
                hi = mid
            else:
                lo = mid + 1
        assert KIMI_MODULE in source.tree(commits[lo]).files
        return times

    cold = bisect(workspace(), neighbours=False)
    warm = bisect(workspace(), neighbours=True)
    result = {
        "tool": str(args.tool),
        "cold_single_version_s": round(cold_one, 3),
        "bisect_cold_evaluated": len(cold),
        "bisect_cold_total_s": round(sum(cold), 3),
        "bisect_cold_per_commit_s": round(sum(cold) / len(cold), 3),
        "bisect_cold_vs_single_version": round(sum(cold) / cold_one, 2),
        "warm_facts_midpoints_per_commit_s": round(sum(warm[0::2]) / len(warm[0::2]), 3),
        "warm_facts_neighbours_per_commit_s": round(sum(warm[1::2]) / len(warm[1::2]), 3),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "loadavg": os.getloadavg(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
