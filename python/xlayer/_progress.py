"""A progress bar of simulated time, drawn with rich on stderr, shown only for runs that last.

The API and the CLI advance a run in steps (about 1/100 of its duration) and call a progress
callback ``callback(now_s, end_s)`` after each step. :class:`ProgressBar` is such a callback: it
draws nothing until the run has taken ``delay_s`` of wall-clock time, so quick runs print no bar.
"""

from __future__ import annotations

import time
from typing import Callable, Optional

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

#: ``callback(now_s, end_s)``, called as simulated time advances.
ProgressCallback = Callable[[float, float], None]


class ProgressBar:
    """Progress callback drawing ``simulated s / total s`` on stderr once a run lasts ``delay_s``."""

    def __init__(self, label: str = "simulating", *, delay_s: float = 0.5,
                 console: Optional[Console] = None) -> None:
        self._label = label
        self._delay_s = delay_s
        self._console = console if console is not None else Console(stderr=True)
        self._started = time.monotonic()
        self._progress: Optional[Progress] = None
        self._task: Optional[TaskID] = None

    def __call__(self, now_s: float, end_s: float) -> None:
        if self._progress is None:
            if now_s >= end_s or time.monotonic() - self._started < self._delay_s:
                return
            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                TextColumn("{task.completed:.1f} / {task.total:.1f} s simulated"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=self._console,
                transient=True,
            )
            self._task = self._progress.add_task(self._label, total=end_s, completed=now_s)
            self._progress.start()
        assert self._task is not None
        self._progress.update(self._task, completed=now_s)

    def close(self) -> None:
        """Removes the bar (if it was ever drawn)."""
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def __enter__(self) -> "ProgressBar":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
