"""The same inputs give byte-identical JSON reports and snapshot files, whatever the cache
holds (cold, warm) and however many worker processes parse (TRACKER_JOBS=1 or 2; the pool
starts above 48 files to parse, so the trees here have more)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.support import (
    SRT,
    generated_files,
    run_process,
    tracker_env,
    write_tree,
)

COMMANDS = ("interface", "check", "diff", "snapshot")


def _commands(old: Path, new: Path, out: Path) -> dict[str, tuple[str, ...]]:
    return {
        "snapshot": ("snapshot", "local", "--source", f"dir:{new}", "-o", str(out)),
        "interface": ("interface", "local", "--source", f"dir:{new}", "--format", "json"),
        "check": ("check", "local", "--source", f"dir:{new}", "--all", "--format", "json"),
        "diff": ("diff", f"dir:{old}", f"dir:{new}", "--all", "--format", "json"),
    }


def _run(args: tuple[str, ...], cache: Path, jobs: str, out: Path) -> str:
    """One run in a process of its own (nothing remembered in memory from earlier runs)."""
    out.unlink(missing_ok=True)
    run = run_process(*args, env=tracker_env(TRACKER_CACHE_DIR=str(cache), TRACKER_JOBS=jobs))
    assert run.code == 0, (args, run.stderr)
    return out.read_text() if args[0] == "snapshot" else run.stdout


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    """Each command's output in four states: a cold cache (its own, empty) parsed by one
    worker or by two, and each of those caches again (warm, other number of workers)."""
    base = tmp_path_factory.mktemp("determinism")
    old_files = generated_files(70)
    new_files = generated_files(72)
    # the new tree breaks one wrapper and fixes another
    new_files[f"{SRT}models/gen_001.py"] = str(new_files[f"{SRT}models/gen_000.py"]).replace(
        "Gen0", "Gen1"
    )
    new_files[f"{SRT}models/gen_002.py"] = str(new_files[f"{SRT}models/gen_003.py"]).replace(
        "Gen3", "Gen2"
    )
    old = write_tree(base / "old", old_files)
    new = write_tree(base / "new", new_files)
    out = base / "snapshot.json"
    states: dict[str, dict[str, str]] = {
        "cold, 1 worker": {},
        "cold, 2 workers": {},
        "warm, after 1 worker": {},
        "warm, after 2 workers": {},
    }
    for name, args in _commands(old, new, out).items():
        one, two = base / f"{name}-cache-1", base / f"{name}-cache-2"
        states["cold, 1 worker"][name] = _run(args, one, "1", out)
        states["cold, 2 workers"][name] = _run(args, two, "2", out)
        states["warm, after 1 worker"][name] = _run(args, one, "2", out)
        states["warm, after 2 workers"][name] = _run(args, two, "1", out)
    return states


@pytest.mark.parametrize("command", COMMANDS)
def test_one_or_two_workers_give_byte_identical_output_on_a_cold_cache(
    outputs: dict[str, dict[str, str]], command: str
) -> None:
    assert outputs["cold, 1 worker"][command] == outputs["cold, 2 workers"][command]


def test_snapshot_files_are_byte_identical_cold_and_warm(
    outputs: dict[str, dict[str, str]],
) -> None:
    files = {state: out["snapshot"] for state, out in outputs.items()}
    assert len(set(files.values())) == 1, sorted(files)
    json.loads(files["cold, 1 worker"])


@pytest.mark.parametrize("command", ["interface", "check", "diff"])
def test_warm_runs_give_byte_identical_json_whichever_cold_run_filled_the_cache(
    outputs: dict[str, dict[str, str]], command: str
) -> None:
    assert outputs["warm, after 1 worker"][command] == outputs["warm, after 2 workers"][command]


def _without_provenance(text: str) -> Any:
    doc = json.loads(text)
    doc.pop("source", None)
    return doc


def test_interface_json_says_the_same_cold_and_warm(
    outputs: dict[str, dict[str, str]],
) -> None:
    cold = _without_provenance(outputs["cold, 1 worker"]["interface"])
    warm = _without_provenance(outputs["warm, after 1 worker"]["interface"])
    assert cold == warm


@pytest.mark.parametrize("command", ["check", "diff"])
def test_check_and_diff_json_say_the_same_cold_and_warm(
    outputs: dict[str, dict[str, str]], command: str
) -> None:
    cold = _without_provenance(outputs["cold, 1 worker"][command])
    warm = _without_provenance(outputs["warm, after 1 worker"][command])
    assert cold == warm


@pytest.mark.parametrize("command", ["interface", "check", "diff"])
def test_json_reports_are_byte_identical_cold_and_warm(
    outputs: dict[str, dict[str, str]], command: str
) -> None:
    assert outputs["cold, 1 worker"][command] == outputs["warm, after 1 worker"][command]
    assert outputs["cold, 2 workers"][command] == outputs["warm, after 2 workers"][command]


# -- a real release --------------------------------------------------------------------------------


@pytest.mark.realdata
def test_a_real_release_gives_identical_snapshots_and_reports_with_1_or_2_workers_cold_or_warm(
    stocked_releases: Callable[..., Path], tmp_path: Path
) -> None:
    wheel = stocked_releases("v0.5.9") / "pypi" / "sglang-0.5.9-py3-none-any.whl"
    results: dict[str, dict[str, str]] = {}
    for jobs in ("1", "2"):
        cache = tmp_path / f"cache-{jobs}"
        (cache / "pypi").mkdir(parents=True)
        (cache / "pypi" / wheel.name).symlink_to(wheel)
        env = tracker_env(TRACKER_CACHE_DIR=str(cache), TRACKER_JOBS=jobs, TRACKER_PIP="false")
        out = tmp_path / f"snapshot-{jobs}.json"
        steps = [
            ("interface", "interface", "v0.5.9", "--no-shipped", "--format", "json"),
            ("snapshot", "snapshot", "v0.5.9", "-o", str(out)),
            ("check", "check", "v0.5.9", "--no-shipped", "--all", "--format", "json"),
        ]
        if jobs == "1":
            steps.reverse()  # here the snapshot is the cold run; with 2 workers, interface
        results[jobs] = {}
        for name, *args in steps:
            run = run_process(*args, env=env, timeout=300)
            assert run.code == 0, (name, run.stderr)
            results[jobs][name] = out.read_text() if name == "snapshot" else run.stdout
    assert results["1"]["snapshot"] == results["2"]["snapshot"]
    assert results["1"]["check"] == results["2"]["check"]  # both warm
    assert json.loads(results["1"]["snapshot"])["version"] == "v0.5.9"
    kimi = [
        c
        for c in json.loads(results["1"]["check"])["checks"]
        if c["model"] == "KimiK25ForConditionalGeneration" and c["algorithm"] == "EAGLE3"
    ]
    assert kimi
    assert kimi[0]["status"] == "broken"
    assert set(kimi[0]["missing"]) >= {"get_embed_and_head", "set_eagle3_layers_to_capture"}
