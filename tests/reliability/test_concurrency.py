"""Several `tracker` processes filling one empty cache at the same moment: each gives the
answer a lone process gives, and the cache they leave is whole and valid."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from fake_github import REPO, TOKEN, fake_github

from tests.reliability.support import (
    MAIN,
    SRT,
    FakeIndex,
    assert_one_line_error,
    load_cached_snapshot,
    run_process,
    tiny_files,
    tracker_command,
    tracker_env,
)
from tracker.extract.parse import extract_facts
from tracker.extract.store import _decode
from tracker.sources.dir import DirSource

MakeDir = Callable[..., Path]


def _together(commands: list[list[str]], env: dict[str, str]) -> list[tuple[int, str, str]]:
    """Start every command, then wait for all: they run at the same time."""
    processes = [
        subprocess.Popen(
            command,
            env=env,
            cwd=MAIN,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for command in commands
    ]
    results = []
    for process in processes:
        out, err = process.communicate(timeout=180)
        results.append((process.returncode, out, err))
    return results


def _assert_valid_cache(cache: Path, root: Path) -> None:
    """Every facts entry decodes to the facts of the file it is named after; every cached
    snapshot loads; no temporary file is left."""
    local = DirSource(root).tree()
    by_id = {cid: path for path, cid in local.files.items()}
    entries = sorted((cache / "facts").rglob("*.pkl"))
    assert entries
    for entry in entries:
        facts = _decode(entry.read_bytes())
        assert facts is not None, entry
        cid = entry.name.split(".")[0]
        assert facts.content_id == cid
        path = by_id[cid]
        expected = extract_facts(
            path, cid, local.read(path), full=not entry.name.endswith(".defs.pkl")
        )
        assert facts._replace(path=path) == expected
    snapshots = sorted((cache / "snapshots").glob("*.json"))
    assert snapshots
    for snap in snapshots:
        assert load_cached_snapshot(snap) is not None, snap
    assert [p for p in cache.rglob("*") if p.name.endswith(".tmp")] == []


def test_two_snapshot_runs_filling_one_empty_cache_write_identical_valid_results(
    sgl_dir: MakeDir, tmp_path: Path
) -> None:
    root = sgl_dir(generated=70)  # > 48 files to parse: the process pool is used
    cache = tmp_path / "shared-cache"
    env = tracker_env(TRACKER_CACHE_DIR=str(cache), TRACKER_JOBS="2")
    outs = [tmp_path / f"out{i}.json" for i in range(2)]
    results = _together(
        [
            tracker_command("snapshot", "local", "--source", f"dir:{root}", "-o", str(o))
            for o in outs
        ],
        env,
    )
    for code, _, err in results:
        assert code == 0, err
    lone_out = tmp_path / "lone.json"
    lone = run_process(
        "snapshot",
        "local",
        "--source",
        f"dir:{root}",
        "-o",
        str(lone_out),
        env={**env, "TRACKER_CACHE_DIR": str(tmp_path / "lone-cache")},
    )
    assert lone.code == 0, lone.stderr
    assert outs[0].read_bytes() == outs[1].read_bytes() == lone_out.read_bytes()
    _assert_valid_cache(cache, root)


def test_three_interface_runs_filling_one_empty_cache_print_identical_json(
    sgl_dir: MakeDir, tmp_path: Path
) -> None:
    root = sgl_dir(generated=70)
    cache = tmp_path / "shared-cache"
    env = tracker_env(TRACKER_CACHE_DIR=str(cache))
    command = tracker_command("interface", "local", "--source", f"dir:{root}", "--format", "json")
    results = _together([command, command, command], env)
    for code, _, err in results:
        assert code == 0, err
    assert results[0][1] == results[1][1] == results[2][1]
    assert results[0][1].startswith("{")
    _assert_valid_cache(cache, root)


def test_two_runs_downloading_the_same_release_at_once_both_succeed(
    fake_index: FakeIndex, cache_dir: Path
) -> None:
    command = tracker_command("interface", "v0.5.9", "--no-shipped", "--format", "json")
    results = _together([command, command], tracker_env())
    for code, _, err in results:
        assert code == 0, err
    assert results[0][1].replace("(cached)", "(analysed)") == results[1][1].replace(
        "(cached)", "(analysed)"
    )
    kept = sorted(p.name for p in (cache_dir / "pypi").iterdir())
    wheel = "sglang-0.5.9-py3-none-any.whl"
    assert kept == [wheel, f"{wheel}.files.json", "versions.json"]  # no scratch folders
    assert (cache_dir / "pypi" / wheel).read_bytes() == (fake_index.wheels / wheel).read_bytes()
    listed = json.loads((cache_dir / "pypi" / f"{wheel}.files.json").read_text())
    assert f"{SRT}speculative/eagle_worker.py" in listed["files"]
    assert json.loads((cache_dir / "pypi" / "versions.json").read_text())["versions"][-1] == (
        "v0.5.10"
    )


def test_two_runs_cloning_the_same_url_at_once_both_succeed_with_one_clone(
    make_git_repo: Callable[..., Path], cache_dir: Path
) -> None:
    files = {p: t for p, t in tiny_files().items() if isinstance(t, str)}
    origin = make_git_repo({"v0.5.1": files, "v0.5.2": {**files, "README.md": "2\n"}})
    url = origin.as_uri()
    command = tracker_command("interface", "v0.5.2", "--repo", url, "--format", "json")
    results = _together([command, command], tracker_env())
    for code, _, err in results:
        assert code == 0, err
    assert results[0][1] == results[1][1]
    clones = list((cache_dir / "git").iterdir())
    assert len(clones) == 1, clones  # no scratch clone left behind


# -- two watch runs filing to one repository -------------------------------------------------------


def test_a_second_watch_post_on_the_same_state_or_repository_is_refused_while_the_first_files(
    breaking_repo: Path, tmp_path: Path
) -> None:
    with fake_github() as (url, state):
        state.hold_after_create = 1  # the first run's first issue is filed, its answer held

        def watch(state_file: Path) -> list[str]:
            return tracker_command(
                "watch", "--repo", str(breaking_repo), "--post", REPO, "--api-url", url,
                "--state", str(state_file), "--since", "v0.5.9", "-a", "EAGLE3", "-q",
            )  # fmt: skip

        env = tracker_env(GITHUB_TOKEN=TOKEN)
        shared = tmp_path / "state.json"
        first = subprocess.Popen(
            watch(shared), env=env, cwd=MAIN, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        try:
            deadline = time.monotonic() + 120
            while state.creates < 1:
                assert first.poll() is None, first.communicate()
                assert time.monotonic() < deadline, "the first run never filed"
                time.sleep(0.05)
            same_state = run_process(*watch(shared)[3:], env=env)
            assert_one_line_error(
                same_state, f"another tracker run is using the watch state {shared}"
            )
            other_state = run_process(*watch(tmp_path / "other.json")[3:], env=env)
            assert_one_line_error(other_state, f"another tracker run is using github:{REPO}")
        finally:
            state.release.set()
            _, err = first.communicate(timeout=120)
        assert first.returncode == 0, err
        titles = [issue["title"] for issue in state.issues]
        assert len(titles) == len(set(titles)) >= 1
        again = run_process(*watch(tmp_path / "later.json")[3:], env=env)
        assert again.code == 0, again.stderr
        assert len(state.issues) == len(titles)  # a later run finds them filed
