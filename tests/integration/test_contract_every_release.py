"""EAGLE3's aux-hidden-state contract on every release with speculative decoding: the
findings are exactly the hand-reviewed ones (each read in the release's source), the
Qwen3.5 wrappers break when their members arrive and are fixed when the capture is, and
classes whose setter and decoder agree never get a finding."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracker.analysis.compat import Compat
from tracker.compare.snapshot import shipped_dir
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
