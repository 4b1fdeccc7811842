"""A strict reader for the DOT subset `tracker graph` writes, so tests can check the text's
structure without graphviz: `digraph ID { stmt; ... }` with attribute statements
(`graph|node|edge [...]`), node statements and `a -> b` edge statements. Anything else,
an unterminated string or an unbalanced brace, is an error."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_TOKEN = re.compile(
    r'\s*(?:(?P<string>"(?:[^"\\]|\\.)*")|(?P<arrow>->)|(?P<punct>[{}\[\];,=])'
    r"|(?P<word>[A-Za-z_0-9.#]+))"
)


@dataclass
class Dot:
    name: str
    nodes: dict[str, dict[str, str]] = field(default_factory=dict)
    edges: list[tuple[str, str]] = field(default_factory=list)
    edge_attrs: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    defaults: dict[str, dict[str, str]] = field(default_factory=dict)


def _tokens(text: str) -> list[str]:
    out = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise ValueError(f"cannot read DOT at offset {pos}: {text[pos : pos + 40]!r}")
        out.append(match.group(match.lastgroup or "word"))
        pos = match.end()
    return out


def _unquote(token: str) -> str:
    if token.startswith('"'):
        return re.sub(r'\\(["\\])', r"\1", token[1:-1])
    return token


def parse_dot(text: str) -> Dot:
    tokens = _tokens(text)
    if tokens[:1] != ["digraph"] or tokens[2:3] != ["{"] or tokens[-1:] != ["}"]:
        raise ValueError("not a `digraph NAME { ... }`")
    dot = Dot(_unquote(tokens[1]))
    body = tokens[3:-1]
    i = 0

    def attrs() -> dict[str, str]:
        nonlocal i
        found: dict[str, str] = {}
        if i >= len(body) or body[i] != "[":
            return found
        i += 1
        while body[i] != "]":
            name, equals, value = body[i], body[i + 1], body[i + 2]
            if equals != "=" or name in "[]{};,=" or value in "[]{};,=":
                raise ValueError(f"bad attribute near {body[i : i + 3]}")
            if name in found:
                raise ValueError(f"attribute {name} given twice")
            found[_unquote(name)] = _unquote(value)
            i += 3
            if body[i] in ",;":
                i += 1
        i += 1
        return found

    while i < len(body):
        head = body[i]
        if head in "{}[];,=->":
            raise ValueError(f"unexpected {head!r}")
        i += 1
        if head in ("graph", "node", "edge"):
            dot.defaults[head] = attrs()
        elif i < len(body) and body[i] == "->":
            tail = _unquote(body[i + 1])
            i += 2
            pair = (_unquote(head), tail)
            dot.edges.append(pair)
            dot.edge_attrs[pair] = attrs()
        else:
            name = _unquote(head)
            if name in dot.nodes:
                raise ValueError(f"node {name} declared twice")
            dot.nodes[name] = attrs()
        if i >= len(body) or body[i] != ";":
            raise ValueError(f"statement not closed with ';' after {head!r}")
        i += 1
    undeclared = {n for e in dot.edges for n in e} - set(dot.nodes)
    if undeclared:
        raise ValueError(f"edges name undeclared nodes: {sorted(undeclared)}")
    return dot
