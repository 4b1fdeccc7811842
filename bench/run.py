"""Benchmark `tracker` against griffe and against tree-sitter's bare parse (issue 7).

    python bench/run.py [--runs N] [--out bench/out/results.json] [--repo PATH] [--quick]
                        [--profile]

Works on a git repository with one annotated tag per real SGLang release v0.4.10 … v0.5.23
(built once with `build_release_repo` into `bench/out/repo` unless `--repo` is given) and
measures, in every run, in this order:

1. `tracker diff v0.5.8 v0.5.9 --repo REPO --no-shipped -q`, cold (a fresh, empty
   TRACKER_CACHE_DIR) then warm (the cache the cold run filled), and
   `griffe check sglang -s python -a v0.5.8 -b v0.5.9` run inside the repository (griffe
   exits 1 when it finds breaking changes: the exit code is recorded, not treated as an error);
2. `tracker matrix v0.4.10..v0.5.23 --algorithm EAGLE3 --repo REPO --no-shipped -q`, cold
   then warm (its own fresh cache);
3. the floor: the content ids of the files each cold run parsed (the `.pkl` names in the
   facts cache it filled are git blob ids) are read from the repository with one
   `git cat-file --batch` (timed), then parsed in a plain single-process loop of
   `tree_sitter.Parser(Language(tree_sitter_python.language())).parse(data)` (timed), and
   again split over as many forked processes as the tool uses (TRACKER_JOBS, else every
   core; largest blobs first, dealt round-robin), timed from the fork to the last join: the
   cold matrix is compared with that floor, on the same number of cores;
4. for every subprocess: wall time, user and system CPU, the largest resident set of any one
   of its processes (`wait4` rusage; on Linux it covers reaped descendants too) and the peak
   of the summed RSS of its whole process tree (sampled from /proc every 20 ms; pages shared
   by forked workers count once per process). Plus `tracker --help` start-up (median of 10).

Other people edit the tool while it is benchmarked, and a changed `parse.py` or rule file
changes the cache keys (a "warm" run would silently be cold). So the benchmark first copies
`tracker/`, `queries/` and `snapshots/` into `bench/out/tool/`, byte-compiles them, and runs
that frozen copy (`PYTHONPATH=bench/out/tool python bench/out/tool/bin/tracker ...`, what the
`tracker` console script does); the copy's fingerprint is in the results, along with whether
the live sources changed during the run. Warm runs that had to parse anything are flagged.

Reports medians over the runs, the ratios below with their targets, prints a table and
writes every raw number to JSON (default `bench/out/results.json`):

    cold diff / griffe               <= 0.4
    warm diff / griffe               <= 0.1
    cold matrix / floor (read + parse on the tool's cores) <= 2
    warm matrix                      <= 2 s
    matrix peak RSS                  <= 500 MB
    tracker --help                   <= 0.2 s

`--quick` is a smoke run: 1 run, matrix over v0.5.5..v0.5.12. `--profile` also runs one extra
cold matrix under cProfile with TRACKER_JOBS=1 (so parsing happens in the profiled process)
and writes `profile-matrix-cold.prof` and a text summary next to the JSON; it is not part of
the timings.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.metadata
import io
import json
import multiprocessing
import os
import platform
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT_DIR = HERE / "out"
DEFAULT_OUT = OUT_DIR / "results.json"
DEFAULT_REPO = OUT_DIR / "repo"
TOOL_DIR = OUT_DIR / "tool"

ALL_RELEASES = "v0.4.10..v0.5.23"
QUICK_RANGE = "v0.5.5..v0.5.12"
DIFF_OLD, DIFF_NEW = "v0.5.8", "v0.5.9"
ALGORITHM = "EAGLE3"
HELP_RUNS = 10
SAMPLE_SECONDS = 0.02
SCHEMA = "sglang-tracker/bench@1"

# The launcher is what pip writes as the `tracker` console script.
# What pip's console script does; guarded, since spawned workers import the main module.
LAUNCHER = (
    "import sys\nfrom tracker.cli import main\nif __name__ == '__main__':\n    sys.exit(main())\n"
)
COPIED = ("tracker", "queries", "snapshots")


@dataclass(frozen=True)
class Target:
    key: str
    label: str
    limit: float
    unit: str  # "x" for a ratio, "s" or "MB"


TARGETS = (
    Target("cold_diff_vs_griffe", "cold diff / griffe", 0.4, "x"),
    Target("warm_diff_vs_griffe", "warm diff / griffe", 0.1, "x"),
    Target("cold_matrix_vs_floor", "cold matrix / floor (reads + parse, same cores)", 2.0, "x"),
    Target("warm_matrix_seconds", "warm matrix", 2.0, "s"),
    Target("matrix_peak_rss_mb", "matrix max RSS (largest process, worst run)", 500.0, "MB"),
    Target("help_seconds", "tracker --help", 0.2, "s"),
)


# ------------------------------------------------------------------------ measuring


@dataclass
class Measured:
    """One subprocess: what it ran and what it cost."""

    argv: list[str]
    seconds: float
    user_seconds: float
    system_seconds: float
    max_rss_mb: float  # the largest single process (wait4 rusage, reaped descendants too)
    # Peak of the summed RSS of the process tree (sampled): an upper bound, since pages a
    # forked worker shares with its parent count in both.
    tree_rss_mb: float | None
    exit_code: int
    stderr_tail: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _rss_kb(pid: int) -> int:
    try:
        with Path(f"/proc/{pid}/status").open() as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return found
    for task in tasks:
        try:
            found.extend(int(c) for c in (task / "children").read_text().split())
        except (OSError, ValueError):
            continue
    return found


class TreeSampler:
    """Samples the summed RSS of a process and its descendants until stopped (Linux)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_kb = 0
        self.available = Path(f"/proc/{pid}/task/{pid}/children").exists()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> TreeSampler:
        if self.available:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self.available:
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            total, todo, seen = 0, [self.pid], set()
            while todo:
                pid = todo.pop()
                if pid in seen:
                    continue
                seen.add(pid)
                total += _rss_kb(pid)
                todo.extend(_children(pid))
            self.peak_kb = max(self.peak_kb, total)
            self._stop.wait(SAMPLE_SECONDS)


def _rusage_mb(value: int) -> float:
    # ru_maxrss is in kilobytes on Linux, bytes on macOS.
    return value / (1024 * 1024) if sys.platform == "darwin" else value / 1024


def measure(
    argv: Sequence[str], *, cwd: Path, env: dict[str, str], allowed: Sequence[int] = (0,)
) -> Measured:
    """Run `argv` with stdout discarded; time it and take its rusage with wait4."""
    with tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        with TreeSampler(proc.pid) as sampler:
            _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        tail = err.read()[-2000:].decode(errors="replace")
    result = Measured(
        argv=list(argv),
        seconds=seconds,
        user_seconds=usage.ru_utime,
        system_seconds=usage.ru_stime,
        max_rss_mb=_rusage_mb(usage.ru_maxrss),
        tree_rss_mb=sampler.peak_kb / 1024 if sampler.available else None,
        exit_code=proc.returncode,
        stderr_tail=tail,
    )
    if result.exit_code not in allowed:
        raise SystemExit(
            f"error: {' '.join(argv)} exited with {result.exit_code} in {cwd}:\n{tail}"
        )
    return result


# ------------------------------------------------------------------- the tool under test


def _fingerprint(root: Path) -> str:
    digest = hashlib.sha256()
    for name in ("tracker", "queries"):
        for path in sorted((root / name).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(root)).encode() + b"\0")
                digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@dataclass
class Tool:
    """A frozen copy of the tool, runnable like the `tracker` console script."""

    home: Path
    fingerprint: str
    version: str

    @property
    def argv(self) -> list[str]:
        return [sys.executable, str(self.home / "bin" / "tracker")]

    def env(self, cache: Path | None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("TRACKER_REPO", "PYTHONPATH")}
        env["PYTHONPATH"] = str(self.home)
        env.pop("TRACKER_CACHE_DIR", None)
        if cache is not None:
            env["TRACKER_CACHE_DIR"] = str(cache)
        return env


def freeze_tool(dest: Path) -> Tool:
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for name in COPIED:
        if (ROOT / name).exists():
            shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    (dest / "bin").mkdir()
    (dest / "bin" / "tracker").write_text(LAUNCHER)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(dest / "tracker")], check=True)
    tool = Tool(dest, _fingerprint(dest), "")
    probe = subprocess.run(
        [sys.executable, "-c", "import tracker; print(tracker.__file__, tracker.__version__)"],
        cwd=dest,
        env=tool.env(None),
        capture_output=True,
        text=True,
        check=True,
    )
    where, tool.version = probe.stdout.split()
    if not Path(where).resolve().is_relative_to(dest.resolve()):
        raise SystemExit(f"error: the frozen copy is shadowed by {where}")
    return tool


# --------------------------------------------------------------------------- the repo


def ensure_repo(repo: Path | None, archive_dir: Path | None) -> Path:
    if repo is None:
        repo = DEFAULT_REPO
        if not (repo / ".git").is_dir():
            if repo.exists() and any(repo.iterdir()):
                raise SystemExit(f"error: {repo} exists and is not a git repository")
            sys.path.insert(0, str(HERE))
            from build_release_repo import build_release_repo

            print(f"building {repo} from the release archives ...", flush=True)
            started = time.perf_counter()
            build_release_repo(repo, [ALL_RELEASES], archive_dir)
            print(f"  built in {time.perf_counter() - started:.1f} s", flush=True)
    repo = repo.resolve()
    tags = set(_git(repo, "tag", "--list").split())
    missing = {"v0.4.10", DIFF_OLD, DIFF_NEW, "v0.5.23"} - tags
    if missing:
        raise SystemExit(f"error: {repo} lacks the tags {', '.join(sorted(missing))}")
    return repo


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True
    ).stdout


# -------------------------------------------------------------------------- the floor


def facts_entries(cache: Path) -> list[Path]:
    """Every facts cache entry: `facts/<query-hash>-f<format>/<cid[:2]>/<cid>[.kind].pkl`."""
    return sorted((cache / "facts").glob("*/*/*.pkl"))


def cached_content_ids(cache: Path) -> list[str]:
    """The unique content ids (git blob ids) behind the facts entries of a tracker cache; a
    file cached in several kinds (full facts, `.defs` definitions only) counts once."""
    return sorted({p.name.split(".", 1)[0] for p in facts_entries(cache)})


def entry_kinds(cache: Path) -> dict[str, int]:
    kinds: dict[str, int] = {}
    for entry in facts_entries(cache):
        kind = entry.name.split(".", 1)[1]
        kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


def facts_dirs(cache: Path) -> list[str]:
    return sorted(p.name for p in (cache / "facts").glob("*") if p.is_dir())


def read_blobs(repo: Path, ids: Sequence[str]) -> tuple[list[bytes], float, int]:
    """(contents, seconds, missing) for blob ids, through one `git cat-file --batch`."""
    started = time.perf_counter()
    out = subprocess.run(
        ["git", "cat-file", "--batch"],
        cwd=repo,
        check=True,
        capture_output=True,
        input="".join(f"{i}\n" for i in ids).encode(),
    ).stdout
    blobs: list[bytes] = []
    missing, pos = 0, 0
    for _ in ids:
        newline = out.index(b"\n", pos)
        header = out[pos:newline].split()
        pos = newline + 1
        if len(header) < 3 or header[1] != b"blob":
            missing += 1
            continue
        size = int(header[2])
        blobs.append(out[pos : pos + size])
        pos += size + 1
    return blobs, time.perf_counter() - started, missing


def parse_all(blobs: Sequence[bytes]) -> float:
    import tree_sitter_python
    from tree_sitter import Language, Parser

    parser = Parser(Language(tree_sitter_python.language()))
    started = time.perf_counter()
    for data in blobs:
        parser.parse(data)
    return time.perf_counter() - started


# The work forked workers do on each item index (inherited by fork, never pickled).
_FORK_WORK: list[Callable[[int], object]] = []


def _run_indices(indices: Sequence[int]) -> int:
    work = _FORK_WORK[0]
    for index in indices:
        work(index)
    return len(indices)


def timed_on_forks(work: Callable[[int], object], sizes: Sequence[int], jobs: int) -> float:
    """Seconds to run `work(i)` for every item i (of size `sizes[i]`) on `jobs` forked
    processes, largest items first, dealt round-robin; from the fork to the last join."""
    _FORK_WORK[:] = [work]
    order = sorted(range(len(sizes)), key=lambda i: -sizes[i])
    shares = [order[j::jobs] for j in range(jobs)]
    started = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        done = sum(pool.map(_run_indices, shares))
    seconds = time.perf_counter() - started
    assert done == len(sizes)
    return seconds


def parse_parallel(blobs: Sequence[bytes], jobs: int) -> float:
    """Seconds to parse `blobs` on `jobs` forked processes (pool start to last result)."""
    import tree_sitter_python
    from tree_sitter import Language, Parser

    parser = Parser(Language(tree_sitter_python.language()))
    return timed_on_forks(lambda i: parser.parse(blobs[i]), [len(b) for b in blobs], jobs)


def tool_jobs() -> int:
    """How many processes the tool parses on (its `default_jobs`)."""
    env = os.environ.get("TRACKER_JOBS")
    return int(env) if env and env.isdigit() and int(env) > 0 else max(1, os.cpu_count() or 1)


@dataclass
class Floor:
    files: int
    bytes: int
    missing: int
    read_seconds: float
    parse_seconds: float
    jobs: int = 1
    parse_parallel_seconds: float = 0.0  # the same parse on `jobs` processes

    @property
    def seconds(self) -> float:
        return self.read_seconds + self.parse_seconds

    @property
    def parallel_seconds(self) -> float:
        return self.read_seconds + self.parse_parallel_seconds


def floor_here(repo: Path, ids: Sequence[str]) -> Floor:
    blobs, read_seconds, missing = read_blobs(repo, ids)
    parse_seconds = parse_all(blobs)
    jobs = tool_jobs()
    return Floor(
        len(blobs),
        sum(map(len, blobs)),
        missing,
        read_seconds,
        parse_seconds,
        jobs,
        parse_parallel(blobs, jobs),
    )


def floor(repo: Path, ids: Sequence[str]) -> Floor:
    """The floor, measured in a process of its own: blobs and trees held here would grow
    this process, and a child forked from it inherits its RSS high-water mark (wait4's
    ru_maxrss), which would inflate every later measurement."""
    with tempfile.NamedTemporaryFile("w", suffix=".ids", dir=OUT_DIR, delete=False) as f:
        f.write("\n".join(ids))
    try:
        out = subprocess.run(
            [
                sys.executable,
                str(Path(__file__).resolve()),
                "--repo",
                str(repo),
                "--floor-of",
                f.name,
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    finally:
        Path(f.name).unlink()
    result = Floor(**json.loads(out))
    if result.missing:
        print(
            f"  warning: {result.missing} of {len(ids)} content ids are not blobs of "
            f"{repo}; the floor is too low",
            flush=True,
        )
    return result


# --------------------------------------------------------------------------- one run


@contextlib.contextmanager
def scratch_cache(keep: bool) -> Iterator[Path]:
    parent = OUT_DIR / "caches"
    parent.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix="cache-", dir=parent))
    try:
        yield path
    finally:
        if not keep:
            shutil.rmtree(path, ignore_errors=True)


def griffe_argv() -> list[str]:
    beside = Path(sys.executable).parent / "griffe"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("griffe")
    return [found] if found else [sys.executable, "-m", "griffe"]


def cold_and_warm(
    tool: Tool, args: list[str], cache: Path, repo: Path
) -> tuple[Measured, Measured, list[str]]:
    argv = [*tool.argv, *args, "--repo", str(repo), "--no-shipped", "-q"]
    cold = measure(argv, cwd=tool.home, env=tool.env(cache))
    ids = cached_content_ids(cache)
    entries = len(facts_entries(cache))
    cold.extra = {
        "files_parsed": len(ids),
        "facts_entries": entries,
        "entry_kinds": entry_kinds(cache),
        "facts_dirs": facts_dirs(cache),
    }
    warm = measure(argv, cwd=tool.home, env=tool.env(cache))
    warm.extra = {
        "new_facts_entries": len(facts_entries(cache)) - entries,
        "facts_dirs": facts_dirs(cache),
    }
    if len(cold.extra["facts_dirs"]) != 1:
        print(f"  warning: the cold run wrote {cold.extra['facts_dirs']}", flush=True)
    if warm.extra["new_facts_entries"]:
        print(f"  warning: the warm run parsed {warm.extra['new_facts_entries']} files", flush=True)
    return cold, warm, ids


def one_run(number: int, tool: Tool, repo: Path, matrix_range: str, keep: bool) -> dict[str, Any]:
    run: dict[str, Any] = {"run": number, "loadavg_before": list(os.getloadavg())}

    def say(what: str, m: Measured | Floor) -> None:
        if isinstance(m, Floor):
            text = (
                f"{m.seconds:.2f} s (read {m.read_seconds:.2f} + parse "
                f"{m.parse_seconds:.2f}, {m.files} files); on {m.jobs} processes "
                f"{m.parallel_seconds:.2f} s"
            )
        else:
            tree = f"{m.tree_rss_mb:.0f}" if m.tree_rss_mb is not None else "?"
            text = (
                f"{m.seconds:.2f} s, max RSS {m.max_rss_mb:.0f} MB (tree {tree} MB), "
                f"exit {m.exit_code}"
            )
        print(f"  [{number}] {what:<12} {text}", flush=True)

    with scratch_cache(keep) as cache:
        cold, warm, diff_ids = cold_and_warm(tool, ["diff", DIFF_OLD, DIFF_NEW], cache, repo)
    say("diff cold", cold)
    say("diff warm", warm)
    griffe = measure(
        [*griffe_argv(), "check", "sglang", "-s", "python", "-a", DIFF_OLD, "-b", DIFF_NEW],
        cwd=repo,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        allowed=(0, 1),
    )
    say("griffe", griffe)
    with scratch_cache(keep) as cache:
        mcold, mwarm, matrix_ids = cold_and_warm(
            tool, ["matrix", matrix_range, "--algorithm", ALGORITHM], cache, repo
        )
    say("matrix cold", mcold)
    say("matrix warm", mwarm)
    diff_floor = floor(repo, diff_ids)
    say("floor diff", diff_floor)
    matrix_floor = floor(repo, matrix_ids)
    say("floor matrix", matrix_floor)
    run.update(
        diff_cold=asdict(cold),
        diff_warm=asdict(warm),
        griffe=asdict(griffe),
        matrix_cold=asdict(mcold),
        matrix_warm=asdict(mwarm),
        floor_diff=asdict(diff_floor),
        floor_matrix=asdict(matrix_floor),
        diff_content_ids_sha=hashlib.sha256("\n".join(diff_ids).encode()).hexdigest()[:16],
        matrix_content_ids_sha=hashlib.sha256("\n".join(matrix_ids).encode()).hexdigest()[:16],
    )
    return run


def help_timings(tool: Tool) -> list[Measured]:
    argv = [*tool.argv, "--help"]
    measure(argv, cwd=tool.home, env=tool.env(None))  # warm the page cache
    return [measure(argv, cwd=tool.home, env=tool.env(None)) for _ in range(HELP_RUNS)]


# ---------------------------------------------------------------------------- profile


def profile_matrix(
    tool: Tool, repo: Path, matrix_range: str, out: Path, keep: bool
) -> dict[str, Any]:
    """One cold matrix under cProfile, parsing in-process (TRACKER_JOBS=1)."""
    prof = out.with_name("profile-matrix-cold.prof")
    text = out.with_name("profile-matrix-cold.txt")
    with scratch_cache(keep) as cache:
        env = tool.env(cache)
        env["TRACKER_JOBS"] = "1"
        argv = [
            sys.executable,
            "-m",
            "cProfile",
            "-o",
            str(prof),
            "-m",
            "tracker",
            "matrix",
            matrix_range,
            "--algorithm",
            ALGORITHM,
            "--repo",
            str(repo),
            "--no-shipped",
            "-q",
        ]
        print("profiling a cold matrix (TRACKER_JOBS=1) ...", flush=True)
        measured = measure(argv, cwd=tool.home, env=env)
    buffer = io.StringIO()
    stats = pstats.Stats(str(prof), stream=buffer)
    stats.strip_dirs()
    buffer.write(
        f"cold matrix {matrix_range} under cProfile, TRACKER_JOBS=1: "
        f"{measured.seconds:.1f} s wall\n\n== by cumulative time ==\n"
    )
    stats.sort_stats("cumulative").print_stats(45)
    buffer.write("\n== by own time ==\n")
    stats.sort_stats("tottime").print_stats(30)
    text.write_text(buffer.getvalue())
    print(f"  {measured.seconds:.1f} s; profile in {prof}, summary in {text}", flush=True)
    return {
        "seconds": measured.seconds,
        "prof": str(prof),
        "summary": str(text),
        "argv": argv,
        "max_rss_mb": measured.max_rss_mb,
    }


# ---------------------------------------------------------------------------- summary


def _median(runs: list[dict[str, Any]], key: str, attr: str = "seconds") -> float:
    return statistics.median(float(r[key][attr]) for r in runs)


def summarise(runs: list[dict[str, Any]], helps: list[Measured]) -> dict[str, Any]:
    med: dict[str, float] = {
        key: _median(runs, key)
        for key in ("diff_cold", "diff_warm", "griffe", "matrix_cold", "matrix_warm")
    }
    for key in ("floor_diff", "floor_matrix"):
        read = _median(runs, key, "read_seconds")
        parse = _median(runs, key, "parse_seconds")
        med[f"{key}_read"], med[f"{key}_parse"] = read, parse
        med[key] = statistics.median(
            float(r[key]["read_seconds"]) + float(r[key]["parse_seconds"]) for r in runs
        )
        med[f"{key}_parallel"] = statistics.median(
            float(r[key]["read_seconds"]) + float(r[key]["parse_parallel_seconds"]) for r in runs
        )
    med["help"] = statistics.median(m.seconds for m in helps)
    measured = ("diff_cold", "diff_warm", "griffe", "matrix_cold", "matrix_warm")
    peak = {key: max(float(r[key]["max_rss_mb"]) for r in runs) for key in measured}
    tree = {key: max(float(r[key]["tree_rss_mb"] or 0.0) for r in runs) for key in measured}
    values = {
        "cold_diff_vs_griffe": med["diff_cold"] / med["griffe"],
        "warm_diff_vs_griffe": med["diff_warm"] / med["griffe"],
        "cold_matrix_vs_floor": med["matrix_cold"] / med["floor_matrix_parallel"],
        "warm_matrix_seconds": med["matrix_warm"],
        "matrix_peak_rss_mb": max(peak["matrix_cold"], peak["matrix_warm"]),
        "help_seconds": med["help"],
    }
    verdicts = {
        t.key: {
            "label": t.label,
            "value": values[t.key],
            "target": t.limit,
            "unit": t.unit,
            "met": values[t.key] <= t.limit,
        }
        for t in TARGETS
    }
    extra_ratios = {
        "cold_matrix_vs_one_core_floor": med["matrix_cold"] / med["floor_matrix"],
        "cold_diff_vs_floor": med["diff_cold"] / med["floor_diff"],
        "cold_matrix_vs_floor_parse_only": med["matrix_cold"] / med["floor_matrix_parse"],
    }
    return {
        "medians_seconds": med,
        "max_rss_mb": peak,
        "tree_rss_mb": tree,
        "targets": verdicts,
        "other_ratios": extra_ratios,
    }


def _parsed(measured: dict[str, Any]) -> str:
    extra = measured["extra"]
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(extra["entry_kinds"].items()))
    return f"{extra['files_parsed']} files parsed ({kinds})"


def table(summary: dict[str, Any], runs: list[dict[str, Any]], helps: list[Measured]) -> str:
    med = summary["medians_seconds"]
    rss, tree = summary["max_rss_mb"], summary["tree_rss_mb"]
    first = runs[0]
    griffe_codes = sorted({int(r["griffe"]["exit_code"]) for r in runs})

    def row(name: str, key: str, note: str = "") -> str:
        each = " ".join(f"{float(r[key]['seconds']):.2f}" for r in runs)
        cpu = statistics.median(
            float(r[key]["user_seconds"]) + float(r[key]["system_seconds"]) for r in runs
        )
        return (
            f"{name:<15}{med[key]:>9.2f}  {cpu:>6.1f}  {rss[key]:>7.0f}  {tree[key]:>7.0f}"
            f"  {each:<24}{note}"
        )

    lines = [
        f"{'measurement':<15}{'median s':>9}  {'cpu s':>6}  {'RSS MB':>7}  {'tree MB':>7}"
        f"  {'each run (s)':<24}note",
        row("diff cold", "diff_cold", _parsed(first["diff_cold"])),
        row("diff warm", "diff_warm"),
        row("griffe check", "griffe", f"exit {','.join(map(str, griffe_codes))}"),
        row("matrix cold", "matrix_cold", _parsed(first["matrix_cold"])),
        row("matrix warm", "matrix_warm"),
    ]
    for key, name in (("floor_diff", "floor diff"), ("floor_matrix", "floor matrix")):
        f = first[key]
        parts = f"read {med[key + '_read']:.2f} + parse {med[key + '_parse']:.2f}"
        lines.append(
            f"{name:<15}{med[key]:>9.2f}  {'':>6}  {'':>7}  {'':>7}  {parts:<24}"
            f"{f['files']} blobs, {f['bytes'] / 1e6:.1f} MB, 1 process"
        )
        lines.append(
            f"{'':<15}{med[key + '_parallel']:>9.2f}  {'':>6}  {'':>7}  {'':>7}  "
            f"{'':<24}the same on {f.get('jobs', 1)} processes"
        )
    fastest = min(m.seconds for m in helps)
    lines.append(
        f"{'tracker --help':<15}{med['help']:>9.3f}  {'':>6}  "
        f"{max(m.max_rss_mb for m in helps):>7.0f}  {'':>7}  "
        f"{'min ' + format(fastest, '.3f'):<24}median of {len(helps)}"
    )
    lines += [
        "",
        "RSS MB: largest single process (wait4 ru_maxrss); tree MB: peak of the "
        "summed RSS of the process tree (sampled; counts pages shared with forked "
        "workers once per process)",
        "",
    ]
    lines.append(f"{'ratio / value':<46}{'got':>10}  {'target':>9}  verdict")
    for verdict in summary["targets"].values():
        unit, value = verdict["unit"], verdict["value"]
        digits = 0 if unit == "MB" else 3 if value < 1 else 2
        suffix = "x" if unit == "x" else " " + unit
        got = f"{value:.{digits}f}{suffix}"
        goal = f"<= {verdict['target']:g}{suffix}"
        lines.append(
            f"{verdict['label']:<46}{got:>10}  {goal:>9}  {'met' if verdict['met'] else 'MISSED'}"
        )
    for key, value in summary["other_ratios"].items():
        lines.append(f"{key.replace('_', ' '):<46}{value:>9.2f}x")
    return "\n".join(lines)


# ------------------------------------------------------------------------------- main


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=None, help="runs (default 3; 1 with --quick)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results JSON")
    parser.add_argument(
        "--repo",
        type=Path,
        default=None,
        help=f"repository with the release tags (default: build {DEFAULT_REPO})",
    )
    parser.add_argument(
        "--archive-dir",
        type=Path,
        default=None,
        help="release archive cache used when building the repository",
    )
    parser.add_argument(
        "--quick", action="store_true", help=f"smoke run: 1 run, matrix over {QUICK_RANGE}"
    )
    parser.add_argument(
        "--matrix-range",
        default=None,
        help=f"matrix range (default {ALL_RELEASES}, {QUICK_RANGE} with --quick)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also profile one cold matrix with cProfile (not timed)",
    )
    parser.add_argument(
        "--keep-caches", action="store_true", help="keep the scratch caches under bench/out/caches"
    )
    parser.add_argument("--floor-of", type=Path, default=None, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.floor_of is not None:  # the floor's own process (see `floor`)
        ids = options.floor_of.read_text().split()
        print(json.dumps(asdict(floor_here(options.repo, ids))))
        return 0
    runs_wanted = options.runs if options.runs is not None else (1 if options.quick else 3)
    if runs_wanted < 1:
        parser.error("--runs must be at least 1")
    matrix_range = options.matrix_range or (QUICK_RANGE if options.quick else ALL_RELEASES)
    if _version("griffe") is None:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "griffe"], check=True)

    started_at = time.time()
    repo = ensure_repo(options.repo, options.archive_dir)
    tool = freeze_tool(TOOL_DIR)
    print(
        f"tool {tool.version} ({tool.fingerprint}) frozen in {tool.home}; repo {repo}; "
        f"matrix {matrix_range}; {runs_wanted} run(s)",
        flush=True,
    )

    helps = help_timings(tool)
    print(
        f"  tracker --help: median {statistics.median(m.seconds for m in helps):.3f} s", flush=True
    )
    runs = [
        one_run(n, tool, repo, matrix_range, options.keep_caches) for n in range(1, runs_wanted + 1)
    ]
    for key in ("diff_content_ids_sha", "matrix_content_ids_sha"):
        if len({r[key] for r in runs}) != 1:
            print(f"  warning: the cold runs parsed different files ({key})", flush=True)

    summary = summarise(runs, helps)
    measured_seconds = time.time() - started_at
    profile = (
        profile_matrix(tool, repo, matrix_range, options.out, options.keep_caches)
        if options.profile
        else None
    )
    live_fingerprint = _fingerprint(ROOT)
    result: dict[str, Any] = {
        "schema": SCHEMA,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started_at)),
        "measured_seconds": measured_seconds,  # the repository build, help and the runs
        "wall_seconds": time.time() - started_at,  # also the profile, when asked for
        "machine": {
            "cpu_count": os.cpu_count(),
            "python": sys.version.split()[0],
            "implementation": platform.python_implementation(),
            "platform": platform.platform(),
            "loadavg_end": list(os.getloadavg()),
        },
        "tool": {
            "version": tool.version,
            "fingerprint": tool.fingerprint,
            "git_head": _git(ROOT, "rev-parse", "HEAD").strip(),
            "live_sources_changed_during_run": live_fingerprint != tool.fingerprint,
            "tracker_jobs": os.environ.get("TRACKER_JOBS"),
        },
        "versions": {
            name: _version(name)
            for name in ("griffe", "tree-sitter", "tree-sitter-python", "GitPython")
        },
        "git": _git(repo, "--version").strip(),
        "repo": str(repo),
        "commands": {
            "diff": [
                *tool.argv,
                "diff",
                DIFF_OLD,
                DIFF_NEW,
                "--repo",
                str(repo),
                "--no-shipped",
                "-q",
            ],
            "griffe": [
                *griffe_argv(),
                "check",
                "sglang",
                "-s",
                "python",
                "-a",
                DIFF_OLD,
                "-b",
                DIFF_NEW,
            ],
            "matrix": [
                *tool.argv,
                "matrix",
                matrix_range,
                "--algorithm",
                ALGORITHM,
                "--repo",
                str(repo),
                "--no-shipped",
                "-q",
            ],
        },
        "matrix_range": matrix_range,
        "runs_count": runs_wanted,
        "summary": summary,
        "help": [asdict(m) for m in helps],
        "runs": runs,
        "profile": profile,
    }
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(json.dumps(result, indent=2) + "\n")
    print()
    print(table(summary, runs, helps))
    if result["tool"]["live_sources_changed_during_run"]:
        print(
            "\nnote: tracker/ or queries/ changed during the run; the numbers are for the "
            f"copy taken at the start ({tool.fingerprint})"
        )
    print(
        f"\nresults: {options.out}  (measured in {measured_seconds / 60:.1f} min, "
        f"{result['wall_seconds'] / 60:.1f} min in all)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
