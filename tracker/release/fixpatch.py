"""The patch that adds delegating members to a wrapper whose inner model has them.

For each member the wrapper lacks and its `self.<inner>` provides, a method with the
provider's signature that forwards every argument (or a property, for an attribute) is
added at the end of the wrapper's class body. The result is a unified diff against the
version's own file, ready for `git apply` / `patch -p1`.
"""

from __future__ import annotations

import builtins
import difflib
import keyword
import re
from dataclasses import dataclass, field

from tracker.analysis.compat import Delegation, ModelCheck
from tracker.analysis.index import VersionIndex, key
from tracker.common.errors import TrackerError
from tracker.extract.facts import FunctionDef
from tracker.extract.parse import function_header
from tracker.sources.base import VersionTree

_IDENT = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True)
class Patch:
    path: str
    diff: str
    members: tuple[str, ...]
    skipped: tuple[str, ...]  # missing members with no inner model to delegate to
    # member -> the classes the inner attribute may hold that lack it: the patch does not
    # help a checkpoint that builds one of them
    partial: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return not self.skipped and not self.partial


def build_patch(tree: VersionTree, index: VersionIndex, check: ModelCheck, class_key: str) -> Patch:
    chosen: dict[str, Delegation] = {}
    for d in check.delegations:
        chosen.setdefault(d.member, d)  # first inner model in attribute order
    # A member named by a string (`getattr(model, "...")`) may be no Python name at all:
    # no method can be written for it.
    for member in [m for m in chosen if not m.isidentifier() or keyword.iskeyword(m)]:
        del chosen[member]
    skipped = tuple(m for m in check.missing if m not in chosen)
    if not chosen:
        raise TrackerError(
            f"{check.model} lacks {', '.join(check.missing)} but holds no inner model that "
            "provides them: there is nothing to delegate to"
        )
    info = index.classes[class_key]
    source = tree.read(info.path)
    lines = _lines(source.decode("utf-8"))
    indent = _body_indent(lines, info.facts.line, info.facts.end_line)
    blocks = []
    for member in sorted(chosen):
        blocks.append(_delegate(tree, index, info.module, chosen[member], indent))
    insert_at = info.facts.end_line  # after the last line of the class body
    new_lines = lines[:insert_at]
    if new_lines and not new_lines[-1].endswith("\n"):
        new_lines[-1] += "\n"
    addition = "".join("\n" + b for b in blocks)
    new_lines.append(addition)
    new_lines.extend(lines[insert_at:])
    diff = "".join(
        difflib.unified_diff(
            lines,
            _lines("".join(new_lines)),
            fromfile=_diff_path("a/" + info.path),
            tofile=_diff_path("b/" + info.path),
        )
    )
    partial = {m: d.lacking for m, d in sorted(chosen.items()) if d.lacking}
    return Patch(info.path, diff, tuple(sorted(chosen)), skipped, partial)


# The bytes git writes as C escapes in a quoted path (the rest of a byte < 0x20 or >= 0x7f
# as three octal digits), as `git diff` does with core.quotePath on.
_C_ESCAPES = {7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r"}


def _diff_path(path: str) -> str:
    """A path for a diff header as git writes it: quoted, with C escapes, when it holds a
    control character, a quote, a backslash or a byte outside ASCII. `git apply` reads it
    back, and the header holds no character a terminal would act on."""
    data = path.encode("utf-8", "surrogateescape")
    if all(0x20 <= b < 0x7F and b not in b'"\\' for b in data):
        return path
    out = []
    for b in data:
        if b in b'"\\':
            out.append("\\" + chr(b))
        elif b in _C_ESCAPES:
            out.append(_C_ESCAPES[b])
        elif b < 0x20 or b >= 0x7F:
            out.append(f"\\{b:03o}")
        else:
            out.append(chr(b))
    return '"' + "".join(out) + '"'


def _lines(text: str) -> list[str]:
    """`text` split after each newline, as Python and the parser count lines: a form feed
    or a line separator in a file is no line break (str.splitlines would make it one and
    put the new members at the wrong line)."""
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


def _body_indent(lines: list[str], start: int, end: int) -> str:
    for text in lines[start:end]:
        stripped = text.lstrip()
        if stripped and not stripped.startswith("#"):
            return text[: len(text) - len(stripped)]
    return "    "


def _delegate(
    tree: VersionTree, index: VersionIndex, wrapper_module: str, d: Delegation, indent: str
) -> str:
    inner_method = index.find_method(d.inner_key, d.member)
    fn = index.functions.get(inner_method) if inner_method else None
    if fn is None:
        # An attribute of the inner model: expose it read-only.
        return (
            f"{indent}@property\n{indent}def {d.member}(self):\n"
            f"{indent}    return self.{d.attribute}.{d.member}\n"
        )
    provider_path = index.path_of_module(inner_method.partition(":")[0]) if inner_method else None
    params_text = "(self)"
    decorators = ""
    if provider_path is not None:
        header = function_header(tree.read(provider_path), fn.line)
        if header is not None:
            params_text, decorators = header
    params_text = _portable_params(params_text, fn, index, wrapper_module)
    call_args = _forwarded_arguments(fn)
    lines = []
    if "@property" in decorators:
        lines += [
            f"{indent}@property\n",
            f"{indent}def {d.member}(self):\n",
            f"{indent}    return self.{d.attribute}.{d.member}\n",
        ]
        return "".join(lines)
    if "@staticmethod" in decorators or "@classmethod" in decorators:
        params_text = "(self" + ("" if call_args == "" else ", " + call_args) + ")"
    lines.append(f"{indent}def {d.member}{params_text}:\n")
    lines.append(f"{indent}    return self.{d.attribute}.{d.member}({call_args})\n")
    return "".join(lines)


def _forwarded_arguments(fn: FunctionDef) -> str:
    params = list(fn.params)
    if params and params[0].name in ("self", "cls"):
        params = params[1:]
    out = []
    for p in params:
        if p.kind == "var_positional":
            out.append(f"*{p.name}")
        elif p.kind == "var_keyword":
            out.append(f"**{p.name}")
        elif p.kind == "keyword_only":
            out.append(f"{p.name}={p.name}")
        else:
            out.append(p.name)
    return ", ".join(out)


def _portable_params(
    params_text: str, fn: FunctionDef, index: VersionIndex, wrapper_module: str
) -> str:
    """The provider's parameter list, without annotations that name something the
    wrapper's module does not bind (they would fail when the class body runs)."""
    text = " ".join(params_text.split())
    for p in fn.params:
        if not p.annotation:
            continue
        names = set(_IDENT.findall(p.annotation))
        unbound = [
            n
            for n in names
            if not hasattr(builtins, n) and index.resolve_name(wrapper_module, n) is None
        ]
        if unbound:
            text = text.replace(f"{p.name}: {p.annotation}", p.name)
    return text


__all__ = ["Patch", "build_patch", "key"]
