"""Where the tool keeps what it can rebuild: downloaded releases, clones, parsed facts."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """`TRACKER_CACHE_DIR` when set (tests and CI point it at a scratch folder), else the
    platform's user cache directory."""
    override = os.environ.get("TRACKER_CACHE_DIR")
    if override:
        return Path(override)
    import platformdirs  # deferred: keeps `tracker --help` fast

    return Path(platformdirs.user_cache_dir("sglang-tracker"))
