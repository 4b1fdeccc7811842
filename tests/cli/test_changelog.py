"""`tracker changelog`: the release-notes appendix on real SGLang releases."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

Tracker = Callable[..., Result]  # the `tracker` fixture of tests/cli/conftest.py

pytestmark = pytest.mark.realdata

LINK = "https://github.com/sgl-project/sglang/blob/{tag}/python/sglang/srt/{path}#L{line}"


def link(tag: str, path: str, line: int) -> str:
    return LINK.format(tag=tag, path=path, line=line)


def test_kimi_k25_is_named_fixed_for_eagle3_from_v0_5_9_to_v0_5_10_with_links(
    tracker: Tracker,
) -> None:
    result = tracker("changelog", "v0.5.9", "v0.5.10", "-a", "EAGLE3", "--source", "pypi")
    assert result.exit_code == 0, result.stderr
    fixed = result.stdout.split("**Model wrappers newly fixed**", 1)[1]
    kimi = next(line for line in fixed.splitlines() if "KimiK25ForConditionalGeneration" in line)
    assert "`get_embed_and_head`" in kimi and "`set_eagle3_layers_to_capture`" in kimi
    assert (
        "](https://github.com/sgl-project/sglang/blob/v0.5.10/python/sglang/srt/models/"
        "kimi_k25.py#L" in kimi
    )


def test_the_appendix_opens_with_its_heading_and_a_one_line_summary(tracker: Tracker) -> None:
    result = tracker("changelog", "v0.5.9", "v0.5.10", "-a", "EAGLE3", "--source", "pypi")
    lines = result.stdout.splitlines()
    assert lines[0] == "## Speculative decoding interface changes"
    assert lines[2].startswith("sglang v0.5.9 → v0.5.10: no interface changes;")
    # MindSporeForCausalLM's decoder comes from outside SGLang at v0.5.10: its contract is
    # not followed, so it is unknown there, not fixed.
    assert "1 wrapper fixed (KimiK25ForConditionalGeneration)" in lines[2]


def test_sections_without_changes_are_left_out(tracker: Tracker) -> None:
    text = tracker("changelog", "v0.5.9", "v0.5.10", "-a", "EAGLE3", "--source", "pypi").stdout
    assert "### EAGLE3" in text
    for absent in ("model members", "Forward output fields", "Configuration keys"):
        assert absent not in text


def test_a_newly_read_output_field_is_listed_with_a_link_to_its_site(tracker: Tracker) -> None:
    result = tracker("changelog", "v0.5.8", "v0.5.9", "-a", "EAGLE3", "--source", "pypi")
    assert (
        "- Now read: `logits_output.mm_input_embeds` — [speculative/eagle_worker.py:302]("
        + link("v0.5.9", "speculative/eagle_worker.py", 302)
        + ")"
        in result.stdout
    )
    broken = result.stdout.split("**Model wrappers newly broken**", 1)[1]
    assert "`KimiK25ForConditionalGeneration` (new) lacks `get_embed_and_head`" in broken
    assert "`tracker fix KimiK25ForConditionalGeneration --at v0.5.9`" in broken


def test_a_release_compared_with_itself_gives_one_sentence(tracker: Tracker) -> None:
    result = tracker("changelog", "v0.5.9", "v0.5.9", "--source", "pypi")
    assert result.exit_code == 0
    assert result.stdout == (
        "No speculative decoding interface changes between sglang "
        "v0.5.9 and v0.5.9 (EAGLE, EAGLE3, STANDALONE, NGRAM).\n"
    )


def test_the_link_pattern_is_configurable(tracker: Tracker) -> None:
    result = tracker(
        "changelog",
        "v0.5.9",
        "v0.5.10",
        "-a",
        "EAGLE3",
        "--source",
        "pypi",
        "--link-pattern",
        "https://mirror.invalid/{tag}/{path}?line={line}",
    )
    assert (
        "](https://mirror.invalid/v0.5.10/python/sglang/srt/models/kimi_k25.py?line="
        in result.stdout
    )
    assert "github.com" not in result.stdout


def test_all_lists_the_new_classes_instead_of_counting_them(tracker: Tracker) -> None:
    counted = tracker("changelog", "v0.5.9", "v0.5.10", "-a", "EAGLE3", "--source", "pypi")
    listed = tracker("changelog", "v0.5.9", "v0.5.10", "-a", "EAGLE3", "--source", "pypi", "--all")
    assert "Also: 1 new supported, 5 new unsupported" in counted.stdout
    assert "- New classes that support it: `SarvamMoEForCausalLM`" in listed.stdout


def test_output_goes_to_a_file_and_json_carries_the_schema(
    tracker: Tracker, tmp_path: Path
) -> None:
    target = tmp_path / "appendix.md"
    written = tracker(
        "changelog", "v0.5.9", "v0.5.10", "-a", "EAGLE3", "--source", "pypi", "-o", str(target)
    )
    assert written.stdout == ""
    assert target.read_text().startswith("## Speculative decoding interface changes")
    doc = json.loads(
        tracker(
            "changelog", "v0.5.9", "v0.5.10", "-a", "EAGLE3", "--source", "pypi", "--format", "json"
        ).stdout
    )
    assert doc["schema"] == "sglang-tracker/changelog@2"
    assert [f["model"] for f in doc["sections"][0]["fixed"]] == ["KimiK25ForConditionalGeneration"]


def test_a_template_dir_overrides_the_appendix(tracker: Tracker, tmp_path: Path) -> None:
    (tmp_path / "changelog.md.j2").write_text("custom: {{ doc.summary }}\n")
    result = tracker(
        "changelog",
        "v0.5.9",
        "v0.5.10",
        "-a",
        "EAGLE3",
        "--source",
        "pypi",
        "--template-dir",
        str(tmp_path),
    )
    assert result.stdout.startswith("custom: sglang v0.5.9 → v0.5.10:")


def test_an_unknown_algorithm_is_a_one_line_error_with_exit_2(tracker: Tracker) -> None:
    result = tracker("changelog", "v0.5.9", "v0.5.10", "-a", "EAGEL3", "--source", "pypi")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "tracker: error: unknown algorithm EAGEL3; this version has EAGLE, EAGLE3, STANDALONE, "
        "NGRAM (NEXTN runs as EAGLE)"
    ]


def test_members_added_and_changed_are_listed_per_role_with_links(tracker: Tracker) -> None:
    result = tracker(
        "changelog", "v0.5.1", "v0.5.2", "-a", "EAGLE3", "-a", "STANDALONE", "--source", "pypi"
    )
    eagle3, standalone = result.stdout.split("### EAGLE3", 1)[1].split("### STANDALONE", 1)
    assert "**Target model members**" not in eagle3
    draft = eagle3.split("**Draft model members**", 1)[1]
    # set_embed stays required: v0.5.2 skips it only for drafts that have
    # load_lm_head_from_target, which the interface records as its alternative.
    assert "set_embed(1)" not in draft
    assert (
        "- Added: `load_lm_head_from_target` (optional) — [speculative/eagle_worker.py:146]("
        + link("v0.5.2", "speculative/eagle_worker.py", 146)
        + ")"
        in draft
    )
    # STANDALONE's worker overrides the EAGLE __init__ that shares the embedding and head:
    # it asks nothing of the target.
    assert "- New algorithm STANDALONE." in standalone
    assert "**Target model members**" not in standalone
