"""One fixture per `[[receiver]]` rule of the shipped roles.toml: a small tree that uses the
receiver where the rule applies yields requirements of the rule's role, and yields other ones
once the rule is taken out (so the fixture shows that rule, not a neighbour). The rules are
what the data flow falls back on (tracker.analysis.flow follows runners to the model they
hold, `[[model_holder]]`), so the rule is taken out with the holders. A rule without a
fixture, or a fixture without its rule, fails the meta-tests."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest
from sgl_trees import BASE, build

from tracker.analysis.interface import Interface, build_interface
from tracker.analysis.roles import ReceiverRule, load_rules

Need = tuple[str, str, str]  # (algorithm, role, member)


@dataclass(frozen=True)
class Fixture:
    files: dict[str, str]  # overrides of the sgl_trees base tree
    yields: frozenset[Need]
    never: frozenset[Need] = field(default_factory=frozenset)


def rule_id(rule: ReceiverRule) -> str:
    where = " ".join(rule.modules) + "".join(f" {c}" for c in rule.classes)
    return f"{rule.role} {rule.pattern} in {where}"


_WORKER_ANCHOR = "        super().__init__(server_args, is_draft_worker=True)\n"


def in_worker(line: str) -> dict[str, str]:
    """The base EAGLE worker with `line` run unconditionally in its `__init__`."""
    worker = BASE["speculative/eagle_worker.py"]
    assert _WORKER_ANCHOR in worker
    return {
        "speculative/eagle_worker.py": worker.replace(
            _WORKER_ANCHOR, _WORKER_ANCHOR + f"        {line}\n"
        )
    }


def worker_fixture(line: str, role: str, member: str) -> Fixture:
    return Fixture(in_worker(line), frozenset({("EAGLE", role, member), ("EAGLE3", role, member)}))


_RUNNER_ANCHOR = "        self.model = server_args.load()\n"


def in_model_runner(*lines: str) -> dict[str, str]:
    runner = BASE["model_executor/model_runner.py"]
    assert _RUNNER_ANCHOR in runner
    body = "".join(f"        {line}\n" for line in lines)
    return {"model_executor/model_runner.py": runner.replace(_RUNNER_ANCHOR, _RUNNER_ANCHOR + body)}


# Runner code runs for every algorithm: its sites count where conditions narrow them, and a
# `runner` rule's role is what `is_draft_worker` says.
GRAPH_RUNNERS = """
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm


    class CudaGraphRunner:
        def __init__(self, model_runner):
            self.model_runner = model_runner
            if model_runner.spec_algorithm.is_eagle3():
                self.model_runner.model.capture_for_graph()


    class DraftGraphRunner:
        def __init__(self, model_runner):
            self.model_runner = model_runner
            if model_runner.spec_algorithm.is_eagle3() and model_runner.is_draft_worker:
                self.model_runner.model.draft_graph_hook()
            if model_runner.spec_algorithm.is_eagle3() and not model_runner.is_draft_worker:
                self.model_runner.model.target_graph_hook()


    def prepare_graphs(model_runner):
        if model_runner.spec_algorithm.is_eagle3() and model_runner.is_draft_worker:
            model_runner.model.draft_prepare_hook()
        if model_runner.spec_algorithm.is_eagle3() and not model_runner.is_draft_worker:
            model_runner.model.target_prepare_hook()
"""

FIXTURES: dict[str, Fixture] = {
    "target self.target_worker.model_runner.model in sglang.srt.speculative.*": worker_fixture(
        "self.target_worker.model_runner.model.fixture_target()", "target", "fixture_target"
    ),
    "target target_worker.model_runner.model in sglang.srt.speculative.*": worker_fixture(
        "target_worker.model_runner.model.fixture_param_target()", "target", "fixture_param_target"
    ),
    "draft self.draft_model_runner.model in sglang.srt.speculative.*": worker_fixture(
        "self.draft_model_runner.model.fixture_draft()", "draft", "fixture_draft"
    ),
    "draft self.draft_runner.model in sglang.srt.speculative.*": worker_fixture(
        "self.draft_runner.model.fixture_draft_runner()", "draft", "fixture_draft_runner"
    ),
    "draft self.draft_worker.draft_runner.model in sglang.srt.speculative.*": worker_fixture(
        "self.draft_worker.draft_runner.model.fixture_v2_draft()", "draft", "fixture_v2_draft"
    ),
    "draft self.draft_worker.model_runner.model in sglang.srt.speculative.*": worker_fixture(
        "self.draft_worker.model_runner.model.fixture_draft_worker()",
        "draft",
        "fixture_draft_worker",
    ),
    "draft self.draft_runner_list[*].model in sglang.srt.speculative.*": worker_fixture(
        "self.draft_runner_list[0].model.fixture_listed_draft()", "draft", "fixture_listed_draft"
    ),
    "draft self.mtp_model_runner(*).model in sglang.srt.speculative.*": worker_fixture(
        "self.mtp_model_runner(step).model.fixture_mtp_draft()", "draft", "fixture_mtp_draft"
    ),
    "draft self.model_runner.model in sglang.srt.speculative.*": worker_fixture(
        "self.model_runner.model.fixture_own_runner()", "draft", "fixture_own_runner"
    ),
    "runner self.model in sglang.srt.model_executor.model_runner ModelRunner": Fixture(
        in_model_runner(
            "if self.spec_algorithm.is_eagle3() and self.is_draft_worker:",
            "    self.model.fixture_runner_draft()",
            "if self.spec_algorithm.is_eagle3() and not self.is_draft_worker:",
            "    self.model.fixture_runner_target()",
        ),
        frozenset(
            {
                ("EAGLE3", "draft", "fixture_runner_draft"),
                ("EAGLE3", "target", "fixture_runner_target"),
            }
        ),
        frozenset(
            {
                ("EAGLE3", "target", "fixture_runner_draft"),
                ("EAGLE3", "draft", "fixture_runner_target"),
            }
        ),
    ),
    "target self.model_runner.model in sglang.srt.model_executor.cuda_graph_runner"
    " CudaGraphRunner": Fixture(
        {"model_executor/cuda_graph_runner.py": GRAPH_RUNNERS},
        frozenset({("EAGLE3", "target", "capture_for_graph")}),
        # Only the target's runner has CUDA graphs: a bare EAGLE3 test asks no draft.
        frozenset({("EAGLE3", "draft", "capture_for_graph")}),
    ),
    "runner self.model_runner.model in sglang.srt.model_executor.*": Fixture(
        {"model_executor/cuda_graph_runner.py": GRAPH_RUNNERS},
        frozenset(
            {("EAGLE3", "draft", "draft_graph_hook"), ("EAGLE3", "target", "target_graph_hook")}
        ),
        frozenset(
            {("EAGLE3", "target", "draft_graph_hook"), ("EAGLE3", "draft", "target_graph_hook")}
        ),
    ),
    "runner model_runner.model in sglang.srt.model_executor.*": Fixture(
        {"model_executor/cuda_graph_runner.py": GRAPH_RUNNERS},
        frozenset(
            {("EAGLE3", "draft", "draft_prepare_hook"), ("EAGLE3", "target", "target_prepare_hook")}
        ),
        frozenset(
            {("EAGLE3", "target", "draft_prepare_hook"), ("EAGLE3", "draft", "target_prepare_hook")}
        ),
    ),
}


def needs(interface: Interface, members: set[str]) -> set[Need]:
    return {(r.algorithm, r.role, r.member) for r in interface.requirements if r.member in members}


def shipped_rule(name: str) -> ReceiverRule:
    (rule,) = [r for r in load_rules().receivers if rule_id(r) == name]
    return rule


def test_every_shipped_receiver_rule_has_a_fixture() -> None:
    missing = [rule_id(r) for r in load_rules().receivers if rule_id(r) not in FIXTURES]
    assert missing == [], "receiver rules without a fixture in FIXTURES"


def test_every_fixture_names_one_shipped_receiver_rule() -> None:
    names = [rule_id(r) for r in load_rules().receivers]
    assert len(names) == len(set(names)), "two receiver rules share a fixture name"
    assert sorted(set(FIXTURES) - set(names)) == []


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_a_receiver_rule_makes_its_fixture_a_requirement_of_the_rule_role(name: str) -> None:
    rule, fixture = shipped_rule(name), FIXTURES[name]
    roles = {"target", "draft"} if rule.role == "runner" else {rule.role}
    assert {role for _, role, _ in fixture.yields} == roles
    built = build(fixture.files)
    members = {member for _, _, member in fixture.yields | fixture.never}
    found = needs(built.interface, members)
    assert fixture.yields <= found
    assert not fixture.never & found
    # Without the rule (and the data flow's model holders) the same tree no longer gives
    # those answers.
    rules = load_rules()
    others = tuple(r for r in rules.receivers if r is not rule)
    without = build_interface("v1", built.index, replace(rules, receivers=others, holders=()))
    assert needs(without, members) != found
