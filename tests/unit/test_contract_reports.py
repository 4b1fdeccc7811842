"""A break of EAGLE3's aux-hidden-state contract, on a tiny tree whose causal LM has every
member, as each report shows it: a model event of its own kind in the diff (text, markdown,
JSON), its own issue (no `tracker fix` patch), the changelog, `triage` of the unpack
ValueError, and `check` saying when the contract could not be followed."""

from __future__ import annotations

import json
from functools import cache

import pytest
from schema_check import errors
from sgl_trees import (
    CAPTURE_LM,
    CAPTURE_LM_DROPS_AUX,
    CAPTURE_LM_NO_PAIR,
    Built,
    build,
    line_of,
)

from tracker.compare.diff import Diff, diff
from tracker.release.changelog import changelog_document
from tracker.release.issues import IssueFacts, build_issues, fixed_reason
from tracker.release.triage import parse_error, triage_document
from tracker.render.documents import RenderOptions, check_document, diff_document, render
from tracker.render.sarif import check_sarif

DEC = "models/dec.py"
MODEL = "DecForCausalLM"
OK, NO_PAIR = {DEC: CAPTURE_LM}, {DEC: CAPTURE_LM_NO_PAIR}
DROPS_AUX = {DEC: CAPTURE_LM_DROPS_AUX}
# A wrapper that skips its parent's __init__, which created the capture flag it reads.
SKIPPING = CAPTURE_LM.replace(
    "EntryClass = DecForCausalLM",
    """
class DecVLForConditionalGeneration(DecForCausalLM):
    def __init__(self, config):
        nn.Module.__init__(self)
        self.model = DecModel(config)
        self.logits_processor = LogitsProcessor(config)

    def set_eagle3_layers_to_capture(self, layer_ids=None):
        self.model.layers_to_capture = [i + 1 for i in layer_ids]


EntryClass = [DecForCausalLM, DecVLForConditionalGeneration]
""",
)


@cache
def _built(text: str, version: str) -> Built:
    return build({DEC: text}, version)


def built(overrides: dict[str, str], version: str) -> Built:
    return _built(overrides[DEC], version)


def pair(old: dict[str, str], new: dict[str, str]) -> tuple[Built, Built, Diff]:
    a, b = built(old, "v1"), built(new, "v2")
    return a, b, diff(a.interface, a.compat, b.interface, b.compat, ("EAGLE3",))


def line(needle: str, text: str = CAPTURE_LM) -> int:
    return line_of({DEC: text}, DEC, needle)


UNPACK = line("hidden_states, aux_hidden_states = hidden_states")
DECODER_FORWARD = line("    def forward(self, input_ids):")


# ------------------------------------------------------------------------------ diff


def test_a_class_with_every_member_whose_contract_breaks_is_a_contract_break_event() -> None:
    _a, _b, d = pair(OK, NO_PAIR)
    (change,) = d.changes
    assert (change.kind, change.subject, change.breaking, change.notable) == (
        "model_wrapper_contract_broke",
        MODEL,
        True,
        True,
    )
    assert change.message == (
        f"{MODEL} provides the members but breaks EAGLE3's aux-hidden-state contract"
    )


def test_the_diff_text_names_the_rule_and_both_sites_not_missing_members() -> None:
    _a, _b, d = pair(OK, NO_PAIR)
    text = render("diff", "text", diff_document(d, "dir:/tree"))
    assert "model wrappers · 1 new break (1 regression, 0 new classes)," in text
    assert f"  ✗ {MODEL} (broke) · aux-hidden-state contract\n" in text
    assert (
        f"      aux hidden states never returned: {MODEL}.forward unpacks hidden_states, "
        f"aux_hidden_states (dec.py:{UNPACK}); DecModel.forward returns no pair "
        f"(dec.py:{DECODER_FORWARD})\n"
    ) in text
    assert "missing" not in text and "no longer provides" not in text


def test_the_diff_markdown_links_both_sites_of_a_contract_break_at_the_new_tag() -> None:
    _a, _b, d = pair(OK, NO_PAIR)
    md = render("diff", "md", diff_document(d, "dir:/tree"))
    assert (
        f"- **broke, the aux-hidden-state contract**: {MODEL} provides the members but breaks"
    ) in md
    link = "https://github.com/sgl-project/sglang/blob/v2/python/sglang/srt/models/dec.py#L"
    assert f"([models/dec.py:{UNPACK}]({link}{UNPACK}))" in md
    assert f"([models/dec.py:{DECODER_FORWARD}]({link}{DECODER_FORWARD}))" in md


def test_the_diff_json_carries_the_finding_and_validates() -> None:
    _a, _b, d = pair(OK, NO_PAIR)
    # With the fix options `tracker diff` adds.
    doc = json.loads(
        render("diff", "json", {**diff_document(d, "dir:/tree"), "fix_options": "--at dir:/tree"})
    )
    (change,) = doc["changes"]
    assert change["kind"] == "model_wrapper_contract_broke"
    assert [f["rule"] for f in change["new"]["contract"]] == ["aux_never_returned"]
    assert [s["line"] for s in change["new"]["contract"][0]["sites"]] == [UNPACK, DECODER_FORWARD]
    assert change["old"]["contract"] == []
    assert errors(doc) == []


def test_a_contract_fix_is_listed_as_fixed_with_the_rule_it_no_longer_breaks() -> None:
    _a, _b, d = pair(NO_PAIR, OK)
    assert [c.kind for c in d.changes] == ["model_wrapper_contract_fixed"]
    text = render("diff", "text", diff_document(d, "dir:/tree"))
    assert "0 new breaks (0 regressions, 0 new classes), 1 fixed," in text
    assert (
        f"  ✓ fixed, the aux-hidden-state contract: {MODEL} (was: aux hidden states never returned)"
    ) in text
    md = render("diff", "md", diff_document(d, "dir:/tree"))
    assert "  - was: aux hidden states never returned: " in md
    assert "/blob/v1/python/sglang/srt/models/dec.py" in md  # the old sites, at the old tag


# ---------------------------------------------------------------------------- issues


def test_a_contract_break_files_an_issue_with_both_sites_and_no_fix_patch() -> None:
    a, b, d = pair(OK, NO_PAIR)
    (issue,) = build_issues(
        d, a.interface, b.interface, b.compat, source="dir:/tree", options=RenderOptions()
    )
    assert issue.report.kind == "model_wrapper_contract_broke"
    assert issue.title == (
        f"[EAGLE3] {MODEL} breaks the aux-hidden-state contract: aux hidden "
        "states never returned (broken since v2)"
    )
    assert "regression" in issue.labels
    body = issue.body
    assert (
        "provides every member **EAGLE3** requires of the target model "
        "(`get_embed_and_head`, `set_eagle3_layers_to_capture`)" in body
    )
    assert f"[models/dec.py:{UNPACK}](" in body and f"[models/dec.py:{DECODER_FORWARD}](" in body
    assert "ValueError: too many values to unpack (expected 2)" in body
    assert "`tracker fix` writes no patch for a contract break" in body
    assert "```diff" not in body and "tracker fix DecForCausalLM" not in body
    assert "in v1 it provided the members too" in body


def test_a_contract_break_and_a_member_break_of_one_class_at_one_release_differ() -> None:
    contract = IssueFacts("model_wrapper_contract_broke", "EAGLE3", "target", MODEL, "v2", "v1")
    members = IssueFacts("model_wrapper_broke", "EAGLE3", "target", MODEL, "v2", "v1")
    assert contract.fingerprint != members.fingerprint


def test_a_contract_issue_is_fixed_when_the_class_is_ok_but_not_when_unfollowed() -> None:
    report = IssueFacts("model_wrapper_contract_broke", "EAGLE3", "target", MODEL, "v2", "v1")
    later = built(OK, "v3")
    assert fixed_reason(report, later.interface, later.compat) == (
        f"`{MODEL}` no longer breaks EAGLE3's aux-hidden-state contract at v3."
    )
    # A forward the contract cannot follow leaves the check ok, and proves nothing.
    unfollowed = build(
        {
            DEC: CAPTURE_LM.replace(
                "    def forward(self, input_ids, batch)", "    def run(self, input_ids, batch)"
            )
        },
        "v3",
    )
    check = unfollowed.compat.check_for(MODEL, "EAGLE3")
    assert check is not None and (check.status, check.contract_unknown) == (
        "ok",
        "no forward to follow",
    )
    assert fixed_reason(report, unfollowed.interface, unfollowed.compat) is None


# ------------------------------------------------------------------------- changelog


def test_the_changelog_says_which_contract_broke_and_which_was_fixed() -> None:
    _a, b, d = pair(OK, DROPS_AUX)
    doc = changelog_document(d, b.interface, b.compat, "dir:/tree")
    assert errors({**doc, "fix_options": "--at dir:/tree"}) == []  # as `tracker changelog`
    md = render("changelog", "md", doc)
    assert (
        f"- `{MODEL}` breaks the aux-hidden-state contract: aux hidden states never "
        "reach the logits (" in md
    )
    assert "1 wrapper broke (DecForCausalLM)" in md
    _a, b, d = pair(NO_PAIR, OK)
    md = render("changelog", "md", changelog_document(d, b.interface, b.compat, "dir:/tree"))
    assert (
        f"- `{MODEL}` no longer breaks the aux-hidden-state contract (was: aux hidden "
        "states never returned)" in md
    )


# ---------------------------------------------------------------------------- triage


@pytest.mark.parametrize(
    "message",
    [
        "ValueError: too many values to unpack (expected 2)",
        "    hidden_states, aux_hidden_states = hidden_states\n"
        "ValueError: too many values to unpack (expected 2, got 4096)",
        "ValueError: not enough values to unpack (expected 2, got 1)",
    ],
)
def test_each_wording_of_the_unpack_error_is_understood(message: str) -> None:
    parsed = parse_error(message)
    assert (parsed.form, parsed.owner, parsed.member) == ("unpack", "", "")
    assert parsed.text.startswith("ValueError: ")


def test_triage_of_the_unpack_error_names_the_finding_its_sites_and_the_fix_release() -> None:
    broken, fixed = built(NO_PAIR, "v1"), built(OK, "v2")
    doc = triage_document(
        parse_error("ValueError: too many values to unpack (expected 2)"),
        broken.interface,
        broken.compat,
        ("EAGLE3",),
        "dir:/tree",
        later=[("v2", fixed.compat)],
        model=MODEL,
    )
    assert errors({**doc, "version_from": "--at"}) == []  # as `tracker triage` adds it
    assert doc["verdict"] == (
        f"{MODEL} breaks the aux-hidden-state contract EAGLE3 relies on at v1 (aux hidden "
        "states never returned): the inner forward never returns (hidden_states, "
        "aux_hidden_states)"
    )
    (check,) = doc["checks"]
    assert (check["contract_matches"], check["fixed_in"]) == (True, "v2")
    text = render("triage", "text", doc)
    assert f"        models/dec.py:{UNPACK}  {MODEL}.forward unpacks" in text
    assert "fix: upgrade to v2, or change the capture code (tracker fix writes no patch" in text
    assert doc["fix_command"] == "" and doc["patch"] is None


def test_without_a_class_triage_of_the_unpack_error_finds_the_classes_it_can_be() -> None:
    broken = built(NO_PAIR, "v1")
    doc = triage_document(
        parse_error("too many values to unpack (expected 2)"),
        broken.interface,
        broken.compat,
        ("EAGLE3",),
        "dir:/tree",
    )
    assert [m["name"] for m in doc["models"]] == [MODEL]
    ok = built(OK, "v1")
    doc = triage_document(
        parse_error("too many values to unpack (expected 2)"),
        ok.interface,
        ok.compat,
        ("EAGLE3",),
        "dir:/tree",
    )
    assert doc["models"] == [] and doc["verdict"].startswith("no entry class at v1 breaks")


def test_a_contract_break_that_raises_no_unpack_error_is_said_not_to_explain_it() -> None:
    drops = built(DROPS_AUX, "v1")
    doc = triage_document(
        parse_error("too many values to unpack (expected 2)"),
        drops.interface,
        drops.compat,
        ("EAGLE3",),
        "dir:/tree",
        model=MODEL,
    )
    assert doc["checks"][0]["contract_matches"] is False
    assert doc["verdict"] == (
        f"{MODEL} breaks the aux-hidden-state contract at v1, but not in a "
        "way that raises this error (aux hidden states never reach the "
        "logits)"
    )


def test_an_attribute_error_on_a_capture_flag_nothing_created_is_the_contract() -> None:
    vl = "DecVLForConditionalGeneration"
    tree = built({DEC: SKIPPING}, "v1")
    check = tree.compat.check_for(vl, "EAGLE3")
    assert check is not None and [f.rule for f in check.contract] == ["capture_attribute_missing"]
    # The crash names the attribute on the wrapper's own object.
    error = parse_error(
        f"AttributeError: '{vl}' object has no attribute 'capture_aux_hidden_states'"
    )
    doc = triage_document(error, tree.interface, tree.compat, ("EAGLE3",), "dir:/tree")
    assert doc["checks"][0]["contract_matches"] is True
    assert doc["verdict"].startswith(
        f"{vl} breaks the aux-hidden-state contract EAGLE3 relies "
        "on at v1 (capture attribute never created)"
    )
    assert errors({**doc, "version_from": "--at"}) == []


# ----------------------------------------------------------------------------- check


def test_check_shows_a_contract_it_could_not_follow_only_on_rows_it_shows() -> None:
    # The base tree's LlamaForCausalLM has the members and no forward to follow.
    base = build({}, "v1")
    checks = [c for c in base.compat.checks if c.algorithm == "EAGLE3" and c.role == "target"]
    llama = next(c for c in checks if c.model == "LlamaForCausalLM")
    assert (llama.status, llama.contract_unknown) == ("ok", "no forward to follow")
    doc = check_document(base.compat, checks, "v1", "v1", "dir:/tree")
    doc["requirements"] = {}
    doc["explain_kinds"] = False  # as `tracker check` sets them
    doc["fix_options"] = "--at v1"
    quiet = render("check", "text", {**doc, "show_all": False})
    assert "not followed" not in quiet
    shown = render("check", "text", {**doc, "show_all": True})
    assert "    contract not followed: no forward to follow\n" in shown
    assert "contract not followed: no forward to follow |" in render(
        "check", "md", {**doc, "show_all": True}
    )


def test_sarif_puts_a_contract_break_in_the_class_file_with_every_site_related() -> None:
    b = built(NO_PAIR, "v1")
    checks = [c for c in b.compat.checks if c.model == MODEL and c.algorithm == "EAGLE3"]
    doc = check_document(b.compat, checks, "v1", "v1", "dir:/tree")
    doc["requirements"] = {}
    entry = next(e for e in b.compat.entries if e.name == MODEL)
    log = check_sarif(doc, RenderOptions(), {MODEL: entry.line})
    (result,) = log["runs"][0]["results"]
    assert (result["ruleId"], result["properties"]["rules"]) == (
        "model_wrapper_contract_broken",
        ["aux_never_returned"],
    )
    (primary,) = result["locations"]
    assert primary["physicalLocation"] == {
        "artifactLocation": {"uri": entry.path},
        "region": {"startLine": entry.line},
    }
    related = [
        (loc["physicalLocation"]["region"]["startLine"], loc["message"]["text"])
        for loc in result["relatedLocations"]
    ]
    assert [line for line, _ in related] == [UNPACK, DECODER_FORWARD]
    assert all(text for _, text in related)
