"""`tracker issues`: one issue per newly broken (model, algorithm) and per target member
newly required or removed, on real SGLang releases; fingerprints that do not depend on
wording."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from tracker.compare.diff import diff
from tracker.compare.workspace import Workspace
from tracker.release.issues import IssueDoc, build_issues, fingerprint_in, report_in
from tracker.render.documents import RenderOptions
from tracker.sources import open_source

Tracker = Callable[..., Result]  # the `tracker` fixture of tests/cli/conftest.py

pytestmark = pytest.mark.realdata

KIMI = "KimiK25ForConditionalGeneration"
SRT = "https://github.com/sgl-project/sglang/blob/v0.5.9/python/sglang/srt/"

# What v0.5.8 → v0.5.9 files for EAGLE3: the new classes lacking what their own inner
# model provides (the other new classes never supported EAGLE3, nor do their siblings).
EAGLE3_V059 = [KIMI, "LightOnOCRForConditionalGeneration", "StepVLForConditionalGeneration"]


@pytest.fixture(scope="module")
def issue_dir(
    tmp_path_factory: pytest.TempPathFactory,
    cli_run: Tracker,
    real_env: Callable[[], AbstractContextManager[None]],
) -> Path:
    """`tracker issues v0.5.8 v0.5.9 -a EAGLE3 --out DIR`, run once for the module (it
    analyses v0.5.9 for the fix patches)."""
    out = tmp_path_factory.mktemp("issues")
    with real_env():
        result = cli_run(
            "issues", "v0.5.8", "v0.5.9", "-a", "EAGLE3", "--source", "pypi", "--out", str(out)
        )
    assert result.exit_code == 0, result.stderr
    assert result.stderr.strip().endswith(f"wrote 3 issues and issues.json to {out}")
    return out


def files(directory: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(directory.glob("*.md"))}


def built(
    old: str, new: str, algorithms: tuple[str, ...], options: RenderOptions | None = None
) -> list[IssueDoc]:
    """The issues of old → new from the snapshots alone (no analysis, so no patch)."""
    ws = Workspace(open_source("pypi", None, Path.cwd()))
    a, b = ws.snapshot(old), ws.snapshot(new)
    d = diff(a.interface, a.compat, b.interface, b.compat, algorithms)
    return build_issues(
        d,
        a.interface,
        b.interface,
        b.compat,
        source="pypi:sglang",
        options=options or RenderOptions(),
    )


def front(text: str) -> dict[str, Any]:
    head = text.split("---\n")[1]
    return {
        k: json.loads(v) if v.startswith(("[", '"')) else v
        for k, v in (line.split(": ", 1) for line in head.splitlines())
    }


# ------------------------------------------------------------------- --out


def test_out_writes_one_markdown_file_per_issue_and_an_index(issue_dir: Path) -> None:
    index = json.loads((issue_dir / "issues.json").read_text())
    assert index["schema"] == "sglang-tracker/issue-files@1"
    assert sorted(e["report"]["subject"] for e in index["issues"]) == EAGLE3_V059
    assert sorted(e["file"] for e in index["issues"]) == sorted(files(issue_dir))
    for name, text in files(issue_dir).items():
        meta = front(text)
        entry = next(e for e in index["issues"] if e["file"] == name)
        assert meta["title"] == entry["title"]
        assert meta["fingerprint"] == entry["fingerprint"] == fingerprint_in(text)
        assert meta["labels"][:3] == ["sglang-tracker", "speculative-decoding", "algorithm:EAGLE3"]


def test_the_kimi_k25_issue_says_what_broke_where_since_when_and_how_to_fix_it(
    issue_dir: Path,
) -> None:
    text = next(t for n, t in files(issue_dir).items() if KIMI in n)
    assert front(text)["title"] == (
        f"[EAGLE3] new {KIMI} lacks get_embed_and_head, set_eagle3_layers_to_capture; its "
        "self.language_model provides them (v0.5.9)"
    )
    assert f"AttributeError: '{KIMI}' object has no attribute 'get_embed_and_head'" in text
    assert "**v0.5.9**: the class is new in this release (not registered in v0.5.8)" in text
    for site in (
        "speculative/eagle_worker.py#L157",
        "model_executor/model_runner.py#L622",
        "model_executor/cuda_graph_runner.py#L365",
    ):
        assert f"]({SRT}{site})" in text
    assert "· if `self.eagle_use_aux_hidden_state`" in text
    patch = text.split("```diff\n", 1)[1].split("```", 1)[0]
    assert patch.startswith("--- a/python/sglang/srt/models/kimi_k25.py\n")
    assert "+        return self.language_model.get_embed_and_head()\n" in patch
    assert f"`tracker fix {KIMI} --at v0.5.9` writes this patch" in text


def test_a_new_class_whose_sibling_supports_the_algorithm_is_told_what_to_add(
    use_real_cache: Path,
) -> None:
    (sarvam,) = built("v0.5.9", "v0.5.10", ("EAGLE3",))
    assert sarvam.report.subject == "SarvamMLAForCausalLM"
    assert "```diff" not in sarvam.body
    assert "other classes of its module support EAGLE3" in sarvam.body
    assert (
        "Add `get_embed_and_head`, `set_eagle3_layers_to_capture` to `SarvamMLAForCausalLM`"
    ) in sarvam.body


def test_new_classes_that_never_supported_the_algorithm_get_no_issue(issue_dir: Path) -> None:
    # v0.5.9 brings many new classes without EAGLE3 support, e.g. Exaone4ForCausalLM and
    # GPTJForCausalLM: context, not an alarm.
    names = " ".join(files(issue_dir))
    assert "Exaone4ForCausalLM" not in names and "GPTJForCausalLM" not in names


# ------------------------------------------------------------------- fingerprints


def test_fingerprints_depend_on_what_is_reported_not_on_the_wording(
    tmp_path: Path, use_real_cache: Path
) -> None:
    (tmp_path / "issue.md.j2").write_text("Entirely different words for {{ doc.kind }}.\n")
    plain = built("v0.5.8", "v0.5.9", ("EAGLE3",))
    reworded = built("v0.5.8", "v0.5.9", ("EAGLE3",), RenderOptions(template_dir=tmp_path))
    assert [i.fingerprint for i in plain] == [i.fingerprint for i in reworded]
    assert all(i.body != j.body for i, j in zip(plain, reworded, strict=True))
    # The markers survive a template that leaves them out.
    assert all(fingerprint_in(i.body) == i.fingerprint for i in reworded)
    assert all(report_in(i.body) == i.report for i in reworded)


def test_fingerprints_differ_per_algorithm_and_per_release(use_real_cache: Path) -> None:
    every = built("v0.5.8", "v0.5.9", ("EAGLE", "EAGLE3"))
    kimi = [i for i in every if i.report.subject == KIMI]
    assert sorted(i.report.algorithm for i in kimi) == ["EAGLE", "EAGLE3"]
    assert len({i.fingerprint for i in every}) == len(every)
    assert re.fullmatch(r"[0-9a-f]{16}", kimi[0].fingerprint)


def test_the_issue_index_written_by_the_cli_matches_the_library_fingerprints(
    issue_dir: Path, use_real_cache: Path
) -> None:
    index = json.loads((issue_dir / "issues.json").read_text())
    assert sorted(e["fingerprint"] for e in index["issues"]) == sorted(
        i.fingerprint for i in built("v0.5.8", "v0.5.9", ("EAGLE3",))
    )


# ------------------------------------------------------------------- other kinds


def test_a_wrapper_that_worked_before_and_broke_gets_a_regression_issue(
    use_real_cache: Path,
) -> None:
    found = {i.report.subject: i for i in built("v0.5.4", "v0.5.5", ("EAGLE3",))}
    glm = found["Glm4vForConditionalGeneration"]
    assert glm.report.kind == "model_wrapper_broke"
    assert "regression" in glm.labels
    assert glm.title.startswith("[EAGLE3] Glm4vForConditionalGeneration no longer provides ")
    # Where the member came from before says where the regression starts.
    assert (
        "**v0.5.5**: it provided these members in v0.5.4:\n"
        "- `set_eagle3_layers_to_capture`: inherited from "
        "`Qwen2_5_VLForConditionalGeneration`\n"
    ) in glm.body


def test_json_output_carries_the_schema_and_each_issue(tracker: Tracker) -> None:
    result = tracker(
        "issues", "v0.5.9", "v0.5.10", "-a", "EAGLE3", "--source", "pypi", "--format", "json"
    )
    doc = json.loads(result.stdout)
    assert doc["schema"] == "sglang-tracker/issues@1"
    assert (doc["from"], doc["to"]) == ("v0.5.9", "v0.5.10")
    assert [i["report"]["subject"] for i in doc["issues"]] == ["SarvamMLAForCausalLM"]
    assert doc["issues"][0]["fingerprint"] in doc["issues"][0]["body"]


def test_a_release_compared_with_itself_files_nothing(tracker: Tracker) -> None:
    result = tracker("issues", "v0.5.9", "v0.5.9", "--source", "pypi")
    assert result.exit_code == 0
    assert result.stdout == ""
    assert "nothing to file for v0.5.9 → v0.5.9" in result.stderr
