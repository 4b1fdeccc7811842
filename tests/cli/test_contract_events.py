"""Breaks and fixes of EAGLE3's aux-hidden-state contract as the commands report them, on
the real releases where they happen: Qwen2_5_VLForConditionalGeneration stops handing its aux
states to the logits processor at v0.5.5.post3 and does again at v0.5.6; the Qwen3.5
wrappers' capture is fixed at v0.5.22 (their setter wrote layer ids, the decoder read
per-layer flags). Each line must say it is the contract, with the rule and its sites."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from schema_check import errors
from sgl_trees import CAPTURE_LM, CAPTURE_LM_NO_PAIR, tree

Tracker = Callable[..., Result]

VL = "Qwen2_5_VLForConditionalGeneration"
QWEN35 = "Qwen3_5ForConditionalGeneration"
UNPACK = "ValueError: too many values to unpack (expected 2)"
# The commands, each run once for the module: name -> arguments.
COMMANDS: dict[str, list[str]] = {
    "broke": ["diff", "v0.5.5.post2", "v0.5.5.post3", "-a", "EAGLE3"],
    "broke.json": ["diff", "v0.5.5.post2", "v0.5.5.post3", "-a", "EAGLE3", "--format", "json"],
    "fixed": ["diff", "v0.5.5.post3", "v0.5.6", "-a", "EAGLE3"],
    "fixed.json": ["diff", "v0.5.5.post3", "v0.5.6", "-a", "EAGLE3", "--format", "json"],
    "qwen35": ["diff", "v0.5.21", "v0.5.22", "-a", "EAGLE3"],
    "qwen35.json": ["diff", "v0.5.21", "v0.5.22", "-a", "EAGLE3", "--format", "json"],
    "issues": ["issues", "v0.5.5.post2", "v0.5.5.post3", "-a", "EAGLE3", "--format", "json"],
    "changelog": ["changelog", "v0.5.5.post2", "v0.5.5.post3", "-a", "EAGLE3"],
    "triage": ["triage", UNPACK, "--at", "v0.5.11", "-m", QWEN35],
    "triage.json": [
        "triage",
        UNPACK,
        "--at",
        "v0.5.11",
        "-m",
        QWEN35,
        "-a",
        "EAGLE3",
        "--format",
        "json",
    ],
    "why": ["why", QWEN35, "--at", "v0.5.11"],
    "history": ["history", QWEN35, "v0.5.8..v0.5.23", "-a", "EAGLE3"],
    "fix": ["fix", VL, "--at", "v0.5.5.post3"],
}

pytestmark = pytest.mark.realdata


@pytest.fixture(scope="module")
def out(
    cli_run: Tracker,
    real_env: Callable[[], AbstractContextManager[None]],
    stocked_releases: Callable[..., Path],
) -> dict[str, Result]:
    # `fix` reads the release's source, not only its shipped snapshot: the archive must be
    # in the test cache before the commands run offline (an empty cache on a new machine).
    stocked_releases("v0.5.5.post3")
    with real_env():
        return {name: cli_run(*args, "--source", "pypi", "-q") for name, args in COMMANDS.items()}


def stdout(out: dict[str, Result], name: str) -> str:
    result = out[name]
    assert result.exit_code == 0, result.stderr
    return result.stdout


def document(out: dict[str, Result], name: str) -> Any:
    doc = json.loads(stdout(out, name))
    assert errors(doc) == []
    return doc


def change(doc: dict[str, Any], subject: str) -> dict[str, Any]:
    (found,) = [c for c in doc["changes"] if c["subject"] == subject]
    return found


# ------------------------------------------------------------------------------- diff


def test_qwen2_5_vl_breaks_the_contract_at_v0_5_5_post3_and_the_line_says_so(
    out: dict[str, Result],
) -> None:
    text = stdout(out, "broke")
    assert f"  ✗ {VL} (broke) · aux-hidden-state contract\n" in text
    assert (
        f"      aux hidden states never reach the logits: {VL}.forward unpacks "
        f"hidden_states, aux_hidden_states (qwen2_5_vl.py:575); {VL}.forward calls "
        "self.logits_processor without the aux states (qwen2_5_vl.py:579)\n"
    ) in text
    assert f"{VL} (broke) · missing" not in text
    found = change(document(out, "broke.json"), VL)
    assert (found["kind"], found["breaking"], found["new"]["missing"]) == (
        "model_wrapper_contract_broke",
        True,
        [],
    )
    assert [(f["rule"], [s["line"] for s in f["sites"]]) for f in found["new"]["contract"]] == [
        ("aux_not_to_logits", [575, 579])
    ]


def test_qwen2_5_vl_keeps_the_contract_again_at_v0_5_6(out: dict[str, Result]) -> None:
    assert (
        f"  ✓ fixed, the aux-hidden-state contract: {VL} (was: aux hidden states never "
        "reach the logits)\n"
    ) in stdout(out, "fixed")
    found = change(document(out, "fixed.json"), VL)
    assert found["kind"] == "model_wrapper_contract_fixed"
    assert found["message"] == f"{VL} no longer breaks EAGLE3's aux-hidden-state contract"
    assert (found["old"]["status"], found["new"]["status"], found["new"]["contract"]) == (
        "broken",
        "ok",
        [],
    )


def test_the_qwen3_5_wrappers_capture_is_fixed_at_v0_5_22_beside_member_fixes(
    out: dict[str, Result],
) -> None:
    text = stdout(out, "qwen35")
    assert "  ✓ fixed: Qwen3_5ForCausalLM, Qwen3_5MoeForCausalLM\n" in text
    assert (
        f"  ✓ fixed, the aux-hidden-state contract: InternS2MobiusForConditionalGeneration, "
        f"InternS2PreviewForConditionalGeneration, {QWEN35}, "
        "Qwen3_5MoeForConditionalGeneration (was: aux hidden states never captured)\n"
    ) in text
    found = change(document(out, "qwen35.json"), QWEN35)
    assert found["kind"] == "model_wrapper_contract_fixed"
    (finding,) = found["old"]["contract"]
    assert finding["rule"] == "capture_state_mismatch"
    # The setter's write, the decoder's read, and the wrapper's unpack that fails.
    assert [(s["path"].rpartition("/")[2], s["line"]) for s in finding["sites"]] == [
        ("qwen3_vl.py", 1771),
        ("qwen3_5.py", 1826),
        ("qwen3_vl.py", 1653),
    ]


# ----------------------------------------------------------------- issues, changelog


def test_the_contract_break_gets_its_own_issue_without_a_fix_patch(out: dict[str, Result]) -> None:
    doc = document(out, "issues")
    (issue,) = [i for i in doc["issues"] if i["report"]["subject"] == VL]
    assert issue["report"]["kind"] == "model_wrapper_contract_broke"
    assert issue["title"] == (
        f"[EAGLE3] {VL} breaks the aux-hidden-state contract: aux hidden "
        "states never reach the logits (broken since v0.5.5.post3)"
    )
    body = issue["body"]
    link = (
        "https://github.com/sgl-project/sglang/blob/v0.5.5.post3/python/sglang/srt/"
        "models/qwen2_5_vl.py#L"
    )
    assert f"[models/qwen2_5_vl.py:575]({link}575)" in body
    assert f"[models/qwen2_5_vl.py:579]({link}579)" in body
    assert "`tracker fix` writes no patch for a contract break" in body
    assert "```diff" not in body and "no longer provides" not in body


def test_the_changelog_lists_the_contract_break_with_its_sites(out: dict[str, Result]) -> None:
    text = stdout(out, "changelog")
    assert "1 wrapper broke (Qwen2_5_VLForConditionalGeneration)" in text
    assert (
        f"- `{VL}` breaks the aux-hidden-state contract: aux hidden states never reach "
        "the logits (" in text
    )


def test_watch_files_the_contract_break_and_closes_it_at_the_release_that_fixes_it(
    tracker: Tracker, tmp_path: Path
) -> None:
    result = tracker(
        "watch",
        "--out",
        str(tmp_path / "out"),
        "--state",
        str(tmp_path / "state.json"),
        "--since",
        "v0.5.5.post2",
        "--until",
        "v0.5.6",
        "-a",
        "EAGLE3",
        "--source",
        "pypi",
        "-q",
    )
    assert result.exit_code == 0, result.stderr
    index = json.loads((tmp_path / "out" / "issues.json").read_text())
    assert errors(index) == []
    (entry,) = index["issues"]
    assert (
        entry["report"]["kind"],
        entry["report"]["subject"],
        entry["state"],
        entry["fixed_in"],
    ) == ("model_wrapper_contract_broke", VL, "closed", "v0.5.6")
    assert entry["fixed_reason"] == (
        f"`{VL}` no longer breaks EAGLE3's aux-hidden-state contract at v0.5.6."
    )


# ------------------------------------------------------------------- triage, why, fix


def test_triage_of_the_unpack_error_explains_the_qwen3_5_capture_and_its_fix_release(
    out: dict[str, Result],
) -> None:
    text = stdout(out, "triage")
    assert (
        f"→ {QWEN35} breaks the aux-hidden-state contract EAGLE3 relies on at v0.5.11 (aux "
        "hidden states never captured): the decoder reads _is_layer_to_capture on "
        "model.layers[], which the setter never sets"
    ) in text
    # The contract break starts at v0.5.11; before it, since the class arrived at v0.5.9,
    # a member was missing: a break of another kind, named as such.
    assert (
        "  ✗ EAGLE3      broken · aux-hidden-state contract · since v0.5.11, where its "
        "aux-hidden-state contract broke (broken before that since v0.5.9: missing "
        "set_eagle3_layers_to_capture) · fixed in v0.5.22\n"
    ) in text
    assert (
        "        models/qwen3_vl.py:1403  set_eagle3_layers_to_capture writes "
        "self.model.layers_to_capture\n"
    ) in text
    assert (
        "        models/qwen3_5.py:1114  Qwen3_5ForCausalLM.forward reads "
        "layer._is_layer_to_capture (getattr)\n"
    ) in text
    assert "fix: upgrade to v0.5.22, or change the capture code" in text
    doc = document(out, "triage.json")
    (check,) = doc["checks"]
    assert (check["contract_matches"], check["fixed_in"], doc["fix_command"]) == (
        True,
        "v0.5.22",
        "",
    )


def test_why_on_the_class_shows_its_members_and_the_contract_finding(
    out: dict[str, Result],
) -> None:
    lines = stdout(out, "why").splitlines()
    assert lines[0] == (
        f"{QWEN35} at v0.5.11 for EAGLE3: broken (target model · "
        "python/sglang/srt/models/qwen3_5.py)"
    )
    assert (
        "  set_eagle3_layers_to_capture     inherited from Qwen3VLForConditionalGeneration" in lines
    )
    assert "  aux-hidden-state contract: broken" in lines
    assert (
        "      python/sglang/srt/models/qwen3_vl.py:1403  set_eagle3_layers_to_capture "
        "writes self.model.layers_to_capture"
    ) in lines


def test_fix_on_a_contract_only_break_is_one_line_and_exit_2(out: dict[str, Result]) -> None:
    result = out["fix"]
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"tracker: error: {VL} provides every member EAGLE3 requires at v0.5.5.post3 but "
        "breaks its aux-hidden-state contract (aux hidden states never reach the logits); "
        "tracker fix only adds missing members and writes no patch for that: "
        f"`tracker why {VL} --at v0.5.5.post3` shows the sites\n"
    )


# -------------------------------------------------------------- a tiny tree, offline


def write_tree(root: Path, overrides: dict[str, str]) -> Path:
    for path, text in tree(overrides).items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return root


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_why_and_fix_on_a_tiny_tree_whose_decoder_returns_no_pair(
    tmp_path: Path, cli_run: Tracker, fmt: str
) -> None:
    root = write_tree(tmp_path / "tree", {"models/dec.py": CAPTURE_LM_NO_PAIR})
    source = ["--at", "local", "--source", f"dir:{root}", "-q"]
    why = cli_run("why", "DecForCausalLM", *source, "--format", fmt)
    assert why.exit_code == 0, why.stderr
    if fmt == "json":
        doc = json.loads(why.stdout)
        assert errors(doc) == []
        assert [f["rule"] for f in doc["check"]["contract"]] == ["aux_never_returned"]
    else:
        assert (
            "    aux hidden states never returned: the inner forward never returns "
            "(hidden_states, aux_hidden_states)\n" in why.stdout
        )
        assert "      serving it: the inner forward returns a bare tensor" in why.stdout
    fix = cli_run("fix", "DecForCausalLM", *source)
    assert fix.exit_code == 2 and fix.stdout == ""
    assert "breaks its aux-hidden-state contract (aux hidden states never returned)" in fix.stderr


def test_history_says_the_qwen3_5_wrapper_breaks_the_contract_then_no_longer_does(
    out: dict[str, Result],
) -> None:
    lines = stdout(out, "history").splitlines()
    assert "  v0.5.9         appeared  broken · missing set_eagle3_layers_to_capture" in lines
    assert (
        "  v0.5.11        changed   broken · breaks the aux-hidden-state contract: "
        "aux hidden states never captured"
    ) in lines
    assert (
        "  v0.5.22        fixed     ok · no longer breaks the aux-hidden-state contract: "
        "aux hidden states never captured"
    ) in lines


# The setter hands the layer ids to an inner model whose class the analysis cannot find.
UNFOLLOWED_LM = CAPTURE_LM.replace(
    "self.model = DecModel(config)", "self.model = build_model(config)"
).replace(
    "self.model.layers_to_capture = [i + 1 for i in layer_ids]",
    "self.model.set_eagle3_layers_to_capture(layer_ids)",
)


def test_a_contract_not_followed_is_unknown_counted_and_fails_check_on_unknown(
    tmp_path: Path, cli_run: Tracker
) -> None:
    assert UNFOLLOWED_LM != CAPTURE_LM
    root = write_tree(tmp_path / "tree", {"models/dec.py": UNFOLLOWED_LM})
    source = ["local", "--source", f"dir:{root}", "-q", "-a", "EAGLE3", "-m", "DecForCausalLM"]
    doc = json.loads(cli_run("check", *source, "--format", "json").stdout)
    (row,) = doc["checks"]
    assert (row["status"], row["contract"]) == ("unknown", [])
    assert "the class of self.model is not known" in row["contract_unknown"]
    assert doc["counts"]["unknown"] == 1 and doc["counts"]["ok"] == 0
    text = cli_run("check", *source)
    assert text.exit_code == 0 and " 1 unknown, 0 ok" in text.stdout
    assert "contract not followed: " in text.stdout
    failed = cli_run("check", *source, "--fail-on", "unknown")
    assert failed.exit_code == 1
    assert cli_run("check", *source, "--fail-on", "broken").exit_code == 0


# v2 of a tiny tree: the decoder hands its aux list to layers that take it in **kwargs,
# and an EAGLE draft skips its base's __init__ but reads the flag that __init__ creates.
SWALLOWING_LM = CAPTURE_LM.replace(
    """            if i in self.layers_to_capture:
                aux_hidden_states.append(hidden_states)
            hidden_states = layer(hidden_states)
""",
    """            hidden_states = layer(
                hidden_states,
                captured=aux_hidden_states if i in self.layers_to_capture else None,
            )
""",
).replace(
    "class DecModel(nn.Module):",
    """class DecLayer(nn.Module):
    def forward(self, hidden_states, **kwargs):
        return self.mlp(hidden_states)


class DecModel(nn.Module):""",
)
DRAFT = """
from torch import nn

from sglang.srt.models.dec import DecForCausalLM, DecModel


class DecForCausalLMEagle(DecForCausalLM):
    def __init__(self, config):
        nn.Module.__init__(self)
        self.model = DecModel(config)
        self.logits_processor = LogitsProcessor(config)

    def set_embed_and_head(self, embed, head):
        self.embed, self.head = embed, head


EntryClass = [DecForCausalLMEagle]
"""
CREATING_DRAFT = DRAFT.replace(
    "        nn.Module.__init__(self)\n",
    "        nn.Module.__init__(self)\n        self.capture_aux_hidden_states = False\n",
)


@pytest.fixture
def contract_repo(make_git_repo: Callable[..., Path]) -> Path:
    assert SWALLOWING_LM.count("captured=") == 1 and CREATING_DRAFT != DRAFT
    ok = {"models/dec.py": CAPTURE_LM, "models/dec_eagle.py": CREATING_DRAFT}
    broken = {"models/dec.py": SWALLOWING_LM, "models/dec_eagle.py": DRAFT}
    return make_git_repo({"v1": tree(ok), "v2": tree(broken), "v3": tree(ok)})


def test_every_report_shows_a_swallowed_aux_list_and_a_draft_flag_as_contract_events(
    contract_repo: Path, cli_run: Tracker
) -> None:
    repo = ["--repo", str(contract_repo), "-q"]
    swallow = "DecLayer.forward takes captured in **kwargs and never reads it"
    skip = "DecForCausalLMEagle.__init__ calls nn.Module.__init__, skipping DecForCausalLM.__init__"
    outputs = {
        "diff": cli_run("diff", "v1", "v2", *repo),
        "diff-eagle": cli_run("diff", "v1", "v2", "-a", "EAGLE", *repo),
        "matrix": cli_run("matrix", "v1..v3", "-a", "EAGLE3", *repo),
        "history": cli_run("history", "DecForCausalLM", "v1..v3", "-a", "EAGLE3", *repo),
        "draft-history": cli_run("history", "DecForCausalLMEagle", "v1..v3", "-a", "EAGLE", *repo),
        "issues": cli_run("issues", "v1", "v2", "--format", "json", *repo),
        "changelog": cli_run("changelog", "v1", "v2", *repo),
    }
    for name, result in outputs.items():
        assert result.exit_code == 0, (name, result.stderr)
    assert swallow in outputs["diff"].stdout
    assert "aux hidden states never returned" in outputs["diff"].stdout
    assert skip in outputs["diff-eagle"].stdout
    matrix = outputs["matrix"].stdout.splitlines()
    assert "  v2  broke    DecForCausalLM · contract: aux hidden states never returned" in matrix
    # Under the event, where it breaks: the hand-over, the layer that drops it, the return.
    below = matrix[
        matrix.index("  v2  broke    DecForCausalLM · contract: aux hidden states never returned")
        + 1
    ]
    assert (
        below == "      DecModel.forward hands aux_hidden_states to layer as captured (dec.py:19)"
    )
    assert f"      {swallow} (dec.py:5)" in matrix
    history = outputs["history"].stdout.splitlines()
    assert f"                   {swallow} (dec.py:5)" in history
    assert "capture attribute never created" in outputs["draft-history"].stdout
    assert (
        f"                   {skip} (dec_eagle.py:8)"
        in outputs["draft-history"].stdout.splitlines()
    )
    issues = json.loads(outputs["issues"].stdout)
    # Markdown, so the underscores and stars are escaped.
    bodies = "\n".join(i["body"] for i in issues["issues"]).replace("\\", "")
    assert swallow in bodies and skip in bodies
    assert "its forward as the draft reads capture state" in bodies
    assert swallow in outputs["changelog"].stdout.replace("\\", "")
