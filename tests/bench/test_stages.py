"""bench/stages.py: the per-file work of each stage is the tool's own, and the entries of a
cold run's facts cache say which files it read in which pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.stages import STAGES, Entry, _stage_function, cache_entries, stage_seconds
from tracker.extract.facts import ModuleFacts
from tracker.extract.parse import extract_facts
from tracker.extract.store import _decode

SOURCE = b"""\
import torch.nn as nn


class LlamaForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.model = LlamaModel(config)

    def get_embed_and_head(self):
        return self.model.embed_tokens.weight, self.lm_head.weight

    def forward(self, input_ids):
        if self.capture_aux_hidden_states:
            hidden_states, aux_hidden_states = self.model(input_ids)
        return hidden_states
"""


def test_cache_entries_name_the_pass_of_each_file(tmp_path: Path) -> None:
    facts = tmp_path / "facts" / "0123456789abcdef-f4"
    for name in ("ab/ab12.pkl", "ab/ab12.defs.pkl", "cd/cd34.defs.pkl"):
        (facts / name).parent.mkdir(parents=True, exist_ok=True)
        (facts / name).write_bytes(b"")
    assert sorted(cache_entries(tmp_path), key=lambda e: (e.content_id, e.full)) == [
        Entry("ab12", False),
        Entry("ab12", True),
        Entry("cd34", False),
    ]


@pytest.mark.parametrize("full", [True, False])
def test_each_stage_does_the_tools_work(full: bool) -> None:
    parse, walk, queries, extract, encode = (_stage_function(stage) for stage in STAGES)
    tree = parse(SOURCE, full)
    assert tree.root_node.type == "module" and not tree.root_node.has_error
    assert [caps["class"][0].text for _, caps in walk(SOURCE, full)] == [
        SOURCE[SOURCE.index(b"class") : SOURCE.index(b"return hidden_states") + 20]
    ]
    # The pass's own queries: conditions (branches.scm) in the full pass only, the
    # `self.x = ...` of definition_assignments.scm and the tuple unpacking of the forward
    # pass (capture_sites.scm) in the definitions pass only.
    captured = {name for _, caps in queries(SOURCE, full) for name in caps}
    assert ("if.statement" in captured) is full
    assert ("assign.owner" in captured) is not full
    assert ("unpack.site" in captured) is not full
    expected = extract_facts("bench.py", "0", SOURCE, full=full)
    assert extract(SOURCE, full) == expected
    encoded = encode(SOURCE, full)
    assert isinstance(encoded, bytes)
    assert _decode(encoded) == expected
    assert isinstance(expected, ModuleFacts) and expected.definitions_only is not full


def test_stage_seconds_runs_every_file_on_forked_processes() -> None:
    items = [(SOURCE, True), (SOURCE, False), (b"x = 1\n", True)]
    for stage in STAGES:
        assert stage_seconds(stage, items, jobs=2) > 0
