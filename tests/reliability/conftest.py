"""Fixtures of the reliability tests (the helpers themselves live in support.py)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.reliability.support import FakeIndex, make_fake_index, make_sgl_dir


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
