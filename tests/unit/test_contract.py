"""EAGLE3's aux-hidden-state contract on tiny wrapper + decoder pairs: each rule has a
broken variant that must report it (and only it) and a fixed one that reports nothing."""

from __future__ import annotations

from textwrap import dedent

import pytest
from sgl_trees import CAPTURE_LM

from tracker.analysis.contract import ContractRule, check_contract, check_draft_contract
from tracker.analysis.index import VersionIndex
from tracker.analysis.roles import CaptureHook, load_rules
from tracker.extract.parse import extract_facts

PATH = "python/sglang/srt/models/dec.py"


def _part(first: str, stop: str) -> str:
    """One class of the tiny capturing model the other unit tests use (sgl_trees)."""
    start, end = CAPTURE_LM.index(first), CAPTURE_LM.index(stop)
    return "\n" + CAPTURE_LM[start:end].rstrip("\n") + "\n"


# The decoder that fills the aux list from the capture ids, and the wrapper whose setter
# writes them and whose forward hands the aux states to the logits processor.
DECODER = _part("class DecModel", "class DecForCausalLM")
WRAPPER = _part("class DecForCausalLM", "EntryClass")

# A decoder that captures through per-layer flags (the Qwen3.5 shape).
FLAG_DECODER = DECODER.replace(
    "if i in self.layers_to_capture:", 'if getattr(layer, "_is_layer_to_capture", False):'
)
FLAG_SETTER = """
    def set_eagle3_layers_to_capture(self, layer_ids):
        self.layers_to_capture = layer_ids
        for layer_id in layer_ids:
            setattr(self.layers[layer_id], "_is_layer_to_capture", True)
"""
# A wrapper whose __init__ skips the parent's, which created the capture flag.
SKIPPING_WRAPPER = """
class DecVLForConditionalGeneration(DecForCausalLM):
    def __init__(self, config):
        nn.Module.__init__(self)
        self.model = DecModel(config)
        self.logits_processor = LogitsProcessor(config)

    def set_eagle3_layers_to_capture(self, layer_ids=None):
        self.model.layers_to_capture = [i + 1 for i in layer_ids]
"""

CASES = {
    # rule: (broken source, fixed source, class checked)
    ContractRule.CAPTURE_STATE_MISMATCH: (
        FLAG_DECODER + WRAPPER,
        FLAG_DECODER
        + FLAG_SETTER
        + WRAPPER.replace(
            "self.model.layers_to_capture = [i + 1 for i in layer_ids]",
            "self.model.set_eagle3_layers_to_capture([i + 1 for i in layer_ids])",
        ),
        "DecForCausalLM",
    ),
    ContractRule.AUX_NEVER_RETURNED: (
        DECODER.replace("return hidden_states, aux_hidden_states", "return hidden_states")
        + WRAPPER,
        DECODER + WRAPPER,
        "DecForCausalLM",
    ),
    ContractRule.CAPTURE_ATTRIBUTE_MISSING: (
        DECODER + WRAPPER + SKIPPING_WRAPPER,
        # The setter creates the flag before any forward runs.
        DECODER
        + WRAPPER
        + SKIPPING_WRAPPER.replace(
            "    def set_eagle3_layers_to_capture(self, layer_ids=None):\n",
            "    def set_eagle3_layers_to_capture(self, layer_ids=None):\n"
            "        self.capture_aux_hidden_states = True\n",
        ),
        "DecVLForConditionalGeneration",
    ),
    ContractRule.AUX_NOT_TO_LOGITS: (
        DECODER + WRAPPER.replace("batch, aux_hidden_states)", "batch)"),
        DECODER + WRAPPER,
        "DecForCausalLM",
    ),
}


def contract_of(source: str, cls: str):  # type: ignore[no-untyped-def]
    facts = extract_facts(PATH, "id", dedent(source).encode(), full=False)
    index = VersionIndex({PATH: facts})
    return check_contract(index, f"sglang.srt.models.dec:{cls}")


@pytest.mark.parametrize("rule", list(ContractRule), ids=lambda r: r.id)
def test_each_rule_reports_its_broken_fixture_and_only_that_rule(rule: ContractRule) -> None:
    broken, _fixed, cls = CASES[rule]
    result = contract_of(broken, cls)
    assert result.status == "broken"
    assert {f.rule for f in result.findings} == {rule.id}


@pytest.mark.parametrize("rule", list(ContractRule), ids=lambda r: r.id)
def test_each_rule_is_quiet_on_its_fixed_fixture(rule: ContractRule) -> None:
    _broken, fixed, cls = CASES[rule]
    result = contract_of(fixed, cls)
    assert (result.status, result.findings, result.unknown) == ("ok", (), "")


def test_a_mismatch_names_the_setter_write_the_decoder_read_and_the_unpack_that_fails() -> None:
    broken, _fixed, cls = CASES[ContractRule.CAPTURE_STATE_MISMATCH]
    (finding,) = contract_of(broken, cls).findings
    assert finding.render() == (
        "aux hidden states never captured: set_eagle3_layers_to_capture writes "
        "self.model.layers_to_capture (dec.py:38); DecModel.forward reads "
        "layer._is_layer_to_capture (getattr) (dec.py:12); DecForCausalLM.forward unpacks "
        "hidden_states, aux_hidden_states (dec.py:30)"
    )


def test_a_setter_delegating_to_an_inner_class_that_is_not_known_is_unknown_not_ok() -> None:
    source = DECODER + WRAPPER.replace(
        "self.model = DecModel(config)", "self.model = build_model(config)"
    ).replace(
        "self.model.layers_to_capture = [i + 1 for i in layer_ids]",
        "self.model.set_eagle3_layers_to_capture(layer_ids)",
    )
    result = contract_of(source, "DecForCausalLM")
    assert result.status == "unknown"
    assert "the class of self.model is not known" in result.unknown


def test_every_rule_has_a_fixture() -> None:
    assert set(CASES) == set(ContractRule)


def test_a_read_created_only_by_an_init_that_is_skipped_is_an_attribute_error() -> None:
    broken, _fixed, cls = CASES[ContractRule.CAPTURE_ATTRIBUTE_MISSING]
    (finding,) = contract_of(broken, cls).findings
    assert finding.message == "capture_aux_hidden_states is read on self but nothing creates it"
    # With the parent's __init__ called, the flag exists but the setter never turns it on.
    called = broken.replace("nn.Module.__init__(self)", "super().__init__(config)")
    assert [f.rule for f in contract_of(called, cls).findings] == [
        ContractRule.CAPTURE_STATE_MISMATCH.id
    ]


# v0.4.x unpacks the pair straight from the inner call and passes the aux states on.
UNPACK_FROM_CALL_WRAPPER = WRAPPER.replace(
    """        hidden_states = self.model(input_ids)
        aux_hidden_states = None
        if self.capture_aux_hidden_states:
            hidden_states, aux_hidden_states = hidden_states
""",
    """        aux_hidden_states = None
        if self.capture_aux_hidden_states:
            hidden_states, aux_hidden_states = self.model(input_ids)
        else:
            hidden_states = self.model(input_ids)
""",
)


def test_aux_states_unpacked_straight_from_the_inner_call_reach_the_logits() -> None:
    assert UNPACK_FROM_CALL_WRAPPER != WRAPPER
    assert contract_of(DECODER + UNPACK_FROM_CALL_WRAPPER, "DecForCausalLM").findings == ()
    dropped = UNPACK_FROM_CALL_WRAPPER.replace("batch, aux_hidden_states)", "batch)")
    result = contract_of(DECODER + dropped, "DecForCausalLM")
    assert {f.rule for f in result.findings} == {ContractRule.AUX_NOT_TO_LOGITS.id}


# A wrapper whose missing members come from the causal LM it holds (`__getattr__`).
GETATTR_WRAPPER = """
class DecWrapper(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.language_model = DecForCausalLM(config)

    def __getattr__(self, name):
        return getattr(self.language_model, name)

    def forward(self, input_ids, batch):
        return self.language_model(input_ids, batch)
"""


def test_a_setter_found_through_getattr_is_followed_into_the_forwarded_class() -> None:
    result = contract_of(DECODER + WRAPPER + GETATTR_WRAPPER, "DecWrapper")
    assert (result.status, result.findings, result.unknown) == ("ok", (), "")
    # The forwarded class's own break is the wrapper's.
    broken, _fixed, _cls = CASES[ContractRule.AUX_NOT_TO_LOGITS]
    dropped = contract_of(broken + GETATTR_WRAPPER, "DecWrapper")
    assert {f.rule for f in dropped.findings} == {ContractRule.AUX_NOT_TO_LOGITS.id}


# A decoder that returns another stream in the aux slot on its common path.
OTHER_STREAM_DECODER = DECODER.replace(
    "        if len(aux_hidden_states) == 0:\n",
    "        streams = self.mix(hidden_states)\n"
    "        if self.keep_streams:\n"
    "            return hidden_states, streams\n"
    "        if len(aux_hidden_states) == 0:\n",
)
# A model between the causal LM and the decoder that keeps the second element for itself.
STRIPPING_MODEL = """
class DecStreamsModel(DecModel):
    def forward(self, input_ids):
        output = super().forward(input_ids)
        hidden_states, self.streams = output
        return hidden_states
"""
STRIPPING_WRAPPER = WRAPPER.replace(
    "self.model = DecModel(config)", "self.model = DecStreamsModel(config)"
)
# A decoder that hands the aux list to its layers, which take it in **kwargs.
HANDING_DECODER = DECODER.replace(
    """            if i in self.layers_to_capture:
                aux_hidden_states.append(hidden_states)
            hidden_states = layer(hidden_states)
""",
    """            hidden_states = layer(
                hidden_states,
                captured=aux_hidden_states if i in self.layers_to_capture else None,
            )
""",
)
SWALLOWING_LAYER = """
class DecLayer(nn.Module):
    def forward(self, hidden_states, **kwargs):
        return self.mlp(hidden_states, kwargs.get("residual"))
"""
FILLING_LAYER = """
class DecLayer(nn.Module):
    def forward(self, hidden_states, captured=None):
        if captured is not None:
            captured.append(hidden_states)
        return self.mlp(hidden_states)
"""
CASES[ContractRule.AUX_SLOT_OTHER_STREAM] = (
    OTHER_STREAM_DECODER + WRAPPER,
    DECODER + WRAPPER,
    "DecForCausalLM",
)
SHAPES = {
    # name: (broken source, fixed source, rule, message)
    "other_stream": (
        OTHER_STREAM_DECODER + WRAPPER,
        DECODER + WRAPPER,
        ContractRule.AUX_SLOT_OTHER_STREAM,
        "the decoder returns streams where the aux hidden states go",
    ),
    "stripped": (
        DECODER + STRIPPING_MODEL + STRIPPING_WRAPPER,
        DECODER
        + STRIPPING_MODEL.replace("return hidden_states", "return output")
        + STRIPPING_WRAPPER,
        ContractRule.AUX_NEVER_RETURNED,
        "a forward on the way strips (hidden_states, aux_hidden_states) to its first element",
    ),
    "kwargs_swallow": (
        SWALLOWING_LAYER + HANDING_DECODER + WRAPPER,
        FILLING_LAYER + HANDING_DECODER + WRAPPER,
        ContractRule.AUX_NEVER_RETURNED,
        "the decoder hands its aux list to layers that never fill it",
    ),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_each_shape_that_loses_the_aux_states_on_the_way_is_a_break(shape: str) -> None:
    broken, fixed, rule, message = SHAPES[shape]
    assert broken != fixed
    result = contract_of(broken, "DecForCausalLM")
    assert result.status == "broken"
    assert [(f.rule, f.message) for f in result.findings] == [(rule.id, message)]
    quiet = contract_of(fixed, "DecForCausalLM")
    assert (quiet.status, quiet.findings, quiet.unknown) == ("ok", (), "")


def test_a_swallowed_aux_list_names_the_hand_over_and_each_layer_that_drops_it() -> None:
    broken, _fixed, _rule, _message = SHAPES["kwargs_swallow"]
    (finding,) = contract_of(broken, "DecForCausalLM").findings
    assert [s.what for s in finding.sites] == [
        "DecModel.forward hands aux_hidden_states to layer as captured",
        "DecLayer.forward takes captured in **kwargs and never reads it",
        "DecModel.forward returns aux_hidden_states",
    ]


# An EAGLE draft that skips its base's __init__ but runs the base's forward, which reads
# the capture flag only that __init__ creates.
SKIPPING_DRAFT = """
class DecForCausalLMEagle(DecForCausalLM):
    def __init__(self, config):
        nn.Module.__init__(self)
        self.model = DecModel(config)
        self.logits_processor = LogitsProcessor(config)
"""


def test_a_draft_whose_init_skips_its_base_reads_a_flag_nothing_created() -> None:
    facts = extract_facts(
        PATH, "id", dedent(DECODER + WRAPPER + SKIPPING_DRAFT).encode(), full=False
    )
    result = check_draft_contract(
        VersionIndex({PATH: facts}), "sglang.srt.models.dec:DecForCausalLMEagle"
    )
    (finding,) = result.findings
    assert (result.status, finding.rule) == ("broken", "capture_attribute_missing")
    assert finding.render() == (
        "capture attribute never created: DecForCausalLM.forward reads "
        "self.capture_aux_hidden_states (dec.py:29); DecForCausalLMEagle.__init__ calls "
        "nn.Module.__init__, skipping DecForCausalLM.__init__ (dec.py:42)"
    )
    created = SKIPPING_DRAFT.replace(
        "        nn.Module.__init__(self)\n",
        "        nn.Module.__init__(self)\n        self.capture_aux_hidden_states = False\n",
    )
    facts = extract_facts(PATH, "id", dedent(DECODER + WRAPPER + created).encode(), full=False)
    quiet = check_draft_contract(
        VersionIndex({PATH: facts}), "sglang.srt.models.dec:DecForCausalLMEagle"
    )
    assert (quiet.status, quiet.findings) == ("ok", ())


def _hook(name: str) -> CaptureHook:
    return next(h for h in load_rules().capture_hooks if h.hook == name)


# DFLASH asks for hidden states through its own hook, which must drive the same state.
DFLASH_HOOK = """
    def set_dflash_layers_to_capture(self, layer_ids):
        self.capture_aux_hidden_states = True
        self.model.set_dflash_layers_to_capture([i + 1 for i in layer_ids])
"""
DECODER_DFLASH_HOOK = """
    def set_dflash_layers_to_capture(self, layer_ids):
        self.layers_to_capture = layer_ids
"""


def test_every_capture_hook_is_data_and_eagle3s_is_the_default() -> None:
    hooks = [h.hook for h in load_rules().capture_hooks]
    assert hooks[0] == "set_eagle3_layers_to_capture"
    assert {"set_dflash_layers_to_capture", "set_dspark_layers_to_capture"} <= set(hooks)


def test_a_dflash_hook_handing_the_ids_to_a_decoder_without_it_captures_nothing() -> None:
    source = DECODER + WRAPPER + DFLASH_HOOK
    facts = extract_facts(PATH, "id", dedent(source).encode(), full=False)
    index = VersionIndex({PATH: facts})
    cls = "sglang.srt.models.dec:DecForCausalLM"
    result = check_contract(index, cls, _hook("set_dflash_layers_to_capture"))
    assert result.status == "broken"
    assert [(f.rule, f.message) for f in result.findings] == [
        (
            "capture_state_mismatch",
            "the decoder reads layers_to_capture on model, which the setter never sets",
        ),
        (
            "capture_state_mismatch",
            "the hook hands the layer ids to an inner model without set_dflash_layers_to_capture",
        ),
    ]
    assert result.findings[1].sites[0].what == (
        "DecForCausalLM.set_dflash_layers_to_capture calls "
        "self.model.set_dflash_layers_to_capture, which DecModel does not define "
        "(AttributeError)"
    )
    # EAGLE3's hook on the same class is untouched.
    assert check_contract(index, cls).status == "ok"
    fixed = DECODER + DECODER_DFLASH_HOOK + WRAPPER + DFLASH_HOOK
    facts = extract_facts(PATH, "id", dedent(fixed).encode(), full=False)
    quiet = check_contract(VersionIndex({PATH: facts}), cls, _hook("set_dflash_layers_to_capture"))
    assert (quiet.status, quiet.findings, quiet.unknown) == ("ok", (), "")


# A subclass that inherits the setter and the forward but builds another decoder, one
# that reads no capture state and returns a bare tensor.
REPLACING_WRAPPER = """
class PlainDecModel(nn.Module):
    def forward(self, input_ids):
        return self.embed(input_ids)


class DecLiteForCausalLM(DecForCausalLM):
    def __init__(self, config):
        super().__init__(config)
        self.model = PlainDecModel(config)
"""


def test_the_decoder_a_subclass_builds_last_is_the_one_checked() -> None:
    result = contract_of(DECODER + WRAPPER + REPLACING_WRAPPER, "DecLiteForCausalLM")
    assert [(f.rule, [s.what for s in f.sites]) for f in result.findings] == [
        (
            "aux_never_returned",
            [
                "DecForCausalLM.forward unpacks hidden_states, aux_hidden_states",
                "PlainDecModel.forward returns no pair",
            ],
        )
    ]
    # Built before the base's __init__ runs, the base's decoder replaces it.
    before = REPLACING_WRAPPER.replace(
        "        super().__init__(config)\n        self.model = PlainDecModel(config)\n",
        "        self.model = PlainDecModel(config)\n        super().__init__(config)\n",
    )
    assert before != REPLACING_WRAPPER
    quiet = contract_of(DECODER + WRAPPER + before, "DecLiteForCausalLM")
    assert (quiet.status, quiet.findings, quiet.unknown) == ("ok", (), "")
    # The base keeps its own decoder.
    assert contract_of(DECODER + WRAPPER + REPLACING_WRAPPER, "DecForCausalLM").status == "ok"


def test_a_pair_returned_after_the_aux_one_is_the_path_without_capture() -> None:
    # The DeepseekV4 shape: `if capturing: return (h, extra), aux` then `return h, extra`.
    after = DECODER.replace(
        "        if len(aux_hidden_states) == 0:\n            return hidden_states\n"
        "        return hidden_states, aux_hidden_states\n",
        "        streams = self.mix(hidden_states)\n"
        "        if len(aux_hidden_states) > 0:\n"
        "            return (hidden_states, streams), aux_hidden_states\n"
        "        return hidden_states, streams\n",
    )
    assert after != DECODER
    result = contract_of(after + WRAPPER, "DecForCausalLM")
    assert ContractRule.AUX_SLOT_OTHER_STREAM.id not in {f.rule for f in result.findings}


def test_an_inner_model_built_from_a_class_attribute_is_followed() -> None:
    # The qwen3_5_text.py shape: `body_cls = qwen3_5.Qwen3_5ForCausalLM` in the class body.
    source = DECODER + WRAPPER.replace(
        "class DecForCausalLM(nn.Module):\n",
        "class DecForCausalLM(nn.Module):\n    body_cls = DecModel\n\n",
    ).replace("self.model = DecModel(config)", "self.model = self.body_cls(config)")
    assert "self.body_cls(config)" in source
    result = contract_of(source, "DecForCausalLM")
    assert (result.status, result.findings, result.unknown) == ("ok", (), "")


def test_a_target_whose_capture_flag_only_the_eagle3_setter_creates_breaks_under_eagle() -> None:
    from sgl_trees import build

    # The wrapper's __init__ no longer creates capture_aux_hidden_states: under EAGLE3 the
    # runner calls the setter, which does; under EAGLE nothing does, and the forward reads it.
    uncreated = CAPTURE_LM.replace("        self.capture_aux_hidden_states = False\n", "")
    assert uncreated != CAPTURE_LM
    checks = {
        (c.algorithm, c.role): c
        for c in build({"models/dec.py": uncreated}).compat.checks
        if c.model == "DecForCausalLM"
    }
    eagle = checks[("EAGLE", "target")]
    (finding,) = eagle.contract
    assert (eagle.status, finding.rule, eagle.contract_hook) == (
        "broken",
        "capture_attribute_missing",
        "target forward",
    )
    assert "DecForCausalLM.forward reads self.capture_aux_hidden_states" in finding.render()
    assert checks[("EAGLE3", "target")].status == "ok"
    created = {
        (c.algorithm, c.role): c.status
        for c in build({"models/dec.py": CAPTURE_LM}).compat.checks
        if c.model == "DecForCausalLM"
    }
    assert created[("EAGLE", "target")] == "ok"
