"""Fixture for queries/imports.scm: absolute, aliased, relative, wildcard and
function-local imports; `from __future__` and dynamic imports are not imports of names."""

from __future__ import annotations

SOURCE = """\
from __future__ import annotations

import logging
import torch.nn as nn
from typing import TYPE_CHECKING, Optional
from . import eagle_utils
from ..managers.schedule_batch import ScheduleBatch as Batch
from sglang.srt.layers.quantization import *

if TYPE_CHECKING:
    from sglang.srt.server_args import ServerArgs


def load():
    import os, sys
    from .eagle_worker import (
        EAGLEWorker,
        EAGLEWorkerV2 as V2,
    )
"""

EXPECTED = [
    ("import.alias", "Batch", 7),
    ("import.alias", "V2", 18),
    ("import.alias", "nn", 4),
    ("import.from", ".", 6),
    ("import.from", "..managers.schedule_batch", 7),
    ("import.from", ".eagle_worker", 16),
    ("import.from", ".eagle_worker", 16),
    ("import.from", "sglang.srt.layers.quantization", 8),
    ("import.from", "sglang.srt.server_args", 11),
    ("import.from", "typing", 5),
    ("import.from", "typing", 5),
    ("import.module", "logging", 3),
    ("import.module", "os", 15),
    ("import.module", "sys", 15),
    ("import.module", "torch.nn", 4),
    ("import.name", "EAGLEWorker", 17),
    ("import.name", "EAGLEWorkerV2", 18),
    ("import.name", "Optional", 5),
    ("import.name", "ScheduleBatch", 7),
    ("import.name", "ServerArgs", 11),
    ("import.name", "TYPE_CHECKING", 5),
    ("import.name", "eagle_utils", 6),
    ("import.wildcard", "*", 8),
]


def test_imports_capture_modules_names_aliases_and_wildcards(captures) -> None:
    assert captures("imports", SOURCE) == EXPECTED


def test_future_and_dynamic_imports_are_not_captured(captures) -> None:
    source = """\
    from __future__ import annotations
    module = importlib.import_module("sglang.srt.models.deepseek_v2")
    legacy = __import__("vllm")
    """
    assert captures("imports", source) == []


def test_the_fixture_exercises_every_capture_of_the_query(capture_names) -> None:
    assert {name for name, _, _ in EXPECTED} == capture_names("imports")
