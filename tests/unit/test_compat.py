"""Provision and breaks of entry classes in tiny SGLang-shaped trees."""

from __future__ import annotations

from sgl_trees import build

from tracker.compat import ModelCheck, provision


def check(built: object, model: str, algorithm: str = "EAGLE3") -> ModelCheck:
    found = built.compat.check_for(model, algorithm)  # type: ignore[attr-defined]
    assert found is not None, f"{model} not checked for {algorithm}"
    return found


def test_a_wrapper_lacking_members_its_inner_model_provides_is_broken_with_delegations() -> None:
    c = check(build(), "WrapperForConditionalGeneration")
    assert c.status == "broken"
    assert c.missing == ("get_embed_and_head", "set_eagle3_layers_to_capture")
    assert [(d.member, d.attribute, d.inner_class) for d in c.delegations] == [
        ("get_embed_and_head", "language_model", "LlamaForCausalLM"),
        ("set_eagle3_layers_to_capture", "language_model", "LlamaForCausalLM"),
    ]


def test_a_class_defining_every_required_member_is_ok() -> None:
    assert check(build(), "LlamaForCausalLM").status == "ok"


def test_eagle_needs_only_the_members_its_own_sites_require() -> None:
    c = check(build(), "WrapperForConditionalGeneration", "EAGLE")
    assert c.missing == ("get_embed_and_head",)


def test_entry_classes_are_sorted_into_kinds_by_name() -> None:
    kinds = {e.name: e.kind for e in build().compat.entries}
    assert kinds == {
        "LlamaForCausalLM": "target",
        "LlamaForCausalLMEagle": "draft",
        "WrapperForConditionalGeneration": "target",
    }


def test_a_draft_class_is_checked_against_draft_requirements_of_its_algorithm_only() -> None:
    built = build()
    draft = check(built, "LlamaForCausalLMEagle", "EAGLE")
    assert draft.role == "draft" and draft.status == "ok"
    assert built.compat.check_for("LlamaForCausalLMEagle", "EAGLE3") is None


INHERITING = """
    from sglang.srt.models.llama import LlamaForCausalLM
    from sglang.srt.models.mixins import GetAttrMixin
    from transformers import PreTrainedModel
    from torch import nn


    class Child(LlamaForCausalLM):
        pass


    class ByAttribute(nn.Module):
        def __init__(self):
            super().__init__()
            self.get_embed_and_head = lambda: None
            self.set_eagle3_layers_to_capture = None


    class Dynamic(GetAttrMixin):
        pass


    class External(PreTrainedModel):
        pass


    EntryClass = [Child, ByAttribute, Dynamic, External]
    """

MIXINS = """
    class GetAttrMixin:
        def __getattr__(self, name):
            return getattr(self.inner, name)
    """


def test_provision_through_bases_attributes_getattr_and_unknown_bases() -> None:
    built = build({"models/more.py": INHERITING, "models/mixins.py": MIXINS})
    index = built.index
    child = index.classes_named("Child")[0]
    assert provision(index, child, "get_embed_and_head").how == "inherited"
    assert provision(index, child, "get_embed_and_head").where == "LlamaForCausalLM"
    assert provision(index, child, "named_parameters").how == "torch"
    assert (
        provision(index, child, "forward").how == "missing"
    )  # nn.Module's forward is no provision
    by_attr = index.classes_named("ByAttribute")[0]
    assert provision(index, by_attr, "set_eagle3_layers_to_capture").how == "attribute"
    assert check(built, "ByAttribute").status == "ok"
    dynamic = check(built, "Dynamic")
    assert dynamic.status == "unknown"
    assert dynamic.provisions[0].where == "GetAttrMixin defines __getattr__"
    external = check(built, "External")
    assert external.status == "unknown"
    assert "transformers.PreTrainedModel" in external.provisions[0].where


def test_a_wrapper_that_adds_delegating_methods_is_no_longer_broken() -> None:
    fixed = """
        from torch import nn

        from sglang.srt.models.llama import LlamaForCausalLM


        class WrapperForConditionalGeneration(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.language_model = LlamaForCausalLM(config)

            def get_embed_and_head(self):
                return self.language_model.get_embed_and_head()

            def set_eagle3_layers_to_capture(self, layer_ids=None):
                return self.language_model.set_eagle3_layers_to_capture(layer_ids)


        EntryClass = [WrapperForConditionalGeneration]
        """
    assert (
        check(build({"models/wrapper.py": fixed}), "WrapperForConditionalGeneration").status == "ok"
    )
