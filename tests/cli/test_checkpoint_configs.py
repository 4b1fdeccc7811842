"""`--model-config` / `--draft-config` on real releases, with the configs of public
checkpoints (tests/cli/checkpoints/, each field's source in its README): the classes
v0.5.9 and v0.5.10 load for them, the verdicts, what the configs decide, and the one-line
errors for what cannot be read or loaded."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from schema_check import errors

pytestmark = pytest.mark.realdata

Tracker = Callable[..., Result]
CONFIGS = Path(__file__).parent / "checkpoints"
KIMI = "KimiK25ForConditionalGeneration"


def config(name: str) -> str:
    return str(CONFIGS / name)


def seed(version: str, draft: str = "kimi-k2.5-eagle3", *extra: str) -> list[str]:
    return [
        "check",
        version,
        "-a",
        "EAGLE3",
        "--model-config",
        config("kimi-k2.5") + "/",
        "--draft-config",
        config(draft) + "/",
        "-q",
        *extra,
    ]


def answer_of(result: Result) -> dict[str, Any]:
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert errors(doc) == []
    (found,) = doc["answers"]
    return found  # type: ignore[no-any-return]


def role(found: dict[str, Any], name: str) -> dict[str, Any]:
    (r,) = [r for r in found["roles"] if r["role"] == name]
    return r


def test_the_seed_question_answers_in_one_command(tracker: Tracker) -> None:
    result = tracker(*seed("v0.5.9", "kimi-k2.5-eagle3", "--fail-on", "broken"))
    assert result.exit_code == 1, result.stderr
    out = result.stdout
    assert f"target {KIMI} · draft LlamaForCausalLMEagle3" in out
    assert "✗ broken · missing get_embed_and_head, set_eagle3_layers_to_capture" in out
    assert "delegation: self.language_model (DeepseekV3ForCausalLM) provides" in out
    assert "→ tracker fix --at v0.5.9 --model-config" in out
    assert "→ fixed in v0.5.10: the same checkpoints are ok there" in out


def test_the_seed_checkpoints_are_ok_at_the_release_that_fixes_the_wrapper(
    tracker: Tracker,
) -> None:
    found = answer_of(tracker(*seed("v0.5.10", "kimi-k2.5-eagle3", "--format", "json")))
    assert found["status"] == "ok"
    assert role(found, "target")["class"] == KIMI
    assert role(found, "target")["check"]["status"] == "ok"
    assert role(found, "draft")["check"]["status"] == "ok"


def test_the_answer_says_which_rule_picked_each_class_with_its_site(tracker: Tracker) -> None:
    found = answer_of(tracker(*seed("v0.5.9", "kimi-k2.5-eagle3", "--format", "json")))
    target = role(found, "target")
    assert target["architectures"] == {"given": [KIMI], "loaded": [KIMI]}
    assert target["steps"][-1]["rule"] == "the registry's EntryClass"
    assert target["steps"][-1]["site"].startswith("models/kimi_k25.py:")
    assert role(found, "draft")["given_as"] == "--draft-config"


def test_a_draft_without_aux_hidden_states_does_not_need_the_capture_setter(
    tracker: Tracker,
) -> None:
    found = answer_of(tracker(*seed("v0.5.9", "eagle-no-aux", "--format", "json")))
    (change,) = [c for c in found["changes"] if c["member"] == "set_eagle3_layers_to_capture"]
    assert change["after"] == "not needed"
    assert change["because"] == ["draft config sets eagle_config.use_aux_hidden_state = false"]
    assert change["site"] == "model_executor/model_runner.py:622"
    assert role(found, "target")["check"]["missing"] == ["get_embed_and_head"]
    required = {(r["role"], r["member"]) for r in found["requirements"]}
    assert ("target", "set_eagle3_layers_to_capture") not in required


def test_a_draft_that_reads_aux_hidden_states_keeps_the_capture_setter(tracker: Tracker) -> None:
    found = answer_of(tracker(*seed("v0.5.9", "kimi-k2.5-eagle3", "--format", "json")))
    assert not [c for c in found["changes"] if c["member"] == "set_eagle3_layers_to_capture"]


def test_a_deepseek_v3_target_loads_its_nextn_layer_as_the_draft_by_itself(
    tracker: Tracker,
) -> None:
    result = tracker(
        "check",
        "v0.5.9",
        "-a",
        "NEXTN",
        "--model-config",
        config("deepseek-v3"),
        "--format",
        "json",
        "-q",
    )
    found = answer_of(result)
    assert found["algorithm"] == "EAGLE"  # NEXTN runs as EAGLE
    draft = role(found, "draft")
    assert draft["class"] == "DeepseekV3ForCausalLMNextN"
    assert draft["given_as"].startswith("the target's checkpoint")
    rewrite = draft["steps"][1]
    assert (
        rewrite["rule"] == "the draft rewrite: DeepseekV3ForCausalLM → DeepseekV3ForCausalLMNextN"
    )
    assert rewrite["site"].startswith("configs/model_config.py:")
    assert found["status"] == "ok"


def test_a_qwen3_target_with_a_llama_eagle3_draft_is_checked_as_the_pair(tracker: Tracker) -> None:
    result = tracker(
        "check",
        "v0.5.9",
        "-a",
        "EAGLE3",
        "--model-config",
        config("qwen3"),
        "--draft-config",
        config("llama3-eagle3"),
        "--format",
        "json",
        "-q",
    )
    found = answer_of(result)
    assert role(found, "target")["class"] == "Qwen3ForCausalLM"
    assert role(found, "draft")["class"] == "LlamaForCausalLMEagle3"
    assert found["status"] == "ok"
    # draft_vocab_size is set: the draft keeps its own lm_head, so every site that hands it
    # the target's under `load_lm_head_from_target` is gone; the v2 multi-layer worker's
    # (under an opt-in server option alone) stays, and with it the conditional status.
    (head,) = [
        r
        for r in found["requirements"]
        if r["member"] == "set_embed_and_head" and r["role"] == "draft"
    ]
    assert head["status"] == "conditional"
    assert {s["path"].rsplit("/", 1)[1] for s in head["sites"]} == {
        "multi_layer_eagle_worker_v2.py"
    }


def test_a_config_that_only_names_the_class_gives_the_verdict_of_dash_m(tracker: Tracker) -> None:
    found = answer_of(
        tracker(
            "check",
            "v0.5.9",
            "-a",
            "EAGLE3",
            "--model-config",
            config("only-architectures"),
            "--format",
            "json",
            "-q",
        )
    )
    by_class = tracker("check", "v0.5.9", "-a", "EAGLE3", "-m", KIMI, "--format", "json", "-q")
    assert by_class.exit_code == 0, by_class.stderr
    (expected,) = json.loads(by_class.stdout)["checks"]
    got = role(found, "target")["check"]
    for key in ("model", "status", "missing", "delegations", "contract", "at_risk"):
        assert got[key] == expected[key], key


def test_fix_for_the_checkpoints_adds_only_what_their_configs_leave_needed(
    tracker: Tracker,
) -> None:
    both = tracker(*["fix", "--at", "v0.5.9", *seed("v0.5.9")[4:8]])
    assert both.exit_code == 0, both.stderr
    assert "+    def get_embed_and_head(self):" in both.stdout
    assert "+    def set_eagle3_layers_to_capture(" in both.stdout
    one = tracker(*["fix", "--at", "v0.5.9", *seed("v0.5.9", "eagle-no-aux")[4:8]])
    assert one.exit_code == 0, one.stderr
    assert "+    def get_embed_and_head(self):" in one.stdout
    assert "set_eagle3_layers_to_capture" not in one.stdout


def test_why_for_the_checkpoints_says_why_a_member_is_not_needed(tracker: Tracker) -> None:
    args = [
        "why",
        "set_eagle3_layers_to_capture",
        "--at",
        "v0.5.9",
        *seed("v0.5.9", "eagle-no-aux")[4:],
    ]
    result = tracker(*args)
    assert result.exit_code == 0, result.stderr
    assert "not needed for these checkpoints (draft config sets " in result.stdout
    assert "eagle_config.use_aux_hidden_state = false" in result.stdout
    whole = tracker(
        "why", "--at", "v0.5.9", *seed("v0.5.9", "eagle-no-aux")[4:], "--format", "json"
    )
    assert whole.exit_code == 0, whole.stderr
    doc = json.loads(whole.stdout)
    assert errors(doc) == []
    assert doc["model"] == KIMI and doc["check"]["missing"] == ["get_embed_and_head"]


def test_triage_for_the_checkpoints_reads_the_error_against_the_loaded_class(
    tracker: Tracker,
) -> None:
    message = f"'{KIMI}' object has no attribute 'set_eagle3_layers_to_capture'"
    result = tracker(
        "triage", message, "--at", "v0.5.9", "-a", "EAGLE3", *seed("v0.5.9", "eagle-no-aux")[4:8]
    )
    assert result.exit_code == 0, result.stderr
    assert f"the error is read against {KIMI}" in result.stderr
    assert "EAGLE3 does not need set_eagle3_layers_to_capture of the target model" in result.stderr
    assert "missing get_embed_and_head" in result.stdout


# ------------------------------------------------------------------------- bad input


def one_line_error(result: Result) -> str:
    assert result.exit_code == 2, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tracker: error: "), result.stderr
    return lines[0]


def test_a_hub_id_is_refused_with_a_line_saying_to_pass_a_local_path(tracker: Tracker) -> None:
    line = one_line_error(tracker("check", "v0.5.9", "--model-config", "moonshotai/Kimi-K2.5"))
    assert "moonshotai/Kimi-K2.5: no such local path, and the tracker fetches nothing" in line
    assert "pass its folder or the file" in line


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (None, "the folder has no config.json"),
        (
            "{not json",
            "not valid JSON (Expecting property name enclosed in double quotes at line 1",
        ),
        ('["a list"]', "not a JSON object"),
        ('{"model_type": "llama"}', "no architectures (a list of class names)"),
        ('{"architectures": []}', "no architectures (a list of class names)"),
    ],
)
def test_a_folder_without_a_usable_config_json_is_one_line(
    tracker: Tracker, tmp_path: Path, text: str | None, says: str
) -> None:
    if text is not None:
        (tmp_path / "config.json").write_text(text, encoding="utf-8")
    line = one_line_error(tracker("check", "v0.5.9", "--model-config", str(tmp_path)))
    assert says in line


def test_an_architecture_the_release_does_not_register_suggests_a_near_name(
    tracker: Tracker, tmp_path: Path
) -> None:
    (tmp_path / "config.json").write_text('{"architectures": ["KimiK25ForConditionalGen"]}')
    line = one_line_error(
        tracker("check", "v0.5.9", "-a", "EAGLE3", "--model-config", str(tmp_path))
    )
    assert "sglang v0.5.9 registers no class KimiK25ForConditionalGen" in line
    assert f"did you mean {KIMI}" in line


def test_an_architecture_registered_later_names_the_release_that_first_registers_it(
    tracker: Tracker,
) -> None:
    # v0.5.9's analysis is stored in the cache by this first run; the hint reads it.
    assert tracker("check", "v0.5.9", "-a", "EAGLE3", "-m", KIMI, "-q").exit_code == 0
    line = one_line_error(
        tracker("check", "v0.5.8", "-a", "EAGLE3", "--model-config", config("kimi-k2.5"))
    )
    assert f"sglang v0.5.8 registers no class {KIMI}" in line
    assert f"{KIMI} is first registered in v0.5.9" in line


def test_override_args_that_are_no_json_object_are_one_line(tracker: Tracker) -> None:
    line = one_line_error(
        tracker("check", "v0.5.9", "--model-config", config("kimi-k2.5"), "--override-args", "[1]")
    )
    assert "--override-args must be a JSON object" in line


def test_a_draft_config_alone_is_refused(tracker: Tracker) -> None:
    line = one_line_error(tracker("check", "v0.5.9", "--draft-config", config("llama3-eagle3")))
    assert "--draft-config needs --model-config" in line


def test_a_pair_no_later_release_fixes_says_how_far_it_looked(tracker: Tracker) -> None:
    # Without --draft-config, EAGLE3 reads the target's own checkpoint as its draft, and
    # KimiK25ForConditionalGeneration lacks what EAGLE3 asks of a draft in every release.
    result = tracker(
        "check", "v0.5.9", "-a", "EAGLE3", "--model-config", config("kimi-k2.5"),
        "--format", "json", "-q",
    )  # fmt: skip
    found = answer_of(result)
    draft = role(found, "draft")
    assert draft["class"] == KIMI and draft["given_as"].startswith("the target's checkpoint")
    assert draft["check"]["status"] == "broken" and "hot_token_id" in draft["check"]["missing"]
    assert found["next"]["fix_command"] == ""  # no inner model has the draft's members
    assert found["next"]["fixed_in"] == ""
    assert found["next"]["looked_until"] not in ("", "v0.5.9")


def test_an_algorithm_that_refuses_to_start_without_a_draft_path_asks_for_draft_config(
    tracker: Tracker, stocked_releases: Callable[..., Path]
) -> None:
    stocked_releases("v0.5.23")
    result = tracker("check", "v0.5.23", "-a", "DFLASH", "--model-config", config("qwen3"), "-q")
    assert result.exit_code == 0, result.stderr
    assert (
        "no class: needs --draft-config: refuses to start without a draft path: " in result.stdout
    )
    assert "arg_groups/speculative_hook.py:" in result.stdout
    assert "→ give --draft-config: the draft checkpoint decides the draft class" in result.stdout
    failing = tracker(
        "check", "v0.5.23", "-a", "DFLASH", "--model-config", config("qwen3"),
        "--fail-on", "unknown", "-q",
    )  # fmt: skip
    assert failing.exit_code == 1


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda p: os.mkfifo(p), "cannot read it (not a regular file)"),
        (lambda p: p.mkdir(), "the folder has no config.json"),
        (lambda p: p.write_text("[" * 100_000 + "]" * 100_000), "nested too deeply"),
        (lambda p: p.write_bytes(b"\xff\xfe{"), "not a text file"),
    ],
)
def test_a_config_json_that_is_no_readable_json_file_is_one_line(
    tracker: Tracker, tmp_path: Path, make: Callable[[Path], object], says: str
) -> None:
    path = tmp_path / "config.json"
    make(path)
    line = one_line_error(tracker("check", "v0.5.9", "--model-config", str(path)))
    assert says in line


@pytest.mark.parametrize(
    ("fmt", "says"),
    [
        (
            "text",
            "target set_eagle3_layers_to_capture: required → not needed (draft config sets "
            "eagle_config.use_aux_hidden_state = false) · model_executor/model_runner.py:622",
        ),
        (
            "md",
            "- target `set_eagle3_layers_to_capture`: required → not needed (draft config sets "
            "eagle_config.use_aux_hidden_state = false), `model_executor/model_runner.py:622`",
        ),
    ],
)
def test_the_report_says_what_the_configs_decided_and_why(
    tracker: Tracker, fmt: str, says: str
) -> None:
    result = tracker(*seed("v0.5.9", "eagle-no-aux", "--format", fmt))
    assert result.exit_code == 0, result.stderr
    assert says in result.stdout
    assert "LlamaForCausalLMEagle3 also sets it outside __init__" in result.stdout.replace(
        "\\_", "_"
    )
