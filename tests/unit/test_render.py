"""The text and markdown renders of tiny trees: one line per member however it is used,
sites that moved to another file, and what the template says about them."""

from __future__ import annotations

from pathlib import Path

from sgl_trees import BASE, build, line_of

from tracker.compare.diff import diff
from tracker.compare.matrix import build_matrix
from tracker.compare.snapshot import Builder, Snapshot
from tracker.render.documents import (
    RenderOptions,
    diff_document,
    interface_document,
    matrix_document,
    render,
)
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


# A member named by a string holding a terminal escape and a forged line.
HOSTILE_MEMBER = "x\x1b]0;pwned\x07"
HOSTILE = {
    "speculative/eagle_worker.py": WORKER.replace(
        CALL,
        CALL + f"        getattr(self.target_worker.model_runner.model, '{HOSTILE_MEMBER}')()\n",
    )
}


def test_a_template_compiled_without_the_escaping_is_never_loaded_from_the_cache() -> None:
    import jinja2

    from tracker.common.cachedir import cache_root

    # What an earlier version of the tool left in the cache: the same template source,
    # compiled by an environment that printed values as they are.
    (cache_root() / "templates").mkdir(parents=True)
    earlier = jinja2.Environment(
        loader=jinja2.PackageLoader("tracker.render", "templates"),
        bytecode_cache=jinja2.FileSystemBytecodeCache(str(cache_root() / "templates")),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    for name in ("short", "site", "link", "sitelink", "call", "code", "block", "prose", "plural"):
        earlier.filters[name] = lambda *args: str(args[0])
    earlier.filters["column_labels"] = lambda *args: []
    earlier.globals["marks"] = {}
    for name in earlier.list_templates(filter_func=lambda n: "/" not in n):
        earlier.get_template(name)
    assert list((cache_root() / "templates").iterdir())
    built = build(HOSTILE)
    text = render("interface", "text", interface_document(built.interface, "t", ["EAGLE3"], None))
    assert "x\\x1b]0;pwned\\x07" in text
    assert "\x1b" not in text


def test_a_template_of_the_users_own_prints_every_value_inert(tmp_path: Path) -> None:
    (tmp_path / "interface.txt.j2").write_text(
        "{% for r in doc.requirements %}{{ r.member }}|{% endfor %}\n", encoding="utf-8"
    )
    (tmp_path / "interface.md.j2").write_text(
        "{% for r in doc.requirements %}{{ r.member }} {{ r.member|code }}\n{% endfor %}",
        encoding="utf-8",
    )
    doc = interface_document(build(HOSTILE).interface, "t", ["EAGLE3"], None)
    options = RenderOptions(template_dir=tmp_path)
    assert "|x\\x1b]0;pwned\\x07|" in render("interface", "text", doc, options)
    md = render("interface", "md", doc, options)
    assert "x\\\\x1b\\]0;pwned\\\\x07 `x\\x1b]0;pwned\\x07`" in md


def test_a_column_is_as_wide_as_its_names_are_shown() -> None:
    import re

    from tracker.render.documents import check_document, site_doc

    built = build(HOSTILE)
    checks = [
        c for c in built.compat.checks if c.model == "LlamaForCausalLM" and c.algorithm == "EAGLE3"
    ]
    doc = check_document(built.compat, checks, "v1", "v1", "t")
    doc["requirements"] = {
        "EAGLE3": {
            "target": {
                r.member: [site_doc(s) for s in r.sites]
                for r in built.interface.requirements
                if r.algorithm == "EAGLE3" and r.role == "target"
            }
        }
    }
    doc.update(show_all=True, explain_kinds=False, fix_options="--at v1")
    rows = [
        m
        for line in render("check", "text", doc).split("\n")
        if (m := re.fullmatch(r"    (missing|defined)  (\S+)\s+(\S.*)", line))
    ]
    assert {m.group(2) for m in rows} >= {"get_embed_and_head", "x\\x1b]0;pwned\\x07"}
    # The column after the names starts at one place, the hostile name's row too.
    assert len({m.start(3) for m in rows}) == 1, [m.group() for m in rows]


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


def test_a_matrix_of_two_versions_names_the_range() -> None:
    assert matrix_text(["v1.0.9", "v1.0.10"])[0].startswith(
        "EAGLE3 · 2 versions (v1.0.9 … v1.0.10) · "
    )


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
    assert lines[0].startswith("EAGLE3 · 1 version (v1.0.9) · 2 model classes")
    assert "  (1 class appeared supported)" in lines
    legend = legend_of(lines)
    assert len(legend) > 1
    assert all(len(line) <= 80 for line in legend)
