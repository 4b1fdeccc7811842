"""The `tracker` command line: parses options, calls one use case, prints, sets the exit code.

Exit codes: 0 success, 1 the requested check failed (`--fail-on`), 2 bad usage or bad
input, with a one-line reason on stderr. Heavy imports happen inside the commands so that
`tracker --help` stays fast.
"""

from __future__ import annotations

import functools
import gc
import logging
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from tracker import __version__
from tracker.errors import TrackerError

if TYPE_CHECKING:
    from tracker.app import Workspace
    from tracker.render import RenderOptions

F = TypeVar("F", bound=Callable[..., Any])

ALGORITHM_HELP = "Algorithm name as in the version's SpeculativeAlgorithm enum (EAGLE3, ...)."


class Failed(Exception):
    """The requested check failed: exit 1 (not an error)."""


# ------------------------------------------------------------------------ plumbing


def _source_options(func: F) -> F:
    """--source/--repo/--no-shipped/--quiet, turned into the `ws` (Workspace) argument."""

    @click.option(
        "--source",
        "source",
        metavar="SOURCE",
        help="Where SGLang comes from: pypi, git:PATH_OR_URL or dir:PATH. "
        "Default: --repo/TRACKER_REPO, the SGLang checkout you are in, else pypi.",
    )
    @click.option(
        "--repo",
        envvar="TRACKER_REPO",
        metavar="PATH_OR_URL",
        help="An SGLang git repository (local path or URL) to read tags from.",
    )
    @click.option(
        "--no-shipped",
        is_flag=True,
        help="Ignore the snapshots shipped with the tool; analyse the source.",
    )
    @click.option("-q", "--quiet", is_flag=True, help="No progress output.")
    @functools.wraps(func)
    def wrapper(
        *args: Any,
        source: str | None,
        repo: str | None,
        no_shipped: bool,
        quiet: bool,
        **kwargs: Any,
    ) -> Any:
        return func(*args, ws=_workspace(source, repo, no_shipped, quiet), **kwargs)

    return wrapper  # type: ignore[return-value]


def _config_option(func: F) -> F:
    """--config, loaded into `ws.accepted` (the breaks the user accepts); goes under
    `_source_options`, which makes the `ws` argument."""

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
        from tracker.accepted import load_accepted

        ws.accepted = load_accepted(config_path, Path.cwd())
        return func(*args, ws=ws, **kwargs)

    return wrapper  # type: ignore[return-value]


def _warn_unknown_accepted(ws: Workspace, algorithms: tuple[str, ...]) -> None:
    """An accepted entry naming an algorithm the versions lack is most likely a typo."""
    if ws.accepted is None:
        return
    for entry in ws.accepted.algorithms_unknown(algorithms):
        click.echo(
            f"tracker: warning: {entry.origin} ({entry.model}): no algorithm "
            f"{entry.algorithm} here ({', '.join(algorithms) or 'none'}); it accepts nothing",
            err=True,
        )


def _format_option(*choices: str) -> Callable[[F], F]:
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(choices),
        default="text",
        show_default=True,
        help="Output format.",
    )


def _render_options(func: F) -> F:
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
        from tracker.render import DEFAULT_LINK, RenderOptions

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
    from tracker.app import Workspace
    from tracker.progress import CliReporter
    from tracker.sources import open_source

    src = open_source(source, repo, Path.cwd())
    return Workspace(src, reporter=CliReporter(quiet=quiet), use_shipped=not no_shipped)


def _emit(text: str, output: Path | None = None) -> None:
    if output is None:
        click.echo(text, nl=False)
        return
    from tracker.atomic import write_text_atomic

    try:
        write_text_atomic(output, text)
    except OSError as exc:  # a full disk or a read-only folder: bad input, not a crash
        raise TrackerError(f"cannot write {output}: {exc.strerror or exc}") from exc
    click.echo(f"wrote {output}", err=True)


def _flush_warnings(ws: Workspace) -> None:
    for w in getattr(ws.source, "warnings", []):
        click.echo(f"tracker: warning: {w}", err=True)


def suggest(name: str, known: list[str]) -> str:
    """ "; did you mean X, Y" for a misspelt or shortened name, else ""."""
    import difflib

    lowered = name.lower()
    near = [k for k in known if lowered in k.lower()][:3]
    near += [k for k in difflib.get_close_matches(name, known, n=3) if k not in near]
    return f"; did you mean {', '.join(near[:3])}" if near else ""


REVERSE_HELP = "Allow OLD to be newer than NEW: compare backwards."


def _reverse_option(func: F) -> F:
    return click.option("--reverse", is_flag=True, help=REVERSE_HELP)(func)


def check_order(old: str, new: str, reverse: bool) -> None:
    """OLD newer than NEW reads every addition as a removal: refused unless asked for."""
    from tracker.versions import parse_version

    before, after = parse_version(old), parse_version(new)
    if reverse or before is None or after is None or before <= after:
        return
    raise TrackerError(
        f"{old} is newer than {new}: give the older version first, or --reverse to "
        "compare backwards"
    )


def _pick_algorithms(available: tuple[str, ...], wanted: tuple[str, ...]) -> tuple[str, ...]:
    if not wanted:
        return available
    upper = tuple(a.upper() for a in wanted)
    unknown = [a for a in upper if a not in available]
    if unknown:
        raise TrackerError(
            f"unknown algorithm {', '.join(unknown)}; this version has "
            f"{', '.join(available) or 'none'}"
        )
    return upper


# --------------------------------------------------------------------------- group


class OneLineUsageError(click.UsageError):
    """A usage error as one line, `tracker: error: ...` like every other error (click's
    own is three: the usage, a hint, the message)."""

    def show(self, file: Any = None) -> None:
        where = self.ctx.command_path if self.ctx is not None else "tracker"
        message = " ".join(self.format_message().split()).removesuffix(".")
        click.echo(f"tracker: error: {message} (see {where} --help)", file=file, err=True)


def _one_line(error: click.UsageError) -> click.UsageError:
    if isinstance(error, (OneLineUsageError, click.exceptions.NoArgsIsHelpError)):
        return error  # already one line / a bare `tracker`, which shows the help
    return OneLineUsageError(error.format_message(), error.ctx)


def command_summary(command: click.Command) -> str:
    """A command's `short_help`, else the first sentence of its help (ended, as click ends
    it, by the first word with a final full stop), never cut short."""
    if command.short_help:
        return " ".join(command.short_help.split())
    paragraph = (command.help or "").strip().split("\n\n")[0]
    words: list[str] = []
    for word in paragraph.split():
        words.append(word)
        if word.endswith("."):
            break
    return " ".join(words)


class TrackerGroup(click.Group):
    """Maps the tool's own failures to exit codes here, so that every way of invoking the
    group (the console script, `python -m tracker`, click's test runner) behaves alike."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Click cuts each summary at a fixed length with "...", whatever the terminal's
        # width; show the whole first sentence and let the formatter wrap it.
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command_summary(command)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:  # the group's own options and arguments
            raise _one_line(exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:  # a command's options and arguments
            raise _one_line(exc) from None
        except Failed:
            ctx.exit(1)
        except TrackerError as exc:
            if os.environ.get("TRACKER_DEBUG"):
                raise
            click.echo(f"tracker: error: {exc}", err=True)
            ctx.exit(exc.exit_code)


@click.group(
    cls=TrackerGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="tracker")
def cli() -> None:
    """What SGLang's speculative decoding algorithms require of model classes, what changed
    between two versions, and which model wrappers break.

    \b
    Versions: v0.5.9, 0.5.9, v0.5.8.post1, latest, ranges v0.5.8..v0.5.12, and for git any
    commit-ish. Sources: the released archives on PyPI (default), a git repository
    (--repo / TRACKER_REPO / the checkout you are in), or a directory (--source dir:PATH).

    \b
    Exit codes: 0 success, 1 a requested check failed, 2 bad usage or input.
    """


@cli.command()
@_source_options
@_format_option("text", "json")
def versions(ws: Workspace, fmt: str) -> None:
    """List the versions a source has, oldest first.

    The package index lists every release with speculative decoding: from v0.4.1.post4,
    the first with a speculative worker."""
    names = ws.source.versions()
    _flush_warnings(ws)
    if fmt == "json":
        from tracker.render import to_json

        _emit(
            to_json(
                {
                    "schema": "sglang-tracker/versions@1",
                    "source": ws.source.describe(),
                    "versions": names,
                }
            )
        )
    else:
        _emit("".join(f"{n}\n" for n in names))


@cli.command()
@_source_options
def fetch(ws: Workspace) -> None:
    """Update a cloned repository's tags (git) or the list of releases (pypi)."""
    fetcher = getattr(ws.source, "fetch", None)
    if fetcher is None:
        raise TrackerError(f"{ws.source.describe()} has nothing to fetch")
    click.echo(fetcher())
    _flush_warnings(ws)


@cli.command()
@click.argument("version")
@click.argument("path")
@_source_options
@_format_option("text", "json")
def facts(
    version: str,
    path: str,
    ws: Workspace,
    fmt: str,
) -> None:
    """Show the facts extracted from one file (for debugging queries).

    PATH is a repo path such as python/sglang/srt/speculative/eagle_worker.py.
    """
    from tracker.factstore import load_facts
    from tracker.factsview import facts_document, facts_text

    src, resolved = ws.resolve(version)
    tree = src.tree(resolved)
    if path not in tree.files:
        near = [p for p in tree.files if p.endswith("/" + path.rsplit("/", 1)[-1])][:3]
        hint = f"; did you mean {', '.join(near)}" if near else ""
        raise TrackerError(f"{resolved} has no file {path}{hint}")
    found = load_facts(tree, [path])[path]
    if fmt == "json":
        from tracker.render import to_json

        _emit(to_json(facts_document(found, resolved)))
    else:
        _emit(facts_text(found, resolved))


@cli.command()
@click.argument("version")
@click.option("-a", "--algorithm", "algorithms", multiple=True, help=ALGORITHM_HELP)
@click.option("--role", type=click.Choice(["target", "draft"]), help="Only this role.")
@_source_options
@_format_option("text", "md", "json")
@_render_options
def interface(
    version: str,
    algorithms: tuple[str, ...],
    role: str | None,
    ws: Workspace,
    fmt: str,
    render_options: RenderOptions,
) -> None:
    """What each algorithm requires of the target and draft models at VERSION."""
    from tracker.render import interface_document, render

    snap = ws.snapshot(version)
    chosen = _pick_algorithms(snap.interface.algorithms, algorithms)
    doc = interface_document(snap.interface, _describe(ws, snap, fmt), chosen, role)
    _flush_warnings(ws)
    _emit(render("interface", fmt, doc, render_options))


@cli.command()
@click.argument("version")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="File to write (default: snapshots/<version>.json in the current directory).",
)
@_source_options
def snapshot(
    version: str,
    output: Path | None,
    ws: Workspace,
) -> None:
    """Write VERSION's interface and compatibility as a snapshot JSON file."""
    from tracker.snapshot import to_json

    # A snapshot is always built from the source (or the cache, unless --no-shipped).
    ws.use_cache, ws.use_shipped = ws.use_shipped, False
    snap = ws.snapshot(version)
    target = output or Path("snapshots") / f"{snap.version}.json"
    _emit(to_json(snap), target)


@cli.command()
@click.argument("old")
@click.argument("new")
@click.option("-a", "--algorithm", "algorithms", multiple=True, help=ALGORITHM_HELP)
@click.option("--all", "show_all", is_flag=True, help="List every model event.")
@click.option(
    "--fail-on",
    type=click.Choice(["breaking", "new-breaks", "any"]),
    help="Exit 1 when the diff has breaking interface changes, new breaks (a wrapper "
    "that broke, or a new one lacking what its inner model or a sibling class provides), "
    "or any change.",
)
@_reverse_option
@_source_options
@_config_option
@_format_option("text", "md", "json")
@_render_options
def diff(
    old: str,
    new: str,
    algorithms: tuple[str, ...],
    show_all: bool,
    fail_on: str | None,
    reverse: bool,
    ws: Workspace,
    fmt: str,
    render_options: RenderOptions,
) -> None:
    """What changed between OLD and NEW: interface members, output fields, and which
    model wrappers broke or were fixed."""
    from tracker.diff import diff as compute
    from tracker.render import diff_document, render

    (osrc, oversion), (nsrc, nversion) = ws.resolve(old), ws.resolve(new)
    check_order(oversion, nversion, reverse)
    a, b = ws.snapshot_of(osrc, oversion), ws.snapshot_of(nsrc, nversion)
    available = tuple(dict.fromkeys(a.interface.algorithms + b.interface.algorithms))
    chosen = _pick_algorithms(available, algorithms)
    _warn_unknown_accepted(ws, available)
    result = compute(a.interface, a.compat, b.interface, b.compat, chosen)
    doc = diff_document(result, _describe_pair(ws, a, b, fmt))
    doc["fix_options"] = ws.fix_options(nsrc, nversion)
    _flush_warnings(ws)
    _emit(render("diff", fmt, doc, replace(render_options, show_all=show_all)))
    # Accepted breaks (tracker.toml) are shown above but fail nothing.
    counted = [c for c in result.changes if not c.accepted]
    if fail_on == "any" and counted:
        raise Failed
    if fail_on == "breaking" and any(c.breaking for c in counted):
        raise Failed
    if fail_on == "new-breaks" and any(c.new_break for c in counted):
        raise Failed


def _describe(ws: Workspace, snap: Any, fmt: str = "text") -> str:
    """The source, and for people (not in JSON, which must not depend on the cache
    state) where the answer came from."""
    source = _source_of(ws, snap)
    if fmt == "json":
        return source
    origin = {"shipped": "shipped snapshot", "cache": "cached"}.get(snap.origin, "analysed")
    return f"{source} ({origin})"


def _describe_pair(ws: Workspace, old: Any, new: Any, fmt: str = "text") -> str:
    """Both sides when they come from different sources (`diff v0.5.9 dir:PATH`)."""
    if _source_of(ws, old) == _source_of(ws, new):
        return _describe(ws, new, fmt)
    return f"{_describe(ws, old, fmt)} → {_describe(ws, new, fmt)}"


def _source_of(ws: Workspace, snap: Any) -> str:
    """The source a snapshot was read from: the command's, unless the version was named as
    a source of its own (`dir:PATH`, `git:PATH@REV`)."""
    identity = snap.source
    if snap.origin != "shipped" and identity.kind in ("dir", "git"):
        own = f"{identity.kind}:{identity.location}"
        if (identity.kind, identity.location) != (ws.source.kind, ws.source.location):
            return own
    return ws.source.describe()


# Commands of the later stages live in their own modules; registering them here keeps
# one entry point.
def _register_more() -> None:
    import importlib

    for name in ("cli_models", "cli_release", "cli_report"):
        try:
            module = importlib.import_module(f"tracker.{name}")
        except ModuleNotFoundError as exc:  # a command module not written yet
            if exc.name != f"tracker.{name}":
                raise
            continue
        module.register(cli)


_register_more()


def main(argv: list[str] | None = None) -> None:
    """Entry point: runs the group and maps failures to exit codes and one-line errors."""
    debug = bool(os.environ.get("TRACKER_DEBUG"))
    # The analysis makes millions of small, acyclic objects (facts are tuples): the
    # default thresholds had full collections take a third of a cold run.
    gc.set_threshold(200_000, 50, 1000)
    # Warnings the pipeline logs (a cache it cannot write, a corrupt entry) read like the
    # tool's own: one line, "tracker: warning: ...".
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("tracker: warning: %(message)s"))
    package_log = logging.getLogger("tracker")
    package_log.addHandler(handler)
    package_log.setLevel(logging.WARNING)
    package_log.propagate = False
    try:
        code = cli.main(args=argv, prog_name="tracker", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("tracker: aborted", err=True)
        sys.exit(2)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2)
    except Failed:
        sys.exit(1)
    except TrackerError as exc:
        if debug:
            raise
        click.echo(f"tracker: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("tracker: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as exc:  # never a traceback for users; TRACKER_DEBUG=1 shows it
        if debug:
            raise
        click.echo(
            f"tracker: internal error: {type(exc).__name__}: {exc} "
            "(set TRACKER_DEBUG=1 for a traceback)",
            err=True,
        )
        sys.exit(2)
    # Without standalone mode click returns the code of `ctx.exit(...)` instead of exiting.
    sys.exit(code if isinstance(code, int) else 0)
