"""Provision and breaks of entry classes in tiny SGLang-shaped trees."""

from __future__ import annotations

from pathlib import Path

import inventories
import pytest
from sgl_trees import Built, build, tree

from tracker.analysis.compat import ModelCheck, Provision, build_compat, provision
from tracker.analysis.index import VersionIndex
from tracker.analysis.interface import build_interface
from tracker.analysis.loader import load_index
from tracker.extract.parse import extract_facts
from tracker.sources.base import content_id
from tracker.sources.dir import DirSource


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


def test_provision_through_bases_attributes_getattr_and_external_bases() -> None:
    built = build({"models/more.py": INHERITING, "models/mixins.py": MIXINS})
    index = built.index
    child = index.classes_named("Child")[0]
    assert provision(index, child, "get_embed_and_head").how == "inherited"
    assert provision(index, child, "get_embed_and_head").where == "LlamaForCausalLM"
    # From the shipped inventory of torch's real source.
    assert provision(index, child, "named_parameters").how == "external"
    assert provision(index, child, "named_parameters").where.startswith("torch.nn.Module (torch ")
    assert (
        provision(index, child, "forward").how == "missing"
    )  # nn.Module's forward is no provision
    by_attr = index.classes_named("ByAttribute")[0]
    assert provision(index, by_attr, "set_eagle3_layers_to_capture").how == "attribute"
    assert check(built, "ByAttribute").status == "ok"
    dynamic = check(built, "Dynamic")
    assert dynamic.status == "unknown"
    assert dynamic.provisions[0].where == (
        "GetAttrMixin.__getattr__ forwards to self.inner, whose class could not be found"
    )
    # transformers.PreTrainedModel is inventoried: it has neither member.
    external = check(built, "External")
    assert external.status == "broken"
    assert external.provisions[0].where.startswith("not in transformers.PreTrainedModel (")


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


# ------------------------------------------------------------------ external bases


PRETRAINED_MODELS = """
    from transformers import GenerationMixin, PreTrainedModel
    from transformers.modeling_utils import PreTrainedModel as Canonical


    class Hf(PreTrainedModel):
        def set_eagle3_layers_to_capture(self, layer_ids=None):
            pass


    class HfCanonical(Canonical):
        pass


    class Generating(Hf, GenerationMixin):
        pass


    EntryClass = [Hf, HfCanonical, Generating]
    """


def external_tree(monkeypatch: pytest.MonkeyPatch, **pinned: str) -> Built:
    inventories.use(monkeypatch)
    built = build({"models/hf.py": PRETRAINED_MODELS})
    built.index.pins = inventories.pins(**pinned)
    return built


def test_a_member_an_inventoried_base_provides_is_provided_at_the_pinned_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built = external_tree(monkeypatch, torch="2.9.1", transformers="5.3.0")
    hf = built.index.classes_named("Hf")[0]
    found = provision(built.index, hf, "get_embed_and_head")
    assert found == Provision(
        "get_embed_and_head", "external", "transformers.PreTrainedModel (transformers 5.3.0)"
    )
    # Through its own base in another package: PreTrainedModel is an nn.Module.
    assert provision(built.index, hf, "named_modules").how == "external"
    canonical = built.index.classes_named("HfCanonical")[0]
    assert provision(built.index, canonical, "config").where == (
        "transformers.modeling_utils.PreTrainedModel (transformers 5.3.0)"
    )


def test_a_member_the_inventoried_base_lacks_is_missing_and_names_the_base_and_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built = external_tree(monkeypatch, torch="2.9.1", transformers="4.57.1")
    hf = built.index.classes_named("Hf")[0]
    assert provision(built.index, hf, "get_embed_and_head") == Provision(
        "get_embed_and_head", "missing", "not in transformers.PreTrainedModel (transformers 4.57.1)"
    )
    assert provision(built.index, hf, "forward").how == "missing"


def test_the_nearest_inventoried_version_is_used_and_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built = external_tree(monkeypatch, torch="2.9.1", transformers="4.57.0")
    hf = built.index.classes_named("Hf")[0]
    assert provision(built.index, hf, "get_embed_and_head").where == (
        "not in transformers.PreTrainedModel (transformers 4.57.1, nearest to the pinned 4.57.0)"
    )


def test_a_base_outside_the_inventory_stays_unknown_and_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built = external_tree(monkeypatch, torch="2.9.1", transformers="4.57.1")
    generating = built.index.classes_named("Generating")[0]
    found = provision(built.index, generating, "get_embed_and_head")
    assert found == Provision(
        "get_embed_and_head", "unknown", "base transformers.GenerationMixin outside the inventory"
    )
    # What the inventoried base provides is still known.
    assert provision(built.index, generating, "config").how == "external"


def test_checks_use_the_inventory_of_the_version_the_tree_pins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    inventories.use(monkeypatch)
    files = tree({"models/hf.py": PRETRAINED_MODELS})
    facts = {p: extract_facts(p, content_id(t.encode()), t.encode()) for p, t in files.items()}
    for pinned, status in (("4.57.1", "broken"), ("5.3.0", "ok")):
        index = VersionIndex(facts, inventories.pins(torch="2.9.1", transformers=pinned))
        interface = build_interface("v1", index)
        assert build_compat(index, interface).check_for("Hf", "EAGLE3").status == status


# ------------------------------------------------------------------- __getattr__


def forwarding(monkeypatch: pytest.MonkeyPatch, source: str) -> Built:
    inventories.use(monkeypatch)
    built = build({"models/fwd.py": source})
    built.index.pins = inventories.pins(torch="2.9.1", transformers="4.57.1")
    return built


def forward_provision(built: Built, cls: str, member: str) -> Provision:
    return provision(built.index, built.index.classes_named(cls)[0], member)


DIRECT = """
    from sglang.srt.models.llama import LlamaForCausalLM


    class Wrapper:
        def __init__(self, config):
            self.inner = LlamaForCausalLM(config)

        def __getattr__(self, name):
            return getattr(self.inner, name)


    EntryClass = Wrapper
    """


def test_a_direct_forward_provides_what_the_constructed_class_provides(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built = forwarding(monkeypatch, DIRECT)
    assert forward_provision(built, "Wrapper", "get_embed_and_head") == Provision(
        "get_embed_and_head",
        "forwarded",
        "Wrapper.__getattr__ forwards to self.inner: LlamaForCausalLM (constructed)",
    )
    assert check(built, "Wrapper").status == "ok"
    # What the inner class lacks, the wrapper lacks too.
    assert forward_provision(built, "Wrapper", "set_embed").where == (
        "Wrapper.__getattr__ forwards to self.inner: LlamaForCausalLM lacks it (constructed)"
    )


def test_a_guarded_name_is_not_forwarded(monkeypatch: pytest.MonkeyPatch) -> None:
    guarded = DIRECT.replace(
        "def __getattr__(self, name):",
        'def __getattr__(self, name):\n            if name == "get_embed_and_head":\n'
        "                return None",
    )
    built = forwarding(monkeypatch, guarded)
    assert forward_provision(built, "Wrapper", "get_embed_and_head") == Provision(
        "get_embed_and_head", "missing", "Wrapper.__getattr__ does not forward get_embed_and_head"
    )
    assert forward_provision(built, "Wrapper", "set_eagle3_layers_to_capture").how == "forwarded"
    assert check(built, "Wrapper").missing == ("get_embed_and_head",)


def test_a_forward_after_super_getattr_fails_provides_the_inner_members(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = (
        DIRECT.replace("class Wrapper:", "class Wrapper(nn.Module):")
        .replace(
            "return getattr(self.inner, name)",
            "try:\n                return super().__getattr__(name)\n"
            "            except AttributeError:\n                return getattr(self.inner, name)",
        )
        .replace("from sglang", "from torch import nn\n    from sglang")
    )
    built = forwarding(monkeypatch, source)
    assert forward_provision(built, "Wrapper", "get_embed_and_head").how == "forwarded"
    # nn.Module's own members come before any __getattr__.
    assert forward_provision(built, "Wrapper", "named_modules").how == "external"


DICT_OF_CLASSES = """
    from torch import nn

    from sglang.srt.models.llama import LlamaForCausalLM


    class Old(nn.Module):
        def get_embed_and_head(self):
            pass


    _SUPPORT_VERSION = {(2, 6): Old, (4, 0): LlamaForCausalLM}


    class Dispatch:
        def __init__(self, config):
            instance_class = _SUPPORT_VERSION[config.version]
            inner = instance_class(config)
            self.inner = inner

        def __getattr__(self, name):
            if name == "inner":
                return None
            return getattr(self.inner, name)


    EntryClass = [Dispatch]
    """


def test_a_class_picked_from_a_dict_is_broken_for_what_one_candidate_lacks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built = forwarding(monkeypatch, DICT_OF_CLASSES)
    found = check(built, "Dispatch")
    assert found.status == "broken" and found.missing == ("set_eagle3_layers_to_capture",)
    assert {p.member: p.where for p in found.provisions} == {
        "get_embed_and_head": "Dispatch.__getattr__ forwards to self.inner: "
        "LlamaForCausalLM, Old (picked from _SUPPORT_VERSION)",
        "set_eagle3_layers_to_capture": "Dispatch.__getattr__ forwards to self.inner: Old lacks "
        "it; LlamaForCausalLM provides it "
        "(picked from _SUPPORT_VERSION)",
    }
    # `.get` picks from the dict as well as indexing does.
    with_get = DICT_OF_CLASSES.replace(
        "_SUPPORT_VERSION[config.version]", "_SUPPORT_VERSION.get(config.version)"
    )
    assert check(forwarding(monkeypatch, with_get), "Dispatch").missing == (
        "set_eagle3_layers_to_capture",
    )


def test_classes_chosen_in_an_if_else_chain_are_all_candidates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    chain = DICT_OF_CLASSES.replace(
        "instance_class = _SUPPORT_VERSION[config.version]",
        "if config.old:\n                instance_class = Old\n"
        "            else:\n                instance_class = LlamaForCausalLM",
    )
    found = forward_provision(
        forwarding(monkeypatch, chain), "Dispatch", "set_eagle3_layers_to_capture"
    )
    assert found.how == "missing"
    assert found.where.startswith(
        "Dispatch.__getattr__ forwards to self.inner: Old lacks it; LlamaForCausalLM provides it"
    )


def test_an_annotation_is_the_last_resort_for_the_forwarded_class(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    annotated = DIRECT.replace(
        "def __init__(self, config):", "def __init__(self, config, inner: LlamaForCausalLM):"
    ).replace("self.inner = LlamaForCausalLM(config)", "self.inner = inner")
    found = forward_provision(forwarding(monkeypatch, annotated), "Wrapper", "get_embed_and_head")
    assert found.how == "forwarded" and found.where.endswith("LlamaForCausalLM (annotation)")


def test_a_forward_target_whose_class_cannot_be_found_is_unknown_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    factory = DICT_OF_CLASSES.replace(
        "instance_class = _SUPPORT_VERSION[config.version]", "instance_class = pick_class(config)"
    )
    found = check(forwarding(monkeypatch, factory), "Dispatch")
    assert found.status == "unknown"
    assert found.provisions[0].where == (
        "Dispatch.__getattr__ forwards to self.inner, whose class could not be found "
        "(instance_class = pick_class(...))"
    )


def test_a_getattr_that_does_not_forward_is_unknown_with_its_body(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    table = DIRECT.replace("return getattr(self.inner, name)", "return self.table[name]")
    found = check(forwarding(monkeypatch, table), "Wrapper")
    assert found.status == "unknown"
    assert found.provisions[0].where == "Wrapper.__getattr__ returns self.table[name] (line 9)"


def test_a_base_behind_a_package_re_export_is_followed(tmp_path: Path) -> None:
    files = tree(
        {
            "models/nano.py": """
            from torch import nn

            from sglang.srt.multimodal.evs import EVS


            class NanoVL(nn.Module, EVS):
                pass


            EntryClass = [NanoVL]
            """,
            "multimodal/evs/__init__.py": "from .evs_module import EVS, EVSConfig\n",
            "multimodal/evs/evs_module.py": """
            class EVSConfig:
                pass


            class EVS:
                def get_embed_and_head(self):
                    pass

                def set_eagle3_layers_to_capture(self, layer_ids=None):
                    pass
            """,
        }
    )
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    index = load_index(DirSource(tmp_path).tree())
    nano = index.classes_named("NanoVL")[0]
    assert "sglang.srt.multimodal.evs.evs_module:EVS" in index.mro(nano)[0]
    found = provision(index, nano, "get_embed_and_head")
    assert (found.how, found.where) == ("inherited", "EVS")
    assert (
        build_compat(index, build_interface("v1", index)).check_for("NanoVL", "EAGLE3").status
        == "ok"
    )
