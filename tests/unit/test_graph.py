"""The worker call graph of tiny SGLang-shaped trees (`tracker graph`): which functions it
keeps, where they are, which sites hang off them, and the three ways it is written."""

from __future__ import annotations

import io
import json

import networkx as nx
from sgl_trees import SRT, build, line_of

from tracker.render.graph_export import build_graph, graph_document, to_dot, to_graphml

WORKER_INIT = "sglang.srt.speculative.eagle_worker:EAGLEWorker.__init__"
TP_INIT = "sglang.srt.managers.tp_worker:TpModelWorker.__init__"
RUNNER_INIT = "sglang.srt.model_executor.model_runner:ModelRunner.__init__"
RUNNER_FORWARD = "sglang.srt.model_executor.model_runner:ModelRunner.forward"
WORKER_PY = "speculative/eagle_worker.py"
RUNNER_PY = "model_executor/model_runner.py"

# Runner code no worker constructs: its site has no call path from a worker entry.
CUDA_GRAPH_RUNNER = {
    "model_executor/cuda_graph_runner.py": """
        class CudaGraphRunner:
            def __init__(self, model_runner):
                runner = model_runner
                if runner.spec_algorithm.is_eagle3() and runner.eagle_use_aux_hidden_state:
                    runner.model.set_eagle3_layers_to_capture()
        """
}


def site_id(
    role: str, member: str, path: str, needle: str, overrides: dict[str, str] | None = None
) -> str:
    return f"{role}:{member}@{SRT}{path}:{line_of(overrides, path, needle)}"


def eagle3(
    roles: tuple[str, ...] = ("target", "draft"), overrides: dict[str, str] | None = None
) -> nx.DiGraph:
    built = build(overrides)
    return build_graph(built.index, built.interface, "EAGLE3", "dir:/tree", roles)


def test_the_graph_leads_from_the_worker_entry_through_the_runner_to_the_capture_site() -> None:
    graph = eagle3()
    site = site_id(
        "target", "set_eagle3_layers_to_capture", RUNNER_PY, "set_eagle3_layers_to_capture("
    )
    assert nx.has_path(graph, WORKER_INIT, site)
    assert [WORKER_INIT, TP_INIT, RUNNER_INIT, site] in list(
        nx.all_simple_paths(graph, WORKER_INIT, site)
    )
    assert {
        "kind": "site",
        "role": "target",
        "status": "required",
        "member_kind": "call",
        "condition": "self.eagle_use_aux_hidden_state",
    }.items() <= graph.nodes[site].items()


def test_function_nodes_carry_their_definition_path_and_line_and_calls_their_line() -> None:
    graph = eagle3()
    runner = graph.nodes[RUNNER_INIT]
    assert (runner["path"], runner["line"]) == (
        SRT + RUNNER_PY,
        line_of(None, RUNNER_PY, "def __init__"),
    )
    assert graph.nodes[WORKER_INIT]["entry"] == "worker"
    # Not an entry of the EAGLE worker (its own __init__ reaches it through super()), but of
    # the target worker the scheduler builds, whose runner the target's site is on.
    assert graph.nodes[TP_INIT]["entry"] == "target"
    assert runner["entry"] == ""
    assert graph.edges[TP_INIT, RUNNER_INIT] == {
        "kind": "call",
        "line": line_of(None, "managers/tp_worker.py", "ModelRunner("),
    }


def test_each_site_is_a_node_with_its_role_hanging_off_the_function_that_holds_it() -> None:
    graph = eagle3()
    target = site_id("target", "get_embed_and_head", WORKER_PY, "get_embed_and_head()")
    draft = site_id("draft", "set_embed", WORKER_PY, "set_embed(embed)")
    assert graph.nodes[target]["role"] == "target"
    assert graph.nodes[draft]["role"] == "draft"
    assert set(graph.predecessors(target)) == set(graph.predecessors(draft)) == {WORKER_INIT}
    assert graph.edges[WORKER_INIT, target]["kind"] == "site"


def test_functions_that_lead_to_no_site_are_left_out() -> None:
    graph = eagle3()
    # The runner's forward is reached from the worker but touches no model member that
    # EAGLE3 requires.
    assert RUNNER_FORWARD not in graph
    assert all(graph.out_degree(n) for n, kind in graph.nodes(data="kind") if kind == "function")


def test_a_role_filter_drops_the_other_role_and_what_only_leads_to_it() -> None:
    graph = eagle3(roles=("draft",))
    roles = {graph.nodes[n]["role"] for n in graph if graph.nodes[n]["kind"] == "site"}
    assert roles == {"draft"}
    assert RUNNER_INIT not in graph  # it only leads to the target's capture site
    assert graph.graph["roles"] == "draft"


def test_runner_code_no_worker_reaches_is_kept_and_marked_detached() -> None:
    graph = eagle3(overrides=CUDA_GRAPH_RUNNER)
    holder = "sglang.srt.model_executor.cuda_graph_runner:CudaGraphRunner.__init__"
    assert graph.nodes[holder]["detached"] is True
    assert graph.in_degree(holder) == 0
    site = site_id(
        "target",
        "set_eagle3_layers_to_capture",
        "model_executor/cuda_graph_runner.py",
        "set_eagle3_layers_to_capture(",
        CUDA_GRAPH_RUNNER,
    )
    assert set(graph.successors(holder)) == {site}
    assert graph.nodes[RUNNER_INIT]["detached"] is False


def test_graphml_reads_back_with_networkx_to_the_same_nodes_edges_and_attributes() -> None:
    graph = eagle3()
    back = nx.read_graphml(io.BytesIO(to_graphml(graph).encode()))
    assert dict(back.nodes(data=True)) == dict(graph.nodes(data=True))
    assert {(a, b): d for a, b, d in back.edges(data=True)} == {
        (a, b): d for a, b, d in graph.edges(data=True)
    }
    # The reader adds the (empty) GraphML defaults it found.
    assert {k: v for k, v in back.graph.items() if not k.endswith("_default")} == graph.graph


def test_node_link_json_carries_the_schema_id_and_reads_back_to_the_same_graph() -> None:
    graph = eagle3()
    doc = json.loads(json.dumps(graph_document(graph)))
    assert doc["schema"] == "sglang-tracker/graph@1"
    back = nx.node_link_graph({k: v for k, v in doc.items() if k != "schema"}, edges="edges")
    assert dict(back.nodes(data=True)) == dict(graph.nodes(data=True))
    assert set(back.edges) == set(graph.edges)


def test_dot_declares_every_node_once_with_its_kind_and_every_edge_between_declared_nodes() -> None:
    from dot_text import parse_dot

    graph = eagle3(overrides=CUDA_GRAPH_RUNNER)
    parsed = parse_dot(to_dot(graph))
    assert set(parsed.nodes) == set(graph.nodes)
    assert sorted(parsed.edges) == sorted(graph.edges)
    for node, attrs in graph.nodes(data=True):
        assert parsed.nodes[node]["kind"] == attrs["kind"]
        assert parsed.nodes[node]["path"] == attrs["path"]
        assert parsed.nodes[node]["line"] == str(attrs["line"])
        if attrs["kind"] == "site":
            assert parsed.nodes[node]["role"] == attrs["role"]
    for (a, b), attrs in parsed.edge_attrs.items():
        assert attrs["kind"] == graph.edges[a, b]["kind"]
        assert attrs["line"] == str(graph.edges[a, b]["line"])


def test_the_same_tree_gives_byte_identical_output() -> None:
    first, second = eagle3(), eagle3()
    assert to_dot(first) == to_dot(second)
    assert to_graphml(first) == to_graphml(second)
    assert graph_document(first) == graph_document(second)
