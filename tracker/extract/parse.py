"""Python source bytes -> ModuleFacts, with tree-sitter and the queries in `queries/`.

Each file is parsed once and every query of its pass runs on the same tree; the handler of
each query (tracker.extract.handlers, found by the query's name) turns its matches into
facts. The conditions around each site are found in one sweep over byte intervals
(tracker.extract.contexts), which keeps extraction within a small factor of the bare parse.
"""

from __future__ import annotations

import re
import time
from functools import cache

from tree_sitter import Node, Parser, QueryCursor, Tree

from tracker.extract.extraction import Extraction
from tracker.extract.facts import ModuleFacts
from tracker.extract.handlers import HANDLERS
from tracker.extract.identity import query_set_hash as query_set_hash
from tracker.extract.nodes import node_text
from tracker.extract.queries import LANGUAGE, compiled_query, pass_queries


@cache
def _parser() -> Parser:
    return Parser(LANGUAGE)


class ParseTimeout(Exception):
    """tree-sitter took longer than the file's time budget (see parse_tree)."""


_COMMENT_RUN = re.compile(rb"(?:^[ \t]*#[^\n]*\n){200,}", re.MULTILINE)


def parse_tree(source: bytes) -> Tree:
    """Parse; with a time budget when the file has a long run of comment lines, on which
    tree-sitter-python is quadratic: one generated file must not hang a whole run.

    The budgeted parse reads through a callback, and a tree parsed that way serves every
    Node.text through the callback again: so it only decides whether the file can be
    parsed in time, and the tree used is then parsed from the bytes."""
    parser = _parser()
    # A run of 200 comment lines holds at least 200 "#": counting them is a memchr-speed
    # pass, while the regex costs a fifth of a bare parse on every file.
    if source.count(b"#") < 200 or _COMMENT_RUN.search(source) is None:
        return parser.parse(source)
    budget = max(5.0, len(source) / 100_000)  # generous: real files parse at ~7 MB/s
    deadline = time.monotonic() + budget

    def read(offset: int, _point: object) -> bytes:
        return source[offset : offset + (1 << 20)]

    def cancel(_offset: int, _has_error: bool) -> bool:
        return time.monotonic() > deadline

    try:
        parser.parse(read, progress_callback=cancel)
    except ValueError as exc:  # "Parsing failed": the callback cancelled it
        parser.reset()  # else the next parse resumes this one
        raise ParseTimeout(f"parsing took longer than {budget:.0f} s") from exc
    return parser.parse(source)


def run_query(name: str, source: bytes) -> list[tuple[int, dict[str, list[Node]]]]:
    """Matches of one query on `source`: for the query fixture tests and debugging."""
    tree = _parser().parse(source)
    return list(QueryCursor(compiled_query(name)).matches(tree.root_node))


def extract_facts(path: str, content_id: str, source: bytes, *, full: bool = True) -> ModuleFacts:
    """Every fact of one file. Never raises on bad input: ERROR nodes are recorded, and a
    file that cannot be read at all gets empty facts that say why (`problem`)."""
    problem = ""
    try:
        source.decode("utf-8")
    except UnicodeDecodeError as exc:
        declared = _declared_encoding(source)
        if declared is not None:
            # PEP 263: `# -*- coding: latin-1 -*-` makes the file valid Python.
            try:
                source = source.decode(declared).encode("utf-8")
            except (LookupError, UnicodeDecodeError):
                declared = None
        if declared is None:
            # Python itself refuses such a file; tree-sitter's text predicates choke on it.
            problem = f"not UTF-8 (byte {exc.start}); read with the bad bytes replaced"
            source = source.decode("utf-8", "replace").encode("utf-8")
    try:
        facts = _extract(path, content_id, source, full)
    except ParseTimeout as exc:
        return ModuleFacts(path, content_id, problem=str(exc), definitions_only=not full)
    except RecursionError:
        return ModuleFacts(
            path, content_id, problem="nested too deeply to analyse", definitions_only=not full
        )
    return facts._replace(problem=problem) if problem else facts


_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


def _declared_encoding(source: bytes) -> str | None:
    """The PEP 263 encoding declared on the first or second line, if any."""
    for line in source.split(b"\n", 2)[:2]:
        found = _CODING.match(line)
        if found is not None:
            return found.group(1).decode("ascii", "replace")
    return None


def _extract(path: str, content_id: str, source: bytes, full: bool) -> ModuleFacts:
    """Run the pass's queries, then every handler on its query's matches, in order."""
    ex = Extraction(parse_tree(source).root_node, pass_queries("full" if full else "definitions"))
    for name, handler in HANDLERS.items():
        handler(ex, ex.matches.get(name, []))
    ex.finish()
    return ex.facts.module(path, content_id, _error_lines(ex.root), definitions_only=not full)


def _error_lines(root: Node) -> tuple[int, ...]:
    if not root.has_error:
        return ()
    lines: set[int] = set()
    # Walk only into subtrees that contain an error: cheap for mostly valid files.
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            lines.add(node.start_point.row + 1)
            continue
        stack.extend(c for c in node.children if c.has_error or c.is_missing)
    return tuple(sorted(lines))


def function_header(source: bytes, line: int) -> tuple[str, str] | None:
    """(parameters text, decorators text) of the function defined at `line` (1-based), as
    written; None when no function starts there. For patches that copy a signature."""
    root = _parser().parse(source).root_node
    cursor = QueryCursor(compiled_query("definitions"))
    for _, caps in cursor.matches(root):
        node = caps.get("function.definition", [None])[0]
        if node is None or node.start_point.row + 1 != line:
            continue
        params = caps["function.parameters"][0]
        parent = node.parent
        decorators = ""
        if parent is not None and parent.type == "decorated_definition":
            decorators = "\n".join(
                node_text(d) for d in parent.named_children if d.type == "decorator"
            )
        return node_text(params), decorators
    return None
