"""Tiny SGLang-shaped trees for the analysis tests: a base release and helpers that run
the real pipeline (facts -> index -> interface -> compat) on it in memory."""

from __future__ import annotations

import textwrap
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tracker.analysis.compat import Compat, build_compat
from tracker.analysis.index import VersionIndex
from tracker.analysis.interface import Interface, build_interface
from tracker.analysis.loader import reads_in_full
from tracker.extract.parse import extract_facts
from tracker.sources.base import content_id

SRT = "python/sglang/srt/"

_BASE: dict[str, str] = {
    "speculative/spec_info.py": """
        from enum import IntEnum, auto


        class SpeculativeAlgorithm(IntEnum):
            NONE = auto()
            EAGLE = auto()
            EAGLE3 = auto()

            def is_none(self):
                return self == SpeculativeAlgorithm.NONE

            def is_eagle(self):
                return self == SpeculativeAlgorithm.EAGLE or self == SpeculativeAlgorithm.EAGLE3

            def is_eagle3(self):
                return self == SpeculativeAlgorithm.EAGLE3

            def create_worker(self):
                if self.is_eagle():
                    from sglang.srt.speculative.eagle_worker import EAGLEWorker

                    return EAGLEWorker
                return None
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
    "managers/tp_worker.py": """
        from sglang.srt.model_executor.model_runner import ModelRunner


        class TpModelWorker:
            def __init__(self, server_args, is_draft_worker=False):
                self.model_runner = ModelRunner(server_args, is_draft_worker=is_draft_worker)

            def forward_batch_generation(self, batch):
                return self.model_runner.forward(batch)
        """,
    "model_executor/model_runner.py": """
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
                    self.model.set_eagle3_layers_to_capture([1, 2])

            def forward(self, batch):
                return self.model.forward(batch)
        """,
    "models/llama.py": """
        from torch import nn


        class LlamaForCausalLM(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.model = config.build()

            def get_embed_and_head(self):
                return self.model.embed, self.model.head

            def set_eagle3_layers_to_capture(self, layer_ids=None):
                self.layers = layer_ids


        EntryClass = LlamaForCausalLM
        """,
    "models/wrapper.py": """
        from torch import nn

        from sglang.srt.models.llama import LlamaForCausalLM


        class WrapperForConditionalGeneration(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.language_model = LlamaForCausalLM(config)


        EntryClass = [WrapperForConditionalGeneration]
        """,
    "models/llama_eagle.py": """
        from sglang.srt.models.llama import LlamaForCausalLM


        class LlamaForCausalLMEagle(LlamaForCausalLM):
            def set_embed_and_head(self, embed, head):
                self.embed, self.head = embed, head


        EntryClass = [LlamaForCausalLMEagle]
        """,
}


# Dedented once here, so tests can edit the texts with the indentation they will have.
BASE: dict[str, str] = {path: textwrap.dedent(text).lstrip() for path, text in _BASE.items()}

# A models file (add it as "models/dec.py") whose causal LM keeps EAGLE3's aux-hidden-state
# contract: the setter writes the layer ids the decoder reads, the decoder returns the aux
# list it fills, the forward hands it to the logits processor. Tests break it one line at
# a time (tracker.analysis.contract has one rule per way).
CAPTURE_LM = textwrap.dedent("""
    from torch import nn


    class DecModel(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.layers = make_layers(config)
            self.layers_to_capture = []

        def forward(self, input_ids):
            hidden_states = self.embed(input_ids)
            aux_hidden_states = []
            for i, layer in enumerate(self.layers):
                if i in self.layers_to_capture:
                    aux_hidden_states.append(hidden_states)
                hidden_states = layer(hidden_states)
            if len(aux_hidden_states) == 0:
                return hidden_states
            return hidden_states, aux_hidden_states


    class DecForCausalLM(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.model = DecModel(config)
            self.logits_processor = LogitsProcessor(config)
            self.capture_aux_hidden_states = False

        def forward(self, input_ids, batch):
            hidden_states = self.model(input_ids)
            aux_hidden_states = None
            if self.capture_aux_hidden_states:
                hidden_states, aux_hidden_states = hidden_states
            return self.logits_processor(input_ids, hidden_states, batch, aux_hidden_states)

        def get_embed_and_head(self):
            return self.model.embed.weight, self.lm_head.weight

        def set_eagle3_layers_to_capture(self, layer_ids=None):
            self.capture_aux_hidden_states = True
            self.model.layers_to_capture = [i + 1 for i in layer_ids]


    EntryClass = DecForCausalLM
    """).lstrip()
# The forward drops the aux states on the way to the logits (aux_not_to_logits).
CAPTURE_LM_DROPS_AUX = CAPTURE_LM.replace("batch, aux_hidden_states)", "batch)")
# The decoder never returns the aux list (aux_never_returned).
CAPTURE_LM_NO_PAIR = CAPTURE_LM.replace(
    "        return hidden_states, aux_hidden_states\n", "        return hidden_states\n"
)
assert CAPTURE_LM_NO_PAIR != CAPTURE_LM and CAPTURE_LM_DROPS_AUX != CAPTURE_LM


@dataclass
class Built:
    index: VersionIndex
    interface: Interface
    compat: Compat


def tree(overrides: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """The base tree with files replaced (text) or removed (None); paths under srt/."""
    files = dict(BASE)
    for path, text in (overrides or {}).items():
        if text is None:
            files.pop(path, None)
        else:
            files[path] = text
    return {SRT + path: textwrap.dedent(text).lstrip() for path, text in files.items()}


def build(overrides: Mapping[str, str | None] | None = None, version: str = "v1") -> Built:
    files = tree(overrides)
    facts = {}
    for path, text in files.items():
        data = text.encode()
        # As the loader reads them: models files for their definitions (and capture sites).
        facts[path] = extract_facts(path, content_id(data), data, full=reads_in_full(path))
    index = VersionIndex(facts)
    interface = build_interface(version, index)
    return Built(index, interface, build_compat(index, interface))


def line_of(overrides: Mapping[str, str | None] | None, path: str, needle: str) -> int:
    """1-based line of the first line containing `needle` in a tree file."""
    text = tree(overrides)[SRT + path]
    for number, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in {path}")


def write_tree(root: Path, overrides: Mapping[str, str | None] | None = None) -> Path:
    """The tree written below `root` as a checkout (`python/sglang/srt/...`), for the
    commands that read a directory (`--source dir:ROOT`); returns `root`."""
    for path, text in tree(overrides).items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root


def unpack_wheel(wheel: Path, root: Path) -> Path:
    """A release wheel's `sglang/**/*.py` written below `root` as a checkout lays them out
    (`python/sglang/...`), for the commands that read a directory; returns `root`."""
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if name.startswith("sglang/") and name.endswith(".py"):
                target = root / "python" / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.read(name))
    return root
