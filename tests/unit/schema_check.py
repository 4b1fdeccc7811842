"""Validating the tool's JSON documents against the schemas it ships (`schemas/`): each
document names its schema in its `schema` field (`sglang-tracker/NAME@N`), whose `$id` is
`https://sglang-tracker.dev/schemas/NAME@N.json`; the schemas refer to each other by
relative references to those ids (`common@2.json#/$defs/site`)."""

from __future__ import annotations

import functools
import json
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from tracker.common.resources import schemas_dir

SCHEMA_BASE = "https://sglang-tracker.dev/schemas/"
DOCUMENT_PREFIX = "sglang-tracker/"


def schema_uri(document_schema: str) -> str:
    """The `$id` of the schema a document names in its `schema` field."""
    return SCHEMA_BASE + document_schema.removeprefix(DOCUMENT_PREFIX) + ".json"


@functools.cache
def schemas() -> dict[str, dict[str, Any]]:
    """`$id` -> schema, for every file in schemas/."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(schemas_dir().glob("*.schema.json")):
        schema = json.loads(path.read_text(encoding="utf-8"))
        found[schema["$id"]] = schema
    return found


@functools.cache
def registry() -> Registry:
    """Every schema, each under its own `$id` (nothing mapped by hand: what any validator
    given the files does)."""
    resources = [Resource.from_contents(schema) for schema in schemas().values()]
    return (resources @ Registry()).crawl()


def validator(schema_id: str) -> Draft202012Validator:
    """The validator of a schema, by its `$id` or by a document's `schema` id."""
    if not schema_id.startswith(SCHEMA_BASE):
        schema_id = schema_uri(schema_id)
    if schema_id not in schemas():
        raise AssertionError(f"no schema with $id {schema_id!r} in {schemas_dir()}")
    return Draft202012Validator(schemas()[schema_id], registry=registry())


def errors(doc: Any, schema_id: str | None = None) -> list[str]:
    """What is wrong with `doc` according to the schema `schema_id` (default: the one its
    `schema` field names); [] when it is valid."""
    if schema_id is None:
        if not isinstance(doc, dict) or not isinstance(doc.get("schema"), str):
            return ["the document names no schema"]
        schema_id = doc["schema"]
    found = validator(schema_id).iter_errors(doc)
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in found]


def assert_valid(doc: Any) -> None:
    problems = errors(doc)
    assert not problems, "\n".join(problems[:20])
