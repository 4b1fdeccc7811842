"""Where the data files shipped with the tool live (queries and role rules, JSON Schemas,
the inventory of external base classes)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def _data_dir(name: str) -> Path:
    """`name/` as shipped in the wheel (tracker/<name>), else the source checkout's."""
    packaged = resources.files("tracker") / name
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[2] / name


def queries_dir() -> Path:
    """`queries/`: the tree-sitter queries and the role rules."""
    return _data_dir("queries")


def schemas_dir() -> Path:
    """`schemas/`: the JSON Schemas of the documents the tool writes, one per `schema` id."""
    return _data_dir("schemas")


def data_file(name: str) -> Path:
    """A data file shipped inside the package (`tracker/data/<name>`)."""
    return Path(str(resources.files("tracker") / "data" / name))
