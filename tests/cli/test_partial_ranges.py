"""`matrix` and `history` over a range that starts after the source's first release: a
class already there is "present since before" the range, not "appeared" at its start."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from sgl_trees import BASE, tree

Tracker = Callable[..., Result]  # the `cli_run` fixture of tests/cli/conftest.py

MISTRAL = BASE["models/llama.py"].replace("LlamaForCausalLM", "MistralForCausalLM")


@pytest.fixture
def repo(make_git_repo: Callable[..., Path]) -> Path:
    # Llama and the wrapper from the start; Mistral new in v1.1.0.
    with_mistral = {**tree(), "python/sglang/srt/models/mistral.py": MISTRAL}
    return make_git_repo({"v1.0.0": tree(), "v1.1.0": with_mistral, "v1.2.0": with_mistral})


def events(doc: dict[str, object]) -> set[tuple[str, str, str, str]]:
    return {
        (e["version"], e["kind"], e["model"], e["status"])  # type: ignore[index]
        for e in doc["events"]
    }  # type: ignore[attr-defined]


def test_a_class_already_there_is_present_and_a_new_one_appeared(
    repo: Path, cli_run: Tracker
) -> None:
    result = cli_run("matrix", "v1.1.0..v1.2.0", "--repo", str(repo), "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert events(json.loads(result.stdout)) == {
        ("v1.1.0", "present", "LlamaForCausalLM", "ok"),
        ("v1.1.0", "present", "WrapperForConditionalGeneration", "broken"),
        ("v1.1.0", "appeared", "MistralForCausalLM", "ok"),
    }


def test_the_matrix_text_says_since_before_the_range(repo: Path, cli_run: Tracker) -> None:
    result = cli_run("matrix", "v1.1.0..v1.2.0", "--repo", str(repo), "--events-only")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    # The event column is as wide as its longest entry, "present" here.
    assert (
        "  v1.1.0  present WrapperForConditionalGeneration (since before v1.1.0, "
        "broken) · get_embed_and_head, set_eagle3_layers_to_capture"
    ) in lines
    assert "  (1 class appeared supported)" in lines
    assert "  (1 class supported since before v1.1.0)" in lines


def test_history_of_a_class_already_there_says_since_before(repo: Path, cli_run: Tracker) -> None:
    result = cli_run(
        "history", "LlamaForCausalLM", "v1.1.0..v1.2.0", "--repo", str(repo), "-a", "EAGLE3"
    )
    assert result.exit_code == 0, result.stderr
    assert "  v1.1.0         present   ok (since before v1.1.0)" in result.stdout.splitlines()


def test_at_the_source_first_release_every_class_appeared(repo: Path, cli_run: Tracker) -> None:
    result = cli_run("matrix", "v1.0.0..v1.1.0", "--repo", str(repo), "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert {kind for _, kind, _, _ in events(json.loads(result.stdout))} == {"appeared"}
