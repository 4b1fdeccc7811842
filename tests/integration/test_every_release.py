"""Every release from the first with a speculative worker (v0.4.1.post4) on: the analysis
finds the EAGLE worker and the target members the EAGLE algorithms have always needed, and
the shipped snapshots are current.

Every release's answer is read from its shipped snapshot, which is that analysis: each
snapshot names the builder (tool, queries, rules, analysis code) that made it and must be
the current one (`test_every_shipped_snapshot_is_current...`; tools/refresh_snapshots.py
rebuilds them all from the release archives), and a few are rebuilt from their archives
here and compared byte for byte. So the suite downloads only the archives it analyses,
not all 85 releases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.version import Version

from tracker.analysis.compat import ModelCheck
from tracker.analysis.externals import load_inventory
from tracker.analysis.roles import load_rules
from tracker.compare.snapshot import (
    Snapshot,
    current_builder,
    from_json,
    load_file,
    shipped_dir,
    to_json,
)
from tracker.compare.workspace import Workspace
from tracker.sources import open_source
from tracker.sources.versions import parse_version, sort_versions

pytestmark = pytest.mark.realdata

SHIPPED = sort_versions(p.stem for p in shipped_dir().glob("v*.json"))
# Read from each release's `spec_info.py`: the enum gains EAGLE3 in v0.4.4.post2.
FIRST_EAGLE3 = parse_version("v0.4.4.post2")


def test_snapshots_ship_for_every_release_from_v0_4_1_post4_to_v0_5_23() -> None:
    assert SHIPPED[0] == "v0.4.1.post4" and SHIPPED[-1] == "v0.5.23"
    assert {
        "v0.4.5",
        "v0.4.9.post6",
        "v0.4.10",
        "v0.5.8",
        "v0.5.8.post1",
        "v0.5.9",
        "v0.5.10",
    } <= set(SHIPPED)


@pytest.mark.parametrize("version", SHIPPED)
def test_every_shipped_snapshot_is_current_and_holds_no_source_text(version: str) -> None:
    snap = load_file(shipped_dir() / f"{version}.json")
    assert snap is not None and snap.version == version
    assert snap.builder == current_builder(), "stale: run tools/refresh_snapshots.py"
    text = (shipped_dir() / f"{version}.json").read_text()
    assert "def " not in text and "import " not in text  # facts, never code


def shipped(version: str) -> Snapshot:
    """The release's shipped snapshot: its analysis by the current builder."""
    snap = load_file(shipped_dir() / f"{version}.json")
    assert snap is not None and snap.builder == current_builder(), version
    return snap


@pytest.mark.parametrize("version", SHIPPED)
def test_every_release_s_analysis_finds_the_eagle_worker_and_its_target_members(
    version: str,
) -> None:
    itf = shipped(version).interface
    algorithms = ["EAGLE", "EAGLE3"] if parse_version(version) >= FIRST_EAGLE3 else ["EAGLE"]
    assert set(algorithms) <= set(itf.algorithms)
    assert ("EAGLE3" in itf.algorithms) == ("EAGLE3" in algorithms)
    for algorithm in algorithms:
        assert any("Eagle" in w or "EAGLE" in w for w in itf.workers[algorithm])
        target = {
            r.member for r in itf.for_algorithm(algorithm, "target") if r.status == "required"
        }
        assert "get_embed_and_head" in target
        assert ("set_eagle3_layers_to_capture" in target) == (algorithm == "EAGLE3")
    # The hidden states reach the drafter through the forward output, never this method.
    assert all(r.member != "get_hidden_states_before_lm_head" for r in itf.requirements)
    assert any(f.name == "hidden_states" for f in itf.output_fields)


@pytest.mark.parametrize("version", ["v0.4.1.post4", "v0.4.10", "v0.5.9", "v0.5.23"])
def test_a_regenerated_snapshot_equals_the_shipped_one(
    version: str, use_real_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A separate snapshot cache, so the snapshot is rebuilt from the release itself.
    ws = Workspace(open_source("pypi", None, Path.cwd()), use_shipped=False, use_cache=False)
    rebuilt = ws.snapshot_of(ws.source, version)
    shipped = (shipped_dir() / f"{version}.json").read_text()
    assert json.loads(to_json(rebuilt)) == json.loads(shipped)
    assert to_json(rebuilt) == shipped  # byte-identical: ordering is fixed
    # And read back, every check is the analysis's own, explanation included (a member
    # another stands in for under one algorithm only stays missing under the others).
    assert from_json(shipped).compat.checks == rebuilt.compat.checks


@pytest.mark.parametrize("version", SHIPPED)
def test_every_shipped_verdict_reads_back_with_its_reason(version: str) -> None:
    for check in shipped(version).compat.checks:
        where = (check.model, check.algorithm, check.role, check.status)
        if check.status == "broken":
            assert check.missing or check.contract, where
        elif check.status == "ok":
            assert not check.missing and not check.unknown, where
        else:
            assert check.unknown or check.contract_unknown or check.problem, where


def test_a_snapshot_does_not_depend_on_the_process_hash_seed(
    use_real_cache: Path, tmp_path: Path
) -> None:
    # v0.5.22 has calls with several equally short paths: the one recorded must not
    # depend on set iteration order, which changes with PYTHONHASHSEED.
    import os
    import subprocess
    import sys

    outputs = []
    for seed in ("1", "2"):
        target = tmp_path / f"snap{seed}.json"
        env = {**os.environ, "PYTHONHASHSEED": seed, "TRACKER_CACHE_DIR": str(use_real_cache)}
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "tracker",
                "snapshot",
                "v0.5.22",
                "--no-shipped",
                "-q",
                "-o",
                str(target),
            ],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        outputs.append(target.read_bytes())
    assert outputs[0] == outputs[1]


# ------------------------------------------- EAGLE3 target rows: verdicts, not "unknown"


# Releases whose EAGLE3 target rows this change is about.
def release(tag: str) -> Version:
    found = parse_version(tag)
    assert found is not None, tag
    return found


SINCE_V0_4_10 = [v for v in SHIPPED if release(v) >= release("v0.4.10")]

# The EAGLE3 target rows that said "unknown" before external bases were read from the
# packages' source and `__getattr__` forwards were followed (the shipped snapshots of the
# tool as it was, `tracker check VERSION -a EAGLE3 --format json`): class -> the releases
# (inclusive ranges) where it was unknown, and the reason it gave then.
UNKNOWN_BEFORE: dict[str, tuple[list[tuple[str, str]], str]] = {
    "DiffusionGemmaForBlockDiffusion": ([("v0.5.21", "v0.5.23")], "transformers"),
    "Gemma3ForCausalLM": ([("v0.4.10", "v0.5.11"), ("v0.5.21", "v0.5.23")], "transformers"),
    "Gemma3ForConditionalGeneration": (
        [("v0.4.10", "v0.5.11"), ("v0.5.21", "v0.5.23")],
        "transformers",
    ),
    "Gemma3nForCausalLM": ([("v0.4.10", "v0.5.23")], "transformers"),
    "Gemma3nForConditionalGeneration": ([("v0.4.10", "v0.5.23")], "transformers"),
    "Gemma4AssistantForCausalLM": ([("v0.5.21", "v0.5.23")], "transformers"),
    "Gemma4ForCausalLM": ([("v0.5.11", "v0.5.11"), ("v0.5.21", "v0.5.23")], "transformers"),
    "Gemma4ForConditionalGeneration": (
        [("v0.5.11", "v0.5.11"), ("v0.5.21", "v0.5.23")],
        "transformers",
    ),
    "Gemma4UnifiedAssistantForCausalLM": ([("v0.5.21", "v0.5.23")], "transformers"),
    "Gemma4UnifiedForConditionalGeneration": ([("v0.5.21", "v0.5.23")], "transformers"),
    "MiniCPMV": ([("v0.4.10", "v0.5.23")], "__getattr__"),
    "MiniCPMV4_6ForConditionalGeneration": ([("v0.5.12", "v0.5.23")], "__getattr__"),
    "MiniCPMV4_7ForConditionalGeneration": ([("v0.5.23", "v0.5.23")], "__getattr__"),
    "Mistral3ForConditionalGeneration": ([("v0.4.10", "v0.5.22")], "__getattr__"),
    "MultiModalityCausalLM": ([("v0.4.10", "v0.5.23")], "transformers"),
    "NemotronH_Nano_Omni_Reasoning_V3": ([("v0.5.11", "v0.5.23")], "evs_module.EVS"),
    "NemotronH_Nano_VL_V2": ([("v0.5.8", "v0.5.23")], "evs_module.EVS"),
    "NemotronH_Omni_Reasoning_V3": ([("v0.5.20", "v0.5.23")], "evs_module.EVS"),
    "Qwen3OmniMoeForConditionalGeneration": ([("v0.5.4", "v0.5.23")], "transformers"),
}
# What each reason said then: "base not analysed: transformers.PreTrainedModel", "MiniCPMV
# defines __getattr__", "base not analysed: sglang.srt.multimodal.evs.evs_module.EVS".
# A class the forwarded-to attribute holds in every release (read in models/*.py).
FORWARDED_TO = {
    "MiniCPMV": "MiniCPMV2_6",
    "MiniCPMV4_6ForConditionalGeneration": "MiniCPMV2_6",
    "MiniCPMV4_7ForConditionalGeneration": "MiniCPMV2_6",
    "Mistral3ForConditionalGeneration": "LlavaForConditionalGeneration",
}


def unknown_before(version: str) -> dict[str, str]:
    """The classes unknown at `version` before, with the reason kind."""
    at = release(version)
    return {
        model: reason
        for model, (spans, reason) in UNKNOWN_BEFORE.items()
        if any(release(first) <= at <= release(last) for first, last in spans)
    }


def eagle3_targets(version: str) -> list[ModelCheck]:
    checks = shipped(version).compat.checks
    return [c for c in checks if c.algorithm == "EAGLE3" and c.role == "target"]


# Where the MRO through the package that re-exports EVS is checked on the index itself:
# the first release with such a class and the newest (its three classes are there).
EVS_INDEXED = {"v0.5.8", "v0.5.23"}


@pytest.mark.parametrize("version", SINCE_V0_4_10)
def test_at_most_one_eagle3_target_row_is_unknown_and_it_names_why(version: str) -> None:
    unknown = [c for c in eagle3_targets(version) if c.status == "unknown"]
    assert len(unknown) <= 1, [c.model for c in unknown]
    for check in unknown:
        # Unknown by a member no analysed class is known to provide, or by an
        # aux-hidden-state contract that cannot be followed: either way, with the reason.
        reasons = [p.where for p in check.provisions if p.how == "unknown"]
        if check.contract_unknown:
            reasons.append(check.contract_unknown)
        assert reasons and all(reasons), check


@pytest.mark.parametrize("version", SINCE_V0_4_10)
def test_every_row_unknown_before_has_a_verdict_with_its_evidence(
    version: str, use_real_cache: Path
) -> None:
    before = unknown_before(version)
    rows = {c.model: c for c in eagle3_targets(version) if c.model in before}
    # The Gemma4 assistants' verdict is their kind: FROZEN_KV_MTP drafts (the server
    # refuses them for EAGLE3), so they have no EAGLE3 target row any more.
    drafts = {m for m in before if load_rules().model_kind_rule(m) == ("draft", ("FROZEN_KV_MTP",))}
    assert drafts <= {"Gemma4AssistantForCausalLM", "Gemma4UnifiedAssistantForCausalLM"}
    assert set(rows) == set(before) - drafts
    for model in drafts:
        before.pop(model)
    pinned = load_inventory().releases[version]["transformers"]
    followed = [m for m, reason in before.items() if reason == "evs_module.EVS"]
    index = None
    if followed and version in EVS_INDEXED:
        ws = Workspace(open_source("pypi", None, Path.cwd()), use_shipped=False)
        index = ws.analyse(ws.source, version).index
    for model, reason in before.items():
        check = rows[model]
        assert check.status in ("ok", "broken"), check
        wheres = " | ".join(p.where for p in check.provisions)
        if reason == "transformers":
            # The inventory entry, at the version the release pins; or no external base is
            # needed any more (v0.5.21+: once `modules`, which every nn.Module has, is no
            # requirement, the Gemma classes define what is left themselves, or assign it
            # in their __init__, as `lm_head`, which the PP fallback reads).
            own = all(p.how in ("defined", "inherited", "attribute") for p in check.provisions)
            assert own or f"transformers.PreTrainedModel (transformers {pinned})" in wheres, check
        elif reason == "__getattr__":
            # The forward, and the classes it may reach.
            assert "__getattr__ forwards to self." in wheres, check
            assert FORWARDED_TO[model] in wheres, check
        else:
            # The base, followed through the package that re-exports it.
            assert all(p.how != "unknown" for p in check.provisions), check
            if index is not None:
                key = next(k for k in index.classes_named(model) if ".models." in k)
                assert "sglang.srt.multimodal.evs.evs_module:EVS" in index.mro(key)[0]
