"""Answers for checkpoints on a small tree (tests/unit/checkpoint_trees.py): the class its
loading code picks for each config, and the requirements its conditions leave once they
are evaluated on the configs' values."""

from __future__ import annotations

import pytest
from checkpoint_trees import LOADING, ask
from sgl_trees import build, line_of

from tracker.analysis.checkpoint import NOT_NEEDED, UnregisteredArchitecture

EAGLE3_DRAFT = {
    "architectures": ["LlamaForCausalLMEagle3"],
    "num_hidden_layers": 1,
    "tie_word_embeddings": False,
    "draft_vocab_size": 32000,
}


def change_of(answer, member):  # type: ignore[no-untyped-def]
    found = [c for c in answer.changes if c.member == member]
    return found[0] if found else None


def test_a_config_naming_a_registered_class_loads_that_class_by_the_registry() -> None:
    answer = ask({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}, EAGLE3_DRAFT)
    choice = answer.target.choice
    assert choice is not None and choice.class_name == "LlamaForCausalLM"
    assert choice.steps[-1].rule == "the registry's EntryClass"
    assert (
        choice.steps[-1].site
        == f"models/llama.py:{line_of(LOADING, 'models/llama.py', 'EntryClass')}"
    )


def test_the_first_registered_name_of_the_architectures_list_is_loaded() -> None:
    answer = ask({"architectures": ["NotAnSGLangClass", "LlamaForCausalLM"]}, EAGLE3_DRAFT)
    assert answer.target.choice is not None
    assert answer.target.choice.class_name == "LlamaForCausalLM"


def test_a_draft_checkpoint_is_rewritten_by_the_model_configs_draft_rule() -> None:
    answer = ask({"architectures": ["LlamaForCausalLM"]}, {"architectures": ["LlamaForCausalLM"]})
    target, draft = answer.target.choice, answer.draft.choice if answer.draft else None
    assert target is not None and target.class_name == "LlamaForCausalLM"
    assert draft is not None and draft.class_name == "LlamaForCausalLMEagle"
    rewrite = draft.steps[1]
    assert rewrite.rule == "the draft rewrite: LlamaForCausalLM → LlamaForCausalLMEagle"
    assert rewrite.site.startswith("configs/model_config.py:")
    assert "_config_draft_model" in rewrite.site


def test_the_config_loader_rewrites_an_architecture_by_the_model_type() -> None:
    answer = ask({"architectures": ["SomethingMM"], "model_type": "wrapper_mm"}, EAGLE3_DRAFT)
    choice = answer.target.choice
    assert choice is not None and choice.class_name == "WrapperForConditionalGeneration"
    assert choice.steps[1].because == ('target config sets model_type = "wrapper_mm"',)
    assert choice.steps[1].site == "utils/hf_transformers_utils.py:4 in get_config"


def test_override_args_replace_the_architectures_before_the_draft_rewrite() -> None:
    answer = ask(
        {"architectures": ["WrapperForConditionalGeneration"]},
        algorithm="EAGLE",
        override_args={"architectures": ["LlamaForCausalLM"]},
    )
    assert answer.target.choice is not None
    assert answer.target.choice.class_name == "LlamaForCausalLM"
    # The draft is the target's own checkpoint, overridden the same way, then rewritten.
    assert answer.draft is not None and answer.draft.choice is not None
    assert answer.draft.choice.class_name == "LlamaForCausalLMEagle"
    rules = [s.rule for s in answer.target.choice.steps]
    assert "--override-args (--json-model-override-args)" in rules


def test_an_architecture_no_module_registers_is_refused() -> None:
    with pytest.raises(UnregisteredArchitecture) as raised:
        ask({"architectures": ["KimiK25ForConditionalGeneration"]}, EAGLE3_DRAFT)
    assert raised.value.choice.architectures == ("KimiK25ForConditionalGeneration",)


def test_a_draft_config_turning_aux_hidden_states_off_drops_the_capture_setter() -> None:
    draft = {**EAGLE3_DRAFT, "eagle_config": {"use_aux_hidden_state": False}}
    answer = ask({"architectures": ["WrapperForConditionalGeneration"]}, draft)
    change = change_of(answer, "set_eagle3_layers_to_capture")
    assert change is not None and change.after == NOT_NEEDED
    assert change.because == ("draft config sets eagle_config.use_aux_hidden_state = false",)
    assert change.site == "model_executor/model_runner.py:24"
    assert answer.target.check is not None
    assert answer.target.check.missing == ("get_embed_and_head",)


def test_a_draft_config_asking_for_aux_hidden_states_keeps_the_setter_required() -> None:
    draft = {**EAGLE3_DRAFT, "eagle_config": {"use_aux_hidden_state": True}}
    answer = ask({"architectures": ["WrapperForConditionalGeneration"]}, draft)
    assert change_of(answer, "set_eagle3_layers_to_capture") is None
    assert answer.target.check is not None
    assert answer.target.check.missing == ("get_embed_and_head", "set_eagle3_layers_to_capture")


def test_a_draft_config_without_eagle_config_keeps_the_setter_its_try_leaves_on() -> None:
    # getattr(..., "eagle_config", None).get(...) raises inside the try: the flag stays True.
    answer = ask({"architectures": ["WrapperForConditionalGeneration"]}, EAGLE3_DRAFT)
    assert change_of(answer, "set_eagle3_layers_to_capture") is None
    assert not [u for u in answer.undecided if "eagle_use_aux_hidden_state" in u.what]


def test_a_draft_vocab_size_of_null_makes_the_draft_need_set_embed_and_head() -> None:
    answer = ask(
        {"architectures": ["LlamaForCausalLM"]}, {**EAGLE3_DRAFT, "draft_vocab_size": None}
    )
    raised = change_of(answer, "set_embed_and_head")
    dropped = change_of(answer, "set_embed")
    assert raised is not None and (raised.before, raised.after) == ("conditional", "required")
    assert "draft config sets draft_vocab_size = null" in raised.because
    assert "the draft class LlamaForCausalLMEagle3 has load_lm_head_from_target" in raised.because
    assert dropped is not None and dropped.after == NOT_NEEDED


def test_a_draft_vocab_size_leaves_the_draft_needing_set_embed_only() -> None:
    answer = ask({"architectures": ["LlamaForCausalLM"]}, EAGLE3_DRAFT)
    dropped = change_of(answer, "set_embed_and_head")
    assert dropped is not None and dropped.after == NOT_NEEDED
    assert dropped.because == ("draft config sets draft_vocab_size = 32000",)
    assert change_of(answer, "set_embed") is None


def test_a_key_the_draft_class_reads_but_the_config_lacks_is_listed_undecided() -> None:
    draft = {k: v for k, v in EAGLE3_DRAFT.items() if k != "draft_vocab_size"}
    answer = ask({"architectures": ["LlamaForCausalLM"]}, draft)
    assert change_of(answer, "set_embed_and_head") is None
    reasons = {u.why for u in answer.undecided if "load_lm_head_from_target" in u.what}
    assert reasons == {
        "LlamaForCausalLMEagle3.__init__ sets it from its config: draft config has no "
        "draft_vocab_size"
    }


def test_without_a_draft_config_the_draft_is_the_targets_checkpoint_as_a_draft() -> None:
    answer = ask({"architectures": ["LlamaForCausalLM"]}, algorithm="EAGLE")
    assert answer.draft is not None and answer.draft.choice is not None
    assert answer.draft.given_as.startswith("the target's checkpoint (the draft checkpoint")
    assert answer.draft.choice.class_name == "LlamaForCausalLMEagle"
    assert answer.draft.choice.config.from_target


def test_a_config_that_only_names_the_class_gives_the_class_check() -> None:
    built = build(LOADING)
    for name in ("LlamaForCausalLM", "WrapperForConditionalGeneration"):
        answer = ask({"architectures": [name]}, algorithm="EAGLE")
        expected = built.compat.check_for(name, "EAGLE", "target")
        assert expected is not None and answer.target.check is not None
        assert (answer.target.check.status, answer.target.check.missing) == (
            expected.status,
            expected.missing,
        )


def test_a_local_copy_of_the_architectures_is_read_not_a_rewrite() -> None:
    # `architectures = getattr(self.hf_config, "architectures", []) or []` under a condition
    # the tracker cannot decide (model_config.py's ModelOpt parsing, v0.5.10 on).
    reading = LOADING["configs/model_config.py"]
    assert reading is not None
    method = "            def _config_draft_model(self):"
    assert method in reading
    reading = reading.replace(
        method,
        "            def _parse_quant(self, quant_algo):\n"
        '                if quant_algo == "MIXED_PRECISION":\n'
        '                    architectures = getattr(self.hf_config, "architectures", []) or []\n'
        "                    return architectures\n"
        "\n" + method,
    )
    call = "                self._config_draft_model()\n"
    assert call in reading
    reading = reading.replace(call, "                self._parse_quant(model_path)\n" + call)
    answer = ask(
        {"architectures": ["LlamaForCausalLM"]},
        EAGLE3_DRAFT,
        overrides={"configs/model_config.py": reading},
    )
    assert answer.target.choice is not None
    assert [u.what for u in answer.undecided if "architectures" in u.what] == []
