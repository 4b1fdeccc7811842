"""From an `AttributeError` a user hit to the answer: which algorithms require that member
of that class, where, whether the class is broken at that version, which later release fixes
it, and the patch when its inner model has the member. From the `ValueError: too many values
to unpack (expected 2)` of a forward that unpacks aux hidden states its decoder never
returned: which aux-hidden-state contract finding explains it, with its sites.

This is the seed's question asked the other way round: not "what breaks?" but "why did my
server crash?".
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tracker.analysis.compat import Compat, ModelCheck, natural_role
from tracker.analysis.contract import ContractFinding, ContractRule
from tracker.analysis.interface import FieldUse, Interface, Requirement
from tracker.common.errors import TrackerError
from tracker.compare.snapshot import RecordedSite
from tracker.render.documents import field_doc, finding_doc, requirement_doc

SCHEMA = "sglang-tracker/triage@3"

_NAME = r"[A-Za-z_][\w.]*"
# Python's three wordings, with the 3.10+ suggestion tail (". Did you mean: 'x'?") allowed.
_FORMS = (
    ("class", re.compile(rf"type object '({_NAME})' has no attribute '(\w+)'")),
    ("module", re.compile(rf"module '({_NAME})' has no attribute '(\w+)'")),
    ("object", re.compile(rf"'({_NAME})' object has no attribute '(\w+)'")),
    # A forward unpacking (hidden_states, aux_hidden_states) from a bare tensor; Python 3.13
    # adds ", got N". Names no class: the class comes from -m or the contract findings.
    ("unpack", re.compile(r"()()(?:too many|not enough) values to unpack \(expected 2\b")),
)


@dataclass(frozen=True)
class ParsedError:
    form: str  # "object" | "class" | "module" | "unpack"
    owner: str  # class name (last dotted part kept as written) or module name; "" (unpack)
    member: str  # "" for an unpack error
    text: str  # the matched line

    @property
    def class_name(self) -> str:
        return self.owner.rpartition(".")[2]


def parse_error(message: str) -> ParsedError:
    """The last `... has no attribute '...'` in `message` (a bare line or a whole
    traceback); TrackerError when there is none."""
    found: tuple[int, str, re.Match[str]] | None = None
    for form, pattern in _FORMS:
        for match in pattern.finditer(message):
            # The wordings never overlap; the last one in a traceback is the crash.
            if found is None or match.start() > found[0]:
                found = (match.start(), form, match)
    if found is None:
        raise TrackerError(
            "cannot read an attribute error or an unpack error from the message; expected "
            "\"'Class' object has no attribute 'member'\" (or the type object / module forms)"
            ' or "ValueError: too many values to unpack (expected 2)"'
        )
    _, form, match = found
    line_start = message.rfind("\n", 0, match.start()) + 1
    line_end = message.find("\n", match.end())
    text = message[line_start : line_end if line_end >= 0 else len(message)].strip()
    return ParsedError(form, match.group(1), match.group(2), text)


# A release's version in a traceback's file paths: an unpacked archive or checkout named
# after it (`.../sglang-0.5.9/python/sglang/...`), an egg (`sglang-0.5.9-py3.11.egg`).
_PATH_VERSION = re.compile(
    r'File "[^"\n]*?\bsglang[-_]v?(\d+\.\d+(?:\.\d+)*(?:\.?post\d+)?)(?=[-_/\\.])'
)


def version_in_paths(traceback: str) -> str | None:
    """The release the traceback's file paths name (the crashing frame's, the last one),
    or None when they name none (an installed package: `site-packages/sglang/...`)."""
    found = _PATH_VERSION.findall(traceback)
    return f"v{found[-1]}" if found else None


@dataclass(frozen=True)
class Frame:
    """A traceback frame in SGLang's code, its file as a repo path."""

    path: str  # python/sglang/srt/...
    line: int
    function: str


_FRAME = re.compile(r'File "([^"\n]+)", line (\d+), in ([^\s]+)')


def frames_in(traceback: str) -> list[Frame]:
    """The traceback's frames in SGLang's files (an installed package, a checkout or an
    unpacked archive alike: the path from its last `sglang/` on), in order."""
    out = []
    for path, line, function in _FRAME.findall(traceback):
        norm = path.replace("\\", "/")
        at = norm.rfind("/sglang/")
        if at >= 0:
            out.append(Frame("python" + norm[at:], int(line), function))
    return out


def releases_matching(
    frames: Sequence[Frame], recorded: Mapping[str, frozenset[RecordedSite]], member: str
) -> tuple[list[str], list[Frame]]:
    """The releases (of `recorded`: version -> its recorded sites, oldest first) that
    record a site of `member` (for an error naming none, a contract finding's site) where
    most of the frames are, and those frames; ([], []) when no frame is at one."""
    best: list[str] = []
    best_frames: list[Frame] = []
    for version, sites in recorded.items():
        hits = [f for f in frames if _at_site(f, sites, member)]
        if not hits or len(hits) < len(best_frames):
            continue
        if len(hits) > len(best_frames):
            best, best_frames = [], hits
        best.append(version)
    return best, best_frames


def _at_site(frame: Frame, sites: frozenset[RecordedSite], member: str) -> bool:
    """The frame is at a recorded site of `member`: same file and line, in a function of
    that name (`__init__` for `EAGLEWorker.__init__`; a contract site records none)."""
    return any(
        name == member
        and path == frame.path
        and line == frame.line
        and (not function or function.rpartition(".")[2] == frame.function)
        for path, line, function, name in sites
    )


def broken_runs(
    error: ParsedError,
    model: str,
    algorithms: tuple[str, ...],
    releases: Iterable[tuple[str, Compat]],
) -> list[dict[str, str]]:
    """The runs of consecutive releases (oldest first) in which `model` is broken the way
    `error` says (lacking its member, or for an unpack error breaking the aux-hidden-state
    contract), each with its first and last release and the release after it ("" while
    the run reaches the newest)."""
    runs: list[dict[str, str]] = []
    current: dict[str, str] | None = None
    for version, compat in releases:
        checks = [compat.check_for(model, a) for a in algorithms]
        broken = any(c is not None and _breaks_so(c, error) for c in checks)
        if broken and current is None:
            current = {"first": version, "last": version, "fixed_in": ""}
            runs.append(current)
        elif broken and current is not None:
            current["last"] = version
        elif current is not None:
            current["fixed_in"] = version
            current = None
    return runs


def _breaks_so(c: ModelCheck, error: ParsedError) -> bool:
    if c.status != "broken":
        return False
    return error.member in c.missing if error.member else bool(c.contract)


def module_path(module: str) -> str:
    """`sglang.srt.models.kimi_k25` -> `python/sglang/srt/models/kimi_k25.py`."""
    return "python/" + module.replace(".", "/") + ".py"


def triage_document(
    error: ParsedError,
    interface: Interface,
    compat: Compat,
    algorithms: tuple[str, ...],
    source: str,
    later: Iterable[tuple[str, Compat]] = (),
    patch_for: Callable[[ModelCheck], dict[str, Any] | None] | None = None,
    model: str | None = None,
    earlier: Iterable[tuple[str, Compat]] = (),
    fix_options: str = "",
    candidates: Sequence[str] = (),
    runs: Sequence[dict[str, str]] = (),
) -> dict[str, Any]:
    """Everything the tracker knows about `error` at `interface.version`.

    `later` yields (version, compat) of the releases after it, oldest first, lazily: it is
    read only as far as needed to find the release that fixes each broken algorithm.
    `model` names the entry class when the error does not (an unpack error) or names an
    inner class (`'Qwen2ForCausalLM' object has no attribute 'capture_aux_hidden_states'`).
    `earlier` yields the releases before it, newest first, as far as needed to find since
    when each is broken. `fix_options` name the version for `tracker fix`. `candidates`
    are the releases a traceback's frames matched (when no version was given), and `runs`
    the releases in which the class is broken the way the error says, when the frames
    could not decide the version (tracker.release.triage.broken_runs).
    """
    version = interface.version
    entries = {e.name: e for e in compat.entries}
    models = _models(error, compat, algorithms, model)
    entry = entries.get(models[0]) if len(models) == 1 else None
    role = entry.kind if entry is not None and entry.kind in ("target", "draft") else None
    member = error.member
    for_role, other_roles, fields = _member_uses(interface, member, algorithms, role)
    checks, pending = _checks(error, compat, models, algorithms)
    _date_breaks(checks, pending, member, version, later, earlier)
    chosen = _patch_check(pending, member)
    patch = patch_for(chosen) if chosen is not None and patch_for is not None else None
    suggestions: list[str] = []
    if not models and error.form in ("object", "class"):
        suggestions = difflib.get_close_matches(error.class_name, sorted(entries), n=3)
    return {
        "schema": SCHEMA,
        "error": {"form": error.form, "owner": error.owner, "member": member, "text": error.text},
        "version": version,
        "source": source,
        "algorithms": list(algorithms),
        "models": [
            {"name": n, "kind": entries[n].kind, "path": entries[n].path, "line": entries[n].line}
            for n in models
        ],
        "did_you_mean": suggestions,
        "role": role,
        "requirements": [requirement_doc(r) for r in for_role],
        "other_roles": [requirement_doc(r) for r in other_roles],
        "fields": [field_doc(f) for f in fields],
        "workers": {a: list(interface.workers.get(a, ())) for a in algorithms},
        "checks": checks,
        "fix_command": _fix_command(chosen, version, fix_options),
        "patch": patch,
        "verdict": _contract_verdict(error, models, checks, version)
        or _verdict(error, models, role, for_role, other_roles, fields, checks, version),
        "version_candidates": list(candidates),
        "broken_runs": [dict(r) for r in runs],
    }


def _member_uses(
    interface: Interface, member: str, algorithms: tuple[str, ...], role: str | None
) -> tuple[list[Requirement], list[Requirement], list[FieldUse]]:
    """The requirements on `member` in the class's role, those in the other role (shown
    apart: they do not explain this class's crash), and the output fields and config keys
    named `member`. All empty for an unpack error, which names no member."""
    reqs = [
        r
        for r in interface.requirements
        if member and r.member == member and r.algorithm in algorithms
    ]
    for_role = [r for r in reqs if role is None or r.role == role]
    other_roles = [r for r in reqs if role is not None and r.role != role]
    fields = [
        f
        for f in interface.output_fields + interface.config_keys
        if member and f.name == member and f.algorithm in algorithms
    ]
    return for_role, other_roles, fields


def _checks(
    error: ParsedError, compat: Compat, models: list[str], algorithms: tuple[str, ...]
) -> tuple[list[dict[str, Any]], dict[tuple[str, str], ModelCheck]]:
    """The shown check of each model and algorithm, and the broken ones by (model,
    algorithm)."""
    checks: list[dict[str, Any]] = []
    pending: dict[tuple[str, str], ModelCheck] = {}
    for name in models:
        for c in compat.checks:
            # The class in its kind's own role: a target's row as a draft is not the
            # role the traceback's requirements were chosen for.
            if c.model != name or c.algorithm not in algorithms or c.role != natural_role(c.kind):
                continue
            if c.status == "broken":
                pending[(c.model, c.algorithm)] = c
            checks.append(_check(c, error))
    return checks, pending


def _date_breaks(
    checks: list[dict[str, Any]],
    pending: dict[tuple[str, str], ModelCheck],
    member: str,
    version: str,
    later: Iterable[tuple[str, Compat]],
    earlier: Iterable[tuple[str, Compat]],
) -> None:
    """Fill in each shown check's `fixed_in` and `broken_since`. With nothing broken,
    `later` and `earlier` are not read at all: each release read may mean an analysis."""
    fixed_in = _first_fix(pending, later) if pending else {}
    since = _broken_since(pending, member, version, earlier) if pending else {}
    for shown in checks:
        row = (shown["model"], shown["algorithm"])
        shown["fixed_in"] = fixed_in.get(row, "")
        first, how, before = since.get(row, ("", "", None))
        shown["broken_since"], shown["broken_since_how"] = first, how
        shown["broken_before"] = before


def _fix_command(chosen: ModelCheck | None, version: str, fix_options: str) -> str:
    """The `tracker fix` line for the chosen check ("" without one); EAGLE3 is its
    default algorithm, so only another one is named."""
    if chosen is None:
        return ""
    command = f"tracker fix {chosen.model} {fix_options or f'--at {version}'}"
    if chosen.algorithm != "EAGLE3":
        command += f" --algorithm {chosen.algorithm}"
    return command


def _models(
    error: ParsedError, compat: Compat, algorithms: tuple[str, ...], model: str | None
) -> list[str]:
    """The entry classes the error is about: the one given, the named class, every class
    a named models module registers, or (an unpack error) every class whose contract
    finding explains it."""
    if model is not None:
        registered = sorted(e.name for e in compat.entries)
        if model not in registered:
            near = difflib.get_close_matches(model, registered, n=3)
            hint = f"; did you mean {', '.join(near)}" if near else ""
            raise TrackerError(f"{compat.version} registers no entry class {model}{hint}")
        return [model]
    if error.form == "unpack":
        return sorted(
            {
                c.model
                for c in compat.checks
                if c.algorithm in algorithms and any(_explains(f, error) for f in c.contract)
            }
        )
    if error.form == "module":
        path = module_path(error.owner)
        return sorted(e.name for e in compat.entries if e.path == path)
    name = error.class_name
    return [name] if any(e.name == name for e in compat.entries) else []


def _explains(f: ContractFinding, error: ParsedError) -> bool:
    """Whether a contract finding is what raised `error`: the unpack of a bare tensor, or
    the read of a capture attribute nothing created."""
    rule = ContractRule.of(f.rule)
    if error.form == "unpack":
        return rule.unpacks
    return (
        rule is ContractRule.CAPTURE_ATTRIBUTE_MISSING
        and re.search(rf"\b{re.escape(error.member)}\b", f.message) is not None
    )


def _check(c: ModelCheck, error: ParsedError) -> dict[str, Any]:
    member = error.member
    contract = [
        {
            **finding_doc(f),
            "symptom": ContractRule.of(f.rule).symptom,
            "remedy": ContractRule.of(f.rule).remedy,
            "explains": _explains(f, error),
        }
        for f in c.contract
    ]
    return {
        "model": c.model,
        "algorithm": c.algorithm,
        "role": c.role,
        "status": c.status,
        "missing": list(c.missing),
        "unknown": list(c.unknown),
        "member_missing": bool(member) and member in c.missing,
        "delegations": [
            {"member": d.member, "attribute": d.attribute, "inner_class": d.inner_class}
            for d in c.delegations
        ],
        "contract": contract,
        "contract_matches": any(f["explains"] for f in contract),
        **({"contract_unknown": c.contract_unknown} if c.contract_unknown else {}),
    }


def _first_fix(
    pending: dict[tuple[str, str], ModelCheck], later: Iterable[tuple[str, Compat]]
) -> dict[tuple[str, str], str]:
    found: dict[tuple[str, str], str] = {}
    for version, compat in later:
        for (model, algorithm), _c in pending.items():
            if (model, algorithm) in found:
                continue
            now = compat.check_for(model, algorithm)
            if now is not None and now.status == "ok":
                found[(model, algorithm)] = version
        if len(found) == len(pending):
            break
    return found


def _broken_since(
    pending: dict[tuple[str, str], ModelCheck],
    member: str,
    version: str,
    earlier: Iterable[tuple[str, Compat]],
) -> dict[tuple[str, str], tuple[str, str, dict[str, Any] | None]]:
    """(model, algorithm) -> (the first release of the run of releases, up to `version`, in
    which the class is broken as it is now; how that run began; the break before it).

    "As it is now": lacking `member`; for an error naming no member, broken by the
    aux-hidden-state contract if that is what breaks it now (a class that lacked a member
    before is broken otherwise), else broken. The run began "added" (the class is new
    there), "broke" (it worked before), "changed" (it was broken otherwise before: that
    break, since when and by what, is the third item), or "earliest" (no earlier release
    the source has is without the break)."""
    since = dict.fromkeys(pending, version)
    how: dict[tuple[str, str], str] = {}
    before: dict[tuple[str, str], dict[str, Any]] = {}
    for older, compat in earlier:
        for row, c in pending.items():
            if row in how and (how[row] != "changed" or row in _settled(before)):
                continue
            then = compat.check_for(c.model, row[1])
            broken = then is not None and then.status == "broken"
            if row in how:  # walking back through the break before this one
                if broken and then is not None:
                    before[row]["since"] = older
                else:
                    before[row]["settled"] = True
            elif broken and then is not None and _same_break(c, then, member):
                since[row] = older
            elif broken and then is not None:
                how[row] = "changed"
                before[row] = {
                    "since": older,
                    "missing": list(then.missing),
                    "contract": bool(then.contract),
                }
            elif any(e.name == c.model for e in compat.entries):
                how[row] = "broke"
            else:
                how[row] = "added"
        if len(how) == len(pending) and len(_settled(before)) == len(before):
            break
    return {
        row: (since[row], how.get(row, "earliest"), _public(before.get(row))) for row in pending
    }


def _same_break(now: ModelCheck, then: ModelCheck, member: str) -> bool:
    if member:
        return member in then.missing
    if now.contract and not now.missing:
        return bool(then.contract) and not then.missing
    return True


def _settled(before: dict[tuple[str, str], dict[str, Any]]) -> set[tuple[str, str]]:
    return {row for row, b in before.items() if b.get("settled")}


def _public(before: dict[str, Any] | None) -> dict[str, Any] | None:
    if before is None:
        return None
    return {k: v for k, v in before.items() if k != "settled"}


def _patch_check(pending: dict[tuple[str, str], ModelCheck], member: str) -> ModelCheck | None:
    """The broken check whose patch fixes the most: it must delegate `member`; EAGLE3
    first on a tie, as the seed's case."""
    usable = [
        c
        for c in pending.values()
        if member in c.missing and any(d.member == member for d in c.delegations)
    ]
    if not usable:
        return None
    return max(
        usable,
        key=lambda c: (
            len({d.member for d in c.delegations}),
            c.algorithm == "EAGLE3",
            c.algorithm,
        ),
    )


def _contract_verdict(
    error: ParsedError, models: list[str], checks: list[dict[str, Any]], version: str
) -> str:
    """The verdict when the aux-hidden-state contract explains the error, or when the error
    is an unpack error (which only the contract can explain); "" otherwise."""
    explained = [(c, f) for c in checks for f in c["contract"] if f["explains"]]
    if explained:
        c, f = explained[0]
        names = sorted({x["model"] for x, _ in explained})
        verb = "breaks" if len(names) == 1 else "break"
        return (
            f"{', '.join(names)} {verb} the aux-hidden-state contract "
            f"{c['algorithm']} relies on at {version} ({f['headline']}): {f['message']}"
        )
    if error.form != "unpack":
        return ""
    if not models:
        return (
            f"no entry class at {version} breaks the aux-hidden-state contract in a way "
            "that raises this error, as the tracker reads it; name the class with -m"
        )
    row = checks[0] if checks else None
    if row is None:
        return f"{models[0]} is not checked for the algorithms asked at {version}"
    if row["missing"]:
        return (
            f"{row['model']} lacks {', '.join(row['missing'])} at {version}: it fails "
            "before any forward, and its contract is not checked"
        )
    if row["contract"]:
        return (
            f"{row['model']} breaks the aux-hidden-state contract at {version}, but not "
            f"in a way that raises this error ({row['contract'][0]['headline']})"
        )
    if row.get("contract_unknown"):
        return (
            f"the tracker could not follow {row['model']}'s aux-hidden-state contract at "
            f"{version} ({row['contract_unknown']}); the unpack may come from there"
        )
    return (
        f"{row['model']} keeps the aux-hidden-state contract at {version} as the tracker "
        "reads it; the unpack comes from elsewhere (a patched tree or another version?)"
    )


def _verdict(
    error: ParsedError,
    models: list[str],
    role: str | None,
    reqs: list[Any],
    other_roles: list[Any],
    fields: list[Any],
    checks: list[dict[str, Any]],
    version: str,
) -> str:
    member = error.member
    broken = sorted({c["algorithm"] for c in checks if c["member_missing"]})
    if broken:
        return (
            f"{', '.join(models)} lacks {member}, which {', '.join(broken)} "
            f"require{'s' if len(broken) == 1 else ''} of the {role or 'target'} model "
            f"at {version}"
        )
    if reqs:
        algs = sorted({r.algorithm for r in reqs})
        who = ", ".join(models) if models else f"'{error.owner}'"
        if models:
            return (
                f"{who} provides {member} at {version} as the tracker reads it; "
                f"{', '.join(algs)} require{'s' if len(algs) == 1 else ''} it — the "
                "crash may come from a patched tree or another version"
            )
        return (
            f"{', '.join(algs)} require{'s' if len(algs) == 1 else ''} {member} of the "
            f"{reqs[0].role} model at {version}; {who} is not an entry class "
            "registered there"
        )
    if other_roles:
        roles = sorted({r.role for r in other_roles})
        return (
            f"{member} is required of the {', '.join(roles)} model, not of a {role} "
            f"model, at {version}"
        )
    if fields:
        return (
            f"{member} is read from {fields[0].owner} by "
            f"{', '.join(sorted({f.algorithm for f in fields}))} at {version}: the "
            "forward output (or configuration) lacks it"
        )
    return (
        f"no speculative algorithm at {version} requires {member} of a model; the "
        "error does not come from the interface the tracker knows"
    )
