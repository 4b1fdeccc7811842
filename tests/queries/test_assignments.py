"""Fixture for queries/assignments.scm: plain, annotated, tuple and augmented assignments
with a value; names bound any other way are not assignments."""

from __future__ import annotations

SOURCE = """\
EntryClass = [DeepseekV3ForCausalLMNextN, KimiK25ForCausalLM]


class KimiK25ForCausalLM(nn.Module):
    hot_token_ids: list[int] | None = None

    def __init__(self, config):
        self.language_model = DeepseekV3ForCausalLM(config)
        target_model = self.target_worker.model_runner.model
        self.embed, self.head = target_model.get_embed_and_head()
        self.num_steps += 1
        width: int
"""

EXPECTED = [
    ("assign.site", "EntryClass = [DeepseekV3ForCausalLMNextN, KimiK25ForCausalLM]", 1),
    ("assign.site", "hot_token_ids: list[int] | None = None", 5),
    ("assign.site", "self.embed, self.head = target_model.get_embed_and_head()", 10),
    ("assign.site", "self.language_model = DeepseekV3ForCausalLM(config)", 8),
    ("assign.site", "self.num_steps += 1", 11),
    ("assign.site", "target_model = self.target_worker.model_runner.model", 9),
    ("assign.target", "EntryClass", 1),
    ("assign.target", "hot_token_ids", 5),
    ("assign.target", "self.embed, self.head", 10),
    ("assign.target", "self.language_model", 8),
    ("assign.target", "self.num_steps", 11),
    ("assign.target", "target_model", 9),
    ("assign.value", "1", 11),
    ("assign.value", "DeepseekV3ForCausalLM(config)", 8),
    ("assign.value", "None", 5),
    ("assign.value", "[DeepseekV3ForCausalLMNextN, KimiK25ForCausalLM]", 1),
    ("assign.value", "self.target_worker.model_runner.model", 9),
    ("assign.value", "target_model.get_embed_and_head()", 10),
]


def test_assignments_capture_target_value_and_statement(captures) -> None:
    assert captures("assignments", SOURCE) == EXPECTED


def test_names_bound_by_loops_with_walrus_and_parameters_are_not_assignments(captures) -> None:
    source = """\
    def load(weights, strict=True):
        for name, tensor in weights:
            with torch.no_grad() as guard:
                if (param := params.get(name)) is not None:
                    param.copy_(tensor, non_blocking=True)
    """
    assert captures("assignments", source) == []


def test_the_fixture_exercises_every_capture_of_the_query(capture_names) -> None:
    assert {name for name, _, _ in EXPECTED} == capture_names("assignments")
