"""The facts of one file as a document and as text (`tracker facts`)."""

from __future__ import annotations

from typing import Any

from tracker.extract.facts import Assign, Context, ModuleFacts, conjoin
from tracker.render.inert import visible


def _context(ctx: Context) -> dict[str, Any]:
    out: dict[str, Any] = {"scope": ctx.scope}
    if ctx.branches:
        out["conditions"] = [b.render() for b in ctx.branches]
    if ctx.catches_attribute_error:
        out["catches_attribute_error"] = True
    if ctx.in_message:
        out["in_message"] = True
    return out


def _plain(obj: Any) -> Any:
    """NamedTuples (nested too) as dicts, tuples as lists: JSON-ready."""
    if isinstance(obj, tuple) and hasattr(obj, "_asdict"):
        return {k: _plain(v) for k, v in obj._asdict().items()}
    if isinstance(obj, tuple | list):
        return [_plain(v) for v in obj]
    return obj


def facts_document(facts: ModuleFacts, version: str) -> dict[str, Any]:
    def site(obj: Any) -> dict[str, Any]:
        data: dict[str, Any] = _plain(obj)
        data.pop("context", None)
        if "value" in data:
            data["value"] = obj.value.render() if obj.value is not None else None
        if "keywords" in data:
            data["keywords"] = [list(k) for k in obj.keywords]
        data.update(_context(obj.context))
        return data

    return {
        "schema": "sglang-tracker/facts@2",
        "version": version,
        "path": facts.path,
        "content_id": facts.content_id,
        "error_lines": list(facts.error_lines),
        "classes": _plain(facts.classes),
        "functions": _plain(facts.functions),
        "imports": _plain(facts.imports),
        "assigns": [site(a) for a in facts.assigns],
        "calls": [site(c) for c in facts.calls],
        "reads": [site(r) for r in facts.reads],
        "returns": [
            {"line": r.line, "value": r.value.render(), **_context(r.context)}
            for r in facts.returns
        ],
        "effects": _plain(facts.effects),
    }


def facts_text(facts: ModuleFacts, version: str) -> str:
    lines = [f"{facts.path} at {version} · content id {facts.content_id}"]
    if facts.error_lines:
        lines.append(f"syntax errors at lines {', '.join(map(str, facts.error_lines))}")
    for c in facts.classes:
        lines.append(f"class {c.qualname}({', '.join(c.bases)})  :{c.line}-{c.end_line}")
    for a in facts.assigns:
        if a.target == "EntryClass" or (a.target.startswith("self.") and a.value_call):
            lines.append(
                f"assign {a.target} {a.op} {_value_text(a)}  :{a.line} in "
                f"{a.context.scope or '<module>'}"
            )
    for call in facts.calls:
        if call.receiver is None and call.name not in ("hasattr", "getattr"):
            continue
        where = call.context.scope or "<module>"
        cond = (
            " if " + conjoin(b.render() for b in call.context.branches)
            if call.context.branches
            else ""
        )
        target = f"{call.receiver}.{call.name}" if call.receiver else call.name
        lines.append(f"call {target}({', '.join(call.args)})  :{call.line} in {where}{cond}")
    # One line per fact, whatever the file's names and strings hold (tracker.render.inert).
    return "".join(visible(line) + "\n" for line in lines)


def _value_text(a: Assign) -> str:
    """The right-hand side as the facts hold it: a call's callee, else the value's text."""
    if a.value_call:
        return f"{a.value_call}(...)"
    if a.value is not None:
        return a.value.render()
    return ", ".join(a.value_names)
