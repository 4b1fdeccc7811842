"""Conditions evaluated in three values on a checkpoint's config (analysis.config_values)."""

from __future__ import annotations

from tracker.analysis.config_values import (
    UNKNOWN,
    CheckpointConfig,
    ConfigFact,
    Evaluator,
    Val,
    chain,
    known,
)
from tracker.extract.facts import Branch, Cond

KIMI = CheckpointConfig(
    "target",
    "kimi/config.json",
    {
        "architectures": ["KimiK25ForConditionalGeneration"],
        "tie_word_embeddings": False,
        "text_config": {"model_type": "kimi_k2", "tie_word_embeddings": True, "hidden_size": 7168},
    },
)


class Flags(Evaluator):
    """`on` is true, `off` false, anything else unknown; counts what it was asked."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def atom(self, cond: Cond) -> Val | None:
        if cond.op != "ref":
            return None
        self.asked.append(cond.text)
        return {"on": known(True), "off": known(False)}.get(cond.text, UNKNOWN)


def ref(name: str) -> Cond:
    return Cond("ref", name)


def test_a_key_the_top_level_lacks_is_read_from_text_config() -> None:
    assert KIMI.lookup(("hidden_size",)) == (True, 7168)
    assert KIMI.lookup(("vocab_size",)) == (False, None)


def test_the_text_config_is_read_first_for_hf_text_config_and_last_otherwise() -> None:
    assert KIMI.lookup(("tie_word_embeddings",)) == (True, False)
    assert KIMI.lookup(("tie_word_embeddings",), text_first=True) == (True, True)


def test_a_chain_keeps_its_subscripts() -> None:
    assert chain("self.hf_config.architectures[0]") == ("self", "hf_config", "architectures", 0)
    assert chain('eagle_config[ "eagle_aux_hidden_state_layer_ids" ]') == (
        "eagle_config",
        "eagle_aux_hidden_state_layer_ids",
    )
    assert chain("f(x).y") is None


def test_and_is_false_when_one_side_is_false_whatever_the_other() -> None:
    e = Flags()
    assert e.test(Cond("and", "", (ref("maybe"), ref("off")))).false
    assert not e.test(Cond("and", "", (ref("maybe"), ref("on")))).known
    assert e.test(Cond("or", "", (ref("maybe"), ref("on")))).true


def test_and_stops_at_a_false_operand_as_python_does() -> None:
    e = Flags()
    e.test(Cond("and", "", (ref("off"), ref("never_asked"))))
    assert e.asked == ["off"]


def test_comparisons_of_known_values_are_worked_out() -> None:
    e = Flags()
    arch = Cond("str", "DeepseekV3ForCausalLM")
    names = Cond("seq", "", (Cond("str", "DeepseekV3ForCausalLM"), Cond("str", "X")))
    assert e.test(Cond("cmp", "in", (arch, names))).true
    assert e.test(Cond("cmp", "is", (Cond("other", "None"), Cond("other", "None")))).true
    assert e.test(Cond("cmp", "is not", (Cond("other", "0"), Cond("other", "None")))).true
    assert not e.test(Cond("cmp", "==", (ref("maybe"), Cond("other", "1")))).known


def test_a_branch_that_raises_the_other_way_is_not_a_condition() -> None:
    e = Flags()
    assert e.branches([Branch(ref("off"), True, raises=True), Branch(ref("on"), True)]).true


def test_a_config_fact_says_what_the_file_sets_or_lacks() -> None:
    assert ConfigFact("draft", "eagle_config.use_aux_hidden_state", True, False).text() == (
        "draft config sets eagle_config.use_aux_hidden_state = false"
    )
    assert ConfigFact("draft", "draft_vocab_size", False, default="None").text() == (
        "draft config has no draft_vocab_size (the code's default None applies)"
    )
