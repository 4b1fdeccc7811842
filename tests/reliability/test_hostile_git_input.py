"""Odd git repositories: symlinks and submodules in a tag, tags that are not SGLang, shallow
and partial clones with history or objects missing, annotated and lightweight tags."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.support import (
    SRT,
    assert_one_line_error,
    fresh_cache,
    run_cli,
    run_process,
    tiny_files,
)
from tracker.sources.base import MAX_FILE_BYTES

RepoFactory = Callable[..., Path]
GitRunner = Callable[..., str]


def _tiny(marker: str = "") -> dict[str, str]:
    files = {path: text for path, text in tiny_files().items() if isinstance(text, str)}
    files["README.md"] = f"# sglang {marker}\n"
    return files


def _interface(repo: str | Path, version: str) -> dict[str, Any]:
    run = run_cli("interface", version, "--repo", str(repo), "--format", "json", env=fresh_cache())
    assert run.code == 0, run.stderr
    doc: dict[str, Any] = json.loads(run.stdout)
    return doc


def _answer(doc: dict[str, Any]) -> dict[str, Any]:
    """What an interface says, without which version/source it came from."""
    return {k: v for k, v in doc.items() if k not in ("version", "source")}


# -- symlinks and submodules ------------------------------------------------------------------


def test_symlinks_and_submodules_in_a_tag_are_skipped_and_change_nothing(
    make_git_repo: RepoFactory, git: GitRunner
) -> None:
    repo = make_git_repo({"v0.5.1": _tiny()})
    models = repo / SRT / "models"
    (models / "alias.py").symlink_to("llama.py")
    (models / "absolute.py").symlink_to("/etc/hostname")
    (models / "dangling.py").symlink_to("../../../../nowhere.py")
    (models / "linked_dir").symlink_to("../speculative")
    git(repo, "add", "-A")
    head = git(repo, "rev-parse", "HEAD").strip()
    # A submodule is a gitlink entry (mode 160000) naming a commit of another repository.
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{head},{SRT}models/vendored")
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},{SRT}models/gone.py")
    git(repo, "commit", "-q", "-m", "links and a submodule")
    git(repo, "tag", "v0.5.2")
    listing = git(repo, "ls-tree", "-r", "v0.5.2")
    assert "120000 blob" in listing
    assert "160000 commit" in listing

    assert _answer(_interface(repo, "v0.5.2")) == _answer(_interface(repo, "v0.5.1"))
    for path in ("alias.py", "gone.py", "linked_dir/eagle_worker.py"):
        facts = run_cli("facts", "v0.5.2", f"{SRT}models/{path}", "--repo", str(repo))
        assert_one_line_error(facts, "has no file")


# -- tags -------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["interface", "check", "snapshot"])
def test_a_tag_on_a_commit_without_sglang_is_one_clear_error(
    make_git_repo: RepoFactory, command: str, tmp_path: Path
) -> None:
    repo = make_git_repo(
        {"v0.5.1": _tiny(), "v0.5.2": {"README.md": "an unrelated project\n", "main.py": ""}}
    )
    extra = ["-o", str(tmp_path / "out.json")] if command == "snapshot" else []
    run = run_process(command, "v0.5.2", "--repo", str(repo), *extra)
    assert_one_line_error(run, "v0.5.2", "not an SGLang tree")
    assert not (tmp_path / "out.json").exists()


def test_a_diff_against_a_tag_without_sglang_is_one_clear_error(
    make_git_repo: RepoFactory,
) -> None:
    repo = make_git_repo({"v0.5.1": _tiny(), "v0.5.2": {"README.md": "unrelated\n"}})
    run = run_process("diff", "v0.5.1", "v0.5.2", "--repo", str(repo), "--format", "json")
    assert_one_line_error(run, "v0.5.2", "not an SGLang tree")
    assert run.stdout == ""


def test_annotated_lightweight_and_nested_tags_give_the_same_answer(
    make_git_repo: RepoFactory, git: GitRunner
) -> None:
    history = {"v0.5.1": _tiny()}
    annotated = make_git_repo(history, annotated=True, name="annotated")
    lightweight = make_git_repo(history, annotated=False, name="lightweight")
    assert git(annotated, "cat-file", "-t", "v0.5.1").strip() == "tag"
    assert git(lightweight, "cat-file", "-t", "v0.5.1").strip() == "commit"
    # A tag of a tag: peeled twice to reach the commit.
    git(annotated, "tag", "-a", "v0.5.2", "v0.5.1", "-m", "re-tag")
    expected = _answer(_interface(lightweight, "v0.5.1"))
    assert _answer(_interface(annotated, "v0.5.1")) == expected
    assert _answer(_interface(annotated, "v0.5.2")) == expected
    assert _answer(_interface(annotated, "0.5.2")) == expected


# -- shallow clones -----------------------------------------------------------------------------


@pytest.fixture
def three_releases(make_git_repo: RepoFactory) -> Path:
    later = _tiny("later")
    later[f"{SRT}models/newer.py"] = "class Newer:\n    pass\n\n\nEntryClass = Newer\n"
    return make_git_repo({"v0.5.1": _tiny("first"), "v0.5.2": _tiny("second"), "v0.5.3": later})


def test_a_shallow_clone_answers_for_the_tag_it_has(
    three_releases: Path, git: GitRunner, tmp_path: Path
) -> None:
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", three_releases.as_uri(), str(shallow))
    assert git(shallow, "rev-parse", "--is-shallow-repository").strip() == "true"
    assert run_cli("versions", "--repo", str(shallow)).stdout == "v0.5.3\n"
    assert _answer(_interface(shallow, "v0.5.3")) == _answer(_interface(three_releases, "v0.5.3"))


def test_a_tag_missing_from_a_shallow_clone_is_one_clear_error_naming_what_exists(
    three_releases: Path, git: GitRunner, tmp_path: Path
) -> None:
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", three_releases.as_uri(), str(shallow))
    run = run_process("interface", "v0.5.1", "--repo", str(shallow))
    assert_one_line_error(run, "v0.5.1", "v0.5.3")


def _with_a_broken_tag(source: Path, repo: Path, git: GitRunner, how: str) -> None:
    """A shallow clone of `source` in `repo` whose tag v0.5.1 does not lead to a commit."""
    git(repo.parent, "clone", "-q", "--depth", "1", source.as_uri(), str(repo))
    if how == "tag of a blob":
        blob = git(repo, "rev-parse", f"HEAD:{SRT}models/llama.py").strip()
        git(repo, "tag", "v0.5.1", blob)
    elif how == "annotated tag of a tree":
        git(repo, "tag", "-a", "v0.5.1", "HEAD^{tree}", "-m", "a tree, not a release")
    else:
        # The tag ref arrived, the commit it names did not (as after fetching tags only).
        missing = git(source, "rev-parse", "v0.5.1^{commit}").strip()
        (repo / ".git" / "refs" / "tags" / "v0.5.1").write_text(missing + "\n")


BROKEN_TAGS = ["commit missing from a shallow clone", "tag of a blob", "annotated tag of a tree"]


@pytest.mark.parametrize(
    "how",
    [
        BROKEN_TAGS[0],
        BROKEN_TAGS[1],
    ],
)
def test_a_tag_that_leads_to_no_commit_does_not_stop_the_other_tags(
    three_releases: Path, git: GitRunner, tmp_path: Path, how: str
) -> None:
    repo = tmp_path / "shallow"
    _with_a_broken_tag(three_releases, repo, git, how)
    versions = run_process("versions", "--repo", str(repo))
    assert versions.code == 0, versions.stderr
    assert "v0.5.3" in versions.stdout.split()
    run = run_process("interface", "v0.5.3", "--repo", str(repo), "--format", "json")
    assert run.code == 0, run.stderr
    assert json.loads(run.stdout)["version"] == "v0.5.3"


@pytest.mark.parametrize(
    ("how", "says"),
    [
        (BROKEN_TAGS[0], "which {repo} does not have (a shallow clone"),
        (BROKEN_TAGS[1], "tag v0.5.1 in {repo} names a blob, not a commit"),
        (BROKEN_TAGS[2], "tag v0.5.1 in {repo} names a tree, not a commit"),
    ],
)
def test_asking_for_a_tag_that_leads_to_no_commit_is_one_line_that_says_so(
    three_releases: Path, git: GitRunner, tmp_path: Path, how: str, says: str
) -> None:
    repo = tmp_path / "shallow"
    _with_a_broken_tag(three_releases, repo, git, how)
    run = run_process("interface", "v0.5.1", "--repo", str(repo))
    line = assert_one_line_error(run, "tag v0.5.1", says.format(repo=repo))
    assert "unknown version" not in line, line


# -- clones of a URL ------------------------------------------------------------------------------


def test_a_url_that_cannot_be_cloned_is_one_clear_error_and_leaves_no_clone(
    tmp_path: Path, cache_dir: Path
) -> None:
    url = (tmp_path / "no-such-repo").as_uri()
    run = run_process("versions", "--repo", url)
    assert_one_line_error(run, f"cannot clone {url}")
    assert not any((cache_dir / "git").glob("*")) if (cache_dir / "git").exists() else True


def test_a_url_that_cannot_be_cloned_says_why(tmp_path: Path) -> None:
    url = (tmp_path / "no-such-repo").as_uri()
    line = assert_one_line_error(run_process("versions", "--repo", url))
    assert "does not appear to be a git repository" in line, line


@pytest.fixture
def vanished_origin(three_releases: Path, git: GitRunner, tmp_path: Path) -> str:
    """A URL cloned (partially: no blobs) into the cache, whose origin then disappears."""
    origin = tmp_path / "origin"
    shutil.copytree(three_releases, origin)
    git(origin, "config", "uploadpack.allowFilter", "true")
    git(origin, "config", "uploadpack.allowAnySHA1InWant", "true")
    url = origin.as_uri()
    assert run_process("versions", "--repo", url).stdout.split() == ["v0.5.1", "v0.5.2", "v0.5.3"]
    shutil.rmtree(origin)
    return url


def test_a_partial_clone_whose_origin_vanished_is_one_clear_error(vanished_origin: str) -> None:
    run = run_process("interface", "v0.5.2", "--repo", vanished_origin)
    assert_one_line_error(run, vanished_origin)
    assert run.stdout == ""


def test_a_partial_clone_whose_origin_vanished_says_why(vanished_origin: str) -> None:
    line = assert_one_line_error(run_process("interface", "v0.5.2", "--repo", vanished_origin))
    assert line.startswith(f"tracker: error: git fetch failed in {vanished_origin}: fatal: "), line
    assert line.endswith("does not appear to be a git repository"), line


# -- files the analysis leaves out -----------------------------------------------------------------


def test_a_huge_file_a_name_not_utf8_and_a_linked_folder_in_a_tag_are_skipped_with_warnings(
    make_git_repo: RepoFactory, git: GitRunner
) -> None:
    repo = make_git_repo({"v0.5.1": _tiny()})
    models = repo / SRT / "models"
    (models / "huge.py").write_bytes(b"x = 1\n" * (MAX_FILE_BYTES // 6 + 1))
    (models / os.fsdecode(b"bad\xffname.py")).write_text("class Bad:\n    pass\n")
    (repo / SRT / "layers").symlink_to("models")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "odd files")
    git(repo, "tag", "v0.5.2")

    run = run_process("interface", "v0.5.2", "--repo", str(repo), "--format", "json")
    assert run.code == 0, run.stderr
    size = (models / "huge.py").stat().st_size / 1024 / 1024
    assert sorted(run.error_lines) == [
        f"tracker: warning: skipped {SRT}layers: not followed: symlink",
        f"tracker: warning: skipped {SRT}models/bad\\xffname.py: its name is not UTF-8",
        f"tracker: warning: skipped {SRT}models/huge.py: {size:.1f} MB is over the 4 MB limit",
    ]
    assert _answer(json.loads(run.stdout)) == _answer(_interface(repo, "v0.5.1"))


def test_a_tag_whose_srt_folder_is_a_symlink_says_so(
    make_git_repo: RepoFactory, git: GitRunner
) -> None:
    repo = make_git_repo({"v0.5.1": _tiny()})
    srt = repo / SRT
    srt.rename(repo / "python" / "sglang" / "real_srt")
    srt.symlink_to("real_srt")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "srt linked")
    git(repo, "tag", "v0.5.2")
    run = run_process("interface", "v0.5.2", "--repo", str(repo))
    assert_one_line_error(run, f"has no {SRT} (it is a symlink, not followed)")
