"""Fixtures of the reliability tests (the helpers themselves live in support.py)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from sgl_trees import tree as tiny_tree

from tests.reliability.support import SRT, FakeIndex, make_fake_index, make_sgl_dir


@pytest.fixture
def sgl_dir(tmp_path: Path) -> Callable[..., Path]:
    """`sgl_dir(name, extra=None, generated=0) -> Path`: a tiny SGLang checkout on disk."""
    return make_sgl_dir(tmp_path)


@pytest.fixture
def fake_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeIndex:
    """pip stand-in serving tiny-tree wheels of 0.5.9 and 0.5.10 (0.5.8 listed, no wheel)."""
    return make_fake_index(tmp_path, monkeypatch)


@pytest.fixture
def cache_dir() -> Path:
    """The TRACKER_CACHE_DIR the autouse isolation fixture set for this test."""
    return Path(os.environ["TRACKER_CACHE_DIR"])


def _breaking_history() -> dict[str, dict[str, str]]:
    """Three tiny releases; v0.5.10 drops a member the Llama model needs."""
    old = tiny_tree()
    new = dict(old)
    llama = f"{SRT}models/llama.py"
    dropped = "    def set_eagle3_layers_to_capture(self, layer_ids=None):\n"
    dropped += "        self.layers = layer_ids\n"
    assert dropped in new[llama]
    new[llama] = new[llama].replace(dropped, "")
    return {"v0.5.8": old, "v0.5.9": old, "v0.5.10": new}


@pytest.fixture
def breaking_repo(make_git_repo: Callable[..., Path]) -> Path:
    """A git repository of three tiny releases; v0.5.10 breaks LlamaForCausalLM."""
    return make_git_repo(_breaking_history())
