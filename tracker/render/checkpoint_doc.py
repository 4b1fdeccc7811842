"""The document of an answer for checkpoints (`check --model-config`): for each algorithm,
the class each role loads and the rules that picked it, each class's check against the
requirements as the configs decide them, what the configs changed and what they could not
decide, and what to do. The JSON is this document (schemas/checkpoint.schema.json)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tracker.analysis.checkpoint import Answer, RoleAnswer
from tracker.render.documents import check_doc, requirement_doc

SCHEMA = "sglang-tracker/checkpoint@1"


@dataclass(frozen=True)
class NextStep:
    """What to do about one answer: the `tracker fix` line when the inner models provide
    what is missing, and the first later release at which the same checkpoints are ok."""

    fix_command: str = ""
    fixed_in: str = ""
    looked_for_fix: bool = False  # later releases were read (only for a broken answer)
    looked_until: str = ""  # the last of them
    complete: bool = True  # every later release the source has was read


def answer_doc(found: Answer, step: NextStep) -> dict[str, Any]:
    return {
        "algorithm": found.algorithm,
        "status": found.status,
        "roles": [_role_doc(r) for r in found.roles],
        "changes": [
            {
                "role": c.role,
                "member": c.member,
                "before": str(c.before),
                "after": str(c.after),
                "because": list(c.because),
                "site": c.site,
                "condition": c.condition,
            }
            for c in found.changes
        ],
        "undecided": [
            {"kind": u.kind, "what": u.what, "where": u.where, "why": u.why}
            for u in found.undecided
        ],
        "requirements": [requirement_doc(r) for r in found.requirements],
        "next": {
            "fix_command": step.fix_command,
            "fixed_in": step.fixed_in,
            "looked_for_fix": step.looked_for_fix,
            "looked_until": step.looked_until,
            "complete": step.complete,
        },
    }


def _role_doc(role: RoleAnswer) -> dict[str, Any]:
    choice = role.choice
    return {
        "role": role.role,
        "given_as": role.given_as,
        "config": choice.config.path if choice is not None else None,
        "class": choice.class_name if choice is not None else None,
        "architectures": {
            "given": list(choice.given) if choice is not None else [],
            "loaded": list(choice.architectures) if choice is not None else [],
        },
        "steps": [
            {
                "rule": s.rule,
                "site": s.site,
                "architectures": list(s.architectures),
                "condition": s.condition,
                "because": list(s.because),
            }
            for s in (choice.steps if choice is not None else ())
        ],
        "refusal": role.refusal,
        "check": check_doc(role.check) if role.check is not None else None,
    }


def checkpoint_document(
    version: str, source: str, answers: Sequence[tuple[Answer, NextStep]]
) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "version": version,
        "source": source,
        "answers": [answer_doc(a, s) for a, s in answers],
    }


def fix_command(found: Answer, version_options: str, checkpoint_options: str) -> str:
    """`tracker fix ...` for a broken answer whose broken classes' inner models provide
    every member they lack; "" otherwise (nothing to delegate to, or a contract break)."""
    broken = [r.check for r in found.roles if r.check is not None and r.check.status == "broken"]
    if not broken:
        return ""
    for check in broken:
        delegated = {d.member for d in check.delegations}
        if check.contract or not set(check.missing) <= delegated:
            return ""
    algorithm = f" --algorithm {found.algorithm}" if found.algorithm != "EAGLE3" else ""
    return f"tracker fix {version_options} {checkpoint_options}{algorithm}"
