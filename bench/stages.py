"""Where a cold run's time goes: each stage of extraction, on the same blobs and cores.

    python bench/stages.py [--runs N] [--repo PATH] [--out bench/out/stages.json] [--quick]

`run.py` compares whole runs with their baselines. This asks what the baselines leave room
for: for the cold `diff` and the cold `matrix` of `run.py`, it takes the files each cold run
parsed (the facts cache it filled: content id and pass of every entry) and times, on as many
forked processes as the tool uses (run.py's `timed_on_forks`, as for its floor):

- parse: `Parser.parse(data)`;
- walk: parse, then a query that visits every node and matches little, the least any
  query-based extraction pays on top of the parse;
- queries: parse, then the tool's queries of the file's pass, matches only (no Python);
- extract: `extract_facts`, parse, queries and the Python that turns matches into facts;
- extract + encode: and the pickling a cold run does to cache the facts;

and, as whole commands (run.py's `measure`):

- the cold run itself (empty cache);
- the same command with every file's facts already cached but no analysis cached (the
  cold cache without `snapshots/`): start-up, reading the cached facts, analysis, report;
- for the diff, `griffe check` on the same tags.

Every figure is also given as a ratio: to the floor (blob reads + the parse stage, what
run.py's floor measures, here on the cache entries: a file read in both passes counts
twice) for the matrix, to griffe for the diff, the denominators of run.py's targets.
Medians over the runs; every raw number in the JSON. The tool is the frozen copy run.py
makes (`bench/out/tool/`), imported from there for the in-process stages too.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# The `bench` package of this checkout, after any installed tracker (the stages import the
# frozen copy's tracker themselves).
sys.path.append(str(Path(__file__).resolve().parent.parent))

from bench import run as bench

DEFAULT_OUT = bench.OUT_DIR / "stages.json"
STAGES = ("parse", "walk", "queries", "extract", "extract + encode")
# A pattern the query engine must look for at every node, with few matches: its walk, not
# the Python objects of many matches.
WALK_QUERY = "(class_definition) @class"


@dataclass(frozen=True)
class Entry:
    """One facts cache entry of a cold run: what the tool parsed, and in which pass."""

    content_id: str
    full: bool


def cache_entries(cache: Path) -> list[Entry]:
    """`<cid>.pkl` is a file read in full, `<cid>.defs.pkl` one read for definitions."""
    return [
        Entry(path.name.split(".", 1)[0], not path.name.endswith(".defs.pkl"))
        for path in bench.facts_entries(cache)
    ]


# ------------------------------------------------------------------ in-process stages


def _stage_function(stage: str) -> Callable[[bytes, bool], object]:
    """The work of `stage` on one file, from the frozen tool's own modules."""
    from tree_sitter import Query, QueryCursor

    from tracker.extract.parse import _parser, extract_facts
    from tracker.extract.queries import LANGUAGE, combined_query, pass_queries
    from tracker.extract.store import _encode

    parser = _parser()
    walk = Query(LANGUAGE, WALK_QUERY)
    passes = {
        full: combined_query(pass_queries("full" if full else "definitions"))[0]
        for full in (True, False)
    }

    def parse(data: bytes, full: bool) -> object:
        return parser.parse(data)

    def walked(data: bytes, full: bool) -> object:
        return QueryCursor(walk).matches(parser.parse(data).root_node)

    def queries(data: bytes, full: bool) -> object:
        return QueryCursor(passes[full]).matches(parser.parse(data).root_node)

    def extract(data: bytes, full: bool) -> object:
        return extract_facts("bench.py", "0", data, full=full)

    def encode(data: bytes, full: bool) -> object:
        return _encode(extract_facts("bench.py", "0", data, full=full))

    functions = dict(zip(STAGES, (parse, walked, queries, extract, encode), strict=True))
    return functions[stage]


def stage_seconds(stage: str, items: Sequence[tuple[bytes, bool]], jobs: int) -> float:
    """Seconds for `stage` on every item, on `jobs` forked processes, as run.py times the
    floor (`timed_on_forks`)."""
    work = _stage_function(stage)  # imports and compiled queries, before the clock starts
    return bench.timed_on_forks(lambda i: work(*items[i]), [len(data) for data, _ in items], jobs)


def stages_here(repo: Path, entries: Sequence[Entry], jobs: int) -> dict[str, float]:
    """Every stage on the blobs of `entries` (this process holds them: run it apart)."""
    ids = sorted({e.content_id for e in entries})
    blobs, read_seconds, missing = bench.read_blobs(repo, ids)
    if missing:
        raise SystemExit(f"error: {missing} content ids are not blobs of {repo}")
    by_id = dict(zip(ids, blobs, strict=True))
    items = [(by_id[e.content_id], e.full) for e in entries]
    result = {"read": read_seconds, "files": float(len(items))}
    result.update({stage: stage_seconds(stage, items, jobs) for stage in STAGES})
    return result


def stages_apart(repo: Path, entries: Sequence[Entry]) -> dict[str, float]:
    """`stages_here` in a process of its own, so blobs and trees do not grow this one (and
    with it the RSS high-water mark every later child inherits)."""
    listing = bench.OUT_DIR / "stages-entries.json"
    listing.write_text(json.dumps([asdict(e) for e in entries]))
    try:
        out = subprocess.run(
            [sys.executable, __file__, "--repo", str(repo), "--entries-of", str(listing)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    finally:
        listing.unlink()
    stages: dict[str, float] = json.loads(out)
    return stages


# ---------------------------------------------------------------------- whole commands


def facts_only_copy(cache: Path) -> Path:
    """A copy of a cold cache with the facts kept and every analysis result dropped."""
    copy = cache.with_name(cache.name + "-facts")
    shutil.copytree(cache / "facts", copy / "facts")
    return copy


def one_run(number: int, tool: bench.Tool, repo: Path, matrix_range: str) -> dict[str, Any]:
    run: dict[str, Any] = {"run": number, "loadavg_before": list(os.getloadavg())}
    commands = {
        "diff": ["diff", bench.DIFF_OLD, bench.DIFF_NEW],
        "matrix": ["matrix", matrix_range, "--algorithm", bench.ALGORITHM],
    }
    for name, args in commands.items():
        argv = [*tool.argv, *args, "--repo", str(repo), "--no-shipped", "-q"]
        with bench.scratch_cache(False) as cache:
            cold = bench.measure(argv, cwd=tool.home, env=tool.env(cache))
            entries = cache_entries(cache)
            cached_facts = facts_only_copy(cache)
            try:
                analysis = bench.measure(argv, cwd=tool.home, env=tool.env(cached_facts))
                reparsed = len(bench.facts_entries(cached_facts)) - len(entries)
            finally:
                shutil.rmtree(cached_facts, ignore_errors=True)
        if reparsed:
            print(f"  warning: the facts-cached {name} parsed {reparsed} files", flush=True)
        stages = stages_apart(repo, entries)
        run[name] = {
            "cold": asdict(cold),
            "facts_cached": asdict(analysis),
            "stages": stages,
            "entries": len(entries),
            "entries_full": sum(e.full for e in entries),
        }
        print(
            f"  [{number}] {name:<6} cold {cold.seconds:.2f} s, facts cached "
            f"{analysis.seconds:.2f} s; read {stages['read']:.2f}, "
            + ", ".join(f"{stage} {stages[stage]:.2f}" for stage in STAGES),
            flush=True,
        )
    griffe = bench.measure(
        [
            *bench.griffe_argv(),
            "check",
            "sglang",
            "-s",
            "python",
            "-a",
            bench.DIFF_OLD,
            "-b",
            bench.DIFF_NEW,
        ],
        cwd=repo,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        allowed=(0, 1),
    )
    run["griffe"] = asdict(griffe)
    print(f"  [{number}] griffe {griffe.seconds:.2f} s", flush=True)
    return run


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    def median(get: Callable[[dict[str, Any]], float]) -> float:
        return statistics.median(get(r) for r in runs)

    griffe = median(lambda r: r["griffe"]["seconds"])
    summary: dict[str, Any] = {"griffe": griffe}
    for name in ("diff", "matrix"):
        row: dict[str, float] = {
            "cold": median(lambda r, n=name: r[n]["cold"]["seconds"]),
            "facts_cached": median(lambda r, n=name: r[n]["facts_cached"]["seconds"]),
            "read": median(lambda r, n=name: r[n]["stages"]["read"]),
        }
        for stage in STAGES:
            row[stage] = median(lambda r, n=name, s=stage: r[n]["stages"][s])
        # run.py's floor, measured here as the first stage: blob reads + bare parse.
        row["floor"] = row["read"] + row["parse"]
        summary[name] = row
    return summary


def table(summary: dict[str, Any]) -> str:
    lines = [f"{'':<34}{'diff':>9}{'/griffe':>9}{'matrix':>9}{'/floor':>9}"]
    diff, matrix, griffe = summary["diff"], summary["matrix"], summary["griffe"]

    def row(label: str, key: str, add_read: bool) -> None:
        d = diff[key] + (diff["read"] if add_read else 0.0)
        m = matrix[key] + (matrix["read"] if add_read else 0.0)
        lines.append(
            f"{label:<34}{d:>8.2f}s{d / griffe:>8.2f}x{m:>8.2f}s{m / matrix['floor']:>8.2f}x"
        )

    for stage in STAGES:
        row(f"read + {stage}" + (" (the floor)" if stage == "parse" else ""), stage, True)
    row("facts cached: analysis + report", "facts_cached", False)
    row("cold run", "cold", False)
    lines.append(f"griffe check: {griffe:.2f} s; targets: diff <= 0.4x griffe, matrix <= 2x floor")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs (default 3)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results JSON")
    parser.add_argument("--repo", type=Path, default=None, help="repository with the tags")
    parser.add_argument(
        "--quick", action="store_true", help=f"1 run, matrix over {bench.QUICK_RANGE}"
    )
    parser.add_argument("--entries-of", type=Path, default=None, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.entries_of is not None:  # the stages' own process (see `stages_apart`)
        sys.path.insert(0, str(bench.TOOL_DIR))
        entries = [Entry(**e) for e in json.loads(options.entries_of.read_text())]
        print(json.dumps(stages_here(options.repo, entries, bench.tool_jobs())))
        return 0
    runs_wanted = 1 if options.quick else options.runs
    matrix_range = bench.QUICK_RANGE if options.quick else bench.ALL_RELEASES
    repo = bench.ensure_repo(options.repo, None)
    tool = bench.freeze_tool(bench.TOOL_DIR)
    print(f"tool {tool.fingerprint}; repo {repo}; matrix {matrix_range}", flush=True)
    runs = [one_run(n, tool, repo, matrix_range) for n in range(1, runs_wanted + 1)]
    summary = summarise(runs)
    result = {
        "schema": "sglang-tracker/bench-stages@1",
        "tool": {
            "fingerprint": tool.fingerprint,
            "git_head": bench._git(bench.ROOT, "rev-parse", "HEAD").strip(),
        },
        "machine": {"cpu_count": os.cpu_count(), "jobs": bench.tool_jobs()},
        "matrix_range": matrix_range,
        "walk_query": WALK_QUERY,
        "summary": summary,
        "runs": runs,
    }
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(json.dumps(result, indent=2) + "\n")
    print()
    print(table(summary))
    print(f"\nresults: {options.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
