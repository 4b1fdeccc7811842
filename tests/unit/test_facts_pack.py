"""The facts pack: facts written as JSON rows come back as the same facts, a pack made for
other facts is ignored, and a damaged one is rejected in one line, its files parsed."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from sgl_trees import tree as sgl_tree
from sgl_trees import write_tree

from tracker.analysis.loader import load_index, reads_in_full
from tracker.extract import codec, pack, store
from tracker.extract.facts import ModuleFacts
from tracker.extract.parse import extract_facts
from tracker.sources import clear_memo, open_source
from tracker.sources.base import content_id

CONDITIONS = b"""
class W:
    def step(self, batch, model):
        if not (batch.is_extend() or (self.algo.is_eagle3() and self.n > 2)):
            return
        try:
            model.set_eagle3_layers_to_capture(ids, mode=self.mode, **extra)
        except AttributeError:
            pass
        if model.cfg["hot"] in ("a", "b") and not hasattr(model, "lm_head"):
            raise ValueError(f"{model.name} lacks lm_head")
        hidden, aux = self.model(x)
        for layer in self.layers:
            aux.append(layer.h)
"""


def _same(a: Any, b: Any) -> bool:
    """Equal, and of the same classes all the way down (tuple equality ignores classes)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _facts_of_tree() -> list[ModuleFacts]:
    files = sgl_tree()
    return [
        extract_facts(p, content_id(t.encode()), t.encode(), full=reads_in_full(p))
        for p, t in sorted(files.items())
    ]


def test_facts_written_as_rows_read_back_as_the_same_facts_of_the_same_classes() -> None:
    written = [extract_facts("python/sglang/srt/speculative/w.py", "cid", CONDITIONS)]
    written += _facts_of_tree()
    assert any(c.context.branches for f in written for c in f.calls)
    for facts in written:
        assert _same(codec.decode(codec.encode(facts)), facts)


def test_equal_values_share_one_row() -> None:
    facts = extract_facts("python/sglang/srt/speculative/w.py", "cid", CONDITIONS)
    rows = codec.encode(facts)
    contexts = [r for r in rows if r[0] == codec.CLASSES.index(type(facts.calls[0].context))]
    assert len(contexts) == len({c.context for c in facts.calls} | {r.context for r in facts.reads})


def test_rows_that_are_not_facts_are_refused() -> None:
    facts = extract_facts("python/sglang/srt/speculative/w.py", "cid", CONDITIONS)
    rows = codec.encode(facts)
    with pytest.raises(codec.CodecError):
        codec.decode([*rows[:-1], [99]])
    with pytest.raises(codec.CodecError):
        codec.decode(rows[:-1])  # the last row is no longer a ModuleFacts


def _write(path: Path, facts: list[ModuleFacts]) -> Path:
    pack.write_pack(path, facts, {"notes": {"a": [1, 2]}})
    return path


def test_a_pack_gives_back_every_entry_and_document_it_was_written_with(tmp_path: Path) -> None:
    facts = _facts_of_tree()
    opened = pack.open_pack(_write(tmp_path / "p.pack", facts))
    assert opened is not None
    for item in facts:
        assert opened.has(item.content_id, not item.definitions_only)
        assert _same(opened.facts(item.content_id, not item.definitions_only), item)
        assert opened.facts(item.content_id, item.definitions_only) is None
    assert opened.document("notes") == {"a": [1, 2]}
    assert opened.document("other") is None


def test_a_pack_made_for_other_facts_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path / "p.pack", _facts_of_tree())
    real_key = pack.pack_key()
    monkeypatch.setattr(pack, "pack_key", lambda: {**real_key, "query_set": "0" * 16})
    assert pack.open_pack(path) is None


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x55
    path.write_bytes(bytes(data))


def test_a_damaged_header_or_entry_is_rejected(tmp_path: Path) -> None:
    facts = _facts_of_tree()
    path = _write(tmp_path / "p.pack", facts)
    _flip(path, len(pack.MAGIC) + 20)
    with pytest.raises(pack.PackError, match="header"):
        pack.open_pack(path)
    path = _write(tmp_path / "q.pack", facts)
    _flip(path, path.stat().st_size - 3)  # inside the last entry written
    opened = pack.open_pack(path)
    assert opened is not None
    with pytest.raises(pack.PackError, match="checksum"):
        for item in facts:
            opened.facts(item.content_id, not item.definitions_only)
        opened.document("notes")
    (tmp_path / "r.pack").write_bytes(b"not a pack at all")
    with pytest.raises(pack.PackError, match="not a facts pack"):
        pack.open_pack(tmp_path / "r.pack")


@pytest.fixture
def shipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shipped pack's place, pointed at a scratch file for this test."""
    path = tmp_path / "shipped.pack"
    monkeypatch.setattr(pack, "shipped_pack_path", lambda: path)
    pack.forget_shipped()
    monkeypatch.setenv("TRACKER_JOBS", "1")
    return path


def _forget() -> None:
    """Nothing of the runs before in memory: no facts, no opened source or pack."""
    store.recent.next_version()
    store.recent.next_version()
    clear_memo()
    pack.forget_shipped()


def _parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    parsed: list[str] = []
    parse = store._parse_and_store

    def counted(base: Path, path: str, *args: Any) -> ModuleFacts:
        parsed.append(path)
        return parse(base, path, *args)

    monkeypatch.setattr(store, "_parse_and_store", counted)
    return parsed


def test_a_file_whose_bytes_are_in_the_shipped_pack_is_not_parsed(
    shipped: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_tree(tmp_path / "tree")
    source = open_source(f"dir:{root}", None, tmp_path)
    fresh = load_index(source.tree("local"))
    pack.write_pack(shipped, fresh.by_path.values(), {})
    edited = "python/sglang/srt/speculative/eagle_worker.py"
    (root / edited).write_text((root / edited).read_text() + "\n# patched\n")
    monkeypatch.setenv("TRACKER_CACHE_DIR", str(tmp_path / "empty-cache"))
    parsed = _parses(monkeypatch)
    _forget()
    index = load_index(open_source(f"dir:{root}", None, tmp_path).tree("local"))
    assert parsed == [edited]
    assert sorted(index.by_path) == sorted(fresh.by_path)

    # With shipped data off (--no-shipped), everything is parsed again.
    parsed.clear()
    _forget()
    monkeypatch.setenv("TRACKER_CACHE_DIR", str(tmp_path / "another-empty-cache"))
    store.use_shipped(False)
    load_index(open_source(f"dir:{root}", None, tmp_path).tree("local"))
    assert sorted(parsed) == sorted(index.by_path)


def test_a_damaged_shipped_pack_is_said_in_one_line_and_its_files_are_parsed(
    shipped: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    root = write_tree(tmp_path / "tree")
    source = open_source(f"dir:{root}", None, tmp_path)
    fresh = load_index(source.tree("local"))
    pack.write_pack(shipped, fresh.by_path.values(), {})
    _flip(shipped, shipped.stat().st_size // 2)
    monkeypatch.setenv("TRACKER_CACHE_DIR", str(tmp_path / "empty-cache"))
    parsed = _parses(monkeypatch)
    _forget()
    with caplog.at_level(logging.WARNING, logger="tracker"):
        index = load_index(open_source(f"dir:{root}", None, tmp_path).tree("local"))
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "facts pack is damaged" in warnings[0]
    # The entries read before the damaged one were whole (each has its checksum); from
    # the damaged one on, every file is parsed.
    damaged = warnings[0].split("entry ")[1].split()[0]
    assert next(p for p, f in fresh.by_path.items() if f.content_id == damaged) in parsed
    assert dict(index.by_path) == dict(fresh.by_path)
