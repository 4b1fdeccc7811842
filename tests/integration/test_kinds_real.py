"""Kinds from structure and classes in any role, on the real releases (analysed from source:
the shipped snapshots are bypassed with --no-shipped)."""

from __future__ import annotations

import re
from typing import Any

import pytest

Run = Any  # the `run` fixture of tests/integration/conftest.py

pytestmark = pytest.mark.realdata


def test_text_models_named_like_embedding_models_are_checked_as_targets_at_v0_5_9(
    run: Run,
) -> None:
    doc = run(
        "check",
        "v0.5.9",
        "-a",
        "EAGLE3",
        "--all",
        "--no-shipped",
        "-q",
        "--format",
        "json",
        json_output=True,
    )
    targets = {c["model"]: c for c in doc["checks"] if c["role"] == "target"}
    for name, marker in (
        ("ChatGLMModel", "constructs LogitsProcessor in ChatGLMForCausalLM.__init__"),
        ("GPT2LMHeadModel", "constructs LogitsProcessor in GPT2LMHeadModel.__init__"),
        ("QWenLMHeadModel", "constructs LogitsProcessor in QWenLMHeadModel.__init__"),
        ("InternVLChatModel", "inner model self.language_model: Qwen2ForCausalLM"),
    ):
        assert targets[name]["kind"] == "target"
        assert targets[name]["kind_evidence"].startswith(marker)
        assert targets[name]["status"] == "broken"  # none of them supports EAGLE3
    pooling = [n for n in targets if re.search("Embedding|Reward|Classification", n)]
    assert pooling == []
    assert "MistralModel" not in targets and "LlamaEmbeddingModel" not in targets


def test_mistral_model_is_an_embedding_model_because_its_base_builds_only_a_pooler(
    run: Run,
) -> None:
    doc = run(
        "check",
        "v0.5.9",
        "-a",
        "EAGLE3",
        "--role",
        "target",
        "-m",
        "MistralModel",
        "--no-shipped",
        "-q",
        "--format",
        "json",
        json_output=True,
    )
    [row] = doc["checks"]
    assert row["kind"] == "embedding"
    assert row["kind_evidence"].startswith(
        "constructs Pooler in LlamaEmbeddingModel.__init__ (models/llama_embedding.py:"
    )
    assert row["role_evidence"] == "checked as the target model on request (--role target)"


def draft_check(run: Run, algorithm: str, model: str, fail_on_unknown: bool = False) -> Any:
    """`tracker check v0.5.18 -a ALG --role draft -m MODEL` from the release itself: the one
    JSON row (with --fail-on unknown, the command also fails on an undecided member)."""
    fail = ["--fail-on", "unknown"] if fail_on_unknown else []
    args = ["-a", algorithm, "--role", "draft", "-m", model, "--no-shipped", "-q"]
    doc = run("check", "v0.5.18", *args, "--format", "json", *fail, json_output=True)
    [row] = doc["checks"]
    return row


def test_an_eagle3_draft_class_is_ok_in_the_draft_role_at_v0_5_18(run: Run) -> None:
    row = draft_check(run, "EAGLE3", "LlamaForCausalLMEagle3", fail_on_unknown=True)
    assert (row["role"], row["kind"], row["status"]) == ("draft", "draft", "ok")


def test_a_plain_model_as_the_eagle3_draft_lacks_the_draft_members_at_v0_5_18(run: Run) -> None:
    row = draft_check(run, "EAGLE3", "Qwen2ForCausalLM")
    assert (row["role"], row["kind"], row["status"]) == ("draft", "target", "broken")
    assert row["missing"] == ["hot_token_id", "set_embed"]
    # EAGLE3 started without a draft path loads the target checkpoint as its draft.
    assert row["role_evidence"].startswith(
        "the draft checkpoint defaults to the target's: configs/model_config.py:"
    )


def test_any_generative_model_is_a_standalone_draft_and_qwen2_is_ok_at_v0_5_18(run: Run) -> None:
    row = draft_check(run, "STANDALONE", "Qwen2ForCausalLM", fail_on_unknown=True)
    assert (row["role"], row["status"]) == ("draft", "ok")
    assert "any generative model is a draft by design" in row["role_evidence"]


def test_the_interface_says_which_algorithms_load_generative_classes_as_drafts(run: Run) -> None:
    doc = run("interface", "v0.5.18", "--no-shipped", "-q", "--format", "json", json_output=True)
    modes = {a: d["mode"] for a, d in doc["draft_models"].items()}
    assert modes["EAGLE3"] == "target-default"
    assert modes["STANDALONE"] == "any-generative"
    assert modes["DFLASH"] == "draft-classes"  # refuses to start without a draft path
    assert "NGRAM" not in modes  # loads no draft model
    assert doc["draft_models"]["DFLASH"]["evidence"].startswith(
        "refuses to start without a draft path: arg_groups/speculative_hook.py:"
    )
