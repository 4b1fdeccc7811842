"""What the reports say on the real releases where a new user found them wrong: a new
class arriving broken, requirements that are not, a site moved to another file, the role
a member belongs to, commands suggested for a directory, reversed and partial ranges,
one member used two ways, and since when a crash's break exists."""

from __future__ import annotations

import json
import re
import shlex
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from tracker.cli import cli

pytestmark = pytest.mark.realdata

KIMI = "KimiK25ForConditionalGeneration"
Invoke = Callable[..., Result]


# The releases these commands read from their archives (facts, fix and triage read
# v0.5.9's source); the rest answer from shipped snapshots. The release list is stocked too:
# the commands never ask the package index, so nothing may be left to an earlier test.
ARCHIVES = ("v0.5.9",)


@pytest.fixture
def tracker(use_real_cache: Path, stocked_releases: Callable[..., Path]) -> Invoke:
    stocked_releases(*ARCHIVES)

    def invoke(*args: str, stdin: str | None = None) -> Result:
        return CliRunner(env={"TRACKER_PIP": "false", "NO_COLOR": "1"}).invoke(
            cli, [*args, "-q"], input=stdin, color=False
        )

    return invoke


def test_a_new_class_arriving_broken_fails_new_breaks(tracker: Invoke) -> None:
    result = tracker("diff", "v0.5.8", "v0.5.9", "-a", "EAGLE3", "--fail-on", "new-breaks")
    assert result.exit_code == 1, result.stderr
    assert "model wrappers · 3 new breaks (0 regressions, 3 new classes)" in result.stdout
    assert (
        f"✗ {KIMI} (new) · missing get_embed_and_head, set_eagle3_layers_to_capture"
        in result.stdout
    )


def test_dspark_asks_nothing_a_model_has_anyway_nor_what_an_error_message_reads(
    tracker: Invoke,
) -> None:
    result = tracker("diff", "v0.5.15.post1", "v0.5.16", "-a", "DSPARK", "--format", "json")
    assert result.exit_code == 0, result.stderr
    subjects = {c["subject"] for c in json.loads(result.stdout)["changes"]}
    assert "__class__" not in subjects
    # What DSPARK does need of the target is still there: a capture hook, the head and the
    # input embeddings (not get_embed_and_head, which no DSPARK worker calls).
    assert {"set_dspark_layers_to_capture", "lm_head", "get_input_embeddings"} <= subjects
    assert "get_embed_and_head" not in subjects


def test_the_issues_of_v0_5_23_ask_for_no_member_every_nn_module_has(tracker: Invoke) -> None:
    result = tracker("issues", "v0.5.22", "v0.5.23", "--format", "json")
    assert result.exit_code == 0, result.stderr
    titles = [i["title"] for i in json.loads(result.stdout)["issues"]]
    assert not [t for t in titles if re.search(r"provide (modules|named_modules|__class__)\b", t)]
    itf = tracker("interface", "v0.5.23", "--format", "json")
    members = {r["member"] for r in json.loads(itf.stdout)["requirements"]}
    assert not members & {"modules", "named_modules", "__class__"}


def test_the_capture_call_moved_to_another_file_is_shown_as_moved(tracker: Invoke) -> None:
    text = tracker("diff", "v0.5.15.post1", "v0.5.16", "-a", "EAGLE3")
    assert text.exit_code == 0, text.stderr
    [line] = [x for x in text.stdout.splitlines() if "set_eagle3_layers_to_capture" in x]
    assert line.endswith(
        "model_executor/model_runner_components/attention_backend_setup.py:54 "
        "(moved from model_executor/model_runner.py:1052)"
    )
    md = tracker("diff", "v0.5.15.post1", "v0.5.16", "-a", "EAGLE3", "--format", "md")
    assert (
        "- **site moved**: `set_eagle3_layers_to_capture(1)` on the target model is now "
        "used at [model_executor/model_runner_components/attention_backend_setup.py:54]"
        in md.stdout
    )
    assert "moved from [model_executor/model_runner.py:1052]" in md.stdout


def test_why_a_draft_member_is_not_a_target_one_says_whose_it_is(tracker: Invoke) -> None:
    result = tracker("why", "hot_token_id", "--at", "v0.5.9", "--role", "target")
    assert result.exit_code == 2
    assert result.stderr == (
        "tracker: error: EAGLE3 at v0.5.9 requires no member hot_token_id of the target "
        "model (it is required of the draft model by EAGLE3)\n"
    )


def test_the_fix_suggested_for_a_release_unpacked_in_a_directory_runs(
    tracker: Invoke,
    use_real_cache: Path,
    tmp_path: Path,
) -> None:
    [wheel] = (use_real_cache / "pypi").glob("sglang-0.5.9-*.whl")
    root = tmp_path / "sglang-0.5.9"
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if name.startswith("sglang/srt/") and name.endswith(".py"):
                target = root / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.read(name))
    check = tracker("check", "local", "--source", f"dir:{root}", "-a", "EAGLE3", "-m", KIMI)
    assert check.exit_code == 0, check.stderr
    found = re.search(r"→ tracker fix (.+)$", check.stdout, re.MULTILINE)
    assert found is not None, check.stdout
    fix = tracker("fix", *shlex.split(found.group(1)))
    assert fix.exit_code == 0, fix.stderr
    assert "+        return self.language_model.get_embed_and_head()" in fix.stdout


def test_facts_show_what_a_single_entry_class_is(tracker: Invoke) -> None:
    result = tracker("facts", "v0.5.9", "python/sglang/srt/models/qwen.py")
    assert "assign EntryClass = QWenLMHeadModel  :355 in <module>" in result.stdout.splitlines()


def test_issues_for_a_reversed_pair_are_refused(tracker: Invoke) -> None:
    result = tracker("issues", "v0.5.10", "v0.5.9")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "v0.5.10 is newer than v0.5.9" in result.stderr


def test_a_matrix_from_v0_5_9_tells_classes_already_there_from_new_ones(
    tracker: Invoke,
) -> None:
    result = tracker("matrix", "v0.5.9..v0.5.10", "-a", "EAGLE3", "--format", "json")
    assert result.exit_code == 0, result.stderr
    first = {
        (e["model"], e["kind"])
        for e in json.loads(result.stdout)["events"]
        if e["version"] == "v0.5.9"
    }
    assert (KIMI, "appeared") in first
    assert ("LlamaForCausalLM", "present") in first
    assert ("LlamaForCausalLM", "appeared") not in first


def test_a_member_probed_and_called_is_one_requirement(tracker: Invoke) -> None:
    result = tracker("interface", "v0.5.22", "--format", "json")
    reqs = json.loads(result.stdout)["requirements"]
    keys = [(r["algorithm"], r["role"], r["member"]) for r in reqs]
    assert len(keys) == len(set(keys))
    [draft_head] = [
        r
        for r in reqs
        if (r["algorithm"], r["role"], r["member"])
        == ("EAGLE3", "target", "get_embed_and_head_for_draft")
    ]
    assert draft_head["kind"] == "call" and draft_head["uses"] == ["call", "hasattr"]


def test_triage_of_a_traceback_file_finds_the_release_and_since_when(
    tracker: Invoke,
    tmp_path: Path,
) -> None:
    crash = tmp_path / "server.log"
    crash.write_text(
        "Traceback (most recent call last):\n"
        '  File "/opt/sglang-0.5.9/python/sglang/srt/speculative/eagle_worker.py", line 157,'
        " in __init__\n"
        "    embed, head = self.target_worker.model_runner.model.get_embed_and_head()\n"
        f"AttributeError: '{KIMI}' object has no attribute 'get_embed_and_head'\n"
    )
    result = tracker("triage", str(crash), "-a", "EAGLE3", "--until", "v0.5.10")
    assert result.exit_code == 0, result.stderr
    assert "reading sglang v0.5.9 (from the traceback's file paths)" in result.stderr
    assert (
        "  ✗ EAGLE3      broken · missing get_embed_and_head, set_eagle3_layers_to_capture"
        " · since v0.5.9, where the class is new · fixed in v0.5.10"
    ) in result.stdout.splitlines()
