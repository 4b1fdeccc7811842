"""Validating the tool's JSON documents against the schemas it ships (`schemas/`): each
document names its schema in its `schema` field; the schemas refer to each other by `$id`."""

from __future__ import annotations

import functools
import json
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from tracker.common.resources import schemas_dir


@functools.cache
def schemas() -> dict[str, dict[str, Any]]:
    """`$id` -> schema, for every file in schemas/."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(schemas_dir().glob("*.schema.json")):
        schema = json.loads(path.read_text(encoding="utf-8"))
        found[schema["$id"]] = schema
    return found


@functools.cache
def _registry() -> Registry:
    return Registry().with_resources(
        (sid, Resource.from_contents(schema)) for sid, schema in schemas().items()
    )


def validator(schema_id: str) -> Draft202012Validator:
    if schema_id not in schemas():
        raise AssertionError(f"no schema with $id {schema_id!r} in {schemas_dir()}")
    return Draft202012Validator(schemas()[schema_id], registry=_registry())


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
