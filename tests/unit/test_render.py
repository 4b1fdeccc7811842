"""The text and markdown renders of tiny trees: one line per member however it is used,
sites that moved to another file, and what the template says about them."""

from __future__ import annotations

from sgl_trees import BASE, build, line_of

from tracker.compare.diff import diff
from tracker.compare.matrix import build_matrix
from tracker.compare.snapshot import Builder, Snapshot
from tracker.render.documents import diff_document, interface_document, matrix_document, render
from tracker.sources.base import SourceIdentity

WORKER = BASE["speculative/eagle_worker.py"]
CALL = "        embed, head = self.target_worker.model_runner.model.get_embed_and_head()\n"

# The worker's call moves into a helper in another file.
MOVED = {
    "speculative/eagle_worker.py": WORKER.replace(
        "from sglang.srt.speculative.spec_info import SpeculativeAlgorithm\n",
        "from sglang.srt.speculative.spec_info import SpeculativeAlgorithm\n"
        "from sglang.srt.speculative.spec_utils import load_head\n",
    ).replace(CALL, "        embed, head = load_head(self.target_worker)\n"),
    "speculative/spec_utils.py": (
        "def load_head(target_worker):\n"
        "    return target_worker.model_runner.model.get_embed_and_head()\n"
    ),
}

# The draft model's member is read once (as a value) and called once.
READ_AND_CALLED = {
    "speculative/eagle_worker.py": WORKER.replace(
        "            self.draft_model_runner.model.set_embed(embed)\n",
        "            self.draft_model_runner.model.set_embed(embed)\n"
        "            self.setter = self.draft_model_runner.model.set_embed\n",
    ),
}


def diff_of(old: dict[str, str | None], new: dict[str, str | None]) -> dict[str, object]:
    a, b = build(old, "v1"), build(new, "v2")
    doc = diff_document(diff(a.interface, a.compat, b.interface, b.compat, ("EAGLE3",)), "t")
    doc["fix_options"] = "--at v2"
    return doc


def test_a_site_moved_to_another_file_is_shown_as_moved_in_text() -> None:
    text = render("diff", "text", diff_of({}, MOVED))
    old_line = line_of(None, "speculative/eagle_worker.py", "get_embed_and_head()")
    # The call column is as wide as its longest entry (set_eagle3_layers_to_capture(1)).
    assert (
        "    target  required    get_embed_and_head(0)           "
        f"speculative/spec_utils.py:2 (moved from speculative/eagle_worker.py:{old_line})"
    ) in text.splitlines()


def test_a_site_moved_to_another_file_is_listed_in_markdown() -> None:
    md = render("diff", "md", diff_of({}, MOVED))
    old_line = line_of(None, "speculative/eagle_worker.py", "get_embed_and_head()")
    assert (
        "- **site moved**: `get_embed_and_head(0)` on the target model is now used at "
        "[speculative/spec_utils.py:2](https://github.com/sgl-project/sglang/blob/v2/python/"
        "sglang/srt/speculative/spec_utils.py#L2), moved from "
        f"[speculative/eagle_worker.py:{old_line}](https://github.com/sgl-project/sglang/blob/"
        f"v1/python/sglang/srt/speculative/eagle_worker.py#L{old_line})"
    ) in md.splitlines()


def test_a_site_that_only_shifted_lines_shows_the_old_line() -> None:
    shifted = {"speculative/eagle_worker.py": WORKER.replace(CALL, "        pass\n" + CALL)}
    text = render("diff", "text", diff_of({}, shifted))
    old_line = line_of(None, "speculative/eagle_worker.py", "get_embed_and_head()")
    assert f"speculative/eagle_worker.py:{old_line + 1} (was :{old_line})" in text
    assert "site moved" not in render("diff", "md", diff_of({}, shifted))


def test_a_member_read_and_called_is_one_line_showing_both_uses() -> None:
    assert READ_AND_CALLED["speculative/eagle_worker.py"] != WORKER
    built = build(READ_AND_CALLED)
    doc = interface_document(built.interface, "t", ("EAGLE3",), "draft")
    lines = [line for line in render("interface", "text", doc).splitlines() if "set_embed" in line]
    assert len(lines) == 1
    assert "set_embed(1) (also read as an attribute)" in lines[0]


def matrix_text(versions: list[str]) -> list[str]:
    snaps = [snapshot(v) for v in versions]
    doc = matrix_document(build_matrix(snaps, "EAGLE3", ("target",), None, True), "t")
    doc["events_only"] = False
    return render("matrix", "text", doc).splitlines()


def snapshot(version: str) -> Snapshot:
    built = build(None, version)
    identity = SourceIdentity("git", "/repo", version, "r")
    return Snapshot(version, identity, "d", Builder("t", "q", "r"), built.interface, built.compat)


def legend_of(lines: list[str]) -> list[str]:
    start = next(i for i, line in enumerate(lines) if line.startswith("legend: "))
    end = lines.index("", start)
    return lines[start:end]


def test_each_matrix_column_names_its_version_downwards_above_it() -> None:
    versions = ["v1.0.9", "v1.0.10", "v1.0.10.post1", "v1.0.11"]
    lines = matrix_text(versions)
    grid = next(i for i, line in enumerate(lines) if line.startswith("LlamaForCausalLM "))
    start = lines[grid].index("✓")
    header = [line.ljust(start + len(versions)) for line in lines[2:grid]]
    columns = ["".join(line[start + i] for line in header).strip() for i in range(len(versions))]
    assert columns == ["9", "10", "10p1", "11"]
    assert " ".join(" ".join(legend_of(lines)).split()).endswith(
        "above each column, its version after v1.0. read downwards (p1 = .post1)"
    )


def test_the_matrix_legend_wraps_at_80_columns_and_counts_in_the_singular() -> None:
    lines = matrix_text(["v1.0.9"])
    assert lines[0].startswith("EAGLE3 · 1 version (v1.0.9 … v1.0.9) · 2 model classes")
    assert "  (1 class appeared supported)" in lines
    legend = legend_of(lines)
    assert len(legend) > 1
    assert all(len(line) <= 80 for line in legend)
