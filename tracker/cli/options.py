"""What the commands share: the source, config, format and render options, the
`--algorithm` option, writing the output, warnings, and the `Failed` signal (exit 1).

Every line the commands print themselves (notes, warnings, progress, `why`) goes through
`say` or `emit_lines`, which make it one visible line: those lines hold file names, commit
subjects and member names from the analysed code. A rendered report (`emit`) is made
inert by its templates.

Public so that every command module (`basics`, `models`, `release`, `report`) uses the same
option written once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from tracker.common.errors import TrackerError
from tracker.render.inert import visible

if TYPE_CHECKING:
    from tracker.analysis.interface import Interface
    from tracker.compare.workspace import Workspace

F = TypeVar("F", bound=Callable[..., Any])

ALGORITHM_HELP = "Algorithm name as in the version's SpeculativeAlgorithm enum (EAGLE3, ...)."


def algorithms_option(func: F) -> F:
    """-a/--algorithm, repeatable, into the `algorithms` argument (all when not given)."""
    return click.option("-a", "--algorithm", "algorithms", multiple=True, help=ALGORITHM_HELP)(func)


def algorithm_option(default: str | None = "EAGLE3") -> Callable[[F], F]:
    """-a/--algorithm, one name, into the `algorithm` argument; required when there is no
    default."""
    if default is None:
        return click.option("-a", "--algorithm", "algorithm", required=True, help=ALGORITHM_HELP)
    return click.option(
        "-a", "--algorithm", "algorithm", default=default, show_default=True, help=ALGORITHM_HELP
    )


class Failed(Exception):
    """The requested check failed: exit 1 (not an error)."""


# ------------------------------------------------------------------------ plumbing


def source_options(func: F) -> F:
    """--source/--repo/--no-shipped/--quiet, turned into the `ws` (Workspace) argument."""
    return _source_options(func, shipped=True)


def source_only_options(func: F) -> F:
    """--source/--repo/--quiet into `ws`, for a command that reads no snapshot (`fetch`,
    `versions`), where --no-shipped would mean nothing."""
    return _source_options(func, shipped=False)


def _source_options(func: F, shipped: bool) -> F:
    @functools.wraps(func)
    def wrapper(
        *args: Any,
        source: str | None,
        repo: str | None,
        quiet: bool,
        no_shipped: bool = False,
        **kwargs: Any,
    ) -> Any:
        return func(*args, ws=_workspace(source, repo, no_shipped, quiet), **kwargs)

    decorated: Any = wrapper
    options = [
        click.option(
            "--source",
            "source",
            metavar="SOURCE",
            help="Where SGLang comes from: pypi, git:PATH_OR_URL or dir:PATH. "
            "Default: --repo/TRACKER_REPO, the SGLang checkout you are in, else pypi.",
        ),
        click.option(
            "--repo",
            envvar="TRACKER_REPO",
            metavar="PATH_OR_URL",
            help="An SGLang git repository (local path or URL) to read tags from.",
        ),
    ]
    if shipped:
        options.append(
            click.option(
                "--no-shipped",
                is_flag=True,
                help="Ignore the snapshots shipped with the tool; analyse the source.",
            )
        )
    options.append(click.option("-q", "--quiet", is_flag=True, help="No progress output."))
    for option in reversed(options):
        decorated = option(decorated)
    return decorated  # type: ignore[no-any-return]


def config_option(func: F) -> F:
    """--config, loaded into `ws.accepted` (the breaks the user accepts); goes under
    `source_options`, which makes the `ws` argument."""

    @click.option(
        "--config",
        "config_path",
        type=click.Path(dir_okay=False, path_type=Path),
        metavar="PATH",
        help="Accepted breaks ([[accepted]] entries). Default: tracker.toml in the current "
        "directory, else [tool.tracker] in its pyproject.toml.",
    )
    @functools.wraps(func)
    def wrapper(*args: Any, config_path: Path | None, ws: Workspace, **kwargs: Any) -> Any:
        from tracker.compare.accepted import load_accepted

        ws.accepted = load_accepted(config_path, Path.cwd())
        return func(*args, ws=ws, **kwargs)

    return wrapper  # type: ignore[return-value]


def warn_unknown_accepted(ws: Workspace, algorithms: tuple[str, ...]) -> None:
    """An accepted entry naming an algorithm the versions lack is most likely a typo."""
    if ws.accepted is None:
        return
    for entry in ws.accepted.algorithms_unknown(algorithms):
        say(
            f"tracker: warning: {entry.origin} ({entry.model}): no algorithm "
            f"{entry.algorithm} here ({', '.join(algorithms) or 'none'}); it accepts nothing"
        )


def warn_workerless(interface: Interface, chosen: tuple[str, ...]) -> None:
    """An algorithm the code names but builds no worker for (a fork's placeholder, or a
    worker the analysis cannot find) requires nothing the tool knows of: its "ok" says only
    that, and must not pass unremarked."""
    for algorithm in chosen:
        if not interface.workers.get(algorithm):
            say(
                f"tracker: warning: {algorithm} at {interface.version}: no worker class is "
                "built for it, so nothing it requires is known; every class is ok for it "
                "only in that sense"
            )


def format_option(*choices: str) -> Callable[[F], F]:
    """--format, one of `choices`; the first is the default."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(choices),
        default=choices[0],
        show_default=True,
        help="Output format.",
    )


def rendering_options(func: F) -> F:
    """--template-dir/--link-pattern, turned into the `render_options` argument."""

    @click.option(
        "--template-dir",
        type=click.Path(file_okay=False, path_type=Path),
        help="Directory whose templates override the built-in ones.",
    )
    @click.option(
        "--link-pattern",
        metavar="PATTERN",
        help="URL of a source line; {tag}, {path} and {line} are filled in.",
    )
    @functools.wraps(func)
    def wrapper(
        *args: Any, template_dir: Path | None, link_pattern: str | None, **kwargs: Any
    ) -> Any:
        from tracker.render.documents import DEFAULT_LINK, RenderOptions

        pattern = link_pattern or DEFAULT_LINK
        try:  # a bad pattern is bad input, found before any work is done
            pattern.format(tag="v0", path="p", line=1)
        except (KeyError, IndexError, ValueError) as exc:
            raise TrackerError(
                f"bad --link-pattern {pattern!r} ({exc!r}): use {{tag}}, {{path}} and {{line}}"
            ) from exc
        options = RenderOptions(link_pattern=pattern, template_dir=template_dir)
        return func(*args, render_options=options, **kwargs)

    return wrapper  # type: ignore[return-value]


def _workspace(source: str | None, repo: str | None, no_shipped: bool, quiet: bool) -> Workspace:
    from tracker.cli.progress import CliFeedback
    from tracker.compare.workspace import Workspace
    from tracker.sources import open_source

    src = open_source(source, repo, Path.cwd())
    return Workspace(src, feedback=CliFeedback(quiet=quiet), use_shipped=not no_shipped)


def say(message: str, err: bool = True) -> None:
    """One line of the tool's own (a note, a warning, progress), on stderr unless `err` is
    off, with every control character in it written out: no text it quotes can move the
    cursor, set the title or start a line of its own."""
    click.echo(visible(message), err=err)


def emit_lines(lines: list[str], output: Path | None = None) -> None:
    """A command's output built line by line (not by a template), each made visible."""
    emit("".join(visible(line) + "\n" for line in lines), output)


def emit(text: str, output: Path | None = None) -> None:
    if output is None:
        click.echo(text, nl=False)
        return
    from tracker.common.atomic import write_text_atomic

    try:
        write_text_atomic(output, text)
    except OSError as exc:  # a full disk or a read-only folder: bad input, not a crash
        raise TrackerError(f"cannot write {output}: {exc.strerror or exc}") from exc
    say(f"wrote {output}")


def note_line(message: str) -> None:
    """One line on stderr that says how a request was read (`NEXTN runs as EAGLE`)."""
    click.echo(f"tracker: note: {message}", err=True)


def flush_warnings(ws: Workspace) -> None:
    for w in ws.source.warnings:
        say(f"tracker: warning: {w}")


def suggest(name: str, known: list[str]) -> str:
    """ "; did you mean X, Y" for a misspelt or shortened name, else ""."""
    import difflib

    lowered = name.lower()
    near = [k for k in known if lowered in k.lower()][:3]
    near += [k for k in difflib.get_close_matches(name, known, n=3) if k not in near]
    return f"; did you mean {', '.join(near[:3])}" if near else ""


REVERSE_HELP = "Allow OLD to be newer than NEW: compare backwards."


def reverse_option(func: F) -> F:
    return click.option("--reverse", is_flag=True, help=REVERSE_HELP)(func)


def check_order(old: str, new: str, reverse: bool) -> None:
    """OLD newer than NEW reads every addition as a removal: refused unless asked for."""
    from tracker.sources.versions import parse_version

    before, after = parse_version(old), parse_version(new)
    if reverse or before is None or after is None or before <= after:
        return
    raise TrackerError(
        f"{old} is newer than {new}: give the older version first, or --reverse to "
        "compare backwards"
    )


def snapshot_pair(
    ws: Workspace, old: str, new: str, algorithms: tuple[str, ...], reverse: bool = False
) -> Any:
    """(old snapshot, new snapshot, new version's source, chosen algorithms) for the
    commands that compare two versions; the new one's files are parsed while the old one
    is analysed (Workspace.snapshots_of)."""
    from tracker.compare.snapshot import algorithms_of, aliases_of, pick_algorithms

    osrc, oversion = ws.resolve(old)
    nsrc, nversion = ws.resolve(new)
    check_order(oversion, nversion, reverse)
    a, b = ws.snapshots_of([(osrc, oversion), (nsrc, nversion)])
    available = algorithms_of(a, b)
    chosen = pick_algorithms(available, algorithms, aliases=aliases_of(a, b), note=note_line)
    warn_unknown_accepted(ws, available)
    return a, b, nsrc, chosen


def describe_snapshot(ws: Workspace, snap: Any, fmt: str = "text") -> str:
    """The source, and for people (not in JSON, which must not depend on the cache
    state) where the answer came from."""
    source = _source_of(ws, snap)
    if fmt == "json":
        return source
    if snap.basis:
        return f"{source} ({snap.basis})"
    origin = {"shipped": "shipped snapshot", "cache": "cached"}.get(snap.origin, "analysed")
    return f"{source} ({origin})"


def describe_pair(ws: Workspace, old: Any, new: Any, fmt: str = "text") -> str:
    """Both sides when they come from different sources (`diff v0.5.9 dir:PATH`)."""
    if _source_of(ws, old) == _source_of(ws, new):
        return describe_snapshot(ws, new, fmt)
    return f"{describe_snapshot(ws, old, fmt)} → {describe_snapshot(ws, new, fmt)}"


def _source_of(ws: Workspace, snap: Any) -> str:
    """The source a snapshot was read from: the command's, unless the version was named as
    a source of its own (`dir:PATH`, `git:PATH@REV`)."""
    identity = snap.source
    if snap.origin != "shipped" and identity.kind in ("dir", "git"):
        own = f"{identity.kind}:{identity.location}"
        if (identity.kind, identity.location) != (ws.source.kind, ws.source.location):
            return own
    return ws.source.describe()
