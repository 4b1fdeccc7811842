"""Each algorithm's requirements as Python runs its workers (tracker.analysis.walk and
tracker.analysis.flow), one mechanism per test, on a small tree shaped like SGLang's spec-v2
workers: a factory that picks a worker per algorithm (one of them opt-in), a base whose
methods call through `self.draft_worker`, overrides, a worker that rewrites the algorithm
before it builds an inner one, helpers in other modules that return the draft model or take
it as a parameter, and hooks the runner requires one of."""

from __future__ import annotations

import pytest
from sgl_trees import Built, build

from tracker.analysis.interface import Requirement
from tracker.common.errors import TrackerError
from tracker.compare.snapshot import Builder, Snapshot, from_json, pick_algorithms, to_json
from tracker.sources.base import SourceIdentity

SPEC_INFO = """
    from enum import IntEnum, auto


    class SpeculativeAlgorithm(IntEnum):
        NONE = auto()
        EAGLE = auto()
        EAGLE3 = auto()
        STANDALONE = auto()
        NGRAM = auto()
        FORKED = auto()
        CASCADE = auto()

        def is_none(self):
            return self == SpeculativeAlgorithm.NONE

        def is_eagle(self):
            return self == SpeculativeAlgorithm.EAGLE or self == SpeculativeAlgorithm.EAGLE3

        def is_eagle3(self):
            return self == SpeculativeAlgorithm.EAGLE3

        def is_standalone(self):
            return self == SpeculativeAlgorithm.STANDALONE

        def is_ngram(self):
            return self == SpeculativeAlgorithm.NGRAM

        def is_forked(self):
            return self == SpeculativeAlgorithm.FORKED

        def is_cascade(self):
            return self == SpeculativeAlgorithm.CASCADE

        @classmethod
        def register(cls, name, factory):
            PLUGINS[name] = factory

        def create_worker(self, server_args):
            if self.is_eagle() and server_args.enable_multi_layer:
                from sglang.srt.speculative.multi_layer_worker import MultiLayerWorker

                return MultiLayerWorker
            if self.is_eagle():
                from sglang.srt.speculative.eagle_worker_v2 import EAGLEWorkerV2

                return EAGLEWorkerV2
            if self.is_standalone():
                from sglang.srt.speculative.standalone_worker_v2 import StandaloneWorkerV2

                return StandaloneWorkerV2
            if self.is_ngram():
                from sglang.srt.speculative.ngram_worker import NGRAMWorker

                return NGRAMWorker
            if self.is_forked():
                from sglang.srt.speculative.forked_worker import ForkedWorker

                return ForkedWorker
            if self.is_cascade():
                from sglang.srt.speculative.cascade_worker import CascadeWorker

                return CascadeWorker
            return None
    """

SERVER_ARGS = """
    class ServerArgs:
        speculative_algorithm: str = None
        enable_multi_layer: bool = False

        def __post_init__(self):
            if self.speculative_algorithm == "NEXTN":
                self.speculative_algorithm = "EAGLE"
    """

BASE_SPEC = """
    class BaseSpecWorker:
        @property
        def target_worker(self):
            return self._target_worker

        @property
        def draft_worker(self):
            return self._draft_worker

        def alloc_memory_pool(self):
            if self.draft_worker is not None:
                self.draft_worker.alloc_memory_pool()
    """

EAGLE_V2 = """
    from sglang.srt.managers.tp_worker import TpModelWorker
    from sglang.srt.speculative.base_spec_worker import BaseSpecWorker
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm


    class EagleDraftWorker:
        def __init__(self, server_args, target_worker: TpModelWorker):
            self.target_worker = target_worker
            self.speculative_algorithm = SpeculativeAlgorithm.from_string(
                server_args.speculative_algorithm
            )
            self.is_p_eagle = self.speculative_algorithm.is_eagle3()
            self.draft_worker = TpModelWorker(server_args, is_draft_worker=True)
            self.draft_runner = self.draft_worker.model_runner

        def alloc_memory_pool(self):
            self.init_lm_head()

        def init_lm_head(self):
            embed, head = self.target_worker.model_runner.model.get_embed_and_head()
            if self.is_p_eagle:
                self.draft_runner.model.set_embed(embed)
            else:
                self.draft_runner.model.set_embed_and_head(embed, head)


    class EAGLEWorkerV2(BaseSpecWorker):
        def __init__(self, server_args, target_worker: TpModelWorker):
            self._target_worker = target_worker
            self._draft_worker = EagleDraftWorker(server_args, target_worker)
            self.speculative_algorithm = SpeculativeAlgorithm.from_string(
                server_args.speculative_algorithm
            )
            self.is_parallel = self.speculative_algorithm.is_eagle3()

        def forward_batch_generation(self, batch):
            if self.is_parallel:
                self.draft_forward_parallel(batch)

        def draft_forward_parallel(self, batch):
            self._draft_worker.draft_runner.model.prepare_parallel_inputs(batch)
    """

STANDALONE_V2 = """
    from sglang.srt.managers.tp_worker import TpModelWorker
    from sglang.srt.speculative.eagle_worker_v2 import EAGLEWorkerV2, EagleDraftWorker


    class StandaloneDraftWorker(EagleDraftWorker):
        def init_lm_head(self):
            pass


    class StandaloneWorkerV2(EAGLEWorkerV2):
        def __init__(self, server_args, target_worker: TpModelWorker):
            self._target_worker = target_worker
            self._draft_worker = StandaloneDraftWorker(server_args, target_worker)
    """

NGRAM = """
    from sglang.srt.managers.tp_worker import TpModelWorker
    from sglang.srt.speculative.base_spec_worker import BaseSpecWorker


    class NGRAMWorker(BaseSpecWorker):
        def __init__(self, server_args, target_worker: TpModelWorker):
            self._target_worker = target_worker
            self.model_runner = target_worker.model_runner

        @property
        def draft_worker(self):
            return None

        def forward_batch_generation(self, batch):
            self.model_runner.model.ngram_target_hook()
            ids = self.model_runner.model.ngram_embed(batch) if False else batch.ids
            if False:
                self.model_runner.model.ngram_debug_dump(ids)
            self._bind()

        def _bind(self):
            model = self.model_runner.model
            if not hasattr(model, "ngram_build") or not hasattr(model, "ngram_bind"):
                return
            model.ngram_bind(model.ngram_build())
    """

MULTI_LAYER = """
    from sglang.srt.managers.tp_worker import TpModelWorker
    from sglang.srt.speculative.base_spec_worker import BaseSpecWorker


    class MultiLayerDraftWorker:
        def __init__(self, server_args, target_worker: TpModelWorker):
            self.target_worker = target_worker
            self.draft_worker = TpModelWorker(server_args, is_draft_worker=True)

        def alloc_memory_pool(self):
            embed, head = self.target_worker.model_runner.model.get_embed_and_head()
            self.draft_worker.model_runner.model.set_layer_head(head)


    class MultiLayerWorker(BaseSpecWorker):
        def __init__(self, server_args, target_worker: TpModelWorker):
            self._target_worker = target_worker
            self._draft_worker = MultiLayerDraftWorker(server_args, target_worker)
    """

HELPERS = """
    from sglang.srt.managers.tp_worker import TpModelWorker


    class DraftBundle(Struct):
        draft_model: object


    def build_draft(server_args):
        worker = TpModelWorker(server_args, is_draft_worker=True)
        runner = worker.model_runner
        return DraftBundle(draft_model=runner.model)


    def project(model, hidden):
        return model.project_hidden(hidden)


    def unwrap(layer):
        return getattr(layer, "base_layer", layer)
    """

FORKED = """
    from typing import Protocol, runtime_checkable

    from sglang.srt.managers.tp_worker import TpModelWorker
    from sglang.srt.speculative.base_spec_worker import BaseSpecWorker
    from sglang.srt.speculative.eagle_worker_v2 import EAGLEWorkerV2
    from sglang.srt.speculative.draft_helpers import build_draft, project, unwrap


    @runtime_checkable
    class _SupportsProjection(Protocol):
        def forked_project(self, hidden): ...


    def _configure_projection(*, target_model, enabled):
        if not enabled:
            return False
        if not isinstance(target_model, _SupportsProjection):
            return False
        return target_model.forked_project is not None


    class ForkedWorker(BaseSpecWorker):
        def __init__(self, server_args, target_worker: TpModelWorker):
            self._target_worker = target_worker
            self._draft_worker = None
            self.projecting = False
            self.projecting = _configure_projection(
                target_model=self.target_worker.model_runner.model,
                enabled=server_args.project,
            )
            bundle = build_draft(server_args)
            self.draft_model = bundle.draft_model
            server_args.speculative_algorithm = "EAGLE3"
            self.inner = EAGLEWorkerV2(server_args, target_worker)

        def forward_batch_generation(self, batch):
            project(self.draft_model, batch.hidden)
            self.inner.alloc_memory_pool()
            hook = getattr(self.target_worker.model_runner.model, "forked_hook", None)
            if hook is None:
                raise RuntimeError("the target has no forked_hook")
            hook(batch)
            if self.projecting:
                self.target_worker.model_runner.model.forked_project(batch.hidden)
            head = unwrap(
                getattr(self.target_worker.model_runner.model, "forked_head", None)
            )
            if head is None:
                raise RuntimeError("the target has no forked_head")
    """

CASCADE = """
    from sglang.srt.managers.tp_worker import TpModelWorker
    from sglang.srt.speculative.base_spec_worker import BaseSpecWorker
    from sglang.srt.speculative.eagle_worker_v2 import EAGLEWorkerV2
    from sglang.srt.speculative.standalone_worker_v2 import StandaloneWorkerV2


    def _variant(server_args):
        if server_args.cascade_head:
            return "EAGLE3"
        return "EAGLE"


    class CascadeWorker(BaseSpecWorker):
        def __init__(self, server_args, target_worker: TpModelWorker):
            self._target_worker = target_worker
            variant = _variant(server_args)
            server_args.speculative_algorithm = variant
            self.inner = EAGLEWorkerV2(server_args, target_worker)
            server_args.speculative_algorithm = server_args.pick_variant()
            self.other = StandaloneWorkerV2(server_args, target_worker)

        def forward_batch_generation(self, batch):
            self.inner.alloc_memory_pool()
            self.other.alloc_memory_pool()
    """

RUNNER = """
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm


    class ModelRunner:
        def __init__(self, server_args, is_draft_worker=False):
            self.is_draft_worker = is_draft_worker
            self.spec_algorithm = SpeculativeAlgorithm.from_string(server_args.algo)
            self.model = server_args.load()
            if self.spec_algorithm.is_forked() and not self.is_draft_worker:
                if hasattr(self.model, "capture_a"):
                    self.model.capture_a([1])
                elif hasattr(self.model, "capture_b"):
                    self.model.capture_b([1])
                else:
                    raise ValueError("the target provides neither capture hook")
            # CASCADE takes no stand-in: capture_a or nothing.
            if self.spec_algorithm.is_cascade() and not self.is_draft_worker:
                self.model.capture_a([2])

        def forward(self, batch):
            return self.model.forward(batch)
    """

CAPTURE_MODELS = """
    from torch import nn


    class CaptureAForCausalLM(nn.Module):
        def capture_a(self, layers):
            self.layers = layers


    class CaptureBForCausalLM(nn.Module):
        def capture_b(self, layers):
            self.layers = layers


    class NoCaptureForCausalLM(nn.Module):
        pass


    EntryClass = [CaptureAForCausalLM, CaptureBForCausalLM, NoCaptureForCausalLM]
    """

TREE: dict[str, str | None] = {
    "speculative/spec_info.py": SPEC_INFO,
    "speculative/eagle_worker.py": None,
    "server_args.py": SERVER_ARGS,
    "speculative/base_spec_worker.py": BASE_SPEC,
    "speculative/eagle_worker_v2.py": EAGLE_V2,
    "speculative/standalone_worker_v2.py": STANDALONE_V2,
    "speculative/ngram_worker.py": NGRAM,
    "speculative/multi_layer_worker.py": MULTI_LAYER,
    "speculative/forked_worker.py": FORKED,
    "speculative/cascade_worker.py": CASCADE,
    "speculative/draft_helpers.py": HELPERS,
    "model_executor/model_runner.py": RUNNER,
    "models/capture.py": CAPTURE_MODELS,
}


@pytest.fixture(scope="module")
def built() -> Built:
    return build(TREE)


def needs(built: Built, algorithm: str, role: str) -> dict[str, Requirement]:
    return {r.member: r for r in built.interface.for_algorithm(algorithm, role)}


def test_the_factory_gives_each_algorithm_its_workers(built: Built) -> None:
    assert built.interface.workers == {
        "CASCADE": ("CascadeWorker",),
        "EAGLE": ("EAGLEWorkerV2", "MultiLayerWorker"),
        "EAGLE3": ("EAGLEWorkerV2", "MultiLayerWorker"),
        "FORKED": ("ForkedWorker",),
        "NGRAM": ("NGRAMWorker",),
        "STANDALONE": ("StandaloneWorkerV2",),
    }


def test_an_override_replaces_the_base_body_it_overrides(built: Built) -> None:
    # StandaloneDraftWorker.init_lm_head is a no-op: the base's calls do not run.
    assert needs(built, "STANDALONE", "target") == {}
    assert needs(built, "STANDALONE", "draft") == {}
    # The base body runs for the class that does not override it.
    assert needs(built, "EAGLE", "target")["get_embed_and_head"].status == "required"


def test_a_call_on_an_attribute_runs_on_what_this_worker_puts_there(built: Built) -> None:
    # BaseSpecWorker.alloc_memory_pool calls self.draft_worker.alloc_memory_pool(): NGRAM's
    # draft_worker property returns None, so no draft worker's method runs for it, though
    # other subclasses of the base put one there.
    assert "get_embed_and_head" not in needs(built, "NGRAM", "target")
    assert needs(built, "NGRAM", "draft") == {}
    embed = needs(built, "EAGLE", "target")["get_embed_and_head"]
    assert embed.sites[0].call_path[-2:] == (
        "sglang.srt.speculative.eagle_worker_v2:EagleDraftWorker.alloc_memory_pool",
        "sglang.srt.speculative.eagle_worker_v2:EagleDraftWorker.init_lm_head",
    )


def test_code_switched_off_by_a_literal_false_never_runs(built: Built) -> None:
    # `x if False else y` and `if False:` in NGRAMWorker.forward_batch_generation.
    assert not {"ngram_embed", "ngram_debug_dump"} & set(needs(built, "NGRAM", "target"))


def test_uses_below_an_early_return_on_either_probe_failing_are_optional(built: Built) -> None:
    # `if not hasattr(model, "a") or not hasattr(model, "b"): return`, then both are used.
    target = needs(built, "NGRAM", "target")
    for member in ("ngram_build", "ngram_bind"):
        assert (target[member].status, target[member].sites[0].guard) == ("optional", "hasattr")


def test_a_runner_aliased_to_the_targets_is_the_target(built: Built) -> None:
    # `self.model_runner = target_worker.model_runner`: in the speculative package a worker's
    # own runner reads as the draft's, but the data flow knows better.
    assert set(needs(built, "NGRAM", "target")) == {
        "ngram_target_hook",
        "ngram_build",
        "ngram_bind",
    }


def test_the_draft_model_flows_through_a_helper_an_attribute_and_a_parameter(
    built: Built,
) -> None:
    # build_draft() returns a struct holding the draft runner's model; the worker keeps it
    # as self.draft_model and passes it to project(model, ...) in another module.
    found = needs(built, "FORKED", "draft")["project_hidden"]
    assert found.status == "required" and found.kind == "call"
    assert found.sites[0].path.endswith("speculative/draft_helpers.py")
    assert "project_hidden" not in needs(built, "FORKED", "target")


def test_a_worker_that_rewrites_the_algorithm_runs_its_inner_worker_as_that_one(
    built: Built,
) -> None:
    # ForkedWorker sets speculative_algorithm = "EAGLE3" before it builds an EAGLEWorkerV2:
    # the inner worker's EAGLE3 branch runs, not its EAGLE one.
    draft = needs(built, "FORKED", "draft")
    assert "set_embed" in draft
    assert "set_embed_and_head" not in draft


def test_a_rewrite_to_a_helpers_result_runs_the_inner_worker_as_each_name_it_returns(
    built: Built,
) -> None:
    # `server_args.speculative_algorithm = variant`, where variant = _variant(...) returns
    # "EAGLE3" or "EAGLE": the inner EAGLEWorkerV2 runs both branches of init_lm_head.
    draft = needs(built, "CASCADE", "draft")
    assert set(draft) == {"set_embed", "set_embed_and_head"}
    assert needs(built, "CASCADE", "target")["get_embed_and_head"].status == "required"


def test_a_rewrite_the_analysis_cannot_follow_is_warned_of_where_it_is(built: Built) -> None:
    # `= server_args.pick_variant()`: what it builds next runs as CASCADE, and the warning
    # names the line, so a reader knows the answer rests on that.
    line = CASCADE.splitlines().index(
        "            server_args.speculative_algorithm = server_args.pick_variant()"
    )
    [warning] = [w for w in built.interface.warnings if "cannot follow" in w]
    assert f"speculative/cascade_worker.py:{line}" in warning
    assert "CascadeWorker.__init__" in warning
    # `from_string(server_args.algo)` reads the algorithm as configured: no rewrite.
    assert not [w for w in build().interface.warnings if "cannot follow" in w]


def test_a_public_method_the_worker_only_calls_on_itself_runs_under_its_callers_guard(
    built: Built,
) -> None:
    # EAGLEWorkerV2.draft_forward_parallel is public, but only its own forward calls it,
    # under `if self.is_parallel` (EAGLE3): it is not a method the scheduler calls.
    assert needs(built, "EAGLE3", "draft")["prepare_parallel_inputs"].status == "required"
    assert "prepare_parallel_inputs" not in needs(built, "EAGLE", "draft")
    assert "prepare_parallel_inputs" not in needs(built, "STANDALONE", "draft")


def test_a_plugin_registration_api_is_warned_of_as_algorithms_not_in_the_tree(
    built: Built,
) -> None:
    line = SPEC_INFO.splitlines().index("        def register(cls, name, factory):")
    [warning] = [w for w in built.interface.warnings if "register" in w]
    assert f"SpeculativeAlgorithm.register (speculative/spec_info.py:{line})" in warning


def test_a_name_bound_to_a_predicate_is_decided_like_the_predicate(built: Built) -> None:
    # `self.is_p_eagle = self.speculative_algorithm.is_eagle3()`, then `if self.is_p_eagle:`.
    assert set(needs(built, "EAGLE3", "draft")) >= {"set_embed"}
    assert "set_embed_and_head" not in needs(built, "EAGLE3", "draft")
    assert needs(built, "EAGLE", "draft")["set_embed_and_head"].status == "required"
    assert "set_embed" not in needs(built, "EAGLE", "draft")


def test_a_stand_in_one_algorithm_accepts_reads_back_from_a_snapshot_for_it_alone(
    built: Built,
) -> None:
    # capture_b stands in for capture_a under FORKED, not under CASCADE: the class with
    # capture_b only lacks capture_a for the one and not for the other.
    checks = {(c.model, c.algorithm): c for c in built.compat.checks if c.role == "target"}
    assert "capture_a" not in checks[("CaptureBForCausalLM", "FORKED")].missing
    assert "capture_a" in checks[("CaptureBForCausalLM", "CASCADE")].missing
    identity = SourceIdentity("git", "/repo", "v1", "r")
    snap = Snapshot("v1", identity, "d", Builder("t", "q", "r"), built.interface, built.compat)
    assert from_json(to_json(snap)).compat.checks == built.compat.checks


def test_a_hasattr_elif_else_raise_chain_requires_one_of_its_members(built: Built) -> None:
    target = needs(built, "FORKED", "target")
    a, b = target["capture_a"], target["capture_b"]
    assert (a.status, a.alternatives, a.raises) == ("required", ("capture_b",), "ValueError")
    assert (b.status, b.alternatives, b.raises) == ("required", ("capture_a",), "ValueError")
    checks = {c.model: c for c in built.compat.checks if c.algorithm == "FORKED"}
    group = {"capture_a", "capture_b"}
    assert not group & set(checks["CaptureAForCausalLM"].missing)
    assert not group & set(checks["CaptureBForCausalLM"].missing)
    assert group <= set(checks["NoCaptureForCausalLM"].missing)
    assert checks["NoCaptureForCausalLM"].status == "broken"


def test_a_getattr_default_followed_by_a_raise_is_required(built: Built) -> None:
    hook = needs(built, "FORKED", "target")["forked_hook"]
    assert hook.status == "required"
    assert [s.guard for s in hook.sites] == ["getattr-raises"]


def test_a_flag_set_only_past_a_protocol_probe_of_the_member_guards_it_as_the_probe(
    built: Built,
) -> None:
    # self.projecting is False, or what _configure_projection returns: False unless
    # isinstance(target_model, _SupportsProjection), a Protocol declaring forked_project.
    project = needs(built, "FORKED", "target")["forked_project"]
    assert project.status == "optional"
    assert {(s.function, s.guard) for s in project.sites} == {
        ("ForkedWorker.forward_batch_generation", "hasattr"),
        ("_configure_projection", "hasattr"),  # read past the isinstance probe itself
    }


def test_a_getattr_inside_a_call_that_hands_its_none_on_is_required_too(built: Built) -> None:
    # head = unwrap(getattr(model, "forked_head", None)), the getattr on the next line
    # (a formatter's split), then `if head is None: raise`.
    head = needs(built, "FORKED", "target")["forked_head"]
    assert head.status == "required"
    assert [s.guard for s in head.sites] == ["getattr-raises"]


def test_what_only_an_opt_in_worker_needs_is_conditional_and_puts_a_class_at_risk(
    built: Built,
) -> None:
    # MultiLayerWorker is picked only under enable_multi_layer, a server option that is off
    # by default: its draft's set_layer_head is needed only then.
    head = needs(built, "EAGLE", "draft")["set_layer_head"]
    assert head.status == "conditional"
    assert "enable_multi_layer" in head.sites[0].condition
    # Both workers call get_embed_and_head: it stays required.
    assert needs(built, "EAGLE", "target")["get_embed_and_head"].status == "required"
    [check] = [
        c
        for c in built.compat.checks
        if c.model == "LlamaForCausalLMEagle" and c.algorithm == "EAGLE" and c.role == "draft"
    ]
    assert check.status == "ok"
    assert [r.member for r in check.at_risk] == ["set_layer_head"]
    assert "enable_multi_layer" in check.at_risk[0].condition


def test_a_name_the_code_rewrites_is_accepted_and_says_what_it_runs_as(built: Built) -> None:
    runs_as, site = built.interface.aliases["NEXTN"]
    assert runs_as == "EAGLE" and site.startswith("server_args.py:")
    notes: list[str] = []
    chosen = pick_algorithms(
        built.interface.algorithms, ("nextn",), aliases=built.interface.aliases, note=notes.append
    )
    assert chosen == ("EAGLE",)
    assert notes == [f"NEXTN runs as EAGLE ({site})"]
    with pytest.raises(TrackerError, match="NEXTN"):  # the error lists the alias too
        pick_algorithms(built.interface.algorithms, ("EAGEL",), aliases=built.interface.aliases)


def test_no_algorithm_without_a_draft_model_checks_draft_classes(built: Built) -> None:
    drafts = {(c.model, c.algorithm) for c in built.compat.checks if c.role == "draft"}
    assert not {a for _, a in drafts} & {"NGRAM", "STANDALONE"}


def test_a_class_thousands_of_levels_below_another_is_found_without_recursion() -> None:
    from tracker.analysis.index import VersionIndex
    from tracker.extract.parse import extract_facts

    # Valid Python (the interpreter accepts far deeper chains): a hostile file must not
    # stop the analysis with a RecursionError.
    chain = "".join(f"class B{i}(B{i - 1}):\n    pass\n" for i in range(1, 5000))
    path = "python/sglang/srt/speculative/deep.py"
    facts = extract_facts(path, "deep", f"class B0:\n    pass\n{chain}".encode(), full=True)
    below = VersionIndex({path: facts}).subclasses.get("sglang.srt.speculative.deep:B0")
    assert len(below) == 4999


GRAPH_RUNNERS = """
    from collections import defaultdict

    from sglang.srt.model_executor.graph_runner import CpuGraphRunner, GraphRunner, NpuGraphRunner


    class ModelRunner:
        def __init__(self, server_args, is_draft_worker=False):
            self.is_draft_worker = is_draft_worker
            self.device = server_args.device
            self.model = server_args.load()
            runners = defaultdict(lambda: GraphRunner, {"cpu": CpuGraphRunner})
            self.graph_runner = runners[self.device](self)
            self.fallback = {"npu": NpuGraphRunner}[self.device](self)

        def forward(self, batch):
            return self.model.forward(batch)
    """

GRAPH_RUNNER_CLASSES = """
    class GraphRunner:
        def __init__(self, model_runner):
            self.model_runner = model_runner


    class CpuGraphRunner(GraphRunner):
        pass


    class NpuGraphRunner:
        def __init__(self, model_runner):
            self.model_runner = model_runner
    """


def test_a_class_called_out_of_a_dict_of_classes_is_constructed() -> None:
    from tracker.analysis.interface import algorithm_walks

    graph = build(
        {
            "model_executor/model_runner.py": GRAPH_RUNNERS,
            "model_executor/graph_runner.py": GRAPH_RUNNER_CLASSES,
        }
    )
    walk, target = algorithm_walks("v1", graph.index, "EAGLE3")
    runner = "sglang.srt.model_executor.model_runner:ModelRunner.__init__"
    graph_runner = "sglang.srt.model_executor.graph_runner:"
    # The default factory's class and the dict's (CpuGraphRunner inherits its __init__),
    # and the one a dict display gives; each a step below the runner that builds it.
    for reach in (walk, target):
        assert reach.paths[f"{graph_runner}GraphRunner.__init__"][-2:] == [
            runner,
            f"{graph_runner}GraphRunner.__init__",
        ]
        assert reach.paths[f"{graph_runner}NpuGraphRunner.__init__"][-2] == runner


def test_what_rank_0_logs_is_required_as_every_deployment_has_a_rank_0() -> None:
    from sgl_trees import BASE

    worker = BASE["speculative/eagle_worker.py"].replace(
        "    @property\n",
        "        if self.tp_rank == 0:\n"
        '            logger.info("draft head %s", self.draft_model_runner.model.head_name)\n'
        "        if self.server_args.verbose:\n"
        '            logger.info("draft %s", self.draft_model_runner.model.description)\n'
        "\n"
        "    @property\n",
        1,
    )
    assert worker != BASE["speculative/eagle_worker.py"]
    itf = build({"speculative/eagle_worker.py": worker}).interface
    found = {r.member: r.status for r in itf.for_algorithm("EAGLE", "draft")}
    # A log call's arguments run whatever the level; an option's test stays a condition.
    assert found["head_name"] == "required"
    assert found["description"] == "conditional"
