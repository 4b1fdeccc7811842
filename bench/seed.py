"""The seed scenario and a fork, on a fresh install with its shipped data (issue 24).

    python bench/seed.py [--runs N] [--repo PATH] [--out bench/out/seed.json]

"I patched my SGLang tree; does EAGLE3 work now?": the v0.5.9 tree of the release
repository (`run.py` builds it) written to a directory, KimiK25ForConditionalGeneration
given the delegating `get_embed_and_head` / `set_embed_and_head` of the seed, then, on the
frozen copy of the tool (with its facts pack; built into the copy when the checkout has
none) and an empty user cache, in every run:

| measurement | what |
| --- | --- |
| seed cold | `tracker check dir:TREE -a EAGLE3 -m KimiK25ForConditionalGeneration`, fresh cache |
| seed warm | the same again (the tree unchanged) |
| parse changed | a bare tree-sitter parse of the files the tree changes from v0.5.9 |
| seed edited | one more edit to kimi_k25.py, the same command |
| fork cold | `tracker check HEAD -a EAGLE3 --repo FORK`, fresh cache |

FORK is a clone of the release repository whose HEAD is v0.5.9 with 50 files changed.

The floor is `parse changed` + `seed warm`, in the same run. Then the installed size: `pip
install` of the checkout (with the pack) into a fresh venv, `du` of the package and of the
whole venv. Targets: seed cold <= 1.0 s and <= 3x its floor; seed edited <= 0.5 s; fork
cold <= 2 s; the package < 40 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent))

from bench import run as bench

RELEASE = "v0.5.9"
MODEL = "KimiK25ForConditionalGeneration"
KIMI = "python/sglang/srt/models/kimi_k25.py"
CLASS_LINE = f"class {MODEL}(nn.Module):\n"
SEED_PATCH = """\
    def get_embed_and_head(self):
        return self.language_model.get_embed_and_head()

    def set_embed_and_head(self, embed, head):
        return self.language_model.set_embed_and_head(embed, head)

"""
EDIT = """\
    def set_eagle3_layers_to_capture(self, layer_ids=None):
        return self.language_model.set_eagle3_layers_to_capture(layer_ids)

"""
FORK_FILES = 50
PACK = Path("tracker") / "data" / "facts.pack"
PACK_CACHE = bench.OUT_DIR / "pack-cache"
TARGETS = (
    ("seed_cold_seconds", "seed cold", 1.0, "s"),
    ("seed_cold_vs_floor", "seed cold / (parse changed + seed warm)", 3.0, "x"),
    ("seed_edited_seconds", "seed after one edit", 0.5, "s"),
    ("fork_cold_seconds", "fork of 50 changed files, first run", 2.0, "s"),
    ("package_mb", "installed package (tracker/)", 40.0, "MB"),
)


def _insert_after_class_line(path: Path, text: str) -> None:
    source = path.read_text()
    at = source.index(CLASS_LINE) + len(CLASS_LINE)
    path.write_text(source[:at] + text + source[at:])


def seed_tree(repo: Path, dest: Path) -> list[str]:
    """v0.5.9's `python/` written to `dest`, with the seed's patch; the repo paths it
    changes."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "archive", RELEASE, "python"], cwd=repo, capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    _insert_after_class_line(dest / KIMI, SEED_PATCH)
    return [KIMI]


def ensure_pack(tool: bench.Tool) -> str:
    """The frozen copy's facts pack: the checkout's, else one built into the copy from
    every release (facts cached in bench/out/pack-cache across runs)."""
    target = tool.home / PACK
    if target.is_file():
        return "shipped with the checkout"
    env = tool.env(PACK_CACHE)
    print("building the facts pack into the frozen copy ...", flush=True)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, str(bench.ROOT / "tools" / "build_facts_pack.py"), "--out", str(target)],
        cwd=tool.home,
        env=env,
        check=True,
    )
    return f"built for this benchmark in {time.perf_counter() - started:.0f} s"


def fork_repo(repo: Path, dest: Path) -> list[str]:
    """A clone of the release repository whose HEAD is v0.5.9 with FORK_FILES files under
    srt/ changed (spread evenly over them in path order); the paths changed."""
    if dest.exists():
        shutil.rmtree(dest)
    git = ["git", "-c", "user.name=fork", "-c", "user.email=fork@example.invalid"]
    subprocess.run([*git, "clone", "-q", "--shared", str(repo), str(dest)], check=True)
    subprocess.run([*git, "-C", str(dest), "checkout", "-q", "-B", "fork", RELEASE], check=True)
    listed = subprocess.run(
        ["git", "-C", str(dest), "ls-files", "python/sglang/srt/*.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    step = max(1, len(listed) // FORK_FILES)
    changed = listed[::step][:FORK_FILES]
    for path in changed:
        with (dest / path).open("a") as handle:
            handle.write("\n# a fork's change\n")
    subprocess.run([*git, "-C", str(dest), "commit", "-q", "-am", "fork changes"], check=True)
    return changed


def parse_seconds(root: Path, paths: list[str]) -> float:
    """A bare tree-sitter parse of `paths` below `root`, best of 5."""
    blobs = [(root / p).read_bytes() for p in paths]
    return min(bench.parse_all(blobs) for _ in range(5))


def installed_size(tool: bench.Tool, work: Path) -> dict[str, float]:
    """`pip install` of the checkout, with the frozen copy's pack, into a fresh venv: the
    MB of the installed package and of the whole venv (pip and setuptools included)."""
    source = work / "source"
    if source.exists():
        shutil.rmtree(source)
    source.mkdir(parents=True)
    for name in ("tracker", "queries", "snapshots", "schemas"):
        shutil.copytree(
            bench.ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__")
        )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(bench.ROOT / name, source / name)
    shutil.copy(tool.home / PACK, source / PACK)
    venv = work / "venv"
    if venv.exists():
        shutil.rmtree(venv)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    empty = _du(venv)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(source)]
    subprocess.run(pip, check=True, capture_output=True)
    [package] = venv.glob("lib/python*/site-packages/tracker")
    return {
        "package_mb": _du(package),
        "venv_mb": _du(venv),
        "venv_before_mb": empty,
        "pack_mb": (package / "data" / "facts.pack").stat().st_size / 1e6,
    }


def _du(path: Path) -> float:
    out = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0]) / 1024


def one_run(number: int, tool: bench.Tool, tree: Path, fork: Path, cwd: Path) -> dict[str, Any]:
    """One run of each measurement; the commands run in `cwd`, a directory outside any git
    checkout, as a user's shell would be (inside one, the tool also asks git whether that
    checkout is SGLang, which costs gitpython's import)."""
    run: dict[str, Any] = {"run": number, "loadavg_before": list(os.getloadavg())}
    check = [*tool.argv, "check", f"dir:{tree}", "-a", "EAGLE3", "-m", MODEL, "-q"]
    with bench.scratch_cache(keep=False) as cache:
        env = tool.env(cache)
        run["seed_cold"] = asdict(bench.measure(check, cwd=cwd, env=env))
        run["seed_warm"] = asdict(bench.measure(check, cwd=cwd, env=env))
        _insert_after_class_line(tree / KIMI, EDIT)
        try:
            run["seed_edited"] = asdict(bench.measure(check, cwd=cwd, env=env))
        finally:
            source = (tree / KIMI).read_text()
            (tree / KIMI).write_text(source.replace(EDIT, "", 1))
    fork_check = [*tool.argv, "check", "HEAD", "-a", "EAGLE3", "--repo", str(fork), "-q"]
    with bench.scratch_cache(keep=False) as cache:
        run["fork_cold"] = asdict(bench.measure(fork_check, cwd=cwd, env=tool.env(cache)))
    for key in ("seed_cold", "seed_warm", "seed_edited", "fork_cold"):
        print(f"  [{number}] {key:<12} {run[key]['seconds']:.2f} s", flush=True)
    return run


def summarise(runs: list[dict[str, Any]], parse: float, size: dict[str, float]) -> dict[str, Any]:
    med = {
        key: statistics.median(float(r[key]["seconds"]) for r in runs)
        for key in ("seed_cold", "seed_warm", "seed_edited", "fork_cold")
    }
    # The floor of each run, from that run's own warm check.
    floors = [parse + float(r["seed_warm"]["seconds"]) for r in runs]
    ratios = [float(r["seed_cold"]["seconds"]) / f for r, f in zip(runs, floors, strict=True)]
    values = {
        "seed_cold_seconds": med["seed_cold"],
        "seed_cold_vs_floor": statistics.median(ratios),
        "seed_edited_seconds": med["seed_edited"],
        "fork_cold_seconds": med["fork_cold"],
        "package_mb": size["package_mb"],
    }
    targets = {
        key: {
            "label": label,
            "value": values[key],
            "target": limit,
            "unit": unit,
            "met": values[key] <= limit,
        }
        for key, label, limit, unit in TARGETS
    }
    return {
        "medians_seconds": med,
        "parse_changed_seconds": parse,
        "floor_seconds": statistics.median(floors),
        "size": size,
        "targets": targets,
    }


def table(summary: dict[str, Any], runs: list[dict[str, Any]]) -> str:
    med = summary["medians_seconds"]
    lines = [f"{'measurement':<14}{'median s':>9}  each run (s)"]
    for key in ("seed_cold", "seed_warm", "seed_edited", "fork_cold"):
        each = " ".join(f"{float(r[key]['seconds']):.2f}" for r in runs)
        lines.append(f"{key.replace('_', ' '):<14}{med[key]:>9.2f}  {each}")
    lines.append(f"{'parse changed':<14}{summary['parse_changed_seconds']:>9.4f}")
    lines.append(f"{'floor':<14}{summary['floor_seconds']:>9.2f}  parse changed + seed warm")
    size = summary["size"]
    lines.append(
        f"installed: package {size['package_mb']:.1f} MB (pack {size['pack_mb']:.1f} MB); "
        f"venv {size['venv_mb']:.0f} MB, {size['venv_before_mb']:.0f} MB of it before install"
    )
    lines += ["", f"{'target':<44}{'got':>9}  {'limit':>8}  verdict"]
    for t in summary["targets"].values():
        suffix = "x" if t["unit"] == "x" else " " + t["unit"]
        got = f"{t['value']:.2f}{suffix}"
        lines.append(
            f"{t['label']:<44}{got:>9}  {'<= ' + format(t['target'], 'g') + suffix:>8}  "
            f"{'met' if t['met'] else 'MISSED'}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repo", type=Path, default=None, help="release repository (run.py)")
    parser.add_argument("--out", type=Path, default=bench.OUT_DIR / "seed.json")
    parser.add_argument(
        "--archive-dir", type=Path, default=None, help="release archives, to build the repo"
    )
    options = parser.parse_args(argv)
    repo = bench.ensure_repo(options.repo, options.archive_dir)
    tool = bench.freeze_tool(bench.TOOL_DIR)
    pack = ensure_pack(tool)
    work = Path(tempfile.mkdtemp(prefix="seed-", dir=bench.OUT_DIR))
    try:
        tree = work / "tree"
        changed = seed_tree(repo, tree)
        fork_changed = fork_repo(repo, work / "fork")
        parse = parse_seconds(tree, changed)
        print(f"tool {tool.version} ({tool.fingerprint}); pack {pack}", flush=True)
        with tempfile.TemporaryDirectory(prefix="tracker-seed-cwd-") as cwd:
            runs = [
                one_run(n, tool, tree, work / "fork", Path(cwd)) for n in range(1, options.runs + 1)
            ]
        size = installed_size(tool, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    summary = summarise(runs, parse, size)
    result = {
        "schema": "sglang-tracker/bench-seed@1",
        "tool": {"version": tool.version, "fingerprint": tool.fingerprint, "pack": pack},
        "machine": {"cpu_count": os.cpu_count(), "loadavg_end": list(os.getloadavg())},
        "changed": changed,
        "fork_changed": fork_changed,
        "summary": summary,
        "runs": runs,
    }
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(json.dumps(result, indent=2) + "\n")
    print()
    print(table(summary, runs))
    print(f"\nresults: {options.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
