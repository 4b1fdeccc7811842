"""A class is not ok when what decides it cannot be read: its own file, or a file its
algorithm's workers run, does not parse, or its module imports a name its tree does not
define (SGLang's registry then never registers it)."""

from __future__ import annotations

from sgl_trees import BASE, Built, build

from tracker.analysis.compat import ModelCheck


def check(built: Built, model: str, algorithm: str = "EAGLE3") -> ModelCheck:
    found = built.compat.check_for(model, algorithm)
    assert found is not None
    return found


def test_a_class_whose_own_file_does_not_parse_is_unknown_not_ok() -> None:
    llama = BASE["models/llama.py"] + "\ndef broken(:\n    pass\n"
    built = build({"models/llama.py": llama})
    found = check(built, "LlamaForCausalLM")
    assert found.status == "unknown"
    assert found.problem == "models/llama.py does not parse"
    # The same class in a file that parses is ok.
    assert check(build(), "LlamaForCausalLM").status == "ok"


def test_a_worker_file_that_does_not_parse_leaves_no_class_ok_for_its_algorithm() -> None:
    worker = BASE["speculative/eagle_worker.py"] + "\n    def broken(self:\n        pass\n"
    built = build({"speculative/eagle_worker.py": worker})
    assert built.interface.unparsed["EAGLE3"] == ("python/sglang/srt/speculative/eagle_worker.py",)
    found = check(built, "LlamaForCausalLM")
    assert found.status == "unknown"
    assert found.problem == "the worker file speculative/eagle_worker.py does not parse"


def test_a_model_module_importing_a_name_its_tree_lacks_never_registers() -> None:
    llama = (
        "from sglang.srt.managers.tp_worker import MultimodalDataItem\n" + BASE["models/llama.py"]
    )
    found = check(build({"models/llama.py": llama}), "LlamaForCausalLM")
    assert found.status == "unknown"
    assert found.problem == (
        "not registered: models/llama.py imports MultimodalDataItem, which "
        "managers/tp_worker.py does not define"
    )
    # A name the module does bind imports fine.
    fine = "from sglang.srt.managers.tp_worker import TpModelWorker\n" + BASE["models/llama.py"]
    assert check(build({"models/llama.py": fine}), "LlamaForCausalLM").status == "ok"
