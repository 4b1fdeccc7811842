"""Bad usage and bad input: one line on stderr, exit code 2, no traceback; a failed check
exits 1. Run through the real entry point (`python -m tracker`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def tracker(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tracker", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        check=False,
    )


def assert_one_line_error(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("tracker: error: ")
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in lines[0]


def test_an_unknown_algorithm_names_the_ones_the_version_has() -> None:
    result = tracker("interface", "v0.5.9", "-a", "EAGLE4")
    assert_one_line_error(result, "unknown algorithm EAGLE4", "EAGLE3")


def test_a_shortened_model_name_suggests_the_full_one() -> None:
    result = tracker("check", "v0.5.9", "-m", "KimiK25")
    assert_one_line_error(
        result, "registers no entry class KimiK25", "did you mean KimiK25ForConditionalGeneration"
    )


def test_a_directory_that_does_not_exist_is_bad_input(tmp_path: Path) -> None:
    result = tracker("interface", "local", "--source", f"dir:{tmp_path / 'missing'}")
    assert_one_line_error(result, "does not exist")


def test_a_directory_that_is_not_sglang_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text("print('hello')\n")
    result = tracker("interface", "local", "--source", f"dir:{tmp_path}")
    assert_one_line_error(result, "not an SGLang tree")


def test_a_path_that_is_not_a_git_repository_is_bad_input(tmp_path: Path) -> None:
    result = tracker("versions", "--repo", str(tmp_path))
    assert_one_line_error(result, "is not a git repository")


def test_an_unknown_tag_names_the_nearest_tags(make_git_repo: object) -> None:
    from sgl_trees import tree

    repo = make_git_repo({"v0.1.0": tree(), "v0.2.0": tree()})  # type: ignore[operator]
    result = tracker("interface", "v0.1.5", "--repo", str(repo))
    assert_one_line_error(result, "unknown version v0.1.5", "v0.1.0", "v0.2.0")


@pytest.mark.parametrize(
    "args", [["interface", "v0.3.0"], ["matrix", "v0.4.0..v0.4.5", "-a", "EAGLE"]]
)
def test_a_release_before_speculative_decoding_says_so_in_one_line(
    args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No index is needed to know it: a pip that cannot run would show in the message.
    monkeypatch.setenv("TRACKER_PIP", str(tmp_path / "no-such-pip"))
    result = tracker(*args, cwd=tmp_path)
    assert_one_line_error(
        result,
        "predates speculative decoding",
        "v0.4.1.post4 is the first release with a speculative worker",
    )
    assert result.stdout == ""


def test_unknown_options_are_usage_errors() -> None:
    result = tracker("diff", "--bogus")
    assert result.returncode == 2
    assert "No such option" in result.stderr


@pytest.mark.parametrize("args", [["--help"], ["diff", "--help"], ["check", "--help"]])
def test_help_explains_and_exits_zero(args: list[str]) -> None:
    result = tracker(*args)
    assert result.returncode == 0
    assert "Usage: tracker" in result.stdout


def test_the_top_level_help_lists_every_command_with_its_summary() -> None:
    out = tracker("--help").stdout
    for command in (
        "versions",
        "fetch",
        "facts",
        "interface",
        "snapshot",
        "diff",
        "check",
        "matrix",
        "history",
        "fix",
        "why",
    ):
        assert f"\n  {command} " in out


def test_a_failed_check_exits_one_not_two(make_git_repo: object) -> None:
    from sgl_trees import tree

    repo = make_git_repo({"v1.0.0": tree()})  # type: ignore[operator]
    result = tracker(
        "check", "v1.0.0", "--repo", str(repo), "-a", "EAGLE3", "--fail-on", "broken", "-q"
    )
    assert result.returncode == 1, result.stderr
    assert "WrapperForConditionalGeneration" in result.stdout
    ok = tracker(
        "check",
        "v1.0.0",
        "--repo",
        str(repo),
        "-a",
        "EAGLE3",
        "-m",
        "LlamaForCausalLM",
        "--fail-on",
        "broken",
        "-q",
    )
    assert ok.returncode == 0, ok.stderr


def test_git_mode_reads_a_synthetic_repository_end_to_end(make_git_repo: object) -> None:
    import json

    from sgl_trees import tree

    old = tree()
    new = tree({"models/wrapper.py": None})
    repo = make_git_repo({"v1.0.0": old, "v1.1.0": new}, annotated=False)  # type: ignore[operator]
    result = tracker(
        "diff", "v1.0.0", "v1.1.0", "--repo", str(repo), "--format", "json", "-a", "EAGLE3"
    )
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["schema"] == "sglang-tracker/diff@2"
    assert [(c["kind"], c["subject"]) for c in doc["changes"]] == [
        ("model_wrapper_removed", "WrapperForConditionalGeneration")
    ]


def test_why_says_of_which_model_another_role_requires_the_member(tmp_path: Path) -> None:
    from sgl_trees import write_tree

    root = write_tree(tmp_path / "sglang")
    result = tracker(
        "why", "set_embed", "--at", "local", "--source", f"dir:{root}", "--role", "target", "-q"
    )
    assert_one_line_error(result)
    assert result.stderr == (
        "tracker: error: EAGLE3 at local requires no member set_embed of the target model "
        "(it is required of the draft model by EAGLE3)\n"
    )


def test_a_template_with_a_syntax_error_is_one_line_naming_the_file(tmp_path: Path) -> None:
    from sgl_trees import write_tree

    root = write_tree(tmp_path / "sglang")
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "interface.txt.j2").write_text("{{ doc.version }}\n{% for r in %}\n")
    result = tracker(
        "interface", "local", "--source", f"dir:{root}", "-q", "--template-dir", str(templates)
    )
    assert_one_line_error(result, f"template {templates / 'interface.txt.j2'}, line 2")


def test_a_template_asking_for_what_the_report_lacks_is_one_line_naming_the_file(
    tmp_path: Path,
) -> None:
    from sgl_trees import write_tree

    root = write_tree(tmp_path / "sglang")
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "interface.txt.j2").write_text("{{ doc.no_such_field }}\n")
    result = tracker(
        "interface", "local", "--source", f"dir:{root}", "-q", "--template-dir", str(templates)
    )
    assert_one_line_error(result, str(templates / "interface.txt.j2"), "no_such_field")


def test_a_new_class_lacking_what_its_inner_model_has_fails_new_breaks(
    make_git_repo: object,
) -> None:
    from sgl_trees import BASE, tree

    new_vl = BASE["models/wrapper.py"].replace(
        "WrapperForConditionalGeneration", "NewVLForConditionalGeneration"
    )
    repo = make_git_repo(
        {  # type: ignore[operator]
            "v1.0.0": tree(),
            "v1.1.0": tree({"models/new_vl.py": new_vl}),
        }
    )
    result = tracker(
        "diff",
        "v1.0.0",
        "v1.1.0",
        "--repo",
        str(repo),
        "-a",
        "EAGLE3",
        "--fail-on",
        "new-breaks",
        "-q",
    )
    assert result.returncode == 1, result.stderr
    assert (
        "model wrappers · 1 new break (0 regressions, 1 new class), 0 fixed, "
        "0 new supported, 0 new unsupported, 0 removed"
    ) in result.stdout


def test_a_damaged_role_rules_file_is_one_line_naming_the_file_and_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sgl_trees import write_tree

    from tests.cli.conftest import run_tracker
    from tracker.analysis import roles
    from tracker.common.resources import queries_dir

    shipped = (queries_dir() / "roles.toml").read_text(encoding="utf-8")
    damaged = tmp_path / "queries"
    damaged.mkdir()
    (damaged / "roles.toml").write_text(
        shipped.replace('role = "draft"', 'role = "drafts"', 1), encoding="utf-8"
    )
    monkeypatch.setattr(roles, "queries_dir", lambda: damaged)
    roles.load_rules.cache_clear()
    try:
        root = write_tree(tmp_path / "sglang")
        result = run_tracker("interface", "local", "--source", f"dir:{root}", "-q")
    finally:
        roles.load_rules.cache_clear()
    assert result.exit_code == 2
    assert result.stderr == (
        "tracker: error: roles.toml: [[receiver]] #3 (self.draft_model_runner.model): "
        "role 'drafts' is not one of target, draft, runner\n"
    )


def test_tracker_debug_shows_the_traceback_but_keeps_the_exit_code(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    result = subprocess.run(
        [sys.executable, "-m", "tracker", "interface", "local", "--source", f"dir:{missing}"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "TRACKER_DEBUG": "1"},
    )
    assert result.returncode == 2, result.stderr
    assert "Traceback" in result.stderr and "SourceError" in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("tracker: error: ")
