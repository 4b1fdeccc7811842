"""A small SGLang-shaped tree whose loading code rewrites architectures and whose runner
reads the draft's config (tests of tracker.analysis.checkpoint), and the pipeline run on it
with a reader that parses any of its modules in full, as the CLI's reader does."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sgl_trees import build, tree

from tracker.analysis.checkpoint import Answer, Request, answer
from tracker.analysis.config_values import CheckpointConfig
from tracker.analysis.roles import load_rules
from tracker.extract.facts import ModuleFacts, module_name
from tracker.extract.parse import extract_facts
from tracker.sources.base import content_id

LOADING: dict[str, str | None] = {
    "utils/hf_transformers_utils.py": """
        def get_config(model, trust_remote_code, revision=None, model_override_args=None):
            config = AutoConfig.from_pretrained(model)
            if config.model_type == "wrapper_mm":
                config.update({"architectures": ["WrapperForConditionalGeneration"]})
            if model_override_args:
                config.update(model_override_args)
            return config
        """,
    "configs/model_config.py": """
        from sglang.srt.utils.hf_transformers_utils import get_config


        class ModelConfig:
            def __init__(self, model_path, is_draft_model=False, model_override_args="{}"):
                self.is_draft_model = is_draft_model
                self.hf_config = get_config(model_path, True, None, model_override_args)
                self._config_draft_model()

            @staticmethod
            def from_server_args(server_args, model_path=None, is_draft_model=False):
                return ModelConfig(
                    model_path=model_path or server_args.model_path,
                    is_draft_model=is_draft_model,
                )

            def _config_draft_model(self):
                is_draft_model = self.is_draft_model
                if is_draft_model and self.hf_config.architectures[0] == "LlamaForCausalLM":
                    self.hf_config.architectures[0] = "LlamaForCausalLMEagle"
        """,
    "model_executor/model_runner.py": """
        from sglang.srt.configs.model_config import ModelConfig
        from sglang.srt.speculative.spec_info import SpeculativeAlgorithm


        class ModelRunner:
            def __init__(self, server_args, is_draft_worker=False):
                self.is_draft_worker = is_draft_worker
                self.spec_algorithm = SpeculativeAlgorithm.from_string(server_args.algo)
                self.eagle_use_aux_hidden_state = False
                if self.spec_algorithm.is_eagle3() and not self.is_draft_worker:
                    draft_model_config = ModelConfig.from_server_args(
                        server_args, model_path=server_args.draft_path, is_draft_model=True
                    )
                    self.eagle_use_aux_hidden_state = True
                    try:
                        eagle_config = getattr(draft_model_config.hf_config, "eagle_config", None)
                        self.eagle_use_aux_hidden_state = eagle_config.get(
                            "use_aux_hidden_state", True
                        )
                    except:
                        pass
                self.model = server_args.load()
                if self.eagle_use_aux_hidden_state:
                    self.model.set_eagle3_layers_to_capture([1, 2])

            def forward(self, batch):
                return self.model.forward(batch)
        """,
    "speculative/eagle_worker.py": """
        from sglang.srt.managers.tp_worker import TpModelWorker
        from sglang.srt.speculative.spec_info import SpeculativeAlgorithm


        class EAGLEWorker(TpModelWorker):
            def __init__(self, server_args, target_worker: TpModelWorker):
                self.target_worker = target_worker
                self.speculative_algorithm = SpeculativeAlgorithm.from_string(server_args.algo)
                super().__init__(server_args, is_draft_worker=True)
                embed, head = self.target_worker.model_runner.model.get_embed_and_head()
                if self.speculative_algorithm.is_eagle3():
                    if (
                        hasattr(self.draft_model_runner.model, "load_lm_head_from_target")
                        and self.draft_model_runner.model.load_lm_head_from_target
                    ):
                        self.draft_model_runner.model.set_embed_and_head(embed, head)
                    else:
                        self.draft_model_runner.model.set_embed(embed)
                else:
                    self.draft_model_runner.model.set_embed_and_head(embed, head)

            @property
            def draft_model_runner(self):
                return self.model_runner

            def forward_batch_generation(self, batch):
                logits_output = self.target_worker.forward_batch_generation(batch)
                return logits_output.hidden_states
        """,
    "models/llama_eagle3.py": """
        from sglang.srt.models.llama import LlamaForCausalLM


        class LlamaForCausalLMEagle3(LlamaForCausalLM):
            def __init__(self, config):
                self.config = config
                if self.config.num_hidden_layers != 1:
                    raise ValueError("EAGLE3 currently only supports 1 layer")
                self.load_lm_head_from_target = False
                if self.config.tie_word_embeddings:
                    self.lm_head = self.model.embed_tokens
                else:
                    if config.draft_vocab_size is None:
                        self.load_lm_head_from_target = True

            def set_embed(self, embed):
                self.embed = embed

            def set_embed_and_head(self, embed, head):
                self.embed, self.head = embed, head


        EntryClass = [LlamaForCausalLMEagle3]
        """,
}


def files(overrides: Mapping[str, str | None] | None = None) -> dict[str, str]:
    return tree({**LOADING, **(overrides or {})})


def ask(
    target: Mapping[str, Any],
    draft: Mapping[str, Any] | None = None,
    algorithm: str = "EAGLE3",
    overrides: Mapping[str, str | None] | None = None,
    override_args: Mapping[str, Any] | None = None,
) -> Answer:
    """The answer of the tree (the LOADING files, with `overrides`) for the checkpoints."""
    built = build({**LOADING, **(overrides or {})})
    texts = files(overrides)

    def read(module: str) -> ModuleFacts | None:
        for path, text in texts.items():
            if module_name(path) == module:
                data = text.encode()
                return extract_facts(path, content_id(data), data, full=True)
        return None

    request = Request(
        algorithm,
        CheckpointConfig("target", "target/config.json", dict(target)),
        CheckpointConfig("draft", "draft/config.json", dict(draft)) if draft is not None else None,
        dict(override_args or {}),
    )
    return answer(built.index, built.interface, built.compat, read, request, load_rules())
