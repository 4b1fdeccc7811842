"""Every change kind has one fixture pair of tiny trees; every pair is diffed and must
report exactly the kinds listed for it (a false positive of another kind shows here), and
every tree compared with itself reports nothing."""

from __future__ import annotations

from functools import cache

import pytest
from sgl_trees import BASE, CAPTURE_LM, CAPTURE_LM_DROPS_AUX, CAPTURE_LM_NO_PAIR, Built, build

from tracker.compare.changes import ChangeKind
from tracker.compare.diff import diff

WORKER = BASE["speculative/eagle_worker.py"]
RUNNER = BASE["model_executor/model_runner.py"]
LLAMA = BASE["models/llama.py"]
SPEC = BASE["speculative/spec_info.py"]

NEW_CALL = WORKER.replace(
    "        embed, head = self.target_worker.model_runner.model.get_embed_and_head()\n",
    "        embed, head = self.target_worker.model_runner.model.get_embed_and_head()\n"
    "        self.target_worker.model_runner.model.new_hook()\n",
)
OPTIONAL_CALL = WORKER.replace(
    "        embed, head = self.target_worker.model_runner.model.get_embed_and_head()\n",
    "        embed, head = self.target_worker.model_runner.model.get_embed_and_head()\n"
    "        if hasattr(self.target_worker.model_runner.model, 'new_hook'):\n"
    "            self.target_worker.model_runner.model.new_hook()\n",
)
NO_EMBED = WORKER.replace(
    "        embed, head = self.target_worker.model_runner.model.get_embed_and_head()\n",
    "        embed, head = None, None\n",
)
GUARDED_EMBED = WORKER.replace(
    "        embed, head = self.target_worker.model_runner.model.get_embed_and_head()\n",
    "        embed = head = None\n"
    "        if hasattr(self.target_worker.model_runner.model, 'get_embed_and_head'):\n"
    "            embed, head = self.target_worker.model_runner.model.get_embed_and_head()\n",
)
MORE_ARGS = RUNNER.replace(
    "set_eagle3_layers_to_capture([1, 2])", "set_eagle3_layers_to_capture([1, 2], True)"
)
NEW_FIELD = WORKER.replace(
    "return logits_output.hidden_states",
    "return logits_output.hidden_states, logits_output.mm_input_embeds",
)
CONFIG = RUNNER.replace(
    "            self.eagle_use_aux_hidden_state = True\n",
    "            self.eagle_use_aux_hidden_state = True\n"
    "            eagle_config = server_args.eagle_config\n"
    "            self.layers = eagle_config.get('eagle_aux_hidden_state_layer_ids')\n",
)
LLAMA_WITHOUT_CAPTURE = LLAMA.replace(
    "    def set_eagle3_layers_to_capture(self, layer_ids=None):\n"
    "        self.layers = layer_ids\n",
    "",
)
WRAPPER_FIXED = BASE["models/wrapper.py"].replace(
    "        self.language_model = LlamaForCausalLM(config)\n",
    "        self.language_model = LlamaForCausalLM(config)\n\n"
    "    def get_embed_and_head(self):\n"
    "        return self.language_model.get_embed_and_head()\n\n"
    "    def set_eagle3_layers_to_capture(self, layer_ids=None):\n"
    "        return self.language_model.set_eagle3_layers_to_capture(layer_ids)\n",
)
NEW_WRAPPER = BASE["models/wrapper.py"].replace(
    "WrapperForConditionalGeneration", "NewVLForConditionalGeneration"
)
NEW_SUPPORTED = LLAMA.replace("LlamaForCausalLM", "MistralForCausalLM")
LOOKAHEAD_SPEC = SPEC.replace(
    "    EAGLE3 = auto()\n", "    EAGLE3 = auto()\n    LOOKAHEAD = auto()\n"
)

# kind -> (old overrides, new overrides, every kind the pair must report)
PAIRS: dict[str, tuple[dict[str, str | None], dict[str, str | None], set[str]]] = {
    "algorithm_added": ({}, {"speculative/spec_info.py": LOOKAHEAD_SPEC}, {"algorithm_added"}),
    "algorithm_removed": ({"speculative/spec_info.py": LOOKAHEAD_SPEC}, {}, {"algorithm_removed"}),
    "member_now_required": (
        {},
        {"speculative/eagle_worker.py": NEW_CALL},
        {"member_now_required", "model_wrapper_broke"},
    ),
    "member_now_optional": (
        {},
        {"speculative/eagle_worker.py": OPTIONAL_CALL},
        {"member_now_optional"},
    ),
    "member_no_longer_required": (
        {},
        {"speculative/eagle_worker.py": NO_EMBED},
        {"member_no_longer_required", "model_wrapper_fixed"},
    ),
    "member_no_longer_used": (
        {"speculative/eagle_worker.py": OPTIONAL_CALL},
        {},
        {"member_no_longer_used"},
    ),
    "member_became_optional": (
        {},
        {"speculative/eagle_worker.py": GUARDED_EMBED},
        {"member_became_optional", "model_wrapper_fixed"},
    ),
    "member_became_required": (
        {"speculative/eagle_worker.py": GUARDED_EMBED},
        {},
        {"member_became_required", "model_wrapper_broke"},
    ),
    "call_arity_changed": (
        {},
        {"model_executor/model_runner.py": MORE_ARGS},
        {"call_arity_changed"},
    ),
    "output_field_added": ({}, {"speculative/eagle_worker.py": NEW_FIELD}, {"output_field_added"}),
    "output_field_removed": (
        {"speculative/eagle_worker.py": NEW_FIELD},
        {},
        {"output_field_removed"},
    ),
    "config_key_added": ({}, {"model_executor/model_runner.py": CONFIG}, {"config_key_added"}),
    "config_key_removed": ({"model_executor/model_runner.py": CONFIG}, {}, {"config_key_removed"}),
    "model_wrapper_broke": (
        {},
        {"models/llama.py": LLAMA_WITHOUT_CAPTURE},
        {"model_wrapper_broke"},
    ),
    "model_wrapper_fixed": ({}, {"models/wrapper.py": WRAPPER_FIXED}, {"model_wrapper_fixed"}),
    "model_wrapper_contract_broke": (
        {"models/dec.py": CAPTURE_LM},
        {"models/dec.py": CAPTURE_LM_DROPS_AUX},
        {"model_wrapper_contract_broke"},
    ),
    "model_wrapper_contract_fixed": (
        {"models/dec.py": CAPTURE_LM_NO_PAIR},
        {"models/dec.py": CAPTURE_LM},
        {"model_wrapper_contract_fixed"},
    ),
    "model_wrapper_added_unsupported": (
        {},
        {"models/new_vl.py": NEW_WRAPPER},
        {"model_wrapper_added_unsupported"},
    ),
    "model_wrapper_added_supported": (
        {},
        {"models/mistral.py": NEW_SUPPORTED},
        {"model_wrapper_added_supported"},
    ),
    "model_wrapper_removed": ({}, {"models/wrapper.py": None}, {"model_wrapper_removed"}),
}


@cache
def built(overrides: tuple[tuple[str, str | None], ...]) -> Built:
    return build(dict(overrides))


def frozen(overrides: dict[str, str | None]) -> tuple[tuple[str, str | None], ...]:
    return tuple(sorted(overrides.items()))


def kinds_between(old: dict[str, str | None], new: dict[str, str | None]) -> set[str]:
    a, b = built(frozen(old)), built(frozen(new))
    return {c.kind for c in diff(a.interface, a.compat, b.interface, b.compat).changes}


def test_every_change_kind_has_a_fixture_pair() -> None:
    assert set(PAIRS) == set(ChangeKind)


@pytest.mark.parametrize("kind", sorted(PAIRS))
def test_each_pair_reports_exactly_its_kinds(kind: str) -> None:
    old, new, expected = PAIRS[kind]
    assert kinds_between(old, new) == expected


@pytest.mark.parametrize("kind", sorted(PAIRS))
def test_a_tree_compared_with_itself_reports_nothing(kind: str) -> None:
    old, new, _ = PAIRS[kind]
    assert kinds_between(old, old) == set()
    assert kinds_between(new, new) == set()


def test_a_new_wrapper_whose_inner_model_has_the_members_is_notable() -> None:
    a, b = built(()), built(frozen({"models/new_vl.py": NEW_WRAPPER}))
    changes = diff(a.interface, a.compat, b.interface, b.compat, ("EAGLE3",)).changes
    assert [(c.subject, c.notable) for c in changes] == [("NewVLForConditionalGeneration", True)]
    assert (
        changes[0].message == "new class NewVLForConditionalGeneration lacks what EAGLE3 requires"
    )


def test_the_algorithm_filter_keeps_only_that_algorithm() -> None:
    a, b = built(()), built(frozen({"speculative/eagle_worker.py": NEW_CALL}))
    changes = diff(a.interface, a.compat, b.interface, b.compat, ("EAGLE",)).changes
    assert {c.algorithm for c in changes} == {"EAGLE"}


def test_an_arity_change_says_the_old_and_the_new_number_of_arguments() -> None:
    old, new, _ = PAIRS["call_arity_changed"]
    a, b = built(frozen(old)), built(frozen(new))
    (change,) = diff(a.interface, a.compat, b.interface, b.compat, ("EAGLE3",)).changes
    assert change.message == (
        "set_eagle3_layers_to_capture on the target model is now called with 2 arguments (was 1)"
    )


def test_an_arity_change_to_one_argument_says_it_in_the_singular() -> None:
    new, old, _ = PAIRS["call_arity_changed"]
    a, b = built(frozen(old)), built(frozen(new))
    (change,) = diff(a.interface, a.compat, b.interface, b.compat, ("EAGLE3",)).changes
    assert change.message == (
        "set_eagle3_layers_to_capture on the target model is now called with 1 argument (was 2)"
    )


def test_a_new_class_lacking_what_its_inner_model_has_is_a_new_break() -> None:
    a, b = built(()), built(frozen({"models/new_vl.py": NEW_WRAPPER}))
    result = diff(a.interface, a.compat, b.interface, b.compat, ("EAGLE3",))
    assert [c.subject for c in result.new_breaks] == ["NewVLForConditionalGeneration"]


def test_a_new_class_that_like_its_siblings_never_supported_it_is_no_new_break() -> None:
    # A class without an inner model, alone in its file: a model the algorithm never
    # supported, not an oversight.
    plain = (
        "from torch import nn\n\n\n"
        "class PlainForCausalLM(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x\n\n\n"
        "EntryClass = PlainForCausalLM\n"
    )
    a, b = built(()), built(frozen({"models/plain.py": plain}))
    result = diff(a.interface, a.compat, b.interface, b.compat, ("EAGLE3",))
    assert [c.kind for c in result.changes] == ["model_wrapper_added_unsupported"]
    assert result.new_breaks == []


def test_a_wrapper_that_broke_is_a_new_break() -> None:
    old, new, _ = PAIRS["model_wrapper_broke"]
    a, b = built(frozen(old)), built(frozen(new))
    result = diff(a.interface, a.compat, b.interface, b.compat, ("EAGLE3",))
    assert {c.subject for c in result.new_breaks} == {"LlamaForCausalLM"}
