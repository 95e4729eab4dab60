"""Progress bars on stderr (never with --json): items, Spark work, bytes copied."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # rich (20 ms) is imported when a bar is drawn: a --json run or a pipe never draws one
    from rich.console import Console
    from rich.progress import Progress

# --- progress bars (stderr; never with --json) --------------------------------------------------


@contextmanager
def progress_bar(enabled: bool, what: str) -> Iterator[Callable[[int, int], None] | None]:
    """A bar over items (partitions, segments) on stderr when it is a terminal; else no callback."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn(what), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    yield from _updates(Progress(*columns, console=Console(stderr=True), transient=True), what)


@contextmanager
def spark_progress(
    err: Console, label: str, unit: str, *, disable: bool
) -> Iterator[Callable[[int, int], None]]:
    """A bar over Spark work (``done/total UNIT``) on ``err``; hidden with --json or off a terminal."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    progress = Progress(
        TextColumn(f"[bold]{label}[/bold]"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} " + unit),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=disable or not err.is_terminal,
    )
    yield from _updates(progress, label)


def _updates(progress: Progress, label: str) -> Iterator[Callable[[int, int], None]]:
    """``progress`` shown while the caller's block runs, and the callback that moves its one task."""
    with progress:
        task = progress.add_task(label, total=None)
        yield lambda done, total: progress.update(task, completed=done, total=total)


PROGRESS_MIN_BYTES = 16 << 20  # a progress bar for copies at least this large


class CopyProgress:
    """A bar over the bytes a plan copies (on stderr; none for small copies or --json).

    ``with CopyProgress(total, enabled) as advance: ...; advance(n)``.
    """

    def __init__(self, total: int, enabled: bool) -> None:
        self.total = total
        self.progress: Progress | None = None
        if enabled and total >= PROGRESS_MIN_BYTES:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                DownloadColumn,
                Progress,
                TimeRemainingColumn,
                TransferSpeedColumn,
            )

            self.progress = Progress(
                "[progress.description]{task.description}",
                BarColumn(),
                DownloadColumn(),
                TransferSpeedColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True),
            )
            self.task = self.progress.add_task("copying", total=total)

    def __enter__(self) -> Callable[[int], None]:
        if self.progress is None:
            return lambda n: None
        self.progress.start()
        progress, task = self.progress, self.task
        return lambda n: progress.advance(task, n)

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()


__all__ = [
    "PROGRESS_MIN_BYTES",
    "CopyProgress",
    "progress_bar",
    "spark_progress",
]
