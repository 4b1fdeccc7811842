"""Snapshots: one version's interface and compatibility as JSON facts (names, paths, lines).

A snapshot records what it was built from (source identity and a digest of the content ids
of the files under `python/sglang/srt/`) and by what (tool version, query set, role rules).
It is reused only when all of those match; anything else is rebuilt, never trusted.
Output is deterministic: keys sorted, lists in a fixed order, so the same inputs give
byte-identical files.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tracker import __version__
from tracker.analysis.compat import (
    AtRisk,
    Compat,
    Delegation,
    EntryClass,
    ModelCheck,
    Needs,
    Provision,
    contract_slot,
    natural_role,
    stood_in_by,
    workers_problem,
)
from tracker.analysis.contract import SETTER, ContractFinding, ContractSite
from tracker.analysis.drafts import DraftClass, DraftModels
from tracker.analysis.externals import INVENTORY
from tracker.analysis.interface import FieldUse, Interface, Requirement, Site
from tracker.analysis.vocabulary import ProvisionKind
from tracker.common.atomic import write_text_atomic
from tracker.common.errors import TrackerError
from tracker.common.regular import read_regular_text
from tracker.common.resources import data_file
from tracker.extract.facts import FACTS_FORMAT
from tracker.sources.base import SRT_PREFIX, SourceIdentity

SCHEMA = "sglang-tracker/snapshot@3"


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
    # For a tree based on a release (tracker.compare.basis): "v0.5.9 + 1 changed file";
    # not part of the file either.
    basis: str = ""


def algorithms_of(*snapshots: Snapshot) -> tuple[str, ...]:
    """Every algorithm any of the snapshots has, in first-seen enum order."""
    return tuple(dict.fromkeys(a for s in snapshots for a in s.interface.algorithms))


def aliases_of(*snapshots: Snapshot) -> dict[str, tuple[str, str]]:
    """The algorithm names the snapshots' code rewrites (`NEXTN` -> `EAGLE`), the newest
    snapshot's word last."""
    out: dict[str, tuple[str, str]] = {}
    for snap in snapshots:
        out.update(snap.interface.aliases)
    return out


def pick_algorithms(
    available: tuple[str, ...],
    wanted: tuple[str, ...],
    *,
    skip_unknown: bool = False,
    aliases: Mapping[str, tuple[str, str]] | None = None,
    note: Callable[[str], None] | None = None,
) -> tuple[str, ...]:
    """The algorithms asked for (`-a`, in any case), or all of `available` when none is.
    A name the code rewrites (`NEXTN`, `aliases`) stands for what it runs as, and `note`
    is told so. A name the versions lack is an error naming those they have; with
    `skip_unknown` (a watch over many releases, some older than the algorithm) it is left
    out instead."""
    if not wanted:
        return available
    aliases = aliases or {}
    upper: list[str] = []
    for name in (a.upper() for a in wanted):
        if name not in available and name in aliases and aliases[name][0] in available:
            runs_as, site = aliases[name]
            if note is not None:
                note(f"{name} runs as {runs_as} ({site})")
            name = runs_as
        if name not in upper:
            upper.append(name)
    if skip_unknown:
        return tuple(a for a in upper if a in available)
    unknown = [a for a in upper if a not in available]
    if unknown:
        also = [
            f"{a} runs as {aliases[a][0]}" for a in sorted(aliases) if aliases[a][0] in available
        ]
        listed = ", ".join(available) or "none"
        raise TrackerError(
            f"unknown algorithm {', '.join(unknown)}; this version has {listed}"
            + (f" ({'; '.join(also)})" if also else "")
        )
    return tuple(upper)


# The modules whose logic decides what a snapshot says: every module of the analysis
# package (index, loader, call graph, algorithms, roles, interface, compat, kinds, drafts,
# contract, externals). Their text is part of the builder identity so that a changed
# analysis never reuses an old answer; a new analysis module is covered by being there.
ANALYSIS_PACKAGE = "analysis"


def analysis_modules() -> list[Path]:
    """The files of the analysis package, sorted by name."""
    root = Path(__file__).resolve().parents[1]
    return sorted((root / ANALYSIS_PACKAGE).glob("*.py"), key=lambda p: p.name)


def current_builder() -> Builder:
    from tracker.analysis.roles import load_rules
    from tracker.extract.identity import query_set_hash

    return _builder_for(load_rules().source_hash, query_set_hash())


@functools.cache
def _builder_for(rules_hash: str, query_set: str) -> Builder:
    """Worked out once per process and rules: a command over every release asks for each
    snapshot, and hashing the analysis package each time was a third of `history`."""
    digest = hashlib.sha256(rules_hash.encode())
    for module in analysis_modules():
        digest.update(module.read_bytes())
    # What external bases provide is data too: a rebuilt inventory changes verdicts.
    digest.update(data_file(INVENTORY).read_bytes())
    return Builder(__version__, query_set, digest.hexdigest()[:16])


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
        "draft_models": {a: asdict(d) for a, d in sorted(itf.draft_models.items())},
        "aliases": {a: {"runs_as": r, "site": w} for a, (r, w) in sorted(itf.aliases.items())},
        "unparsed": {a: list(p) for a, p in sorted(itf.unparsed.items())},
        "draft_classes": {
            n: {"algorithms": list(d.algorithms), "evidence": d.evidence}
            for n, d in sorted(itf.draft_classes.items())
        },
        "entry_classes": _entry_classes(compat),
        # How each member is provided does not depend on the algorithm: it is stored once
        # per class (above); a check keeps only its verdict.
        "checks": _checks(compat),
    }
    return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def _checks(compat: Compat) -> list[dict[str, Any]]:
    """One row per (model, role): the verdict per algorithm."""
    rows: dict[tuple[str, str], dict[str, str]] = {}
    for c in compat.checks:
        rows.setdefault((c.model, c.role), {})[c.algorithm] = c.status
    return [{"model": m, "role": r, "status": st} for (m, r), st in rows.items()]


def _entry_classes(compat: Compat) -> list[dict[str, Any]]:
    provisions: dict[str, dict[str, Provision]] = {}
    delegations: dict[str, dict[tuple[str, str, str], Delegation]] = {}
    # By class, then by the contract followed (a capture hook, or a draft's forward).
    contracts: dict[str, dict[str, ModelCheck]] = {}
    # A problem of the class's own file (not of a worker file): the same for every check.
    own_problems: dict[str, str] = {}
    # A member another stands in for (`alternative`) is so only for the algorithms that
    # accept the stand-in: it is kept apart, and the member's own provision (missing, for
    # the others) is what `provisions` holds.
    stand_ins: dict[str, dict[str, Provision]] = {}
    for c in compat.checks:
        if c.problem and not c.problem.startswith("the worker file"):
            own_problems[c.model] = c.problem
        held = provisions.setdefault(c.model, {})
        for p in c.provisions:
            if p.how == ProvisionKind.ALTERNATIVE:
                stand_ins.setdefault(c.model, {})[p.member] = p
                held.setdefault(p.member, Provision(p.member, ProvisionKind.MISSING, ""))
            else:
                held[p.member] = p
        if c.contract or c.contract_unknown:
            contracts.setdefault(c.model, {})[c.contract_hook or SETTER] = c
        for d in c.delegations:
            delegations.setdefault(c.model, {})[(d.member, d.attribute, d.inner_key)] = d
    out = []
    for e in compat.entries:
        doc = asdict(e)
        doc["provisions"] = {
            member: {k: v for k, v in provision_doc(p).items() if k != "member" and v != ""}
            for member, p in sorted(provisions.get(e.name, {}).items())
        }
        stood_in = stand_ins.get(e.name, {})
        if stood_in:
            doc["stand_ins"] = {
                member: {k: v for k, v in provision_doc(p).items() if k not in ("member", "how")}
                for member, p in sorted(stood_in.items())
            }
        doc["delegations"] = [
            {k: v for k, v in asdict(d).items() if v != ()}
            for _, d in sorted(delegations.get(e.name, {}).items())
        ]
        # A contract does not depend on the algorithm, only on the hook it goes through
        # (EAGLE3's in `contract`, the others in `hook_contracts`) or the draft's forward.
        by_hook = contracts.get(e.name, {})
        doc.update(_contract_doc(by_hook.pop(SETTER, None)))
        others = {h: _contract_doc(c) for h, c in sorted(by_hook.items())}
        if others:
            doc["hook_contracts"] = others
        own = own_problems.get(e.name, "")
        if own:
            doc["problem"] = own
        out.append(doc)
    return out


def _contract_doc(check: ModelCheck | None) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    if check is not None and check.contract:
        doc["contract"] = [asdict(f) for f in check.contract]
    if check is not None and check.contract_unknown:
        doc["contract_unknown"] = check.contract_unknown
    return doc


def _read_contract(doc: dict[str, Any]) -> tuple[tuple[ContractFinding, ...], str]:
    findings = tuple(
        ContractFinding(f["rule"], f["message"], tuple(ContractSite(**x) for x in f["sites"]))
        for f in doc.get("contract", ())
    )
    return findings, doc.get("contract_unknown", "")


# The JSON forms of a site, a requirement, a field use and a provision, as the reports show
# them (tracker.render.documents); a snapshot stores the same forms compacted.


def site_doc(site: Site) -> dict[str, Any]:
    return {
        "path": site.path,
        "line": site.line,
        "function": site.function,
        "condition": site.condition,
        "status": site.status,
        "guard": site.guard,
        "arity": site.arity,
        "call_path": list(site.call_path),
    }


def requirement_doc(req: Requirement) -> dict[str, Any]:
    return {
        "algorithm": req.algorithm,
        "role": req.role,
        "member": req.member,
        "kind": req.kind,
        "status": req.status,
        "arities": list(req.arities),
        "uses": list(req.uses),
        "alternatives": list(req.alternatives),
        "raises": req.raises,
        "sites": [site_doc(s) for s in req.sites],
    }


def field_doc(f: FieldUse) -> dict[str, Any]:
    return {
        "algorithm": f.algorithm,
        "owner": f.owner,
        "name": f.name,
        "sites": [site_doc(s) for s in f.sites],
    }


def provision_doc(p: Provision) -> dict[str, Any]:
    line = {"line": p.line} if p.line else {}
    return {"member": p.member, "how": p.how, "where": p.where, **line}


def _site(s: Site) -> dict[str, Any]:
    return {k: v for k, v in site_doc(s).items() if v not in ("", [], ())}


def _requirement(r: Requirement) -> dict[str, Any]:
    # Arities and uses are read back from the sites; empty alternatives are left out.
    doc = requirement_doc(r)
    del doc["arities"], doc["uses"]
    if not r.alternatives:
        del doc["alternatives"]
    if not r.raises:
        del doc["raises"]
    doc["sites"] = [_site(s) for s in r.sites]
    return doc


def _field(f: FieldUse) -> dict[str, Any]:
    # A field read needs no call path to be understood; leaving it out halves the file.
    doc = field_doc(f)
    doc["sites"] = [{k: v for k, v in _site(s).items() if k != "call_path"} for s in f.sites]
    return doc


def from_json(text: str, models: frozenset[str] | None = None) -> Snapshot:
    """The snapshot in `text`; with `models`, only those entry classes and their checks
    (most of a snapshot's objects are checks: a command about one model builds its own)."""
    return from_doc(json.loads(text), models)


def from_doc(doc: Any, models: frozenset[str] | None = None) -> Snapshot:
    """`from_json` of a document already decoded."""
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
                tuple(r.get("alternatives", ())),
                r.get("raises", ""),
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
        draft_models={
            a: DraftModels(d["mode"], d["evidence"]) for a, d in doc.get("draft_models", {}).items()
        },
        aliases={a: (d["runs_as"], d["site"]) for a, d in doc.get("aliases", {}).items()},
        draft_classes={
            n: DraftClass(tuple(d["algorithms"]), d["evidence"])
            for n, d in doc.get("draft_classes", {}).items()
        },
        unparsed={a: tuple(p) for a, p in doc.get("unparsed", {}).items()},
    )
    compat = _load_compat(version, doc, itf, models)
    return Snapshot(
        version=version,
        source=SourceIdentity(**doc["source"]),
        content_digest=doc["content_digest"],
        builder=Builder(**doc["builder"]),
        interface=itf,
        compat=compat,
    )


def _load_compat(
    version: str, doc: dict[str, Any], itf: Interface, models: frozenset[str] | None = None
) -> Compat:
    """Rebuild each check from its verdict and its class's provisions: a check covers the
    members its algorithm requires of its role, in name order (as build_compat does).
    With `models`, the entry classes of those names only."""
    required: dict[tuple[str, str], list[str]] = {}
    for r in itf.requirements:
        if r.status == "required":
            required.setdefault((r.algorithm, r.role), []).append(r.member)
    needs = Needs.of(itf)
    risky = needs.conditional
    problems: dict[str, str] = {}
    entries = []
    provisions: dict[str, dict[str, Provision]] = {}
    stand_ins: dict[str, dict[str, Provision]] = {}
    delegations: dict[str, list[Delegation]] = {}
    contracts: dict[str, dict[str, tuple[tuple[ContractFinding, ...], str]]] = {}
    for e in doc["entry_classes"]:
        if models is not None and e["name"] not in models:
            continue
        entries.append(
            EntryClass(
                e["name"],
                e["key"],
                e["path"],
                e["line"],
                e["kind"],
                e.get("kind_evidence", ""),
                e.get("class_line", 0),
            )
        )
        provisions[e["name"]] = {
            member: Provision(member, p["how"], p.get("where", ""), p.get("line", 0))
            for member, p in e["provisions"].items()
        }
        stand_ins[e["name"]] = {
            member: Provision(member, ProvisionKind.ALTERNATIVE, p["where"], p.get("line", 0))
            for member, p in e.get("stand_ins", {}).items()
        }
        delegations[e["name"]] = [
            Delegation(
                d["member"],
                d["attribute"],
                d["inner_class"],
                d["inner_key"],
                d["provided_by"],
                tuple(d.get("also", ())),
                tuple(d.get("lacking", ())),
            )
            for d in e["delegations"]
        ]
        problems[e["name"]] = e.get("problem", "")
        contracts[e["name"]] = {
            SETTER: _read_contract(e),
            **{h: _read_contract(c) for h, c in e.get("hook_contracts", {}).items()},
        }
    paths = {e.name: (e.path, e.kind, e.kind_evidence) for e in entries}
    checks = []
    verdicts = [
        (row["model"], row["role"], algorithm, status)
        for row in doc["checks"]
        if models is None or row["model"] in models
        for algorithm, status in row["status"].items()
    ]
    order = {a: i for i, a in enumerate(itf.algorithms)}
    position = {e.name: i for i, e in reversed(list(enumerate(entries)))}
    # The order build_compat produces: entry classes by name, algorithms in enum order,
    # the target role before the draft role.
    verdicts.sort(key=lambda v: (position[v[0]], order.get(v[2], len(order)), v[1] != "target"))
    members_of = {slot: sorted(set(names)) for slot, names in required.items()}

    for model, role, algorithm, status in verdicts:
        members = members_of.get((algorithm, role), [])
        held, stood = provisions[model], stand_ins[model]
        provs = tuple(held.get(m) or Provision(m, "unknown", "not recorded") for m in members)
        risk_provs = tuple(
            held[m] for m, _ in risky.get((algorithm, role), ()) if m not in members and m in held
        )
        if stood:  # most classes have no member another stands in for
            provs = tuple(_with_stand_in(p, stood, needs, algorithm, role) for p in provs)
            risk_provs = tuple(_with_stand_in(p, stood, needs, algorithm, role) for p in risk_provs)
        missing = tuple(p.member for p in provs if p.how == "missing")
        path, kind, kind_evidence = paths[model]
        unknown = any(p.how == "unknown" for p in provs)
        slot = "" if missing or unknown else contract_slot(role, provs)
        findings, contract_unknown = contracts[model].get(slot, ((), ""))
        drafts = itf.draft_models.get(algorithm)
        role_evidence = drafts.evidence if drafts is not None and role != natural_role(kind) else ""
        lacking = {p.member for p in risk_provs if p.how == ProvisionKind.MISSING}
        at_risk = tuple(
            AtRisk(m, cond) for m, cond in risky.get((algorithm, role), ()) if m in lacking
        )
        checks.append(
            ModelCheck(
                model,
                path,
                kind,
                algorithm,
                role,
                status,
                missing,
                tuple(p.member for p in provs if p.how == "unknown"),
                provs + risk_provs,
                tuple(
                    d
                    for m in (*missing, *(r.member for r in at_risk))
                    for d in delegations[model]
                    if d.member == m
                ),
                contract=findings,
                contract_unknown=contract_unknown,
                contract_hook=slot if findings or contract_unknown else "",
                kind_evidence=kind_evidence,
                role_evidence=role_evidence,
                at_risk=at_risk,
                problem=problems[model] or workers_problem(itf.unparsed.get(algorithm, ())),
            )
        )
    return Compat(version, entries=entries, checks=checks)


def _with_stand_in(
    own: Provision, stood: dict[str, Provision], needs: Needs, algorithm: str, role: str
) -> Provision:
    """The member's provision in this check: its own, or (when it is missing) the stand-in
    recorded for it, if this algorithm accepts that stand-in (as
    provision_or_alternative decides it)."""
    stand_in = stood.get(own.member)
    if stand_in is None or own.how != ProvisionKind.MISSING:
        return own
    accepted = needs.alternatives.get((algorithm, role, own.member), ())
    return stand_in if stood_in_by(stand_in) in accepted else own


# Sites already built in this process, by their fields: consecutive releases record most
# sites unchanged, so a command over every release builds each once and shares the frozen
# object (`history` over the shipped snapshots builds a third of the sites it reads).
_SITES: dict[tuple[Any, ...], Site] = {}
_SITES_KEPT = 200_000


def _load_site(s: dict[str, Any]) -> Site:
    fields = (
        s["path"],
        s["line"],
        s["function"],
        s.get("condition", ""),
        s.get("status", "required"),
        s.get("guard", ""),
        s.get("arity", ""),
        tuple(s.get("call_path", ())),
    )
    site = _SITES.get(fields)
    if site is None:
        if len(_SITES) >= _SITES_KEPT:
            _SITES.clear()
        site = _SITES[fields] = Site(*fields)
    return site


# ----------------------------------------------------------------------------- store


def shipped_dir() -> Path:
    """`snapshots/` as shipped in the wheel (tracker/snapshots), else the checkout's."""
    from importlib import resources

    packaged = resources.files("tracker") / "snapshots"
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[2] / "snapshots"


def load_file(path: Path, models: frozenset[str] | None = None) -> Snapshot | None:
    """A snapshot file, or None when it is missing, unreadable or not a snapshot."""
    try:
        return from_json(read_regular_text(path), models)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


# (repo path, line, function, member) of a recorded site: the member or field used there,
# "" for a site of an aux-hidden-state contract finding (which records no function either).
RecordedSite = tuple[str, int, str, str]


def recorded_sites(path: Path) -> frozenset[RecordedSite]:
    """Every site a snapshot file records (requirements, forward-output fields,
    configuration keys, contract findings), read without building the snapshot: for
    placing a traceback's frames in a release. Empty when the file cannot be read."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        found = {
            (s["path"], s["line"], s["function"], r["member"])
            for r in doc["requirements"]
            for s in r["sites"]
        }
        for f in [*doc["output_fields"], *doc["config_keys"]]:
            found |= {(s["path"], s["line"], s["function"], f["name"]) for s in f["sites"]}
        for entry in doc["entry_classes"]:
            for finding in entry.get("contract", ()):
                found |= {(s["path"], s["line"], "", "") for s in finding["sites"]}
    except (OSError, ValueError, KeyError, TypeError):
        return frozenset()
    return frozenset(found)


def write_file(path: Path, snap: Snapshot) -> None:
    write_text_atomic(path, to_json(snap))


def write_cached(path: Path, snap: Snapshot) -> None:
    """A cache copy: the JSON behind a line with its sha256, so that a damaged copy (a
    flipped digit is still valid JSON) is detected and rebuilt, never served."""
    text = to_json(snap)
    digest = hashlib.sha256(text.encode()).hexdigest()
    write_text_atomic(path, f"sha256:{digest}\n{text}")


def load_cached(path: Path, models: frozenset[str] | None = None) -> Snapshot | None:
    try:
        raw = read_regular_text(path)
    except (OSError, UnicodeDecodeError):
        return None
    head, _, text = raw.partition("\n")
    if head != f"sha256:{hashlib.sha256(text.encode()).hexdigest()}":
        return None
    try:
        return from_json(text, models)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def is_current(snap: Snapshot, builder: Builder) -> bool:
    return snap.builder == builder
