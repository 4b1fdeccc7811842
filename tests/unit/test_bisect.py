"""The bisect search on fake status functions, and the causes it gives on tiny SGLang trees
(a commit and its parent as two trees)."""

from __future__ import annotations

import math

import pytest
from sgl_trees import build, line_of

from tracker.analysis.compat import ModelCheck
from tracker.compare.bisect import (
    ABSENT,
    CauseKind,
    ModelState,
    explain_member,
    explain_model,
    first_change,
    member_signature,
)

COMMITS = [f"c{i:02d}" for i in range(17)]  # c00 is OLD, c16 is NEW


def _recording(statuses: dict[str, str]) -> tuple[list[str], object]:
    seen: list[str] = []

    def status(commit: str) -> str:
        seen.append(commit)
        return statuses[commit]

    return seen, status


@pytest.mark.parametrize("first_bad", range(1, len(COMMITS)))
def test_the_search_finds_the_first_changed_commit_wherever_it_is(first_bad: int) -> None:
    statuses = {c: "ok" if i < first_bad else "broken" for i, c in enumerate(COMMITS)}
    seen, status = _recording(statuses)
    search = first_change(COMMITS, status)  # type: ignore[arg-type]
    assert search.first == first_bad
    # The found commit and its parent were both evaluated, each commit at most once,
    # and no more than the two ends plus ceil(log2) of the commits between them.
    assert {COMMITS[first_bad], COMMITS[first_bad - 1]} <= set(seen)
    assert len(seen) == len(set(seen)) == search.evaluated
    assert search.evaluated <= 2 + math.ceil(math.log2(len(COMMITS) - 1))


def test_a_range_without_a_change_evaluates_only_its_ends() -> None:
    seen, status = _recording(dict.fromkeys(COMMITS, "ok"))
    search = first_change(COMMITS, status)  # type: ignore[arg-type]
    assert search.first is None
    assert seen == [COMMITS[0], COMMITS[-1]]


def test_a_model_broken_at_every_commit_has_nothing_to_bisect() -> None:
    search = first_change(COMMITS, lambda commit: "broken")
    assert search.first is None and search.evaluated == 2


def test_a_class_that_appears_broken_is_found_at_the_commit_that_adds_it() -> None:
    statuses = {c: ABSENT if i < 11 else "broken" for i, c in enumerate(COMMITS)}
    assert first_change(COMMITS, statuses.__getitem__).first == 11


def test_two_commits_are_the_smallest_history() -> None:
    assert first_change(["a", "b"], {"a": "ok", "b": "broken"}.__getitem__).first == 1
    with pytest.raises(ValueError):
        first_change(["a"], lambda commit: "ok")


# ------------------------------------------------------------------------- causes

WRAPPER = "WrapperForConditionalGeneration"
LLAMA = "LlamaForCausalLM"
RUNNER = "model_executor/model_runner.py"


def _state(built: object, model: str) -> ModelState:
    compat, interface = built.compat, built.interface  # type: ignore[attr-defined]
    check = compat.check_for(model, "EAGLE3", "target")
    assert check is None or isinstance(check, ModelCheck)
    return ModelState(check.status if check else ABSENT, check, interface)


def test_a_new_class_is_explained_by_the_members_it_arrives_without() -> None:
    before = build({"models/wrapper.py": None})
    after = build()
    [cause] = explain_model(
        _state(before, WRAPPER), _state(after, WRAPPER), WRAPPER, "EAGLE3", "target"
    )
    assert cause.kind is CauseKind.CLASS_ADDED
    assert cause.text == ("new class without `get_embed_and_head`, `set_eagle3_layers_to_capture`")


def test_a_removed_method_is_explained_as_removed_from_the_class() -> None:
    without = {
        "models/llama.py": """
        from torch import nn


        class LlamaForCausalLM(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.model = config.build()

            def set_eagle3_layers_to_capture(self, layer_ids=None):
                self.layers = layer_ids


        EntryClass = LlamaForCausalLM
        """
    }
    before, after = _state(build(), LLAMA), _state(build(without), LLAMA)
    assert (before.status, after.status) == ("ok", "broken")
    [cause] = explain_model(before, after, LLAMA, "EAGLE3", "target")
    assert cause.kind is CauseKind.PROVISION_REMOVED
    assert cause.text == (
        "removes `get_embed_and_head` from `LlamaForCausalLM` (was defined in the class)"
    )


# A wrapper with the embedding member only: fine until the runner asks for the setter.
EMBED_ONLY = {
    "models/wrapper.py": """
    from torch import nn


    class WrapperForConditionalGeneration(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.embed = config.embed

        def get_embed_and_head(self):
            return self.embed, None


    EntryClass = [WrapperForConditionalGeneration]
    """
}


def test_a_new_call_in_the_runner_is_explained_with_its_site() -> None:
    before = build({**EMBED_ONLY, RUNNER: _runner_without_setter()})
    after = build(EMBED_ONLY)
    old, new = _state(before, WRAPPER), _state(after, WRAPPER)
    assert (old.status, new.status) == ("ok", "broken")
    line = line_of(None, RUNNER, "set_eagle3_layers_to_capture")
    assert [(c.kind, c.text) for c in explain_model(old, new, WRAPPER, "EAGLE3", "target")] == [
        (
            CauseKind.REQUIREMENT_ADDED,
            f"adds a call to `set_eagle3_layers_to_capture` at model_runner.py:{line}",
        )
    ]


def test_member_mode_sees_a_call_appear_and_names_its_site() -> None:
    before, after = build({RUNNER: _runner_without_setter()}), build()
    name = "set_eagle3_layers_to_capture"
    assert member_signature(before.interface, name, "EAGLE3") == ()
    assert member_signature(after.interface, name, "EAGLE3") != ()
    [cause] = explain_member(before.interface, after.interface, name, "EAGLE3")
    assert cause.kind is CauseKind.REQUIREMENT_ADDED
    assert cause.line == line_of(None, RUNNER, name)


def _runner_without_setter() -> str:
    from sgl_trees import BASE

    text = BASE[RUNNER].replace("self.model.set_eagle3_layers_to_capture([1, 2])", "pass")
    assert text != BASE[RUNNER]
    return text
