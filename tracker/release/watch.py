"""Watching upstream: for each release newer than the last one handled, diff it against its
predecessor, file an issue per new break, and close the tracker's issues it fixes.

Exactly once, even across crashes: every issue carries a fingerprint, a sink (GitHub or a
directory) is asked what it already holds before anything is filed, and the state file
advances only after a release is fully handled (written atomically). A run killed half-way
redoes that release and finds the issues it had already filed.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Container
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from packaging.version import Version

from tracker.common.atomic import write_text_atomic
from tracker.common.cachedir import cache_root
from tracker.common.errors import TrackerError
from tracker.common.fileset import write_file_set
from tracker.common.lock import held
from tracker.common.regular import read_regular_text
from tracker.compare.diff import Change
from tracker.compare.snapshot import Snapshot, algorithms_of, aliases_of, pick_algorithms
from tracker.compare.workspace import Workspace
from tracker.release.issues import (
    BrokeIn,
    IssueDoc,
    IssueFacts,
    accepted_instead,
    build_issues,
    closed_marker,
    fixed_comment,
    fixed_reason,
    front_matter,
    report_in,
)
from tracker.release.publish import GitHubClient, RemoteIssue
from tracker.render.documents import RenderOptions, document_json
from tracker.sources.base import Source
from tracker.sources.versions import parse_version

STATE_SCHEMA = "sglang-tracker/watch-state@1"
INDEX_SCHEMA = "sglang-tracker/issue-files@1"
INDEX_NAME = "issues.json"
HISTORY_KEPT = 200  # releases remembered in the state file, for people reading it


# -------------------------------------------------------------------------- state


@dataclass
class WatchState:
    source: str
    destination: str
    last_version: str
    history: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> str:
        doc = {
            "schema": STATE_SCHEMA,
            "source": self.source,
            "destination": self.destination,
            "last_version": self.last_version,
            "history": self.history,
        }
        # As on stdout: nothing a terminal showing the file acts on stays raw.
        return document_json(doc)


def load_state(path: Path) -> WatchState | None:
    """The state in `path`, None when there is no file; a file that is not a watch state
    is an error (overwriting it could lose someone's data)."""
    try:
        text = read_regular_text(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise TrackerError(f"cannot read the watch state {path}: {exc.strerror}") from None
    try:
        doc = json.loads(text)
        if not isinstance(doc, dict) or doc.get("schema") != STATE_SCHEMA:
            raise ValueError
        return WatchState(
            str(doc["source"]),
            str(doc["destination"]),
            str(doc["last_version"]),
            list(doc.get("history", [])),
        )
    except (ValueError, KeyError, TypeError):
        raise TrackerError(
            f"{path} is not a tracker watch state ({STATE_SCHEMA}); "
            "move it away or name another --state"
        ) from None


def save_state(path: Path, state: WatchState) -> None:
    write_text_atomic(path, state.to_json())


# -------------------------------------------------------------------------- sinks


@dataclass(frozen=True)
class Tracked:
    """An issue the sink already holds."""

    fingerprint: str
    ref: str  # URL or file path
    open: bool
    report: IssueFacts | None


class Sink(Protocol):
    """Where issues go: the GitHub repository, or a directory of markdown files."""

    destination: str
    # What two runs must not file to at once: the destination, and for GitHub the API
    # server too (one repository name on two servers is two destinations).
    lock_key: str

    def known(self) -> dict[str, Tracked]: ...

    def file(self, issue: IssueDoc) -> str: ...

    def resolve(self, tracked: Tracked, version: str, reason: str) -> None: ...


def _trusted_report(body: str, fingerprint: str) -> IssueFacts | None:
    report = report_in(body)
    # A report edited by hand no longer matches its fingerprint: not acted upon.
    return report if report is not None and report.fingerprint == fingerprint else None


class GitHubSink:
    def __init__(self, client: GitHubClient) -> None:
        self.client = client
        self.destination = f"github:{client.repo}"
        self.lock_key = f"{client.api_url}/repos/{client.repo}"
        self._numbers: dict[str, int] = {}

    def known(self) -> dict[str, Tracked]:
        out: dict[str, Tracked] = {}
        for issue in self.client.tracked_issues():
            fp = issue.fingerprint
            if fp is None:
                continue
            self._numbers[fp] = issue.number
            out[fp] = Tracked(
                fp,
                issue.url or f"#{issue.number}",
                issue.state == "open",
                _trusted_report(issue.body, fp),
            )
        return out

    def file(self, issue: IssueDoc) -> str:
        created: RemoteIssue = self.client.create_issue(issue.title, issue.body, issue.labels)
        self._numbers[issue.fingerprint] = created.number
        return created.url or f"#{created.number}"

    def resolve(self, tracked: Tracked, version: str, reason: str) -> None:
        number = self._numbers[tracked.fingerprint]
        assert tracked.report is not None
        self.client.comment(
            number, fixed_comment(tracked.report, version, reason), marker=closed_marker(version)
        )
        self.client.close_issue(number)


class DirSink:
    """One markdown file per issue plus an `issues.json` index, written as one set
    (common/fileset.py): a full disk changes nothing, and the index is moved into place
    after the files, so a crash between the two leaves an unindexed file that the rerun
    writes again, never an indexed issue without its file."""

    def __init__(self, directory: Path, overwrite: bool = False) -> None:
        self.directory = directory
        self.destination = f"dir:{directory.resolve()}"
        self.lock_key = self.destination
        self.overwrite = overwrite  # `tracker issues` rewrites; `watch` files once

    @property
    def index_path(self) -> Path:
        return self.directory / INDEX_NAME

    def _index(self) -> dict[str, dict[str, Any]]:
        try:
            doc = json.loads(read_regular_text(self.index_path))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            raise TrackerError(f"{self.index_path} is not readable JSON; move it away") from None
        if not isinstance(doc, dict) or doc.get("schema") != INDEX_SCHEMA:
            raise TrackerError(f"{self.index_path} is not a tracker issue index ({INDEX_SCHEMA})")
        return {
            str(e["fingerprint"]): e
            for e in doc.get("issues", [])
            if isinstance(e, dict) and "fingerprint" in e
        }

    def _write_index(self, entries: dict[str, dict[str, Any]]) -> None:
        write_file_set(self.directory, {INDEX_NAME: self._index_text(entries)})

    def _index_text(self, entries: dict[str, dict[str, Any]]) -> str:
        ordered = sorted(
            entries.values(),
            key=lambda e: (e.get("report", {}).get("version", ""), e.get("file", "")),
        )
        doc = {"schema": INDEX_SCHEMA, "issues": ordered}
        # As on stdout: nothing a terminal showing the file acts on stays raw.
        return document_json(doc)

    def known(self) -> dict[str, Tracked]:
        out = {}
        for fp, e in self._index().items():
            report = None
            if isinstance(e.get("report"), dict):
                try:
                    report = IssueFacts(
                        **{
                            k: str(e["report"][k])
                            for k in ("kind", "algorithm", "role", "subject", "version", "previous")
                        }
                    )
                except KeyError:
                    report = None
            if report is not None and report.fingerprint != fp:
                report = None
            out[fp] = Tracked(
                fp,
                str(self.directory / str(e.get("file", ""))),
                e.get("state", "open") == "open",
                report,
            )
        return out

    def file(self, issue: IssueDoc) -> str:
        return self.write([issue])[0]

    def write(self, issues: list[IssueDoc]) -> list[str]:
        """The issues' files and the index as one set: all of them or none, the index
        last."""
        entries = self._index()
        files: dict[str, str] = {}
        for issue in issues:
            name = _file_name(issue)
            files[name] = front_matter(issue)
            previous = entries.get(issue.fingerprint, {})
            entries[issue.fingerprint] = {
                "fingerprint": issue.fingerprint,
                "title": issue.title,
                "labels": list(issue.labels),
                "file": name,
                "report": issue.report.to_dict(),
                "state": previous.get("state", "open"),
                **({k: previous[k] for k in ("fixed_in", "fixed_reason") if k in previous}),
            }
        files[INDEX_NAME] = self._index_text(entries)
        write_file_set(self.directory, files, last=INDEX_NAME)
        return [str(self.directory / name) for name in files if name != INDEX_NAME]

    def resolve(self, tracked: Tracked, version: str, reason: str) -> None:
        entries = self._index()
        entry = entries.get(tracked.fingerprint)
        if entry is None:
            return
        entry.update({"state": "closed", "fixed_in": version, "fixed_reason": reason})
        self._write_index(entries)


class DryRunSink:
    """Another sink's stand-in for `watch --dry-run`: reads what it holds, writes nothing.
    What it would file counts as filed for the releases after (so a later release that
    fixes it shows that it would close it), and what it would close as closed."""

    def __init__(self, inner: Sink) -> None:
        self.inner = inner
        self.destination = inner.destination
        self.lock_key = inner.lock_key
        self._filed: dict[str, Tracked] = {}
        self._closed: set[str] = set()

    def known(self) -> dict[str, Tracked]:
        out = {**self.inner.known(), **self._filed}
        for fp in self._closed & set(out):
            out[fp] = replace(out[fp], open=False)
        return out

    def file(self, issue: IssueDoc) -> str:
        ref = f"not filed (dry run) on {self.destination}"
        self._filed[issue.fingerprint] = Tracked(issue.fingerprint, ref, True, issue.report)
        return ref

    def resolve(self, tracked: Tracked, version: str, reason: str) -> None:
        self._closed.add(tracked.fingerprint)


def _file_name(issue: IssueDoc) -> str:
    r = issue.report
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{r.version}-{r.algorithm}-{r.subject}")
    return f"{slug}-{issue.fingerprint[:8]}.md"


# ---------------------------------------------------------------------- releases


@dataclass
class ReleaseOutcome:
    version: str
    previous: str
    issues: list[IssueDoc] = field(default_factory=list)
    filed: list[tuple[IssueDoc, str]] = field(default_factory=list)
    existing: list[tuple[IssueDoc, str]] = field(default_factory=list)
    closed: list[tuple[Tracked, str]] = field(default_factory=list)
    accepted: list[Change] = field(default_factory=list)  # would be filed; accepted instead

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "previous": self.previous,
            "filed": [
                {"fingerprint": d.fingerprint, "title": d.title, "ref": ref}
                for d, ref in self.filed
            ],
            "existing": [
                {"fingerprint": d.fingerprint, "title": d.title, "ref": ref}
                for d, ref in self.existing
            ],
            "closed": [
                {"fingerprint": t.fingerprint, "ref": t.ref, "reason": reason}
                for t, reason in self.closed
            ],
            "accepted": [
                {
                    "kind": c.kind,
                    "algorithm": c.algorithm,
                    "subject": c.subject,
                    "reason": c.accepted,
                }
                for c in self.accepted
            ],
        }


@dataclass
class WatchResult:
    state_path: Path
    started_from: str
    releases: list[ReleaseOutcome] = field(default_factory=list)
    recorded_only: bool = False  # first run: the newest release recorded, nothing filed
    dry_run: bool = False  # nothing was filed, closed or written


def issues_between(
    ws: Workspace,
    source: Source,
    old: Snapshot,
    new: Snapshot,
    algorithms: tuple[str, ...],
    options: RenderOptions,
    known: Container[str] = (),
    broke_in: BrokeIn | None = None,
) -> list[IssueDoc]:
    """The issues of the diff old → new; the new version is analysed only when a wrapper
    not yet filed (`known`) has an inner model to delegate to (for the fix patch).
    `broke_in` names the commit that broke a model (see build_issues)."""
    from tracker.compare.diff import diff

    result = diff(old.interface, old.compat, new.interface, new.compat, algorithms)
    return build_issues(
        result,
        old.interface,
        new.interface,
        new.compat,
        source=source.describe(),
        options=options,
        analysis=lambda: ws.analyse(source, new.version),
        known=known,
        fix_options=ws.fix_options(source, new.version),
        broke_in=broke_in,
        source_options=ws.source_options(source),
    )


def accepted_between(old: Snapshot, new: Snapshot, algorithms: tuple[str, ...]) -> list[Change]:
    """The changes old → new that would be filed but that the user accepted."""
    from tracker.compare.diff import diff

    result = diff(old.interface, old.compat, new.interface, new.compat, algorithms)
    return accepted_instead(result, new.compat)


def handle_release(
    ws: Workspace,
    sink: Sink,
    previous: str,
    version: str,
    wanted: tuple[str, ...],
    options: RenderOptions,
) -> ReleaseOutcome:
    source = ws.source
    old, new = ws.snapshot_of(source, previous), ws.snapshot_of(source, version)
    algorithms = pick_algorithms(
        algorithms_of(old, new), wanted, skip_unknown=True, aliases=aliases_of(old, new)
    )
    outcome = ReleaseOutcome(version, previous)
    known = sink.known()
    outcome.issues = issues_between(ws, source, old, new, algorithms, options, known)
    outcome.accepted = accepted_between(old, new, algorithms)
    for issue in outcome.issues:
        found = known.get(issue.fingerprint)
        if found is not None:
            outcome.existing.append((issue, found.ref))
            continue
        ref = sink.file(issue)
        outcome.filed.append((issue, ref))
    for tracked in known.values():
        report = tracked.report
        if not tracked.open or report is None or report.algorithm not in algorithms:
            continue
        reason = fixed_reason(report, new.interface, new.compat)
        if reason is not None:
            sink.resolve(tracked, version, reason)
            outcome.closed.append((tracked, reason))
    return outcome


def _releases(source: Source, say: Callable[[str], None]) -> list[str]:
    # A git source is fetched first: the tags published since the last run are the point.
    if source.kind == "git":
        say(source.fetch())
    versions = source.versions()
    if not versions:
        raise TrackerError(f"{source.describe()} lists no releases")
    return versions


def _first_run_note(state_path: Path, newest: str, dry_run: bool) -> str:
    # A first run without --since files nothing: a new watch would otherwise file every
    # break of every release in the source's history at once.
    return (
        f"no watch state in {state_path}: {'would record' if dry_run else 'recorded'} "
        f"{newest} as the starting point and filed nothing; the next run handles the "
        "releases after it (or give --since VERSION to start earlier)"
    )


def _matching_state(state_path: Path, source: Source, sink: Sink) -> WatchState | None:
    """The state in `state_path`, refused when it records another source or destination
    (resuming from it would skip or refile another pair's releases)."""
    state = load_state(state_path)
    if state is not None and (state.source, state.destination) != (
        source.describe(),
        sink.destination,
    ):
        raise TrackerError(
            f"{state_path} records {state.source} → {state.destination}, not "
            f"{source.describe()} → {sink.destination}; name another --state"
        )
    return state


def _since_start(
    source: Source,
    since: str,
    state: WatchState | None,
    state_path: Path,
    say: Callable[[str], None],
) -> str:
    """The release `--since` names, warning when it moves a recorded state's position."""
    start = source.resolve(since)
    if state is not None and state.last_version != start:
        say(
            f"--since {start} overrides {state_path}, which had reached "
            f"{state.last_version}: the releases after {start} are handled again "
            "(issues already filed are found, not filed twice); leave --since out of "
            "scheduled runs"
        )
    return start


def _window(
    source: Source, start: str, until: str | None, versions: list[str]
) -> tuple[Version, str, Version | None]:
    """The parsed start, the last release in reach and its parsed bound (None without
    `--until`: every newer release is in reach); an empty or reversed window is an error."""
    begin = parse_version(start)
    if begin is None:
        raise TrackerError(f"{start} is not a release version; --since wants one")
    last = source.resolve(until) if until is not None else versions[-1]
    end = parse_version(last) if until is not None else None
    if end is not None and end < begin:
        raise TrackerError(
            f"--since {start} is newer than --until {last}: nothing to watch "
            "(releases are handled oldest first)"
        )
    return begin, last, end


def _check_algorithms(ws: Workspace, last: str, algorithms: tuple[str, ...]) -> None:
    # Checked against the newest release in reach, so a typo fails before any work.
    known = ws.snapshot_of(ws.source, last).interface
    unknown = [a for a in algorithms if a.upper() not in known.algorithms]
    if unknown:
        raise TrackerError(
            f"unknown algorithm {', '.join(unknown)}; {known.version} has "
            f"{', '.join(known.algorithms)}"
        )


def _history_entry(outcome: ReleaseOutcome) -> dict[str, Any]:
    return {
        "version": outcome.version,
        "previous": outcome.previous,
        "filed": len(outcome.filed),
        "existing": len(outcome.existing),
        "closed": len(outcome.closed),
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def run_watch(
    ws: Workspace,
    sink: Sink,
    state_path: Path,
    *,
    since: str | None = None,
    until: str | None = None,
    algorithms: tuple[str, ...] = (),
    options: RenderOptions | None = None,
    on_release: Callable[[ReleaseOutcome], None] | None = None,
    note: Callable[[str], None] | None = None,
    dry_run: bool = False,
) -> WatchResult:
    """Handle the releases after the state's last one (or `since`). With `dry_run`,
    the sink only reads and the state file is neither written nor created. Refused while
    another run uses the same state file or files to the same destination on this machine:
    both would file the same issues."""
    if dry_run:
        return _run_watch(
            ws, sink, state_path, since, until, algorithms, options, on_release, note, True
        )
    destination = hashlib.sha1(sink.lock_key.encode(), usedforsecurity=False).hexdigest()
    with (
        held(state_path.with_name(f"{state_path.name}.lock"), f"the watch state {state_path}"),
        held(cache_root() / "locks" / f"watch-{destination[:16]}.lock", sink.destination),
    ):
        return _run_watch(
            ws, sink, state_path, since, until, algorithms, options, on_release, note, False
        )


def _run_watch(
    ws: Workspace,
    sink: Sink,
    state_path: Path,
    since: str | None,
    until: str | None,
    algorithms: tuple[str, ...],
    options: RenderOptions | None,
    on_release: Callable[[ReleaseOutcome], None] | None,
    note: Callable[[str], None] | None,
    dry_run: bool,
) -> WatchResult:
    options = options or RenderOptions()
    say = note or (lambda _: None)
    if dry_run:
        sink = DryRunSink(sink)

    def save(state: WatchState) -> None:
        if not dry_run:
            save_state(state_path, state)

    source = ws.source
    versions = _releases(source, say)
    state = _matching_state(state_path, source, sink)
    if since is not None:
        start = _since_start(source, since, state, state_path, say)
    elif state is not None:
        start = state.last_version
    else:
        newest = versions[-1]
        save(WatchState(source.describe(), sink.destination, newest))
        say(_first_run_note(state_path, newest, dry_run))
        return WatchResult(state_path, newest, recorded_only=True, dry_run=dry_run)
    begin, last, end = _window(source, start, until, versions)
    if algorithms:
        _check_algorithms(ws, last, algorithms)
    result = WatchResult(state_path, start, dry_run=dry_run)
    if state is None:
        # Recorded at once, so a run with nothing to do still leaves its starting point.
        state = WatchState(source.describe(), sink.destination, start)
        save(state)
    for i, version in enumerate(versions):
        here = parse_version(version)
        if here is None or here <= begin or (end is not None and here > end):
            continue
        outcome: ReleaseOutcome | None = None
        if i == 0:
            say(f"{version} has no earlier release to compare with; skipped")
        else:
            outcome = handle_release(ws, sink, versions[i - 1], version, algorithms, options)
            result.releases.append(outcome)
            state.history.append(_history_entry(outcome))
            del state.history[:-HISTORY_KEPT]
        # Only now is the release done: a crash before this line redoes it next time.
        state.last_version = version
        save(state)
        if outcome is not None and on_release is not None:
            on_release(outcome)
    return result
