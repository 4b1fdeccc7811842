"""Fixture for queries/attribute_reads.scm: `receiver.member` except on bare `self`/`cls`,
and constant-key subscripts `receiver["key"]`.

The query also captures the function of a method call (`x.argmax` in `x.argmax(-1)`) and
assignment targets: tracker.extract.parse drops those, see tests/unit/test_parse.py.
"""

from __future__ import annotations

SOURCE = """\
def forward(self, batch, logits_output, eagle_config):
    hidden = logits_output.hidden_states
    steps = self.speculative_num_steps
    algo = self.server_args.speculative_algorithm
    topk = eagle_config["topk"]
    vocab = cls.vocab_size
    ids = logits_output.next_token_logits.argmax(-1)
    return batch.spec_info.verified_id
"""

EXPECTED = [
    ("read.key", "topk", 5),
    ("read.key_site", 'eagle_config["topk"]', 5),
    ("read.member", "argmax", 7),
    ("read.member", "hidden_states", 2),
    ("read.member", "next_token_logits", 7),
    ("read.member", "spec_info", 8),
    ("read.member", "speculative_algorithm", 4),
    ("read.member", "verified_id", 8),
    ("read.quote", '"', 5),
    ("read.receiver", "batch", 8),
    ("read.receiver", "batch.spec_info", 8),
    ("read.receiver", "eagle_config", 5),
    ("read.receiver", "logits_output", 2),
    ("read.receiver", "logits_output", 7),
    ("read.receiver", "logits_output.next_token_logits", 7),
    ("read.receiver", "self.server_args", 4),
    ("read.site", "batch.spec_info", 8),
    ("read.site", "batch.spec_info.verified_id", 8),
    ("read.site", "logits_output.hidden_states", 2),
    ("read.site", "logits_output.next_token_logits", 7),
    ("read.site", "logits_output.next_token_logits.argmax", 7),
    ("read.site", "self.server_args.speculative_algorithm", 4),
]


def test_attribute_reads_capture_chains_and_constant_keys(captures) -> None:
    assert captures("attribute_reads", SOURCE) == EXPECTED


def test_only_the_bare_names_self_and_cls_are_skipped(captures) -> None:
    source = """\
    self.speculative_num_steps
    cls.vocab_size
    self_attn.q_proj
    """
    assert captures("attribute_reads", source) == [
        ("read.member", "q_proj", 3),
        ("read.receiver", "self_attn", 3),
        ("read.site", "self_attn.q_proj", 3),
    ]


def test_subscripts_without_a_constant_string_key_are_not_reads(captures) -> None:
    source = """\
    layers[0]
    eagle_config[key]
    eagle_config[f"{key}"]
    """
    assert captures("attribute_reads", source) == []


def test_an_f_string_key_is_not_a_constant_key(captures) -> None:
    assert captures("attribute_reads", 'layers[f"layer_{i}"]\n') == []


def test_a_tuple_index_of_strings_is_not_a_constant_key_in_the_facts() -> None:
    # The query still matches the first item (tree-sitter anchors cannot say "the only
    # subscript"); tracker.extract.parse drops subscripts with more than one index.
    from tracker.extract.parse import extract_facts

    facts = extract_facts("m.py", "0", b'frame["input_ids", "positions"]\n')
    assert [r for r in facts.reads if r.kind == "key"] == []


def test_the_fixture_exercises_every_capture_of_the_query(capture_names) -> None:
    assert {name for name, _, _ in EXPECTED} == capture_names("attribute_reads")
