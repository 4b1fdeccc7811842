"""Kinds of entry classes from their structure (a LogitsProcessor, an inner generative
model, a Pooler-like head), names as a last resort, each with the evidence that decided it."""

from __future__ import annotations

from tests.unit.sgl_trees import build, line_of
from tracker.analysis.compat import EntryClass

LAYERS = {
    "layers/logits_processor.py": """
        from torch import nn


        class LogitsProcessor(nn.Module):
            def __init__(self, config):
                super().__init__()
        """,
    "layers/pooler.py": """
        from torch import nn


        class Pooler(nn.Module):
            def __init__(self, normalize=True):
                super().__init__()
        """,
}

MODELS = """
    from torch import nn

    from sglang.srt.layers.logits_processor import LogitsProcessor
    from sglang.srt.layers.pooler import Pooler
    from sglang.srt.models.llama import LlamaForCausalLM


    class QWenLMHeadModel(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.logits_processor = LogitsProcessor(config)
            self.pooler = Pooler(normalize=True)


    class TextBase(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.logits_processor = LogitsProcessor(config) if config.tie else None


    class ChatGLMModel(TextBase):
        pass


    class InternVLChatModel(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.language_model = QWenLMHeadModel(config)


    class LlamaEmbeddingModel(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.model = LlamaForCausalLM(config)
            self.pooler = Pooler(normalize=True, last=True)


    class MistralModel(LlamaEmbeddingModel):
        pass


    class Qwen2ForRewardModel(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.pooler = Pooler(normalize=False)


    class GemmaEmbedder(QWenLMHeadModel):
        def __init__(self, config):
            nn.Module.__init__(self)
            self.pooler = Pooler(normalize=False)


    class PlainVisionModel(nn.Module):
        pass


    class PlainForCausalLM(nn.Module):
        pass


    class TinyForCausalLMEagle3(QWenLMHeadModel):
        pass


    EntryClass = [
        QWenLMHeadModel, ChatGLMModel, InternVLChatModel, LlamaEmbeddingModel, MistralModel,
        Qwen2ForRewardModel, GemmaEmbedder, PlainVisionModel, PlainForCausalLM,
        TinyForCausalLMEagle3,
    ]
    """

TREE = {**LAYERS, "models/kinds.py": MODELS}


def entries() -> dict[str, EntryClass]:
    return {e.name: e for e in build(TREE).compat.entries}


def test_a_class_constructing_a_logits_processor_is_generative_whatever_its_name() -> None:
    qwen = entries()["QWenLMHeadModel"]
    line = line_of(TREE, "models/kinds.py", "self.logits_processor = LogitsProcessor(config)")
    assert qwen.kind == "target"  # the name rule `Model$` alone would say embedding
    assert qwen.kind_evidence == (
        f"constructs LogitsProcessor in QWenLMHeadModel.__init__ (models/kinds.py:{line})"
    )


def test_a_logits_processor_constructed_in_a_base_makes_the_subclass_generative() -> None:
    chatglm = entries()["ChatGLMModel"]
    line = line_of(TREE, "models/kinds.py", "LogitsProcessor(config) if config.tie")
    assert chatglm.kind == "target"
    assert chatglm.kind_evidence == (
        f"constructs LogitsProcessor in TextBase.__init__ (models/kinds.py:{line})"
    )


def test_an_inner_generative_model_makes_its_wrapper_generative() -> None:
    intern = entries()["InternVLChatModel"]
    assert intern.kind == "target"
    assert intern.kind_evidence.startswith(
        "inner model self.language_model: QWenLMHeadModel, which constructs LogitsProcessor "
        "in QWenLMHeadModel.__init__"
    )


def test_an_inner_model_whose_own_kind_comes_from_its_name_proves_nothing() -> None:
    # LlamaForCausalLM of the base tree builds no LogitsProcessor: the embedding model
    # holding it is decided by its own Pooler, not by the inner model's name.
    assert entries()["LlamaEmbeddingModel"].kind == "embedding"


def test_a_class_building_only_a_pooler_is_a_pooling_model_named_by_its_rules() -> None:
    found = entries()
    line = line_of(TREE, "models/kinds.py", "Pooler(normalize=True, last=True)")
    mistral = found["MistralModel"]
    assert mistral.kind == "embedding"
    assert mistral.kind_evidence == (
        f"constructs Pooler in LlamaEmbeddingModel.__init__ (models/kinds.py:{line}); "
        "no LogitsProcessor; embedding by name rule '(Embedding\\w*|Model|Encoder\\w*)$'"
    )
    reward = found["Qwen2ForRewardModel"]
    assert reward.kind == "reward"
    assert reward.kind_evidence.endswith("reward by name rule 'Reward'")


def test_the_nearest_class_that_builds_a_head_decides_over_a_generative_base() -> None:
    embedder = entries()["GemmaEmbedder"]
    assert embedder.kind == "embedding"
    assert embedder.kind_evidence.startswith("constructs Pooler in GemmaEmbedder.__init__")
    assert "nearer than the LogitsProcessor of its base QWenLMHeadModel" in (embedder.kind_evidence)


def test_without_structural_markers_the_name_decides_and_the_evidence_says_so() -> None:
    found = entries()
    vision = found["PlainVisionModel"]
    assert vision.kind == "embedding"
    assert vision.kind_evidence == (
        "no LogitsProcessor or Pooler constructed; "
        "name matches rule '(Embedding\\w*|Model|Encoder\\w*)$'"
    )
    plain = found["PlainForCausalLM"]
    assert plain.kind == "target"
    assert plain.kind_evidence.endswith("name matches rule '.*'")


def test_draft_name_rules_come_before_structure() -> None:
    draft = entries()["TinyForCausalLMEagle3"]
    assert draft.kind == "draft"
    assert draft.kind_evidence == "name matches rule 'Eagle3$'"


def test_generative_classes_are_checked_as_targets_and_pooling_ones_are_not() -> None:
    checked = {(c.model, c.role) for c in build(TREE).compat.checks}
    for name in ("QWenLMHeadModel", "ChatGLMModel", "InternVLChatModel"):
        assert (name, "target") in checked
    for name in ("MistralModel", "LlamaEmbeddingModel", "Qwen2ForRewardModel", "GemmaEmbedder"):
        assert not any(model == name for model, _ in checked)


def test_every_check_carries_the_evidence_of_its_class_kind() -> None:
    built = build(TREE)
    evidence = {e.name: e.kind_evidence for e in built.compat.entries}
    assert built.compat.checks
    for c in built.compat.checks:
        assert c.kind_evidence == evidence[c.model] != ""
