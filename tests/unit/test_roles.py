"""roles.toml is validated on load: a typo in a kind rule, a kind marker or the draft-model
rules is an error naming the file and the entry, never a silently ignored rule."""

from __future__ import annotations

import pytest

from tracker.analysis.roles import load_rules, rules_from_text
from tracker.common.errors import TrackerError
from tracker.common.resources import queries_dir

SHIPPED = (queries_dir() / "roles.toml").read_text(encoding="utf-8")


def with_extra(text: str) -> bytes:
    return (SHIPPED + "\n" + text).encode()


def test_the_shipped_rules_hold_both_structural_markers_and_the_draft_model_rules() -> None:
    rules = load_rules()
    assert "LogitsProcessor" in rules.markers("generative")
    assert "Pooler" in rules.markers("pooling")
    assert rules.draft_models.any_generative == ("STANDALONE",)
    assert rules.draft_models.fallback_value.search("model_path or server_args.model_path")
    assert rules.draft_models.fallback_value.search("model_path or cfg.model_path")
    assert not rules.draft_models.fallback_value.search("model_path or default_path")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            '[[kind_marker]]\nkind = "generative"\nconstruct = ["X"]\n',
            "roles.toml: [[kind_marker]] #{markers}: unknown key 'construct'",
        ),
        (
            '[[kind_marker]]\nkind = "head"\nconstructs = ["X"]\n',
            "roles.toml: [[kind_marker]] #{markers}: kind 'head' is not one of generative, pooling",
        ),
        (
            '[[kind_marker]]\nkind = "pooling"\nconstructs = []\n',
            "roles.toml: [[kind_marker]] #{markers}: constructs must list class names",
        ),
        (
            '[[kind_marker]]\nkind = "pooling"\nconstructs = ["layers.Pooler"]\n',
            "roles.toml: [[kind_marker]] #{markers}: constructs must list class names",
        ),
        (
            '[[kind_marker]]\nkind = "pooling"\nconstructs = "Pooler"\n',
            "roles.toml: [[kind_marker]] #{markers}: constructs must be a list of strings",
        ),
        (
            '[[model_kind]]\nkind = "embeding"\npattern = "X$"\n',
            "roles.toml: [[model_kind]] #{kinds}: kind 'embeding' is not one of",
        ),
        (
            '[[model_kind]]\nkind = "embedding"\npattern = "(X"\n',
            "roles.toml: [[model_kind]] #{kinds}: bad pattern '(X'",
        ),
        (
            '[[model_kind]]\nkind = "reward"\npattern = "X"\nalgorithms = ["EAGLE"]\n',
            "roles.toml: [[model_kind]] #{kinds}: only a draft rule names algorithms",
        ),
        ('[[model_kind]]\npattern = "X"\n', "roles.toml: [[model_kind]] #{kinds}: kind is missing"),
    ],
)
def test_a_malformed_kind_rule_is_an_error_naming_the_entry(extra: str, message: str) -> None:
    # The entry's number counts the shipped entries before it.
    numbers = {
        "markers": SHIPPED.count("[[kind_marker]]") + 1,
        "kinds": SHIPPED.count("[[model_kind]]") + 1,
    }
    with pytest.raises(TrackerError) as raised:
        rules_from_text(with_extra(extra))
    assert str(raised.value).startswith(message.format(**numbers))


def test_an_unknown_draft_model_key_is_an_error() -> None:
    text = SHIPPED.replace('any_generative = ["STANDALONE"]', 'any_generatve = ["STANDALONE"]')
    with pytest.raises(TrackerError, match=r"\[draft_models\]: unknown key 'any_generatve'"):
        rules_from_text(text.encode())


@pytest.mark.parametrize(
    ("name", "kind", "algorithms"),
    [
        ("LlamaForCausalLMEagle3", "draft", ("EAGLE3",)),
        ("DeepseekV3ForCausalLMNextN", "draft", ("EAGLE",)),
        # Drafts of FROZEN_KV_MTP (the server refuses them for EAGLE3), though they build
        # a LogitsProcessor like any target.
        ("Gemma4AssistantForCausalLM", "draft", ("FROZEN_KV_MTP",)),
        ("Gemma4UnifiedAssistantForCausalLM", "draft", ("FROZEN_KV_MTP",)),
        ("Gemma4ForCausalLM", "target", ()),
    ],
)
def test_the_shipped_draft_name_rules_pick_the_draft_classes_and_their_algorithms(
    name: str, kind: str, algorithms: tuple[str, ...]
) -> None:
    assert load_rules().model_kind_rule(name) == (kind, algorithms)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            '[[receiver]]\npattern = "self.x.model"\nrole = "targt"\n',
            "roles.toml: [[receiver]] #{receivers} (self.x.model): role 'targt' is not one of "
            "target, draft, runner",
        ),
        (
            '[[receiver]]\npattern = "self.x.model"\nrole = "draft"\nscope = "runners"\n',
            "roles.toml: [[receiver]] #{receivers} (self.x.model): scope 'runners' is not one of",
        ),
        (
            '[[receiver]]\npattern = "self.x.model"\nrole = "draft"\nmodule = ["a.*"]\n',
            "roles.toml: [[receiver]] #{receivers}: unknown key 'module'",
        ),
        (
            '[[receiver]]\npattern = "self.x.model"\nrole = "draft"\nmodules = "a.*"\n',
            "roles.toml: [[receiver]] #{receivers}: modules must be a list of strings",
        ),
        (
            '[[receiver]]\npattern = "self.x.model"\nrole = "draft"\nmodules = []\n',
            "roles.toml: [[receiver]] #{receivers} (self.x.model): modules must list module globs",
        ),
        (
            '[[receiver]]\npattern = "self.x.model"\nrole = "draft"\nclasses = ["a.B"]\n',
            "roles.toml: [[receiver]] #{receivers} (self.x.model): classes must list class names",
        ),
        (
            '[[receiver]]\npattern = "self.x .model"\nrole = "draft"\n',
            "roles.toml: [[receiver]] #{receivers}: bad receiver pattern 'self.x .model'",
        ),
        (
            '[[receiver]]\nrole = "draft"\n',
            "roles.toml: [[receiver]] #{receivers}: pattern is missing",
        ),
        (
            '[[role_flag]]\nname = "is_draft"\ntarget = "no"\n',
            "roles.toml: [[role_flag]] #{flags}: target must be a bool",
        ),
        (
            '[[role_flag]]\nname = "is_draft"\nrunner = true\n',
            "roles.toml: [[role_flag]] #{flags}: unknown key 'runner'",
        ),
        (
            '[[role_flag]]\nname = "is_draft"\n',
            "roles.toml: [[role_flag]] #{flags}: gives no value for target or draft",
        ),
        (
            '[[role_flag]]\nname = "is_draft_worker"\ndraft = true\n',
            "roles.toml: [[role_flag]] #{flags}: is_draft_worker is already declared",
        ),
        (
            '[[receivers]]\npattern = "self.x.model"\nrole = "draft"\n',
            "roles.toml: unknown section 'receivers'",
        ),
    ],
)
def test_a_malformed_receiver_or_flag_rule_is_an_error_naming_the_entry(
    extra: str, message: str
) -> None:
    numbers = {
        "receivers": SHIPPED.count("[[receiver]]") + 1,
        "flags": SHIPPED.count("[[role_flag]]") + 1,
    }
    with pytest.raises(TrackerError) as raised:
        rules_from_text(with_extra(extra))
    assert str(raised.value).startswith(message.format(**numbers))


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            'receivers = ["logits_output", "*.logits_output"]',
            'receivers = "logits_output"',
            "roles.toml: [output]: receivers must be a list of strings",
        ),
        (
            'receivers = ["eagle_config", "*.eagle_config"]',
            "receivers = []",
            "roles.toml: [config]: receivers must list at least one pattern",
        ),
        (
            'receivers = ["eagle_config", "*.eagle_config"]',
            'receivers = ["eagle config"]',
            "roles.toml: [config]: bad receiver pattern 'eagle config'",
        ),
        ("[config]\n", "[[config]]\n", "roles.toml: config must be one [config] table"),
        (
            'enum = "SpeculativeAlgorithm"',
            'enums = "SpeculativeAlgorithm"',
            "roles.toml: [algorithms]: unknown key 'enums'",
        ),
        (
            'flag_method = "_has_flag"',
            'flag_method = "self._has_flag"',
            "roles.toml: [algorithms]: flag_method 'self._has_flag' is not a name",
        ),
        (
            'worker_packages = ["sglang.srt.speculative"]',
            "worker_packages = []",
            "roles.toml: [algorithms]: worker_packages must list packages",
        ),
        (
            'registry_calls = ["register_speculative_algorithm", "register"]',
            'registry_calls = ["register(", "register"]',
            "roles.toml: [algorithms]: registry_calls must list names (got ['register('])",
        ),
        (
            'refusal_calls = "(Error|Exception)$"',
            'refusal_calls = "(Error|Exception$"',
            "roles.toml: [draft_models]: bad pattern '(Error|Exception$'",
        ),
    ],
)
def test_a_malformed_section_is_an_error_naming_it(old: str, new: str, message: str) -> None:
    assert old in SHIPPED
    with pytest.raises(TrackerError) as raised:
        rules_from_text(SHIPPED.replace(old, new, 1).encode())
    assert str(raised.value).startswith(message)


def test_a_missing_section_is_an_error_naming_it() -> None:
    start = SHIPPED.index("[algorithms]")
    end = SHIPPED.index("\n\n", start)
    with pytest.raises(TrackerError, match=r"^roles.toml: \[algorithms\] is missing$"):
        rules_from_text((SHIPPED[:start] + SHIPPED[end:]).encode())
