"""`tracker check --format sarif`: broken wrappers as SARIF 2.1.0 results, located at the
sites that need the missing members, with the wrapper's file as a related location; a
broken aux-hidden-state contract at its first site, with the others related.

Messages and justifications quote the analysed code (member names, its source text):
they are made inert for SARIF viewers (tracker.render.inert), which read brackets as links
and braces as placeholders, and print control characters raw."""

from __future__ import annotations

from typing import Any

from tracker import __version__
from tracker.render.documents import RenderOptions
from tracker.render.inert import sarif_text, visible

RULES = {
    "model_wrapper_missing_member": "A model wrapper lacks a member a speculative algorithm "
    "requires",
    "model_wrapper_contract_broken": "A model wrapper has every member but breaks EAGLE3's "
    "aux-hidden-state contract",
}


def _location(path: str, line: int = 0) -> dict[str, Any]:
    where: dict[str, Any] = {"artifactLocation": {"uri": path}}
    if line:
        where["region"] = {"startLine": line}
    return {"physicalLocation": where}


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


def _results(c: dict[str, Any], sites: dict[str, Any], version: str) -> list[dict[str, Any]]:
    out = []
    for member in c["missing"]:
        locations = [_location(s["path"], s["line"]) for s in sites.get(member, [])[:5]]
        out.append(
            {
                "ruleId": "model_wrapper_missing_member",
                "level": "error",
                "message": {
                    "text": sarif_text(
                        f"{c['model']} lacks {member}, which {c['algorithm']} "
                        f"requires of the {c['role']} model"
                    )
                },
                "locations": locations or [_location(c["path"])],
                "relatedLocations": [_location(c["path"])],
                "properties": {
                    "model": c["model"],
                    "algorithm": c["algorithm"],
                    "member": member,
                    "version": version,
                },
                **_suppression(c),
            }
        )
    for f in c.get("contract", []):
        first, *rest = f["sites"]
        out.append(
            {
                "ruleId": "model_wrapper_contract_broken",
                "level": "error",
                "message": {
                    "text": sarif_text(
                        f"{c['model']} breaks {c['algorithm']}'s aux-hidden-state "
                        f"contract: {f['text']}"
                    )
                },
                "locations": [_location(first["path"], first["line"])],
                "relatedLocations": [_location(s["path"], s["line"]) for s in rest]
                + [_location(c["path"])],
                "properties": {
                    "model": c["model"],
                    "algorithm": c["algorithm"],
                    "rule": f["rule"],
                    "version": version,
                },
                **_suppression(c),
            }
        )
    return out


def check_sarif(doc: dict[str, Any], options: RenderOptions) -> dict[str, Any]:
    results = []
    for c in doc["checks"]:
        if c["status"] == "broken":
            sites = doc["requirements"].get(c["algorithm"], {}).get(c["role"], {})
            results += _results(c, sites, doc["models_version"])
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
