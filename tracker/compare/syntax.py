"""Where a file's syntax error really is, as Python says it.

tree-sitter recovers from a syntax error by wrapping what it could not parse in ERROR
nodes, which often start far from the mistake (an unclosed "(" at line 150 gives ERROR
nodes at lines 91, 176, 183, ...). Those lines stay in the facts (they are what the
recovery skipped); the warning a user reads names the line and message Python's own
parser gives, which is where the file must be fixed.
"""

from __future__ import annotations

import ast
import warnings


def python_syntax_error(source: bytes) -> tuple[int, str] | None:
    """(line, message) of the first syntax error Python's parser finds in `source`, or
    None when it parses (syntax newer than this Python's is judged by tree-sitter alone)
    or cannot be judged at all."""
    try:
        with warnings.catch_warnings():
            # Invalid escape sequences and the like warn on 3.12+: not the error sought.
            warnings.simplefilter("ignore")
            ast.parse(source)
    except SyntaxError as exc:
        return (exc.lineno or 0, exc.msg)
    except (ValueError, OverflowError, RecursionError, MemoryError):
        return None  # NUL bytes, nesting too deep: tree-sitter's lines are all there is
    return None
