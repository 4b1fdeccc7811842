"""The git source on throwaway repositories: tags, commit-ish specs, blob listing, clones of a
URL into the cache, and the promise never to touch the user's work tree, index or HEAD."""

from __future__ import annotations

import gc
import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tracker.common.errors import NotSGLangError, SourceError, TrackerError, UnknownVersionError
from tracker.sources import expand_spec, open_source, split_spec
from tracker.sources.base import content_id
from tracker.sources.git import GitSource, clone_dir_for, is_url, sglang_checkout_at
from tracker.sources.pypi import PypiSource

GitRunner = Callable[..., str]
RepoFactory = Callable[..., Path]

WORKER = "python/sglang/srt/speculative/eagle_worker.py"
SRT_INIT = "python/sglang/srt/__init__.py"


def _release(worker_line: str) -> dict[str, str]:
    return {
        "README.md": "# sglang\n",
        "python/pyproject.toml": "[project]\nname = 'sglang'\n",
        "python/sglang/__init__.py": "",
        SRT_INIT: "",
        WORKER: f"class EAGLEWorker:\n    def init(self):\n        {worker_line}\n",
        "python/sglang/srt/configs/table.json": "{}\n",
    }


HISTORY = {
    "v0.1": {"python/sglang/__init__.py": "# before srt existed\n"},
    "v0.5.8": _release("self.model.get_embed_and_head()"),
    "gateway-v1.0": _release("self.model.get_embed_and_head()  # gateway"),
    "v0.5.9": _release("self.model.get_embed_and_head(); self.mm_input_embeds = None"),
    "v0.5.10": _release("self.model.set_embed_and_head(1, 2)"),
}


@pytest.fixture
def repo(make_git_repo: RepoFactory) -> Path:
    return make_git_repo(HISTORY)


@pytest.fixture(params=[True, False], ids=["annotated", "lightweight"])
def tagged_repo(request: pytest.FixtureRequest, make_git_repo: RepoFactory) -> Path:
    """The same history with annotated or with lightweight tags: both kinds must work."""
    return make_git_repo(HISTORY, annotated=request.param)


def _rev(git: GitRunner, repo: Path, rev: str) -> str:
    return git(repo, "rev-parse", rev).strip()


# -- versions and specs -----------------------------------------------------------------------


def test_versions_are_the_release_tags_oldest_first(tagged_repo: Path) -> None:
    assert GitSource(tagged_repo).versions() == ["v0.1", "v0.5.8", "v0.5.9", "v0.5.10"]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [("0.5.9", "v0.5.9"), ("v0.5.9", "v0.5.9"), ("latest", "v0.5.10"), ("gateway-v1.0", None)],
)
def test_resolve_turns_release_specs_into_tag_names(
    repo: Path, spec: str, expected: str | None
) -> None:
    assert GitSource(repo).resolve(spec) == (expected or spec)


def test_resolve_turns_any_other_commitish_into_its_commit_sha(repo: Path, git: GitRunner) -> None:
    source = GitSource(repo)
    v9_commit = _rev(git, repo, "v0.5.9^{commit}")
    assert source.resolve("HEAD~1") == v9_commit
    assert source.resolve("main") == _rev(git, repo, "main")
    assert source.resolve(v9_commit[:10]) == v9_commit


def test_unknown_tag_error_names_the_nearest_tags(tagged_repo: Path) -> None:
    with pytest.raises(UnknownVersionError) as caught:
        GitSource(tagged_repo).resolve("v0.5.99")
    assert str(caught.value) == "unknown version v0.5.99; nearest known: v0.5.8, v0.5.9, v0.5.10"


def test_a_spec_that_looks_like_an_option_is_unknown_not_passed_to_git(repo: Path) -> None:
    with pytest.raises(UnknownVersionError):
        GitSource(repo).resolve("--output=/tmp/x")


# -- trees ------------------------------------------------------------------------------------


def test_a_tree_lists_python_files_below_python_sglang_with_their_blob_ids(
    tagged_repo: Path, git: GitRunner
) -> None:
    tree = GitSource(tagged_repo).tree("v0.5.9")
    assert set(tree.files) == {"python/sglang/__init__.py", SRT_INIT, WORKER}
    for path, blob_id in tree.files.items():
        assert blob_id == _rev(git, tagged_repo, f"v0.5.9:{path}")
        assert content_id(tree.read(path)) == blob_id


def test_a_tree_reads_the_bytes_at_its_tag_not_the_work_tree(repo: Path) -> None:
    (repo / WORKER).write_text("patched in the work tree\n")
    source = GitSource(repo)
    assert b"mm_input_embeds" in source.tree("v0.5.9").read(WORKER)
    assert b"set_embed_and_head" in source.tree("v0.5.10").read(WORKER)


def test_reading_a_path_the_tree_does_not_list_is_a_key_error(repo: Path) -> None:
    with pytest.raises(KeyError):
        GitSource(repo).tree("v0.5.9").read("README.md")


def test_a_tree_identity_records_the_tag_and_commit_sha(tagged_repo: Path, git: GitRunner) -> None:
    identity = GitSource(tagged_repo).tree("0.5.9").identity
    assert identity.kind == "git"
    assert identity.location == str(tagged_repo)
    assert identity.version == "v0.5.9"
    assert identity.revision == _rev(git, tagged_repo, "v0.5.9^{commit}")


def test_a_revision_without_python_sglang_srt_is_not_an_sglang_tree(repo: Path) -> None:
    with pytest.raises(NotSGLangError) as caught:
        GitSource(repo).tree("v0.1")
    assert str(caught.value) == f"v0.1 at {repo} has no python/sglang/srt/: not an SGLang tree"


def test_symlinks_and_submodule_entries_are_not_listed(
    make_git_repo: RepoFactory, git: GitRunner
) -> None:
    repo = make_git_repo({"v0.5.8": _release("pass")})
    (repo / "python/sglang/srt/alias.py").symlink_to("__init__.py")
    git(repo, "add", "python/sglang/srt/alias.py")
    some_commit = _rev(git, repo, "HEAD")
    git(
        repo,
        "update-index",
        "--add",
        "--cacheinfo",
        f"160000,{some_commit},python/sglang/srt/vendored.py",
    )
    git(repo, "commit", "-q", "-m", "symlink and submodule")
    git(repo, "tag", "v0.5.9")
    listing = git(repo, "ls-tree", "-r", "v0.5.9", "python/sglang/srt/")
    assert "120000 blob" in listing and "160000 commit" in listing  # both really committed
    assert set(GitSource(repo).tree("v0.5.9").files) == {
        "python/sglang/__init__.py",
        SRT_INIT,
        WORKER,
    }


def test_reading_never_touches_the_work_tree_index_or_head(repo: Path, git: GitRunner) -> None:
    # A dirty checkout, as in the seed: edits, a staged change, an untracked file.
    (repo / WORKER).write_text("edited\n")
    (repo / "python/sglang/srt/new_model.py").write_text("untracked\n")
    (repo / "README.md").write_text("staged\n")
    git(repo, "add", "README.md")
    git(repo, "checkout", "-q", "-b", "patches")
    before = (
        git(repo, "status", "--porcelain", "--branch"),
        git(repo, "rev-parse", "HEAD"),
        git(repo, "symbolic-ref", "HEAD"),
        hashlib.sha256((repo / ".git" / "index").read_bytes()).hexdigest(),
        (repo / WORKER).read_text(),
    )

    source = GitSource(repo)
    source.fetch()
    for version in [*source.versions()[1:], "HEAD~2", "main", "patches"]:
        tree = source.tree(source.resolve(version))
        for path in tree.files:
            tree.read(path)
    with pytest.raises(NotSGLangError):
        source.tree("v0.1")

    after = (
        git(repo, "status", "--porcelain", "--branch"),
        git(repo, "rev-parse", "HEAD"),
        git(repo, "symbolic-ref", "HEAD"),
        hashlib.sha256((repo / ".git" / "index").read_bytes()).hexdigest(),
        (repo / WORKER).read_text(),
    )
    assert after == before


def test_a_bare_repository_is_a_source_too(repo: Path, tmp_path: Path, git: GitRunner) -> None:
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    assert GitSource(bare).tree("v0.5.9").files == GitSource(repo).tree("v0.5.9").files


# -- locations --------------------------------------------------------------------------------


def test_a_directory_that_is_not_a_git_repository_is_a_source_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError) as caught:
        GitSource(tmp_path)
    assert str(caught.value) == f"{tmp_path} is not a git repository"


def test_a_missing_path_is_a_source_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="does not exist"):
        GitSource(tmp_path / "nowhere")


def test_a_relative_path_is_taken_from_the_given_directory(repo: Path) -> None:
    source = GitSource(repo.name, cwd=repo.parent)
    assert source.location == str(repo)


@pytest.mark.parametrize(
    ("location", "url"),
    [
        ("https://github.com/sgl-project/sglang.git", True),
        ("file:///srv/git/sglang", True),
        ("ssh://git@example.com/sglang", True),
        ("git@github.com:sgl-project/sglang.git", True),
        ("/home/me/sglang", False),
        ("../sglang", False),
        ("sglang", False),
    ],
)
def test_urls_are_told_apart_from_paths(location: str, url: bool) -> None:
    assert is_url(location) is url


def test_clone_folders_are_named_after_the_url_and_do_not_collide() -> None:
    first = clone_dir_for("https://github.com/sgl-project/sglang.git")
    second = clone_dir_for("https://example.com/sgl-project/sglang.git")
    assert first.name.startswith("github.com_sgl-project_sglang-")
    assert first != second


# -- URLs: a partial clone in the cache ---------------------------------------------------------


@pytest.fixture
def origin(make_git_repo: RepoFactory, git: GitRunner) -> Path:
    served = make_git_repo(HISTORY, name="origin")
    # What a hosting service allows, so the clone really is partial (blobs fetched on demand).
    git(served, "config", "uploadpack.allowFilter", "true")
    git(served, "config", "uploadpack.allowAnySHA1InWant", "true")
    return served


def _packs(clone: Path) -> int:
    return len(list((clone / "objects" / "pack").glob("*.pack")))


def test_a_url_is_cloned_once_into_the_cache_as_a_bare_partial_clone(
    origin: Path, git: GitRunner
) -> None:
    url = origin.as_uri()
    source = GitSource(url)
    assert source.versions() == ["v0.1", "v0.5.8", "v0.5.9", "v0.5.10"]
    clone = clone_dir_for(url)
    assert clone.parent == Path(os.environ["TRACKER_CACHE_DIR"]) / "git"
    assert git(clone, "rev-parse", "--is-bare-repository").strip() == "true"
    assert git(clone, "config", "remote.origin.partialclonefilter").strip() == "blob:none"

    marker = clone / "tracker-test-marker"
    marker.touch()
    assert GitSource(url).versions() == source.versions()
    assert marker.exists()  # the second source reused the clone instead of cloning again


def test_a_partial_clone_fetches_the_blobs_of_a_version_in_one_request(
    origin: Path, git: GitRunner
) -> None:
    source = GitSource(origin.as_uri())
    source.versions()
    clone = clone_dir_for(origin.as_uri())
    packs_after_clone = _packs(clone)

    tree = source.tree("v0.5.9")
    assert _packs(clone) == packs_after_clone + 1
    for path in tree.files:
        assert tree.read(path) == GitSource(origin).tree("v0.5.9").read(path)
    assert _packs(clone) == packs_after_clone + 1  # reading needed no further fetches


def test_fetch_brings_new_tags_into_the_cached_clone(origin: Path, git: GitRunner) -> None:
    url = origin.as_uri()
    GitSource(url).versions()
    (origin / WORKER).write_text("class EAGLEWorker:\n    pass\n")
    git(origin, "commit", "-q", "-am", "v0.5.11")
    git(origin, "tag", "-a", "-m", "v0.5.11", "v0.5.11")

    source = GitSource(url)
    assert "v0.5.11" not in source.versions()
    assert "v0.5.11" in source.fetch()
    assert source.versions()[-1] == "v0.5.11"
    assert source.tree("v0.5.11").read(WORKER) == b"class EAGLEWorker:\n    pass\n"


def test_fetch_leaves_a_local_repository_alone(repo: Path, git: GitRunner) -> None:
    refs = git(repo, "show-ref")
    assert "nothing to fetch" in GitSource(repo).fetch()
    assert git(repo, "show-ref") == refs


def test_a_url_that_cannot_be_cloned_is_a_source_error(tmp_path: Path) -> None:
    url = (tmp_path / "no-such-repo").as_uri()
    with pytest.raises(SourceError, match=f"cannot clone {url}: ") as caught:
        GitSource(url).versions()
    assert "\n" not in str(caught.value)
    assert not clone_dir_for(url).exists()


# -- finding a checkout around the current directory --------------------------------------------


def test_a_checkout_is_found_from_any_folder_inside_it(repo: Path) -> None:
    assert sglang_checkout_at(repo / "python" / "sglang" / "srt") == repo


def test_a_checkout_whose_head_has_no_srt_is_not_taken_for_sglang(
    make_git_repo: RepoFactory,
) -> None:
    assert sglang_checkout_at(make_git_repo({"v0.1": HISTORY["v0.1"]})) is None


def test_an_empty_repository_or_plain_folder_is_not_a_checkout(
    tmp_path: Path, git: GitRunner
) -> None:
    git(tmp_path, "init", "-q", "empty")
    assert sglang_checkout_at(tmp_path / "empty") is None
    (tmp_path / "plain").mkdir()
    assert sglang_checkout_at(tmp_path / "plain") is None


# -- choosing the source ----------------------------------------------------------------------


def test_inside_an_sglang_checkout_the_checkout_is_the_source(repo: Path) -> None:
    source = open_source(None, None, cwd=repo / "python" / "sglang")
    assert isinstance(source, GitSource)
    assert source.location == str(repo)


def test_outside_any_checkout_the_package_index_is_the_source(tmp_path: Path) -> None:
    assert isinstance(open_source(None, None, cwd=tmp_path), PypiSource)


def test_tracker_repo_names_the_repository_when_nothing_else_does(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRACKER_REPO", str(repo))
    assert open_source(None, None, cwd=tmp_path).location == str(repo)


def test_an_explicit_source_wins_over_the_repo_option(repo: Path) -> None:
    assert isinstance(open_source("pypi", str(repo), cwd=repo), PypiSource)
    assert open_source(f"git:{repo.name}", None, cwd=repo.parent).location == str(repo)
    assert open_source("git", str(repo), cwd=repo.parent).location == str(repo)


@pytest.mark.parametrize("named", ["svn:/x", "pypi:extra", "dir:", "git"])
def test_an_unusable_source_name_is_a_tracker_error(named: str, tmp_path: Path) -> None:
    with pytest.raises(TrackerError):
        open_source(named, None, cwd=tmp_path)


def test_opening_a_repository_twice_reuses_the_source_and_its_trees(repo: Path) -> None:
    first = open_source(None, str(repo), cwd=repo)
    second = open_source("git:.", None, cwd=repo)
    assert second is first
    assert first.tree("v0.5.9") is second.tree("0.5.9")


def test_a_git_spec_names_its_own_repository_and_revision(
    repo: Path, make_git_repo: RepoFactory
) -> None:
    default = GitSource(make_git_repo({"v0.5.10": HISTORY["v0.5.10"]}))
    source, version = split_spec(f"git:{repo}@0.5.9", default)
    assert (source.location, version) == (str(repo), "v0.5.9")
    assert split_spec("latest", default) == (default, "v0.5.10")


def test_a_git_spec_without_a_revision_means_head(repo: Path, git: GitRunner) -> None:
    _, version = split_spec(f"git:{repo}", GitSource(repo))
    assert version == _rev(git, repo, "HEAD")


def test_a_range_expands_to_the_repositorys_tags_in_release_order(repo: Path) -> None:
    assert expand_spec(GitSource(repo), "0.5.8..latest") == ["v0.5.8", "v0.5.9", "v0.5.10"]
    assert expand_spec(GitSource(repo), "HEAD") == [GitSource(repo).resolve("HEAD")]


def test_a_range_where_one_version_is_needed_is_a_tracker_error(repo: Path) -> None:
    with pytest.raises(TrackerError, match="is a range"):
        split_spec("v0.5.8..v0.5.9", GitSource(repo))


def test_a_dropped_source_stops_its_git_helpers_at_once(tagged_repo: Path) -> None:
    """gitpython's Repo sits in a reference cycle: a source must stop the `git cat-file`
    helpers it started when it is dropped, not when a full collection happens to run."""
    source = GitSource(tagged_repo)
    tree = source.tree("v0.5.9")
    tree.read(next(iter(tree.files)))
    helpers = [cmd.proc for cmd in (source.repo.git.cat_file_all,) if cmd is not None]
    assert helpers and all(proc.poll() is None for proc in helpers)
    gc.disable()  # dropped by reference counting alone
    try:
        del source
        assert all(proc.poll() is not None for proc in helpers)
        assert all(proc.stdout is None or proc.stdout.closed for proc in helpers)
    finally:
        gc.enable()
