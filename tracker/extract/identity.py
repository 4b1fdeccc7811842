"""What names the extraction: the query files and the code that turns captures into facts.

Facts from other queries, or extracted differently, are other facts: this digest keys the
facts cache and is part of every snapshot's builder. It reads files only, without
tree-sitter, so a command answered from snapshots does not load the parser to check them.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

from tracker.common.resources import queries_dir

# The modules that turn captures into facts: extracted differently, facts are other facts.
FACT_MODULES = (
    "parse.py",
    "queries.py",
    "extraction.py",
    "handlers.py",
    "contexts.py",
    "nodes.py",
    "forwards.py",
    "facts.py",
)


@cache
def query_set_hash() -> str:
    """A digest of every query file (its pass declaration included), in name order, and of
    the FACT_MODULES."""
    digest = hashlib.sha256()
    for path in sorted(queries_dir().glob("*.scm")):  # the order of queries.query_names
        digest.update(path.stem.encode())
        digest.update(path.read_text(encoding="utf-8").encode())
    here = Path(__file__).resolve().parent
    for module in FACT_MODULES:
        digest.update((here / module).read_bytes())
    return digest.hexdigest()[:16]
