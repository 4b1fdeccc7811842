"""Fixture for queries/branches.scm: if statements, `and`/`or`, conditional expressions,
`try:` with its handlers, the test of `assert`, and error messages (what `raise` raises,
an `assert`'s message; not a logging call's arguments, which always run)."""

from __future__ import annotations

SOURCE = """\
def init(self, server_args):
    if server_args.speculative_algorithm == "EAGLE3":
        self.capture = True
    elif self.spec_algorithm.is_standalone():
        self.capture = False
    else:
        self.capture = None
    use_fa3 = is_fa3_available() and not server_args.disable_fa3
    backend = "fa3" if use_fa3 else "triton"
    try:
        self.hot_token_id = self.draft_model_runner.model.get_hot_token_id()
    except AttributeError:
        self.hot_token_id = None
    assert hasattr(self.target_worker.model_runner.model, "get_embed_and_head"), "no head"
    if not self.capture:
        raise ValueError(f"{self.model.__class__.__name__} captures nothing")
    logger.warning("no aux hidden states in %s", self.model.config.name)
"""

# The elif is not an if statement of its own: tracker.extract.parse reads it from the `if`.
EXPECTED = [
    ("assert.test", 'hasattr(self.target_worker.model_runner.model, "get_embed_and_head")', 14),
    ("boolean.expression", "is_fa3_available() and not server_args.disable_fa3", 8),
    ("boolean.left", "is_fa3_available()", 8),
    ("boolean.right", "not server_args.disable_fa3", 8),
    ("if.condition", "not self.capture", 15),
    ("if.condition", 'server_args.speculative_algorithm == "EAGLE3"', 2),
    ("if.consequence", 'raise ValueError(f"{self.model.__class__.__name__} captures nothing")', 16),
    ("if.consequence", "self.capture = True", 3),
    (
        "if.statement",
        'if not self.capture:…raise ValueError(f"{self.model.__class__.__name__} '
        'captures nothing")',
        15,
    ),
    ("if.statement", 'if server_args.speculative_algorithm == "EAGLE3":…self.capture = None', 2),
    ("message.asserted", '"no head"', 14),
    ("message.raised", 'raise ValueError(f"{self.model.__class__.__name__} captures nothing")', 16),
    ("ternary.expression", '"fa3" if use_fa3 else "triton"', 9),
    ("try.body", "self.hot_token_id = self.draft_model_runner.model.get_hot_token_id()", 11),
    ("try.handler", "except AttributeError:…self.hot_token_id = None", 12),
]


def test_branches_capture_everything_that_runs_only_sometimes(captures) -> None:
    assert captures("branches", SOURCE) == EXPECTED


def test_each_handler_of_a_try_is_its_own_match(captures) -> None:
    source = """\
    try:
        head = model.lm_head
    except KeyError:
        pass
    except AttributeError:
        head = None
    """
    assert captures("branches", source) == [
        ("try.body", "head = model.lm_head", 2),
        ("try.body", "head = model.lm_head", 2),
        ("try.handler", "except AttributeError:…head = None", 5),
        ("try.handler", "except KeyError:…pass", 3),
    ]


def test_loops_with_blocks_and_try_finally_are_not_branches(captures) -> None:
    source = """\
    for layer in self.layers:
        with torch.no_grad():
            while not layer.ready:
                try:
                    layer.load()
                finally:
                    done = not layer.ready
    """
    assert captures("branches", source) == []


def test_the_fixture_exercises_every_capture_of_the_query(capture_names) -> None:
    assert {name for name, _, _ in EXPECTED} == capture_names("branches")


def test_the_arguments_of_a_logging_call_are_no_message(captures) -> None:
    # `type(self.draft_model.markov_head)` in a `logger.info` on rank 0 crashes a draft
    # without `markov_head` at start-up (DSPARK at v0.5.16): what it reads is required.
    source = """\
    logger.info("head=%s", type(self.draft_model.markov_head).__name__)
    warnings.warn(f"{self.model.name} is slow")
    """
    assert captures("branches", source) == []
