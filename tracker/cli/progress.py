"""Progress and warnings on the terminal (stderr), quiet when not a TTY or with --quiet;
each line made visible (`say`): a warning may quote a file name from the analysed tree."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from tracker.cli.options import say
from tracker.compare.workspace import Feedback


class CliFeedback(Feedback):
    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet
        self.interactive = not quiet and sys.stderr.isatty()
        self._bar: Any = None

    def phase(self, message: str) -> None:
        if self.interactive:
            say(f"tracker: {message}")

    def warn(self, message: str) -> None:
        say(f"tracker: warning: {message}")

    def progress(self, label: str) -> Callable[[int, int], None] | None:
        if not self.interactive:
            return None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        state: dict[str, Any] = {}

        def update(done: int, total: int) -> None:
            if total == 0:
                return
            if "bar" not in state:
                bar = Progress(
                    "[progress.description]{task.description}",
                    BarColumn(),
                    MofNCompleteColumn(),
                    TimeElapsedColumn(),
                    transient=True,
                )
                bar.start()
                state["bar"] = bar
                state["task"] = bar.add_task(label, total=total)
            state["bar"].update(state["task"], completed=done)
            if done >= total:
                state["bar"].stop()

        return update
