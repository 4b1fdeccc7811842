"""Breaks a project has accepted (`tracker.toml`, or `[tool.tracker]` in `pyproject.toml`):
still reported, marked with their reason, but they fail no `--fail-on` and become no issue.

A filter step between compat and the reports: `mark` returns a compat whose matching
checks carry the reason. The file is validated on load, so a typo is an error that names
the file and the entry instead of a break silently left unaccepted (or accepted).

Which file: `--config PATH` when given; else `tracker.toml` in the current directory; else
`[tool.tracker]` in its `pyproject.toml`. When both exist, `tracker.toml` wins (as
`ruff.toml` does over `pyproject.toml`) and a warning says the other is ignored.
"""

from __future__ import annotations

import logging
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tracker.analysis.compat import Compat
from tracker.common.errors import TrackerError
from tracker.common.regular import read_regular_text
from tracker.sources.versions import parse_version

log = logging.getLogger(__name__)

CONFIG_NAME = "tracker.toml"
PYPROJECT_NAME = "pyproject.toml"
# key -> required; every value is a string.
ENTRY_KEYS = {"model": True, "algorithm": False, "until": False, "reason": True}
EXAMPLE = '[[accepted]] model = "...", reason = "..."'


@dataclass(frozen=True)
class AcceptedBreak:
    """One `[[accepted]]` entry."""

    model: str
    reason: str
    algorithm: str = ""  # "": every algorithm
    until: str = ""  # "": for good; else no longer from this release on
    origin: str = ""  # "tracker.toml: accepted[0]", for messages

    def applies(self, model: str, algorithm: str, version: str) -> bool:
        if model != self.model or (self.algorithm and algorithm != self.algorithm):
            return False
        if not self.until:
            return True
        here, limit = parse_version(version), parse_version(self.until)
        # A commit or a directory (`local`) has no place in release order: an entry that
        # ends at a release is not applied to it rather than hide a break by guessing.
        return here is not None and limit is not None and here < limit


@dataclass(frozen=True)
class AcceptedBreaks:
    """The entries of one configuration file (none when there is no file)."""

    path: Path | None = None
    entries: tuple[AcceptedBreak, ...] = ()

    def reason_for(self, model: str, algorithm: str, version: str) -> str:
        """The reason of the first entry accepting this break at `version`, else ""."""
        for entry in self.entries:
            if entry.applies(model, algorithm, version):
                return entry.reason
        return ""

    def algorithms_unknown(self, known: tuple[str, ...]) -> list[AcceptedBreak]:
        """Entries naming an algorithm none of `known` is: most likely a typo."""
        return [e for e in self.entries if e.algorithm and e.algorithm not in known]


def mark(compat: Compat, accepted: AcceptedBreaks) -> Compat:
    """`compat` with every check that is not ok and that an entry accepts at the compat's
    version marked with that entry's reason. The input is left as it was."""
    if not accepted.entries:
        return compat
    checks = []
    for c in compat.checks:
        reason = (
            "" if c.status == "ok" else accepted.reason_for(c.model, c.algorithm, compat.version)
        )
        checks.append(replace(c, accepted=reason) if reason else c)
    return replace(compat, checks=checks)


# ------------------------------------------------------------------------- loading


def load_accepted(config: Path | None, cwd: Path) -> AcceptedBreaks:
    """The accepted breaks from `config` (a `tracker.toml`-like file, or a
    `pyproject.toml` whose `[tool.tracker]` is read), else from `cwd`'s files."""
    if config is not None:
        doc = _read(config)
        if config.name == PYPROJECT_NAME:
            table = (
                doc.get("tool", {}).get("tracker") if isinstance(doc.get("tool"), dict) else None
            )
            if not isinstance(table, dict):
                raise TrackerError(f"{config} has no [tool.tracker] table")
            return AcceptedBreaks(config, parse_config(table, f"{config} [tool.tracker]"))
        return AcceptedBreaks(config, parse_config(doc, str(config)))
    own, pyproject = cwd / CONFIG_NAME, cwd / PYPROJECT_NAME
    table = _tool_table(pyproject) if pyproject.is_file() else None
    if own.is_file():
        if table is not None:
            log.warning(
                "%s takes precedence; the [tool.tracker] table of %s is ignored",
                CONFIG_NAME,
                PYPROJECT_NAME,
            )
        return AcceptedBreaks(own, parse_config(_read(own), CONFIG_NAME))
    if table is not None:
        return AcceptedBreaks(pyproject, parse_config(table, f"{PYPROJECT_NAME} [tool.tracker]"))
    return AcceptedBreaks()


# A configuration is a few lines; this much is something else (or /dev/zero behind a link).
MAX_CONFIG_BYTES = 64 * 1024 * 1024


def _read(path: Path) -> dict[str, Any]:
    try:
        # Not a FIFO (it would block) nor a device (it could be endless).
        text = read_regular_text(path, MAX_CONFIG_BYTES)
    except OSError as exc:
        raise TrackerError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise TrackerError(f"{path} is not valid TOML: {exc}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TrackerError(f"{path} is not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses once per level of nested arrays and tables
        raise TrackerError(f"{path} nests arrays or tables too deeply to read") from None


def _tool_table(pyproject: Path) -> dict[str, Any] | None:
    tool = _read(pyproject).get("tool")
    table = tool.get("tracker") if isinstance(tool, dict) else None
    if table is not None and not isinstance(table, dict):
        raise TrackerError(f"{pyproject}: tool.tracker must be a table")
    return table


def parse_config(doc: Mapping[str, Any], where: str) -> tuple[AcceptedBreak, ...]:
    """The `[[accepted]]` entries of a configuration document; `where` names the file in
    errors."""
    unknown = sorted(set(doc) - {"accepted"})
    if unknown:
        raise TrackerError(f"{where}: unknown key {', '.join(unknown)} (known: accepted)")
    entries = doc.get("accepted", [])
    if not isinstance(entries, list):
        raise TrackerError(f"{where}: accepted must be an array of tables ({EXAMPLE})")
    return tuple(_entry(e, f"{where}: accepted[{i}]") for i, e in enumerate(entries))


def _entry(raw: Any, where: str) -> AcceptedBreak:
    if not isinstance(raw, dict):
        raise TrackerError(f"{where} must be a table ({EXAMPLE})")
    model = raw.get("model")
    # Every message names the entry by index and, when it has a usable one, its model.
    label = f"{where} ({model})" if isinstance(model, str) and model else where
    unknown = sorted(set(raw) - set(ENTRY_KEYS))
    if unknown:
        raise TrackerError(
            f"{label}: unknown key {', '.join(unknown)} (known: {', '.join(ENTRY_KEYS)})"
        )
    values: dict[str, str] = {}
    for key, required in ENTRY_KEYS.items():
        value = raw.get(key)
        if value is None:
            if required:
                raise TrackerError(f"{label}: {key} is missing")
            continue
        if not isinstance(value, str):
            raise TrackerError(f"{label}: {key} must be a string, not {type(value).__name__}")
        if not value.strip():
            raise TrackerError(f"{label}: {key} is empty")
        values[key] = value.strip()
    until = values.get("until", "")
    if until and parse_version(until) is None:
        raise TrackerError(f"{label}: until {until!r} is not a release version (such as v0.5.10)")
    return AcceptedBreak(
        values["model"], values["reason"], values.get("algorithm", "").upper(), until, where
    )
