"""`tracker bisect`: the commit between two revisions of a git repository that broke (or
fixed) a model, or that changed what an algorithm asks of one member."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from tracker.cli.options import emit, flush_warnings, format_option, say, source_options
from tracker.common.errors import TrackerError

if TYPE_CHECKING:
    from tracker.compare.bisect import CommitHistory
    from tracker.compare.diff import Change
    from tracker.compare.workspace import Workspace
    from tracker.release.issues import BrokeIn
    from tracker.sources.git import CommitInfo


def commit_history(ws: Workspace, old: str, new: str, *, progress: bool) -> CommitHistory:
    """The first-parent commits OLD..NEW of the workspace's git source, probed with one
    line on stderr per commit evaluated (unless `progress` is off)."""
    from tracker.compare.bisect import CommitHistory
    from tracker.sources.git import GitSource

    source = ws.source
    if not isinstance(source, GitSource):
        raise TrackerError(
            f"bisect needs a git repository (--repo PATH); the {source.kind} source "
            "has releases, not commits"
        )
    commits = source.first_parent_path(old, new)
    count = len(commits) - 1

    def probe(commit: CommitInfo, status: str) -> None:
        if progress:
            number = next(i for i, c in enumerate(commits) if c.sha == commit.sha)
            # A progress line stays a line: a subject is cut (the report has it whole).
            subject = commit.subject
            if len(subject) > SUBJECT_LIMIT:
                subject = subject[: SUBJECT_LIMIT - 1] + "…"
            say(f"tracker: bisect: [{number}/{count}] {commit.sha[:10]} {status} «{subject}»")

    return CommitHistory(ws, commits, probe)


# Characters of a commit subject a progress line shows.
SUBJECT_LIMIT = 80


@click.command()
@click.argument("first", metavar="[MODEL]")
@click.argument("second", metavar="OLD..NEW", required=False)
@click.option("-a", "--algorithm", required=True, help="The algorithm (EAGLE3, ...).")
@click.option(
    "--role",
    type=click.Choice(["target", "draft"]),
    default=None,
    help="Check MODEL in this role (default: the role its kind implies).",
)
@click.option(
    "--member",
    metavar="NAME",
    help="Instead of a model: the first commit where a requirement on NAME (a "
    "model member, or a forward-output field such as mm_input_embeds) "
    "appears, disappears or changes.",
)
@source_options
@format_option("text", "json")
def bisect(
    first: str,
    second: str | None,
    algorithm: str,
    role: str | None,
    member: str | None,
    ws: Workspace,
    fmt: str,
) -> None:
    """The first commit from OLD to NEW (first parents, git only) where MODEL's status for
    an algorithm changes: ok → broken, broken → ok, or a new class that appears broken;
    with the members involved and the requirement or provision change that did it.

    \b
    tracker bisect KimiK25ForConditionalGeneration v0.5.8..v0.5.9 -a EAGLE3 --repo R
    tracker bisect --member mm_input_embeds v0.5.8..v0.5.9 -a EAGLE3 --repo R

    A binary search: it assumes the status changes once between OLD and NEW (if it changes
    back and forth, the commit found is one of the changes). OLD and NEW with the same
    status leave nothing to bisect."""
    from tracker.render.documents import render
    from tracker.sources.versions import is_range, range_ends

    if member is not None:
        if second is not None:
            raise TrackerError("give either MODEL or --member NAME, not both")
        model, spec = None, first
        if role is not None:
            raise TrackerError("--role goes with MODEL, not --member")
    else:
        if second is None:
            raise TrackerError("give MODEL and OLD..NEW (or --member NAME OLD..NEW)")
        model, spec = first, second
    if not is_range(spec):
        raise TrackerError(f"{spec} is not a range: write OLD..NEW, e.g. v0.5.8..v0.5.9")
    old, new = range_ends(spec)
    quiet = bool(getattr(ws.feedback, "quiet", False))
    history = commit_history(ws, old, new, progress=not quiet)
    wanted = algorithm.upper()
    if model is not None:
        result = history.bisect_model(model, wanted, role)
    else:
        assert member is not None
        result = history.bisect_member(member, wanted)
    flush_warnings(ws)
    emit(render("bisect", fmt, result.to_doc(ws.source.describe())))


def register(group: click.Group) -> None:
    group.add_command(bisect)


NO_BISECT_HELP = (
    "Git sources: do not bisect OLD..NEW for the commit that broke each model (one "
    "analysis per commit probed, about log2 of the commits between them)."
)


def broke_in_finder(
    ws: Workspace, old: str, new: str, sources: tuple[object, object], no_bisect: bool
) -> BrokeIn | None:
    """For `issues` and `changelog` in git mode: a function naming the commit between OLD
    and NEW that broke a model's change, or None when the versions are not two commits of
    the workspace's git source (or --no-bisect)."""
    from tracker.compare.changes import ChangeKind, kinds_where

    if no_bisect or ws.source.kind != "git" or any(s is not ws.source for s in sources):
        return None
    try:
        history = commit_history(
            ws, old, new, progress=bool(getattr(ws.feedback, "interactive", False))
        )
    except TrackerError as exc:
        ws.feedback.warn(f"cannot name the commits that broke models ({exc})")
        return None
    kinds = kinds_where(group="broke") | {ChangeKind.MODEL_WRAPPER_ADDED_UNSUPPORTED}

    def find(change: Change) -> dict[str, Any] | None:
        if change.kind not in kinds:
            return None
        try:
            result = history.bisect_model(change.subject, change.algorithm, change.role or None)
        except TrackerError as exc:
            ws.feedback.warn(f"cannot bisect {change.subject} ({exc})")
            return None
        if result.found is None:
            return None
        return {
            "commit": result.found.sha,
            "short": result.found.sha[:10],
            "subject": result.found.subject,
            "author": result.found.author,
            "date": result.found.date,
            "transition": result.transition,
            "cause": "; ".join(c.text for c in result.causes),
            "evaluated": result.evaluated,
        }

    return find
