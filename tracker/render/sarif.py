"""`tracker check --format sarif`: broken wrappers as SARIF 2.1.0 results for code scanning.

One result per class, algorithm, role and rule (a missing member, a broken aux-hidden-state
contract, a member at risk), so that an alert stays one alert however many members or
findings it lists. It sits where the fix goes, the class's definition (path and line); the
worker sites that need the members (or the contract's write, read and unpack sites) are
related locations, each with its line and what happens there. URIs are repo paths,
percent-encoded; `partialFingerprints` name the class, algorithm, role and rule, so code
scanning keeps one alert per class and algorithm across runs, wherever the lines move. A
class that lacks a member needed only under a condition (at risk) is a warning.

Messages and justifications quote the analysed code (member names, its source text):
they are made inert for SARIF viewers (tracker.render.inert), which read brackets as links
and braces as placeholders, and print control characters raw.
"""

from __future__ import annotations

import hashlib
import urllib.parse
from collections.abc import Mapping
from typing import Any

from tracker import __version__
from tracker.render.documents import RenderOptions
from tracker.render.inert import sarif_text, visible

RULES = {
    "model_wrapper_missing_member": "A model wrapper lacks a member a speculative algorithm "
    "requires",
    "model_wrapper_contract_broken": "A model wrapper has every member but breaks EAGLE3's "
    "aux-hidden-state contract",
    "model_wrapper_member_at_risk": "A model wrapper lacks a member a speculative algorithm "
    "needs under a condition",
}
FINGERPRINT = "sglangTrackerFinding/v1"
# Related locations listed per missing member: enough to find each worker that needs it.
SITES_PER_MEMBER = 5


def artifact_uri(path: str) -> str:
    """A repo path as a URI reference: every byte but the unreserved ones and "/"
    percent-encoded (a space, "#", "?", "%", non-ASCII...), so it names that path only."""
    return urllib.parse.quote(path, safe="/")


def _location(
    path: str, line: int = 0, message: str = "", ident: int | None = None
) -> dict[str, Any]:
    where: dict[str, Any] = {"artifactLocation": {"uri": artifact_uri(path)}}
    if line:
        where["region"] = {"startLine": line}
    out: dict[str, Any] = {"physicalLocation": where}
    if ident is not None:
        out = {"id": ident, **out}
    if message:
        out["message"] = {"text": message}
    return out


def _fingerprint(rule: str, c: dict[str, Any]) -> dict[str, str]:
    key = "\0".join((rule, c["model"], c["algorithm"], c["role"]))
    return {FINGERPRINT: hashlib.sha256(key.encode()).hexdigest()[:32]}


def _suppression(c: dict[str, Any]) -> dict[str, Any]:
    if not c.get("accepted"):
        return {}
    # Accepted in the user's tracker.toml: SARIF's own way to say "known, keep showing
    # it, do not alert"; code scanning lists it as suppressed.
    return {
        "suppressions": [
            {
                "kind": "external",
                "status": "accepted",
                "justification": visible(c["accepted"]["reason"]),
            }
        ]
    }


def _site_message(member: str, site: dict[str, Any]) -> str:
    text = f"{member} is needed here, in {site['function']}"
    if site.get("condition"):
        text += f" if {site['condition']}"
    return text


def _missing_result(
    c: dict[str, Any], sites: Mapping[str, list[dict[str, Any]]], line: int, version: str
) -> dict[str, Any]:
    missing = ", ".join(c["missing"])
    text = (
        f"{c['model']} lacks {missing}, which {c['algorithm']} requires of the {c['role']} "
        f"model at {version}"
    )
    delegated = c["delegations"]
    if delegated:
        inner = delegated[0]
        members = ", ".join(dict.fromkeys(d["member"] for d in delegated))
        text += f"; its self.{inner['attribute']} ({inner['inner_class']}) provides {members}"
    related = [
        (s["path"], s["line"], _site_message(member, s))
        for member in c["missing"]
        for s in sites.get(member, [])[:SITES_PER_MEMBER]
    ]
    return _result("model_wrapper_missing_member", c, text + ".", line, related)


def _at_risk_result(c: dict[str, Any], line: int, version: str) -> dict[str, Any]:
    lacking = "; ".join(
        f"{r['member']} (needed if {r['condition']})" if r["condition"] else r["member"]
        for r in c["at_risk"]
    )
    text = (
        f"{c['model']} lacks what {c['algorithm']} needs of the {c['role']} model only under a "
        f"condition, at {version}: {lacking}"
    )
    return _result("model_wrapper_member_at_risk", c, text + ".", line, [])


def _contract_result(c: dict[str, Any], line: int, version: str) -> dict[str, Any]:
    findings = "; ".join(f["text"] for f in c["contract"])
    text = f"{c['model']} breaks {c['algorithm']}'s aux-hidden-state contract at {version}: "
    related = [(s["path"], s["line"], s["what"]) for f in c["contract"] for s in f["sites"]]
    return _result("model_wrapper_contract_broken", c, text + findings, line, related)


def _result(
    rule: str,
    c: dict[str, Any],
    text: str,
    line: int,
    related: list[tuple[str, int, str]],
) -> dict[str, Any]:
    level = "note" if c["support"] == "unsupported" else "error"
    return {
        "ruleId": rule,
        # A class that never took the algorithm up is context, not an alarm; a member at
        # risk is a warning.
        "level": "warning" if rule.endswith("at_risk") else level,
        "message": {"text": sarif_text(text)},
        "locations": [
            _location(
                c["path"],
                line,
                f"{c['model']} is defined here"
                if line
                else f"{c['model']} is defined in this file",
            )
        ],
        "relatedLocations": [
            _location(path, at, sarif_text(message), ident)
            for ident, (path, at, message) in enumerate(related, 1)
        ],
        "partialFingerprints": _fingerprint(rule, c),
        "properties": {
            "model": c["model"],
            "algorithm": c["algorithm"],
            "role": c["role"],
            "support": c["support"],
            **({"missing": list(c["missing"])} if rule.endswith("member") else {}),
            **(
                {"at_risk": [r["member"] for r in c["at_risk"]]} if rule.endswith("at_risk") else {}
            ),
            **({"rules": [f["rule"] for f in c["contract"]]} if c["contract"] else {}),
        },
        **_suppression(c),
    }


def check_sarif(
    doc: dict[str, Any], options: RenderOptions, class_lines: Mapping[str, int] | None = None
) -> dict[str, Any]:
    """The SARIF log of a `check` document; `class_lines` give each class's line in its
    file (the file alone is located without it)."""
    lines = class_lines or {}
    unsupported = {(u["model"], u["algorithm"], u["role"]) for u in doc.get("unsupported", [])}
    version = doc["models_version"]
    results = []
    for c in doc["checks"]:
        if c["status"] != "broken" and not c.get("at_risk"):
            continue
        row = {
            **c,
            "support": "unsupported"
            if (c["model"], c["algorithm"], c["role"]) in unsupported
            else "broken",
        }
        line = lines.get(c["model"], 0)
        if c["missing"]:
            sites = doc["requirements"].get(c["algorithm"], {}).get(c["role"], {})
            results.append(_missing_result(row, sites, line, version))
        if c.get("contract"):
            results.append(_contract_result(row, line, version))
        if c.get("at_risk"):
            results.append(_at_risk_result(row, line, version))
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "sglang-tracker",
                        "version": __version__,
                        "rules": [
                            {"id": rule, "shortDescription": {"text": text}}
                            for rule, text in RULES.items()
                        ],
                    }
                },
                "results": results,
            }
        ],
    }
