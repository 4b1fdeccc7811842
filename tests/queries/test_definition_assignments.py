"""queries/definition_assignments.scm: only assignments that define something."""

from __future__ import annotations

SOURCE = """\
import torch

EntryClass = [KimiK25ForConditionalGeneration]


class KimiK25ForConditionalGeneration(nn.Module):
    packed_modules_mapping = {}

    def __init__(self, config):
        self.language_model = DeepseekV3ForCausalLM(config)
        hidden = config.hidden_size
        other.attr = 1

    def forward(self, x):
        y = self.language_model(x)
        return y
"""

EXPECTED = [
    ("assign.owner", "self", 10),
    ("assign.site", "EntryClass = [KimiK25ForConditionalGeneration]", 3),
    ("assign.site", "packed_modules_mapping = {}", 7),
    ("assign.site", "self.language_model = DeepseekV3ForCausalLM(config)", 10),
    ("assign.target", "EntryClass", 3),
    ("assign.target", "packed_modules_mapping", 7),
    ("assign.target", "self.language_model", 10),
    ("assign.value", "DeepseekV3ForCausalLM(config)", 10),
    ("assign.value", "[KimiK25ForConditionalGeneration]", 3),
    ("assign.value", "{}", 7),
]


def test_definition_assignments_keep_self_attributes_class_attributes_and_module_names(
    captures,
) -> None:
    assert captures("definition_assignments", SOURCE) == EXPECTED


def test_locals_and_attributes_of_other_objects_are_not_definitions(captures) -> None:
    source = """\
    def f(config):
        hidden = config.hidden_size
        config.flag = True
        for i in range(3):
            total = i
    """
    assert captures("definition_assignments", source) == []


def test_the_fixture_exercises_every_capture_of_the_query(capture_names) -> None:
    assert {name for name, _, _ in EXPECTED} == capture_names("definition_assignments")
