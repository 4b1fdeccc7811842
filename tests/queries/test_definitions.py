"""Fixture for queries/definitions.scm: classes, functions (async too) and decorators."""

from __future__ import annotations

SOURCE = """\
import torch


@register("eagle")
@dataclass(frozen=True)
class EAGLEConfig:
    steps: int = 3


class EAGLEWorker(TpModelWorker, metaclass=ABCMeta):
    def __init__(self, server_args, *, gpu_id: int = 0):
        def _load():
            pass

    @torch.no_grad()
    async def forward_batch_generation(self, batch):
        return None
"""

EXPECTED = [
    ("class.bases", "(TpModelWorker, metaclass=ABCMeta)", 10),
    ("class.definition", "class EAGLEConfig:…steps: int = 3", 6),
    ("class.definition", "class EAGLEWorker(TpModelWorker, metaclass=ABCMeta):…return None", 10),
    ("class.name", "EAGLEConfig", 6),
    ("class.name", "EAGLEWorker", 10),
    ("definition.decorator", "@dataclass(frozen=True)", 5),
    ("definition.decorator", '@register("eagle")', 4),
    ("definition.decorator", "@torch.no_grad()", 15),
    ("function.definition", "async def forward_batch_generation(self, batch):…return None", 16),
    ("function.definition", "def __init__(self, server_args, *, gpu_id: int = 0):…pass", 11),
    ("function.definition", "def _load():…pass", 12),
    ("function.name", "__init__", 11),
    ("function.name", "_load", 12),
    ("function.name", "forward_batch_generation", 16),
    ("function.parameters", "()", 12),
    ("function.parameters", "(self, batch)", 16),
    ("function.parameters", "(self, server_args, *, gpu_id: int = 0)", 11),
]


def test_definitions_capture_classes_functions_and_decorators(captures) -> None:
    assert captures("definitions", SOURCE) == EXPECTED


def test_a_class_without_parentheses_has_no_bases_capture(captures) -> None:
    assert captures("definitions", "class Plain:\n    pass\n") == [
        ("class.definition", "class Plain:…pass", 1),
        ("class.name", "Plain", 1),
    ]


def test_lambdas_and_dynamic_classes_are_not_definitions(captures) -> None:
    source = """\
    handler = lambda batch: batch.forward_mode
    Dynamic = type("Dynamic", (nn.Module,), {})
    worker_cls = functools.partial(EAGLEWorker, gpu_id=0)
    """
    assert captures("definitions", source) == []


def test_the_fixture_exercises_every_capture_of_the_query(capture_names) -> None:
    assert {name for name, _, _ in EXPECTED} == capture_names("definitions")
