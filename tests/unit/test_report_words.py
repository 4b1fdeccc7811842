"""One vocabulary in every format: markdown names a change with the words text uses, never
the kind's identifier, and a class that never took an algorithm up is "unsupported", not
"broken", in `check`'s text and markdown."""

from __future__ import annotations

import re

import pytest
from sgl_trees import BASE, build

from tracker.compare.changes import ChangeKind
from tracker.compare.diff import diff
from tracker.compare.support import Support, support_of
from tracker.render.documents import RenderOptions, check_document, diff_document, render

NEW_VL = {
    "models/new_vl.py": BASE["models/wrapper.py"].replace(
        "WrapperForConditionalGeneration", "NewVLForConditionalGeneration"
    )
}
# A class alone in its file, with no inner model and none of the members.
BARE = {
    "models/bare.py": (
        "from torch import nn\n\n\n"
        "class BareForCausalLM(nn.Module):\n"
        "    def __init__(self, config):\n"
        "        super().__init__()\n\n\n"
        "EntryClass = BareForCausalLM\n"
    )
}
LLAMA_WITHOUT_CAPTURE = {
    "models/llama.py": BASE["models/llama.py"].replace(
        "    def set_eagle3_layers_to_capture(self, layer_ids=None):\n"
        "        self.layers = layer_ids\n",
        "",
    )
}


@pytest.mark.parametrize("kind", list(ChangeKind))
def test_every_change_kind_has_human_words_of_its_own(kind: ChangeKind) -> None:
    assert kind.label and "_" not in kind.label
    assert kind.label_for(new_break=True)


def test_markdown_names_each_change_with_its_words_not_its_identifier() -> None:
    a, b = build({}, "v1"), build({**NEW_VL, **BARE}, "v2")
    doc = diff_document(diff(a.interface, a.compat, b.interface, b.compat, ("EAGLE3",)), "t")
    every = RenderOptions(show_all=True)
    md = render("diff", "md", doc, every)
    text = render("diff", "text", doc, every)
    assert re.findall(r"\*\*([a-z]+(?:_[a-z]+)+)\*\*", md) == []
    # A new class lacking what its inner model has is a new break in both formats; one
    # that, like its neighbours, never had the members is new and unsupported in both.
    assert "- **new, broken**: new class NewVLForConditionalGeneration lacks" in md
    assert "✗ NewVLForConditionalGeneration (new)" in text
    assert "- **new, unsupported**: new class BareForCausalLM lacks" in md
    assert "· new, unsupported: BareForCausalLM" in text


def test_a_class_that_never_took_the_algorithm_up_is_unsupported_in_check() -> None:
    built = build({**NEW_VL, **BARE, **LLAMA_WITHOUT_CAPTURE}, "v1")
    checks = [c for c in built.compat.checks if c.algorithm == "EAGLE3" and c.role == "target"]
    standing = {c.model: support_of(c, built.compat) for c in checks}
    # Bare lacks everything, and nothing near it has the members: unsupported. Llama lacks
    # one member but provides the other; the wrappers' inner model (Llama) still provides
    # get_embed_and_head: broken, worth fixing.
    assert standing == {
        "BareForCausalLM": Support.UNSUPPORTED,
        "LlamaForCausalLM": Support.BROKEN,
        "NewVLForConditionalGeneration": Support.BROKEN,
        "WrapperForConditionalGeneration": Support.BROKEN,
    }
    doc = check_document(built.compat, checks, "v1", "v1", "t")
    doc.update(requirements={}, show_all=False, explain_kinds=False, fix_options="--at v1")
    text = render("check", "text", doc).splitlines()
    assert text[0] == "sglang v1 · 3 broken, 1 unsupported, 0 unknown, 0 ok"
    assert "· BareForCausalLM · EAGLE3 · target model · unsupported · models/bare.py" in text
    md = render("check", "md", doc)
    assert "3 broken, 1 unsupported, 0 unknown, 0 ok." in md
    assert "| `BareForCausalLM` | EAGLE3 | unsupported |" in md
