"""The JSON Schemas in schemas/: one per document the tool writes, named by the document's
`schema` id, valid draft 2020-12, in step with the kinds the code knows, and strict enough
that a broken document fails. Real outputs are validated in
tests/integration/test_schemas_real.py."""

from __future__ import annotations

import copy
import hashlib
import json
import re
import tomllib
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from schema_check import errors, schema_uri, schemas

from tracker.analysis.compat import Compat
from tracker.analysis.contract import ContractRule
from tracker.analysis.drafts import SUMMARY
from tracker.analysis.interface import Interface, Requirement, Site
from tracker.analysis.roles import load_rules
from tracker.analysis.vocabulary import CellStatus, ProvisionKind, RequirementStatus
from tracker.common.resources import schemas_dir
from tracker.compare.changes import ChangeKind
from tracker.compare.matrix import EVENT_KINDS
from tracker.compare.snapshot import SCHEMA as SNAPSHOT
from tracker.compare.snapshot import Builder, Snapshot, load_cached, load_file, to_json
from tracker.sources.base import SourceIdentity

ROOT = Path(__file__).resolve().parents[2]
GOLDENS = ROOT / "tests" / "cli" / "goldens"
SHARED = "https://sglang-tracker.dev/schemas/common@2.json"
SCHEMA_ID = re.compile(r"sglang-tracker/([a-z][a-z-]*)@([0-9]+)")
SCHEMA_URI = re.compile(r"https://sglang-tracker\.dev/schemas/([a-z][a-z-]*)@([0-9]+)\.json")
# Ids in the code that name no JSON document a user receives, and why.
NOT_WRITTEN = {
    # The report's document is rendered into index.html, never written as JSON.
    "sglang-tracker/report@1",
    # An issue's document is the input of the issue body template.
    "sglang-tracker/issue@1",
    # Cache files of the package index source: the tool's private bookkeeping.
    "sglang-tracker/archive-index@1",
    "sglang-tracker/pypi-versions@1",
    # The shipped inventory of external bases: data the tool reads (validated on load by
    # tracker.externals), built by tools/build_base_inventory.py, never written by a command.
    "sglang-tracker/external-bases@1",
}


def ids_in_code() -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "tracker").rglob("*.py"):
        found |= {m.group(0) for m in SCHEMA_ID.finditer(path.read_text(encoding="utf-8"))}
    return found


def defs(name: str) -> dict[str, Any]:
    found: dict[str, Any] = schemas()[SHARED]["$defs"][name]
    return found


# ------------------------------------------------------------------------- the files


def test_every_schema_file_is_draft_2020_12_and_named_after_its_id() -> None:
    files = sorted(schemas_dir().glob("*.schema.json"))
    assert len(files) == len(schemas()) > 1
    for path in files:
        schema = json.loads(path.read_text(encoding="utf-8"))
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema", path.name
        Draft202012Validator.check_schema(schema)
        match = SCHEMA_URI.fullmatch(schema["$id"])
        assert match is not None and f"{match.group(1)}.schema.json" == path.name


def refs_in(node: Any) -> list[str]:
    if isinstance(node, dict):
        here = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return here + [r for value in node.values() for r in refs_in(value)]
    if isinstance(node, list):
        return [r for value in node for r in refs_in(value)]
    return []


def test_every_schema_id_is_an_absolute_uri_its_references_resolve_against() -> None:
    # Draft 2020-12 wants an absolute URI as a root schema's $id; relative references
    # (`common@2.json#/$defs/site`) are resolved against it. A validator given the files
    # and nothing else (each schema under its own $id, as `resources @ Registry()` does,
    # or ajv's addSchema) then finds every reference.
    loaded = [json.loads(p.read_text(encoding="utf-8")) for p in schemas_dir().glob("*.json")]
    registry = ([Resource.from_contents(s) for s in loaded] @ Registry()).crawl()
    seen = 0
    for schema in loaded:
        parts = urllib.parse.urlsplit(schema["$id"])
        assert (parts.scheme, parts.netloc) == ("https", "sglang-tracker.dev"), schema["$id"]
        resolver = registry.resolver(base_uri=schema["$id"])
        for ref in refs_in(schema):
            resolver.lookup(ref)  # raises Unresolvable for a reference that names nothing
            seen += 1
    assert seen > 100


def test_a_document_keeps_its_own_schema_id_which_names_its_schema_file() -> None:
    for name in GOLDEN_JSON:
        doc = _golden(name)
        assert SCHEMA_ID.fullmatch(doc["schema"]), name
        assert schema_uri(doc["schema"]) in schemas()


def test_every_document_id_the_code_writes_has_a_schema_and_every_schema_is_used() -> None:
    emitted = ids_in_code()
    assert emitted >= NOT_WRITTEN, "an id listed as not written is gone from the code"
    documents = {schema_uri(sid): sid for sid in emitted - NOT_WRITTEN}
    assert set(documents) == set(schemas()) - {SHARED}
    for uri, sid in documents.items():
        assert schemas()[uri]["properties"]["schema"] == {"const": sid}


def test_the_wheel_ships_the_schemas_next_to_the_queries() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    shipped = config["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert shipped["schemas"] == "tracker/schemas"
    assert schemas_dir().resolve() in (ROOT / "schemas", ROOT / "tracker" / "schemas")


# ------------------------------------------------------------- in step with the code


def test_the_change_kinds_are_exactly_those_the_diff_knows() -> None:
    assert defs("change_kind")["enum"] == [k.value for k in ChangeKind]


def test_the_requirement_statuses_are_exactly_those_the_interface_knows() -> None:
    assert set(defs("status")["enum"]) == {s.value for s in RequirementStatus}


def test_the_matrix_statuses_are_exactly_those_the_matrix_shows() -> None:
    assert defs("matrix_cell")["enum"] == [s.value for s in CellStatus]


def test_the_provision_kinds_are_those_compat_gives() -> None:
    assert set(defs("provision_how")["enum"]) == {p.value for p in ProvisionKind}


def test_the_member_uses_are_exactly_those_a_requirement_gives() -> None:
    path = "python/sglang/srt/speculative/eagle_worker.py"
    sites = (Site(path, 1, "f", arity="1"), Site(path, 2, "f", guard="hasattr"), Site(path, 3, "f"))
    req = Requirement("EAGLE3", "target", "m", "call", "required", sites)
    assert set(defs("member_use")["enum"]) == set(req.uses)


def test_the_event_kinds_are_exactly_those_the_matrix_knows() -> None:
    assert defs("event_kind")["enum"] == list(EVENT_KINDS)


def test_the_contract_rules_are_exactly_those_the_contract_checks() -> None:
    assert defs("contract_rule")["enum"] == [rule.id for rule in ContractRule]


def test_the_draft_model_modes_are_exactly_those_the_interface_gives() -> None:
    assert set(defs("draft_mode")["enum"]) == set(SUMMARY)


def test_the_model_kinds_are_those_the_role_rules_can_give() -> None:
    kinds = {kind for kind, _, _ in load_rules().model_kinds} | {"target"}
    assert set(defs("model_kind")["enum"]) == kinds


# ------------------------------------------------------------------ goldens and data


GOLDEN_JSON = sorted(p.name for p in GOLDENS.glob("*.json"))


@pytest.mark.parametrize("name", GOLDEN_JSON)
def test_every_json_golden_validates_against_its_schema(name: str) -> None:
    doc = json.loads((GOLDENS / name).read_text(encoding="utf-8"))
    assert errors(doc) == []


def test_shipped_snapshots_across_the_releases_validate_against_the_snapshot_schema() -> None:
    shipped = sorted((ROOT / "snapshots").glob("v*.json"))
    assert shipped
    # Every fifth in name order, and the last (a tenth of a second each): all are written
    # by the same code; a spread of releases covers the rarer fields (guards, alternatives).
    for path in [*shipped[::5], shipped[-1]]:
        problems = errors(json.loads(path.read_text(encoding="utf-8")))
        assert problems == [], f"{path.name}: {problems[:3]}"


# ----------------------------------------------------------- strict enough to catch


def _first(doc: Any, key: str) -> dict[str, Any] | None:
    """The first object (depth first) holding a string under `key`."""
    if isinstance(doc, dict):
        if isinstance(doc.get(key), str) and key != "schema":
            return doc
        children: list[Any] = list(doc.values())
    elif isinstance(doc, list):
        children = doc
    else:
        return None
    for child in children:
        found = _first(child, key)
        if found is not None:
            return found
    return None


@pytest.mark.parametrize("name", GOLDEN_JSON)
def test_a_golden_missing_a_required_field_fails_validation(name: str) -> None:
    doc = json.loads((GOLDENS / name).read_text(encoding="utf-8"))
    for field in schemas()[schema_uri(doc["schema"])]["required"]:
        broken = copy.deepcopy(doc)
        del broken[field]
        problems = errors(broken, doc["schema"])
        assert any(f"'{field}' is a required property" in e for e in problems), field


@pytest.mark.parametrize("name", GOLDEN_JSON)
def test_a_golden_with_an_unknown_field_fails_validation(name: str) -> None:
    doc = json.loads((GOLDENS / name).read_text(encoding="utf-8"))
    doc["surprise"] = 1
    assert any("'surprise' was unexpected" in e for e in errors(doc))


def _golden(name: str) -> Any:
    return json.loads((GOLDENS / name).read_text(encoding="utf-8"))


ENUM_CASES = [
    (name, key)
    for name in GOLDEN_JSON
    for key in ("status", "role", "kind")
    if _first(_golden(name), key) is not None
]


@pytest.mark.parametrize(("name", "key"), ENUM_CASES)
def test_a_golden_with_a_value_outside_its_enum_fails_validation(name: str, key: str) -> None:
    doc = _golden(name)
    holder = _first(doc, key)
    assert holder is not None
    holder[key] = "sideways"
    assert errors(doc) != []


def test_a_site_deep_in_a_diff_with_a_wrong_line_or_path_fails_validation() -> None:
    doc = json.loads((GOLDENS / "diff-eagle3.json").read_text(encoding="utf-8"))
    site = doc["unchanged"][0]["sites"][0]
    for field, value in (("line", 0), ("line", "157"), ("path", "speculative/eagle_worker.py")):
        broken = copy.deepcopy(doc)
        broken["unchanged"][0]["sites"][0][field] = value
        assert errors(broken) != [], (field, value)
    assert site == doc["unchanged"][0]["sites"][0]


def test_a_model_event_must_carry_checks_not_requirements() -> None:
    doc = json.loads((GOLDENS / "diff-eagle3.json").read_text(encoding="utf-8"))
    event = next(c for c in doc["changes"] if c["kind"].startswith("model_wrapper_"))
    member = next(u for u in doc["unchanged"])
    event["new"] = {k: v for k, v in member.items() if k not in ("previous_sites", "moved_from")}
    assert errors(doc) != []


def test_a_document_with_another_document_s_schema_id_fails_validation() -> None:
    doc = json.loads((GOLDENS / "check-kimi.json").read_text(encoding="utf-8"))
    doc["schema"] = "sglang-tracker/interface@2"
    assert errors(doc) != []


# ------------------------------------------------------- an old snapshot id is stale


def test_a_snapshot_under_the_previous_schema_id_is_not_read_so_it_is_rebuilt(
    tmp_path: Path,
) -> None:
    site = Site("python/sglang/srt/speculative/eagle_worker.py", 10, "EAGLEWorker.__init__")
    itf = Interface(
        "v1",
        ("EAGLE3",),
        {"EAGLE3": ("EAGLEWorker",)},
        [Requirement("EAGLE3", "target", "get_embed_and_head", "call", "required", (site,))],
    )
    snap = Snapshot(
        "v1",
        SourceIdentity("dir", "/tree", "v1", ""),
        "0" * 64,
        Builder("0.1.0", "queries", "rules"),
        itf,
        Compat("v1"),
    )
    text = to_json(snap)
    assert errors(json.loads(text)) == []
    name, number = SNAPSHOT.rsplit("@", 1)
    previous = f"{name}@{int(number) - 1}"
    assert previous != SNAPSHOT and f'"{SNAPSHOT}"' in text
    old = text.replace(f'"{SNAPSHOT}"', f'"{previous}"')
    for name, body in (("current", text), ("old", old)):
        (tmp_path / f"{name}.json").write_text(body, encoding="utf-8")
        digest = hashlib.sha256(body.encode()).hexdigest()
        (tmp_path / f"{name}.cached").write_text(f"sha256:{digest}\n{body}", encoding="utf-8")
    assert load_file(tmp_path / "current.json") is not None
    assert load_cached(tmp_path / "current.cached") is not None
    assert load_file(tmp_path / "old.json") is None
    assert load_cached(tmp_path / "old.cached") is None


def _guard_enums(node: Any) -> list[list[str]]:
    """Every `guard` property's enum in a schema."""
    found: list[list[str]] = []
    if isinstance(node, dict):
        guard = node.get("properties", {}).get("guard") if "properties" in node else None
        if isinstance(guard, dict) and "enum" in guard:
            found.append(guard["enum"])
        for value in node.values():
            found += _guard_enums(value)
    elif isinstance(node, list):
        for value in node:
            found += _guard_enums(value)
    return found


def test_every_guard_the_analysis_writes_is_in_every_guard_enum_of_the_schemas() -> None:
    from tracker.analysis.vocabulary import Guard

    written = {g.value for g in Guard}
    for name in ("snapshot.schema.json", "common.schema.json"):
        data = json.loads((schemas_dir() / name).read_text(encoding="utf-8"))
        enums = _guard_enums(data) + (
            [data["$defs"]["guard"]["enum"]] if "guard" in data.get("$defs", {}) else []
        )
        assert enums, name
        for enum in enums:
            assert written <= set(enum), (name, written - set(enum))
