"""`tracker graph`: EAGLE3's worker call graph at v0.5.9 in the three formats, read back by
networkx, the schema and a DOT reader; goldens of the three renders of a tiny tree."""

from __future__ import annotations

import io
import itertools
import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import networkx as nx
import pytest
from click.testing import Result
from dot_text import parse_dot
from schema_check import assert_valid
from sgl_trees import tree

from tracker.sources.pypi import PypiSource

Tracker = Callable[..., Result]

GOLDENS = Path(__file__).parent / "goldens"
FORMATS = ("dot", "graphml", "json")
EAGLE_WORKER = "sglang.srt.speculative.eagle_worker:EAGLEWorker.__init__"
CHAIN = [
    EAGLE_WORKER,
    "sglang.srt.managers.tp_worker:TpModelWorker.__init__",
    "sglang.srt.managers.tp_worker:TpModelWorker._init_model_runner",
    "sglang.srt.model_executor.model_runner:ModelRunner.__init__",
    "sglang.srt.model_executor.model_runner:ModelRunner.initialize",
]
GET_EMBED = "target:get_embed_and_head@python/sglang/srt/speculative/eagle_worker.py:157"
CAPTURE = "target:set_eagle3_layers_to_capture@python/sglang/srt/model_executor/model_runner.py:622"


def from_json(text: str) -> nx.DiGraph:
    doc = json.loads(text)
    return nx.node_link_graph({k: v for k, v in doc.items() if k != "schema"}, edges="edges")


@pytest.fixture(scope="module")
def v059(
    real_env: Callable[[], AbstractContextManager[None]],
    cli_run: Tracker,
    real_pypi: PypiSource,
) -> Iterator[dict[str, Result]]:
    """`tracker graph v0.5.9 -a EAGLE3` in each format (the release read from source)."""
    real_pypi.tree("v0.5.9")  # downloaded once into the test cache; offline from here on
    with real_env():
        yield {
            fmt: cli_run("graph", "v0.5.9", "-a", "EAGLE3", "--format", fmt, "-q")
            for fmt in FORMATS
        }


@pytest.mark.realdata
def test_the_eagle3_graph_leads_from_the_worker_through_the_runner_to_both_target_sites(
    v059: dict[str, Result],
) -> None:
    result = v059["json"]
    assert result.exit_code == 0, result.stderr
    graph = from_json(result.stdout)
    for caller, callee in itertools.pairwise(CHAIN):
        assert graph.edges[caller, callee]["kind"] == "call"
    assert graph.edges[CHAIN[-1], CAPTURE]["kind"] == "site"
    assert graph.edges[EAGLE_WORKER, GET_EMBED]["kind"] == "site"
    for site, line in ((GET_EMBED, 157), (CAPTURE, 622)):
        node = graph.nodes[site]
        assert (node["kind"], node["role"], node["status"], node["line"]) == (
            "site",
            "target",
            "required",
            line,
        )
    assert graph.nodes[CAPTURE]["condition"] == "self.eagle_use_aux_hidden_state"
    init = graph.nodes["sglang.srt.model_executor.model_runner:ModelRunner.initialize"]
    assert init["path"] == "python/sglang/srt/model_executor/model_runner.py"
    assert init["line"] < 622  # the function's own line, above the site in its body
    assert graph.nodes[EAGLE_WORKER]["entry"] == "worker"
    # The target's runner site is reached from the target worker the scheduler builds.
    assert graph.nodes["sglang.srt.managers.tp_worker:TpModelWorker.__init__"]["entry"] == "target"
    assert graph.graph["workers"] == (
        "EAGLEWorker, EAGLEWorkerV2, MultiLayerEagleWorker, MultiLayerEagleWorkerV2"
    )


@pytest.mark.realdata
def test_the_json_graph_validates_against_its_schema(v059: dict[str, Result]) -> None:
    doc = json.loads(v059["json"].stdout)
    assert doc["schema"] == "sglang-tracker/graph@1"
    assert_valid(doc)


@pytest.mark.realdata
def test_the_graphml_reads_back_with_networkx_to_the_same_graph_as_the_json(
    v059: dict[str, Result],
) -> None:
    assert v059["graphml"].exit_code == 0, v059["graphml"].stderr
    assert v059["graphml"].stdout.startswith("<?xml version='1.0' encoding='utf-8'?>")
    back = nx.read_graphml(io.BytesIO(v059["graphml"].stdout.encode()))
    graph = from_json(v059["json"].stdout)
    assert dict(back.nodes(data=True)) == dict(graph.nodes(data=True))
    assert {(a, b): d for a, b, d in back.edges(data=True)} == {
        (a, b): d for a, b, d in graph.edges(data=True)
    }


@pytest.mark.realdata
def test_the_dot_declares_the_same_nodes_and_edges_and_graphviz_accepts_it_when_present(
    v059: dict[str, Result],
) -> None:
    text = v059["dot"].stdout
    parsed = parse_dot(text)
    graph = from_json(v059["json"].stdout)
    assert set(parsed.nodes) == set(graph.nodes)
    assert sorted(parsed.edges) == sorted(graph.edges)
    assert parsed.nodes[GET_EMBED]["role"] == "target"
    assert parsed.nodes[CAPTURE]["line"] == "622"
    dot = shutil.which("dot")
    if dot is not None:  # graphviz is optional here; the structure above is always checked
        done = subprocess.run(
            [dot, "-Tsvg"], input=text, capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0 and "<svg" in done.stdout, done.stderr


@pytest.mark.realdata
def test_a_role_filter_keeps_only_that_role_s_sites(
    real_env: Callable[[], AbstractContextManager[None]],
    cli_run: Tracker,
    v059: dict[str, Result],
) -> None:
    with real_env():
        result = cli_run(
            "graph", "v0.5.9", "-a", "eagle3", "--role", "draft", "--format", "json", "-q"
        )
    assert result.exit_code == 0, result.stderr
    graph = from_json(result.stdout)
    roles = {d["role"] for _, d in graph.nodes(data=True) if d["kind"] == "site"}
    assert roles == {"draft"}
    assert CAPTURE not in graph and "hot_token_id" in {
        d.get("member") for _, d in graph.nodes(data=True)
    }


def test_an_unknown_algorithm_is_one_line_on_stderr_and_exit_2(
    tmp_path: Path, cli_run: Tracker
) -> None:
    root = write_tree(tmp_path)
    result = cli_run("graph", "local", "--source", f"dir:{root}", "-a", "MEDUSA")
    assert result.exit_code == 2
    assert (
        result.stderr.strip() == "tracker: error: unknown algorithm MEDUSA; this version "
        "has EAGLE, EAGLE3"
    )
    assert result.stdout == ""


def test_output_goes_to_the_file_named_by_o(tmp_path: Path, cli_run: Tracker) -> None:
    root = write_tree(tmp_path)
    target = tmp_path / "graph.graphml"
    result = cli_run(
        "graph",
        "local",
        "--source",
        f"dir:{root}",
        "-a",
        "EAGLE3",
        "--format",
        "graphml",
        "-o",
        str(target),
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert nx.read_graphml(target).number_of_nodes() > 0


# ------------------------------------------------------------------------- goldens


def write_tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    for path, text in tree().items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return root


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_graph_of_a_tiny_tree_matches_its_golden(
    fmt: str, tmp_path: Path, cli_run: Tracker, update_goldens: bool
) -> None:
    root = write_tree(tmp_path)
    result = cli_run("graph", "local", "--source", f"dir:{root}", "-a", "EAGLE3", "--format", fmt)
    assert result.exit_code == 0, result.stderr
    text = result.stdout.replace(str(root.resolve()), "/TREE")
    golden = GOLDENS / f"graph-eagle3.{fmt}"
    if update_goldens:
        golden.write_text(text)
    assert text == golden.read_text()
