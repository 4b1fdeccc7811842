"""`tracker facts` as text: each assignment shows its operator and its right-hand side."""

from __future__ import annotations

from textwrap import dedent

from tracker.extract.parse import extract_facts
from tracker.render.facts_view import facts_text

PATH = "python/sglang/srt/models/qwen.py"


def assign_lines(source: str) -> list[str]:
    facts = extract_facts(PATH, "cid", dedent(source).encode())
    return [line for line in facts_text(facts, "v1").splitlines() if line.startswith("assign")]


def test_an_entry_class_named_alone_shows_the_name() -> None:
    assert assign_lines("EntryClass = QWenLMHeadModel\n") == [
        "assign EntryClass = QWenLMHeadModel  :1 in <module>"
    ]


def test_an_entry_class_list_and_an_added_one_show_their_operator() -> None:
    assert assign_lines("""\
    EntryClass = [QWenLMHeadModel, QWen2]
    EntryClass += [QWenVL]
    """) == [
        "assign EntryClass = [QWenLMHeadModel, QWen2]  :1 in <module>",
        "assign EntryClass += [QWenVL]  :2 in <module>",
    ]


def test_an_inner_model_shows_its_constructor() -> None:
    assert assign_lines("""\
    class QWen:
        def __init__(self, config):
            self.transformer = QWenModel(config)
    """) == ["assign self.transformer = QWenModel(...)  :3 in QWen.__init__"]
