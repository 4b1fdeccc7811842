"""The replay builder of bench/build_replay_repo.py on tiny SGLang-shaped releases: one commit
per changed file in path order, tags at both ends, a manifest that says what git recorded."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from bench.build_replay_repo import Change, FileChange, file_changes, replay_trees
from tracker.common.errors import SourceError, TrackerError
from tracker.sources.base import VersionTree
from tracker.sources.git import GitSource

GitRunner = Callable[..., str]
RepoFactory = Callable[..., Path]

SRT = "python/sglang/srt/"
OLD = {
    SRT + "__init__.py": "",
    SRT + "models/llama.py": "class LlamaForCausalLM:\n    pass\n",
    SRT + "models/gone.py": "class Gone:\n    pass\n",
    SRT + "speculative/eagle_worker.py": "class EAGLEWorker:\n    pass\n",
}
NEW = {
    SRT + "__init__.py": "",
    SRT + "models/llama.py": "class LlamaForCausalLM:\n    pass\n",
    SRT + "models/kimi_k25.py": "class KimiK25ForConditionalGeneration:\n    pass\n",
    SRT + "speculative/eagle_worker.py": "class EAGLEWorker:\n    def run(self):\n        pass\n",
    SRT + "configs/kimi_k25.py": "class KimiK25Config:\n    pass\n",
}


@pytest.fixture
def releases(make_git_repo: RepoFactory) -> Iterator[GitSource]:
    source = GitSource(make_git_repo({"v1.0": OLD, "v1.1": NEW}, name="releases"))
    yield source
    source.close()


def test_changed_files_come_sorted_by_path_with_what_happened_to_each() -> None:
    old = {"b.py": "1", "a.py": "1", "c.py": "1", "same.py": "9"}
    new = {"b.py": "2", "d.py": "1", "c.py": "1", "same.py": "9"}
    assert file_changes(old, new) == [
        FileChange("a.py", Change.DELETED, "1", None),
        FileChange("b.py", Change.MODIFIED, "1", "2"),
        FileChange("d.py", Change.ADDED, None, "1"),
    ]


def test_the_replay_holds_the_old_release_then_one_commit_per_changed_file(
    releases: GitSource, tmp_path: Path, git: GitRunner
) -> None:
    old, new = releases.tree("v1.0"), releases.tree("v1.1")
    history = replay_trees(tmp_path / "replay", old, new)
    repo = history.repo

    assert [(c.file.path, c.file.change) for c in history.commits] == [
        (SRT + "configs/kimi_k25.py", Change.ADDED),
        (SRT + "models/gone.py", Change.DELETED),
        (SRT + "models/kimi_k25.py", Change.ADDED),
        (SRT + "speculative/eagle_worker.py", Change.MODIFIED),
    ]
    assert git(repo, "rev-parse", "v1.0^{commit}").strip() == history.base
    assert git(repo, "rev-parse", "v1.1^{commit}").strip() == history.head
    log = git(repo, "log", "--reverse", "--format=%H %P|%an|%s", "v1.1").splitlines()
    assert log[0] == f"{history.base} |sglang-tracker bench|sglang v1.0"
    parent = history.base
    for line, commit in zip(log[1:], history.commits, strict=True):
        assert line == f"{commit.commit} {parent}|replay-{commit.number}|{commit.subject}"
        parent = commit.commit
    assert history.changing(SRT + "models/kimi_k25.py").subject == (f"add {SRT}models/kimi_k25.py")

    replayed = GitSource(repo)
    assert dict(replayed.tree("v1.0").files) == dict(old.files)
    assert dict(replayed.tree("v1.1").files) == dict(new.files)
    kimi = history.changing(SRT + "models/kimi_k25.py")
    assert SRT + "models/kimi_k25.py" not in replayed.tree(history.parent(kimi.commit)).files
    replayed.close()


def test_the_same_releases_replay_to_the_same_commit_ids(
    releases: GitSource, tmp_path: Path
) -> None:
    old, new = releases.tree("v1.0"), releases.tree("v1.1")
    first = replay_trees(tmp_path / "one", old, new).to_json()
    second = replay_trees(tmp_path / "two", old, new).to_json()
    assert first == second
    assert len({c["date"] for c in first["commits"]}) == len(first["commits"])


def test_a_replay_into_a_relative_folder_lands_there(
    releases: GitSource, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, git: GitRunner
) -> None:
    monkeypatch.chdir(tmp_path)
    history = replay_trees(Path("out"), releases.tree("v1.0"), releases.tree("v1.1"))
    assert git(tmp_path / "out", "rev-parse", "v1.1^{commit}").strip() == history.head


def test_a_release_replayed_onto_itself_is_refused(releases: GitSource, tmp_path: Path) -> None:
    with pytest.raises(TrackerError, match="onto itself"):
        replay_trees(tmp_path / "replay", releases.tree("v1.0"), releases.tree("v1.0"))


def test_a_replay_never_writes_into_a_folder_that_holds_something(
    releases: GitSource, tmp_path: Path
) -> None:
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "file").touch()
    with pytest.raises(TrackerError, match="not empty"):
        replay_trees(tmp_path / "busy", releases.tree("v1.0"), releases.tree("v1.1"))


class _Unreadable(VersionTree):
    """A release whose files are listed but cannot be read (a damaged archive)."""

    def __init__(self, tree: VersionTree) -> None:
        self.identity = tree.identity
        self._files = tree.files

    @property
    def files(self) -> Mapping[str, str]:
        return self._files

    def read(self, path: str) -> bytes:
        raise SourceError(f"cannot read {path}")


def test_a_release_that_cannot_be_read_stops_the_replay_with_its_error_and_no_tags(
    releases: GitSource, tmp_path: Path, git: GitRunner
) -> None:
    with pytest.raises(SourceError, match="cannot read"):
        replay_trees(tmp_path / "replay", releases.tree("v1.0"), _Unreadable(releases.tree("v1.1")))
    # fast-import never saw `done`: it wrote no branch and no tag.
    assert git(tmp_path / "replay", "for-each-ref").strip() == ""
