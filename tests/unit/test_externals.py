"""The inventory of external base classes: validated on load, looked up at the package
versions a version of SGLang pins (or the nearest inventoried, said so), and the shipped file
itself built from the packages' real source."""

from __future__ import annotations

from typing import Any

import inventories
import pytest
from inventories import MODULE, doc, pins

from tracker.analysis.externals import (
    ExternalBases,
    InventoryError,
    load_inventory,
    parse_inventory,
)
from tracker.compare.snapshot import shipped_dir
from tracker.sources.versions import parse_version


def bases(**versions: str) -> ExternalBases:
    return ExternalBases(parse_inventory(inventories.DOC, "test"), pins(**versions))


def test_a_class_provides_its_members_and_those_of_its_bases_in_other_packages() -> None:
    found = bases(torch="2.9.1", transformers="4.57.1").lookup("transformers.PreTrainedModel")
    assert found is not None
    assert found.label == "transformers.PreTrainedModel (transformers 4.57.1)"
    assert {"config", "get_input_embeddings", "named_modules"} <= found.members
    assert "get_embed_and_head" not in found.members
    assert found.outside == ()


def test_the_pinned_version_decides_what_a_base_provides() -> None:
    found = bases(torch="2.9.1", transformers="5.3.0").lookup("transformers.PreTrainedModel")
    assert found is not None and "get_embed_and_head" in found.members


def test_a_pin_the_inventory_lacks_uses_the_nearest_version_and_says_so() -> None:
    found = bases(torch="2.9.1", transformers="5.4.0").lookup("transformers.PreTrainedModel")
    assert found is not None
    assert found.label == (
        "transformers.PreTrainedModel (transformers 5.3.0, nearest to the pinned 5.4.0)"
    )
    older = bases(transformers="4.50.0").lookup("transformers.PreTrainedModel")
    assert older is not None and "transformers 4.57.1, nearest to the pinned 4.50.0" in older.label


def test_a_tree_that_pins_nothing_uses_the_nearest_release_pin_and_says_so() -> None:
    found = bases(release="v0.5.9.post1").lookup("transformers.PreTrainedModel")
    assert found is not None
    assert found.label == (
        "transformers.PreTrainedModel (transformers 4.57.1, not pinned here: v0.5.9's pin)"
    )
    nameless = bases().lookup("transformers.PreTrainedModel")
    assert nameless is not None and "v0.5.10's pin" in nameless.label


def test_a_class_outside_the_inventory_is_not_found_and_outside_bases_are_named() -> None:
    ext = bases(torch="2.9.1", transformers="4.57.1")
    assert ext.lookup("transformers.GenerationMixin") is None
    assert ext.lookup("flax.linen.Module") is None
    mixin = ext.lookup("transformers.utils.hub.HubMixin")
    assert mixin is not None and mixin.outside == ("huggingface_hub.ModelHubMixin",)


def test_a_canonical_name_works_as_well_as_the_name_sglang_imports() -> None:
    ext = bases(torch="2.9.1")
    by_alias, by_name = ext.lookup("torch.nn.Module"), ext.lookup(MODULE)
    assert by_alias is not None and by_name is not None
    assert by_alias.members == by_name.members


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.update(extra=1), "unknown keys ['extra']"),
        (lambda d: d.update(schema="x"), "not an inventory"),
        (
            lambda d: d["packages"]["torch"]["2.9.1"]["classes"][MODULE].update(members="nope"),
            f"packages.torch.2.9.1.classes.{MODULE}: needs a known member set id",
        ),
        (
            lambda d: d["packages"]["torch"]["2.9.1"]["names"].update({"torch.nn.X": "torch.Y"}),
            "packages.torch.2.9.1.names.torch.nn.X names torch.Y, which has no entry",
        ),
        (
            lambda d: d["packages"]["torch"].update({"two": {"classes": {}, "names": {}}}),
            "packages.torch.two: 'two' is not a version",
        ),
        (
            lambda d: d["releases"].update({"v0.5.11": {"torch": 2}}),
            "releases.v0.5.11: versions must be strings",
        ),
    ],
)
def test_a_damaged_inventory_is_an_error_naming_the_entry(edit: Any, message: str) -> None:
    broken = doc()
    edit(broken)
    with pytest.raises(InventoryError, match=r"^the file: ") as raised:
        parse_inventory(broken, "the file")
    assert message in str(raised.value)


# -------------------------------------------------------------------- the shipped file


def test_the_shipped_inventory_pins_every_release_since_v0_4_10() -> None:
    shipped = load_inventory()
    releases = [p.stem for p in shipped_dir().glob("v*.json")]
    wanted = {v for v in releases if (found := parse_version(v)) and found.release >= (0, 4, 10)}
    assert {"v0.4.10", "v0.5.9", "v0.5.23"} <= wanted <= set(shipped.releases)
    assert shipped.releases["v0.5.9"] == {"torch": "2.9.1", "transformers": "4.57.1"}
    for tag, pinned in shipped.releases.items():
        for package, version in pinned.items():
            assert version in shipped.packages[package], (tag, package, version)


def test_the_shipped_inventory_has_nn_module_without_forward() -> None:
    ext = ExternalBases(load_inventory(), pins(torch="2.9.1", transformers="4.57.1"))
    module = ext.lookup("torch.nn.Module")
    assert module is not None and module.label == "torch.nn.Module (torch 2.9.1)"
    # nn.Module's forward raises NotImplementedError: a model without one has none.
    assert "forward" not in module.members
    assert {"named_modules", "modules", "training", "__call__", "to"} <= module.members


def test_the_shipped_inventory_has_pretrained_model_with_its_mixins_and_nn_module() -> None:
    shipped = load_inventory()
    for version in shipped.packages["transformers"]:
        ext = ExternalBases(shipped, pins(transformers=version, torch="2.9.1"))
        model = ext.lookup("transformers.PreTrainedModel")
        assert model is not None, version
        # From its mixins (PushToHubMixin, ModuleUtilsMixin) and from nn.Module.
        assert {"push_to_hub", "num_parameters", "named_modules", "config"} <= model.members
        assert not {"get_embed_and_head", "set_eagle3_layers_to_capture"} & model.members
        assert parse_version(version) is not None
