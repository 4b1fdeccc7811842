"""`tracker check --format sarif`: broken wrappers as SARIF 2.1.0 results, located at the
sites that need the missing members, with the wrapper's file as a related location."""

from __future__ import annotations

from typing import Any

from tracker import __version__
from tracker.render import RenderOptions


def check_sarif(doc: dict[str, Any], options: RenderOptions) -> dict[str, Any]:
    results = []
    for c in doc["checks"]:
        if c["status"] != "broken":
            continue
        sites = doc["requirements"].get(c["algorithm"], {}).get(c["role"], {})
        for member in c["missing"]:
            locations = [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": s["path"]},
                        "region": {"startLine": s["line"]},
                    }
                }
                for s in sites.get(member, [])[:5]
            ]
            suppression: dict[str, Any] = {}
            if c.get("accepted"):
                # Accepted in the user's tracker.toml: SARIF's own way to say "known, keep
                # showing it, do not alert"; code scanning lists it as suppressed.
                suppression["suppressions"] = [
                    {
                        "kind": "external",
                        "status": "accepted",
                        "justification": c["accepted"]["reason"],
                    }
                ]
            results.append(
                {
                    "ruleId": "model_wrapper_missing_member",
                    "level": "error",
                    "message": {
                        "text": f"{c['model']} lacks {member}, which {c['algorithm']} "
                        f"requires of the {c['role']} model"
                    },
                    "locations": locations
                    or [{"physicalLocation": {"artifactLocation": {"uri": c["path"]}}}],
                    "relatedLocations": [
                        {"physicalLocation": {"artifactLocation": {"uri": c["path"]}}}
                    ],
                    "properties": {
                        "model": c["model"],
                        "algorithm": c["algorithm"],
                        "member": member,
                        "version": doc["models_version"],
                    },
                    **suppression,
                }
            )
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
                            {
                                "id": "model_wrapper_missing_member",
                                "shortDescription": {
                                    "text": "A model wrapper lacks a member a "
                                    "speculative algorithm requires"
                                },
                            }
                        ],
                    }
                },
                "results": results,
            }
        ],
    }
