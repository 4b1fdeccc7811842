"""A small inventory of external base classes for tests, in the shipped file's format, and a
helper that makes the analysis use it instead of the shipped one."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tracker.analysis.externals import SCHEMA, ExternalBases, parse_inventory
from tracker.sources.base import Pins

MODULE = "torch.nn.modules.module.Module"
PRETRAINED = "transformers.modeling_utils.PreTrainedModel"

DOC: dict[str, Any] = {
    "schema": SCHEMA,
    "member_sets": {
        "module": ["__call__", "named_modules", "training"],
        "ptm-4": ["config", "get_input_embeddings"],
        # A made-up later release that adds a member: which version is used matters.
        "ptm-5": ["config", "get_embed_and_head", "get_input_embeddings"],
        "mixin": ["push_to_hub"],
    },
    "packages": {
        "torch": {
            "2.9.1": {
                "classes": {MODULE: {"members": "module", "bases": []}},
                "names": {"torch.nn.Module": MODULE},
            },
        },
        "transformers": {
            "4.57.1": {
                "classes": {
                    PRETRAINED: {"members": "ptm-4", "bases": ["torch.nn.Module"]},
                    "transformers.utils.hub.HubMixin": {
                        "members": "mixin",
                        "bases": ["huggingface_hub.ModelHubMixin"],
                    },
                },
                "names": {"transformers.PreTrainedModel": PRETRAINED},
            },
            "5.3.0": {
                "classes": {PRETRAINED: {"members": "ptm-5", "bases": ["torch.nn.Module"]}},
                "names": {"transformers.PreTrainedModel": PRETRAINED},
            },
        },
    },
    "releases": {
        "v0.5.9": {"torch": "2.9.1", "transformers": "4.57.1"},
        "v0.5.10": {"torch": "2.9.1", "transformers": "5.3.0"},
    },
}


def doc() -> dict[str, Any]:
    """A fresh copy of DOC that a test may edit."""
    return copy.deepcopy(DOC)


def pins(**versions: str) -> Pins:
    """`pins(torch="2.9.1", release="v0.5.9")`: pinned versions, and the release name."""
    release = versions.pop("release", "")
    return Pins(tuple(sorted(versions.items())), "test" if versions else "", release)


def use(monkeypatch: pytest.MonkeyPatch, document: dict[str, Any] | None = None) -> None:
    """Make provision look external bases up in `document` (DOC by default)."""
    inventory = parse_inventory(document or DOC, "the test inventory")
    monkeypatch.setattr("tracker.analysis.compat.bases_for", lambda p: ExternalBases(inventory, p))
