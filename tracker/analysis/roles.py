"""The role rules (`queries/roles.toml`): which receiver expressions are the target or the
draft model, where. Data, so a renamed receiver in a new release is a one-line change."""

from __future__ import annotations

import fnmatch
import hashlib
import re
import tomllib
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from tracker.common.errors import TrackerError
from tracker.common.resources import queries_dir
from tracker.extract.facts import Cond


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
class CaptureHook:
    """One `[[capture_hook]]`: the member an algorithm calls on the target to choose the
    layers whose hidden states its forward returns, what the capture state it drives is
    named like, and the tuple the decoder returns when capturing (aux list last)."""

    hook: str
    state: re.Pattern[str]
    returns: tuple[str, ...]


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
    # Structural kind markers: ("generative" | "pooling", class names constructed).
    kind_markers: tuple[tuple[str, frozenset[str]], ...] = ()
    draft_models: DraftModelRules = field(default_factory=lambda: DraftModelRules())
    # (class name, attribute): instances of the class hold the model in the attribute.
    holders: tuple[tuple[str, str], ...] = ()
    # Receivers whose tests change from batch to batch ([runtime]).
    runtime_receivers: tuple[re.Pattern[str], ...] = ()
    # The hooks through which algorithms ask the target for aux hidden states ([[capture_hook]]),
    # in the order a runner prefers them.
    capture_hooks: tuple[CaptureHook, ...] = ()
    # Memos of answers derived from the rules: `init=False`, so `dataclasses.replace` (other
    # rules) starts them empty instead of sharing the old rules' answers.
    _memo: dict[tuple[str, str | None], tuple[ReceiverRule, ...]] = field(
        default_factory=dict, compare=False, repr=False, init=False
    )
    _touched: dict[tuple[str, str | None, str, str], tuple[ReceiverRule, str, str] | None] = field(
        default_factory=dict, compare=False, repr=False, init=False
    )
    _markers: dict[str, frozenset[str]] = field(
        default_factory=dict, compare=False, repr=False, init=False
    )

    def rules_in(self, module: str, class_name: str | None) -> tuple[ReceiverRule, ...]:
        memo_key = (module, class_name)
        found = self._memo.get(memo_key)
        if found is None:
            found = tuple(r for r in self.receivers if r.applies_in(module, class_name))
            self._memo[memo_key] = found
        return found

    def touched(
        self, module: str, class_name: str | None, receiver: str, member: str
    ) -> tuple[ReceiverRule, str, str] | None:
        """(the first rule that applies here and whose model `receiver.member` touches,
        member on the model, "direct"|"attribute"), or None. Memoised: the same receiver
        texts recur at thousands of sites, in every version."""
        memo_key = (module, class_name, receiver, member)
        if memo_key in self._touched:
            return self._touched[memo_key]
        found = None
        for rule in self.rules_in(module, class_name):
            touched = rule.member_of(receiver, member)
            if touched is not None:
                found = rule, touched[0], touched[1]
                break
        if len(self._touched) >= 200_000:  # a long range of versions: start afresh
            self._touched.clear()
        self._touched[memo_key] = found
        return found

    def is_runtime(self, cond: Cond) -> bool:
        """Every name the test reads is a per-batch object (`[runtime]`)."""
        if cond.op in ("and", "or", "not"):
            return bool(cond.args) and all(self.is_runtime(a) for a in cond.args)
        if cond.op == "call":
            if cond.text in ("getattr", "hasattr", "isinstance") and cond.args:
                return self.is_runtime(cond.args[0])
            return self._runtime_text(cond.text.rpartition(".")[0])
        if cond.op == "ref":
            return self._runtime_text(cond.text)
        if cond.op == "cmp" and cond.args:
            rest = [
                a
                for a in cond.args[1:]
                if a.op not in ("str", "other", "seq")
                and not (a.op == "ref" and a.text[:1].isupper())
            ]
            return self.is_runtime(cond.args[0]) and all(self.is_runtime(a) for a in rest)
        return False

    def _runtime_text(self, text: str) -> bool:
        while text:
            if any(p.fullmatch(text) for p in self.runtime_receivers):
                return True
            text = text.rpartition(".")[0]
        return False

    def model_kind(self, class_name: str) -> str:
        return self.model_kind_rule(class_name)[0]

    def model_kind_rule(self, class_name: str) -> tuple[str, tuple[str, ...]]:
        """(kind, algorithms it is checked for; empty: all)."""
        found = self.name_rule(class_name)
        return (found[0], found[2]) if found is not None else ("target", ())

    def name_rule(
        self, class_name: str, kinds: frozenset[str] | None = None
    ) -> tuple[str, str, tuple[str, ...]] | None:
        """The first name rule (among those of `kinds`) that matches: (kind, pattern,
        algorithms)."""
        for kind, pattern, algorithms in self.model_kinds:
            if (kinds is None or kind in kinds) and pattern.search(class_name):
                return kind, pattern.pattern, algorithms
        return None

    def markers(self, kind: str) -> frozenset[str]:
        found = self._markers.get(kind)
        if found is None:
            found = frozenset().union(*(names for k, names in self.kind_markers if k == kind))
            self._markers[kind] = found
        return found


@dataclass(frozen=True)
class DraftModelRules:
    """Where a version's code makes the draft checkpoint fall back to the target's, and
    how it refuses a missing draft path (see `[draft_models]` in roles.toml)."""

    draft_worker_keyword: str = "is_draft_worker"
    draft_model_flag: str = "is_draft_model"
    fallback_keyword: str = "model_path"
    fallback_value: re.Pattern[str] = re.compile(r"^model_path or (\w+\.)+model_path$")
    draft_path_attribute: str = "speculative_draft_model_path"
    refusal_calls: re.Pattern[str] = re.compile(r"(Error|Exception)$")
    any_generative: tuple[str, ...] = ()


MODEL_KINDS = ("target", "draft", "embedding", "reward", "classification")
MARKER_KINDS = ("generative", "pooling")


def _compile(pattern: str) -> re.Pattern[str]:
    parts = [re.escape(p) for p in pattern.split("*")]
    return re.compile(r"[^.]*".join(parts))


@cache
def load_rules() -> RoleRules:
    path = queries_dir() / "roles.toml"
    return rules_from_text(path.read_bytes(), path.name)


def rules_from_text(raw: bytes, where: str = "roles.toml") -> RoleRules:
    """The rules from the text of a roles.toml; an unknown key, a value of the wrong type,
    a bad pattern or enum value is a TrackerError that names the file and the entry."""
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise TrackerError(f"{where}: {exc}") from exc
    unknown = sorted(set(data) - set(_SECTIONS))
    if unknown:
        raise TrackerError(
            f"{where}: unknown section {unknown[0]!r} (known: {', '.join(_SECTIONS)})"
        )
    for name, is_array in _SECTIONS.items():
        if name in data and isinstance(data[name], list) != is_array:
            form = f"[[{name}]] entries" if is_array else f"one [{name}] table"
            raise TrackerError(f"{where}: {name} must be {form}")
    output = _receivers_table(data.get("output"), f"{where}: [output]")
    config = _receivers_table(data.get("config"), f"{where}: [config]")
    algorithms = _algorithms(data.get("algorithms"), f"{where}: [algorithms]")
    return RoleRules(
        receivers=_receivers(data.get("receiver", []), where),
        role_flags=_role_flags(data.get("role_flag", []), where),
        output_receivers=output,
        config_receivers=config,
        algorithm_enum=str(algorithms["enum"]),
        worker_packages=tuple(algorithms["worker_packages"]),
        model_kinds=_model_kinds(data.get("model_kind", []), where),
        source_hash=hashlib.sha256(raw).hexdigest()[:16],
        registry_calls=tuple(algorithms.get("registry_calls", ())),
        registry_flags_keyword=algorithms.get("registry_flags_keyword", "flags"),
        registry_worker_keyword=algorithms.get("registry_worker_keyword", "worker_cls"),
        flag_method=algorithms.get("flag_method", "_has_flag"),
        kind_markers=_kind_markers(data.get("kind_marker", []), where),
        draft_models=_draft_models(data.get("draft_models", {}), where),
        holders=_holders(data.get("model_holder", []), where),
        runtime_receivers=_receivers_table(data.get("runtime"), f"{where}: [runtime]")
        if "runtime" in data
        else (),
        capture_hooks=_capture_hooks(data.get("capture_hook", []), where),
    )


# ------------------------------------------------------------------- validation

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _entry(
    raw: object, where: str, allowed: dict[str, type], required: tuple[str, ...]
) -> dict[str, Any]:
    """One table of the file, its keys and value types checked."""
    if not isinstance(raw, dict):
        raise TrackerError(f"{where}: expected a table")
    for name, value in raw.items():
        if name not in allowed:
            raise TrackerError(
                f"{where}: unknown key {name!r} (known: {', '.join(sorted(allowed))})"
            )
        expected = allowed[name]
        items = value if expected is list and isinstance(value, list) else None
        if not isinstance(value, expected) or (
            items is not None and not all(isinstance(i, str) for i in items)
        ):
            wanted = "a list of strings" if expected is list else f"a {expected.__name__}"
            raise TrackerError(f"{where}: {name} must be {wanted}")
    for name in required:
        if name not in raw:
            raise TrackerError(f"{where}: {name} is missing")
    return raw


# Every section of the file; True: an array of tables (`[[receiver]]`).
_SECTIONS = {
    "receiver": True,
    "role_flag": True,
    "output": False,
    "config": False,
    "algorithms": False,
    "model_kind": True,
    "kind_marker": True,
    "draft_models": False,
    "model_holder": True,
    "runtime": False,
    "capture_hook": True,
}
RECEIVER_ROLES = ("target", "draft", "runner")
RECEIVER_SCOPES = ("worker", "runner")
FLAG_ROLES = ("target", "draft")
# A receiver pattern: dotted names, each maybe indexed or called (`runners[*]`, `f(*)`),
# or `*` for any one name.
_RECEIVER = re.compile(
    r"(\*|[A-Za-z_]\w*)(\[[^.\]]*\]|\([^.)]*\))*"
    r"(\.(\*|[A-Za-z_]\w*)(\[[^.\]]*\]|\([^.)]*\))*)*"
)
_MODULE_GLOB = re.compile(r"[A-Za-z_*?\[][\w.*?\[\]!]*")


def _one_of(value: str, allowed: tuple[str, ...], name: str, at: str) -> str:
    if value not in allowed:
        raise TrackerError(f"{at}: {name} {value!r} is not one of {', '.join(allowed)}")
    return value


def _receiver_pattern(pattern: str, at: str) -> str:
    if not _RECEIVER.fullmatch(pattern):
        raise TrackerError(f"{at}: bad receiver pattern {pattern!r} (dotted names, `*` for one)")
    return pattern


def _names(values: list[str], what: str, shape: re.Pattern[str], at: str) -> tuple[str, ...]:
    bad = [v for v in values if not shape.fullmatch(v)]
    if not values or bad:
        raise TrackerError(f"{at}: {what} (got {bad or values})")
    return tuple(values)


def _receivers(raw: list[Any], where: str) -> tuple[ReceiverRule, ...]:
    out = []
    for n, item in enumerate(raw, 1):
        at = f"{where}: [[receiver]] #{n}"
        entry = _entry(
            item,
            at,
            {"pattern": str, "role": str, "modules": list, "classes": list, "scope": str},
            ("pattern", "role"),
        )
        pattern = _receiver_pattern(str(entry["pattern"]), at)
        at = f"{at} ({pattern})"
        modules = entry.get("modules", ["sglang.srt.speculative.*"])
        classes = entry.get("classes")
        out.append(
            ReceiverRule(
                pattern=pattern,
                role=_one_of(str(entry["role"]), RECEIVER_ROLES, "role", at),
                modules=_names(modules, "modules must list module globs", _MODULE_GLOB, at),
                classes=()
                if classes is None
                else _names(classes, "classes must list class names", _IDENTIFIER, at),
                scope=_one_of(str(entry.get("scope", "worker")), RECEIVER_SCOPES, "scope", at),
                regex=_compile(pattern),
            )
        )
    return tuple(out)


def _role_flags(raw: list[Any], where: str) -> dict[str, dict[str, bool]]:
    flags: dict[str, dict[str, bool]] = {}
    for n, item in enumerate(raw, 1):
        at = f"{where}: [[role_flag]] #{n}"
        entry = _entry(item, at, {"name": str, "target": bool, "draft": bool}, ("name",))
        name = str(entry["name"])
        if not _IDENTIFIER.fullmatch(name):
            raise TrackerError(f"{at}: name {name!r} is not an attribute name")
        values = {role: bool(entry[role]) for role in FLAG_ROLES if role in entry}
        if not values:
            raise TrackerError(f"{at}: gives no value for {' or '.join(FLAG_ROLES)}")
        if name in flags:
            raise TrackerError(f"{at}: {name} is already declared")
        flags[name] = values
    return flags


def _receivers_table(raw: object, at: str) -> tuple[re.Pattern[str], ...]:
    if raw is None:
        raise TrackerError(f"{at} is missing")
    entry = _entry(raw, at, {"receivers": list}, ("receivers",))
    patterns = [_receiver_pattern(str(p), at) for p in entry["receivers"]]
    if not patterns:
        raise TrackerError(f"{at}: receivers must list at least one pattern")
    return tuple(_compile(p) for p in patterns)


def _algorithms(raw: object, at: str) -> dict[str, Any]:
    if raw is None:
        raise TrackerError(f"{at} is missing")
    entry = _entry(
        raw,
        at,
        {
            "enum": str,
            "worker_packages": list,
            "registry_calls": list,
            "registry_flags_keyword": str,
            "registry_worker_keyword": str,
            "flag_method": str,
        },
        ("enum", "worker_packages"),
    )
    for key in ("enum", "registry_flags_keyword", "registry_worker_keyword", "flag_method"):
        if key in entry and not _IDENTIFIER.fullmatch(entry[key]):
            raise TrackerError(f"{at}: {key} {entry[key]!r} is not a name")
    _names(entry["worker_packages"], "worker_packages must list packages", _MODULE_GLOB, at)
    if entry.get("registry_calls"):
        _names(entry["registry_calls"], "registry_calls must list names", _IDENTIFIER, at)
    return entry


def _regex(pattern: str, where: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise TrackerError(f"{where}: bad pattern {pattern!r}: {exc}") from exc


def _model_kinds(
    raw: list[Any], where: str
) -> tuple[tuple[str, re.Pattern[str], tuple[str, ...]], ...]:
    out = []
    for n, item in enumerate(raw, 1):
        at = f"{where}: [[model_kind]] #{n}"
        entry = _entry(
            item, at, {"kind": str, "pattern": str, "algorithms": list}, ("kind", "pattern")
        )
        kind = str(entry["kind"])
        if kind not in MODEL_KINDS:
            raise TrackerError(f"{at}: kind {kind!r} is not one of {', '.join(MODEL_KINDS)}")
        algorithms = tuple(str(a) for a in entry.get("algorithms", []))
        if algorithms and kind != "draft":
            raise TrackerError(f"{at}: only a draft rule names algorithms")
        out.append((kind, _regex(str(entry["pattern"]), at), algorithms))
    return tuple(out)


def _kind_markers(raw: list[Any], where: str) -> tuple[tuple[str, frozenset[str]], ...]:
    out = []
    for n, item in enumerate(raw, 1):
        at = f"{where}: [[kind_marker]] #{n}"
        entry = _entry(item, at, {"kind": str, "constructs": list}, ("kind", "constructs"))
        kind = str(entry["kind"])
        if kind not in MARKER_KINDS:
            raise TrackerError(f"{at}: kind {kind!r} is not one of {', '.join(MARKER_KINDS)}")
        names = [str(c) for c in entry["constructs"]]
        bad = [c for c in names if not _IDENTIFIER.fullmatch(c)]
        if not names or bad:
            raise TrackerError(f"{at}: constructs must list class names (got {bad or names})")
        out.append((kind, frozenset(names)))
    return tuple(out)


def _draft_models(raw: object, where: str) -> DraftModelRules:
    at = f"{where}: [draft_models]"
    entry = _entry(
        raw,
        at,
        {
            "draft_worker_keyword": str,
            "draft_model_flag": str,
            "fallback_keyword": str,
            "fallback_value": str,
            "draft_path_attribute": str,
            "refusal_calls": str,
            "any_generative": list,
        },
        (),
    )
    defaults = DraftModelRules()
    return DraftModelRules(
        draft_worker_keyword=str(entry.get("draft_worker_keyword", defaults.draft_worker_keyword)),
        draft_model_flag=str(entry.get("draft_model_flag", defaults.draft_model_flag)),
        fallback_keyword=str(entry.get("fallback_keyword", defaults.fallback_keyword)),
        fallback_value=_regex(
            str(entry.get("fallback_value", defaults.fallback_value.pattern)), at
        ),
        draft_path_attribute=str(entry.get("draft_path_attribute", defaults.draft_path_attribute)),
        refusal_calls=_regex(str(entry.get("refusal_calls", defaults.refusal_calls.pattern)), at),
        any_generative=tuple(str(a) for a in entry.get("any_generative", [])),
    )


def _holders(raw: list[Any], where: str) -> tuple[tuple[str, str], ...]:
    out = []
    for n, item in enumerate(raw, 1):
        at = f"{where}: [[model_holder]] #{n}"
        entry = _entry(item, at, {"class": str, "attribute": str}, ("class", "attribute"))
        for name in ("class", "attribute"):
            if not _IDENTIFIER.fullmatch(str(entry[name])):
                raise TrackerError(f"{at}: {name} {entry[name]!r} is not a name")
        out.append((str(entry["class"]), str(entry["attribute"])))
    return tuple(out)


def _capture_hooks(raw: list[Any], where: str) -> tuple[CaptureHook, ...]:
    out = []
    for n, item in enumerate(raw, 1):
        at = f"{where}: [[capture_hook]] #{n}"
        entry = _entry(
            item, at, {"hook": str, "state": str, "returns": list}, ("hook", "state", "returns")
        )
        if not _IDENTIFIER.fullmatch(str(entry["hook"])):
            raise TrackerError(f"{at}: hook {entry['hook']!r} is not a name")
        at = f"{at} ({entry['hook']})"
        try:
            state = re.compile(str(entry["state"]))
        except re.error as exc:
            raise TrackerError(f"{at}: bad state pattern: {exc}") from exc
        returns = entry["returns"]
        _names(returns, "returns must list two or more names", _IDENTIFIER, at)
        if len(returns) < 2:
            raise TrackerError(f"{at}: returns must list two or more names (got {returns})")
        out.append(CaptureHook(str(entry["hook"]), state, tuple(returns)))
    if len({h.hook for h in out}) != len(out):
        raise TrackerError(f"{where}: a [[capture_hook]] is listed twice")
    return tuple(out)
