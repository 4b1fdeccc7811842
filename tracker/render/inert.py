"""Untrusted text made inert for each kind of output.

The tool prints and posts text it did not write: member names (from `getattr` strings),
the source text of conditions, file names, commit subjects and authors, the reasons in a
project's tracker.toml. Each output reads some characters as instructions: a terminal runs
control sequences and starts a line at a newline or carriage return; markdown renders HTML,
links, emphasis and code spans, and GitHub notifies whoever an @mention names; XML refuses
control characters; SARIF reads brackets and braces. This module is the one place that
knows how to neutralise text for each of them. The renderers apply it where text enters
an output (the templates' `finalize`, the CLI's line printer), never call by call.

Control and formatting characters are shown as Python shows them (`\\x1b`, `\\u202e`) so a
reader sees they are there. A backslash is left as it is: `\\x1b` in the output is either
the escape character or those four characters in the source, which a reader of the JSON
output can tell apart.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import quote

# Categories a terminal or a reader does not see as text: controls (C0, DEL, C1: escape
# sequences, bell, carriage return, newline), formats (bidi overrides, zero-width
# characters), line and paragraph separators, and lone surrogates (undecodable bytes).
_HIDDEN = frozenset(("Cc", "Cf", "Zl", "Zp", "Cs"))
# Every character that could be one of those (all but printable ASCII), checked one by one.
_CANDIDATE = re.compile(r"[^\x20-\x7e]")


_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _shown(char: str) -> str:
    """`char` written out as a Python string literal writes it."""
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def visible(text: str, keep: str = "") -> str:
    """`text` with every control, format and separator character written out (`\\x1b`,
    `\\n`, `\\u2028`), except those in `keep`: one line of plain text, whatever it held."""

    def replace(match: re.Match[str]) -> str:
        char = match.group()
        if char in keep or unicodedata.category(char) not in _HIDDEN:
            return char
        return _shown(char)

    return _CANDIDATE.sub(replace, text)


def json_text(text: str) -> str:
    """JSON text (json.dumps with ensure_ascii off) with the hidden characters json leaves
    as they are (DEL, C1 controls, bidi and other format characters, line separators)
    written as `\\u` escapes: the same JSON, and nothing in it a terminal acts on. They
    can only stand inside strings, where an escape means the same character."""

    def escape(match: re.Match[str]) -> str:
        char = match.group()
        if unicodedata.category(char) not in _HIDDEN:
            return char
        data = char.encode("utf-16-be", "surrogatepass")
        units = [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]
        return "".join(f"\\u{unit:04x}" for unit in units)

    return re.sub(r"[^\x00-\x7e]", escape, text)


# ------------------------------------------------------------------------ markdown

# What markdown reads as markup anywhere in a line: code, emphasis, links and images,
# table cells, strikethrough, GitHub's math and the backslash itself (escaped with a
# backslash); HTML and entities (written as entities); mentions; runs of underscores; and
# what GitHub turns into a link by itself (`https://...`, `www....`).
_MD_SPECIAL = re.compile(r"_+|[\\`*\[\]|~$&<>@]|://|(?i:www)\.")
_MD_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
# A zero-width space after `@`: GitHub finds no mention in `@\u200buser`, and the text reads
# the same. As an entity, so that the markdown source shows it. The same space breaks the
# patterns GitHub links by itself.
_MENTION_BREAK = "@&#8203;"
_LINK_BREAK = {"://": ":/&#8203;/"}


def md_text(text: str) -> str:
    """`text` as literal markdown inline text: nothing in it renders as HTML, a link (GitHub's
    own `https://` and `www.` links too), a code span or emphasis, no @mention notifies
    anyone, and it stays on its line (and in its table cell)."""
    shown = visible(text)

    def neutral(match: re.Match[str]) -> str:
        found = match.group()
        if found[0] == "_":
            # Between two letters or digits a run of underscores neither opens nor closes
            # emphasis: `set_eagle3_layers_to_capture` stays as it is.
            start, end = match.start(), match.end()
            before = shown[start - 1] if start else ""
            after = shown[end] if end < len(shown) else ""
            return found if before.isalnum() and after.isalnum() else "\\_" * len(found)
        if found == "@":
            return _MENTION_BREAK
        if found == "://" or found.lower() == "www.":
            return _LINK_BREAK.get(found) or found[:3] + "&#8203;."
        return _MD_HTML.get(found) or "\\" + found

    return _MD_SPECIAL.sub(neutral, shown)


def md_code(text: str, in_table: bool = False) -> str:
    """`text` as one markdown code span, whatever backticks it holds: fenced by a run of
    backticks longer than any in it, padded when it starts or ends with one (or with a
    space). In a table cell a `|` would end the cell even inside the span: `in_table`
    escapes it (which only a table reads back)."""
    shown = visible(text)
    if in_table:
        shown = shown.replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", shown)), default=0)
    fence = "`" * (longest + 1)
    if not shown:
        return "` `"  # markdown has no empty code span: a blank one
    # A span of spaces only is kept as it is; otherwise one space each side is stripped
    # when both are there, which the padding gives back.
    if shown.strip(" ") and (shown[0] in "` " or shown[-1] in "` "):
        shown = f" {shown} "
    return f"{fence}{shown}{fence}"


def md_block(text: str, info: str = "") -> str:
    """`text` as a fenced code block (its lines kept, each made visible), fenced by more
    backticks than any line holds, so no line of it can close the block."""
    lines = [visible(line) for line in text.split("\n")]
    longest = max((len(run) for line in lines for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return "\n".join((fence + visible(info).replace("`", ""), *lines, fence))


def md_prose(text: str) -> str:
    """A sentence the tool wrote with backticks around the names it quotes (`removes `x`
    from `Y``): each quoted name a code span, the rest inert text. A name holding a
    backtick itself pairs them differently; every piece is inert all the same."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an odd number of backticks: no pairing to follow
        return md_text(text)
    return "".join(
        (md_code(part) if part else md_text("``")) if odd else md_text(part)
        for odd, part in ((i % 2 == 1, p) for i, p in enumerate(parts))
    )


def md_url_part(text: str) -> str:
    """A piece of a link target (a path, a tag) percent-encoded: no space, parenthesis or
    angle bracket can end the link, and nothing in it is read as markup."""
    return quote(text, safe="/")


def issue_title(text: str) -> str:
    """An issue title: GitHub shows it as plain text (code spans aside), so it needs only
    to be one visible line whose @mentions notify no one (the zero-width space itself,
    since a title shows entities as they are written)."""
    return visible(text).replace("@", "@\u200b")


# ------------------------------------------------------------------------ XML, SARIF


def xml_text(text: str, keep_newlines: bool = False) -> str:
    """Text for an XML (SVG) element or attribute: escaped, and without a character XML
    1.0 refuses, escaped or not (a control character, a lone surrogate, U+FFFE); the other
    hidden characters are made visible too, so that a label reads as its source does."""
    shown = visible(text, keep="\n" if keep_newlines else "")
    shown = re.sub("[\ufffe\uffff]", lambda m: _shown(m.group()), shown)
    return (
        shown.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#x27;")
    )


def sarif_text(text: str) -> str:
    """Text for a SARIF message: SARIF reads `[text](n)` as a link to a location and `{n}`
    as a placeholder, so brackets are escaped with a backslash and braces doubled."""
    shown = visible(text).replace("\\", "\\\\")
    shown = re.sub(r"[\[\]]", lambda m: "\\" + m.group(), shown)
    return shown.replace("{", "{{").replace("}", "}}")
