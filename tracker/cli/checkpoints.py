"""`--model-config`, `--draft-config` and `--override-args`: checkpoints instead of class
names, for check, why, triage and fix.

A checkpoint is a folder holding `config.json`, or that file. Nothing is fetched: a hub id
(`moonshotai/Kimi-K2.5`) is refused in one line that says to pass a local path. The
answer itself is tracker.analysis.checkpoint's; here are the options, reading the files,
the one-line errors, and the releases before and after (which one first registers an
architecture, which one fixes a broken pair).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from tracker.cli.options import suggest
from tracker.common.errors import SourceError, TrackerError

if TYPE_CHECKING:
    from tracker.analysis.checkpoint import Answer
    from tracker.analysis.config_values import CheckpointConfig
    from tracker.compare.workspace import SourceAnalysis, Workspace
    from tracker.sources.base import Source

F = TypeVar("F", bound=Callable[..., Any])

# A config.json larger than this is no config (a weights file given by mistake).
CONFIG_LIMIT = 16 * 1024 * 1024
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)


@dataclass(frozen=True)
class Checkpoints:
    """What the options gave: the paths as typed, and the override arguments."""

    model: str | None = None
    draft: str | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)

    @property
    def given(self) -> bool:
        return self.model is not None or self.draft is not None

    def options(self) -> str:
        """The same options for another command (`tracker fix ...`), quoted for a shell."""
        import shlex

        out = []
        if self.model is not None:
            out.append(f"--model-config {shlex.quote(self.model)}")
        if self.draft is not None:
            out.append(f"--draft-config {shlex.quote(self.draft)}")
        if self.overrides:
            out.append(f"--override-args {shlex.quote(json.dumps(dict(self.overrides)))}")
        return " ".join(out)


def checkpoint_options(func: F) -> F:
    """--model-config/--draft-config/--override-args into the `checkpoints` argument."""

    @click.option(
        "--model-config",
        "model_config",
        metavar="PATH",
        help="The target checkpoint: its folder or its config.json (a local path; nothing "
        "is downloaded). The class the release loads for it is checked.",
    )
    @click.option(
        "--draft-config",
        "draft_config",
        metavar="PATH",
        help="The draft checkpoint (folder or config.json). Without it, the draft is what "
        "the algorithm loads by itself: the target's checkpoint, or nothing.",
    )
    @click.option(
        "--override-args",
        "override_args",
        metavar="JSON",
        help="What you pass as --json-model-override-args, applied where the release applies it.",
    )
    @functools.wraps(func)
    def wrapper(
        *args: Any,
        model_config: str | None,
        draft_config: str | None,
        override_args: str | None,
        **kwargs: Any,
    ) -> Any:
        overrides = parse_overrides(override_args) if override_args is not None else {}
        if overrides and model_config is None and draft_config is None:
            raise TrackerError("--override-args needs --model-config or --draft-config")
        found = Checkpoints(model_config, draft_config, overrides)
        return func(*args, checkpoints=found, **kwargs)

    return wrapper  # type: ignore[return-value]


def parse_overrides(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TrackerError(
            f"--override-args is not valid JSON ({exc.msg}, column {exc.colno})"
        ) from None
    if not isinstance(value, dict):
        raise TrackerError(
            "--override-args must be a JSON object, as --json-model-override-args is"
        )
    return value


def read_config(text: str, role: str, option: str) -> CheckpointConfig:
    """The checkpoint at `text` (a folder or its config.json), or a one-line error."""
    from tracker.analysis.config_values import CheckpointConfig
    from tracker.common.regular import read_regular_text

    path = Path(text).expanduser()
    if path.is_dir():
        path = path / "config.json"
        if not path.exists():
            raise TrackerError(f"{option} {text}: the folder has no config.json")
    elif not path.exists():
        raise TrackerError(_not_found(text, option))
    try:
        raw = read_regular_text(path, CONFIG_LIMIT)
    except UnicodeDecodeError:
        raise TrackerError(f"{option} {path}: not a text file (config.json is JSON)") from None
    except OSError as exc:
        raise TrackerError(f"{option} {path}: cannot read it ({exc.strerror or exc})") from None
    try:
        values = json.loads(raw)
    except RecursionError:
        raise TrackerError(f"{option} {path}: nested too deeply to be a config.json") from None
    except json.JSONDecodeError as exc:
        raise TrackerError(
            f"{option} {path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from None
    if not isinstance(values, dict):
        raise TrackerError(f"{option} {path}: not a JSON object, as a config.json is")
    names = values.get("architectures")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise TrackerError(
            f"{option} {path}: no architectures (a list of class names) to decide the class from"
        )
    return CheckpointConfig(role, str(path), values)


def _not_found(text: str, option: str) -> str:
    if _URL.match(text) or _HUB_ID.match(text):
        return (
            f"{option} {text}: no such local path, and the tracker fetches nothing: download "
            "the checkpoint's config.json and pass its folder or the file"
        )
    return f"{option} {text}: no such file or folder"


def analysed(ws: Workspace, source: Source, version: str) -> SourceAnalysis:
    """The version's analysis: the answer reads its index and its loading code."""
    return ws.analyse(source, version)


def reader(analysis: SourceAnalysis) -> Callable[[str], Any]:
    """Module name -> its facts read in full (the loading code and the model files the
    answer follows are not all read in full by the analysis itself)."""
    from tracker.analysis.loader import module_path
    from tracker.extract.store import load_facts

    tree = analysis.tree

    def read(module: str) -> Any:
        path = module_path(tree, module)
        if path is None:
            return None
        return load_facts(tree, [path])[path]

    return read


def answer_for(
    ws: Workspace, source: Source, version: str, algorithm: str, checkpoints: Checkpoints
) -> Answer:
    """The answer at `version`, or a one-line error naming what cannot be loaded."""
    from tracker.analysis.checkpoint import UnregisteredArchitecture

    try:
        return _answer(ws, source, version, algorithm, checkpoints)
    except UnregisteredArchitecture as exc:
        analysis = analysed(ws, source, version)
        raise TrackerError(_unregistered(ws, source, version, analysis, exc)) from None


def _answer(
    ws: Workspace, source: Source, version: str, algorithm: str, checkpoints: Checkpoints
) -> Answer:
    """The answer; UnregisteredArchitecture when a checkpoint names no registered class."""
    from tracker.analysis.checkpoint import Request, answer
    from tracker.analysis.roles import load_rules

    target = _target(checkpoints)
    draft = read_config(checkpoints.draft, "draft", "--draft-config") if checkpoints.draft else None
    analysis = analysed(ws, source, version)
    request = Request(algorithm, target, draft, checkpoints.overrides)
    read = reader(analysis)
    return answer(analysis.index, analysis.interface, analysis.compat, read, request, load_rules())


def _target(checkpoints: Checkpoints) -> CheckpointConfig:
    if checkpoints.model is None:
        raise TrackerError(
            "--draft-config needs --model-config: the target checkpoint it drafts for"
        )
    return read_config(checkpoints.model, "target", "--model-config")


def _unregistered(
    ws: Workspace, source: Source, version: str, analysis: SourceAnalysis, exc: Any
) -> str:
    choice = exc.choice
    names = list(choice.architectures)
    rewritten = (
        f" (rewritten from {', '.join(choice.given)})" if names != list(choice.given) else ""
    )
    registered = sorted(e.name for e in analysis.compat.entries)
    hint = suggest(names[0], registered) if names else ""
    first = first_registering(ws, source, names)
    since = f"; {first[1]} is first registered in {first[0]}" if first else ""
    return (
        f"{choice.config.path}: sglang {version} registers no class {', '.join(names)}"
        f"{rewritten}{hint}{since}"
    )


def releases(ws: Workspace, source: Source) -> list[str]:
    """The source's releases, oldest first ([] when it cannot list them)."""
    from tracker.sources.versions import sort_versions

    if source is not ws.source:
        return []
    try:
        return sort_versions(source.versions())
    except SourceError:
        return []


def first_registering(ws: Workspace, source: Source, names: list[str]) -> tuple[str, str] | None:
    """(the first release whose stored snapshot registers one of `names`, that name),
    read from the snapshots shipped or cached: no release is analysed for a hint."""
    for version in releases(ws, source):
        snap = ws.stored_snapshot(source, version)
        if snap is None:
            continue
        known = {e.name for e in snap.compat.entries}
        for name in names:
            if name in known:
                return version, name
    return None


def later(ws: Workspace, source: Source, version: str) -> Iterator[str]:
    """The releases after `version`, oldest first."""
    from tracker.sources.versions import parse_version

    here = parse_version(version)
    if here is None:
        return
    for name in releases(ws, source):
        v = parse_version(name)
        if v is not None and v > here:
            yield name


# Later releases analysed at most (those without a stored snapshot to look at first) while
# looking for the one that fixes a pair: each costs seconds, and a pair that stays broken
# would cost minutes.
MAX_ANALYSED = 6


@dataclass(frozen=True)
class FixSearch:
    fixed_in: str  # "" when no release looked at is ok
    looked_until: str  # the last release looked at ("" when none)
    complete: bool  # every later release was looked at


def fixed_in(ws: Workspace, source: Source, found: Answer, checkpoints: Checkpoints) -> FixSearch:
    """The first later release at which the same checkpoints are ok. A release whose
    stored checks of the same classes still lack a member the configs do not drop is
    passed over without an analysis; at most MAX_ANALYSED others are analysed."""
    from tracker.analysis.checkpoint import NOT_NEEDED, UnregisteredArchitecture

    dropped = {(c.role, c.member) for c in found.changes if c.after == NOT_NEEDED}
    analysed_count, last = 0, ""
    for version in later(ws, source, found.version):
        stored = ws.stored_snapshot(source, version) is not None
        if stored and not _may_be_fixed(ws, source, version, found, dropped):
            last = version
            continue
        if not stored:
            if analysed_count >= MAX_ANALYSED:
                return FixSearch("", last, False)
            analysed_count += 1
        try:
            there = _answer(ws, source, version, found.algorithm, checkpoints)
        except UnregisteredArchitecture:
            last = version
            continue  # a class the release no longer registers: not a fix
        except SourceError as exc:  # the release cannot be read (offline, say): stop here
            ws.feedback.warn(f"cannot read {version} to look for the fix: {exc}")
            return FixSearch("", last, False)
        last = version
        if there.status == "ok":
            return FixSearch(version, version, True)
    return FixSearch("", last, True)


def _may_be_fixed(
    ws: Workspace, source: Source, version: str, found: Answer, dropped: set[tuple[str, str]]
) -> bool:
    snap = ws.stored_snapshot(source, version)
    if snap is None:
        return True  # nothing cheap to go by: the answer decides
    for role in found.roles:
        if role.choice is None:
            continue
        check = snap.compat.check_for(role.choice.class_name, found.algorithm, role.role)
        if check is None:
            return False
        if any((role.role, m) not in dropped for m in check.missing):
            return False
    return True


def next_step(ws: Workspace, source: Source, found: Answer, checkpoints: Checkpoints) -> Any:
    """What to do about `found`: the fix command, and for a broken answer the first later
    release at which the same checkpoints are ok."""
    from tracker.render.checkpoint_doc import NextStep

    if found.status != "broken":
        return NextStep()
    command = fix_command_for(ws, source, found, checkpoints)
    search = fixed_in(ws, source, found, checkpoints)
    return NextStep(command, search.fixed_in, True, search.looked_until, search.complete)


def fix_command_for(ws: Workspace, source: Source, found: Answer, checkpoints: Checkpoints) -> str:
    from tracker.render.checkpoint_doc import fix_command

    return fix_command(found, ws.fix_options(source, found.version), checkpoints.options())
