"""The directory source: a checkout or an unpacked release read from plain files."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from tracker.common.errors import NotSGLangError, SourceError, UnknownVersionError
from tracker.sources import dir as dir_source
from tracker.sources import open_source, split_spec
from tracker.sources.base import content_id
from tracker.sources.dir import DirSource
from tracker.sources.git import GitSource

WORKER = "speculative/eagle_worker.py"
FILES = {
    "__init__.py": "",
    "srt/__init__.py": "",
    f"srt/{WORKER}": "class EAGLEWorker:\n    pass\n",
    "srt/models/kimi_k25.py": "class KimiK25ForConditionalGeneration:\n    pass\n",
    "srt/configs/table.json": "{}\n",
}


def _write(root: Path, files: Mapping[str, str]) -> Path:
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return root


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    _write(tmp_path / "checkout" / "python" / "sglang", FILES)
    return tmp_path / "checkout"


@pytest.fixture
def unpacked(tmp_path: Path) -> Path:
    _write(tmp_path / "unpacked" / "sglang", FILES)
    return tmp_path / "unpacked"


EXPECTED = {
    "python/sglang/__init__.py",
    "python/sglang/srt/__init__.py",
    f"python/sglang/srt/{WORKER}",
    "python/sglang/srt/models/kimi_k25.py",
}


def test_a_checkout_lists_its_python_files_as_repo_paths(checkout: Path) -> None:
    tree = DirSource(checkout).tree("local")
    assert set(tree.files) == EXPECTED
    data = tree.read(f"python/sglang/srt/{WORKER}")
    assert data == b"class EAGLEWorker:\n    pass\n"
    assert tree.files[f"python/sglang/srt/{WORKER}"] == content_id(data)


def test_an_unpacked_release_is_mapped_to_the_repo_layout(checkout: Path, unpacked: Path) -> None:
    assert DirSource(unpacked).tree().files == DirSource(checkout).tree().files


def test_the_same_files_give_the_same_revision_in_either_layout(
    checkout: Path, unpacked: Path
) -> None:
    assert (
        DirSource(unpacked).tree().identity.revision == DirSource(checkout).tree().identity.revision
    )


def test_changing_a_file_changes_the_revision(checkout: Path) -> None:
    before = DirSource(checkout).tree().identity
    (checkout / "python/sglang/srt" / WORKER).write_text("class EAGLEWorker:\n    x = 1\n")
    after = DirSource(checkout).tree().identity
    assert before.revision != after.revision
    assert (after.kind, after.version, after.location) == ("dir", "local", str(checkout))


def test_a_directory_holds_one_version_named_local(checkout: Path) -> None:
    source = DirSource(checkout)
    assert source.versions() == ["local"]
    assert source.resolve("local") == "local"
    assert source.resolve("latest") == "local"


def test_a_release_asked_of_a_directory_is_refused_not_answered_with_the_directory(
    checkout: Path,
) -> None:
    # Answering v0.5.9 with the directory's files would label a patched tree as the release.
    with pytest.raises(UnknownVersionError) as caught:
        DirSource(checkout).resolve("v0.5.9")
    assert str(caught.value) == (
        f"dir:{checkout} holds one version, local, not v0.5.9; ask for local, or compare the "
        f"two with `tracker diff v0.5.9 dir:{checkout}`"
    )


def test_symlinks_caches_and_non_python_files_are_not_listed(checkout: Path) -> None:
    srt = checkout / "python/sglang/srt"
    (srt / "alias.py").symlink_to("__init__.py")
    (srt / "linked_dir").symlink_to(srt / "models")
    (srt / "__pycache__").mkdir()
    (srt / "__pycache__" / "stale.py").write_text("")
    assert set(DirSource(checkout).tree().files) == EXPECTED


def test_a_file_edited_after_listing_stops_the_read_instead_of_giving_other_bytes(
    checkout: Path,
) -> None:
    tree = DirSource(checkout).tree()
    (checkout / "python/sglang/srt" / WORKER).write_text("edited meanwhile\n")
    with pytest.raises(SourceError, match="changed while it was being read"):
        tree.read(f"python/sglang/srt/{WORKER}")


def test_reading_a_path_the_tree_does_not_list_is_a_key_error(checkout: Path) -> None:
    with pytest.raises(KeyError):
        DirSource(checkout).tree().read("python/sglang/srt/configs/table.json")


def test_a_directory_without_sglang_srt_is_not_sglang(tmp_path: Path) -> None:
    _write(tmp_path / "python" / "other", {"srt/__init__.py": ""})
    with pytest.raises(NotSGLangError) as caught:
        DirSource(tmp_path)
    assert str(caught.value) == (
        f"{tmp_path} has neither python/sglang/srt/ nor sglang/srt/: not an SGLang tree"
    )


def test_a_missing_directory_or_a_file_is_a_source_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="does not exist"):
        DirSource(tmp_path / "nowhere")
    (tmp_path / "file.py").write_text("")
    with pytest.raises(SourceError, match="is not a directory"):
        DirSource(tmp_path / "file.py")


def test_a_relative_path_is_taken_from_the_given_directory(checkout: Path) -> None:
    assert DirSource("checkout", cwd=checkout.parent).location == str(checkout)


def test_a_checkout_read_from_disk_lists_what_git_lists_at_its_head(
    make_git_repo: Callable[..., Path],
) -> None:
    repo = make_git_repo(
        {"v0.5.9": {f"python/sglang/{path}": text for path, text in FILES.items()}}
    )
    assert DirSource(repo).tree().files == GitSource(repo).tree("v0.5.9").files


def test_a_dir_spec_names_its_own_source_and_the_local_version(
    checkout: Path, unpacked: Path
) -> None:
    source, version = split_spec(f"dir:{checkout.name}", DirSource(unpacked), cwd=checkout.parent)
    assert (source.location, version) == (str(checkout), "local")
    assert split_spec(f"dir:{checkout}", DirSource(unpacked))[0] is source


def test_a_dir_source_option_opens_the_directory(checkout: Path) -> None:
    source = open_source(f"dir:{checkout}", None, cwd=Path("/"))
    assert isinstance(source, DirSource)
    assert source.location == str(checkout)


def _age(root: Path, seconds: float) -> None:
    """Every file's mtime set `seconds` into the past: listed long after its last edit."""
    for path in root.rglob("*.py"):
        stat = path.stat()
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns - int(seconds * 1e9)))


def _hashed(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The bytes the directory source hashes from now on."""
    seen: list[bytes] = []

    def counted(data: bytes) -> str:
        seen.append(data)
        return content_id(data)

    monkeypatch.setattr(dir_source, "content_id", counted)
    return seen


def test_a_second_listing_reads_only_the_files_edited_since(
    checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _age(checkout, 60)
    first = DirSource(checkout).tree().files
    hashed = _hashed(monkeypatch)
    assert DirSource(checkout).tree().files == first
    assert hashed == []
    edited = checkout / "python/sglang/srt" / WORKER
    edited.write_text("class EAGLEWorker:\n    x = 1\n")
    again = DirSource(checkout).tree().files
    assert hashed == [edited.read_bytes()]
    assert again[f"python/sglang/srt/{WORKER}"] == content_id(edited.read_bytes())


def test_a_file_edited_twice_within_one_mtime_tick_is_never_taken_as_unchanged(
    checkout: Path,
) -> None:
    """A file listed right after an edit may be edited again with the same size and mtime
    (coarse clocks); its id is not remembered until its mtime is safely in the past."""
    edited = checkout / "python/sglang/srt" / WORKER
    DirSource(checkout).tree()
    stamp = edited.stat()
    edited.write_text("class EAGLEWorker:\n    pazz\n")  # same size
    os.utime(edited, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert edited.stat().st_size == stamp.st_size
    files = DirSource(checkout).tree().files
    assert files[f"python/sglang/srt/{WORKER}"] == content_id(edited.read_bytes())


def test_a_directory_read_outside_any_git_checkout_does_not_load_gitpython(
    checkout: Path,
) -> None:
    """gitpython costs a tenth of a second to import: the default source is looked for
    in git only when a `.git` is above the working directory."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from tracker.sources import open_source, split_spec\n"
        "default = open_source(None, None, Path.cwd())\n"
        f"split_spec('dir:{checkout}', default)[0].tree('local')\n"
        "print(default.kind, 'git' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRACKER_REPO"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[3])
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=checkout, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["pypi", "False"]
