"""Plumbing every command shares: exit codes, usage errors, error lines, progress bars, JSON output,
and the plan/result printing of `repair`, `move-partition` and `sync-replica`.

Exit codes follow fsck (0 clean, 1 warnings, 2 errors) and BSD sysexits.h for everything else, so a
script can tell bad data (2) from a bad call (64) or a tool failure (70).
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.text import Text
from typer.core import TyperCommand

__all__ = [
    "EX_CANTCREAT",
    "EX_DATA",
    "EX_DATAERR",
    "EX_FAILED",
    "EX_IOERR",
    "EX_NOINPUT",
    "EX_NOPERM",
    "EX_OK",
    "EX_SOFTWARE",
    "EX_TEMPFAIL",
    "EX_UNAVAILABLE",
    "EX_USAGE",
    "EX_WARNINGS",
    "ApplyOption",
    "CopyProgress",
    "JsonOption",
    "UsageExit64",
    "fail",
    "journal_options",
    "one_mode",
    "parse_epoch_ms",
    "parse_now",
    "print_json",
    "print_plan",
    "print_run_paths",
    "print_run_status",
    "progress_bar",
    "refused",
    "render_findings",
    "run_errors",
    "spark_progress",
    "tool_failure",
    "usage_error",
]

# --- exit codes ---------------------------------------------------------------------------------

EX_OK = 0
EX_WARNINGS = 1  # warnings only
EX_DATA = 2  # errors in the data (scan, dump); for repair and the procedures: a step failed
EX_FAILED = EX_DATA
EX_USAGE = 64  # a bad call
EX_DATAERR = 65  # refused: the log dir is not as the plan expects (nothing written)
EX_NOINPUT = 66  # missing input, or a directory where a file was asked for
EX_UNAVAILABLE = 69  # Spark cannot start (no Java 17+)
EX_SOFTWARE = 70  # a bug or an environment failure of the tool
EX_CANTCREAT = 73  # not enough space for the backup or the copy
EX_IOERR = 74
EX_TEMPFAIL = 75  # a broker holds a log dir's lock: stop it and try again
EX_NOPERM = 77

_CLICK_USAGE_ERRORS = frozenset(
    {"UsageError", "BadParameter", "MissingParameter", "NoSuchOption", "BadOptionUsage", "BadArgumentUsage"}
)


class UsageExit64(TyperCommand):
    """Usage errors exit with 64 (EX_USAGE), not click's 2: 2 means errors found in the data."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except Exception as e:
            if hasattr(e, "exit_code") and type(e).__name__ in _CLICK_USAGE_ERRORS:
                e.exit_code = EX_USAGE
            raise


# --- error lines (stderr) -----------------------------------------------------------------------


def fail(line: str, code: int) -> NoReturn:
    """Print one line on stderr and exit with ``code``."""
    typer.echo(line, err=True)
    raise typer.Exit(code)


def usage_error(message: str) -> NoReturn:
    """``error: MESSAGE`` and exit 64."""
    fail(f"error: {message}", EX_USAGE)


def refused(message: str, code: int) -> NoReturn:
    """A refusal before anything was written (lock held, no space, unexpected state)."""
    fail(f"refused (nothing written): {message}", code)


def tool_failure(command: str, e: BaseException) -> NoReturn:
    """A bug or an environment failure, never a finding: one line and exit 70."""
    fail(f"logdoctor {command} failed: {type(e).__name__}: {e}", EX_SOFTWARE)


# --- times ------------------------------------------------------------------------------------


def parse_epoch_ms(text: str) -> int:
    """Epoch milliseconds, or ISO-8601 (UTC when it names no zone); ValueError when neither."""
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return int(moment.timestamp() * 1000)


def parse_now(text: str | None) -> int:
    """--now: epoch milliseconds, or ISO-8601; default: the current time."""
    if text is None:
        return int(time.time() * 1000)
    try:
        return parse_epoch_ms(text)
    except ValueError:
        usage_error(f"--now wants epoch ms or ISO-8601, got {text!r}")


# --- findings -----------------------------------------------------------------------------------

_STYLE = {"error": "bold red", "warning": "yellow", "info": "dim"}


def render_findings(console: Console, findings: Iterable[Any]) -> None:
    """Each finding of scan or retention: severity, code, where; the message; the fix."""
    for f in findings:
        where = f.path + (f"@{f.position}" if f.position is not None else "")
        head = Text()
        head.append(f"{f.severity.label.upper():7} ", style=_STYLE[f.severity.label])
        head.append(f"{f.code} ", style="bold")
        head.append(where)
        console.print(head, soft_wrap=True)
        console.print(Text("  " + f.message), soft_wrap=True)
        console.print(Text("  fix: " + f.fix, style="cyan"), soft_wrap=True)


# --- JSON ---------------------------------------------------------------------------------------


def print_json(obj: Any, *, indent: int = 1, default: Callable[[Any], Any] | None = None) -> None:
    """One JSON document on stdout (the ``--json`` of the report commands)."""
    sys.stdout.write(json.dumps(obj, indent=indent, default=default) + "\n")


# --- progress bars (stderr; never with --json) --------------------------------------------------


@contextmanager
def progress_bar(enabled: bool, what: str) -> Iterator[Callable[[int, int], None] | None]:
    """A bar over items (partitions, segments) on stderr when it is a terminal; else no callback."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    with Progress(
        TextColumn(what),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task(what, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


@contextmanager
def spark_progress(
    err: Console, label: str, unit: str, *, disable: bool
) -> Iterator[Callable[[int, int], None]]:
    """A bar over Spark work (``done/total UNIT``) on ``err``; hidden with --json or off a terminal."""
    progress = Progress(
        TextColumn(f"[bold]{label}[/bold]"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} " + unit),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=disable or not err.is_terminal,
    )
    with progress:
        task = progress.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        yield update


PROGRESS_MIN_BYTES = 16 << 20  # a progress bar for copies at least this large


class CopyProgress:
    """A bar over the bytes a plan copies (on stderr; none for small copies or --json).

    ``with CopyProgress(total, enabled) as advance: ...; advance(n)``.
    """

    def __init__(self, total: int, enabled: bool) -> None:
        self.total = total
        self.progress: Progress | None = None
        if enabled and total >= PROGRESS_MIN_BYTES:
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


# --- plans and runs (repair, move-partition, sync-replica) ----------------------------------------

ApplyOption = Annotated[bool, typer.Option("--apply", help="Make the changes (default: print the plan).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


def one_mode(planning: bool, resume_journal: Path | None, rollback_journal: Path | None) -> bool:
    """Exactly one of: plan (and maybe apply), ``--resume JOURNAL``, ``--rollback JOURNAL``."""
    return sum((planning, resume_journal is not None, rollback_journal is not None)) == 1


def journal_options(what: str) -> tuple[Any, Any]:
    """The ``--resume JOURNAL`` and ``--rollback JOURNAL`` options of a command that runs ``what``."""
    resume = Annotated[Path | None, typer.Option("--resume", help=f"Finish an interrupted {what}.")]
    rollback = Annotated[Path | None, typer.Option("--rollback", help=f"Undo a {what}.")]
    return resume, rollback


DRY_RUN_LINE = "Dry run: nothing was written. Add --apply to make these changes."


def _size(n: int | None) -> str:
    return "absent" if n is None else f"{n:,} B"


def print_plan(console: Console, plan: Any) -> None:
    """Every action of a repair plan: what, why, each file's size before -> after, small diffs."""
    if plan.empty:
        console.print("Nothing to repair.")
    for i, a in enumerate(plan.actions, 1):
        head = Text()
        head.append(f"[{i}] {a.kind} ", style="bold")
        head.append(a.target)
        console.print(head, soft_wrap=True)
        console.print(Text("    why: " + a.reason, style="yellow"), soft_wrap=True)
        for c in a.changes:
            after = _size(c.size_after) if c.size_after is not None else "removed"
            line = f"    {c.path}: {_size(c.size_before)} -> {after}"
            if c.size_before is None and c.size_after is None:
                line = f"    {c.path}:"
            console.print(Text(line + (f"  ({c.note})" if c.note else "")), soft_wrap=True)
            if c.diff:
                for dl in c.diff.rstrip("\n").split("\n"):
                    style = "green" if dl.startswith("+") else "red" if dl.startswith("-") else "dim"
                    console.print(Text("      " + dl, style=style), soft_wrap=True)
    if plan.unrepaired:
        console.print()
        console.print(Text(f"Not repaired ({len(plan.unrepaired)}):", style="bold"))
        for u in plan.unrepaired:
            console.print(Text(f"  {u.code} {u.path}: {u.why}", style="dim"), soft_wrap=True)
    console.print()
    console.print(f"{len(plan.actions)} action(s), {len(plan.steps)} step(s); backup dir: {plan.backup_dir}")


def print_run_status(console: Console, command: str, result: Any, code: int) -> None:
    """The outcome of an applied, resumed or rolled-back run, and how to finish or undo a broken one."""
    console.print()
    style = "green" if code == 0 else "bold red"
    console.print(
        Text(f"{result.status}: {result.steps_run} of {result.steps_total} step(s) run", style=style)
    )
    if result.error:
        console.print(Text(f"error: {result.error}", style="red"), soft_wrap=True)
        console.print(
            f"Finish it with `logdoctor {command} --resume {result.journal}` or undo it with "
            f"`logdoctor {command} --rollback {result.journal}`.",
            soft_wrap=True,
        )


def print_run_paths(console: Console, result: Any) -> None:
    """Where a run left the originals (backup dir) and its journal."""
    if result.journal:
        console.print(f"backup dir: {result.backup_dir}", soft_wrap=True)
        console.print(f"journal:    {result.journal}", soft_wrap=True)


@contextmanager
def run_errors(
    command: str, usage: tuple[type[BaseException], ...], refusals: tuple[type[BaseException], ...]
) -> Iterator[None]:
    """Map what planning or applying raises to one stderr line and its exit code.

    ``usage`` -> 64; a broker holding the lock -> 75; no space -> 73; ``refusals`` -> 65 (all three:
    nothing written); any other exception -> 70. ``typer.Exit`` passes through.
    """
    from logdoctor.errors import BrokerRunningError
    from logdoctor.repair.backup import NoSpaceError

    try:
        yield
    except usage as e:
        usage_error(str(e))
    except BrokerRunningError as e:
        refused(str(e), EX_TEMPFAIL)
    except NoSpaceError as e:
        refused(str(e), EX_CANTCREAT)
    except refusals as e:
        refused(str(e), EX_DATAERR)
    except typer.Exit:
        raise
    except Exception as e:  # a bug or an environment failure
        tool_failure(command, e)
