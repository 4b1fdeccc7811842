"""What a new user meets first: which source a header names, usage errors, the command list
in --help, and reports whose columns line up. Run through the real entry point."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from sgl_trees import tree


def tracker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tracker", *args], capture_output=True, text=True, check=False
    )


def sglang_dir(root: Path, overrides: dict[str, str | None] | None = None) -> Path:
    """A directory holding a small SGLang tree (tests/unit/sgl_trees.py) at `root`."""
    for path, text in tree(overrides).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


# -- which source a header names ------------------------------------------------------------


def test_a_directory_named_as_the_version_is_the_source_the_header_names(tmp_path: Path) -> None:
    patched = sglang_dir(tmp_path / "patched")
    result = tracker("interface", f"dir:{patched}", "-a", "EAGLE3", "-q")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == f"sglang local · source: dir:{patched} (analysed)"


def test_a_diff_across_two_sources_names_both(tmp_path: Path) -> None:
    old = sglang_dir(tmp_path / "old")
    new = sglang_dir(tmp_path / "new", {"models/wrapper.py": None})
    result = tracker("diff", f"dir:{old}", f"dir:{new}", "-a", "EAGLE3", "-q")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == (
        f"sglang local → local · EAGLE3 · source: dir:{old} (analysed) → dir:{new} (analysed)"
    )


def test_a_version_other_than_local_asked_of_a_directory_source_is_refused(
    tmp_path: Path,
) -> None:
    patched = sglang_dir(tmp_path / "patched")
    result = tracker("interface", "v0.5.9", "--source", f"dir:{patched}")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        f"tracker: error: dir:{patched} holds one version, local, not v0.5.9; ask for local, "
        f"or compare the two with `tracker diff v0.5.9 dir:{patched}`\n"
    )
