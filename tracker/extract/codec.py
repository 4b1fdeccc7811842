"""ModuleFacts <-> plain JSON values, for the facts pack shipped with the tool.

A module's facts are written as a table of rows, one per distinct NamedTuple in them,
children before parents: `[class code, field, field, ...]`. Facts repeat themselves a lot
(a scope's `Context` is shared by every call and read in it, the same `Cond` guards many
sites), so the table is a quarter of the tree's size, and decoding builds each distinct
value once.

Rows are written so that the part of a file an edit did not touch gives the same rows in
both versions, which lets the pack store each distinct row of all versions of a file once:
a field holding a NamedTuple is the distance back to its row (not the row's index), a
`line` is the distance from the line of the row before, an `end_line` the distance from
the row's own `line`.

The row layout is derived from the annotations in `tracker.extract.facts`, so a new field
needs no change here (it changes `FACTS_FORMAT`, which keys every pack). Decoding is the
cost of every warm run: each class gets a builder compiled from its layout, which is about
four times faster than interpreting the layout field by field. The compiled text is made
from the class definitions alone, never from the data being decoded.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from functools import cache
from typing import Any, NamedTuple, Union, get_args, get_origin, get_type_hints

from tracker.extract import facts as facts_module
from tracker.extract.facts import (
    Assign,
    Branch,
    Call,
    ClassDef,
    Cond,
    Context,
    Effect,
    Forward,
    FunctionDef,
    Import,
    ModuleFacts,
    Param,
    Read,
    Return,
)

# The row codes: positions in this tuple. Appending a class keeps old codes; any change
# still bumps CODEC_VERSION, which is part of the pack's key.
CLASSES: tuple[type[Any], ...] = (
    ModuleFacts,
    ClassDef,
    FunctionDef,
    Param,
    Import,
    Call,
    Read,
    Assign,
    Return,
    Effect,
    Forward,
    Context,
    Branch,
    Cond,
)
CODEC_VERSION = 1

_CODE = {cls: code for code, cls in enumerate(CLASSES)}


class _Kind(NamedTuple):
    """How one field is written: `scalar` as is, `ref` the distance back to a row (or null
    when `optional`), `refs` a list of those, `flat` a list of scalars, `pairs` a list of
    lists of scalars, `line` and `end` line numbers as distances (see above)."""

    how: str
    optional: bool = False


def _kind(hint: Any, name: str = "") -> _Kind:
    if hint is int and name in ("line", "end_line"):
        return _Kind("line" if name == "line" else "end")
    if hint in (str, int, bool):
        return _Kind("scalar")
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        (inner,) = (a for a in get_args(hint) if a is not type(None))
        found = _kind(inner)
        return found if found.how == "scalar" else found._replace(optional=True)
    if hint in _CODE:
        return _Kind("ref")
    if origin is tuple:
        item, ellipsis = get_args(hint)
        assert ellipsis is Ellipsis, f"fixed-size tuple field {hint} is not supported"
        if item in (str, int, bool):
            return _Kind("flat")
        if item in _CODE:
            return _Kind("refs")
        if get_origin(item) is tuple and all(a in (str, int, bool) for a in get_args(item)):
            return _Kind("pairs")
    raise TypeError(f"the facts codec cannot write a field of type {hint}")


_layouts: dict[type[Any], tuple[_Kind, ...]] = {}


def _layout(cls: type[Any]) -> tuple[_Kind, ...]:
    found = _layouts.get(cls)
    if found is None:
        hints = get_type_hints(cls, vars(facts_module))
        found = _layouts[cls] = tuple(_kind(hints[name], name) for name in cls._fields)
        kinds = [k.how for k in found]
        assert "end" not in kinds or kinds.index("line") < kinds.index("end"), cls
    return found


def layout_digest() -> str:
    """The row layout of every class, as text: part of a pack's key beside FACTS_FORMAT, so
    that a field added without a format bump is still never misread."""
    return ";".join(
        f"{cls.__name__}:" + ",".join(f"{k.how}{'?' if k.optional else ''}" for k in _layout(cls))
        for cls in CLASSES
    )


# ------------------------------------------------------------------------------ encoding


def encode(facts: ModuleFacts) -> list[list[Any]]:
    """The rows of `facts`; the last row is the ModuleFacts itself."""
    rows: list[list[Any]] = []
    # By class too: NamedTuples of two classes with equal fields compare equal.
    seen: dict[tuple[type[Any], Any], int] = {}

    def row_of(value: Any) -> int:
        cls = type(value)
        known = seen.get((cls, value))
        if known is not None:
            return known
        row: list[Any] = [_CODE[cls]]
        for kind, field in zip(_layout(cls), value, strict=True):
            if kind.how in ("scalar", "line", "end") or (kind.optional and field is None):
                row.append(field)
            elif kind.how == "ref":
                row.append(row_of(field))
            elif kind.how == "refs":
                row.append([row_of(item) for item in field])
            elif kind.how == "flat":
                row.append(list(field))
            else:
                row.append([list(pair) for pair in field])
        # Equal values share a row: they decode to one object, as equal facts may.
        seen[cls, value] = len(rows)
        rows.append(row)
        return len(rows) - 1

    row_of(facts)
    return _relative(rows)


def _positions(cls: type[Any], *hows: str) -> list[int]:
    return [i + 1 for i, k in enumerate(_layout(cls)) if k.how in hows]


def _relative(rows: list[list[Any]]) -> list[list[Any]]:
    """Row indexes and line numbers as distances, in place (see the module's text)."""
    last_line = 0
    for here, row in enumerate(rows):
        cls = CLASSES[row[0]]
        line = 0
        for i, kind in enumerate(_layout(cls), 1):
            value = row[i]
            if kind.how == "ref" and value is not None:
                row[i] = here - value
            elif kind.how == "refs":
                row[i] = [here - v for v in value]
            elif kind.how == "line":
                line, row[i], last_line = value, value - last_line, value
            elif kind.how == "end":
                row[i] = value - line
    return rows


@cache
def _line_positions() -> tuple[tuple[tuple[int, ...], int], ...]:
    """Per class code: the row positions of its `line` fields, and of its `end` (0: none)."""
    out = []
    for cls in CLASSES:
        ends = _positions(cls, "end")
        out.append((tuple(_positions(cls, "line")), ends[0] if ends else 0))
    return tuple(out)


def _absolute_lines(rows: list[list[Any]]) -> None:
    """Line distances back to line numbers, in place."""
    positions = _line_positions()
    last = 0
    for row in rows:
        lines, end = positions[row[0]]
        for i in lines:
            last += row[i]
            row[i] = last
        if end:
            row[end] += last


# ------------------------------------------------------------------------------ decoding

Builder = Callable[[list[Any], list[Any]], Any]


def _field_source(kind: _Kind, cell: str) -> str:
    # `done` holds the rows before this one, so a distance back d is done[-d].
    text = {
        "scalar": cell,
        "line": cell,
        "end": cell,
        "ref": f"done[-{cell}]",
        "refs": f"tuple([done[-i] for i in {cell}])",
        "flat": f"tuple({cell})",
        "pairs": f"tuple(map(tuple, {cell}))",
    }[kind.how]
    return f"(None if {cell} is None else {text})" if kind.optional else text


@cache
def _builders() -> tuple[Builder, ...]:
    """One function per class: (row, rows decoded so far) -> the value."""
    namespace: dict[str, Any] = {"new": tuple.__new__}
    out = []
    for code, cls in enumerate(CLASSES):
        namespace[f"C{code}"] = cls
        cells = [_field_source(k, f"row[{i + 1}]") for i, k in enumerate(_layout(cls))]
        source = f"lambda row, done: new(C{code}, ({', '.join(cells)},))"
        out.append(eval(source, namespace))
    return tuple(out)


class CodecError(ValueError):
    """Rows that are not the facts of a module."""


def decode(rows: list[list[Any]]) -> ModuleFacts:
    """The ModuleFacts that `encode` wrote as `rows` (which it changes)."""
    builders = _builders()
    done: list[Any] = []
    append = done.append
    try:
        _absolute_lines(rows)
        for row in rows:
            append(builders[row[0]](row, done))
    except (IndexError, TypeError, KeyError) as exc:
        raise CodecError(f"malformed facts rows: {exc}") from None
    result = done[-1] if done else None
    if not isinstance(result, ModuleFacts):
        raise CodecError("the last row is not a module's facts")
    return result
