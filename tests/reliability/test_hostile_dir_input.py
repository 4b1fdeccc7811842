"""Hostile files in a `dir:` source: the analysis of the rest of the tree goes on, the user
hears which files were odd, and nothing ends in a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sgl_trees import tree as tiny_tree

from tests.reliability.support import (
    SRT,
    assert_one_line_error,
    fresh_cache,
    run_cli,
    run_process,
    tracker_command,
    tracker_env,
)
from tracker.analysis.compat import build_compat
from tracker.analysis.index import VersionIndex
from tracker.analysis.interface import build_interface
from tracker.extract.parse import extract_facts
from tracker.sources.base import MAX_FILE_BYTES, content_id

MakeDir = Callable[..., Path]

ODD = f"{SRT}models/odd.py"


def _interface(root: Path, cache: Path | None = None) -> tuple[dict[str, Any], list[str]]:
    """The interface JSON and stderr lines; a cache of its own unless `cache` is given (an
    answer from a cached snapshot differs from a fresh one: see test_determinism.py)."""
    run = run_cli(
        "interface",
        "local",
        "--source",
        f"dir:{root}",
        "--format",
        "json",
        env={"TRACKER_CACHE_DIR": str(cache)} if cache else fresh_cache(),
    )
    assert run.code == 0, run.stderr
    return json.loads(run.stdout), run.error_lines


def _checks(root: Path) -> dict[str, dict[str, Any]]:
    run = run_cli(
        "check", "local", "--source", f"dir:{root}", "-a", "EAGLE3", "--all", "--format", "json"
    )
    assert run.code == 0, run.stderr
    return {c["model"]: c for c in json.loads(run.stdout)["checks"]}


def _target_members(doc: dict[str, Any], algorithm: str = "EAGLE3") -> set[str]:
    return {
        r["member"]
        for r in doc["requirements"]
        if r["algorithm"] == algorithm and r["role"] == "target"
    }


BASELINE_EAGLE3_TARGET = {"get_embed_and_head", "set_eagle3_layers_to_capture"}


def _same_answer(doc: dict[str, Any], baseline: dict[str, Any]) -> None:
    """The interface of a tree with one odd extra model file is the tree's interface (the
    warnings may name the odd file in addition)."""

    def answer(d: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in d.items() if k != "source"}
        out["warnings"] = [w for w in d.get("warnings", []) if "models/odd.py" not in w]
        return out

    assert answer(doc) == answer(baseline)


# -- syntax errors --------------------------------------------------------------------------------

BROKEN_MODEL = """\
from torch import nn


class Broken(nn.Module:
    def get_embed_and_head(self)
        return self.embed, self.head


EntryClass = Broken
"""


def test_a_model_file_with_syntax_errors_still_gives_an_answer_and_a_warning_naming_it(
    sgl_dir: MakeDir,
) -> None:
    baseline, _ = _interface(sgl_dir("clean"))
    doc, stderr = _interface(sgl_dir("broken", {ODD: BROKEN_MODEL}))
    _same_answer(doc, baseline)
    warnings = [line for line in stderr if line.startswith("tracker: warning:")]
    assert len(warnings) == 1, stderr
    assert "python/sglang/srt/models/odd.py" in warnings[0]
    assert "syntax error" in warnings[0]
    assert "has a syntax error at line 4: " in warnings[0]


def test_a_syntax_error_is_reported_at_the_line_python_gives_not_at_tree_sitters(
    sgl_dir: MakeDir,
) -> None:
    worker = f"{SRT}speculative/eagle_worker.py"
    lines = (sgl_dir("probe") / worker).read_text().splitlines(keepends=True)
    # An unclosed call in __init__, before the target's call: tree-sitter's ERROR node
    # starts at the top of the file.
    at = next(i for i, line in enumerate(lines) if "get_embed_and_head()" in line)
    lines.insert(at, "        self.oops = dict(\n")
    root = sgl_dir("unclosed", {worker: "".join(lines)})
    facts = extract_facts(worker, "x", "".join(lines).encode())
    assert at + 1 not in facts.error_lines  # what the warning said before
    _, stderr = _interface(root)
    (warning,) = [line for line in stderr if line.startswith("tracker: warning:")]
    assert warning == (
        f"tracker: warning: local: {worker} has a syntax error at line {at + 1}: "
        "'(' was never closed; analysed what tree-sitter recovered"
    )


def test_a_worker_file_with_a_syntax_error_elsewhere_keeps_the_requirements_it_still_shows(
    sgl_dir: MakeDir,
) -> None:
    worker = f"{SRT}speculative/eagle_worker.py"
    text = (sgl_dir("probe") / worker).read_text()
    # A stray line of garbage after the class: tree-sitter recovers the class above it.
    root = sgl_dir("broken-worker", {worker: text + "\ndef oops(:\n    )))\n"})
    doc, stderr = _interface(root)
    assert _target_members(doc) >= {"get_embed_and_head"}
    assert any("speculative/eagle_worker.py" in line and "syntax" in line for line in stderr)


def test_the_syntax_error_warning_is_shown_again_when_the_answer_comes_from_the_cache(
    sgl_dir: MakeDir,
) -> None:
    root = sgl_dir("broken", {ODD: BROKEN_MODEL})
    cache = root.parent / "shared-cache"
    _, cold = _interface(root, cache)
    _, warm = _interface(root, cache)
    assert any("models/odd.py" in line for line in cold)
    assert any("models/odd.py" in line for line in warm), (
        "the second run (snapshot from the cache) no longer names the file with syntax errors"
    )


# -- bytes that are not UTF-8 text ----------------------------------------------------------------

LATIN1_MODEL = (
    "# Mod\xe8le \xe9crit en latin-1\n"
    "from torch import nn\n\n\n"
    "class Latin(nn.Module):\n"
    "    def get_embed_and_head(self):\n"
    "        return '\xff\xfe', '\xe9'\n\n\n"
    "EntryClass = Latin\n"
).encode("latin-1")


def test_a_model_file_in_latin1_is_analysed_like_any_other(sgl_dir: MakeDir) -> None:
    checks = _checks(sgl_dir("latin", {ODD: LATIN1_MODEL}))
    assert checks["Latin"]["status"] == "broken"
    assert checks["Latin"]["missing"] == ["set_eagle3_layers_to_capture"]
    assert checks["LlamaForCausalLM"]["status"] == "ok"


def test_a_latin1_file_with_a_coding_declaration_is_read_in_its_declared_encoding(
    sgl_dir: MakeDir,
) -> None:
    declared = (
        "# -*- coding: latin-1 -*-\n"
        "from torch import nn\n\n\n"
        "class Mod\xe8le(nn.Module):\n"
        "    def get_embed_and_head(self):\n"
        "        return '\xe9', '\xe9'\n\n\n"
        "EntryClass = Mod\xe8le\n"
    ).encode("latin-1")
    root = sgl_dir("declared", {ODD: declared})
    _, stderr = _interface(root)
    assert stderr == []
    assert "Mod\xe8le" in _checks(root)


def test_a_file_that_is_not_utf8_is_named_in_a_warning(sgl_dir: MakeDir) -> None:
    _, stderr = _interface(sgl_dir("latin", {ODD: LATIN1_MODEL}))
    assert any("models/odd.py" in line for line in stderr), stderr


@pytest.mark.parametrize("folder", ["speculative", "model_executor"])
def test_a_non_utf8_byte_inside_a_name_in_a_fully_read_file_does_not_stop_the_analysis(
    sgl_dir: MakeDir, folder: str
) -> None:
    odd = b"class Odd:\n    def f(self):\n        self.\xf3erver_args.x()\n"
    root = sgl_dir("odd-name", {f"{SRT}{folder}/odd.py": odd})
    run = run_process("interface", "local", "--source", f"dir:{root}", "--format", "json")
    assert run.code == 0, run.stderr
    assert _target_members(json.loads(run.stdout)) >= BASELINE_EAGLE3_TARGET


def test_a_non_utf8_byte_inside_a_name_in_a_model_file_is_tolerated(sgl_dir: MakeDir) -> None:
    # Model files are read for their definitions only: no text predicate sees the name.
    odd = b"class Odd:\n    def f(self):\n        self.\xf3erver_args.x()\n"
    doc, _ = _interface(sgl_dir("odd-model", {ODD: odd}))
    assert _target_members(doc) >= BASELINE_EAGLE3_TARGET


def test_a_file_with_nul_bytes_is_analysed_and_named_in_a_warning(sgl_dir: MakeDir) -> None:
    nul = (
        b"from torch import nn\n\n\nclass Nul(nn.Module):\n"
        b"    def get_embed_and_head(self):\n        return 1\x00\x00\n\x00\n\nEntryClass = Nul\n"
    )
    root = sgl_dir("nul", {ODD: nul})
    baseline, _ = _interface(sgl_dir("clean"))
    doc, stderr = _interface(root)
    _same_answer(doc, baseline)
    assert any("models/odd.py" in line for line in stderr), stderr
    assert "Nul" in _checks(root)


def test_a_file_of_random_binary_bytes_does_not_stop_the_analysis(sgl_dir: MakeDir) -> None:
    noise = bytes((i * 7919 + 13) % 256 for i in range(200_000))
    baseline, _ = _interface(sgl_dir("clean"))
    doc, _ = _interface(sgl_dir("noise", {ODD: noise}))
    _same_answer(doc, baseline)


# -- size and depth -------------------------------------------------------------------------------


def _generated_descriptor_module(size: int) -> bytes:
    """A generated module of about `size` bytes (protobuf-style: long bytes literals)."""
    line = b"_DESCRIPTOR_%06d = b'" + b"\\x0a\\x0b" * 500 + b"'\n"
    lines = size // len(line % 0)
    head = b"from torch import nn\n\n\nclass Generated(nn.Module):\n    pass\n\n\n"
    return head + b"".join(line % i for i in range(lines)) + b"\nEntryClass = Generated\n"


@pytest.mark.parametrize("folder", ["models", "speculative"])  # read for definitions / in full
def test_a_20_mb_generated_file_is_skipped_with_a_warning_and_the_rest_analysed(
    sgl_dir: MakeDir, folder: str
) -> None:
    data = _generated_descriptor_module(20 * 1024 * 1024)
    assert len(data) > MAX_FILE_BYTES
    root = sgl_dir("big", {f"{SRT}{folder}/generated_pb2.py": data})
    started = time.monotonic()
    run = run_process(
        "check", "local", "--source", f"dir:{root}", "-a", "EAGLE3", "--all", "--format", "json"
    )
    elapsed = time.monotonic() - started
    assert run.code == 0, run.stderr
    checks = {c["model"]: c for c in json.loads(run.stdout)["checks"]}
    assert checks["LlamaForCausalLM"]["status"] == "ok"
    assert "Generated" not in checks
    assert run.error_lines == [
        f"tracker: warning: skipped {SRT}{folder}/generated_pb2.py: "
        f"{len(data) / 1024 / 1024:.1f} MB is over the 4 MB limit"
    ]
    assert elapsed < 30, f"{elapsed:.0f}s to skip one 20 MB file"


def test_a_file_just_under_the_size_limit_is_analysed(sgl_dir: MakeDir) -> None:
    data = _generated_descriptor_module(MAX_FILE_BYTES - 64 * 1024)
    assert len(data) <= MAX_FILE_BYTES
    checks = _checks(sgl_dir("under", {f"{SRT}models/generated_pb2.py": data}))
    assert checks["Generated"]["missing"] == sorted(BASELINE_EAGLE3_TARGET)


def test_a_1_mb_generated_module_of_small_classes_is_analysed_in_a_few_seconds(
    sgl_dir: MakeDir,
) -> None:
    message = (
        b"class Message%d(_message.Message):\n"
        b"    DESCRIPTOR = _descriptor.Descriptor(name='M%d', fields=[])\n\n"
        b"    def ByteSize(self):\n        return self._size\n\n\n"
    )
    data = b"from google.protobuf import message as _message\n\n\n"
    data += b"".join(message % (i, i) for i in range(7_000))
    data += b"EntryClass = [Message0, Message6999]\n"
    assert len(data) > 1_000_000
    root = sgl_dir("pb2", {f"{SRT}models/generated_pb2.py": data})
    try:
        run = run_process(
            "check", "local", "--source", f"dir:{root}", "--all", "--format", "json", timeout=12
        )
    except subprocess.TimeoutExpired:
        pytest.fail("a 1 MB module of 7,000 small classes took more than 12 seconds")
    assert run.code == 0, run.stderr
    assert {"Message0", "Message6999"} <= {c["model"] for c in json.loads(run.stdout)["checks"]}


def test_a_generated_file_made_of_a_long_comment_block_does_not_hang_the_run(
    sgl_dir: MakeDir,
) -> None:
    # tree-sitter-python is quadratic on a run of comment lines after a statement (its
    # scanner re-reads the block per line, upstream PR #245): 5,000 lines take ~10 s here,
    # 84,000 (4 MB) over ten minutes. The run must end anyway, naming the file if it gave up.
    line = b"# generated padding padding padding padding padding padding %06d\n"
    data = b"x = 1\n" + b"".join(line % i for i in range(5000)) + b"EntryClass = None\n"
    root = sgl_dir("comments", {f"{SRT}speculative/generated.py": data})
    try:
        result = subprocess.run(
            tracker_command("interface", "local", "--source", f"dir:{root}", "--format", "json"),
            env=tracker_env(),
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("330 KB of comments held the run for more than 30 seconds")
    assert result.returncode == 0, result.stderr
    assert _target_members(json.loads(result.stdout)) >= BASELINE_EAGLE3_TARGET
    for line_ in result.stderr.splitlines():
        assert "speculative/generated.py" in line_, line_


def _nested(shape: str, depth: int) -> str:
    head = "from torch import nn\n\n\nclass Deep(nn.Module):\n    def probe(self):\n"
    tail = "\n\nEntryClass = Deep\n"
    if shape == "parentheses":
        body = "        x = " + "(" * depth + "1" + ")" * depth + "\n"
    elif shape == "ifs":
        body = "".join(" " * (8 + 4 * i) + f"if self.flag_{i}:\n" for i in range(depth))
        body += " " * (8 + 4 * depth) + "self.model.get_embed_and_head()\n"
    elif shape == "parenthesised condition":
        body = "        if " + "(" * depth + "self.ok" + ")" * depth + ":\n            pass\n"
    elif shape == "not chain":
        body = "        if " + "not " * depth + "self.ok:\n            pass\n"
    elif shape == "calls":
        body = "        x = " + "f(" * depth + "1" + ")" * depth + "\n"
    elif shape == "lists":
        body = "        x = " + "[" * depth + "1" + "]" * depth + "\n"
    elif shape == "and of parentheses in a condition":
        terms = " and ".join(f"(self.a{i}" for i in range(depth))
        body = "        if " + terms + ")" * depth + ":\n            pass\n"
    elif shape == "calls in a condition":
        body = "        if " + "f(" * depth + "self.ok" + ")" * depth + ":\n            pass\n"
    else:
        raise AssertionError(shape)
    return head + body + tail


@pytest.mark.parametrize(
    "shape",
    [
        "parentheses",
        "ifs",
        "parenthesised condition",
        "not chain",
        "calls",
        "lists",
        "and of parentheses in a condition",
        "calls in a condition",
    ],
)
def test_500_levels_of_nesting_do_not_stop_the_analysis(sgl_dir: MakeDir, shape: str) -> None:
    # speculative/ is read in full (model files only for their definitions).
    root = sgl_dir("deep", {f"{SRT}speculative/deep_probe.py": _nested(shape, 500)})
    run = run_process("check", "local", "--source", f"dir:{root}", "--all", "--format", "json")
    assert run.code == 0, run.stderr
    assert "internal error" not in run.stderr
    models = {c["model"] for c in json.loads(run.stdout)["checks"]}
    assert "LlamaForCausalLM" in models


# -- empty and odd files ------------------------------------------------------------------------


def test_empty_files_change_nothing(sgl_dir: MakeDir) -> None:
    baseline, _ = _interface(sgl_dir("clean"))
    empty = {
        ODD: b"",
        f"{SRT}__init__.py": b"",
        f"{SRT}speculative/__init__.py": b"",
        f"{SRT}models/__init__.py": b"\n\n",
    }
    doc, stderr = _interface(sgl_dir("empty", empty))
    _same_answer(doc, baseline)
    assert stderr == []


def test_an_empty_algorithm_enum_module_is_said_plainly_not_reported_as_nothing(
    sgl_dir: MakeDir,
) -> None:
    doc, _ = _interface(sgl_dir("no-enum", {f"{SRT}speculative/spec_info.py": ""}))
    assert doc["algorithms"] == []
    assert any("SpeculativeAlgorithm" in w for w in doc["warnings"]), doc["warnings"]


def test_symlinks_fifos_and_loops_in_a_directory_are_skipped_like_git_skips_them(
    sgl_dir: MakeDir, tmp_path: Path
) -> None:
    baseline, _ = _interface(sgl_dir("clean"))
    root = sgl_dir("links")
    models = root / SRT / "models"
    (models / "alias.py").symlink_to("llama.py")
    (models / "absolute.py").symlink_to("/etc/hostname")
    (models / "dangling.py").symlink_to(tmp_path / "nowhere.py")
    (models / "loop").symlink_to(models)  # a directory loop: must not be walked forever
    os.mkfifo(models / "fifo.py")  # reading it would block forever
    doc, stderr = _interface(root)
    _same_answer(doc, baseline)
    assert stderr == []
    facts = run_cli("facts", "local", f"{SRT}models/alias.py", "--source", f"dir:{root}")
    assert_one_line_error(facts, "has no file")


def test_python_files_with_odd_names_are_read(sgl_dir: MakeDir) -> None:
    odd_names = {
        f"{SRT}models/with space.py": "class Spaced:\n    pass\n\n\nEntryClass = Spaced\n",
        f"{SRT}models/ünïcode_名前.py": "class Uni:\n    pass\n\n\nEntryClass = Uni\n",
        f"{SRT}models/-dash.py": "class Dash:\n    pass\n\n\nEntryClass = Dash\n",
    }
    checks = _checks(sgl_dir("names", odd_names))
    assert {"Spaced", "Uni", "Dash"} <= set(checks)


# -- directories that are not SGLang ------------------------------------------------------------


@pytest.mark.parametrize(
    ("what", "needle"),
    [
        ("a project without sglang/srt", "not an SGLang tree"),
        ("a missing directory", "does not exist"),
        ("a file", "is not a directory"),
        ("python/sglang without srt", "not an SGLang tree"),
    ],
)
def test_a_directory_that_is_not_sglang_is_one_clear_error(
    tmp_path: Path, what: str, needle: str
) -> None:
    target = tmp_path / "target"
    if what == "a project without sglang/srt":
        (target / "src" / "project").mkdir(parents=True)
        (target / "src" / "project" / "main.py").write_text("print('hi')\n")
    elif what == "a file":
        target.write_text("not a directory\n")
    elif what == "python/sglang without srt":
        (target / "python" / "sglang").mkdir(parents=True)
        (target / "python" / "sglang" / "__init__.py").write_text("")
    run = run_process("interface", "local", "--source", f"dir:{target}", "--format", "json")
    assert_one_line_error(run, needle, str(target))
    assert run.stdout == ""


# -- the same files through the pipeline in memory -------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        BROKEN_MODEL.encode(),
        LATIN1_MODEL,
        b"class Nul:\n    x = 1\x00\x00\n\x00\n",
        bytes(range(256)) * 64,
        b"",
        b"\xef\xbb\xbf# a byte-order mark\nclass Bom:\n    pass\n",
        b"class Crlf:\r\n    def get_embed_and_head(self):\r\n        return 1\r\n",
        b"\tclass Tabbed:\n\t\tpass\n  \tx = (\n",
        _nested("parentheses", 500).encode(),
        _nested("ifs", 500).encode(),
    ],
    ids=[
        "syntax errors",
        "latin-1",
        "nul bytes",
        "binary",
        "empty",
        "byte-order mark",
        "crlf",
        "bad indentation",
        "500 parentheses",
        "500 ifs",
    ],
)
@pytest.mark.parametrize("folder", ["models", "speculative"])
def test_odd_files_go_through_the_pipeline_in_memory_without_changing_the_answer(
    content: bytes, folder: str
) -> None:
    files = {path: text.encode() for path, text in tiny_tree().items()}
    baseline = _pipeline(files)
    files[f"{SRT}{folder}/odd.py"] = content
    assert _pipeline(files) == baseline


def _pipeline(files: dict[str, bytes]) -> tuple[object, object]:
    facts = {path: extract_facts(path, content_id(data), data) for path, data in files.items()}
    index = VersionIndex(facts)
    interface = build_interface("v1", index)
    compat = build_compat(index, interface)
    checks = [
        c
        for c in compat.checks
        if c.model in ("LlamaForCausalLM", "WrapperForConditionalGeneration")
    ]
    return (
        (interface.algorithms, interface.requirements, interface.output_fields, interface.warnings),
        checks,
    )


# -- limits ---------------------------------------------------------------------------------------


def _chain(depth: int) -> str:
    lines = ["from torch import nn", "", "", "class B0(nn.Module):", "    pass", ""]
    for i in range(1, depth):
        lines += ["", f"class B{i}(B{i - 1}):", "    pass", ""]
    return "\n".join([*lines, "", f"EntryClass = [B{depth - 1}]", ""])


def test_a_700_level_inheritance_chain_is_cut_with_one_warning_not_a_crash(
    sgl_dir: MakeDir,
) -> None:
    root = sgl_dir("deep", {f"{SRT}models/deep.py": _chain(700)})
    run = run_process(
        "check", "local", "--source", f"dir:{root}", "-a", "EAGLE3", "--all", "--format", "json"
    )
    assert run.code == 0, run.stderr
    checks = {c["model"]: c for c in json.loads(run.stdout)["checks"]}
    assert checks["LlamaForCausalLM"]["status"] == "ok"
    assert checks["B699"]["status"] == "broken"
    (warning,) = [line for line in run.error_lines if "inherits through" in line]
    assert "B699" in warning and "more than 150 classes" in warning


def test_a_file_whose_name_is_not_utf8_is_skipped_with_a_warning(sgl_dir: MakeDir) -> None:
    root = sgl_dir("badname")
    bad_name = root / SRT / "models" / os.fsdecode(b"bad\xffname.py")
    bad_name.write_text("class Bad:\n    pass\n\n\nEntryClass = Bad\n")
    run = run_process(
        "check", "local", "--source", f"dir:{root}", "-a", "EAGLE3", "--all", "--format", "json"
    )
    assert run.code == 0, run.stderr
    checks = {c["model"] for c in json.loads(run.stdout)["checks"]}
    assert "LlamaForCausalLM" in checks and "Bad" not in checks
    assert run.error_lines == [
        f"tracker: warning: skipped {SRT}models/bad\\xffname.py: its name is not UTF-8"
    ]


def test_a_symlinked_models_folder_is_one_clear_error_not_zero_models_checked(
    sgl_dir: MakeDir, tmp_path: Path
) -> None:
    root = sgl_dir("linked-models")
    models = root / SRT / "models"
    models.rename(tmp_path / "real-models")
    models.symlink_to(tmp_path / "real-models")
    run = run_process("check", "local", "--source", f"dir:{root}", "-a", "EAGLE3")
    assert_one_line_error(run, f"{models} is a symlink, not followed")


def test_a_symlinked_srt_folder_is_one_clear_error_not_no_algorithms(
    sgl_dir: MakeDir, tmp_path: Path
) -> None:
    root = sgl_dir("linked-srt")
    srt = root / SRT
    srt.rename(tmp_path / "real-srt")
    srt.symlink_to(tmp_path / "real-srt")
    run = run_process("check", "local", "--source", f"dir:{root}", "-a", "EAGLE3")
    assert_one_line_error(run, f"{root / SRT[:-1]} is a symlink, not followed")
