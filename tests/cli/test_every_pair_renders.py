"""Every report renders in every format for every pair of consecutive shipped releases:
a template that trips over a rare change kind fails here, not in a user's CI."""

from __future__ import annotations

import itertools
import json

import pytest

from tracker.compare.diff import diff
from tracker.compare.workspace import Workspace, shipped_versions
from tracker.render.documents import RenderOptions, diff_document, interface_document, render
from tracker.sources.pypi import PypiSource

VERSIONS = shipped_versions()


@pytest.fixture(scope="module")
def snapshots() -> dict[str, object]:
    ws = Workspace(PypiSource())
    return {v: ws.snapshot(v) for v in VERSIONS}


@pytest.mark.parametrize("fmt", ["text", "md", "json"])
def test_every_consecutive_diff_renders(fmt: str, snapshots: dict[str, object]) -> None:
    for old, new in itertools.pairwise(VERSIONS):
        a, b = snapshots[old], snapshots[new]
        assert a.origin == b.origin == "shipped"  # type: ignore[attr-defined]
        result = diff(a.interface, a.compat, b.interface, b.compat)  # type: ignore[attr-defined]
        doc = diff_document(result, "pypi")
        for show_all in (False, True):
            out = render("diff", fmt, doc, RenderOptions(show_all=show_all))
            assert f"{old}" in out and f"{new}" in out
            if fmt == "json":
                assert json.loads(out)["schema"] == "sglang-tracker/diff@2"


@pytest.mark.parametrize("fmt", ["text", "md", "json"])
def test_every_interface_renders(fmt: str, snapshots: dict[str, object]) -> None:
    for version in VERSIONS:
        itf = snapshots[version].interface  # type: ignore[attr-defined]
        doc = interface_document(itf, "pypi", itf.algorithms, None)
        assert version in render("interface", fmt, doc)
