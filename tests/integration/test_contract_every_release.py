"""EAGLE3's aux-hidden-state contract on every release with speculative decoding: the
findings are exactly the hand-reviewed ones (each read in the release's source), the
Qwen3.5 wrappers break when their members arrive and are fixed when the capture is, and
classes whose setter and decoder agree never get a finding."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tracker.analysis.compat import Compat
from tracker.compare.snapshot import from_json, shipped_dir, to_json
from tracker.compare.workspace import Workspace
from tracker.sources import open_source
from tracker.sources.versions import sort_versions

pytestmark = pytest.mark.realdata

RELEASES = sort_versions(p.stem for p in shipped_dir().glob("v*.json"))


def _between(first: str, last: str) -> frozenset[str]:
    return frozenset(RELEASES[RELEASES.index(first) : RELEASES.index(last) + 1])


# Reviewed by hand: (class, rule) -> the releases it holds in. Evidence in each comment.
REVIEWED = {
    # qwen2_5_vl.py v0.5.5.post3:574-583 unpacks aux, then calls logits_processor
    # without it; v0.5.6:645-651 passes it again.
    ("Qwen2_5_VLForConditionalGeneration", "aux_not_to_logits"): _between(
        "v0.5.5.post3", "v0.5.5.post3"
    ),
    # Setter (qwen3_vl.py, inherited) writes self.model.layers_to_capture; the Qwen3.5
    # decoder reads only getattr(layer, "_is_layer_to_capture") (qwen3_5.py v0.5.11:1114).
    # v0.5.22 qwen3_vl.py:1793 delegates to Qwen3_5ForCausalLM.set_eagle3_layers_to_capture.
    ("Qwen3_5ForConditionalGeneration", "capture_state_mismatch"): _between("v0.5.11", "v0.5.21"),
    ("Qwen3_5MoeForConditionalGeneration", "capture_state_mismatch"): _between(
        "v0.5.11", "v0.5.21"
    ),
    ("InternS2PreviewForConditionalGeneration", "capture_state_mismatch"): _between(
        "v0.5.12", "v0.5.21"
    ),
    # interns2_mobius.py v0.5.18:762 reads only the per-layer flag; setter as above.
    ("InternS2MobiusForConditionalGeneration", "capture_state_mismatch"): _between(
        "v0.5.18", "v0.5.21"
    ),
    # minimax_m3.py v0.5.16:1398 reads the flag, setter :1498 writes only the id list;
    # v0.5.18:1631-1635 sets the flags ("forward checks the per-layer flag").
    ("MiniMaxM3SparseForCausalLM", "capture_state_mismatch"): _between("v0.5.16", "v0.5.17"),
    # qwen4_exp.py v0.5.23: the decoder returns (hidden_states, hc_hidden_states) on every
    # non-idle batch (:2171); its layers take captured_last_layer_outputs in **kwargs and
    # never read it (:1775, :1976); Qwen4ExpVLModel.forward returns hidden_states alone
    # (:2216). The inherited Qwen3VL setter writes layer ids its decoder never reads until
    # v0.5.22, as for the Qwen3.5 wrappers above.
    ("Qwen4ExpForConditionalGeneration", "aux_never_returned"): _between("v0.5.20", "v0.5.23"),
    ("Qwen4ExpForConditionalGeneration", "aux_slot_other_stream"): _between("v0.5.20", "v0.5.23"),
    ("Qwen4ExpForConditionalGeneration", "capture_state_mismatch"): _between("v0.5.20", "v0.5.21"),
    # DFLASH/DSPARK: qwen3_vl.py v0.5.23:1688 hands the ids to self.model's
    # set_dflash_layers_to_capture, which Qwen3LLMModel lacks; its forward reads
    # self.layers_to_capture (:1236). Cosmos3 inherits both.
    ("Qwen3VLForConditionalGeneration", "capture_state_mismatch"): _between("v0.5.11", "v0.5.23"),
    ("Cosmos3ForConditionalGeneration", "capture_state_mismatch"): _between("v0.5.20", "v0.5.23"),
    # Drafts: qwen2_eagle.py v0.5.9:121 calls nn.Module.__init__(self), skipping
    # Qwen2ForCausalLM.__init__ (qwen2.py:464), which creates the flag the inherited
    # forward reads (qwen2.py:490); v0.5.16:138 creates it. glm4v_moe.py v0.5.2:40 skips
    # Glm4vForConditionalGeneration.__init__ (glm4v.py:501) likewise (a STANDALONE draft).
    ("Qwen2ForCausalLMEagle", "capture_attribute_missing"): _between("v0.5.2", "v0.5.15.post1"),
    # The same class as an EAGLE or STANDALONE target: no capture hook runs for them, and
    # its forward (qwen2_5_vl.py v0.5.2:595) reads the flag unguarded.
    ("Glm4vMoeForConditionalGeneration", "capture_attribute_missing"): _between("v0.5.2", "v0.5.2"),
    # Not here: gemma4_mtp.py's assistants call the logits processor without aux states,
    # but they are FROZEN_KV_MTP drafts (roles.toml), never EAGLE3 targets.
}
AGREEING = (
    "LlamaForCausalLM",
    "Qwen3ForCausalLM",
    "DeepseekV3ForCausalLM",
    "KimiK25ForConditionalGeneration",
    "Llama4ForConditionalGeneration",
)


_ANALYSED: dict[str, Compat] = {}


@pytest.fixture
def compats(use_real_cache: Path) -> dict[str, Compat]:
    """Every release's shipped snapshot, read once per session. Shipped snapshots hold the
    contract findings and are rebuilt from the releases and compared in
    test_every_release.py, so reading them here checks the same findings in seconds."""
    if not _ANALYSED:
        ws = Workspace(open_source("pypi", None, Path.cwd()))
        _ANALYSED.update({v: ws.snapshot_of(ws.source, v).compat for v in RELEASES})
    return _ANALYSED


def test_every_contract_finding_of_every_release_is_a_reviewed_one(
    compats: dict[str, Compat],
) -> None:
    found: dict[tuple[str, str], set[str]] = {}
    for version, compat in compats.items():
        for check in compat.checks:
            for f in check.contract:
                found.setdefault((check.model, f.rule), set()).add(version)
    assert found == {k: set(v) for k, v in REVIEWED.items()}


def test_a_target_no_capture_hook_prepares_breaks_on_the_flag_it_reads(
    compats: dict[str, Compat],
) -> None:
    rows = {
        (c.algorithm, c.role): c
        for c in compats["v0.5.2"].checks
        if c.model == "Glm4vMoeForConditionalGeneration"
    }
    for algorithm in ("EAGLE", "STANDALONE"):
        row = rows[(algorithm, "target")]
        assert (row.status, row.missing, row.contract_hook) == ("broken", (), "target forward")
        assert [f.rule for f in row.contract] == ["capture_attribute_missing"]
    assert rows[("EAGLE3", "target")].contract == ()  # its setter creates the flag


def test_the_qwen3_5_wrappers_are_broken_until_the_capture_fix_and_ok_after(
    compats: dict[str, Compat],
) -> None:
    for model in ("Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration"):
        statuses = {
            v: c.check_for(model, "EAGLE3")
            for v in ("v0.5.21", "v0.5.22", "v0.5.23")
            for c in [compats[v]]
        }
        assert statuses["v0.5.21"] is not None and statuses["v0.5.21"].status == "broken"
        assert statuses["v0.5.21"].missing == ()
        assert [s.status for v, s in statuses.items() if v != "v0.5.21" and s] == ["ok", "ok"]


def test_classes_whose_setter_and_decoder_agree_never_get_a_finding(
    compats: dict[str, Compat],
) -> None:
    flagged = {
        (c.model, v)
        for v, compat in compats.items()
        for c in compat.checks
        if c.contract and c.model in AGREEING
    }
    assert flagged == set()
    # They were checked: the contract ran (ok, no reason to doubt) where they are ok.
    kimi = compats["v0.5.10"].check_for("KimiK25ForConditionalGeneration", "EAGLE3")
    assert kimi is not None and kimi.status == "ok" and kimi.contract_unknown == ""


# Analysed from the release's files (not its shipped snapshot), once for the session, by
# the tests of findings newer than the shipped snapshots.
_FROM_SOURCE: dict[str, Compat] = {}


@pytest.fixture
def analysed(use_real_cache: Path) -> Callable[[str], Compat]:
    def of(version: str) -> Compat:
        if version not in _FROM_SOURCE:
            ws = Workspace(open_source("pypi", None, Path.cwd()), use_shipped=False)
            # Through the snapshot's JSON form, so what it stores is what is checked.
            snap = from_json(to_json(ws.snapshot_of(ws.source, version)))
            _FROM_SOURCE[version] = snap.compat
        return _FROM_SOURCE[version]

    return of


def _findings(compat: Compat, model: str, algorithm: str = "EAGLE3") -> dict[str, list[str]]:
    check = compat.check_for(model, algorithm)
    assert check is not None
    return {f.message: [s.render() for s in f.sites] for f in check.contract}


def test_qwen4_exp_loses_its_aux_states_three_ways_on_the_way_to_the_drafter(
    analysed: Callable[[str], Compat],
) -> None:
    # qwen4_exp.py v0.5.23: Qwen4ExpModel.forward returns (hidden_states, hc_hidden_states)
    # on every non-idle batch (:2171) before its aux return (:2175); its decoder layers
    # take captured_last_layer_outputs in **kwargs and never read it (:1775, :1976);
    # Qwen4ExpVLModel.forward unpacks the pair and returns hidden_states alone (:2216).
    # Before, the forward path stopped at `output = super().forward(...)`: "ok".
    found = _findings(analysed("v0.5.23"), "Qwen4ExpForConditionalGeneration")
    assert found == {
        "the decoder returns hc_hidden_states where the aux hidden states go": [
            "Qwen4ExpModel.forward returns hc_hidden_states as the aux (qwen4_exp.py:2171)",
            "Qwen4ExpModel.forward returns aux_hidden_states (qwen4_exp.py:2175)",
        ],
        "the decoder hands its aux list to layers that never fill it": [
            "Qwen4ExpModel.forward hands aux_hidden_states to layer as "
            "captured_last_layer_outputs (qwen4_exp.py:2128)",
            "Qwen4ExpAttentionDecoderLayer.forward takes captured_last_layer_outputs in "
            "**kwargs and never reads it (qwen4_exp.py:1976)",
            "Qwen4ExpLinearDecoderLayer.forward takes captured_last_layer_outputs in "
            "**kwargs and never reads it (qwen4_exp.py:1775)",
            "Qwen4ExpModel.forward returns aux_hidden_states (qwen4_exp.py:2175)",
        ],
        "a forward on the way strips (hidden_states, aux_hidden_states) to its first element": [
            "Qwen4ExpVLModel.forward unpacks hidden_states, self.last_hc_hidden_states and "
            "returns hidden_states alone (qwen4_exp.py:2216)",
            "Qwen3VLForConditionalGeneration.forward unpacks hidden_states, "
            "aux_hidden_states (qwen3_vl.py:1664)",
        ],
    }
    check = analysed("v0.5.23").check_for("Qwen4ExpForConditionalGeneration", "EAGLE3")
    assert check is not None and check.status == "broken"


def test_a_target_whose_contract_is_not_followed_is_unknown_with_the_reason(
    analysed: Callable[[str], Compat],
) -> None:
    # mindspore.py hands the layer ids to self.model, built by a backend outside SGLang.
    check = analysed("v0.5.23").check_for("MindSporeForCausalLM", "EAGLE3")
    assert check is not None and check.status == "unknown" and check.missing == ()
    assert "the class of self.model is not known" in check.contract_unknown


def test_no_class_whose_contract_the_releases_keep_is_reported_broken_from_its_source(
    analysed: Callable[[str], Compat],
) -> None:
    compat = analysed("v0.5.23")
    flagged = {c.model for c in compat.checks if c.contract and c.algorithm == "EAGLE3"}
    assert flagged == {"Qwen4ExpForConditionalGeneration"}
    for model in (*AGREEING, "Qwen3VLForConditionalGeneration", "Glm5NextForConditionalGeneration"):
        check = compat.check_for(model, "EAGLE3")
        assert check is not None and check.status == "ok", check


def test_qwen2_eagle_draft_skips_its_base_init_and_its_forward_reads_the_flag_at_v0_5_9(
    analysed: Callable[[str], Compat],
) -> None:
    # qwen2_eagle.py v0.5.9:121 calls nn.Module.__init__(self); the inherited
    # Qwen2ForCausalLM.forward reads self.capture_aux_hidden_states (qwen2.py:490), which
    # only Qwen2ForCausalLM.__init__ creates (qwen2.py:464). v0.5.16 sets it (:138).
    check = analysed("v0.5.9").check_for("Qwen2ForCausalLMEagle", "EAGLE", "draft")
    assert check is not None and check.status == "broken" and check.missing == ()
    assert [(f.rule, [s.render() for s in f.sites]) for f in check.contract] == [
        (
            "capture_attribute_missing",
            [
                "Qwen2ForCausalLM.forward reads self.capture_aux_hidden_states (qwen2.py:490)",
                "Qwen2ForCausalLMEagle.__init__ calls nn.Module.__init__, skipping "
                "Qwen2ForCausalLM.__init__ (qwen2_eagle.py:121)",
            ],
        )
    ]
    drafts = {c.model for c in analysed("v0.5.9").checks if c.role == "draft" and c.contract}
    assert drafts == {"Qwen2ForCausalLMEagle"}


def test_qwen3_vl_hands_dflash_layer_ids_to_a_decoder_without_the_dflash_hook(
    analysed: Callable[[str], Compat],
) -> None:
    # qwen3_vl.py v0.5.23:1688 calls self.model.set_dflash_layers_to_capture, but
    # self.model is a Qwen3LLMModel (:1357), which has no such method (nor Qwen3Model,
    # Qwen2Model); its forward reads self.layers_to_capture (:1236), which nothing sets
    # for DFLASH. EAGLE3's hook checks hasattr first and sets it directly (:1792-1795).
    compat = analysed("v0.5.23")
    for algorithm in ("DFLASH", "DSPARK"):
        found = _findings(compat, "Qwen3VLForConditionalGeneration", algorithm)
        assert found == {
            "the decoder reads layers_to_capture on model, which the setter never sets": [
                "set_dflash_layers_to_capture writes self.capture_aux_hidden_states "
                "(qwen3_vl.py:1687)",
                "Qwen3LLMModel.forward reads self.layers_to_capture (qwen3_vl.py:1236)",
                "Qwen3VLForConditionalGeneration.forward unpacks hidden_states, "
                "aux_hidden_states (qwen3_vl.py:1664)",
            ],
            "the hook hands the layer ids to an inner model without set_dflash_layers_to_capture": [
                "Qwen3VLForConditionalGeneration.set_dflash_layers_to_capture calls "
                "self.model.set_dflash_layers_to_capture, which Qwen3LLMModel does not "
                "define (AttributeError) (qwen3_vl.py:1688)",
                "Qwen3VLForConditionalGeneration.forward unpacks hidden_states, "
                "aux_hidden_states (qwen3_vl.py:1664)",
            ],
        }, algorithm
    eagle3 = compat.check_for("Qwen3VLForConditionalGeneration", "EAGLE3")
    assert eagle3 is not None and eagle3.status == "ok" and eagle3.contract == ()
