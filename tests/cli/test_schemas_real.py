"""Every JSON document the tool writes, produced by the real commands on real releases
(v0.5.8 … v0.5.10), validates against the schema its `schema` field names; together they
use every schema in schemas/."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from fake_github import REPO, TOKEN, fake_github
from schema_check import errors, schema_uri, schemas

from tracker.sources.pypi import PypiSource

pytestmark = pytest.mark.realdata

Tracker = Callable[..., Result]
KIMI = "KimiK25ForConditionalGeneration"
KIMI_ERROR = f"AttributeError: '{KIMI}' object has no attribute 'get_embed_and_head'"
RELEASES = ("v0.5.8", "v0.5.8.post1", "v0.5.9", "v0.5.10")
CHECKPOINTS = ["--model-config", str(Path(__file__).parent / "checkpoints" / "kimi-k2.5")]
NO_AUX_DRAFT = ["--draft-config", str(Path(__file__).parent / "checkpoints" / "eagle-no-aux")]

# name -> tracker arguments of a command that prints a JSON document
PRINTED: dict[str, list[str]] = {
    "versions": ["versions", "--format", "json"],
    "interface": ["interface", "v0.5.9", "--format", "json"],
    "diff": ["diff", "v0.5.8", "v0.5.10", "--all", "--format", "json"],
    "check": ["check", "v0.5.9", "--all", "--kind", "all", "--format", "json"],
    "check-patched": [
        "check",
        "--requirements",
        "v0.5.10",
        "--models",
        "v0.5.9",
        "-a",
        "EAGLE3",
        "--format",
        "json",
    ],
    "matrix": ["matrix", "v0.5.8..v0.5.10", "--kind", "all", "--format", "json"],
    "history": ["history", KIMI, "v0.5.8..v0.5.10", "--format", "json"],
    "why": ["why", "set_eagle3_layers_to_capture", "--at", "v0.5.9", "--format", "json"],
    "checkpoint": [
        "check",
        "v0.5.9",
        "-a",
        "EAGLE3",
        *CHECKPOINTS,
        *NO_AUX_DRAFT,
        "--format",
        "json",
    ],
    "why-checkpoint": ["why", "--at", "v0.5.9", *CHECKPOINTS, *NO_AUX_DRAFT, "--format", "json"],
    "changelog": ["changelog", "v0.5.8", "v0.5.10", "--all", "--format", "json"],
    "issues": ["issues", "v0.5.8", "v0.5.10", "--format", "json"],
    "triage": ["triage", KIMI_ERROR, "--at", "v0.5.9", "--format", "json"],
    "facts": [
        "facts",
        "v0.5.9",
        "python/sglang/srt/speculative/eagle_worker.py",
        "--format",
        "json",
    ],
    "graph": ["graph", "v0.5.9", "-a", "EAGLE3", "--format", "json"],
}
# name -> a command printing a document that marks KimiK25's accepted EAGLE3 break
# (given --config with an [[accepted]] entry for it)
ACCEPTING: dict[str, list[str]] = {
    "check-accepted": ["check", "v0.5.9", "-a", "EAGLE3", "-m", KIMI, "--format", "json"],
    "diff-accepted": ["diff", "v0.5.8", "v0.5.9", "-a", "EAGLE3", "--format", "json"],
    "changelog-accepted": ["changelog", "v0.5.8", "v0.5.9", "-a", "EAGLE3", "--format", "json"],
    "matrix-accepted": ["matrix", "v0.5.8..v0.5.10", "-a", "EAGLE3", "--format", "json"],
    "history-accepted": ["history", KIMI, "v0.5.8..v0.5.10", "--format", "json"],
}


def _json(result: Result) -> Any:
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def _read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _watch(cli_run: Tracker, tmp: Path, sink: list[str], name: str) -> dict[str, Any]:
    """Two watch runs over v0.5.9 and v0.5.10 (the second finds everything filed): their
    JSON output and the state file."""
    state = tmp / f"{name}-state.json"
    args = [
        "watch",
        *sink,
        "--state",
        str(state),
        "-a",
        "EAGLE3",
        "--since",
        "v0.5.8.post1",
        "--until",
        "v0.5.10",
        "--format",
        "json",
        "-q",
    ]
    first, again = _json(cli_run(*args)), _json(cli_run(*args))
    return {f"{name}": first, f"{name}-again": again, f"{name}-state": _read(state)}


@pytest.fixture(scope="module")
def documents(
    real_env: Callable[[], AbstractContextManager[None]],
    cli_run: Tracker,
    real_pypi: PypiSource,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Any]:
    for release in RELEASES:  # downloaded once into the test cache; offline from here on
        real_pypi.tree(release)
    tmp = tmp_path_factory.mktemp("documents")
    docs: dict[str, Any] = {}
    with real_env():
        for name, args in PRINTED.items():
            docs[name] = _json(cli_run(*args, "-q"))
        written = cli_run("snapshot", "v0.5.9", "-o", str(tmp / "v0.5.9.json"), "-q")
        assert written.exit_code == 0, written.stderr
        docs["snapshot"] = _read(tmp / "v0.5.9.json")
        issued = cli_run("issues", "v0.5.8", "v0.5.10", "--out", str(tmp / "issues"), "-q")
        assert issued.exit_code == 0, issued.stderr
        docs["issues-index"] = _read(tmp / "issues" / "issues.json")
        # watch into a directory: KimiK25's issue, filed at v0.5.9, is closed at v0.5.10.
        docs |= _watch(cli_run, tmp, ["--out", str(tmp / "watched")], "watch-dir")
        docs["watch-dir-index"] = _read(tmp / "watched" / "issues.json")
        config = tmp / "tracker.toml"
        config.write_text(
            f'[[accepted]]\nmodel = "{KIMI}"\nalgorithm = "EAGLE3"\nreason = "patched in a fork"\n',
            encoding="utf-8",
        )
        for name, args in ACCEPTING.items():
            docs[name] = _json(cli_run(*args, "--config", str(config), "-q"))
        docs["watch-dry-run"] = _json(
            cli_run(
                "watch",
                "--out",
                str(tmp / "dry"),
                "--state",
                str(tmp / "dry-state.json"),
                "-a",
                "EAGLE3",
                "--since",
                "v0.5.8.post1",
                "--until",
                "v0.5.9",
                "--dry-run",
                "--config",
                str(config),
                "--format",
                "json",
                "-q",
            )
        )
        with pytest.MonkeyPatch.context() as mp, fake_github() as (url, _):
            mp.setenv("GITHUB_TOKEN", TOKEN)
            docs |= _watch(cli_run, tmp, ["--post", REPO, "--api-url", url], "watch-github")
    return docs


NAMES = [
    *PRINTED,
    "snapshot",
    "issues-index",
    "watch-dir",
    "watch-dir-again",
    "watch-dir-state",
    "watch-dir-index",
    "watch-github",
    "watch-github-again",
    "watch-github-state",
    *ACCEPTING,
    "watch-dry-run",
]


@pytest.mark.parametrize("name", NAMES)
def test_a_real_document_validates_against_the_schema_it_names(
    documents: dict[str, Any], name: str
) -> None:
    assert errors(documents[name]) == []


def test_the_real_documents_use_every_schema(documents: dict[str, Any]) -> None:
    used = {schema_uri(doc["schema"]) for doc in documents.values()}
    # bisect needs a git history: its real documents are validated in
    # tests/integration/test_bisect_real.py, on the replayed v0.5.8 -> v0.5.9 history.
    elsewhere = {schema_uri("sglang-tracker/common@2"), schema_uri("sglang-tracker/bisect@1")}
    assert used == set(schemas()) - elsewhere


def test_the_documents_hold_what_the_schemas_allow_to_be_empty(
    documents: dict[str, Any],
) -> None:
    """The documents above are not vacuous: closed issues, filed and existing issues, a
    patch and a delegation are all there to be validated."""
    closed = [e for e in documents["watch-dir-index"]["issues"] if e["state"] == "closed"]
    assert [e["report"]["subject"] for e in closed] == [KIMI]
    assert closed[0]["fixed_in"] == "v0.5.10"
    assert documents["watch-github"]["releases"][1]["closed"]
    assert documents["watch-github-again"]["releases"][0]["existing"]
    assert documents["triage"]["patch"]["diff"].startswith("--- a/")
    assert any(c["delegations"] for c in documents["check"]["checks"])
    assert documents["diff"]["changes"] and documents["changelog"]["sections"]
    assert len(documents["watch-github-state"]["history"]) == 4


def test_the_documents_hold_the_fields_present_only_sometimes(
    documents: dict[str, Any],
) -> None:
    """Accepted breaks, a dry run, rows of classes checked as drafts, classes present
    before a range, and since when a triaged break exists are there to be validated."""
    reason = {"reason": "patched in a fork"}
    (kimi,) = documents["check-accepted"]["checks"]
    assert kimi["accepted"] == reason
    assert any(
        c.get("new", {}).get("accepted") == reason for c in documents["diff-accepted"]["changes"]
    )
    broken = [b for s in documents["changelog-accepted"]["sections"] for b in s["broken"]]
    assert [b["accepted"] for b in broken if b["model"] == KIMI] == [reason]
    for name in ("matrix-accepted", "history-accepted"):
        assert [r["model"] for r in documents[name]["accepted"]] == [KIMI], name
    dry = documents["watch-dry-run"]
    assert dry["dry_run"] is True and dry["releases"][0]["accepted"]
    matrix = documents["matrix"]
    assert {"present", "appeared"} <= {e["kind"] for e in matrix["events"]}
    assert any(m["model"] == f"{m['class']} (as draft)" for m in matrix["models"])
    assert {c["broken_since_how"] for c in documents["triage"]["checks"]} >= {"added"}
    assert documents["interface"]["draft_models"]
