"""The releases before v0.4.10, back to the first one with a speculative worker, read from
the package index like every other release (analysed from source with --no-shipped)."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import pytest

from tracker.common.errors import NoSpeculativeDecodingError
from tracker.sources.pypi import PypiSource

Run = Any  # the `run` fixture of tests/integration/conftest.py
RealTree = Any

pytestmark = pytest.mark.realdata

SPECULATIVE = "python/sglang/srt/speculative/"
EAGLE_WORKER = SPECULATIVE + "eagle_worker.py"
MODEL_RUNNER = "python/sglang/srt/model_executor/model_runner.py"
CUDA_GRAPH_RUNNER = "python/sglang/srt/model_executor/cuda_graph_runner.py"


def requirements(run: Run, version: str, algorithm: str) -> dict[tuple[str, str], Any]:
    doc = run(
        "interface",
        version,
        "--algorithm",
        algorithm,
        "--format",
        "json",
        "--no-shipped",
        json_output=True,
    )
    return {(r["role"], r["member"]): r for r in doc["requirements"]}


def sites(requirement: dict[str, Any]) -> dict[tuple[str, int], str]:
    return {(s["path"], s["line"]): s["condition"] for s in requirement["sites"]}


def test_eagle3_at_v0_4_5_asks_the_target_for_embed_and_head_and_the_layers_to_capture(
    run: Run, real_tree: RealTree
) -> None:
    reqs = requirements(run, "v0.4.5", "EAGLE3")
    embed = reqs[("target", "get_embed_and_head")]
    assert embed["status"] == "required"
    assert sites(embed) == {(EAGLE_WORKER, 120): ""}
    worker = real_tree("v0.4.5").read(EAGLE_WORKER).decode().splitlines()
    assert "self.target_worker.model_runner.model.get_embed_and_head()" in worker[120 - 1]
    # Set on the target runner only: at load time, and again when CUDA graphs are captured.
    capture = reqs[("target", "set_eagle3_layers_to_capture")]
    assert capture["status"] == "required"
    assert sites(capture) == {
        (MODEL_RUNNER, 223): "self.spec_algorithm.is_eagle3() and not self.is_draft_worker",
        (
            CUDA_GRAPH_RUNNER,
            237,
        ): "model_runner.spec_algorithm.is_eagle3() and not model_runner.is_draft_worker",
    }
    # The EAGLE3 draft keeps its own head: it takes the embedding and names its hot tokens.
    assert reqs[("draft", "set_embed")]["status"] == "required"
    hot = reqs[("draft", "get_hot_token_id")]
    assert hot["kind"] == "call" and sites(hot) == {
        (EAGLE_WORKER, 127): "self.speculative_algorithm.is_eagle3()"
    }
    assert ("draft", "set_embed_and_head") not in reqs
    assert all(member != "get_hidden_states_before_lm_head" for _, member in reqs)


def test_eagle_at_the_first_release_shares_the_target_embedding_and_head_with_the_draft(
    run: Run,
) -> None:
    reqs = requirements(run, "v0.4.1.post4", "EAGLE")
    assert sites(reqs[("target", "get_embed_and_head")]) == {(EAGLE_WORKER, 45): ""}
    assert sites(reqs[("draft", "set_embed_and_head")]) == {(EAGLE_WORKER, 46): ""}
    doc = run("interface", "v0.4.1.post4", "--format", "json", "--no-shipped", json_output=True)
    assert doc["algorithms"] == ["EAGLE"]
    assert doc["workers"] == {"EAGLE": ["EAGLEWorker"]}


def test_nextn_at_v0_4_3_post1_skips_the_shared_head_and_asks_nothing_of_the_target(
    run: Run,
) -> None:
    # `if not self.speculative_algorithm.is_nextn(): ... get_embed_and_head()`
    doc = run("interface", "v0.4.3.post1", "--format", "json", "--no-shipped", json_output=True)
    assert doc["algorithms"] == ["EAGLE", "NEXTN"]
    nextn = {
        r["member"]
        for r in doc["requirements"]
        if r["algorithm"] == "NEXTN" and r["role"] == "target"
    }
    assert nextn == set()
    assert any("NEXTN requires no target-model member" in w for w in doc["warnings"])


def test_v0_4_1_post4_is_the_first_release_with_a_speculative_worker(
    real_pypi: PypiSource, real_cache: Path, real_tree: RealTree
) -> None:
    assert real_pypi.versions()[0] == "v0.4.1.post4"
    assert EAGLE_WORKER in real_tree("v0.4.1.post4").files
    # The release before it is on the index too, with only the algorithm enum as a stub.
    # It is refused by the source, so its archive is fetched beside the cache, by hand.
    before = PypiSource(real_cache / "pypi-before-speculative")
    archive = before._cached_archive("v0.4.1.post3") or before._download("v0.4.1.post3")
    with zipfile.ZipFile(archive) as opened:
        speculative = [n for n in opened.namelist() if n.startswith("sglang/srt/speculative/")]
    assert speculative == ["sglang/srt/speculative/spec_info.py"]
    with pytest.raises(NoSpeculativeDecodingError, match=r"v0\.4\.1\.post4 is the first release"):
        real_pypi.resolve("v0.4.1.post3")
