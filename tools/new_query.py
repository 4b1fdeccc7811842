"""Scaffold a new tree-sitter query: its `queries/NAME.scm`, a handler stub in
tracker/extract/handlers.py and its fixture test `tests/queries/test_NAME.py`.

    python tools/new_query.py NAME --pass full|definitions|both

The three are what tests/queries/test_query_files.py checks for; each stub fails its tests
until written (the query does not compile, the handler raises, the fixture expects
nothing), so a half-done query cannot pass unnoticed. Refuses to overwrite anything.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_NAME = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")
_PASSES = {"full": "full", "definitions": "definitions", "both": "full, definitions"}

QUERY = """\
; TODO: what {name} finds, in a sentence, with an example (`self.x.y(...)`).
; Consumed by tracker.extract.handlers.on_{name} for TODO facts, read by TODO.
; pass: {passes}
(TODO_node_type) @subject.part
"""

HANDLER = '''

@handles("{name}")
def on_{name}(ex: Extraction, matches: Matches) -> None:
    """TODO: the facts queries/{name}.scm's matches become."""
    # Register each site with `slot = ex.site(node)` while reading the matches, and build
    # the facts in `ex.later(...)`, once `ex.context(slot)` is known.
    raise NotImplementedError("queries/{name}.scm: write its handler")
'''

FIXTURE = '''\
"""Fixture for queries/{name}.scm: TODO what it finds."""

from __future__ import annotations

SOURCE = """\\
TODO: a small SGLang-shaped snippet with what the query must match, and what it must not
"""

# Every capture on SOURCE, sorted: (capture name, text, 1-based line).
EXPECTED: list[tuple[str, str, int]] = []


def test_{name}_captures_TODO(captures) -> None:
    assert captures("{name}", SOURCE) == EXPECTED


def test_the_fixture_exercises_every_capture_of_the_query(capture_names) -> None:
    assert {{name for name, _, _ in EXPECTED}} == capture_names("{name}")
'''


class ScaffoldError(Exception):
    """Bad name, or something of that name exists already."""


def scaffold(root: Path, name: str, pass_choice: str) -> list[Path]:
    """Write the three stubs under `root`; returns the paths written (or touched)."""
    if not _NAME.match(name):
        raise ScaffoldError(f"{name!r} is not a snake_case query name")
    query = root / "queries" / f"{name}.scm"
    fixture = root / "tests" / "queries" / f"test_{name}.py"
    handlers = root / "tracker" / "extract" / "handlers.py"
    existing = [str(p.relative_to(root)) for p in (query, fixture) if p.exists()]
    handlers_text = handlers.read_text(encoding="utf-8")
    if f'@handles("{name}"' in handlers_text:
        existing.append(f"{handlers.relative_to(root)} (on_{name})")
    if existing:
        raise ScaffoldError(f"{name} exists already: {', '.join(existing)}; nothing written")
    query.write_text(QUERY.format(name=name, passes=_PASSES[pass_choice]), encoding="utf-8")
    fixture.write_text(FIXTURE.format(name=name), encoding="utf-8")
    handlers.write_text(handlers_text.rstrip("\n") + "\n" + HANDLER.format(name=name))
    return [query, handlers, fixture]


def main(argv: list[str] | None = None, root: Path = ROOT) -> int:
    parser = argparse.ArgumentParser(prog="new_query", description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="the query's snake_case name, after the fact it extracts")
    parser.add_argument(
        "--pass",
        dest="pass_choice",
        choices=sorted(_PASSES),
        required=True,
        help="the extraction pass that runs it: full (worker files), definitions (model "
        "files) or both",
    )
    args = parser.parse_args(argv)
    try:
        written = scaffold(root, args.name, args.pass_choice)
    except ScaffoldError as exc:
        print(f"new_query: error: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(path.relative_to(root))
    return 0


if __name__ == "__main__":
    sys.exit(main())
