"""tracker.extract.parse on small SGLang-shaped snippets: which facts come out, with which scope,
conditions and guards. The query files themselves have exact fixtures in tests/queries."""

from __future__ import annotations

from collections.abc import Iterable
from textwrap import dedent
from typing import Any, TypeVar

import pytest

from tracker.extract.facts import Branch, Call, Cond, Context, ModuleFacts, Param
from tracker.extract.parse import extract_facts

PATH = "python/sglang/srt/speculative/eagle_worker.py"
T = TypeVar("T")


def facts(source: str | bytes) -> ModuleFacts:
    raw = source if isinstance(source, bytes) else dedent(source).encode()
    return extract_facts(PATH, "cid", raw)


def one(items: Iterable[T], **fields: Any) -> T:
    """The single item whose named fields have the given values."""
    found = [i for i in items if all(getattr(i, k) == v for k, v in fields.items())]
    assert len(found) == 1, f"{len(found)} items with {fields}: {found}"
    return found[0]


def call(module: ModuleFacts, name: str) -> Call:
    return one(module.calls, name=name)


def branches_of(module: ModuleFacts, name: str) -> tuple[Branch, ...]:
    return call(module, name).context.branches


def ref(text: str) -> Cond:
    return Cond("ref", text)


def is_(cond: Cond) -> Branch:
    return Branch(cond, True)


def isnt(cond: Cond) -> Branch:
    return Branch(cond, False)


# ------------------------------------------------------------------------- calls and scopes

EAGLE_WORKER = """\
class EAGLEWorker(TpModelWorker):
    def __init__(self, server_args, target_worker):
        super().__init__(server_args, is_draft_worker=True)
        embed, head = self.target_worker.model_runner.model.get_embed_and_head()
        self.draft_model_runner.model.set_embed_and_head(embed, head=head, *extra)

    class Config:
        def load(self):
            def _inner():
                read_config()
"""


def test_a_method_call_keeps_the_full_text_of_its_receiver_and_its_line() -> None:
    found = call(facts(EAGLE_WORKER), "get_embed_and_head")
    assert found.receiver == "self.target_worker.model_runner.model"
    assert found.line == 4


def test_a_plain_call_has_no_receiver() -> None:
    assert call(facts(EAGLE_WORKER), "read_config").receiver is None


def test_a_call_on_a_call_has_the_inner_call_as_receiver() -> None:
    found = call(facts(EAGLE_WORKER), "__init__")
    assert found.receiver == "super()"
    assert call(facts(EAGLE_WORKER), "super").receiver is None


def test_sites_carry_the_qualified_name_of_the_enclosing_function() -> None:
    module = facts(EAGLE_WORKER)
    assert call(module, "get_embed_and_head").context == Context("EAGLEWorker.__init__")
    assert call(module, "read_config").context.scope == "EAGLEWorker.Config.load._inner"


def test_a_call_records_its_argument_shape() -> None:
    found = call(facts(EAGLE_WORKER), "set_embed_and_head")
    assert (found.positional, found.keywords, found.star_args, found.args) == (
        1,
        (("head", "head"),),
        True,
        ("embed",),
    )


def test_classes_and_functions_have_qualnames_owners_and_lines() -> None:
    module = facts(EAGLE_WORKER)
    assert [(c.qualname, c.line, c.end_line, c.bases) for c in module.classes] == [
        ("EAGLEWorker", 1, 10, ("TpModelWorker",)),
        ("EAGLEWorker.Config", 7, 10, ()),
    ]
    assert [(f.qualname, f.owner) for f in module.functions] == [
        ("EAGLEWorker.__init__", "EAGLEWorker"),
        ("EAGLEWorker.Config.load", "EAGLEWorker.Config"),
        ("EAGLEWorker.Config.load._inner", None),
    ]


def test_class_bases_leave_out_keyword_arguments_and_decorators_lose_the_at_sign() -> None:
    module = facts("""\
    @register_model("kimi")
    class KimiK25ForCausalLM(DeepseekV3ForCausalLM, nn.Module, metaclass=ABCMeta):
        @torch.no_grad()
        def forward(self):
            pass
    """)
    assert one(module.classes).bases == ("DeepseekV3ForCausalLM", "nn.Module")
    assert one(module.classes).decorators == ('register_model("kimi")',)
    assert one(module.functions).decorators == ("torch.no_grad()",)


def test_a_decorator_call_runs_in_the_scope_around_the_function() -> None:
    module = facts("""\
    class EAGLEWorker:
        @torch.no_grad()
        def forward(self):
            pass
    """)
    assert call(module, "no_grad").context.scope == "EAGLEWorker"


def test_the_path_and_content_id_are_passed_through() -> None:
    module = facts("")
    assert (module.path, module.content_id) == (PATH, "cid")
    assert module.module_name == "sglang.srt.speculative.eagle_worker"


# ------------------------------------------------------------------------------- conditions


def test_if_elif_else_bodies_run_under_their_test_and_the_negation_of_earlier_tests() -> None:
    module = facts("""\
    if a:
        first()
    elif b:
        second()
    else:
        third()
    """)
    assert branches_of(module, "first") == (is_(ref("a")),)
    assert branches_of(module, "second") == (isnt(ref("a")), is_(ref("b")))
    assert branches_of(module, "third") == (isnt(ref("a")), isnt(ref("b")))


def test_an_elif_test_is_evaluated_only_when_the_earlier_tests_failed() -> None:
    module = facts("""\
    if self.spec_algorithm.is_eagle():
        pass
    elif self.spec_algorithm.is_standalone():
        pass
    """)
    assert branches_of(module, "is_eagle") == ()
    assert branches_of(module, "is_standalone") == (
        isnt(Cond("call", "self.spec_algorithm.is_eagle")),
    )


def test_the_right_of_and_runs_when_the_left_holds_and_of_or_when_it_fails() -> None:
    module = facts("""\
    is_cuda() and load_kernel()
    has_cache() or build_cache()
    """)
    assert branches_of(module, "is_cuda") == ()
    assert branches_of(module, "load_kernel") == (is_(Cond("call", "is_cuda")),)
    assert branches_of(module, "build_cache") == (isnt(Cond("call", "has_cache")),)


def test_a_conditional_expression_puts_each_side_under_its_test() -> None:
    module = facts("backend = make_fa3() if use_fa3 else make_triton()\n")
    assert branches_of(module, "make_fa3") == (is_(ref("use_fa3")),)
    assert branches_of(module, "make_triton") == (isnt(ref("use_fa3")),)


def test_nested_ifs_accumulate_outermost_first() -> None:
    module = facts("""\
    def init(self):
        if self.is_draft_worker:
            if not self.use_cuda_graph:
                capture()
    """)
    assert branches_of(module, "capture") == (
        is_(ref("self.is_draft_worker")),
        is_(Cond("not", "", (ref("self.use_cuda_graph"),))),
    )


def test_a_guard_clause_puts_the_rest_of_the_block_under_its_negation() -> None:
    module = facts("""\
    def init(self):
        before()
        if not self.spec_algorithm.is_eagle():
            return
        after()
    """)
    assert branches_of(module, "before") == ()
    assert branches_of(module, "after") == (
        isnt(Cond("not", "", (Cond("call", "self.spec_algorithm.is_eagle"),))),
    )


def test_an_if_with_an_else_is_not_a_guard_clause() -> None:
    module = facts("""\
    if not ready:
        return
    else:
        pass
    after()
    """)
    assert branches_of(module, "after") == ()


def test_a_function_body_does_not_inherit_the_conditions_where_it_is_defined() -> None:
    module = facts("""\
    if _is_cuda:
        setup()

        def fused_forward(x):
            return kernel(x)
    """)
    assert branches_of(module, "setup") == (is_(ref("_is_cuda")),)
    assert call(module, "kernel").context == Context("fused_forward")


@pytest.mark.parametrize(
    "source",
    [
        "if _is_cuda:\n    def fused_forward(x):\n        return kernel(x)\n",
        "try:\n    def fused_forward(x):\n        return kernel(x)\n"
        "except AttributeError:\n    pass\n",
    ],
    ids=["only_statement_of_if", "only_statement_of_try"],
)
def test_a_function_alone_in_a_block_does_not_inherit_its_conditions(source: str) -> None:
    assert call(facts(source), "kernel").context == Context("fused_forward")


def test_a_class_body_runs_under_the_conditions_around_the_class() -> None:
    module = facts("""\
    if _is_hip:
        setup()

        class HipConfig:
            block_size = pick_block_size()
    """)
    assert branches_of(module, "pick_block_size") == (is_(ref("_is_hip")),)


# ----------------------------------------------------------------------------------- render


def test_conditions_render_as_python_with_parentheses_where_needed() -> None:
    module = facts("""\
    if a and (b or not c):
        inside()
    else:
        outside()
    """)
    assert [b.render() for b in branches_of(module, "inside")] == ["a and (b or not c)"]
    assert [b.render() for b in branches_of(module, "outside")] == ["not (a and (b or not c))"]


def test_calls_comparisons_and_tuples_render_with_their_operands() -> None:
    module = facts("""\
    if hasattr(self.model, "set_embed") and algo in ("EAGLE", "EAGLE3") and x is not None:
        inside()
    """)
    assert [b.render() for b in branches_of(module, "inside")] == [
        "hasattr(self.model, 'set_embed') and algo in ('EAGLE', 'EAGLE3') and x is not None"
    ]


def test_a_failed_single_name_renders_as_not_name() -> None:
    module = facts("if use_fa3:\n    pass\nelse:\n    fallback()\n")
    assert [b.render() for b in branches_of(module, "fallback")] == ["not use_fa3"]


def test_the_other_side_of_one_comparison_reads_as_the_opposite_comparison() -> None:
    module = facts("""\
    if self.target_worker.device != "cuda":
        elsewhere()
    else:
        on_cuda()
    if x is None or y not in ("a", "b"):
        pass
    else:
        both()
    if 0 < k <= 8:
        pass
    else:
        out_of_range()
    if a < b:
        pass
    else:
        not_less()
    """)
    assert [b.render() for b in branches_of(module, "on_cuda")] == [
        "self.target_worker.device == 'cuda'"
    ]
    assert [b.render() for b in branches_of(module, "both")] == [
        "x is not None and y in ('a', 'b')"
    ]
    # A chain and an ordering keep their `not`: neither has a single opposite operator.
    assert [b.render() for b in branches_of(module, "out_of_range")] == ["not (0 < k <= 8)"]
    assert [b.render() for b in branches_of(module, "not_less")] == ["not (a < b)"]


def test_cond_render_covers_every_operator() -> None:
    cond = Cond(
        "or",
        "",
        (
            Cond("and", "", (ref("a"), Cond("not", "", (ref("b"),)))),
            Cond("call", "f", (Cond("str", "k"), Cond("seq", "", (Cond("other", "1"),)))),
            Cond("cmp", "==", (ref("x"), Cond("str", "EAGLE3"))),
        ),
    )
    assert cond.render() == "(a and not b) or f('k', (1)) or x == 'EAGLE3'"
    assert Branch(cond, False).render() == f"not ({cond.render()})"


def test_a_chained_comparison_renders_as_written() -> None:
    module = facts("if 0 < topk <= 8:\n    pass\n    inside()\n")
    assert [b.render() for b in branches_of(module, "inside")] == ["0 < topk <= 8"]


# ---------------------------------------------------------------------------- asserted calls


def test_hasattr_as_the_test_of_an_assert_is_asserted() -> None:
    module = facts('assert hasattr(self.draft_model_runner.model, "set_embed"), "need it"\n')
    found = call(module, "hasattr")
    assert found.asserted
    assert found.args == ("self.draft_model_runner.model", '"set_embed"')


def test_hasattr_in_if_not_then_raise_is_asserted() -> None:
    module = facts("""\
    if not hasattr(self.target_worker.model_runner.model, "get_embed_and_head"):
        logger.error("the target model has no embedding")
        raise ValueError("unsupported")
    """)
    assert call(module, "hasattr").asserted


def test_hasattr_in_a_plain_if_is_not_asserted() -> None:
    module = facts("""\
    if hasattr(self.draft_model_runner.model, "load_lm_head_from_target"):
        self.draft_model_runner.model.load_lm_head_from_target()
    if not hasattr(self.model, "capture"):
        return
    """)
    assert [c.asserted for c in module.calls if c.name == "hasattr"] == [False, False]


def test_only_the_outermost_call_of_an_assert_is_asserted() -> None:
    module = facts("assert get_model(runner).has_lm_head()\n")
    assert call(module, "has_lm_head").asserted
    assert not call(module, "get_model").asserted


# ----------------------------------------------------------------------- AttributeError guards


@pytest.mark.parametrize(
    ("handler", "tolerated"),
    [
        ("except AttributeError:\n    hot = None", True),
        ("except AttributeError as e:\n    logger.warning(e)", True),
        ("except (KeyError, AttributeError):\n    hot = None", True),
        ("except Exception:\n    hot = None", True),
        ("except:\n    hot = None", True),
        ("except AttributeError:\n    if not pp_stage:\n        raise", False),
        ("except AttributeError:\n    raise", False),
        ("except KeyError:\n    hot = None", False),
    ],
    ids=[
        "attribute_error",
        "as_name",
        "tuple",
        "exception",
        "bare",
        "reraises_sometimes",
        "reraises",
        "key_error",
    ],
)
def test_a_call_in_try_is_tolerated_only_when_a_handler_swallows_attribute_error(
    handler: str, tolerated: bool
) -> None:
    source = f"try:\n    hot = self.draft_model_runner.model.get_hot_token_id()\n{handler}\n"
    assert call(facts(source), "get_hot_token_id").context.catches_attribute_error is tolerated


def test_calls_in_handlers_and_after_the_try_are_not_tolerated() -> None:
    module = facts("""\
    try:
        inside()
    except AttributeError:
        in_handler()
    after()
    """)
    assert call(module, "inside").context.catches_attribute_error
    assert not call(module, "in_handler").context.catches_attribute_error
    assert not call(module, "after").context.catches_attribute_error


def test_a_custom_exception_handler_does_not_tolerate_missing_members() -> None:
    source = "try:\n    model.get_hot_token_id()\nexcept SchedulerException:\n    pass\n"
    assert not call(facts(source), "get_hot_token_id").context.catches_attribute_error


def test_a_broad_handler_after_a_reraising_one_does_not_tolerate_missing_members() -> None:
    source = (
        "try:\n    model.get_hot_token_id()\n"
        "except AttributeError:\n    raise\n"
        "except Exception:\n    pass\n"
    )
    assert not call(facts(source), "get_hot_token_id").context.catches_attribute_error


# ------------------------------------------------------------------------------ assignments


def test_an_assignment_of_a_constructor_records_the_callee() -> None:
    module = facts("""\
    class KimiK25ForCausalLM(nn.Module):
        def __init__(self, config):
            self.language_model = DeepseekV3ForCausalLM(config, prefix="language_model")
    """)
    assign = one(module.assigns, target="self.language_model")
    assert assign.value_call == "DeepseekV3ForCausalLM"
    assert assign.line == 3
    assert assign.context == Context("KimiK25ForCausalLM.__init__")


def test_an_entry_class_list_records_the_names_in_it() -> None:
    module = facts('EntryClass = [DeepseekV3ForCausalLMNextN, models.KimiK25, "skip"]\n')
    assign = one(module.assigns, target="EntryClass")
    assert assign.value_names == ("DeepseekV3ForCausalLMNextN", "models.KimiK25")
    assert assign.value_call is None


def test_a_tuple_target_becomes_one_assignment_per_name() -> None:
    module = facts("self.embed, self.head = target_model.get_embed_and_head()\n")
    assert [(a.target, a.value_call) for a in module.assigns] == [
        ("self.embed", "target_model.get_embed_and_head"),
        ("self.head", "target_model.get_embed_and_head"),
    ]


def test_annotated_and_augmented_assignments_are_assignments() -> None:
    module = facts("""\
    class EagleConfig:
        num_steps: int = 3
        width: int
        num_steps += 1
    """)
    assert [(a.target, a.op, a.value) for a in module.assigns] == [
        ("num_steps", "=", Cond("other", "3")),
        ("num_steps", "+=", Cond("other", "1")),
    ]


def test_a_local_alias_records_the_aliased_expression() -> None:
    module = facts("target_model = self.target_worker.model_runner.model\n")
    assert one(module.assigns).value == ref("self.target_worker.model_runner.model")


def test_every_target_of_a_chained_assignment_gets_the_value() -> None:
    module = facts("self.model = model = DeepseekV3ForCausalLM(config)\n")
    assert [(a.target, a.value_call) for a in module.assigns] == [
        ("self.model", "DeepseekV3ForCausalLM"),
        ("model", "DeepseekV3ForCausalLM"),
    ]


# ------------------------------------------------------------------------------------ reads


def test_attribute_reads_leave_out_method_calls_and_assignment_targets() -> None:
    module = facts("""\
    def forward(self, logits_output, batch):
        hidden = logits_output.hidden_states
        logits_output.next_token_logits.argmax(-1)
        batch.spec_info.verified_id = hidden
        return self.speculative_num_steps
    """)
    assert [(r.receiver, r.name, r.line, r.kind) for r in module.reads] == [
        ("logits_output", "hidden_states", 2, "attr"),
        ("logits_output", "next_token_logits", 3, "attr"),
        ("batch", "spec_info", 4, "attr"),
    ]


def test_a_constant_key_subscript_is_a_key_read() -> None:
    module = facts("""\
    def load(eagle_config):
        if eagle_config["use_aux_hidden_state"]:
            eagle_config["layers"] = []
    """)
    read = one(module.reads)
    assert (read.receiver, read.name, read.kind, read.line) == (
        "eagle_config",
        "use_aux_hidden_state",
        "key",
        2,
    )
    assert read.context == Context("load")


def test_a_read_inside_a_branch_carries_the_branch() -> None:
    module = facts("""\
    def forward(self, batch):
        if batch.forward_mode.is_extend():
            return batch.spec_info.hidden_states
    """)
    read = one(module.reads, name="hidden_states")
    assert read.context == Context("forward", (is_(Cond("call", "batch.forward_mode.is_extend")),))


def test_reads_and_calls_in_an_error_message_are_marked_as_in_a_message() -> None:
    module = facts("""\
    def configure(model, layer_ids):
        assert layer_ids, f"no layers for {model.config.name}"
        if hasattr(model, "set_dflash_layers_to_capture"):
            model.set_dflash_layers_to_capture(layer_ids)
        else:
            raise ValueError(f"Model {model.__class__.__name__} captures nothing")
        logger.info("captured by %s", model.describe())
    """)
    in_message = sorted((r.name, r.line) for r in module.reads if r.context.in_message)
    assert in_message == [("__class__", 6), ("__name__", 6), ("config", 2), ("name", 2)]
    # A logging call's arguments run with it: not a message.
    assert not call(module, "describe").context.in_message
    assert not call(module, "set_dflash_layers_to_capture").context.in_message
    assert not call(module, "hasattr").context.in_message
    # The conditions around a message still hold for what is in it.
    raised = one(module.reads, name="__class__").context
    assert raised.branches == (
        isnt(Cond("call", "hasattr", (ref("model"), Cond("str", "set_dflash_layers_to_capture")))),
    )


# ---------------------------------------------------------------------------------- imports


def test_imports_record_module_name_alias_and_relative_level() -> None:
    module = facts("""\
    import torch.nn as nn
    from sglang.srt.models.deepseek_v2 import DeepseekV2ForCausalLM
    from . import eagle_utils
    from ..managers.schedule_batch import ScheduleBatch as Batch
    from sglang.srt.layers.quantization import *
    """)
    assert [(i.module, i.name, i.alias, i.level, i.line) for i in module.imports] == [
        ("torch.nn", None, "nn", 0, 1),
        ("sglang.srt.models.deepseek_v2", "DeepseekV2ForCausalLM", None, 0, 2),
        ("", "eagle_utils", None, 1, 3),
        ("managers.schedule_batch", "ScheduleBatch", "Batch", 2, 4),
        ("sglang.srt.layers.quantization", "*", None, 0, 5),
    ]
    assert {(i.scope, i.type_checking) for i in module.imports} == {("", False)}


def test_a_function_local_import_gets_the_function_scope() -> None:
    module = facts("""\
    class EAGLEWorker:
        def init_cuda_graphs(self):
            from sglang.srt.speculative.eagle_draft_cuda_graph_runner import (
                EAGLEDraftCudaGraphRunner,
            )
    """)
    found = one(module.imports)
    assert (found.name, found.scope, found.line) == (
        "EAGLEDraftCudaGraphRunner",
        "EAGLEWorker.init_cuda_graphs",
        4,
    )


def test_imports_under_type_checking_are_marked_and_the_else_branch_is_not() -> None:
    module = facts("""\
    from typing import TYPE_CHECKING

    if TYPE_CHECKING:
        from sglang.srt.server_args import ServerArgs
    else:
        ServerArgs = None
        import json
    """)
    assert [(i.name or i.module, i.type_checking) for i in module.imports] == [
        ("TYPE_CHECKING", False),
        ("ServerArgs", True),
        ("json", False),
    ]


def test_imports_under_if_not_type_checking_are_runtime_imports() -> None:
    module = facts("if not TYPE_CHECKING:\n    from sglang.srt.utils import is_cuda\n")
    assert not one(module.imports).type_checking


# ----------------------------------------------------------------------------------- params


def test_parameters_record_kind_default_and_annotation() -> None:
    module = facts("""\
    def __init__(self, server_args: ServerArgs, gpu_id=0, *args, tp_rank: int = 0,
                 moe_ep_rank, **kwargs):
        pass
    """)
    assert one(module.functions).params == (
        Param("self", "positional"),
        Param("server_args", "positional", annotation="ServerArgs"),
        Param("gpu_id", "positional", has_default=True, default="0"),
        Param("args", "var_positional"),
        Param("tp_rank", "keyword_only", has_default=True, annotation="int", default="0"),
        Param("moe_ep_rank", "keyword_only"),
        Param("kwargs", "var_keyword"),
    )


def test_parameters_after_a_bare_star_are_keyword_only() -> None:
    module = facts("def forward(self, batch, /, *, skip_sample: bool = False): pass\n")
    assert one(module.functions).params == (
        Param("self", "positional"),
        Param("batch", "positional"),
        Param("skip_sample", "keyword_only", has_default=True, annotation="bool", default="False"),
    )


def test_annotated_star_parameters_keep_their_annotation() -> None:
    module = facts("def forward(self, *args: Any, **kwargs: Any): pass\n")
    assert one(module.functions).params[1:] == (
        Param("args", "var_positional", annotation="Any"),
        Param("kwargs", "var_keyword", annotation="Any"),
    )


# ---------------------------------------------------------------------------------- returns


def test_returns_record_the_value_as_a_condition_tree() -> None:
    module = facts("""\
    class SpeculativeAlgorithm(IntEnum):
        def is_eagle(self):
            return self == SpeculativeAlgorithm.EAGLE or self == SpeculativeAlgorithm.EAGLE3
    """)
    found = one(module.returns)
    assert found.value.render() == (
        "self == SpeculativeAlgorithm.EAGLE or self == SpeculativeAlgorithm.EAGLE3"
    )
    assert (found.line, found.context) == (3, Context("SpeculativeAlgorithm.is_eagle"))


# ------------------------------------------------------------------------------- bad input


def test_a_file_with_a_syntax_error_still_yields_facts_for_the_valid_parts() -> None:
    module = facts("""\
    import torch


    def broken(:
        pass


    class EAGLEWorker:
        def forward(self, batch):
            return self.model.forward(batch)
    """)
    assert module.error_lines == (4,)
    assert [i.module for i in module.imports] == ["torch"]
    assert call(module, "forward").context == Context("EAGLEWorker.forward")
    assert one(module.classes).qualname == "EAGLEWorker"


def test_a_valid_file_has_no_error_lines() -> None:
    assert facts(EAGLE_WORKER).error_lines == ()


@pytest.mark.parametrize(
    "source",
    [b"", b"\x00\x00", b"x = 1\x00\ny = f()\n", b"x = '\xff\xfe'\nf()\n", b"\xff\xfe\xfd"],
    ids=["empty", "only_nul", "nul_in_code", "latin1_in_string", "not_utf8"],
)
def test_empty_nul_and_non_utf8_files_do_not_raise(source: bytes) -> None:
    assert isinstance(facts(source), ModuleFacts)


def test_an_empty_file_has_no_facts() -> None:
    assert facts(b"") == ModuleFacts(PATH, "cid")


def test_non_utf8_bytes_in_a_string_are_replaced_not_fatal() -> None:
    module = facts(b"x = '\xff'\nf()\n")
    assert "\ufffd" in one(module.assigns).value.text
    assert call(module, "f").line == 2


# ----------------------------------------------------------------------------- determinism


def test_extracting_the_same_source_twice_gives_equal_facts() -> None:
    assert facts(EAGLE_WORKER) == facts(EAGLE_WORKER)


def test_a_model_file_read_for_definitions_keeps_the_statements_the_capture_contract_follows() -> (
    None
):
    source = dedent(
        """\
        class Wrapper(nn.Module):
            def set_eagle3_layers_to_capture(self, ids):
                self.model.layers_to_capture = ids
                for i in ids:
                    setattr(self.model.layers[i], "_is_layer_to_capture", True)

            def forward(self, x):
                h = self.model(x)
                if self.capture_aux_hidden_states:
                    h, aux = h
                return self.logits_processor(x, h, aux)
        """
    ).encode()
    facts = extract_facts("python/sglang/srt/models/w.py", "id", source, full=False)
    rows = sorted((e.kind, e.text, e.line, e.scope, e.value, e.args) for e in facts.effects)
    setter, forward = "Wrapper.set_eagle3_layers_to_capture", "Wrapper.forward"
    assert rows == [
        ("call", "self.logits_processor", 11, forward, "", ("x", "h", "aux")),
        ("call", "self.model", 8, forward, "", ("x",)),
        (
            "call",
            "setattr",
            5,
            setter,
            "",
            ("self.model.layers[i]", '"_is_layer_to_capture"', "True"),
        ),
        ("loop", "i", 4, setter, "ids", ()),
        ("read", "self.capture_aux_hidden_states", 9, forward, "", ()),
        ("unpack", "h,aux", 10, forward, "h", ()),
        ("write", "self.model.layers_to_capture", 3, setter, "ids", ()),
    ]


def test_the_conditions_of_a_site_read_as_written_when_joined() -> None:
    # The guard clause leaves `cfg is None or pool is None` (a negated `and`); joined with
    # the next test it must stay one operand, or it would read `cfg is None or (pool is
    # None and batch.ready())`.
    from tracker.extract.facts import conjoin

    module = facts("""\
    def step(self, cfg, pool, batch):
        if cfg is not None and pool is not None:
            return
        if batch.ready():
            model.hook()
    """)
    rendered = conjoin(b.render() for b in branches_of(module, "hook"))
    assert rendered == "(cfg is None or pool is None) and batch.ready()"
    assert conjoin(["a or b", "", "c"]) == "(a or b) and c"
    assert conjoin(["f(a or b)", "c"]) == "f(a or b) and c"  # inside brackets: one operand
    assert conjoin(["", "a or b"]) == "a or b"  # alone, it needs no brackets


def test_a_negated_or_with_one_negated_operand_reads_without_the_double_negation() -> None:
    from tracker.extract.facts import simplified

    a, b, c = ref("a"), ref("b"), ref("c")
    negated_or = Cond("not", "", (Cond("or", "", (Cond("not", "", (a,)), b)),))
    assert simplified(negated_or).render() == "a and not b"
    # Mostly plain operands: the negation stays outside.
    mostly_plain = Cond("not", "", (Cond("or", "", (Cond("not", "", (a,)), b, c)),))
    assert simplified(mostly_plain).render() == "not (not a or b or c)"
