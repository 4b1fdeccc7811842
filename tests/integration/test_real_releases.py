"""The facts the tool exists for, checked on the real releases from the package index
(analysed from source: the shipped snapshots are bypassed with --no-shipped)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from sgl_trees import unpack_wheel

Run = Any  # the `run` fixture of tests/integration/conftest.py

pytestmark = pytest.mark.realdata

EAGLE_WORKER = "python/sglang/srt/speculative/eagle_worker.py"
MODEL_RUNNER = "python/sglang/srt/model_executor/model_runner.py"
KIMI = "python/sglang/srt/models/kimi_k25.py"


def test_facts_show_the_target_call_and_the_hasattr_guard_in_the_eagle_worker(run: Run) -> None:
    doc = run("facts", "v0.5.9", EAGLE_WORKER, "--format", "json", json_output=True)
    calls = {(c["name"], c["line"]): c for c in doc["calls"]}
    embed = calls[("get_embed_and_head", 157)]
    assert embed["receiver"] == "self.target_worker.model_runner.model"
    guard = calls[("hasattr", 163)]
    assert guard["args"] == ["self.draft_model_runner.model", '"load_lm_head_from_target"']


def test_facts_show_the_capture_call_under_its_flag_in_the_model_runner(run: Run) -> None:
    doc = run("facts", "v0.5.9", MODEL_RUNNER, "--format", "json", json_output=True)
    [site] = [
        c for c in doc["calls"] if c["name"] == "set_eagle3_layers_to_capture" and c["line"] == 622
    ]
    assert site["receiver"] == "self.model"
    assert site["conditions"] == ["self.eagle_use_aux_hidden_state"]


def test_facts_show_the_kimi_wrapper_inner_model_and_entry_class(run: Run) -> None:
    doc = run("facts", "v0.5.9", KIMI, "--format", "json", json_output=True)
    assigns = {(a["target"], a["value_call"]) for a in doc["assigns"]}
    assert ("self.language_model", "DeepseekV3ForCausalLM") in assigns
    [entry] = [a for a in doc["assigns"] if a["target"] == "EntryClass"]
    assert entry["value_names"] == ["KimiK25ForConditionalGeneration"]


def test_eagle3_requires_both_target_members_at_v0_5_9(run: Run) -> None:
    doc = run(
        "interface",
        "v0.5.9",
        "--algorithm",
        "EAGLE3",
        "--role",
        "target",
        "--format",
        "json",
        "--no-shipped",
        json_output=True,
    )
    reqs = {r["member"]: r for r in doc["requirements"]}
    embed = reqs["get_embed_and_head"]
    assert embed["status"] == "required"
    assert (EAGLE_WORKER, 157) in {(s["path"], s["line"]) for s in embed["sites"]}
    capture = reqs["set_eagle3_layers_to_capture"]
    assert capture["status"] == "required"
    site = next(s for s in capture["sites"] if (s["path"], s["line"]) == (MODEL_RUNNER, 622))
    assert site["condition"] == "self.eagle_use_aux_hidden_state"
    assert "get_hidden_states_before_lm_head" not in reqs


def test_draft_members_belong_to_the_draft_role_and_the_lm_head_probe_is_optional(run: Run) -> None:
    doc = run(
        "interface",
        "v0.5.9",
        "--algorithm",
        "EAGLE3",
        "--format",
        "json",
        "--no-shipped",
        json_output=True,
    )
    by_role: dict[str, dict[str, str]] = {}
    for r in doc["requirements"]:
        by_role.setdefault(r["role"], {})[r["member"]] = r["status"]
    for member in ("hot_token_id", "set_embed_and_head", "set_embed"):
        assert member in by_role["draft"]
        assert member not in by_role["target"]
    assert by_role["draft"]["load_lm_head_from_target"] == "optional"


def test_why_prints_the_path_from_the_target_worker_to_each_capture_site(run: Run) -> None:
    out = run(
        "why",
        "set_eagle3_layers_to_capture",
        "--at",
        "v0.5.9",
        "--algorithm",
        "EAGLE3",
        "--no-shipped",
    )
    # The target's runner is built by the scheduler's TpModelWorker (EAGLEWorker is handed
    # it), and the CUDA graph runner by `graph_runners[self.device](self)`, a subscript of a
    # defaultdict of classes.
    assert "model_runner.py:622" in out
    path = out.split("model_runner.py:622", 1)[1].split("python/sglang", 1)[0]
    assert path.split("call path:", 1)[1].split() == [
        "→",
        "sglang.srt.managers.tp_worker:TpModelWorker.__init__",
        "→",
        "sglang.srt.managers.tp_worker:TpModelWorker._init_model_runner",
        "→",
        "sglang.srt.model_executor.model_runner:ModelRunner.__init__",
        "→",
        "sglang.srt.model_executor.model_runner:ModelRunner.initialize",
    ]
    graph = out.split("cuda_graph_runner.py:365", 1)[1]
    assert "none found" not in graph
    assert (
        "→ sglang.srt.model_executor.model_runner:ModelRunner.init_device_graphs\n"
        "        → sglang.srt.model_executor.cuda_graph_runner:CudaGraphRunner.__init__"
    ) in graph


def test_diff_reports_the_new_read_of_mm_input_embeds(run: Run) -> None:
    doc = run(
        "diff",
        "v0.5.8",
        "v0.5.9",
        "--algorithm",
        "EAGLE3",
        "--format",
        "json",
        "--no-shipped",
        json_output=True,
    )
    added = [c for c in doc["changes"] if c["kind"] == "output_field_added"]
    assert [c["subject"] for c in added] == ["logits_output.mm_input_embeds"]
    assert added[0]["new"]["sites"][0]["path"] == EAGLE_WORKER


def test_kimi_k25_is_broken_at_v0_5_9_with_delegation_and_ok_at_v0_5_10(run: Run) -> None:
    doc = run(
        "check",
        "v0.5.9",
        "--algorithm",
        "EAGLE3",
        "--model",
        "KimiK25ForConditionalGeneration",
        "--format",
        "json",
        "--no-shipped",
        json_output=True,
    )
    [kimi] = doc["checks"]
    assert kimi["status"] == "broken"
    assert kimi["missing"] == ["get_embed_and_head", "set_eagle3_layers_to_capture"]
    assert {(d["member"], d["attribute"], d["inner_class"]) for d in kimi["delegations"]} == {
        ("get_embed_and_head", "language_model", "DeepseekV3ForCausalLM"),
        ("set_eagle3_layers_to_capture", "language_model", "DeepseekV3ForCausalLM"),
    }
    later = run(
        "check",
        "v0.5.10",
        "--algorithm",
        "EAGLE3",
        "--model",
        "KimiK25ForConditionalGeneration",
        "--format",
        "json",
        "--no-shipped",
        json_output=True,
    )
    assert later["checks"][0]["status"] == "ok"
    run(
        "check",
        "v0.5.9",
        "-a",
        "EAGLE3",
        "-m",
        "KimiK25ForConditionalGeneration",
        "--fail-on",
        "broken",
        "--no-shipped",
        code=1,
    )


def test_the_fix_patch_applies_to_the_release_and_makes_the_check_pass(
    run: Run, use_real_cache: Path, tmp_path: Path
) -> None:
    patch = run("fix", "KimiK25ForConditionalGeneration", "--at", "v0.5.9", "--no-shipped")
    assert "+    def get_embed_and_head(self):" in patch
    assert "+        return self.language_model.get_embed_and_head()" in patch
    assert "+        return self.language_model.set_eagle3_layers_to_capture(layer_ids)" in patch
    [wheel] = (use_real_cache / "pypi").glob("sglang-0.5.9-*.whl")
    tree = unpack_wheel(wheel, tmp_path / "sglang")
    (tmp_path / "fix.patch").write_text(patch)
    applied = subprocess.run(
        ["patch", "-p1", "-i", str(tmp_path / "fix.patch")],
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
    )
    assert applied.returncode == 0, applied.stdout + applied.stderr
    patched = (tree / KIMI).read_text()
    compile(patched, KIMI, "exec")  # the patched file is valid Python
    doc = run(
        "check",
        "--requirements",
        "v0.5.9",
        "--models",
        f"dir:{tree}",
        "-a",
        "EAGLE3",
        "-m",
        "KimiK25ForConditionalGeneration",
        "--format",
        "json",
        "--no-shipped",
        json_output=True,
    )
    assert doc["checks"][0]["status"] == "ok"
    assert shutil.which("patch")


def test_history_shows_kimi_k25_appearing_broken_and_fixed_a_release_later(run: Run) -> None:
    doc = run(
        "history",
        "KimiK25ForConditionalGeneration",
        "v0.5.8..v0.5.10.post1",
        "--algorithm",
        "EAGLE3",
        "--format",
        "json",
        "--no-shipped",
        json_output=True,
    )
    events = [(e["version"], e["kind"], e["status"]) for e in doc["events"]]
    assert events == [("v0.5.9", "appeared", "broken"), ("v0.5.10", "fixed", "ok")]


def test_minicpmv_at_v0_5_9_is_unsupported_naming_the_classes_its_getattr_forwards_to(
    run: Run,
) -> None:
    out = run("check", "v0.5.9", "-a", "EAGLE3", "-m", "MiniCPMV", "--no-shipped")
    # None of the classes it forwards to ever had the members: never taken up, not a break.
    assert "· MiniCPMV · EAGLE3 · target model · unsupported" in out
    assert (
        "MiniCPMV.__getattr__ forwards to self.minicpmv: MiniCPMV2_6, MiniCPMV4_0, "
        "MiniCPMV4_5 lack it (picked from _SUPPORT_VERSION)"
    ) in out


def test_models_built_on_pretrained_model_at_v0_5_9_are_judged_by_transformers_4_57_1(
    run: Run,
) -> None:
    for model in ("Gemma3nForCausalLM", "MultiModalityCausalLM"):
        doc = run(
            "check",
            "v0.5.9",
            "-a",
            "EAGLE3",
            "-m",
            model,
            "--format",
            "json",
            "--no-shipped",
            json_output=True,
        )
        [row] = doc["checks"]
        assert row["status"] == "broken"
        assert {p["where"] for p in row["provisions"]} == {
            "not in transformers.PreTrainedModel (transformers 4.57.1)"
        }
