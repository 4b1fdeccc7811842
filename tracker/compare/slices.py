"""A snapshot file cut down to some entry classes, kept in the cache.

A command about one class over every release (`history`) needs, of each snapshot, the
interface and that class's entry and checks: a twentieth of the file. Decoding the 85
whole files costs most of such a command; the cut copies cost a fraction of it.

A cut copy is named by the file it was cut from as the file system describes it (path,
size, modification time in nanoseconds), not by its content: hashing every file on every
run would cost about what the cut saves. A shipped snapshot is rewritten only by a
refresh or a new install, which gives it a new modification time, so a new name; the
copies of the old one are swept once unused for a while (`tracker.common.cachedir`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from tracker.common.atomic import write_text_atomic
from tracker.common.cachedir import CUT_COPIES, cache_root, cannot_write_cache
from tracker.common.regular import read_regular_text
from tracker.compare.snapshot import Snapshot, from_doc, load_cached


def load_cut(path: Path, models: frozenset[str]) -> Snapshot | None:
    """The snapshot in `path` with only the entry classes named `models` (as
    `load_file(path, models)` gives it), from its cut copy in the cache; the copy is made
    when there is none. None when the file is missing, unreadable or not a snapshot."""
    copy = _copy_path(path, models)
    if copy is not None:
        cut = load_cached(copy, models)
        if cut is not None:
            return cut
    try:
        doc = json.loads(read_regular_text(path))
        snap = from_doc(doc, models)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if copy is not None:
        _write_copy(copy, _cut(doc, models))
    return snap


def _cut(doc: dict[str, Any], models: frozenset[str]) -> dict[str, Any]:
    return {
        **doc,
        "entry_classes": [e for e in doc["entry_classes"] if e["name"] in models],
        "checks": [c for c in doc["checks"] if c["model"] in models],
    }


def _copy_path(path: Path, models: frozenset[str]) -> Path | None:
    try:
        found = path.stat()
    except OSError:
        return None
    named = f"{path.absolute()}\0{found.st_size}\0{found.st_mtime_ns}"
    of_file = hashlib.sha256(named.encode("utf-8", "surrogateescape")).hexdigest()[:24]
    of_models = hashlib.sha256("\0".join(sorted(models)).encode()).hexdigest()[:24]
    return cache_root() / CUT_COPIES / of_file / f"{of_models}.json"


def _write_copy(copy: Path, doc: dict[str, Any]) -> None:
    # The same guarded form as a cached snapshot: a damaged copy is cut again, never read.
    text = json.dumps(doc, separators=(",", ":"), sort_keys=True)
    digest = hashlib.sha256(text.encode()).hexdigest()
    try:
        copy.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(copy, f"sha256:{digest}\n{text}")
    except OSError as exc:
        cannot_write_cache(copy.parent, exc)
