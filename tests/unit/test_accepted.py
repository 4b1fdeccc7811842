"""Accepted breaks: the configuration is validated on load (every error names the file and
the entry), found in tracker.toml or pyproject.toml, and marks only the checks it
accepts, by release order."""

from __future__ import annotations

import logging
import os
import resource
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tracker.analysis.compat import Compat, ModelCheck
from tracker.common.errors import TrackerError
from tracker.compare.accepted import AcceptedBreak, AcceptedBreaks, load_accepted, mark

KIMI = "KimiK25ForConditionalGeneration"
GOOD = f"""
[[accepted]]
model = "LlamaForCausalLM"
reason = "never served with speculative decoding"

[[accepted]]
model = "{KIMI}"
algorithm = "eagle3"
until = "v0.5.10"
reason = "patched in our fork, see PR 123"
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def check(model: str, algorithm: str = "EAGLE3", status: str = "broken") -> ModelCheck:
    return ModelCheck(
        model,
        f"python/sglang/srt/models/{model.lower()}.py",
        "target",
        algorithm,
        "target",
        status,
        missing=("get_embed_and_head",),
    )


# ------------------------------------------------------------------ finding the file


def test_tracker_toml_in_the_current_directory_is_read(tmp_path: Path) -> None:
    write(tmp_path, "tracker.toml", GOOD)
    found = load_accepted(None, tmp_path)
    assert found.path == tmp_path / "tracker.toml"
    assert [(e.model, e.algorithm, e.until) for e in found.entries] == [
        ("LlamaForCausalLM", "", ""),
        (KIMI, "EAGLE3", "v0.5.10"),  # algorithm names are the enum's, in capitals
    ]
    assert found.entries[1].reason == "patched in our fork, see PR 123"


def test_the_tool_tracker_table_of_pyproject_toml_is_read_when_there_is_no_tracker_toml(
    tmp_path: Path,
) -> None:
    write(
        tmp_path,
        "pyproject.toml",
        '[project]\nname = "x"\n\n[tool.tracker]\n'
        + GOOD.replace("[[accepted]]", "[[tool.tracker.accepted]]"),
    )
    found = load_accepted(None, tmp_path)
    assert found.path == tmp_path / "pyproject.toml"
    assert [e.model for e in found.entries] == ["LlamaForCausalLM", KIMI]
    assert found.entries[0].origin == "pyproject.toml [tool.tracker]: accepted[0]"


def test_a_pyproject_without_a_tool_tracker_table_accepts_nothing(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", '[project]\nname = "x"\n[tool.ruff]\nline-length = 9\n')
    assert load_accepted(None, tmp_path) == AcceptedBreaks()


def test_no_file_accepts_nothing(tmp_path: Path) -> None:
    assert load_accepted(None, tmp_path).entries == ()


def test_tracker_toml_wins_over_pyproject_and_a_warning_says_the_other_is_ignored(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write(tmp_path, "tracker.toml", GOOD)
    write(
        tmp_path,
        "pyproject.toml",
        '[[tool.tracker.accepted]]\nmodel = "Other"\nreason = "from pyproject"\n',
    )
    with caplog.at_level(logging.WARNING, logger="tracker"):
        found = load_accepted(None, tmp_path)
    assert [e.model for e in found.entries] == ["LlamaForCausalLM", KIMI]
    assert "tracker.toml takes precedence" in caplog.text
    assert "pyproject.toml is ignored" in caplog.text


def test_config_names_another_file_and_the_current_directory_is_not_read(
    tmp_path: Path,
) -> None:
    write(tmp_path, "tracker.toml", '[[accepted]]\nmodel = "Here"\nreason = "cwd"\n')
    other = write(tmp_path, "ci-accepted.toml", GOOD)
    assert [e.model for e in load_accepted(other, tmp_path).entries] == ["LlamaForCausalLM", KIMI]


def test_config_naming_a_pyproject_reads_its_tool_tracker_table(tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    named = write(sub, "pyproject.toml", '[[tool.tracker.accepted]]\nmodel = "X"\nreason = "r"\n')
    assert [e.model for e in load_accepted(named, tmp_path).entries] == ["X"]
    bare = write(tmp_path, "pyproject.toml", '[project]\nname = "x"\n')
    with pytest.raises(TrackerError, match=r"pyproject.toml has no \[tool.tracker\] table"):
        load_accepted(bare, tmp_path)


def test_a_config_that_does_not_exist_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(TrackerError, match=r"cannot read .*nowhere.toml"):
        load_accepted(tmp_path / "nowhere.toml", tmp_path)


# ------------------------------------------------------------------- bad entries


ENTRY_ERRORS = [
    ('model = "M"', r"accepted\[1\] \(M\): reason is missing"),
    ('model = "M"\nreason = "  "', r"accepted\[1\] \(M\): reason is empty"),
    ('model = "M"\nreason = "r"\nexpires = "v1"', r"accepted\[1\] \(M\): unknown key expires"),
    ('model = "M"\nreason = "r"\nuntil = 0.5', r"accepted\[1\] \(M\): until must be a string"),
    (
        'model = "M"\nreason = "r"\nalgorithm = ["EAGLE3"]',
        r"accepted\[1\] \(M\): algorithm must be a string, not list",
    ),
    (
        'model = "M"\nreason = "r"\nuntil = "soon"',
        r"accepted\[1\] \(M\): until 'soon' is not a release version",
    ),
    (
        'model = "M"\nreason = "r"\nuntil = "latest"',
        r"accepted\[1\] \(M\): until 'latest' is not a release version",
    ),
    (
        'model = "M"\nreason = "r"\nuntil = "v0.5.8..v0.5.9"',
        r"accepted\[1\] \(M\): until 'v0.5.8..v0.5.9' is not a release version",
    ),
    ('reason = "r"', r"accepted\[1\]: model is missing"),
]


@pytest.mark.parametrize(("entry", "message"), ENTRY_ERRORS)
def test_a_bad_entry_is_an_error_naming_the_file_the_entry_and_its_model(
    tmp_path: Path, entry: str, message: str
) -> None:
    write(
        tmp_path,
        "tracker.toml",
        f'[[accepted]]\nmodel = "Fine"\nreason = "ok"\n\n[[accepted]]\n{entry}\n',
    )
    with pytest.raises(TrackerError, match=f"^tracker.toml: {message}"):
        load_accepted(None, tmp_path)


def test_a_bad_entry_in_pyproject_names_pyproject_and_its_table(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", '[[tool.tracker.accepted]]\nmodel = "M"\n')
    with pytest.raises(
        TrackerError, match=r"^pyproject.toml \[tool.tracker\]: accepted\[0\] \(M\): reason"
    ):
        load_accepted(None, tmp_path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('accepted = ["M"]', r"tracker.toml: accepted\[0\] must be a table"),
        ('[accepted]\nmodel = "M"\nreason = "r"', r"tracker.toml: accepted must be an array"),
        (
            '[[accepted]]\nmodel = "M"\nreason = "r"\n[fail]\non = 1',
            r"tracker.toml: unknown key fail",
        ),
        ('[[accepted]]\nmodel = "M"\nreason = "r', r"tracker.toml is not valid TOML"),
    ],
)
def test_a_file_of_the_wrong_shape_is_an_error_naming_it(
    tmp_path: Path, text: str, message: str
) -> None:
    write(tmp_path, "tracker.toml", text)
    with pytest.raises(TrackerError, match=message):
        load_accepted(None, tmp_path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a = " + "[" * 20_000 + "]" * 20_000, "nests arrays or tables too deeply"),
        ("a = " + "{b = " * 5_000 + "1" + "}" * 5_000, "nests arrays or tables too deeply"),
    ],
    ids=["20,000 nested arrays", "5,000 nested inline tables"],
)
def test_deeply_nested_toml_is_one_line_not_a_recursion_error(
    tmp_path: Path, text: str, message: str
) -> None:
    config = write(tmp_path, "deep.toml", text)
    with pytest.raises(TrackerError, match=f"^{config} {message}"):
        load_accepted(config, tmp_path)


_LOAD_DEV_ZERO = """
from pathlib import Path
from tracker.common.errors import TrackerError
from tracker.compare.accepted import load_accepted
try:
    load_accepted(Path("/dev/zero"), Path("."))
except TrackerError as exc:
    print(exc)
"""


def _at_most_1_gb() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_a_device_as_config_is_refused_without_reading_it(tmp_path: Path) -> None:
    # In a process of its own, capped: reading /dev/zero to its end fills any memory.
    result = subprocess.run(
        [sys.executable, "-c", _LOAD_DEV_ZERO],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
        preexec_fn=_at_most_1_gb,
    )
    assert result.stdout == "cannot read /dev/zero: not a regular file\n", result.stderr


def test_a_fifo_as_config_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "tracker.toml"
    os.mkfifo(fifo)
    errors: list[Exception] = []

    def load() -> None:
        try:
            load_accepted(fifo, tmp_path)
        except Exception as exc:  # the outcome is checked below
            errors.append(exc)

    reader = threading.Thread(target=load, daemon=True)
    reader.start()
    reader.join(10)
    if reader.is_alive():  # blocked opening the FIFO: let it go, then fail
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("reading a FIFO config waited for a writer")
    assert len(errors) == 1 and isinstance(errors[0], TrackerError), errors
    assert "not a regular file" in str(errors[0])


# ----------------------------------------------------------------------- applying


@pytest.mark.parametrize(
    ("version", "applies"),
    [
        ("v0.5.9", True),
        ("v0.5.8.post1", True),
        ("v0.5.10", False),  # string order would put v0.5.10 before v0.5.9
        ("v0.5.10.post1", False),
        ("v0.5.23", False),
        ("local", False),  # a directory has no place in release order
        ("3f2a9c1", False),
    ],
)
def test_until_stops_an_entry_from_that_release_on_by_release_order(
    version: str, applies: bool
) -> None:
    entry = AcceptedBreak(KIMI, "fork", "EAGLE3", "v0.5.10")
    assert entry.applies(KIMI, "EAGLE3", version) is applies


def test_an_entry_without_until_or_algorithm_applies_to_every_version_and_algorithm() -> None:
    entry = AcceptedBreak(KIMI, "fork")
    assert entry.applies(KIMI, "EAGLE", "local")
    assert entry.applies(KIMI, "STANDALONE", "v0.4.10")
    assert not entry.applies("DeepseekV3ForCausalLM", "EAGLE", "v0.5.9")


def test_marking_sets_the_reason_on_matching_checks_that_are_not_ok_only() -> None:
    compat = Compat(
        "v0.5.9",
        checks=[
            check(KIMI),
            check(KIMI, "EAGLE"),
            check("LlamaForCausalLM", status="ok"),
            check("LlamaForCausalLM", "EAGLE", status="unknown"),
            check("Other"),
        ],
    )
    accepted = AcceptedBreaks(
        None,
        (
            AcceptedBreak(KIMI, "fork", "EAGLE3", "v0.5.10"),
            AcceptedBreak(KIMI, "every algorithm, for good"),
            AcceptedBreak("LlamaForCausalLM", "not served"),
        ),
    )
    marked = mark(compat, accepted)
    assert [(c.model, c.algorithm, c.accepted) for c in marked.checks] == [
        (KIMI, "EAGLE3", "fork"),
        (KIMI, "EAGLE", "every algorithm, for good"),
        ("LlamaForCausalLM", "EAGLE3", ""),  # ok: nothing to accept
        ("LlamaForCausalLM", "EAGLE", "not served"),
        ("Other", "EAGLE3", ""),
    ]
    assert all(c.accepted == "" for c in compat.checks)  # the input is left as it was
    assert [c.accepted for c in mark(Compat("v0.5.10", checks=[check(KIMI)]), accepted).checks] == [
        "every algorithm, for good"
    ]
