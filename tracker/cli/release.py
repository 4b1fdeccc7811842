"""Release automation commands: changelog, issues, watch, triage.

What a maintainer runs when SGLang publishes a release (the changelog appendix, the issues
for what broke), what a scheduled job runs to keep up (`watch`), and what a user runs with
the `AttributeError` their server died of (`triage`).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from tracker.cli.bisect import NO_BISECT_HELP, broke_in_finder
from tracker.cli.checkpoints import Checkpoints, checkpoint_options
from tracker.cli.options import (
    algorithms_option,
    config_option,
    describe_snapshot,
    emit,
    flush_warnings,
    format_option,
    note_line,
    rendering_options,
    reverse_option,
    say,
    snapshot_pair,
    source_options,
)
from tracker.common.errors import SourceError, TrackerError

if TYPE_CHECKING:
    from contextlib import ExitStack

    from tracker.analysis.compat import Compat
    from tracker.compare.diff import Change
    from tracker.compare.workspace import Workspace
    from tracker.release.triage import ParsedError
    from tracker.release.watch import ReleaseOutcome, Sink, WatchResult
    from tracker.render.documents import RenderOptions
    from tracker.sources.base import Source


# ---------------------------------------------------------------------- changelog


@click.command()
@click.argument("old")
@click.argument("new")
@algorithms_option
@click.option(
    "--all",
    "show_all",
    is_flag=True,
    help="List new and removed classes too, not only their counts.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the appendix to this file instead of stdout.",
)
@click.option("--no-bisect", is_flag=True, help=NO_BISECT_HELP)
@reverse_option
@source_options
@config_option
@format_option("md", "json")
@rendering_options
def changelog(
    old: str,
    new: str,
    algorithms: tuple[str, ...],
    show_all: bool,
    output: Path | None,
    no_bisect: bool,
    reverse: bool,
    ws: Workspace,
    fmt: str,
    render_options: RenderOptions,
) -> None:
    """A markdown appendix for release notes: "Speculative decoding interface changes"
    from OLD to NEW, every site linked at its tag. From a git repository, each broken
    wrapper names the commit between OLD and NEW that broke it (found by bisect; off
    with --no-bisect)."""
    from tracker.compare.diff import diff
    from tracker.release.changelog import changelog_document
    from tracker.render.documents import render

    a, b, nsrc, chosen = snapshot_pair(ws, old, new, algorithms, reverse)
    result = diff(a.interface, a.compat, b.interface, b.compat, chosen)
    broke_in = broke_in_finder(ws, a.version, b.version, (ws.resolve(old)[0], nsrc), no_bisect)
    doc = changelog_document(
        result, b.interface, b.compat, describe_snapshot(ws, b, fmt), show_all, broke_in
    )
    doc["fix_options"] = ws.fix_options(nsrc, b.version)
    flush_warnings(ws)
    emit(render("changelog", fmt, doc, replace(render_options, show_all=show_all)), output)


# ------------------------------------------------------------------------- issues


@click.command()
@click.argument("old")
@click.argument("new")
@algorithms_option
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write one .md file per issue and an issues.json index here.",
)
@click.option("--no-bisect", is_flag=True, help=NO_BISECT_HELP)
@reverse_option
@source_options
@config_option
@format_option("md", "json")
@rendering_options
def issues(
    old: str,
    new: str,
    algorithms: tuple[str, ...],
    out_dir: Path | None,
    no_bisect: bool,
    reverse: bool,
    ws: Workspace,
    fmt: str,
    render_options: RenderOptions,
) -> None:
    """The issues to file for OLD → NEW: one per newly broken (model, algorithm) and one
    per target member newly required or removed, each with a stable fingerprint. From a
    git repository, a model's issue names the commit between OLD and NEW that broke it
    (found by bisect; off with --no-bisect)."""
    from tracker.release.issues import as_markdown, issues_document
    from tracker.release.watch import DirSink, accepted_between, issues_between
    from tracker.render.documents import document_json

    if out_dir is not None:
        from tracker.common.fileset import make_output_dir

        make_output_dir(out_dir)  # before the work: a folder that cannot be made is said at once
    a, b, nsrc, chosen = snapshot_pair(ws, old, new, algorithms, reverse)
    broke_in = broke_in_finder(ws, a.version, b.version, (ws.resolve(old)[0], nsrc), no_bisect)
    docs = issues_between(ws, nsrc, a, b, chosen, render_options, broke_in=broke_in)
    flush_warnings(ws)
    _note_accepted(accepted_between(a, b, chosen))
    if out_dir is not None:
        DirSink(out_dir, overwrite=True).write(docs)
        say(f"wrote {len(docs)} issue{'' if len(docs) == 1 else 's'} and issues.json to {out_dir}")
        return
    if fmt == "json":
        source = describe_snapshot(ws, b, "json")
        emit(document_json(issues_document(docs, a.version, b.version, source)))
        return
    if not docs:
        say(f"tracker: nothing to file for {a.version} → {b.version}")
    emit(as_markdown(docs))


def _note_accepted(changes: list[Change]) -> None:
    for c in changes:
        say(f"tracker: note: not filed, accepted: {c.subject} · {c.algorithm} ({c.accepted})")


# -------------------------------------------------------------------------- watch


@click.command()
@source_options
@config_option
@click.option(
    "--state",
    "state_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The watch state (JSON). Default: one per source and destination in the "
    "cache; keep it somewhere lasting on CI.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write issues as files here...",
)
@click.option(
    "--post",
    metavar="OWNER/REPO",
    help="...or file them on this GitHub repository (token from GITHUB_TOKEN).",
)
@click.option(
    "--api-url",
    envvar="GITHUB_API_URL",
    metavar="URL",
    help="GitHub API base URL (GITHUB_API_URL; default https://api.github.com).",
)
@algorithms_option
@click.option(
    "--since",
    metavar="VERSION",
    help="Handle the releases after VERSION, whatever the state says. For a first run "
    "only: without it, a first run records the newest release and files nothing.",
)
@click.option("--until", metavar="VERSION", help="Stop after this release.")
@click.option(
    "--dry-run",
    is_flag=True,
    help="With --out or --post: print what would be filed, commented and closed there; "
    "send no write request, write no file, leave the state file as it is.",
)
@format_option("text", "json")
@rendering_options
def watch(
    ws: Workspace,
    state_path: Path | None,
    out_dir: Path | None,
    post: str | None,
    api_url: str | None,
    algorithms: tuple[str, ...],
    since: str | None,
    until: str | None,
    dry_run: bool,
    fmt: str,
    render_options: RenderOptions,
) -> None:
    """File issues for every release newer than the last one handled, and close the
    tracker's issues a release fixes. Safe to rerun: each issue is filed exactly once.

    \b
    A scheduled job keeps its state between runs. Once, to start after v0.5.9:
      GITHUB_TOKEN=... tracker watch --post OWNER/REPO --state .tracker/watch.json \\
          --since v0.5.9 -a EAGLE3
    Then on every run (the state says where to go on from; no --since):
      GITHUB_TOKEN=... tracker watch --post OWNER/REPO --state .tracker/watch.json -a EAGLE3
    """
    import contextlib

    from tracker.release.watch import run_watch

    if out_dir is None and post is None and dry_run:
        # A dry run still reads the destination: what is filed there already is not filed.
        raise TrackerError(
            "--dry-run needs the destination it would file to, to leave out what is filed "
            "there already: add --out DIR or --post OWNER/REPO (a dry run needs no token)"
        )
    if (out_dir is None) == (post is None):
        raise TrackerError("give exactly one of --out DIR and --post OWNER/REPO")
    with contextlib.ExitStack() as stack:
        sink = _watch_sink(stack, out_dir, post, api_url, dry_run)
        path = state_path or _default_state(ws.source.describe(), sink.destination)

        def note(message: str) -> None:
            say(f"tracker: {message}")

        def report(outcome: ReleaseOutcome) -> None:
            if fmt == "text":
                for line in _outcome_lines(outcome, sink.destination if dry_run else None):
                    say(line, err=False)

        result = run_watch(
            ws,
            sink,
            path,
            since=since,
            until=until,
            algorithms=algorithms,
            options=render_options,
            on_release=report,
            note=note,
            dry_run=dry_run,
        )
    flush_warnings(ws)
    if fmt == "json":
        emit(_watch_json(ws, sink, result))
    elif not result.recorded_only:
        say(_watch_summary(result, dry_run), err=False)


def _watch_sink(
    stack: ExitStack,
    out_dir: Path | None,
    post: str | None,
    api_url: str | None,
    dry_run: bool,
) -> Sink:
    """The sink `--post` or `--out` names; a GitHub client stays open until `stack` closes.
    A dry run's client is read-only itself (and needs no token), not only its sink."""
    import os

    if post is not None:
        from tracker.release.publish import TOKEN_ENV, GitHubClient
        from tracker.release.watch import GitHubSink

        client = stack.enter_context(
            GitHubClient(post, os.environ.get(TOKEN_ENV), api_url, read_only=dry_run)
        )
        return GitHubSink(client)
    from tracker.common.fileset import check_output_dir
    from tracker.release.watch import DirSink

    assert out_dir is not None
    check_output_dir(out_dir)  # before the work; created when there is something to write
    return DirSink(out_dir)


def _watch_json(ws: Workspace, sink: Sink, result: WatchResult) -> str:
    from tracker.render.documents import document_json

    return document_json(
        {
            "schema": "sglang-tracker/watch@2",
            "source": ws.source.describe(),
            "destination": sink.destination,
            "state": str(result.state_path),
            "started_from": result.started_from,
            "recorded_only": result.recorded_only,
            "dry_run": result.dry_run,
            "releases": [r.to_dict() for r in result.releases],
        }
    )


def _watch_summary(result: WatchResult, dry_run: bool) -> str:
    """The run's last line: how many releases, up to which, and where the state is."""
    last = result.releases[-1].version if result.releases else result.started_from
    state = f"state {result.state_path}" + (" left as it was" if dry_run else "")
    if not result.releases:
        return f"no release after {result.started_from} · {state}"
    return (
        f"{len(result.releases)} release"
        f"{'' if len(result.releases) == 1 else 's'} "
        f"{'looked at (dry run)' if dry_run else 'handled'}, up to {last} · {state}"
    )


def _default_state(source: str, destination: str) -> Path:
    from tracker.common.cachedir import cache_root

    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{source}--{destination}").strip("_")
    return cache_root() / "watch" / f"{slug[-150:]}.json"


def _outcome_lines(outcome: ReleaseOutcome, dry_run_on: str | None = None) -> list[str]:
    """One release's outcome, line by line (each is printed as one line, whatever the
    titles and reasons hold); `dry_run_on` (the destination) says what would be done."""
    if dry_run_on is None:
        filed, closed = "filed", "closed"
    else:
        filed, closed = "to file", "to close"
    lines = [
        f"{outcome.version} (vs {outcome.previous}) · {len(outcome.issues)} issue"
        f"{'' if len(outcome.issues) == 1 else 's'} · {len(outcome.filed)} {filed} · "
        f"{len(outcome.existing)} already filed · {len(outcome.closed)} {closed}"
    ]
    if dry_run_on is None:
        for doc, ref in outcome.filed:
            lines += [f"  + {doc.title}", f"      {ref}"]
        lines += [f"  ✓ closed {t.ref}: {reason}" for t, reason in outcome.closed]
    else:
        action = "comment on and close" if dry_run_on.startswith("github:") else "close"
        for doc, _ in outcome.filed:
            lines += [f"  + would file on {dry_run_on}: {doc.title}"]
            lines += [f"      labels: {', '.join(doc.labels)}"]
        lines += [f"  ✓ would {action} {t.ref}: {reason}" for t, reason in outcome.closed]
    lines += [
        f"  · not filed, accepted: {c.subject} · {c.algorithm} ({c.accepted})"
        for c in outcome.accepted
    ]
    return lines


# ------------------------------------------------------------------------- triage


@click.command()
@click.argument("message")
@click.option(
    "--at",
    "version",
    help="The version the error happened on (default: the one the traceback's file paths "
    "name, else the release whose recorded sites its frames are at, else the latest).",
)
@algorithms_option
@click.option(
    "--until", metavar="VERSION", help="Look for the fixing release no further than this one."
)
@click.option(
    "-m",
    "--model",
    "model",
    metavar="CLASS",
    help="The entry class that was served (an unpack error names none; an AttributeError "
    "may name its inner class).",
)
@checkpoint_options
@source_options
@format_option("text", "json")
@rendering_options
def triage(
    message: str,
    version: str | None,
    algorithms: tuple[str, ...],
    until: str | None,
    model: str | None,
    checkpoints: Checkpoints,
    ws: Workspace,
    fmt: str,
    render_options: RenderOptions,
) -> None:
    """Explain an AttributeError such as "'KimiK25ForConditionalGeneration' object has no
    attribute 'get_embed_and_head'" (MESSAGE: the message, a file holding the traceback, or
    - to read it from stdin): which algorithms require the member, where, since which
    release and until which one it is broken, and the patch. Or "ValueError: too many
    values to unpack (expected 2)" from a forward (with -m CLASS): the aux-hidden-state
    contract finding behind it, its sites and the release that fixes it.

    Without --at, the version is the one the traceback's file paths name, else the newest
    release whose recorded sites of the member (or contract sites) its frames are at;
    when those releases disagree on the class, or none matches, it says in which
    releases the class is broken that way. The patch is written from the version's source
    files: a release's archive is downloaded (once, then cached) even when its snapshot
    ships.

    With --model-config (and --draft-config), the class is the one the release loads for
    the checkpoints, and its check is the one their configs decide."""
    from tracker.compare.snapshot import pick_algorithms
    from tracker.release.triage import parse_error, triage_document
    from tracker.render.documents import render

    text = _message_text(message)
    error = parse_error(text)
    src, resolved, origin, candidates = _triage_version(ws, version, text, error.member)
    if origin != "--at":
        say(f"tracker: note: reading sglang {resolved} ({origin}); --at VERSION picks another")
    snap = ws.snapshot_of(src, resolved)
    chosen = pick_algorithms(
        snap.interface.algorithms, algorithms, aliases=snap.interface.aliases, note=note_line
    )
    interface, compat = snap.interface, snap.compat
    if checkpoints.given:
        from tracker.cli.checkpoint_commands import triage_compat

        interface, compat, model = triage_compat(
            ws,
            src,
            resolved,
            chosen,
            checkpoints,
            error.class_name,
            error.member,
            model,
            interface,
            compat,
        )
    runs = _runs_when_undecided(ws, src, error, model, chosen, origin, candidates)

    def patch_for(check: Any) -> dict[str, Any] | None:
        from tracker.release.issues import patch_document

        return patch_document(ws.analyse(src, resolved), check)

    doc = triage_document(
        error,
        interface,
        compat,
        chosen,
        describe_snapshot(ws, snap, fmt),
        later=_later(ws, src, resolved, until),
        patch_for=patch_for,
        model=model,
        earlier=_earlier(ws, src, resolved),
        fix_options=ws.fix_options(src, resolved),
        candidates=candidates,
        runs=runs,
    )
    doc["version_from"] = origin
    flush_warnings(ws)
    emit(render("triage", fmt, doc, render_options))


def _message_text(message: str) -> str:
    """The error text: MESSAGE itself, stdin for `-`, or the file MESSAGE names."""
    if message == "-":
        return sys.stdin.read()
    if "\n" not in message and len(message) < 4096:
        path = Path(message).expanduser()
        try:
            if path.is_file():
                return path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise TrackerError(f"cannot read {path}: {exc.strerror or exc}") from None
    return message


def _triage_version(
    ws: Workspace, version: str | None, text: str, member: str
) -> tuple[Source, str, str, list[str]]:
    """(source, version, where the version came from, the releases the traceback's frames
    match): --at, else the traceback's file paths, else the newest release that records a
    site of `member` where its frames are, else the latest release."""
    from tracker.release.triage import version_in_paths

    if version is not None:
        return (*ws.resolve(version), "--at", [])
    named = version_in_paths(text)
    if named is not None:
        return (*ws.resolve(named), "from the traceback's file paths", [])
    candidates, origin = _frame_candidates(ws, text, member)
    if candidates:
        return (*ws.resolve(candidates[-1]), origin, candidates)
    try:
        return (*ws.resolve("latest"), "the latest release: the traceback names none", [])
    except SourceError:
        from tracker.compare.workspace import shipped_versions

        shipped = shipped_versions()
        if ws.source.kind != "pypi" or not shipped:
            raise
        return (
            ws.source,
            shipped[-1],
            "the latest release with a shipped snapshot: the traceback names none "
            "and the package index cannot be reached",
            [],
        )


def _frame_candidates(ws: Workspace, text: str, member: str) -> tuple[list[str], str]:
    """The releases whose shipped snapshots record a site of `member` where the
    traceback's frames are, and how to say so; ([], "") when no frame is at one."""
    from tracker.compare.snapshot import recorded_sites, shipped_dir
    from tracker.release.triage import frames_in, releases_matching

    frames = frames_in(text)
    releases = _recorded_releases(ws) if frames else []
    recorded = {v: recorded_sites(shipped_dir() / f"{v}.json") for v in releases}
    found, at = releases_matching(frames, recorded, member)
    if not found:
        return [], ""
    sites = ", ".join(f"{f.path.removeprefix('python/sglang/srt/')}:{f.line}" for f in at)
    what = f"sites of {member}" if member else "aux-hidden-state contract sites"
    if len(found) == 1:
        return found, f"the traceback's frames match its {what}: {sites}"
    span = f"{found[0]} … {found[-1]}" if len(found) > 2 else " and ".join(found)
    return found, (
        f"the newest of the {len(found)} releases whose {what} match the traceback's "
        f"frames ({sites}): {span}"
    )


def _recorded_releases(ws: Workspace) -> list[str]:
    """The releases of the source with a shipped snapshot, oldest first: every one for the
    package index, those tagged for a repository; none for a directory."""
    from tracker.compare.workspace import shipped_versions

    if ws.source.kind == "pypi":
        return shipped_versions()
    if ws.source.kind != "git":
        return []
    try:
        tags = set(ws.source.versions())
    except SourceError:
        return []
    return [v for v in shipped_versions() if v in tags]


def _runs_when_undecided(
    ws: Workspace,
    src: Source,
    error: ParsedError,
    model: str | None,
    algorithms: tuple[str, ...],
    origin: str,
    candidates: list[str],
) -> list[dict[str, str]]:
    """Without a version given, when the frames matched no release or releases that
    disagree on the class: the runs of releases in which it is broken the way the error
    says, for "broken in vX, fixed in vY; pass --at". Empty when the version read is the
    answer (given, named by the paths, the one release the frames match, or releases
    that all agree)."""
    from tracker.release.triage import broken_runs

    name = model or (error.class_name if error.form in ("object", "class") else "")
    given = origin in ("--at", "from the traceback's file paths")
    if given or not name or src is not ws.source or len(candidates) == 1:
        return []

    def read(versions: list[str]) -> Iterator[tuple[str, Compat]]:
        for v in versions:
            yield v, ws.snapshot_of(src, v).compat

    if candidates:
        among = broken_runs(error, name, algorithms, read(candidates))
        agree = not among or (
            len(among) == 1
            and (among[0]["first"], among[0]["last"]) == (candidates[0], candidates[-1])
        )
        if agree:
            return []
    return broken_runs(error, name, algorithms, read(_recorded_releases(ws)))


def _earlier(ws: Workspace, src: Source, version: str) -> Iterator[tuple[str, Compat]]:
    """(version, compat) of the releases before `version`, newest first, read lazily."""
    from tracker.sources.versions import parse_version, sort_versions

    here = parse_version(version)
    if here is None or src is not ws.source:
        return
    try:
        known = sort_versions(src.versions())
    except SourceError as exc:
        ws.feedback.warn(f"cannot list the releases before {version}: {exc}")
        return
    for name in reversed(known):
        v = parse_version(name)
        if v is not None and v < here:
            yield name, ws.snapshot_of(src, name).compat


def _later(
    ws: Workspace, src: Source, version: str, until: str | None
) -> Iterator[tuple[str, Compat]]:
    """(version, compat) of the releases after `version`, oldest first, read lazily."""
    from tracker.sources.versions import parse_version

    here = parse_version(version)
    if here is None or src is not ws.source:
        return
    try:
        known = src.versions()
        limit = parse_version(src.resolve(until)) if until is not None else None
    except SourceError as exc:
        ws.feedback.warn(f"cannot list the releases after {version}: {exc}")
        return
    for name in known:
        v = parse_version(name)
        if v is None or v <= here or (limit is not None and v > limit):
            continue
        yield name, ws.snapshot_of(src, name).compat


def register(group: click.Group) -> None:
    for command in (changelog, issues, watch, triage):
        group.add_command(command)
