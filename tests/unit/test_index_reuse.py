"""An index reuses, per module, what an earlier index built from the very same facts; the
result equals an index built from scratch (the facts copied, so nothing is reused)."""

from __future__ import annotations

from sgl_trees import SRT, tree

from tracker.analysis.index import VersionIndex
from tracker.extract.facts import ModuleFacts
from tracker.extract.parse import extract_facts
from tracker.sources.base import content_id

_FOO = """
class Foo:
    def __init__(self, config):
        self.model = Bar(config)

    @property
    def inner(self):
        return self.model

class Bar:
    pass
"""


def _facts(files: dict[str, str]) -> dict[str, ModuleFacts]:
    return {p: extract_facts(p, content_id(t.encode()), t.encode()) for p, t in files.items()}


def _copies(facts: dict[str, ModuleFacts]) -> dict[str, ModuleFacts]:
    """Equal facts in new objects: what the store hands out when it has to load again."""
    return {p: ModuleFacts(*f) for p, f in facts.items()}


def _state(index: VersionIndex) -> tuple[object, ...]:
    """Everything the modules put in the index, in its order."""
    return (
        list(index.classes.items()),
        list(index.functions.items()),
        list(index._imports.items()),
        list(index._returned_refs.items()),
    )


def test_an_index_of_the_same_facts_shares_their_classes_and_equals_a_fresh_one() -> None:
    facts = _facts(tree())
    first = VersionIndex(facts)
    again = VersionIndex(facts)
    fresh = VersionIndex(_copies(facts))
    shared = [k for k, info in again.classes.items() if info is first.classes[k]]
    assert shared == list(first.classes)
    assert not any(info is first.classes[k] for k, info in fresh.classes.items())
    assert _state(again) == _state(fresh) == _state(first)


def test_a_changed_module_is_indexed_anew_and_the_unchanged_ones_are_shared() -> None:
    facts = _facts(tree())
    first = VersionIndex(facts)
    changed = dict(facts)
    changed[SRT + "models/foo.py"] = _facts({SRT + "models/foo.py": _FOO})[SRT + "models/foo.py"]
    second = VersionIndex(changed)
    assert second.classes["sglang.srt.models.foo:Foo"].instance_attrs == {"model": [4]}
    assert all(second.classes[k] is info for k, info in first.classes.items())
    assert _state(second) == _state(VersionIndex(_copies(changed)))


def test_a_second_file_of_one_module_name_leaves_the_shared_classes_unchanged() -> None:
    foo = _facts({SRT + "foo.py": _FOO})
    # The package of the same name adds assignments to `Foo` without defining it.
    package = {
        SRT + "foo/__init__.py": foo[SRT + "foo.py"]._replace(
            path=SRT + "foo/__init__.py", classes=()
        )
    }
    first = VersionIndex(foo)
    again = VersionIndex(foo)
    again.add_modules(package)
    fresh = VersionIndex(_copies(foo))
    fresh.add_modules(_copies(package))
    assert first.classes["sglang.srt.foo:Foo"].instance_attrs == {"model": [4]}
    assert again.classes["sglang.srt.foo:Foo"].instance_attrs == {"model": [4, 4]}
    assert _state(again) == _state(fresh)
    assert _state(VersionIndex(foo)) == _state(first)


_MODEL = """
from sglang.srt.models.base import Base

class Model(Base):
    def __init__(self, config):
        self.inner = Base(config)
"""

_BASE = """
class Base:
    def get_embed_and_head(self):
        return None
"""


def test_answers_kept_with_an_index_are_dropped_when_a_module_is_added() -> None:
    from tracker.analysis.compat import delegations, provision

    model = _facts({SRT + "models/model.py": _MODEL})
    index = VersionIndex(model)
    cls = "sglang.srt.models.model:Model"
    # Base is not loaded yet: outside the index, no inner class, no resolved base.
    assert index.resolve_class("sglang.srt.models.model", "Base").external is not None
    assert index.attr_types(cls, "inner") == frozenset()
    assert provision(index, cls, "get_embed_and_head").how != "inherited"
    assert delegations(index, cls, "get_embed_and_head") == []
    index.add_modules(_facts({SRT + "models/base.py": _BASE}))
    base = "sglang.srt.models.base:Base"
    assert index.resolve_class("sglang.srt.models.model", "Base").symbol == base
    assert index.attr_types(cls, "inner") == frozenset({base})
    assert provision(index, cls, "get_embed_and_head").how == "inherited"
    assert [d.inner_key for d in delegations(index, cls, "get_embed_and_head")] == [base]


def test_reuse_keys_read_the_pins_as_the_analysis_does() -> None:
    """Pins count for what `ExternalBases` reads of them: the same versions read from a
    wheel or from a checkout's pyproject.toml are one key; a tree that pins nothing and is
    judged at its release's pins shares the interface but not the compat table (each
    provision names how its version was chosen); another version is another key."""
    from tracker.analysis.externals import load_inventory
    from tracker.analysis.reuse import content_key, interface_key
    from tracker.sources.base import Pins

    tag, pinned = next(iter(load_inventory().releases.items()))
    versions = tuple(sorted(pinned.items()))
    facts = _facts(tree({SRT + "models/foo.py": _FOO}))

    def keys(pins: Pins) -> tuple[object, object]:
        index = VersionIndex(facts, pins)
        return content_key(index), interface_key(index)

    wheel = keys(Pins(versions, "sglang-x.whl METADATA", tag))
    checkout = keys(Pins(versions, "python/pyproject.toml", tag))
    unpinned = keys(Pins((), "", tag))
    other_torch = next(v for v in load_inventory().packages["torch"] if v != pinned["torch"])
    moved = keys(Pins(tuple(sorted({**pinned, "torch": other_torch}.items())), "x", tag))
    assert wheel == checkout
    assert unpinned[1] == wheel[1] and unpinned[0] != wheel[0]
    assert moved[1] != wheel[1] and moved[0] != wheel[0]


def test_checks_are_reused_only_under_pins_read_the_same() -> None:
    """A check names the version an external base was judged at and how it was chosen:
    under pins that differ only in where they were read it is taken again, under pins
    that choose the same versions another way it is not."""
    from tracker.analysis.externals import load_inventory
    from tracker.analysis.reuse import CheckMemo
    from tracker.sources.base import Pins

    tag, pinned = next(iter(load_inventory().releases.items()))
    versions = tuple(sorted(pinned.items()))
    facts = _facts(tree({SRT + "models/foo.py": _FOO}))
    module = "sglang.srt.models.foo"
    row = ("sglang.srt.models.foo:Foo", "EAGLE3", "target")
    inputs = ("Foo", ("get_embed_and_head",), ((),), "")
    check = object()

    def taken_again(first: Pins, second: Pins) -> bool:
        memo = CheckMemo()
        memo.start(VersionIndex(facts, first), "rules")
        memo.put(row, inputs, check)
        memo.finish()
        memo.start(VersionIndex(facts, second), "rules")
        return memo.get(row, inputs, module) is check

    wheel = Pins(versions, "sglang-x.whl METADATA", tag)
    assert taken_again(wheel, Pins(versions, "python/pyproject.toml", tag))
    assert not taken_again(wheel, Pins((), "", tag))
