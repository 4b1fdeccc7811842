"""Where the data files shipped with the tool live (queries and role rules)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def queries_dir() -> Path:
    """`queries/` as shipped in the wheel (tracker/queries), else the source checkout's."""
    packaged = resources.files("tracker") / "queries"
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parent.parent / "queries"
