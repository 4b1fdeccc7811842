"""Where the data files shipped with the tool live (queries, role rules, the inventory of
external base classes)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def queries_dir() -> Path:
    """`queries/` as shipped in the wheel (tracker/queries), else the source checkout's."""
    packaged = resources.files("tracker") / "queries"
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parent.parent / "queries"


def data_file(name: str) -> Path:
    """A data file shipped inside the package (`tracker/data/<name>`)."""
    return Path(str(resources.files("tracker") / "data" / name))
