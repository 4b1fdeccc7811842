"""The interface of tiny SGLang-shaped trees: roles, algorithms, conditions, guards,
aliases, calls across modules and renamed workers."""

from __future__ import annotations

from sgl_trees import BASE, SRT, build, line_of

from tracker.analysis.interface import Interface, Requirement


def req(itf: Interface, algorithm: str, role: str, member: str) -> Requirement | None:
    for r in itf.requirements:
        if (r.algorithm, r.role, r.member) == (algorithm, role, member):
            return r
    return None


def members(itf: Interface, algorithm: str, role: str) -> dict[str, str]:
    return {r.member: r.status for r in itf.for_algorithm(algorithm, role)}


def test_algorithms_and_workers_come_from_the_version_own_enum_and_factory() -> None:
    itf = build().interface
    assert itf.algorithms == ("EAGLE", "EAGLE3")
    assert itf.workers == {"EAGLE": ("EAGLEWorker",), "EAGLE3": ("EAGLEWorker",)}


def test_an_unconditional_target_call_in_the_worker_is_required_by_every_algorithm_using_it() -> (
    None
):
    itf = build().interface
    line = line_of(None, "speculative/eagle_worker.py", "get_embed_and_head()")
    for algorithm in ("EAGLE", "EAGLE3"):
        found = req(itf, algorithm, "target", "get_embed_and_head")
        assert found is not None and found.status == "required"
        assert [(s.path, s.line, s.function) for s in found.sites] == [
            (SRT + "speculative/eagle_worker.py", line, "EAGLEWorker.__init__")
        ]
        assert found.kind == "call" and found.arities == ("0",)


def test_a_runner_call_under_an_eagle3_only_flag_is_required_by_eagle3_alone() -> None:
    itf = build().interface
    found = req(itf, "EAGLE3", "target", "set_eagle3_layers_to_capture")
    assert found is not None and found.status == "required"
    site = found.sites[0]
    assert site.path == SRT + "model_executor/model_runner.py"
    assert site.condition == "self.eagle_use_aux_hidden_state"
    assert req(itf, "EAGLE", "target", "set_eagle3_layers_to_capture") is None
    # The flag is only set on the target runner, so the draft model is asked nothing.
    assert req(itf, "EAGLE3", "draft", "set_eagle3_layers_to_capture") is None


def test_runner_code_that_runs_without_speculation_is_not_a_speculative_requirement() -> None:
    itf = build().interface
    assert all(r.member != "forward" for r in itf.requirements)


def test_if_and_else_on_an_algorithm_predicate_split_the_draft_requirements() -> None:
    itf = build().interface
    assert members(itf, "EAGLE3", "draft") == {"set_embed": "required"}
    assert members(itf, "EAGLE", "draft") == {"set_embed_and_head": "required"}


def test_the_call_path_to_a_target_runner_site_goes_through_the_target_worker() -> None:
    # The EAGLE worker's own TpModelWorker.__init__ builds the draft's runner, where the
    # EAGLE3-only flag is off: the path shown is the target worker the scheduler builds.
    found = req(build().interface, "EAGLE3", "target", "set_eagle3_layers_to_capture")
    assert found is not None
    assert found.sites[0].call_path == (
        "sglang.srt.managers.tp_worker:TpModelWorker.__init__",
        "sglang.srt.model_executor.model_runner:ModelRunner.__init__",
    )


def test_fields_read_from_the_forward_output_are_listed_per_algorithm() -> None:
    itf = build().interface
    names = {(f.algorithm, f.owner, f.name) for f in itf.output_fields}
    assert ("EAGLE3", "logits_output", "hidden_states") in names
    assert ("EAGLE", "logits_output", "hidden_states") in names


WORKER_WITH_GUARDS = """
    from sglang.srt.managers.tp_worker import TpModelWorker
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm


    class EAGLEWorker(TpModelWorker):
        def __init__(self, server_args, target_worker: TpModelWorker):
            self.target_worker = target_worker
            model = self.target_worker.model_runner.model
            if hasattr(model, "maybe_share") and model.maybe_share:
                model.share_now()
            if not hasattr(self.target_worker.model_runner.model, "must_have"):
                raise ValueError("needs must_have")
            scale = getattr(self.target_worker.model_runner.model, "scale", 1.0)
            try:
                self.target_worker.model_runner.model.tolerated()
            except AttributeError:
                pass
            if server_args.debug:
                self.target_worker.model_runner.model.debug_dump()
    """


def test_guards_make_members_optional_and_runtime_conditions_make_them_conditional() -> None:
    itf = build({"speculative/eagle_worker.py": WORKER_WITH_GUARDS}).interface
    assert members(itf, "EAGLE3", "target") == {
        "maybe_share": "optional",
        # Called when the model says so: a model without it but with maybe_share crashes.
        "share_now": "conditional",
        "must_have": "required",  # hasattr that raises when absent still requires it
        "scale": "optional",
        "tolerated": "optional",
        "debug_dump": "conditional",
        "set_eagle3_layers_to_capture": "required",  # the runner's, unchanged
    }
    guards = {r.member: r.sites[0].guard for r in itf.for_algorithm("EAGLE3", "target")}
    assert guards["must_have"] == "hasattr-raises"
    assert guards["scale"] == "getattr-default"
    assert guards["tolerated"] == "except AttributeError"


HELPERS = """
    def share_embeddings(target_model, draft_model):
        embed, head = target_model.get_embed_and_head()
        draft_model.set_embed_and_head(embed, head)
    """

WORKER_CALLING_HELPER = """
    from sglang.srt.managers.tp_worker import TpModelWorker
    from sglang.srt.speculative.helpers import share_embeddings


    class EAGLEWorker(TpModelWorker):
        def __init__(self, server_args, target_worker: TpModelWorker):
            self.target_worker = target_worker
            super().__init__(server_args, is_draft_worker=True)
            runner = self.target_worker.model_runner
            share_embeddings(target_model=runner.model, draft_model=self.model_runner.model)
    """


def test_a_model_passed_to_a_helper_in_another_module_keeps_its_role() -> None:
    itf = build(
        {"speculative/helpers.py": HELPERS, "speculative/eagle_worker.py": WORKER_CALLING_HELPER}
    ).interface
    found = req(itf, "EAGLE3", "target", "get_embed_and_head")
    assert found is not None and found.status == "required"
    assert found.sites[0].path == SRT + "speculative/helpers.py"
    assert found.sites[0].call_path[-1] == "sglang.srt.speculative.helpers:share_embeddings"
    assert req(itf, "EAGLE3", "draft", "set_embed_and_head") is not None


RENAMED_FACTORY = """
    from enum import IntEnum, auto


    class SpeculativeAlgorithm(IntEnum):
        NONE = auto()
        EAGLE = auto()
        EAGLE3 = auto()
        LOOKAHEAD = auto()

        def is_eagle(self):
            return self in (SpeculativeAlgorithm.EAGLE, SpeculativeAlgorithm.EAGLE3)

        def is_eagle3(self):
            return self == SpeculativeAlgorithm.EAGLE3

        def is_lookahead(self):
            return self == SpeculativeAlgorithm.LOOKAHEAD

        def create_worker(self):
            if self.is_eagle():
                from sglang.srt.speculative.eagle_worker import EAGLEWorker as Worker

                return Worker
            if self.is_lookahead():
                from sglang.srt.speculative.lookahead import LookaheadWorker

                return LookaheadWorker
    """

LOOKAHEAD = """
    class LookaheadWorker:
        def __init__(self, target_worker):
            self.target_worker = target_worker
            self.target_worker.model_runner.model.lookahead_hook()
    """


def test_a_new_algorithm_and_an_aliased_worker_are_found_without_code_changes() -> None:
    itf = build(
        {"speculative/spec_info.py": RENAMED_FACTORY, "speculative/lookahead.py": LOOKAHEAD}
    ).interface
    assert itf.algorithms == ("EAGLE", "EAGLE3", "LOOKAHEAD")
    assert itf.workers["LOOKAHEAD"] == ("LookaheadWorker",)
    assert itf.workers["EAGLE3"] == ("EAGLEWorker",)
    assert members(itf, "LOOKAHEAD", "target") == {"lookahead_hook": "required"}


NO_FACTORY = """
    from enum import IntEnum, auto


    class SpeculativeAlgorithm(IntEnum):
        NONE = auto()
        EAGLE = auto()

        def is_eagle(self):
            return self == SpeculativeAlgorithm.EAGLE
    """


def test_a_version_whose_worker_cannot_be_found_says_so_instead_of_reporting_nothing() -> None:
    itf = build({"speculative/spec_info.py": NO_FACTORY}).interface
    assert any("no worker class found for EAGLE" in w for w in itf.warnings)


def test_a_tree_without_the_algorithm_enum_says_so() -> None:
    itf = build({"speculative/spec_info.py": "X = 1\n"}).interface
    assert itf.algorithms == ()
    assert any("no class SpeculativeAlgorithm" in w for w in itf.warnings)


REGISTRY = """
    class SpeculativeAlgorithm:
        def _has_flag(self, flag):
            return flag in self.flags

        def is_eagle(self):
            return self._has_flag("EAGLE")

        def is_eagle3(self):
            return self._has_flag("EAGLE3")


    def _create_eagle_worker(**kwargs):
        from sglang.srt.speculative.eagle_worker import EAGLEWorker

        return EAGLEWorker(**kwargs)


    SpeculativeAlgorithm.register("NONE")
    register_speculative_algorithm("EAGLE", worker_cls=_create_eagle_worker, flags=("EAGLE",))
    register_speculative_algorithm(
        "EAGLE3", worker_cls=_create_eagle_worker, flags=("EAGLE", "EAGLE3")
    )
    """


def test_algorithms_registered_at_import_time_are_discovered_with_their_flags() -> None:
    itf = build({"speculative/spec_info.py": REGISTRY}).interface
    assert itf.algorithms == ("EAGLE", "EAGLE3")
    assert itf.workers == {"EAGLE": ("EAGLEWorker",), "EAGLE3": ("EAGLEWorker",)}
    assert members(itf, "EAGLE3", "draft") == {"set_embed": "required"}
    assert members(itf, "EAGLE", "draft") == {"set_embed_and_head": "required"}


WORKER_WITH_ALTERNATIVE = """
    from sglang.srt.managers.tp_worker import TpModelWorker


    class EAGLEWorker(TpModelWorker):
        def __init__(self, server_args, target_worker: TpModelWorker):
            self.target_worker = target_worker
            model = self.target_worker.model_runner.model
            if server_args.share and hasattr(model, "get_embed_and_head_for_draft"):
                embed, head = model.get_embed_and_head_for_draft(server_args.draft)
                return
            embed, head = model.get_embed_and_head()
    """


def test_a_member_skipped_when_the_model_has_an_alternative_is_required_unless_it_has_it() -> None:
    built = build({"speculative/eagle_worker.py": WORKER_WITH_ALTERNATIVE})
    found = req(built.interface, "EAGLE3", "target", "get_embed_and_head")
    assert found is not None and found.status == "required"
    assert found.alternatives == ("get_embed_and_head_for_draft",)
    alternative = req(built.interface, "EAGLE3", "target", "get_embed_and_head_for_draft")
    assert alternative is not None and alternative.status == "optional"
    # LlamaForCausalLM has get_embed_and_head; the wrapper has neither: still broken.
    assert built.compat.check_for("WrapperForConditionalGeneration", "EAGLE3").status == "broken"
    assert built.compat.check_for("LlamaForCausalLM", "EAGLE3").status == "ok"


def test_a_class_with_only_the_alternative_member_is_ok() -> None:
    alt_only = """
        from torch import nn


        class AltForCausalLM(nn.Module):
            def get_embed_and_head_for_draft(self, module):
                return module, None

            def set_eagle3_layers_to_capture(self, layer_ids=None):
                pass


        EntryClass = AltForCausalLM
        """
    built = build(
        {"speculative/eagle_worker.py": WORKER_WITH_ALTERNATIVE, "models/alt.py": alt_only}
    )
    check = built.compat.check_for("AltForCausalLM", "EAGLE3")
    assert check is not None and check.status == "ok"
    assert check.provisions[0].how == "alternative"


def test_a_model_method_called_inside_a_longer_chain_is_one_call_requirement() -> None:
    # v0.4.4.post2 to v0.4.8 take the hot tokens as
    # `self.draft_model_runner.model.get_hot_token_id().to(embed.device)`: the `.to` call's
    # receiver reaches past the model, but the member it names is the call already listed.
    worker = BASE["speculative/eagle_worker.py"].replace(
        "self.draft_model_runner.model.set_embed(embed)",
        "self.draft_model_runner.model.set_embed(embed)\n"
        "            self.hot = self.draft_model_runner.model.get_hot_token_id().to(embed.device)\n"
        "            self.head = self.draft_model_runner.model.lm_head.weight",
    )
    itf = build({"speculative/eagle_worker.py": worker}).interface
    draft = itf.for_algorithm("EAGLE3", "draft")
    assert [(r.kind, r.arities) for r in draft if r.member == "get_hot_token_id"] == [
        ("call", ("0",))
    ]
    # A name read (not called) past the model is still the member touched.
    head = req(itf, "EAGLE3", "draft", "lm_head")
    assert head is not None and head.kind == "attribute"


CUDA_GRAPH_RUNNER = """
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm


    class CudaGraphRunner:
        def __init__(self, model_runner):
            self.model_runner = model_runner
            if model_runner.spec_algorithm.is_eagle3():
                self.model_runner.model.set_eagle3_layers_to_capture()


    class DecodeCudaGraphRunner:
        def __init__(self, model_runner):
            self.model_runner = model_runner
            if model_runner.spec_algorithm.is_eagle3() and model_runner.is_draft_worker:
                self.model_runner.model.forward_embed()
"""


def test_the_cuda_graph_runner_asks_only_the_target_even_under_a_bare_eagle3_test() -> None:
    # The draft's ModelRunner is built with CUDA graphs disabled, so CudaGraphRunner's
    # model is the target's; other graph runners keep the runner role.
    itf = build({"model_executor/cuda_graph_runner.py": CUDA_GRAPH_RUNNER}).interface
    found = req(itf, "EAGLE3", "target", "set_eagle3_layers_to_capture")
    assert found is not None
    assert {s.path.rsplit("/", 1)[1] for s in found.sites} == {
        "model_runner.py",
        "cuda_graph_runner.py",
    }
    assert req(itf, "EAGLE3", "draft", "set_eagle3_layers_to_capture") is None
    draft_embed = req(itf, "EAGLE3", "draft", "forward_embed")
    assert draft_embed is not None and draft_embed.sites[0].function == (
        "DecodeCudaGraphRunner.__init__"
    )


# A worker that uses members every model has, reads others only to word its errors, and
# both probes and calls one member.
_RUNNER_WITH_MESSAGES = """
from sglang.srt.speculative.spec_info import SpeculativeAlgorithm


class ModelRunner:
    def __init__(self, server_args, is_draft_worker=False):
        self.is_draft_worker = is_draft_worker
        self.spec_algorithm = SpeculativeAlgorithm.from_string(server_args.algo)
        self.eagle_use_aux_hidden_state = False
        if self.spec_algorithm.is_eagle3() and not self.is_draft_worker:
            self.eagle_use_aux_hidden_state = True
        self.model = server_args.load()
        if self.eagle_use_aux_hidden_state:
            if hasattr(self.model, "set_eagle3_layers_to_capture"):
                self.model.set_eagle3_layers_to_capture([1, 2])
            else:
                raise ValueError(
                    f"{self.model.__class__.__name__} cannot capture: {self.model.config.arch}"
                )
            for _name, module in self.model.named_modules():
                logger.info("capturing %s in %s", module, self.model.capture_state)

    def forward(self, batch):
        return self.model.forward(batch)
"""


def test_members_every_model_has_are_never_requirements() -> None:
    itf = build({"model_executor/model_runner.py": _RUNNER_WITH_MESSAGES}).interface
    named = {r.member for r in itf.requirements}
    assert "__class__" not in named
    assert "named_modules" not in named


def test_what_an_error_message_reads_is_not_a_requirement_but_what_a_log_line_reads_is() -> None:
    itf = build({"model_executor/model_runner.py": _RUNNER_WITH_MESSAGES}).interface
    named = {r.member for r in itf.requirements}
    assert "config" not in named  # only in the raised error's text
    # A log call's arguments are evaluated whenever it runs, at any level.
    logged = req(itf, "EAGLE3", "target", "capture_state")
    assert logged is not None and logged.status == "required"
    # The call the message is about is still a requirement.
    assert req(itf, "EAGLE3", "target", "set_eagle3_layers_to_capture") is not None


def test_a_member_both_probed_and_called_is_one_requirement_with_both_uses() -> None:
    itf = build({"model_executor/model_runner.py": _RUNNER_WITH_MESSAGES}).interface
    found = [
        r
        for r in itf.for_algorithm("EAGLE3", "target")
        if r.member == "set_eagle3_layers_to_capture"
    ]
    assert len(found) == 1
    (one,) = found
    assert one.kind == "call" and one.arities == ("1",)
    assert one.uses == ("call", "hasattr")
    # The else raises: the probe does not make the member optional.
    assert sorted(s.guard for s in one.sites) == ["hasattr", "hasattr", "one-of"]
    assert one.status == "required" and one.raises == "ValueError"
