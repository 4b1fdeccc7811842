"""Which classes an algorithm may load as its draft model, read from the version's code,
and the draft-role checks of generative classes that follow from it."""

from __future__ import annotations

from dataclasses import replace

from tests.unit.sgl_trees import build, line_of, tree
from tracker.analysis.compat import build_compat
from tracker.analysis.index import VersionIndex
from tracker.analysis.interface import build_interface
from tracker.analysis.roles import load_rules
from tracker.compare.snapshot import Snapshot, current_builder, from_json, to_json
from tracker.extract.parse import extract_facts
from tracker.sources.base import SourceIdentity, content_id

MODEL_CONFIG = """
    class ModelConfig:
        def __init__(self, model_path):
            self.model_path = model_path

        @staticmethod
        def from_server_args(server_args, model_path=None, is_draft_model=False):
            return ModelConfig(model_path=model_path or server_args.model_path)
    """

REFUSES_EAGLE = """
    class ServerArgs:
        def _handle_speculative_decoding(self):
            if self.speculative_algorithm == "EAGLE":
                if self.speculative_draft_model_path is None:
                    raise ValueError("EAGLE needs --speculative-draft-model-path")
    """

REFUSES_BY_FUNCTION_NAME = """
    def _handle_eagle(server_args):
        if server_args.pp_size != 1:
            raise ValueError("pp")
        if server_args.speculative_draft_model_path is None:
            raise ValueError("EAGLE needs --speculative-draft-model-path")
    """

FALLBACK = {"configs/model_config.py": MODEL_CONFIG}


def test_where_the_draft_checkpoint_defaults_to_the_targets_the_interface_says_so() -> None:
    drafts = build(FALLBACK).interface.draft_models
    line = line_of(FALLBACK, "configs/model_config.py", "model_path=model_path or")
    assert set(drafts) == {"EAGLE", "EAGLE3"}
    for found in drafts.values():
        assert found.mode == "target-default" and found.generative
        assert found.evidence == (
            "the draft checkpoint defaults to the target's: configs/model_config.py:"
            f"{line} in ModelConfig.from_server_args "
            "(model_path=model_path or server_args.model_path)"
        )


def test_without_that_fallback_an_algorithm_loads_only_its_draft_classes() -> None:
    drafts = build().interface.draft_models
    assert {a: d.mode for a, d in drafts.items()} == {
        "EAGLE": "draft-classes",
        "EAGLE3": "draft-classes",
    }
    assert not any(c.role == "draft" and c.kind == "target" for c in build().compat.checks)


def test_an_algorithm_that_refuses_a_missing_draft_path_loads_only_its_draft_classes() -> None:
    overrides = {**FALLBACK, "server_args.py": REFUSES_EAGLE}
    drafts = build(overrides).interface.draft_models
    line = line_of(overrides, "server_args.py", "raise ValueError")
    assert drafts["EAGLE"].mode == "draft-classes"
    assert drafts["EAGLE"].evidence == (
        "refuses to start without a draft path: "
        f"server_args.py:{line} in ServerArgs._handle_speculative_decoding"
    )
    assert drafts["EAGLE3"].mode == "target-default"


def test_a_refusal_is_attributed_by_its_function_name_when_no_condition_names_it() -> None:
    overrides = {**FALLBACK, "arg_groups/speculative_hook.py": REFUSES_BY_FUNCTION_NAME}
    drafts = build(overrides).interface.draft_models
    assert drafts["EAGLE"].mode == "draft-classes"
    assert drafts["EAGLE"].evidence.endswith("in _handle_eagle")
    assert drafts["EAGLE3"].mode == "target-default"


def test_generative_classes_get_a_draft_row_where_the_target_class_may_be_the_draft() -> None:
    built = build(FALLBACK)
    rows = {(c.model, c.algorithm, c.role): c for c in built.compat.checks}
    as_draft = rows[("LlamaForCausalLM", "EAGLE3", "draft")]
    # The base tree's EAGLE3 draft must provide set_embed; LlamaForCausalLM does not.
    assert as_draft.status == "broken" and as_draft.missing == ("set_embed",)
    assert as_draft.kind == "target"
    assert as_draft.role_evidence == built.interface.draft_models["EAGLE3"].evidence
    assert rows[("LlamaForCausalLM", "EAGLE3", "target")].role_evidence == ""
    # The class's own check is still the one a plain lookup finds.
    assert (
        built.compat.check_for("LlamaForCausalLM", "EAGLE3")
        == rows[("LlamaForCausalLM", "EAGLE3", "target")]
    )


def test_an_any_generative_algorithm_takes_every_generative_class_as_a_draft() -> None:
    files = tree()
    facts = {}
    for path, text in files.items():
        data = text.encode()
        facts[path] = extract_facts(path, content_id(data), data)
    index = VersionIndex(facts)
    rules = load_rules()
    rules = replace(rules, draft_models=replace(rules.draft_models, any_generative=("EAGLE",)))
    interface = build_interface("v1", index, rules)
    assert interface.draft_models["EAGLE"].mode == "any-generative"
    assert interface.draft_models["EAGLE3"].mode == "draft-classes"
    compat = build_compat(index, interface, rules)
    drafts = {(c.model, c.algorithm) for c in compat.checks if c.role == "draft"}
    assert drafts == {
        ("LlamaForCausalLM", "EAGLE"),
        ("WrapperForConditionalGeneration", "EAGLE"),
        ("LlamaForCausalLMEagle", "EAGLE"),
    }


def test_a_snapshot_keeps_the_draft_rows_and_every_piece_of_evidence() -> None:
    built = build({**FALLBACK, "server_args.py": REFUSES_EAGLE})
    snap = Snapshot(
        "v1",
        SourceIdentity("dir", "tree", "v1", ""),
        "digest",
        current_builder(),
        built.interface,
        built.compat,
    )
    again = from_json(to_json(snap))
    assert again.interface.draft_models == built.interface.draft_models
    assert again.compat.entries == built.compat.entries
    assert again.compat.checks == built.compat.checks
    assert any(c.role == "draft" and c.kind == "target" for c in again.compat.checks)
