"""Analysing versions one after another in one workspace (reusing what an earlier version's
byte-identical code gave, whole or module by module) yields exactly the snapshots a fresh
analysis of each gives."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sgl_trees import unpack_wheel

from bench.build_release_repo import build_release_repo
from bench.build_replay_repo import ReplayHistory
from tracker.analysis import compat, interface, loader
from tracker.analysis import index as index_module
from tracker.analysis.index import VersionIndex
from tracker.analysis.loader import load_index
from tracker.analysis.reuse import MODELS_PREFIX
from tracker.compare.snapshot import to_json
from tracker.compare.workspace import Feedback, Workspace
from tracker.extract import store
from tracker.sources import open_source
from tracker.sources.base import Source
from tracker.sources.git import GitSource
from tracker.sources.pypi import PypiSource

pytestmark = pytest.mark.realdata

OLD, NEW = "v0.5.8", "v0.5.9"
KIMI_MODULE = "python/sglang/srt/models/kimi_k25.py"
EAGLE_WORKER = "python/sglang/srt/speculative/eagle_worker.py"


@pytest.fixture
def git_source() -> Iterator[Callable[[Path], GitSource]]:
    """`git_source(repo)`: a source over a git repository, closed when the test ends.
    gitpython keeps helper processes for object reads; left to the garbage collector, their
    pipes may be finalised before the processes are stopped, which warns."""
    opened: list[GitSource] = []

    def open_repo(repo: Path) -> GitSource:
        opened.append(GitSource(repo))
        return opened[-1]

    yield open_repo
    for source in opened:
        source.close()


def _in_sequence(source: Source, versions: list[str]) -> list[str]:
    workspace = Workspace(source, use_shipped=False, use_cache=False)
    return [to_json(workspace.snapshot_of(source, v)) for v in versions]


def _each_afresh(source: Source, versions: list[str]) -> list[str]:
    out = []
    for v in versions:
        # Nothing kept in memory from the version before: facts are unpickled again (new
        # objects), so no index reuses another's per-module part.
        for _ in range(2):
            store.recent.next_version()
            index_module._parts.next_version()
        out.append(
            to_json(Workspace(source, use_shipped=False, use_cache=False).snapshot_of(source, v))
        )
    return out


def _sampled_commits(history: ReplayHistory) -> list[str]:
    """Runs of adjacent commits around the ones that add kimi_k25.py and change
    eagle_worker.py (files the analysis reads) and into `layers/` (files it does not), and
    a stride through the rest, in history order."""
    numbers = {0, len(history.commits) - 1}
    for path in (KIMI_MODULE, EAGLE_WORKER):
        at = history.changing(path).number
        numbers |= set(range(at - 3, at + 3))
    layers = next(c.number for c in history.commits if "/srt/layers/" in c.file.path)
    numbers |= set(range(layers - 1, layers + 4))
    numbers |= set(range(0, len(history.commits), 97))
    by_number = {c.number: c.commit for c in history.commits}
    return [OLD] + [by_number[n] for n in sorted(numbers) if n in by_number] + [NEW]


@dataclass
class _Calls:
    """What the stages were asked to do while counted (`_count_calls`)."""

    parsed: list[str] = field(default_factory=list)  # files, by repo path
    built: list[str] = field(default_factory=list)  # interfaces, by version
    checked: list[str] = field(default_factory=list)  # model checks, by class name


def _count_calls(monkeypatch: pytest.MonkeyPatch) -> _Calls:
    """Count, from now on, the files parsed in this process, the interfaces built and the
    model checks made."""
    calls = _Calls()
    parse, build, check = store._parse_and_store, interface.build_interface, compat.check_entry

    def counted_parse(base: Path, path: str, *args: Any) -> Any:
        calls.parsed.append(path)
        return parse(base, path, *args)

    def counted_build(version: str, index: VersionIndex) -> interface.Interface:
        calls.built.append(version)
        return build(version, index)

    def counted_check(
        index: VersionIndex, entry: compat.EntryClass, *args: Any
    ) -> compat.ModelCheck:
        calls.checked.append(entry.name)
        return check(index, entry, *args)

    monkeypatch.setattr(store, "_parse_and_store", counted_parse)
    monkeypatch.setattr(interface, "build_interface", counted_build)
    monkeypatch.setattr(compat, "check_entry", counted_check)
    return calls


def test_replayed_commits_analysed_in_sequence_give_the_snapshots_of_a_full_analysis(
    git_source: Callable[[Path], GitSource],
    replayed_history: Callable[[str, str], ReplayHistory],
    use_real_cache: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    history = replayed_history(OLD, NEW)
    source = git_source(history.repo)
    commits = _sampled_commits(history)
    tabled: list[str] = []
    table = compat.build_compat
    rechecked: dict[str, tuple[int, int]] = {}

    def counted_table(
        index: VersionIndex, itf: interface.Interface, **options: Any
    ) -> compat.Compat:
        tabled.append(itf.version)
        before = len(calls.checked)
        built_table = table(index, itf, **options)
        rechecked[itf.version] = (len(calls.checked) - before, len(built_table.checks))
        return built_table

    merged: list[str] = []
    merge = index_module._ModulePart.merge_into

    def counted_merge(part: index_module._ModulePart, into: VersionIndex) -> None:
        merged.append(part.module)
        merge(part, into)

    calls = _count_calls(monkeypatch)
    monkeypatch.setattr(compat, "build_compat", counted_table)
    monkeypatch.setattr(index_module._ModulePart, "merge_into", counted_merge)
    incremental = _in_sequence(source, commits)
    built = list(calls.built)
    # Unchanged modules were taken from the index before, module by module.
    assert len(merged) > 100 * len(commits) // 2
    merged.clear()
    # Every kind of step was taken: the whole analysis reused (a commit changing a file the
    # analysis does not read), the interface reused and the compat table rebuilt (a model
    # file: kimi_k25.py), and both rebuilt (eagle_worker.py).
    kimi = history.changing(KIMI_MODULE).commit
    assert OLD in built and history.changing(EAGLE_WORKER).commit in built
    assert kimi in tabled and kimi not in built
    assert 2 < len(built) < len(tabled) <= len(commits) - 3
    # After a commit that changes one model file, the checks of the classes that do not
    # reach that file were taken from the table before.
    after_kimi = next(
        c for c in history.commits if c.number == history.changing(KIMI_MODULE).number + 1
    )
    assert after_kimi.file.path.startswith(MODELS_PREFIX)
    again, rows = rechecked[after_kimi.commit]
    assert 0 < again < rows // 4
    # A fresh analysis of each kind of step gives what the sequence gave: the commit that
    # reuses the interface (kimi) and the one after it, both ends of the rebuild at
    # eagle_worker.py, a commit the analysis does not read (layers/), and the newest.
    worker = history.changing(EAGLE_WORKER).number
    layers = next(c.number for c in history.commits if "/srt/layers/" in c.file.path)
    by_number = {c.number: c.commit for c in history.commits}
    chosen = [kimi, after_kimi.commit, by_number[worker], by_number.get(worker + 1)]
    chosen += [by_number.get(layers), NEW]
    chosen = [c for c in dict.fromkeys(chosen) if c in commits]
    assert len(chosen) >= 5
    assert [incremental[commits.index(c)] for c in chosen] == _each_afresh(source, chosen)
    assert not merged


def test_blanking_every_model_file_leaves_the_interface_as_it_was(
    real_pypi: PypiSource, use_real_cache: Path
) -> None:
    """What interface reuse rests on (tracker.analysis.reuse): the interface never reads
    the model files, so a commit that changes only those keeps the interface it had."""
    for version in ("v0.4.10", "v0.5.9", "v0.5.21"):
        index = load_index(real_pypi.tree(version))
        blank = {
            path: facts._replace(
                classes=(), functions=(), imports=(), assigns=(), returns=(), forwards=()
            )
            if facts.path.startswith(MODELS_PREFIX) and facts.definitions_only
            else facts
            for path, facts in index.by_path.items()
        }
        assert sum(f.path.startswith(MODELS_PREFIX) for f in blank.values()) > 50
        blanked = VersionIndex(blank, index.pins)
        assert blanked.classes != index.classes
        # Dataclass equality: every requirement, site, path, field and warning.
        assert interface.build_interface(version, blanked) == interface.build_interface(
            version, index
        )


def test_releases_analysed_in_sequence_give_the_snapshots_of_a_full_analysis(
    real_pypi: PypiSource, use_real_cache: Path
) -> None:
    releases = ["v0.5.7", "v0.5.8", "v0.5.9", "v0.5.10"]
    incremental = _in_sequence(real_pypi, releases)
    assert incremental == _each_afresh(real_pypi, releases)


class _Counting(Feedback):
    def __init__(self) -> None:
        self.analysed: list[tuple[int, int]] = []

    def progress(self, label: str) -> Callable[[int, int], None] | None:
        return (
            (lambda done, total: self.analysed.append((done, total)))
            if label == "analysing"
            else None
        )


def test_a_range_built_by_two_walkers_gives_the_snapshots_of_a_full_analysis(
    git_source: Callable[[Path], GitSource],
    stocked_releases: Callable[..., Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    releases = ["v0.5.7", "v0.5.8", "v0.5.9", "v0.5.10", "v0.5.10.post1"]
    archives = stocked_releases(*releases) / "pypi"
    repo = build_release_repo(tmp_path / "sglang", releases, archives, checkout=False)
    source = git_source(repo)
    monkeypatch.setenv("TRACKER_JOBS", "2")
    feedback = _Counting()
    workspace = Workspace(source, feedback, use_shipped=False)
    snapshots = workspace.snapshots(f"{releases[0]}..{releases[-1]}")
    # Built by the worker processes (the serial pass only read their cache), every one.
    assert feedback.analysed[-1] == (len(releases), len(releases))
    assert [s.origin for s in snapshots] == ["cache"] * len(releases)
    assert [s.version for s in snapshots] == releases
    assert [to_json(s) for s in snapshots] == _each_afresh(source, releases)


def test_a_pair_parsed_ahead_gives_the_snapshots_of_a_full_analysis(
    git_source: Callable[[Path], GitSource],
    stocked_releases: Callable[..., Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    releases = [OLD, NEW]
    archives = stocked_releases(*releases) / "pypi"
    repo = build_release_repo(tmp_path / "sglang", releases, archives, checkout=False)
    source = git_source(repo)
    monkeypatch.setenv("TRACKER_JOBS", "2")
    sent: list[int] = []
    ahead = loader.parse_ahead

    def counted(*args: Any) -> int:
        sent.append(ahead(*args))
        return sent[-1]

    monkeypatch.setattr(loader, "parse_ahead", counted)
    # Nothing in memory from the tests before: NEW's files must really be parsed here.
    monkeypatch.setattr(store, "_ahead", {})
    for _ in range(2):
        store.recent.next_version()
    pair = Workspace(source, use_shipped=False).snapshots_of([(source, OLD), (source, NEW)])
    # NEW's files that OLD does not have were handed to the pool while OLD was analysed,
    # and taken from it: none is left waiting.
    assert len(sent) == 1 and sent[0] > 50
    assert not store._ahead
    assert [to_json(s) for s in pair] == _each_afresh(source, releases)


_KIMI_FIX = """\
    def get_embed_and_head(self):
        return self.language_model.get_embed_and_head()

    def set_eagle3_layers_to_capture(self, layer_ids=None):
        return self.language_model.set_eagle3_layers_to_capture(layer_ids)

"""


def _kimi_eagle3(snapshot: Any) -> str:
    [status] = {
        c.status
        for c in snapshot.compat.checks
        if c.model == "KimiK25ForConditionalGeneration"
        and c.algorithm == "EAGLE3"
        and c.role == "target"
    }
    return str(status)


def test_a_fork_commit_reuses_the_release_it_branched_from(
    git_source: Callable[[Path], GitSource],
    stocked_releases: Callable[..., Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Facts and analyses are keyed by content, not by source: a fork (its own git
    repository holding the release and its pins in pyproject.toml, plus a commit that fixes
    one model file) analysed after the release from its archive parses that one file,
    keeps the interface and rechecks only the classes that reach the file; a fresh
    analysis of the fork parses nothing, and both give the same snapshot."""
    archives = stocked_releases(NEW) / "pypi"
    release = PypiSource(archives)
    requirements = release.tree(NEW).requirements()
    assert requirements is not None
    repo = build_release_repo(tmp_path / "fork", [NEW], archives)
    project = "[project]\nname = 'sglang'\ndependencies = [\n"
    project += "".join(f"  {json.dumps(line)},\n" for line in requirements[0]) + "]\n"
    (repo / "python" / "pyproject.toml").write_text(project)
    kimi = repo / KIMI_MODULE
    text = kimi.read_text()
    body = text.index("    def __init__(", text.index("class KimiK25ForConditionalGeneration("))
    kimi.write_text(text[:body] + _KIMI_FIX + text[body:])
    git = ["git", "-C", str(repo), "-c", "user.name=fork", "-c", "user.email=fork@example.com"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "kimi_k25: EAGLE3 members"], check=True)
    fork = git_source(repo)
    commit = fork.commit_of("HEAD") or ""
    # The same pins, read from another place.
    pins, fork_pins = release.tree(NEW).pins(), fork.tree(commit).pins()
    assert pins.versions == fork_pins.versions and pins.origin != fork_pins.origin

    # An empty facts cache of its own, everything parsed in this process (counted), and
    # nothing in memory from the tests before.
    monkeypatch.setenv("TRACKER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TRACKER_JOBS", "1")
    monkeypatch.setattr(store, "_ahead", {})
    for _ in range(2):
        store.recent.next_version()
        index_module._parts.next_version()
    calls = _count_calls(monkeypatch)
    parsed, built, checked = calls.parsed, calls.built, calls.checked
    workspace = Workspace(release, use_shipped=False, use_cache=False)
    before = workspace.snapshot_of(release, NEW)
    assert len(parsed) > 200 and built == [NEW]
    parsed.clear()
    checked.clear()
    after = workspace.snapshot_of(fork, commit)
    assert parsed == [KIMI_MODULE]
    assert built == [NEW]  # the fork's interface is the release's
    assert "KimiK25ForConditionalGeneration" in checked
    assert 0 < len(checked) < len(after.compat.checks) // 4
    assert (_kimi_eagle3(before), _kimi_eagle3(after)) == ("broken", "ok")

    assert _each_afresh(fork, [commit]) == [to_json(after)]
    assert parsed == [KIMI_MODULE]  # the fresh analysis read every file's facts cached

    # The release unpacked into a directory with the same fix: no metadata pins it, its
    # `_version.py` says it is v0.5.9, so it is judged at v0.5.9's pins and keeps the
    # interface; every file, the fixed one too, is in the facts cache already.
    [wheel] = archives.glob("sglang-0.5.9-*.whl")
    unpacked = unpack_wheel(wheel, tmp_path / "unpacked")
    (unpacked / KIMI_MODULE).write_bytes(kimi.read_bytes())
    patched = open_source(f"dir:{unpacked}", None, Path.cwd())
    assert patched.tree("local").pins().release == NEW
    built.clear()
    local = workspace.snapshot_of(patched, "local")
    assert parsed == [KIMI_MODULE] and not built
    assert _kimi_eagle3(local) == "ok"
