"""Progress bars drawn with rich on stderr, shown only for work that lasts.

The API and the CLI advance a run in steps (about 1/100 of its duration) and call a progress
callback ``callback(now_s, end_s)`` after each step. :class:`ProgressBar` is such a callback: it
draws nothing until the run has taken ``delay_s`` of wall-clock time, so quick runs print no bar.

:class:`StepProgress` is the same for work done in named steps (``xlayer plot`` and ``xlayer
report``: loading a sweep, drawing each plot): ``callback(done, total, what)``. :class:`StatusLine`
is a line of text for work of unknown length (``xlayer oracle``'s solves): ``callback(text)``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, Optional

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

if TYPE_CHECKING:
    from rich.status import Status

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
            # rich annotates add_task's completed as int, but stores it in Task.completed, a
            # float, as update(completed=) takes it; adding at 0 and updating instead would add
            # a progress sample and change the time-remaining estimate.
            self._task = self._progress.add_task(
                self._label, total=end_s, completed=now_s)  # type: ignore[arg-type]
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


#: ``callback(done, total, what)``: ``done`` of ``total`` steps finished, ``what`` is under way
#: (``total`` 0 while the number of steps is not known yet).
StepCallback = Callable[[int, int, str], None]


class _Delayed:
    """What :class:`StepProgress` and :class:`StatusLine` share: a rich display on stderr
    (:meth:`_draw` builds it) started once the work has lasted ``delay_s`` — by a timer, so a
    step still under way then brings it up — unless :meth:`close` came first; ``close``
    removes it. Updates and the timer take the same lock."""

    def __init__(self, delay_s: float, console: Optional[Console]) -> None:
        import threading

        self._console = console if console is not None else Console(stderr=True)
        self._live: Optional[Any] = None
        self._lock = threading.Lock()
        self._closed = False
        self._timer = threading.Timer(delay_s, self._show)
        self._timer.daemon = True
        self._timer.start()

    def _draw(self) -> Any:
        """The display to start (a rich ``Progress`` or ``Status``), from the latest state."""
        raise NotImplementedError

    def _show(self) -> None:
        with self._lock:
            if self._closed or self._live is not None:
                return
            self._live = self._draw()
            self._live.start()

    @property
    def shown(self) -> bool:
        """Whether the display has been drawn."""
        return self._live is not None

    def close(self) -> None:
        """Removes the display (if it was ever drawn) and stops waiting to draw it."""
        with self._lock:
            self._closed = True
            self._timer.cancel()
            if self._live is not None:
                self._live.stop()
                self._live = None

    def __enter__(self) -> "_Delayed":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class StepProgress(_Delayed):
    """Step callback drawing ``what`` and ``done / total`` steps on stderr once the work has
    lasted ``delay_s``; quick work prints nothing. A step that is still under way when
    ``delay_s`` has passed (loading a large sweep, say) brings the bar up by itself, with its
    elapsed time running."""

    def __init__(self, label: str = "working", *, delay_s: float = 0.5,
                 console: Optional[Console] = None) -> None:
        self._label = label
        self._task: Optional[TaskID] = None
        self._last = (0, 0, "")
        super().__init__(delay_s, console)

    def _draw(self) -> Progress:
        done, total, what = self._last
        progress = Progress(
            TextColumn(f"[bold]{self._label}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total} {task.description}"),
            TimeElapsedColumn(),
            console=self._console,
            transient=True,
        )
        self._task = progress.add_task(what, total=total or None, completed=done)
        return progress

    def __call__(self, done: int, total: int, what: str) -> None:
        with self._lock:
            self._last = (done, total, what)
            if self._live is not None and self._task is not None:
                self._live.update(self._task, completed=done, total=total or None,
                                  description=what)


class StatusLine(_Delayed):
    """A one-line status on stderr (a spinner and ``text``), drawn once the work has lasted
    ``delay_s`` and removed by :meth:`close`: for work whose length is not known ahead, such as
    ``xlayer oracle``'s column generation. Call it with the new text as the work goes on."""

    def __init__(self, *, delay_s: float = 0.5, console: Optional[Console] = None) -> None:
        self._text = "starting"
        super().__init__(delay_s, console)

    def _draw(self) -> "Status":
        return self._console.status(self._text)

    def __call__(self, text: str) -> None:
        with self._lock:
            self._text = text
            if self._live is not None:
                self._live.update(text)
