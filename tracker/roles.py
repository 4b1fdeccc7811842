"""The role rules (`queries/roles.toml`): which receiver expressions are the target or the
draft model, where. Data, so a renamed receiver in a new release is a one-line change."""

from __future__ import annotations

import fnmatch
import re
import tomllib
from dataclasses import dataclass, field
from functools import cache

from tracker.resources import queries_dir


@dataclass(frozen=True)
class ReceiverRule:
    pattern: str
    role: str  # "target" | "draft" | "runner"
    modules: tuple[str, ...]
    classes: tuple[str, ...]
    scope: str  # "worker" | "runner"
    regex: re.Pattern[str]

    def applies_in(self, module: str, class_name: str | None) -> bool:
        if not any(fnmatch.fnmatchcase(module, glob) for glob in self.modules):
            return False
        return not self.classes or class_name in self.classes

    def member_of(self, receiver: str, member: str) -> tuple[str, str] | None:
        """(member, kind) when `receiver.member` touches the model this rule names:
        the member itself when the receiver is the model, or the first name after the
        model when the receiver reaches further (`<model>.model.embed_tokens`). A name
        called right there (`<model>.get_hot_token_id().to(...)`) is left out: that call
        is a site of its own, and counting it here would list the member twice."""
        found = self.regex.fullmatch(receiver)
        if found is not None:
            return member, "direct"
        found = self.regex.match(receiver)
        if found is not None and receiver[found.end() :].startswith("."):
            rest = receiver[found.end() + 1 :]
            head = re.match(r"[A-Za-z_][A-Za-z0-9_]*", rest)
            if head is not None and not rest[head.end() :].startswith("("):
                return head.group(0), "attribute"
        return None


@dataclass(frozen=True)
class RoleRules:
    """All rules of roles.toml. `rules_in` memoises which receiver rules apply where."""

    receivers: tuple[ReceiverRule, ...]
    role_flags: dict[str, dict[str, bool]]  # flag name -> role -> value
    output_receivers: tuple[re.Pattern[str], ...]
    config_receivers: tuple[re.Pattern[str], ...]
    algorithm_enum: str
    worker_packages: tuple[str, ...]
    model_kinds: tuple[tuple[str, re.Pattern[str], tuple[str, ...]], ...]
    source_hash: str
    registry_calls: tuple[str, ...] = ()
    registry_flags_keyword: str = "flags"
    registry_worker_keyword: str = "worker_cls"
    flag_method: str = "_has_flag"
    _memo: dict[tuple[str, str | None], tuple[ReceiverRule, ...]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def rules_in(self, module: str, class_name: str | None) -> tuple[ReceiverRule, ...]:
        memo_key = (module, class_name)
        found = self._memo.get(memo_key)
        if found is None:
            found = tuple(r for r in self.receivers if r.applies_in(module, class_name))
            self._memo[memo_key] = found
        return found

    def model_kind(self, class_name: str) -> str:
        return self.model_kind_rule(class_name)[0]

    def model_kind_rule(self, class_name: str) -> tuple[str, tuple[str, ...]]:
        """(kind, algorithms it is checked for; empty: all)."""
        for kind, pattern, algorithms in self.model_kinds:
            if pattern.search(class_name):
                return kind, algorithms
        return "target", ()


def _compile(pattern: str) -> re.Pattern[str]:
    parts = [re.escape(p) for p in pattern.split("*")]
    return re.compile(r"[^.]*".join(parts))


@cache
def load_rules() -> RoleRules:
    path = queries_dir() / "roles.toml"
    raw = path.read_bytes()
    data = tomllib.loads(raw.decode("utf-8"))
    receivers = tuple(
        ReceiverRule(
            pattern=r["pattern"],
            role=r["role"],
            modules=tuple(r.get("modules", ["sglang.srt.speculative.*"])),
            classes=tuple(r.get("classes", [])),
            scope=r.get("scope", "worker"),
            regex=_compile(r["pattern"]),
        )
        for r in data.get("receiver", [])
    )
    import hashlib

    flags = {
        f["name"]: {role: bool(f[role]) for role in ("target", "draft") if role in f}
        for f in data.get("role_flag", [])
    }
    return RoleRules(
        receivers=receivers,
        role_flags=flags,
        output_receivers=tuple(_compile(p) for p in data["output"]["receivers"]),
        config_receivers=tuple(_compile(p) for p in data["config"]["receivers"]),
        algorithm_enum=data["algorithms"]["enum"],
        worker_packages=tuple(data["algorithms"]["worker_packages"]),
        model_kinds=tuple(
            (k["kind"], re.compile(k["pattern"]), tuple(k.get("algorithms", ())))
            for k in data.get("model_kind", [])
        ),
        source_hash=hashlib.sha256(raw).hexdigest()[:16],
        registry_calls=tuple(data["algorithms"].get("registry_calls", ())),
        registry_flags_keyword=data["algorithms"].get("registry_flags_keyword", "flags"),
        registry_worker_keyword=data["algorithms"].get("registry_worker_keyword", "worker_cls"),
        flag_method=data["algorithms"].get("flag_method", "_has_flag"),
    )
