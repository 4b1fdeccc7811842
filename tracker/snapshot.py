"""Snapshots: one version's interface and compatibility as JSON facts (names, paths, lines).

A snapshot records what it was built from (source identity and a digest of the content ids
of the files under `python/sglang/srt/`) and by what (tool version, query set, role rules).
It is reused only when all of those match; anything else is rebuilt, never trusted.
Output is deterministic: keys sorted, lists in a fixed order, so the same inputs give
byte-identical files.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tracker import __version__
from tracker.atomic import write_text_atomic
from tracker.compat import Compat, Delegation, EntryClass, ModelCheck, Provision
from tracker.facts import FACTS_FORMAT
from tracker.interface import FieldUse, Interface, Requirement, Site
from tracker.sources.base import SRT_PREFIX, SourceIdentity

SCHEMA = "sglang-tracker/snapshot@1"


@dataclass(frozen=True)
class Builder:
    """What produced a snapshot: any difference makes it stale."""

    tool: str
    query_set: str
    rules: str
    facts_format: int = FACTS_FORMAT


@dataclass
class Snapshot:
    version: str
    source: SourceIdentity
    content_digest: str
    builder: Builder
    interface: Interface
    compat: Compat
    # Where this copy came from ("shipped", "cache", "built"); not part of the file.
    origin: str = "built"


# The modules whose logic decides what a snapshot says; their text is part of the
# builder identity so that a changed analysis never reuses an old answer.
ANALYSIS_MODULES = (
    "index.py",
    "callgraph.py",
    "algorithms.py",
    "interface.py",
    "compat.py",
    "roles.py",
    "loader.py",
)


def current_builder() -> Builder:
    from tracker.parse import query_set_hash  # deferred: parse imports tree-sitter
    from tracker.roles import load_rules

    here = Path(__file__).resolve().parent
    digest = hashlib.sha256(load_rules().source_hash.encode())
    for module in ANALYSIS_MODULES:
        digest.update((here / module).read_bytes())
    return Builder(__version__, query_set_hash(), digest.hexdigest()[:16])


def content_digest(files: Mapping[str, str]) -> str:
    """A digest of (path, content id) of every file under `python/sglang/srt/`."""
    digest = hashlib.sha256()
    for path in sorted(files):
        if path.startswith(SRT_PREFIX):
            digest.update(f"{path}\0{files[path]}\n".encode())
    return digest.hexdigest()


# -------------------------------------------------------------------------- encoding


def to_json(snap: Snapshot) -> str:
    itf, compat = snap.interface, snap.compat
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "version": snap.version,
        "source": asdict(snap.source),
        "content_digest": snap.content_digest,
        "builder": asdict(snap.builder),
        "algorithms": list(itf.algorithms),
        "workers": {a: list(w) for a, w in sorted(itf.workers.items())},
        "warnings": sorted(itf.warnings),
        "requirements": [_requirement(r) for r in itf.requirements],
        "output_fields": [_field(f) for f in itf.output_fields],
        "config_keys": [_field(f) for f in itf.config_keys],
        "entry_classes": [asdict(e) for e in compat.entries],
        "checks": [_check(c) for c in compat.checks],
    }
    return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def _site(s: Site) -> dict[str, Any]:
    out = asdict(s)
    out["call_path"] = list(s.call_path)
    return {k: v for k, v in out.items() if v not in ("", [], ())}


def _requirement(r: Requirement) -> dict[str, Any]:
    return {
        "algorithm": r.algorithm,
        "role": r.role,
        "member": r.member,
        "kind": r.kind,
        "status": r.status,
        "sites": [_site(s) for s in r.sites],
    }


def _field(f: FieldUse) -> dict[str, Any]:
    return {
        "algorithm": f.algorithm,
        "owner": f.owner,
        "name": f.name,
        "sites": [_site(s) for s in f.sites],
    }


def _check(c: ModelCheck) -> dict[str, Any]:
    out: dict[str, Any] = {
        "model": c.model,
        "path": c.path,
        "kind": c.kind,
        "algorithm": c.algorithm,
        "role": c.role,
        "status": c.status,
    }
    if c.missing:
        out["missing"] = list(c.missing)
    if c.unknown:
        out["unknown"] = list(c.unknown)
    out["provisions"] = [
        {k: v for k, v in asdict(p).items() if v not in ("", 0)} for p in c.provisions
    ]
    if c.delegations:
        out["delegations"] = [asdict(d) for d in c.delegations]
    return out


def from_json(text: str) -> Snapshot:
    doc = json.loads(text)
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise ValueError("not a sglang-tracker snapshot (schema id missing or different)")
    version = doc["version"]
    itf = Interface(
        version=version,
        algorithms=tuple(doc["algorithms"]),
        workers={a: tuple(w) for a, w in doc["workers"].items()},
        requirements=[
            Requirement(
                r["algorithm"],
                r["role"],
                r["member"],
                r["kind"],
                r["status"],
                tuple(_load_site(s) for s in r["sites"]),
            )
            for r in doc["requirements"]
        ],
        output_fields=[
            FieldUse(
                f["algorithm"], f["owner"], f["name"], tuple(_load_site(s) for s in f["sites"])
            )
            for f in doc["output_fields"]
        ],
        config_keys=[
            FieldUse(
                f["algorithm"], f["owner"], f["name"], tuple(_load_site(s) for s in f["sites"])
            )
            for f in doc["config_keys"]
        ],
        warnings=list(doc["warnings"]),
    )
    compat = Compat(
        version,
        entries=[EntryClass(**e) for e in doc["entry_classes"]],
        checks=[
            ModelCheck(
                c["model"],
                c["path"],
                c["kind"],
                c["algorithm"],
                c["role"],
                c["status"],
                tuple(c.get("missing", ())),
                tuple(c.get("unknown", ())),
                tuple(
                    Provision(p["member"], p["how"], p.get("where", ""), p.get("line", 0))
                    for p in c["provisions"]
                ),
                tuple(Delegation(**d) for d in c.get("delegations", ())),
            )
            for c in doc["checks"]
        ],
    )
    return Snapshot(
        version=version,
        source=SourceIdentity(**doc["source"]),
        content_digest=doc["content_digest"],
        builder=Builder(**doc["builder"]),
        interface=itf,
        compat=compat,
    )


def _load_site(s: dict[str, Any]) -> Site:
    return Site(
        path=s["path"],
        line=s["line"],
        function=s["function"],
        condition=s.get("condition", ""),
        status=s.get("status", "required"),
        guard=s.get("guard", ""),
        arity=s.get("arity", ""),
        call_path=tuple(s.get("call_path", ())),
    )


# ----------------------------------------------------------------------------- store


def shipped_dir() -> Path:
    """`snapshots/` as shipped in the wheel (tracker/snapshots), else the checkout's."""
    from importlib import resources

    packaged = resources.files("tracker") / "snapshots"
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parent.parent / "snapshots"


def load_file(path: Path) -> Snapshot | None:
    """A snapshot file, or None when it is missing, unreadable or not a snapshot."""
    try:
        return from_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_file(path: Path, snap: Snapshot) -> None:
    write_text_atomic(path, to_json(snap))


def is_current(snap: Snapshot, builder: Builder) -> bool:
    return snap.builder == builder
