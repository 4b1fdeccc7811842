"""`tracker triage`: from the AttributeError a user hit to the algorithms, sites, the
release that fixes it and the patch."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
from click.testing import Result

from tracker.common.errors import TrackerError
from tracker.release.triage import parse_error

Tracker = Callable[..., Result]  # the `tracker` fixture of tests/cli/conftest.py

KIMI = "KimiK25ForConditionalGeneration"
KIMI_ERROR = f"AttributeError: '{KIMI}' object has no attribute 'get_embed_and_head'"


# ------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("message", "form", "owner", "member"),
    [
        (KIMI_ERROR, "object", KIMI, "get_embed_and_head"),
        (
            "AttributeError: type object 'Qwen3ForCausalLM' has no attribute 'set_embed'",
            "class",
            "Qwen3ForCausalLM",
            "set_embed",
        ),
        (
            "AttributeError: module 'sglang.srt.models.kimi_k25' has no attribute 'EntryClass'",
            "module",
            "sglang.srt.models.kimi_k25",
            "EntryClass",
        ),
        (
            "AttributeError: 'LogitsProcessorOutput' object has no attribute 'mm_input_embeds'. "
            "Did you mean: 'input_embeds'?",
            "object",
            "LogitsProcessorOutput",
            "mm_input_embeds",
        ),
    ],
)
def test_each_wording_of_a_missing_attribute_is_understood(
    message: str, form: str, owner: str, member: str
) -> None:
    parsed = parse_error(message)
    assert (parsed.form, parsed.owner, parsed.member) == (form, owner, member)


def test_in_a_traceback_the_last_attribute_error_is_the_one_read() -> None:
    traceback = (
        "Traceback (most recent call last):\n"
        '  File "eagle_worker.py", line 157, in __init__\n'
        "    embed, head = self.target_worker.model_runner.model.get_embed_and_head()\n"
        "AttributeError: 'Other' object has no attribute 'first'\n"
        "During handling of the above exception, another exception occurred:\n"
        f"{KIMI_ERROR}\n"
    )
    parsed = parse_error(traceback)
    assert (parsed.owner, parsed.member, parsed.text) == (KIMI, "get_embed_and_head", KIMI_ERROR)


def test_a_message_that_is_not_an_attribute_error_exits_2_with_one_line(cli_run: Tracker) -> None:
    with pytest.raises(TrackerError):
        parse_error("RuntimeError: CUDA out of memory")
    result = cli_run("triage", "RuntimeError: CUDA out of memory", "--at", "v0.5.9")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("tracker: error: cannot read an attribute error")


# --------------------------------------------------------------------- real releases


@pytest.fixture(scope="module")
def kimi(cli_run: Tracker, real_env: Callable[[], AbstractContextManager[None]]) -> str:
    with real_env():
        result = cli_run(
            "triage", KIMI_ERROR, "--at", "v0.5.9", "--source", "pypi", "--until", "v0.5.10"
        )
    assert result.exit_code == 0, result.stderr
    return result.stdout


@pytest.mark.realdata
def test_triage_names_the_class_and_the_algorithms_that_need_the_member(kimi: str) -> None:
    lines = kimi.splitlines()
    assert lines[0] == KIMI_ERROR
    assert f"{KIMI} · target model · models/kimi_k25.py · sglang v0.5.9" in lines
    assert (
        f"→ {KIMI} lacks get_embed_and_head, which EAGLE, EAGLE3 require "
        "of the target model at v0.5.9"
    ) in lines


@pytest.mark.realdata
def test_triage_lists_the_worker_sites_that_call_the_member(kimi: str) -> None:
    eagle3 = kimi.split("  EAGLE3 ", 1)[1]
    assert "workers: EAGLEWorker, EAGLEWorkerV2" in eagle3
    # STANDALONE's workers never call it: it is not listed.
    assert "  STANDALONE" not in kimi
    assert "speculative/eagle_worker.py:157 in EAGLEWorker.__init__" in eagle3
    assert "speculative/eagle_worker_v2.py:194 in EagleDraftWorker.init_lm_head" in eagle3


@pytest.mark.realdata
def test_triage_says_which_later_release_fixes_it_and_prints_the_patch(kimi: str) -> None:
    assert (
        "  ✗ EAGLE3      broken · missing get_embed_and_head, "
        "set_eagle3_layers_to_capture · since v0.5.9, where the class is new · "
        "fixed in v0.5.10"
    ) in kimi.splitlines()
    assert (
        f"fix: upgrade to v0.5.10, or add the delegating members (tracker fix {KIMI} --at v0.5.9):"
    ) in kimi
    patch = kimi.split("--- a/python/sglang/srt/models/kimi_k25.py\n", 1)[1]
    assert "+    def get_embed_and_head(self):\n" in patch
    assert "+        return self.language_model.set_eagle3_layers_to_capture(layer_ids)\n" in patch


@pytest.mark.realdata
def test_a_missing_forward_output_field_is_explained_as_one(tracker: Tracker) -> None:
    result = tracker(
        "triage",
        "AttributeError: 'LogitsProcessorOutput' object has no attribute 'mm_input_embeds'",
        "--at",
        "v0.5.9",
        "-a",
        "EAGLE3",
        "--source",
        "pypi",
        "--format",
        "json",
    )
    doc = json.loads(result.stdout)
    assert doc["schema"] == "sglang-tracker/triage@3"
    assert doc["models"] == [] and doc["checks"] == [] and doc["patch"] is None
    assert [(f["owner"], f["name"], f["sites"][0]["line"]) for f in doc["fields"]] == [
        ("logits_output", "mm_input_embeds", 302)
    ]
    assert doc["verdict"].startswith("mm_input_embeds is read from logits_output by EAGLE3")


@pytest.mark.realdata
def test_a_traceback_can_come_from_stdin_and_a_fine_class_is_not_blamed(tracker: Tracker) -> None:
    result = tracker(
        "triage",
        "-",
        "--at",
        "v0.5.9",
        "-a",
        "EAGLE3",
        "--source",
        "pypi",
        "--format",
        "json",
        input="Traceback...\nAttributeError: 'DeepseekV3ForCausalLM' object has "
        "no attribute 'get_embed_and_head'\n",
    )
    doc = json.loads(result.stdout)
    assert [c["status"] for c in doc["checks"]] == ["ok"]
    assert doc["fix_command"] == ""
    assert "provides get_embed_and_head at v0.5.9" in doc["verdict"]


@pytest.mark.realdata
def test_an_unknown_class_gets_suggestions(tracker: Tracker) -> None:
    result = tracker(
        "triage",
        "AttributeError: 'KimiK25ForConditionalGen' object has no attribute 'get_embed_and_head'",
        "--at",
        "v0.5.9",
        "--source",
        "pypi",
        "-a",
        "EAGLE3",
    )
    assert (
        f"KimiK25ForConditionalGen is not an entry class registered at sglang v0.5.9; "
        f"did you mean {KIMI}"
    ) in result.stdout


# ------------------------------------------------------- a file, the version, since when

WRAPPER = "WrapperForConditionalGeneration"


def _traceback(model: str, folder: str = "/srv/site-packages") -> str:
    return (
        "Traceback (most recent call last):\n"
        f'  File "{folder}/sglang/srt/speculative/eagle_worker.py", line 10, in __init__\n'
        "    embed, head = self.target_worker.model_runner.model.get_embed_and_head()\n"
        f"AttributeError: '{model}' object has no attribute 'get_embed_and_head'\n"
    )


@pytest.fixture
def releases(make_git_repo: Callable[..., Path]) -> Path:
    """The wrapper works in v1.0.0, breaks in v1.1.0, is fixed in v1.3.0; NewVL arrives
    broken in v1.1.0."""
    from sgl_trees import BASE, tree

    fixed = BASE["models/wrapper.py"].replace(
        "        self.language_model = LlamaForCausalLM(config)\n",
        "        self.language_model = LlamaForCausalLM(config)\n\n"
        "    def get_embed_and_head(self):\n"
        "        return self.language_model.get_embed_and_head()\n\n"
        "    def set_eagle3_layers_to_capture(self, layer_ids=None):\n"
        "        return self.language_model.set_eagle3_layers_to_capture(layer_ids)\n",
    )
    new_vl = BASE["models/wrapper.py"].replace(WRAPPER, "NewVLForConditionalGeneration")
    return make_git_repo(
        {
            "v1.0.0": tree({"models/wrapper.py": fixed}),
            "v1.1.0": tree({"models/new_vl.py": new_vl}),
            "v1.2.0": tree({"models/new_vl.py": new_vl}),
            "v1.3.0": tree({"models/wrapper.py": fixed, "models/new_vl.py": new_vl}),
        }
    )


def test_a_traceback_file_is_read_and_its_paths_give_the_version(
    releases: Path, cli_run: Tracker, tmp_path: Path
) -> None:
    crash = tmp_path / "crash.log"
    crash.write_text(_traceback(WRAPPER, "/opt/sglang-1.2.0/python"))
    result = cli_run("triage", str(crash), "--repo", str(releases), "-a", "EAGLE3")
    assert result.exit_code == 0, result.stderr
    assert (
        "tracker: note: reading sglang v1.2.0 (from the traceback's file paths); "
        "--at VERSION picks another"
    ) in result.stderr.splitlines()
    assert f"{WRAPPER} · target model · models/wrapper.py · sglang v1.2.0" in result.stdout


def test_triage_says_since_when_a_class_that_worked_is_broken(
    releases: Path, cli_run: Tracker
) -> None:
    result = cli_run(
        "triage", _traceback(WRAPPER), "--at", "v1.2.0", "--repo", str(releases), "-a", "EAGLE3"
    )
    assert result.exit_code == 0, result.stderr
    assert (
        "  ✗ EAGLE3      broken · missing get_embed_and_head, set_eagle3_layers_to_capture"
        " · since v1.1.0, where it broke · fixed in v1.3.0"
    ) in result.stdout.splitlines()


def test_triage_says_since_when_a_new_class_is_broken(releases: Path, cli_run: Tracker) -> None:
    result = cli_run(
        "triage",
        "-",
        "--at",
        "v1.2.0",
        "--repo",
        str(releases),
        "-a",
        "EAGLE3",
        "--format",
        "json",
        input=_traceback("NewVLForConditionalGeneration"),
    )
    assert result.exit_code == 0, result.stderr
    (check,) = json.loads(result.stdout)["checks"]
    assert (check["broken_since"], check["broken_since_how"], check["fixed_in"]) == (
        "v1.1.0",
        "added",
        "",
    )


def test_without_at_or_a_version_in_the_paths_the_latest_release_is_read_and_named(
    releases: Path, cli_run: Tracker
) -> None:
    result = cli_run(
        "triage", "-", "--repo", str(releases), "-a", "EAGLE3", input=_traceback(WRAPPER)
    )
    assert result.exit_code == 0, result.stderr
    assert (
        "tracker: note: reading sglang v1.3.0 (the latest release: the traceback names "
        "none); --at VERSION picks another"
    ) in result.stderr.splitlines()
    assert f"→ {WRAPPER} provides get_embed_and_head at v1.3.0" in result.stdout


# ---------------------------------------------- a pasted traceback, no version given


def _installed(path: str, line: int, function: str, call: str, error: str) -> str:
    """A traceback as an installed SGLang prints it: no version in its paths."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.11/site-packages/sglang/srt/managers/scheduler.py", '
        "line 2700, in run_scheduler_process\n"
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank)\n"
        f'  File "/usr/lib/python3.11/site-packages/sglang/srt/{path}", line {line}, '
        f"in {function}\n"
        f"    {call}\n"
        f"{error}\n"
    )


def test_frames_are_read_as_repo_paths_wherever_sglang_is_installed() -> None:
    from tracker.release.triage import Frame, frames_in

    text = (
        '  File "/opt/venv/lib/python3.11/site-packages/sglang/srt/a.py", line 3, in f\n'
        '  File "/home/me/sglang/python/sglang/srt/b.py", line 4, in Cls.g\n'
        '  File "C:\\envs\\sglang\\Lib\\site-packages\\sglang\\srt\\c.py", line 5, in h\n'
        '  File "/usr/lib/python3.11/threading.py", line 975, in run\n'
    )
    assert frames_in(text) == [
        Frame("python/sglang/srt/a.py", 3, "f"),
        Frame("python/sglang/srt/b.py", 4, "Cls.g"),
        Frame("python/sglang/srt/c.py", 5, "h"),
    ]


def test_a_frame_matches_a_release_only_at_a_site_of_the_member_the_error_names() -> None:
    from tracker.release.triage import Frame, releases_matching

    at = "python/sglang/srt/speculative/eagle_worker.py"
    recorded = {
        "v1": frozenset({(at, 10, "EAGLEWorker.__init__", "get_embed_and_head")}),
        "v2": frozenset({(at, 10, "EAGLEWorker.__init__", "hot_token_id")}),
        "v3": frozenset({(at, 10, "EAGLEWorker.__init__", "get_embed_and_head")}),
        "v4": frozenset({(at, 10, "EagleDraftWorker.__init__", "get_embed_and_head")}),
    }
    frames = [Frame(at, 10, "__init__")]
    found, hits = releases_matching(frames, recorded, "get_embed_and_head")
    assert (found, hits) == (["v1", "v3", "v4"], frames)
    assert releases_matching([Frame(at, 10, "forward")], recorded, "get_embed_and_head") == (
        [],
        [],
    )


@pytest.mark.realdata
def test_a_pasted_traceback_is_read_at_the_release_whose_site_its_frame_is_at(
    tracker: Tracker,
) -> None:
    text = _installed(
        "speculative/eagle_worker.py",
        157,
        "__init__",
        "embed, head = self.target_worker.model_runner.model.get_embed_and_head()",
        KIMI_ERROR,
    )
    result = tracker("triage", "-", "--source", "pypi", "--until", "v0.5.10", input=text)
    assert result.exit_code == 0, result.stderr
    assert (
        "tracker: note: reading sglang v0.5.9 (the traceback's frames match its sites of "
        "get_embed_and_head: speculative/eagle_worker.py:157); --at VERSION picks another"
    ) in result.stderr.splitlines()
    assert f"{KIMI} · target model · models/kimi_k25.py · sglang v0.5.9" in result.stdout
    assert f"fix: upgrade to v0.5.10, or add the delegating members (tracker fix {KIMI}" in (
        result.stdout
    )
    assert "pass --at" not in result.stdout  # the frame decided it


@pytest.mark.realdata
def test_frames_several_releases_share_that_disagree_say_where_it_broke_and_ask_for_at(
    tracker: Tracker,
) -> None:
    # multi_layer_eagle_worker.py:149 calls get_embed_and_head in v0.5.9 … v0.5.11: KimiK25
    # lacks it in v0.5.9 only.
    text = _installed(
        "speculative/multi_layer_eagle_worker.py",
        149,
        "__init__",
        "embed, head = self.target_worker.model_runner.model.get_embed_and_head()",
        KIMI_ERROR,
    )
    result = tracker("triage", "-", "--source", "pypi", "--format", "json", input=text)
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["version_candidates"] == ["v0.5.9", "v0.5.10", "v0.5.10.post1", "v0.5.11"]
    assert doc["version"] == "v0.5.11"
    assert doc["broken_runs"] == [{"first": "v0.5.9", "last": "v0.5.9", "fixed_in": "v0.5.10"}]
    text_result = tracker("triage", "-", "--source", "pypi", input=text)
    assert (
        f"→ {KIMI} lacks get_embed_and_head: broken in v0.5.9, fixed in v0.5.10; pass --at "
        "VERSION for the release you run"
    ) in text_result.stdout.splitlines()


@pytest.mark.realdata
def test_frames_no_release_records_read_the_latest_and_say_where_it_was_broken(
    tracker: Tracker,
) -> None:
    text = _installed(
        "speculative/eagle_worker.py", 9999, "__init__", "embed, head = ...", KIMI_ERROR
    )
    result = tracker("triage", "-", "--source", "pypi", "--format", "json", input=text)
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["version_from"] == "the latest release: the traceback names none"
    assert doc["version_candidates"] == []
    assert doc["broken_runs"] == [{"first": "v0.5.9", "last": "v0.5.9", "fixed_in": "v0.5.10"}]


@pytest.mark.realdata
def test_since_when_names_the_contract_break_not_the_missing_member_before_it(
    tracker: Tracker,
) -> None:
    result = tracker(
        "triage",
        "ValueError: too many values to unpack (expected 2)",
        "--at",
        "v0.5.11",
        "-m",
        "Qwen3_5ForConditionalGeneration",
        "-a",
        "EAGLE3",
        "--source",
        "pypi",
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.stderr
    (check,) = json.loads(result.stdout)["checks"]
    assert (check["broken_since"], check["broken_since_how"], check["fixed_in"]) == (
        "v0.5.11",
        "changed",
        "v0.5.22",
    )
    assert check["broken_before"] == {
        "since": "v0.5.9",
        "missing": ["set_eagle3_layers_to_capture"],
        "contract": False,
    }
    text = tracker(
        "triage",
        "ValueError: too many values to unpack (expected 2)",
        "--at",
        "v0.5.11",
        "-m",
        "Qwen3_5ForConditionalGeneration",
        "-a",
        "EAGLE3",
        "--source",
        "pypi",
    ).stdout
    assert (
        "since v0.5.11, where its aux-hidden-state contract broke (broken before that since "
        "v0.5.9: missing set_eagle3_layers_to_capture) · fixed in v0.5.22"
    ) in text


@pytest.mark.realdata
def test_the_status_column_lines_up_when_an_algorithm_name_is_long(tracker: Tracker) -> None:
    result = tracker("triage", KIMI_ERROR, "--at", "v0.5.23", "--source", "pypi")
    assert result.exit_code == 0, result.stderr
    rows = result.stdout.split("\nstatus at v0.5.23:\n", 1)[1].splitlines()
    rows = [row for row in rows if row.startswith("  ✓ ")]
    assert any("FROZEN_KV_MTP" in row for row in rows)
    assert len({row.index(" ok") for row in rows}) == 1, rows
