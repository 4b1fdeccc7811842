"""`tracker check --role`: any class checked in any role, on a tiny SGLang-shaped tree read
as a directory; and `--explain-kinds`, which says what decided each class's kind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import run_tracker
from tests.unit.sgl_trees import tree

MODEL_CONFIG = """
    class ModelConfig:
        def __init__(self, model_path):
            self.model_path = model_path

        @staticmethod
        def from_server_args(server_args, model_path=None):
            return ModelConfig(model_path=model_path or server_args.model_path)
    """


@pytest.fixture
def root(tmp_path: Path) -> Path:
    for path, text in tree({"configs/model_config.py": MODEL_CONFIG}).items():
        target = tmp_path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return tmp_path


def check(root: Path, *args: str, code: int = 0) -> dict[str, Any]:
    result = run_tracker(
        "check", "local", "--source", f"dir:{root}", "-q", "--format", "json", *args
    )
    assert result.exit_code == code, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def test_a_target_class_checked_as_a_draft_lists_the_draft_members_it_lacks(root: Path) -> None:
    doc = check(root, "-a", "EAGLE3", "--role", "draft", "-m", "LlamaForCausalLM")
    [row] = doc["checks"]
    assert (row["model"], row["role"], row["kind"]) == ("LlamaForCausalLM", "draft", "target")
    assert row["status"] == "broken" and row["missing"] == ["set_embed"]
    assert row["role_evidence"].startswith(
        "the draft checkpoint defaults to the target's: configs/model_config.py:"
    )


def test_a_draft_class_checked_as_a_target_gets_the_target_requirements(root: Path) -> None:
    doc = check(root, "-a", "EAGLE3", "--role", "target", "-m", "LlamaForCausalLMEagle")
    [row] = doc["checks"]
    assert (row["role"], row["kind"], row["status"]) == ("target", "draft", "ok")
    assert [p["member"] for p in row["provisions"]] == [
        "get_embed_and_head",
        "set_eagle3_layers_to_capture",
    ]
    assert row["role_evidence"] == "checked as the target model on request (--role target)"


def test_without_role_the_draft_rows_of_target_classes_show_with_kind_all(root: Path) -> None:
    plain = check(root, "-a", "EAGLE3", "-m", "LlamaForCausalLM")
    assert [r["role"] for r in plain["checks"]] == ["target"]
    both = check(root, "-a", "EAGLE3", "--kind", "all", "-m", "LlamaForCausalLM")
    assert [r["role"] for r in both["checks"]] == ["target", "draft"]


def test_role_without_a_model_is_bad_usage(root: Path) -> None:
    result = run_tracker("check", "local", "--source", f"dir:{root}", "--role", "draft")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "tracker: error: --role needs -m/--model: the classes to check in that role"
    )


def test_an_unknown_role_is_bad_usage(root: Path) -> None:
    result = run_tracker(
        "check", "local", "--source", f"dir:{root}", "--role", "drafter", "-m", "LlamaForCausalLM"
    )
    assert result.exit_code == 2
    assert "Invalid value for '--role'" in result.stderr


def test_explain_kinds_says_what_decided_the_kind_and_the_role(root: Path) -> None:
    args = ("check", "local", "--source", f"dir:{root}", "-q", "-a", "EAGLE3")
    quiet = run_tracker(*args, "-m", "LlamaForCausalLM", "--kind", "all")
    assert "kind " not in quiet.stdout
    result = run_tracker(*args, "-m", "LlamaForCausalLM", "--kind", "all", "--explain-kinds")
    assert result.exit_code == 0, result.output
    lines = [line.strip() for line in result.stdout.splitlines()]
    kind = "kind     target: no LogitsProcessor or Pooler constructed; name matches rule '.*'"
    assert lines.count(kind) == 2
    assert any(
        line.startswith("role     draft: the draft checkpoint defaults to the target's")
        for line in lines
    )


def test_an_algorithm_the_code_builds_no_worker_for_is_warned_of_not_passed_silently(
    tmp_path: Path,
) -> None:
    # A fork's placeholder: the enum names SAGUARO, the factory builds nothing for it.
    spec_info = tree()["python/sglang/srt/speculative/spec_info.py"].replace(
        "    EAGLE3 = auto()\n", "    EAGLE3 = auto()\n    SAGUARO = auto()\n"
    )
    assert "SAGUARO" in spec_info
    for path, text in tree().items():
        target = tmp_path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(spec_info if path.endswith("spec_info.py") else text, encoding="utf-8")
    result = run_tracker("check", "local", "--source", f"dir:{tmp_path}", "-a", "SAGUARO")
    assert result.exit_code == 0, result.output
    assert "SAGUARO at local: no worker class is built for it" in result.stderr
    quiet = run_tracker("check", "local", "--source", f"dir:{tmp_path}", "-a", "EAGLE3")
    assert "no worker class" not in quiet.stderr


def test_a_tree_named_as_the_version_is_the_source_the_json_names(root: Path) -> None:
    result = run_tracker("check", f"dir:{root}", "-a", "EAGLE3", "-q", "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["source"] == f"dir:{root}"


def test_markdown_does_not_link_a_local_tree_to_an_upstream_tag_it_does_not_have(
    root: Path,
) -> None:
    args = ("interface", "local", "--source", f"dir:{root}", "-q", "--format", "md")
    plain = run_tracker(*args)
    assert plain.exit_code == 0, plain.output
    assert "github.com" not in plain.stdout
    assert "`speculative/eagle_worker.py:" in plain.stdout
    pattern = "https://example.test/{tag}/{path}#L{line}"
    linked = run_tracker(*args, "--link-pattern", pattern)
    assert "](https://example.test/local/python/sglang/srt/speculative/eagle_worker.py#L" in (
        linked.stdout
    )
