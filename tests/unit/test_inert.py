"""tracker.render.inert: each output's neutraliser, checked by reading its result back the
way that output reads it: markdown through a CommonMark renderer (HTML let through, as
GitHub does), XML through a parser, JSON through json."""

from __future__ import annotations

import json
import re
import unicodedata
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from tracker.render.inert import (
    issue_title,
    json_text,
    md_block,
    md_code,
    md_prose,
    md_text,
    md_url_part,
    sarif_text,
    visible,
    xml_text,
)

HIDDEN = {"Cc", "Cf", "Zl", "Zp", "Cs"}
# Text that stresses every rule: markdown punctuation, HTML, mentions, entities, the
# characters a terminal acts on, separators, and ordinary letters.
TRICKY = st.text(
    alphabet=st.sampled_from(
        list("`*_[]()<>&@#|~$\\!-=+.:;'\" aZ9é→\t\n\r\x1b\x07\x0b\x0c\x1c\x85\u2028\u202e\u200b")
    ),
    max_size=40,
)


class _Rendered(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.code: list[str] = []
        self.text = ""
        self.href: list[str] = []
        self._code = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.href += [v or "" for k, v in attrs if k == "href"]
        if tag == "code":
            self._code = True
            self.code.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "code":
            self._code = False

    def handle_data(self, data: str) -> None:
        if self._code:
            self.code[-1] += data
        else:
            self.text += data


def render(markdown: str) -> _Rendered:
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    page = _Rendered()
    page.feed(md.render(markdown))
    return page


def no_hidden(text: str) -> bool:
    return not any(unicodedata.category(c) in HIDDEN for c in text)


# ------------------------------------------------------------------------ visible


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("\x1b]0;title\x07", "\\x1b]0;title\\x07"),
        ("a\nb\rc\td", "a\\nb\\rc\\td"),
        ("\x7f\x85\x9b", "\\x7f\\x85\\x9b"),
        ("\u2028\u2029\u202e\u200b\ufeff", "\\u2028\\u2029\\u202e\\u200b\\ufeff"),
        ("\U000e0041", "\\U000e0041"),
        ("\udcff", "\\udcff"),
    ],
)
def test_visible_writes_out_every_character_a_terminal_acts_on(text: str, shown: str) -> None:
    assert visible(text) == shown


def test_visible_leaves_printable_text_and_backslashes_as_they_are() -> None:
    text = "sglang v0.5.8 → v0.5.9 · ✓ é 日本 \\x1b C:\\path"
    assert visible(text) == text


def test_visible_keeps_what_it_is_told_to() -> None:
    assert visible("a\nb\x1b", keep="\n") == "a\nb\\x1b"


@given(TRICKY)
def test_visible_text_is_one_line_with_nothing_hidden(text: str) -> None:
    shown = visible(text)
    assert no_hidden(shown)
    assert "\n" not in shown


# ------------------------------------------------------------------------ markdown


@settings(max_examples=300)
@given(TRICKY | st.sampled_from(["https://evil.test/x", "see WWW.evil.test", "a@b.test"]))
def test_markdown_text_renders_as_exactly_its_visible_characters(text: str) -> None:
    page = render(f"x {md_text(text)} y")
    assert page.tags == ["p"]
    # A zero-width space after every `@` and in `://` and `www.`: no mention, no link
    # GitHub makes by itself, and it reads the same.
    shown = visible(text).replace("@", "@\u200b").replace("://", ":/\u200b/")
    shown = re.sub("(?i)(www)\\.", "\\1\u200b.", shown)
    assert page.text.strip("\n") == f"x {shown} y"


def test_markdown_text_leaves_nothing_github_would_link_by_itself() -> None:
    # GitHub's autolinks: a scheme's `://`, a `www.` host, an e-mail address.
    text = md_text("https://evil.test www.evil.test WWW.x.test mallory@evil.test")
    assert "://" not in text and not re.search("(?i)www\\.", text)
    assert re.search(r"\w@\w", text) is None


@settings(max_examples=300)
@given(TRICKY)
def test_a_code_span_holds_exactly_the_text_whatever_backticks_it_has(text: str) -> None:
    assume(text)
    page = render(f"x {md_code(text)} y")
    assert page.tags == ["p", "code"]
    assert page.code == [visible(text)]


@given(TRICKY)
def test_a_code_span_in_a_table_cell_keeps_its_pipes_and_the_row_its_cells(text: str) -> None:
    assume(text)
    table = f"| a | b |\n| --- | --- |\n| {md_code(text, in_table=True)} | {md_text(text)} |\n"
    page = render(table)
    assert page.tags.count("td") == 2
    assert page.code == [visible(text)]


@given(st.lists(TRICKY, max_size=5))
def test_a_block_keeps_its_lines_and_no_line_of_it_closes_the_fence(lines: list[str]) -> None:
    text = "\n".join(lines)
    page = render(f"{md_block(text, 'diff')}\n\nafter\n")
    assert page.tags[:2] == ["pre", "code"]
    expected = "\n".join(visible(line) for line in text.split("\n"))
    assert page.code[0] == expected + "\n"
    assert page.text.strip("\n") == "after"


def test_prose_puts_each_quoted_name_in_its_own_code_span() -> None:
    page = render(md_prose("removes `get_embed_and_head` from `Victim<b>ForCausalLM`"))
    assert page.code == ["get_embed_and_head", "Victim<b>ForCausalLM"]
    assert page.tags == ["p", "code", "code"]


@given(TRICKY)
def test_prose_with_any_backticks_renders_no_markup(text: str) -> None:
    page = render(f"x {md_prose(text)} y")
    assert set(page.tags) <= {"p", "code"}


def test_a_percent_encoded_path_stays_one_link() -> None:
    path = "python/m/odd (name) <x>.py"
    page = render(f"[site](https://example.test/{md_url_part(path)}#L1)")
    assert page.tags == ["p", "a"]
    assert page.href == ["https://example.test/python/m/odd%20%28name%29%20%3Cx%3E.py#L1"]


def test_underscores_inside_a_name_are_left_alone_and_others_escaped() -> None:
    assert md_text("set_eagle3_layers_to_capture") == "set_eagle3_layers_to_capture"
    assert md_text("__init__ _u_") == "\\_\\_init\\_\\_ \\_u\\_"


def test_an_issue_title_is_one_visible_line_that_mentions_no_one() -> None:
    title = issue_title("[EAGLE3] x\x1b]0;t\x07 @everyone\n@octocat")
    assert title == "[EAGLE3] x\\x1b]0;t\\x07 @\u200beveryone\\n@\u200boctocat"


# ------------------------------------------------------------------- XML, SARIF, JSON


@given(TRICKY)
def test_xml_text_parses_back_to_the_visible_text(text: str) -> None:
    shown = xml_text(text)
    element = ET.fromstring(f'<t a="{shown}">{shown}</t>')
    assert (element.text or "") == visible(text)
    assert element.get("a") == visible(text)


def test_xml_text_refuses_what_xml_cannot_hold_even_escaped() -> None:
    shown = xml_text("a\ufffeb\uffff\x00")
    ET.fromstring(f"<t>{shown}</t>")
    assert shown == "a\\ufffeb\\uffff\\x00"


def test_sarif_text_escapes_links_and_placeholders() -> None:
    text = sarif_text("x [click](1) {0} \\ \x1b")
    assert text == "x \\[click\\](1) {{0}} \\\\ \\\\x1b"


@given(st.dictionaries(TRICKY, TRICKY, max_size=4))
def test_json_text_is_the_same_json_with_nothing_hidden(data: dict[str, str]) -> None:
    text = json_text(json.dumps(data, ensure_ascii=False))
    assert json.loads(text) == data
    assert no_hidden(text)
