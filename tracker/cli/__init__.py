"""The `tracker` command line: parses options, calls one use case, prints, sets the exit code.

Exit codes: 0 success, 1 the requested check failed (`--fail-on`), 2 bad usage or bad
input, with a one-line reason on stderr. Heavy imports happen inside the commands so that
`tracker --help` stays fast.

The group and the entry point live here; the commands in one module per group (`basics`,
`models`, `release`, `report`), their shared options in `options`.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import signal
import sys
import threading
import traceback
from types import FrameType
from typing import Any

import click

from tracker import __version__
from tracker.cli import basics, bisect, models, release, report
from tracker.cli.options import Failed, say
from tracker.cli.stream import install_whole_stdout
from tracker.common.cachedir import sweep_leftovers
from tracker.common.collector import tune_collector
from tracker.common.errors import TrackerError
from tracker.common.lifeline import stop_workers
from tracker.render.inert import visible

# --------------------------------------------------------------------------- group


class OneLineUsageError(click.UsageError):
    """A usage error as one line, `tracker: error: ...` like every other error (click's
    own is three: the usage, a hint, the message)."""

    def show(self, file: Any = None) -> None:
        where = self.ctx.command_path if self.ctx is not None else "tracker"
        message = " ".join(self.format_message().split()).removesuffix(".")
        click.echo(visible(f"tracker: error: {message} (see {where} --help)"), file=file, err=True)


def _one_line(error: click.UsageError) -> click.UsageError:
    if isinstance(error, (OneLineUsageError, click.exceptions.NoArgsIsHelpError)):
        return error  # already one line / a bare `tracker`, which shows the help
    return OneLineUsageError(_range_for_two(error) or error.format_message(), error.ctx)


def _range_for_two(error: click.UsageError) -> str:
    """For `diff A..B` (a command that compares two versions, given a range): the two
    versions it takes instead, else ""."""
    ctx = error.ctx
    if not isinstance(error, click.MissingParameter) or ctx is None or error.param is None:
        return ""
    given = ctx.params.get("old")
    if error.param.name != "new" or not isinstance(given, str) or ".." not in given:
        return ""
    first, _, last = given.partition("..")
    name = ctx.command_path
    return (
        f"{ctx.info_name} compares two versions, not a range: {name} {first or 'OLD'} "
        f"{last or 'NEW'}"
    )


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


class Interrupted(BaseException):
    """Ctrl-C, carried past click, which would turn a KeyboardInterrupt into its `Abort`
    (a blank line, "aborted" and exit 2, the code for bad input)."""


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
        except KeyboardInterrupt:
            raise Interrupted() from None
        except TrackerError as exc:
            if os.environ.get("TRACKER_DEBUG"):
                traceback.print_exc()  # the traceback, and still the error's own exit code
            say(f"tracker: error: {exc}")
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
    Versions: v0.5.9, 0.5.9, v0.5.8.post1, latest, ranges v0.5.8..v0.5.12,
    any commit-ish of a git source, and dir:PATH: a patched tree or an
    unpacked release (tracker check dir:PATH -a EAGLE3).
    Sources: the released archives on PyPI (default), a git repository
    (--repo / TRACKER_REPO / the checkout you are in), or a directory
    (--source dir:PATH).

    \b
    A release's shipped snapshot answers interface, diff, check, matrix,
    history, why, changelog and report without its archive. fix, graph, facts and
    snapshot read the release's source: its archive is downloaded (once,
    then cached) even when its snapshot ships; triage, issues and watch
    download it to print a patch.

    \b
    Exit codes: 0 success, 1 a requested check failed, 2 bad usage or input.
    """


# The commands live in one module per group; registering them here keeps one entry point.
for _module in (basics, bisect, models, release, report):
    _module.register(cli)


class VisibleFormatter(logging.Formatter):
    """A logged warning as one visible line, as `say` prints them: it may name a file of the
    analysed tree."""

    def format(self, record: logging.LogRecord) -> str:
        return visible(super().format(record))


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """Ctrl-C: the workers are killed now (their work is not wanted, and waiting for it is
    what made stopping slow), then the main process unwinds, cleaning up as it goes. A
    worker pool's own thread, finding its workers gone, may fail on the way out (on Python
    3.11, setting a result on a task the unwinding cancelled): nothing it says matters now."""
    threading.excepthook = _silent
    stop_workers()
    raise KeyboardInterrupt


def _silent(args: threading.ExceptHookArgs) -> None:
    return None


# A write the disk refused: the user's to fix (free space, another folder), not a crash.
_WRITE_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS})


def _leave_unwritten(exc: OSError) -> None:
    """One line naming what could not be written, exit 2. An error naming no file came
    from the output stream (a file the tool writes itself is always named)."""
    what = exc.filename if exc.filename is not None else "the standard output"
    say(f"tracker: error: cannot write {what}: {exc.strerror}")
    # What is still buffered for stdout would fail again at exit, with a traceback.
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    sys.exit(2)


def _leave_interrupted() -> None:
    """Exit 130 after one line. The unwinding has removed every temporary file; what is
    left at exit is shutting down worker pools whose workers are already dead, which only
    costs time (and, on Python 3.11, a thread's traceback about a cancelled task)."""
    click.echo("tracker: interrupted", err=True)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(130)


def main(argv: list[str] | None = None) -> None:
    """Entry point: runs the group and maps failures to exit codes and one-line errors."""
    debug = bool(os.environ.get("TRACKER_DEBUG"))
    tune_collector()
    signal.signal(signal.SIGINT, _interrupt)
    install_whole_stdout()
    # Warnings the pipeline logs (a cache it cannot write, a corrupt entry) read like the
    # tool's own: one line, "tracker: warning: ...".
    handler = logging.StreamHandler()
    handler.setFormatter(VisibleFormatter("tracker: warning: %(message)s"))
    package_log = logging.getLogger("tracker")
    package_log.addHandler(handler)
    package_log.setLevel(logging.WARNING)
    package_log.propagate = False
    sweep_leftovers()  # what killed runs left in the cache
    # A failed check (exit 1) and the tool's own errors (exit 2) are mapped by
    # TrackerGroup.invoke, for every way of invoking the group; below is what
    # reaches past it.
    try:
        code = cli.main(args=argv, prog_name="tracker", standalone_mode=False)
        sys.stdout.flush()  # a full disk under a redirected stdout shows here, not at exit
    except click.exceptions.Abort as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):  # Ctrl-C while parsing options
            _leave_interrupted()
        click.echo("tracker: aborted", err=True)
        sys.exit(2)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2)
    except (KeyboardInterrupt, Interrupted):
        _leave_interrupted()
    except BrokenPipeError:
        sys.exit(0)
    except Exception as exc:  # never a traceback for users; TRACKER_DEBUG=1 shows it
        if debug:
            traceback.print_exc()  # and the same exit code as without it
        if isinstance(exc, OSError) and exc.errno in _WRITE_ERRORS:
            _leave_unwritten(exc)
        hint = "" if debug else " (set TRACKER_DEBUG=1 for a traceback)"
        say(f"tracker: internal error: {type(exc).__name__}: {exc}{hint}")
        sys.exit(2)
    # Without standalone mode click returns the code of `ctx.exit(...)` instead of exiting.
    sys.exit(code if isinstance(code, int) else 0)
