"""Fixture for queries/call_sites.scm: method calls with their receiver's full text, and
plain calls; callees that are neither a name nor an attribute are not call sites."""

from __future__ import annotations

SOURCE = """\
class EAGLEWorker(TpModelWorker):
    def __init__(self, server_args):
        super().__init__(server_args, is_draft_worker=True)
        embed, head = self.target_worker.model_runner.model.get_embed_and_head()
        if hasattr(self.draft_model_runner.model, "load_lm_head_from_target"):
            self.draft_model_runner.model.set_embed_and_head(embed, head)
        self.draft_runner_list[0].model.set_eagle3_layers_to_capture(*layers)
"""

EXPECTED = [
    ("call.arguments", "()", 3),
    ("call.arguments", "()", 4),
    ("call.arguments", "(*layers)", 7),
    ("call.arguments", "(embed, head)", 6),
    ("call.arguments", '(self.draft_model_runner.model, "load_lm_head_from_target")', 5),
    ("call.arguments", "(server_args, is_draft_worker=True)", 3),
    ("call.member", "__init__", 3),
    ("call.member", "get_embed_and_head", 4),
    ("call.member", "hasattr", 5),
    ("call.member", "set_eagle3_layers_to_capture", 7),
    ("call.member", "set_embed_and_head", 6),
    ("call.member", "super", 3),
    ("call.receiver", "self.draft_model_runner.model", 6),
    ("call.receiver", "self.draft_runner_list[0].model", 7),
    ("call.receiver", "self.target_worker.model_runner.model", 4),
    ("call.receiver", "super()", 3),
    ("call.site", 'hasattr(self.draft_model_runner.model, "load_lm_head_from_target")', 5),
    ("call.site", "self.draft_model_runner.model.set_embed_and_head(embed, head)", 6),
    ("call.site", "self.draft_runner_list[0].model.set_eagle3_layers_to_capture(*layers)", 7),
    ("call.site", "self.target_worker.model_runner.model.get_embed_and_head()", 4),
    ("call.site", "super()", 3),
    ("call.site", "super().__init__(server_args, is_draft_worker=True)", 3),
]


def test_call_sites_capture_receivers_members_and_arguments(captures) -> None:
    assert captures("call_sites", SOURCE) == EXPECTED


def test_the_receiver_of_a_dotted_call_is_everything_before_the_last_dot(captures) -> None:
    source = """\
    foo()
    a.b.c()
    any(p.requires_grad for p in params)
    """
    assert captures("call_sites", source) == [
        ("call.arguments", "()", 1),
        ("call.arguments", "()", 2),
        ("call.arguments", "(p.requires_grad for p in params)", 3),
        ("call.member", "any", 3),
        ("call.member", "c", 2),
        ("call.member", "foo", 1),
        ("call.receiver", "a.b", 2),
        ("call.site", "a.b.c()", 2),
        ("call.site", "any(p.requires_grad for p in params)", 3),
        ("call.site", "foo()", 1),
    ]


def test_references_and_calls_of_computed_callees_are_not_call_sites(captures) -> None:
    source = """\
    callback = self.model.forward
    handlers[0](batch)
    make_worker()(batch)
    """
    # Only the inner `make_worker()` names what it calls.
    assert captures("call_sites", source) == [
        ("call.arguments", "()", 3),
        ("call.member", "make_worker", 3),
        ("call.site", "make_worker()", 3),
    ]


def test_the_fixture_exercises_every_capture_of_the_query(capture_names) -> None:
    assert {name for name, _, _ in EXPECTED} == capture_names("call_sites")
