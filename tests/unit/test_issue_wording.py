"""The words of an issue match what happened to the class: a wrapper that worked and now
lacks a member the algorithm newly requires did not regress, the interface moved."""

from __future__ import annotations

from sgl_trees import BASE, build

from tracker.compare.diff import diff
from tracker.release.issues import IssueDoc, build_issues
from tracker.render.documents import RenderOptions

CALL = "        embed, head = self.target_worker.model_runner.model.get_embed_and_head()\n"
NEW_MEMBER = {
    "speculative/eagle_worker.py": BASE["speculative/eagle_worker.py"].replace(
        CALL, CALL + "        self.target_worker.model_runner.model.brand_new_member()\n"
    )
}
LLAMA_WITHOUT_CAPTURE = {
    "models/llama.py": BASE["models/llama.py"].replace(
        "    def set_eagle3_layers_to_capture(self, layer_ids=None):\n"
        "        self.layers = layer_ids\n",
        "",
    )
}


def issues(old: dict[str, str | None], new: dict[str, str | None]) -> dict[str, IssueDoc]:
    a, b = build(old, "v1"), build(new, "v2")
    d = diff(a.interface, a.compat, b.interface, b.compat, ("EAGLE3",))
    docs = build_issues(
        d, a.interface, b.interface, b.compat, source="git:/r", options=RenderOptions()
    )
    return {doc.report.subject: doc for doc in docs if doc.report.kind == "model_wrapper_broke"}


def test_a_member_newly_required_of_a_class_that_worked_is_not_called_a_regression() -> None:
    issue = issues({}, NEW_MEMBER)["LlamaForCausalLM"]
    assert issue.title == (
        "[EAGLE3] LlamaForCausalLM lacks brand_new_member, newly required of the target "
        "model (broken since v2)"
    )
    assert "regression" not in issue.labels
    assert "interface-change" in issue.labels
    assert "it provided these members" not in issue.body
    assert "### Where EAGLE3 requires it (v2)" in issue.body  # one member
    assert (
        "**v2**: EAGLE3 now requires of the target model `brand_new_member`, which it did "
        "not require in v1, where the class provided everything required; the class never "
        "provided it."
    ) in issue.body


def test_a_member_the_class_provided_and_lost_is_still_a_regression() -> None:
    issue = issues({}, LLAMA_WITHOUT_CAPTURE)["LlamaForCausalLM"]
    assert issue.title == (
        "[EAGLE3] LlamaForCausalLM no longer provides set_eagle3_layers_to_capture "
        "(broken since v2)"
    )
    assert "regression" in issue.labels
    assert "**v2**: it provided these members in v1:\n- `set_eagle3_layers_to_capture`" in (
        issue.body
    )
    assert "newly required" not in issue.body


def test_a_class_that_lost_one_member_while_another_became_required_says_both() -> None:
    overrides = {**NEW_MEMBER, **LLAMA_WITHOUT_CAPTURE}
    issue = issues({}, overrides)["LlamaForCausalLM"]
    assert "regression" in issue.labels
    assert "it provided these members in v1:\n- `set_eagle3_layers_to_capture`" in issue.body
    assert "besides, EAGLE3 now requires of the target model `brand_new_member`" in issue.body
    assert "### Where EAGLE3 requires them (v2)" in issue.body  # two
    # The title too tells the member it lost from the one it never had.
    assert issue.title == (
        "[EAGLE3] LlamaForCausalLM no longer provides set_eagle3_layers_to_capture and lacks "
        "brand_new_member, newly required of the target model (broken since v2)"
    )


def test_a_target_member_newly_required_gets_an_issue_listing_the_classes_lacking_it() -> None:
    # (No release adds a target member to an algorithm it already had: this tree does.)
    a, b = build(None, "v1"), build(NEW_MEMBER, "v2")
    d = diff(a.interface, a.compat, b.interface, b.compat, ("EAGLE3",))
    docs = build_issues(
        d, a.interface, b.interface, b.compat, source="git:/r", options=RenderOptions()
    )
    found = [doc for doc in docs if doc.report.kind == "member_now_required"]
    assert [(doc.report.role, doc.report.subject) for doc in found] == [
        ("target", "brand_new_member")
    ]
    assert found[0].title == ("[EAGLE3] the target model must now provide brand_new_member (v2)")
    assert "interface-change" in found[0].labels
    assert "target model classes registered at v2 lack it:" in found[0].body
