"""What each algorithm requires, as its workers run, on real releases analysed from source:
each mechanism of tracker.analysis.walk and tracker.analysis.flow where a release depends on
it (an override, a property returning None, the draft model through a helper, a group of
hooks, a predicate passed as an argument, an opt-in worker, an alias the code rewrites). The
hand-traced requirements of these releases agree with what is asserted here."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tracker.analysis.compat import Compat, build_compat
from tracker.analysis.interface import Interface, Requirement, build_interface
from tracker.analysis.loader import load_index
from tracker.sources.pypi import PypiSource

pytestmark = pytest.mark.realdata

RELEASES = ("v0.5.9", "v0.5.16", "v0.5.23")


@dataclass(frozen=True)
class Analysed:
    interface: Interface
    compat: Compat

    def needs(self, algorithm: str, role: str) -> dict[str, Requirement]:
        return {r.member: r for r in self.interface.for_algorithm(algorithm, role)}

    def broken(self, algorithm: str, role: str = "target") -> set[str]:
        return {
            c.model
            for c in self.compat.checks
            if c.algorithm == algorithm and c.role == role and c.status == "broken"
        }


@pytest.fixture(scope="module")
def releases(real_pypi: PypiSource) -> Iterator[dict[str, Analysed]]:
    """The three releases analysed from their archives (the shipped snapshots bypassed)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRACKER_CACHE_DIR", str(real_pypi.archive_dir.parent))
        out = {}
        for version in RELEASES:
            index = load_index(real_pypi.tree(version))
            interface = build_interface(version, index)
            out[version] = Analysed(interface, build_compat(index, interface))
        yield out


@pytest.mark.parametrize("version", ["v0.5.16", "v0.5.23"])
def test_ngram_asks_nothing_of_a_target_that_would_break_it(
    releases: dict[str, Analysed], version: str
) -> None:
    # BaseSpecWorker.alloc_memory_pool calls self.draft_worker.alloc_memory_pool(), but
    # NGRAMWorker overrides alloc_memory_pool and its draft_worker is None.
    found = releases[version]
    assert [m for m, r in found.needs("NGRAM", "target").items() if r.status == "required"] == []
    assert found.needs("NGRAM", "draft") == {}
    assert found.broken("NGRAM") == set()


@pytest.mark.parametrize("version", RELEASES)
def test_standalone_shares_no_embedding_or_head(
    releases: dict[str, Analysed], version: str
) -> None:
    # StandaloneWorker's __init__ (v1) and StandaloneDraftWorker.init_lm_head (v2) override
    # the EAGLE bodies that share them.
    found = releases[version]
    assert "get_embed_and_head" not in found.needs("STANDALONE", "target")
    assert "set_embed_and_head" not in found.needs("STANDALONE", "draft")
    assert found.broken("STANDALONE") == set()


@pytest.mark.parametrize("version", ["v0.5.16", "v0.5.23"])
def test_dflash_lists_what_its_worker_asks_of_the_draft_it_builds(
    releases: dict[str, Analysed], version: str
) -> None:
    # The draft model comes from build_draft_tp_worker's bundle (another module), kept as
    # self.draft_model; nothing of the EAGLE draft interface is asked.
    draft = releases[version].needs("DFLASH", "draft")
    assert {"project_target_hidden", "layers"} <= set(draft)
    assert draft["project_target_hidden"].sites[0].path.endswith("speculative/dflash_worker_v2.py")
    assert not {"set_embed_and_head", "hot_token_id", "bind_frozen_kv_context"} & set(draft)
    assert "get_embed_and_head" not in releases[version].needs("DFLASH", "target")


@pytest.mark.parametrize("version", ["v0.5.16", "v0.5.23"])
def test_dspark_lists_what_its_worker_asks_of_its_draft(
    releases: dict[str, Analysed], version: str
) -> None:
    draft = releases[version].needs("DSPARK", "draft")
    assert {"attach_shared_modules", "markov_head", "write_target_hidden_kv"} <= set(draft)
    # From v0.5.23 it sits under `not (get_parallel().attn_dp_enabled and ...)`: an option,
    # so a condition (off by default, which the analysis cannot tell from the code).
    expected = "required" if version == "v0.5.16" else "conditional"
    assert draft["attach_shared_modules"].status == expected
    assert not {"set_embed_and_head", "hot_token_id"} & set(draft)


def test_a_target_head_read_through_a_wrapper_then_refused_when_none_is_required(
    releases: dict[str, Analysed],
) -> None:
    # v0.5.23 dflash_worker_v2.py: `lm_head = unwrap_lora_layer(getattr(target_model,
    # "lm_head", None))`, then `if lm_head is None or ...: raise RuntimeError`.
    found = releases["v0.5.23"]
    head = found.needs("DFLASH", "target")["lm_head"]
    assert head.status == "required"
    assert any(
        s.guard == "getattr-raises" and s.path.endswith("speculative/dflash_worker_v2.py")
        for s in head.sites
    )
    # A multimodal wrapper that keeps its head on the inner language model breaks.
    assert "NemotronH_Nano_VL_V2" in found.broken("DFLASH")


def test_uses_below_an_early_return_on_either_missing_hook_are_optional(
    releases: dict[str, Analysed],
) -> None:
    # v0.5.23 frozen_kv_mtp_worker_v2.py:293: `if not hasattr(draft_model,
    # "build_frozen_kv_mtp_context") or not hasattr(draft_model, "bind_frozen_kv_context"):
    # return`, then both are called.
    draft = releases["v0.5.23"].needs("FROZEN_KV_MTP", "draft")
    for member in ("build_frozen_kv_mtp_context", "bind_frozen_kv_context"):
        assert draft[member].status == "optional"
        assert {s.guard for s in draft[member].sites} == {"hasattr"}


def test_a_flag_only_a_protocol_probe_sets_guards_what_it_tests_as_optional(
    releases: dict[str, Analysed],
) -> None:
    # v0.5.23 dspark_worker_v2.py: `self._target_hidden_projection_enabled` is False or
    # _configure_target_hidden_projection(target_model=...), which returns False unless
    # isinstance(target_model, _SupportsDSparkTargetHiddenProjection); then :834 calls
    # should_project_dspark_target_hidden under the flag.
    found = releases["v0.5.23"]
    project = found.needs("DSPARK", "target")["should_project_dspark_target_hidden"]
    assert project.status == "optional"
    at_risk = {
        c.model
        for c in found.compat.checks
        if c.algorithm == "DSPARK"
        and any(r.member == "should_project_dspark_target_hidden" for r in c.at_risk)
    }
    assert at_risk == set()


@pytest.mark.parametrize("version", ["v0.5.16", "v0.5.23"])
def test_the_capture_hooks_are_one_of_two_for_dspark_and_one_for_dflash(
    releases: dict[str, Analysed], version: str
) -> None:
    # `if is_dspark and hasattr(m, "set_dspark_...")` / `elif hasattr(m, "set_dflash_...")` /
    # `else: raise ValueError`; `is_dspark=self.spec_algorithm.is_dspark()` is passed in,
    # so under DFLASH the first branch never runs.
    found = releases[version]
    dspark = found.needs("DSPARK", "target")["set_dspark_layers_to_capture"]
    assert (dspark.status, dspark.alternatives, dspark.raises) == (
        "required",
        ("set_dflash_layers_to_capture",),
        "ValueError",
    )
    dflash = found.needs("DFLASH", "target")["set_dflash_layers_to_capture"]
    assert (dflash.status, dflash.alternatives) == ("required", ())
    assert "set_dspark_layers_to_capture" not in found.needs("DFLASH", "target")


def test_eagle3_keeps_both_target_members_and_the_kimi_break_at_v0_5_9(
    releases: dict[str, Analysed],
) -> None:
    found = releases["v0.5.9"]
    target = found.needs("EAGLE3", "target")
    assert target["get_embed_and_head"].status == "required"
    capture = target["set_eagle3_layers_to_capture"]
    assert capture.status == "required"
    assert (capture.sites[0].path.rpartition("/")[2], capture.sites[0].line) == (
        "model_runner.py",
        622,
    )
    # The path shown is the target's own runner's, not the draft runner's.
    assert capture.sites[0].call_path[0] == "sglang.srt.managers.tp_worker:TpModelWorker.__init__"
    assert "get_hidden_states_before_lm_head" not in target
    [kimi] = [
        c
        for c in found.compat.checks
        if c.model == "KimiK25ForConditionalGeneration"
        and c.algorithm == "EAGLE3"
        and c.role == "target"
    ]
    assert (kimi.status, set(kimi.missing)) == (
        "broken",
        {"get_embed_and_head", "set_eagle3_layers_to_capture"},
    )


def test_what_only_the_opt_in_multi_layer_worker_needs_is_conditional(
    releases: dict[str, Analysed],
) -> None:
    # MultiLayerEagleWorkerV2 is built only with --enable-multi-layer-eagle (off by default);
    # under EAGLE3 only it calls set_embed_and_head unless the draft loads its own head.
    head = releases["v0.5.16"].needs("EAGLE3", "draft")["set_embed_and_head"]
    assert head.status == "conditional"
    assert any("enable_multi_layer_eagle" in s.condition for s in head.sites)
    assert releases["v0.5.16"].needs("EAGLE", "draft")["set_embed_and_head"].status == "required"


@pytest.mark.parametrize("version", RELEASES)
def test_nextn_is_accepted_as_what_the_code_rewrites_it_to(
    releases: dict[str, Analysed], version: str
) -> None:
    runs_as, site = releases[version].interface.aliases["NEXTN"]
    assert runs_as == "EAGLE"
    assert site.split(":")[0] in ("server_args.py", "arg_groups/speculative_hook.py")


@pytest.mark.parametrize("version", ["v0.5.16", "v0.5.23"])
def test_no_dflash_or_dspark_draft_is_checked_as_another_algorithms_draft(
    releases: dict[str, Analysed], version: str
) -> None:
    rows = {
        (c.model, c.algorithm)
        for c in releases[version].compat.checks
        if c.role == "draft" and ("DFlash" in c.model or "DSpark" in c.model)
    }
    assert rows, "the release registers DFlash/DSpark drafts"
    assert {a for _, a in rows} <= {"DFLASH", "DSPARK"}


def test_the_interface_a_shipped_snapshot_holds_is_the_one_built_from_the_archive(
    releases: dict[str, Analysed], real_pypi: PypiSource, use_real_cache: object
) -> None:
    # Commands that need a release's index as well (a checkpoint's check) take its
    # interface from the shipped snapshot instead of building it again: it must be the same.
    from dataclasses import fields

    from tracker.compare.workspace import Workspace

    ws = Workspace(real_pypi)
    for version in RELEASES:
        stored = ws.analyse(real_pypi, version).interface
        built = releases[version].interface
        for f in fields(built):
            a, b = getattr(stored, f.name), getattr(built, f.name)
            if f.name == "warnings":  # a snapshot keeps them sorted
                a, b = sorted(a), sorted(b)
            assert a == b, (version, f.name)
