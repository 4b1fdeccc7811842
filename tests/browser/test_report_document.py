"""The report builder without a browser: the document's shape and facts (from the shipped
snapshots of real releases), the call graphs built from the recorded call paths, the
built-in SVG layout, the dot plumbing, the page's self-containment and the command."""

from __future__ import annotations

import json
import re
import stat
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tracker.cli import cli
from tracker.compare.matrix import build_matrix
from tracker.compare.snapshot import Snapshot, load_file, shipped_dir
from tracker.compare.workspace import shipped_versions
from tracker.render import report as rpt
from tracker.render.report import html as report_html
from tracker.render.report.graph import module_of
from tracker.sources.versions import expand_range

SVG = "{http://www.w3.org/2000/svg}"
KIMI = "KimiK25ForConditionalGeneration"
OFFLINE = {"TRACKER_PIP": "false", "NO_COLOR": "1"}


def shipped(spec: str) -> list[Snapshot]:
    out = []
    for version in expand_range(spec, shipped_versions()):
        snap = load_file(shipped_dir() / f"{version}.json")
        assert snap is not None, f"no shipped snapshot for {version}"
        out.append(snap)
    return out


@pytest.fixture(scope="module")
def snaps() -> list[Snapshot]:
    return shipped("v0.5.8..v0.5.11")


@pytest.fixture(scope="module")
def doc(snaps: list[Snapshot]) -> dict[str, Any]:
    return rpt.build_report(snaps, ["EAGLE3"], "pypi:sglang", rpt.ReportOptions())


@pytest.fixture(scope="module")
def eagle3(doc: dict[str, Any]) -> dict[str, Any]:
    algo: dict[str, Any] = doc["algorithms"][0]
    return algo


def _row(algo: dict[str, Any], model: str) -> dict[str, Any]:
    rows = [r for r in algo["rows"] if r["model"] == model]
    assert len(rows) == 1
    return rows[0]


def _cell(algo: dict[str, Any], model: str, version: str) -> dict[str, Any]:
    cell: dict[str, Any] = _row(algo, model)["cells"][algo["versions"].index(version)]
    return cell


# ------------------------------------------------------------------------ document


def test_document_shape(doc: dict[str, Any], eagle3: dict[str, Any], snaps: list[Snapshot]) -> None:
    versions = [s.version for s in snaps]
    assert doc["schema"] == "sglang-tracker/report@1"
    assert doc["versions"] == versions
    assert doc["range"] == f"{versions[0]}..{versions[-1]}"
    assert eagle3["name"] == "EAGLE3"
    assert eagle3["versions"] == versions
    matrix = build_matrix(snaps, "EAGLE3")
    assert [r["model"] for r in eagle3["rows"]] == matrix.models
    for row in eagle3["rows"]:
        assert [c["status"] for c in row["cells"]] == [
            matrix.cells[row["model"]][v] for v in versions
        ]
        for c in row["cells"]:
            # Every broken or unknown cell points at its details; no other cell does.
            assert (c["detail"] is not None) == (c["status"] in ("broken", "unknown"))
    json.dumps(doc)  # plain data all the way down


def test_kimi_breaks_at_v059_and_is_fixed_at_v0510(eagle3: dict[str, Any]) -> None:
    assert _cell(eagle3, KIMI, "v0.5.8")["status"] == "absent"
    broken = _cell(eagle3, KIMI, "v0.5.9")
    assert broken["status"] == "broken"
    assert broken["event"] == "appeared"
    detail = eagle3["details"][broken["detail"]]
    assert detail["missing"] == ["get_embed_and_head", "set_eagle3_layers_to_capture"]
    assert {d["attribute"] for d in detail["delegations"]} == {"language_model"}
    assert {d["inner"] for d in detail["delegations"]} == {"DeepseekV3ForCausalLM"}
    fixed = _cell(eagle3, KIMI, "v0.5.10")
    assert (fixed["status"], fixed["event"]) == ("ok", "fixed")


def test_sites_of_missing_members_link_to_the_release(eagle3: dict[str, Any]) -> None:
    sites = eagle3["sites"]["v0.5.9"]
    embed = {(s["path"], s["line"]) for s in sites["target:get_embed_and_head"]}
    assert ("speculative/eagle_worker.py", 157) in embed
    layers = sites["target:set_eagle3_layers_to_capture"]
    runner = [s for s in layers if s["path"] == "model_executor/model_runner.py"]
    assert runner[0]["line"] == 622
    assert runner[0]["condition"] == "self.eagle_use_aux_hidden_state"
    assert runner[0]["url"] == (
        "https://github.com/sgl-project/sglang/blob/v0.5.9/"
        "python/sglang/srt/model_executor/model_runner.py#L622"
    )


def test_timeline_has_the_v059_output_field_and_kimi(eagle3: dict[str, Any]) -> None:
    entry = next(e for e in eagle3["timeline"] if e["version"] == "v0.5.9")
    assert entry["previous"] == "v0.5.8.post1"
    added = [c for c in entry["interface"] if c["kind"] == "output_field_added"]
    assert [c["subject"] for c in added] == ["logits_output.mm_input_embeds"]
    assert added[0]["sign"] == "+"
    assert added[0]["sites"][0]["path"] == "speculative/eagle_worker.py"
    kimi = [m for m in entry["models"]["new_unsupported"] if m["model"] == KIMI]
    assert kimi and kimi[0]["notable"]
    fixed = next(e for e in eagle3["timeline"] if e["version"] == "v0.5.10")
    assert KIMI in {m["model"] for m in fixed["models"]["fixed"]}
    assert any(n["model"] == KIMI and n["version"] == "v0.5.9" for n in eagle3["notable"])
    assert "v0.5.9" in eagle3["interface_changed"]
    # v0.5.11 changed the call arity of set_eagle3_layers_to_capture: a "~" change.
    later = next(e for e in eagle3["timeline"] if e["version"] == "v0.5.11")
    assert any(c["kind"] == "call_arity_changed" and c["sign"] == "~" for c in later["interface"])


def test_graph_selection(snaps: list[Snapshot], eagle3: dict[str, Any]) -> None:
    chosen = [g["version"] for g in eagle3["graphs"]]
    assert chosen[0] == "v0.5.8" and chosen[-1] == "v0.5.11"  # first and newest
    assert "v0.5.9" in chosen  # interface changed (mm_input_embeds)
    assert "v0.5.10" not in chosen  # nothing changed for EAGLE3
    every = rpt.build_report(snaps, ["EAGLE3"], "x", rpt.ReportOptions(graphs="all"))
    assert [g["version"] for g in every["algorithms"][0]["graphs"]] == [s.version for s in snaps]
    none = rpt.build_report(snaps, ["EAGLE3"], "x", rpt.ReportOptions(graphs="none"))
    assert none["algorithms"][0]["graphs"] == []


# --------------------------------------------------------------------- call graphs


@pytest.fixture(scope="module")
def view(snaps: list[Snapshot]) -> rpt.CallGraphView:
    v059 = next(s for s in snaps if s.version == "v0.5.9")
    return rpt.build_call_graph(v059, "EAGLE3", rpt.ReportOptions().link_pattern)


def test_call_graph_is_the_union_of_call_paths(
    view: rpt.CallGraphView, snaps: list[Snapshot]
) -> None:
    worker = "sglang.srt.speculative.eagle_worker:EAGLEWorker.__init__"
    runner = "sglang.srt.model_executor.model_runner:ModelRunner.initialize"
    cuda = "sglang.srt.model_executor.cuda_graph_runner:CudaGraphRunner.__init__"
    nodes = view.nodes
    # Exactly the functions on the recorded call paths (plus runner code without one).
    v059 = next(s for s in snaps if s.version == "v0.5.9")
    sites = [s for r in v059.interface.for_algorithm("EAGLE3") for s in r.sites]
    on_paths = {f for s in sites for f in s.call_path}
    # Runner code reached without a recorded path is shown too, and marked as such.
    detached = {f"{module_of(s.path)}:{s.function}" for s in sites if not s.call_path}
    assert set(nodes) == on_paths | detached
    for k in detached - on_paths:
        assert "detached" in nodes[k].classes
    assert {"root", "target-site"} <= set(nodes[worker].classes)
    assert "target-site" in nodes[runner].classes
    # The CUDA graph runner is reached from the model runner: on a path, not detached.
    assert cuda in on_paths and "detached" not in nodes[cuda].classes
    assert (nodes[runner].scope, nodes[runner].name) == ("ModelRunner", "initialize")
    assert nodes[runner].module == "model_executor.model_runner"
    layers = [m for m in nodes[runner].members if m.member == "set_eagle3_layers_to_capture"]
    assert [(m.role, m.status, m.line) for m in layers] == [("target", "required", 622)]
    assert layers[0].href == (
        "https://github.com/sgl-project/sglang/blob/v0.5.9/"
        "python/sglang/srt/model_executor/model_runner.py#L622"
    )
    embed = [m for m in nodes[worker].members if m.member == "get_embed_and_head"]
    assert embed and embed[0].line == 157 and embed[0].text == "get_embed_and_head()"
    # Target members are listed first.
    roles = [m.role for m in nodes[worker].members]
    assert roles == sorted(roles, key=lambda r: r != "target")
    assert (
        "sglang.srt.managers.tp_worker:TpModelWorker.__init__",
        "sglang.srt.managers.tp_worker:TpModelWorker._init_model_runner",
    ) in view.edges
    for a, b in view.edges:
        assert a in nodes and b in nodes
    assert nodes[runner].href.startswith(
        "https://github.com/sgl-project/sglang/blob/v0.5.9/"
        "python/sglang/srt/model_executor/model_runner.py#L"
    )
    # The document round-trips (the render rebuilds the view from it).
    again = rpt.CallGraphView.from_document(json.loads(json.dumps(view.document())))
    assert again.nodes == view.nodes and again.edges == view.edges


def test_layers_follow_breadth_first_depth(view: rpt.CallGraphView) -> None:
    rows = rpt.layers_of(view)
    where = {n: i for i, row in enumerate(rows) for n in row}
    assert sorted(where) == sorted(view.nodes)
    assert set(rows[0]) == set(view.roots)
    for a, b in view.edges:
        assert where[b] <= where[a] + 1


def _boxes(root: ET.Element) -> dict[str, tuple[float, float, float, float]]:
    out = {}
    for g in root.iter(f"{SVG}g"):
        if "node" not in g.get("class", "").split():
            continue
        m = re.fullmatch(r"translate\(([\d.]+),([\d.]+)\)", g.get("transform", ""))
        assert m, g.get("transform")
        rect = g.find(f"{SVG}rect")
        assert rect is not None
        x, y = float(m.group(1)), float(m.group(2))
        w, h = float(rect.get("width", 0)), float(rect.get("height", 0))
        out[g.get("data-id", "")] = (x, y, x + w, y + h)
    return out


def test_python_svg_is_valid_xml_with_highlighted_targets(view: rpt.CallGraphView) -> None:
    svg = rpt.svg_python(view, "t1")
    root = ET.fromstring(svg)  # well-formed XML, or this raises
    assert root.tag == f"{SVG}svg"
    boxes = _boxes(root)
    assert set(boxes) == set(view.nodes)
    highlighted = [g for g in root.iter(f"{SVG}g") if "target-site" in g.get("class", "").split()]
    assert {g.get("data-id") for g in highlighted} == {
        n.id for n in view.nodes.values() if "target-site" in n.classes
    }
    assert len(highlighted) >= 3  # EAGLEWorker.__init__, init_lm_head, ModelRunner.initialize
    for g in highlighted:
        rect = g.find(f"{SVG}rect")
        assert rect is not None and rect.get("stroke") == "#e8590c"
        members = [a for a in g.iter(f"{SVG}a") if "target" in a.get("class", "").split()]
        assert members, g.get("data-id")
    # Every function and every member line links to its source; nothing is loaded.
    anchors = list(root.iter(f"{SVG}a"))
    assert len(anchors) == len(view.nodes) + sum(len(n.members) for n in view.nodes.values())
    assert all(a.get("href", "").startswith("https://github.com/") for a in anchors)
    assert not list(root.iter(f"{SVG}image")) and not list(root.iter(f"{SVG}use"))
    # No two nodes overlap.
    items = sorted(boxes.values())
    for i, a in enumerate(items):
        for b in items[i + 1 :]:
            assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], (a, b)
    # Text fits its node (the width estimate is for DejaVu Sans Mono).
    for g in root.iter(f"{SVG}g"):
        if "node" in g.get("class", "").split():
            rect = g.find(f"{SVG}rect")
            assert rect is not None
            for text in g.iter(f"{SVG}text"):
                size = float(text.get("font-size", 0))
                assert float(text.get("x", 0)) + len(text.text or "") * size * 0.61 <= float(
                    rect.get("width", 0)
                )
    # Edges join known nodes and use this graph's own arrow marker.
    for path in root.iter(f"{SVG}path"):
        if "edge" in path.get("class", "").split():
            assert path.get("data-from") in boxes and path.get("data-to") in boxes
            assert path.get("marker-end") == "url(#t1-arrow)"


def test_render_svg_falls_back_without_dot(
    view: rpt.CallGraphView, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(report_html.shutil, "which", lambda name: None)
    svg, engine, note = rpt.render_svg(view, "p", "dot")
    assert engine == "python" and "not installed" in note
    ET.fromstring(svg)
    assert rpt.render_svg(view, "p", "auto")[1:] == ("python", "")


@pytest.fixture
def fake_dot(tmp_path: Path) -> Iterator[Path]:
    """A stand-in for graphviz: checks its input is a digraph and answers as dot does."""
    script = tmp_path / "dot"
    script.write_text(
        "#!/bin/sh\n"
        'input=$(cat)\ncase "$input" in digraph*) ;; *) echo "not a graph" >&2; exit 1;; esac\n'
        "cat <<'EOF'\n"
        '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n'
        '<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "x">\n'
        "<!-- Generated by graphviz -->\n"
        '<svg width="80pt" height="40pt" viewBox="0 0 80 40" '
        'xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">\n'
        '<g id="graph0" class="graph"><g id="node1" class="node target-site">'
        '<a xlink:href="https://example.invalid/x#L1"><polygon fill="url(#l_1)"/></a></g></g>\n'
        "</svg>\nEOF\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    yield script


def test_dot_output_is_trimmed_and_ids_made_unique(
    view: rpt.CallGraphView, fake_dot: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(report_html.shutil, "which", lambda name: str(fake_dot))
    svg, engine, note = rpt.render_svg(view, "gX", "auto")
    assert (engine, note) == ("dot", "")
    assert svg.startswith('<svg class="callgraph" ')
    assert "<?xml" not in svg and "DOCTYPE" not in svg and "<!--" not in svg
    assert 'id="gX-graph0"' in svg and 'id="gX-node1"' in svg and "url(#gX-l_1)" in svg
    ET.fromstring(svg)


def test_failing_dot_falls_back(
    view: rpt.CallGraphView, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "dot"
    broken.write_text("#!/bin/sh\necho 'Error: syntax' >&2\nexit 3\n")
    broken.chmod(0o755)
    monkeypatch.setattr(report_html.shutil, "which", lambda name: str(broken))
    svg, engine, note = rpt.render_svg(view, "p", "auto")
    assert engine == "python" and "dot failed" in note and "syntax" in note
    ET.fromstring(svg)


def test_dot_source_quotes_and_links(view: rpt.CallGraphView) -> None:
    text = rpt.dot_source(view)
    assert text.startswith("digraph callgraph {") and "rankdir=TB" in text
    assert '"sglang.srt.speculative.eagle_worker:EAGLEWorker.__init__" [' in text
    assert 'href="https://github.com/sgl-project/sglang/blob/v0.5.9/' in text
    assert "• set_eagle3_layers_to_capture()" in text


# --------------------------------------------------------------------------- page


def test_page_is_self_contained(doc: dict[str, Any]) -> None:
    page, svgs, engines, _ = rpt.render_html(doc, rpt.ReportOptions(layout="python"))
    assert engines == {"python"}
    assert len(svgs) == len(doc["algorithms"][0]["graphs"])
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    # Nothing that makes the browser load a resource from anywhere.
    assert not re.search(
        r"<(script|img|iframe|link|source|video|audio|embed)\b[^>]*\s(src|href)=", page
    )
    assert not re.search(r"@import|url\(\s*['\"]?https?:", page)
    payload = re.search(
        r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S
    )
    assert payload is not None
    data = json.loads(payload.group(1))
    assert data["EAGLE3"]["versions"] == doc["versions"]


def test_link_pattern_is_used_everywhere(snaps: list[Snapshot]) -> None:
    pattern = "https://git.example.invalid/sglang/{tag}/{path}?line={line}"
    options = rpt.ReportOptions(link_pattern=pattern, layout="python")
    doc = rpt.build_report(snaps, ["EAGLE3"], "x", options)
    page, svgs, _, _ = rpt.render_html(doc, options)
    assert "https://github.com/" not in page
    assert "https://git.example.invalid/sglang/v0.5.9/python/sglang/srt/" in page
    assert all("https://github.com/" not in s for s in svgs.values())


def test_model_names_are_escaped(snaps: list[Snapshot]) -> None:
    doc = rpt.build_report(snaps[:1], ["EAGLE3"], "<b>source</b>", rpt.ReportOptions())
    page, _, _, _ = rpt.render_html(doc, rpt.ReportOptions(layout="python"))
    assert "<b>source</b>" not in page and "&lt;b&gt;source&lt;/b&gt;" in page


def test_write_report_replaces_its_own_stale_graphs_only(
    doc: dict[str, Any], tmp_path: Path
) -> None:
    (tmp_path / "graphs").mkdir()
    (tmp_path / "graphs" / "mine.svg").write_text("<svg/>")  # the user's, never removed
    options = rpt.ReportOptions(layout="python")
    earlier = rpt.build_report(shipped("v0.5.5..v0.5.6"), ["EAGLE3"], "pypi:sglang", options)
    rpt.write_report(earlier, tmp_path, options)
    written = rpt.write_report(doc, tmp_path, options)
    names = sorted(p.name for p in (tmp_path / "graphs").iterdir())
    assert names == sorted([p.name for p in written.graphs] + ["mine.svg"])
    assert "EAGLE3-v0.5.9.svg" in names
    for p in written.graphs:
        ET.fromstring(p.read_text())
    assert written.index.read_text().startswith("<!doctype html>")


# ------------------------------------------------------------------------ command


def _run(*args: str) -> Any:
    return CliRunner(env=OFFLINE).invoke(cli, list(args))


def test_report_command(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = _run(
        "report", "v0.5.8..v0.5.10", "-a", "eagle3", "-o", str(out), "--layout", "python", "-q"
    )
    assert result.exit_code == 0, result.output
    page = (out / "index.html").read_text()
    assert f'data-model="{KIMI}"' in page
    assert sorted(p.name for p in (out / "graphs").iterdir()) == [
        "EAGLE3-v0.5.10.svg",
        "EAGLE3-v0.5.8.svg",
        "EAGLE3-v0.5.9.svg",
    ]
    assert "wrote" in result.stderr and "3 call graphs" in result.stderr


def test_report_command_errors(tmp_path: Path) -> None:
    bad = _run("report", "v0.5.8..v0.5.9", "-a", "NOPE", "-o", str(tmp_path / "o"))
    assert bad.exit_code == 2 and "unknown algorithm NOPE" in bad.stderr
    afile = tmp_path / "file"
    afile.write_text("")
    clash = _run("report", "v0.5.8..v0.5.9", "-o", str(afile))
    assert clash.exit_code == 2
    missing = _run("report", "v0.5.8..v0.5.9")
    assert missing.exit_code == 2 and "--output" in missing.stderr
    pattern = _run("report", "v0.5.8..v0.5.9", "-o", str(tmp_path / "p"), "--link-pattern", "{x}")
    assert pattern.exit_code == 2 and "bad --link-pattern" in pattern.stderr
