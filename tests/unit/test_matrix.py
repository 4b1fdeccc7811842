"""Events over a range of tiny trees: against the release before the range, a class already
there is "present" at the range's start and a class new there "appeared"."""

from __future__ import annotations

from sgl_trees import BASE, build

from tracker.compare.matrix import build_matrix
from tracker.compare.snapshot import Builder, Snapshot
from tracker.sources.base import SourceIdentity

MISTRAL = {
    "models/mistral.py": BASE["models/llama.py"].replace("LlamaForCausalLM", "MistralForCausalLM")
}
WITHOUT_CAPTURE = {
    "models/llama.py": BASE["models/llama.py"].replace(
        "    def set_eagle3_layers_to_capture(self, layer_ids=None):\n"
        "        self.layers = layer_ids\n",
        "",
    )
}


def snapshot(version: str, overrides: dict[str, str | None] | None = None) -> Snapshot:
    built = build(overrides, version)
    identity = SourceIdentity("git", "/repo", version, "r")
    return Snapshot(version, identity, "d", Builder("t", "q", "r"), built.interface, built.compat)


def events(
    snapshots: list[Snapshot], before: Snapshot | None = None, starts_history: bool = True
) -> set[tuple[str, str, str]]:
    m = build_matrix(snapshots, "EAGLE3", ("target",), before, starts_history)
    return {(e.version, e.kind, e.model) for e in m.events}


def test_against_the_release_before_a_class_already_there_is_present() -> None:
    found = events([snapshot("v2", MISTRAL)], before=snapshot("v1"), starts_history=False)
    assert found == {
        ("v2", "present", "LlamaForCausalLM"),
        ("v2", "present", "WrapperForConditionalGeneration"),
        ("v2", "appeared", "MistralForCausalLM"),
    }


def test_a_break_at_the_first_release_of_the_range_is_an_event() -> None:
    found = events([snapshot("v2", WITHOUT_CAPTURE)], before=snapshot("v1"))
    assert ("v2", "broke", "LlamaForCausalLM") in found


def test_when_the_release_before_cannot_be_read_every_class_is_present() -> None:
    found = events([snapshot("v2", MISTRAL)], starts_history=False)
    assert {kind for _, kind, _ in found} == {"present"}


def test_at_the_first_release_of_a_source_every_class_appeared() -> None:
    found = events([snapshot("v1"), snapshot("v2", MISTRAL)])
    assert {kind for version, kind, _ in found if version == "v1"} == {"appeared"}
