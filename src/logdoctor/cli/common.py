"""Plumbing every command shares: exit codes, usage errors, error lines, progress bars, JSON output,
and the plan/result printing of `repair`, `move-partition` and `sync-replica`.

Exit codes follow fsck (0 clean, 1 warnings, 2 errors) and BSD sysexits.h for everything else, so a
script can tell bad data (2) from a bad call (64) or a tool failure (70).
"""

from __future__ import annotations

import datetime as dt
import enum
import errno
import json
import os
import sys
import time
from collections import Counter
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
from typer.core import TyperCommand, TyperGroup

__all__ = [
    "EX_CANTCREAT",
    "EX_DATA",
    "EX_DATAERR",
    "EX_FAILED",
    "EX_IOERR",
    "EX_NOINPUT",
    "EX_NOPERM",
    "EX_OK",
    "EX_REFUSED",
    "EX_SOFTWARE",
    "EX_TEMPFAIL",
    "EX_UNAVAILABLE",
    "EX_USAGE",
    "EX_WARNINGS",
    "ApplyOption",
    "CopyProgress",
    "ExitCode",
    "JsonOption",
    "LogdoctorCommand",
    "LogdoctorGroup",
    "UsageExit64",
    "VerboseOption",
    "fail",
    "journal_options",
    "one_mode",
    "os_error",
    "parse_epoch_ms",
    "parse_now",
    "print_code_paths",
    "print_json",
    "print_plan",
    "print_run_paths",
    "print_run_status",
    "progress_bar",
    "refuse_overlapping_outputs",
    "refused",
    "render_findings",
    "require_input_file",
    "require_inputs_exist",
    "require_log_dirs",
    "run_errors",
    "spark_progress",
    "tool_failure",
    "usage_error",
]

# --- exit codes ---------------------------------------------------------------------------------


class ExitCode(enum.IntEnum):
    """Every exit code of every command (README.md "Exit codes" has the same table; a test checks both).

    0-2 follow fsck (what the data is like); 64 and up follow BSD sysexits.h (what went wrong with the
    call or the tool), so a script can tell bad data (2) from a bad call (64) or a tool failure (70).
    """

    OK = 0  # clean (info only); a plan printed; a run completed
    WARNINGS = 1  # warnings only (dump, scan, retention, census); export: corrupt ranges skipped
    ERRORS = 2  # errors in the data; repair and procedures: a step failed or findings remain
    USAGE = 64  # EX_USAGE: a bad call (unknown option, a path that is not a log dir, no command)
    CHANGED = 65  # EX_DATAERR: a log dir is not as the plan expects (changed since planning)
    NO_INPUT = 66  # EX_NOINPUT: an input (log dir, file, journal) does not exist, or is a directory
    UNAVAILABLE = 69  # EX_UNAVAILABLE: Spark cannot start (no Java 17+)
    SOFTWARE = 70  # EX_SOFTWARE: a bug or an environment failure of the tool
    CANT_CREATE = 73  # EX_CANTCREAT: no space, read-only, an output that exists or overlaps an input
    IO_ERROR = 74  # EX_IOERR: reading a file failed
    LOCKED = 75  # EX_TEMPFAIL: a broker holds a log dir's lock: stop it and try again
    NO_PERMISSION = 77  # EX_NOPERM: a file cannot be read
    REFUSED = 78  # EX_CONFIG: refused, the log dirs' state does not allow it (the message says why)
    INTERRUPTED = 130  # 128 + SIGINT, as a shell reports it: Ctrl-C (one line says what it left)

    @property
    def meaning(self) -> str:
        return _MEANING[self]


_MEANING = {
    ExitCode.OK: "clean (info only); a plan printed; a run completed",
    ExitCode.WARNINGS: "warnings only",
    ExitCode.ERRORS: "errors found in the data; repair/procedures: a step failed or findings remain",
    ExitCode.USAGE: "bad call: unknown or missing option, a path that is not a log dir, no command",
    ExitCode.CHANGED: "a log dir changed since planning (nothing written): plan again",
    ExitCode.NO_INPUT: "an input (log dir, file, journal) does not exist, or is a folder where a file is "
    "needed",
    ExitCode.UNAVAILABLE: "Spark cannot start (no Java 17+)",
    ExitCode.SOFTWARE: "a bug or an environment failure of logdoctor",
    ExitCode.CANT_CREATE: "refused (nothing written): not enough space, a read-only file system, an output "
    "that exists (not this command's), or an output at, inside or above an input",
    ExitCode.IO_ERROR: "reading a file failed (I/O error)",
    ExitCode.LOCKED: "refused (nothing written): a broker holds a log dir's .lock",
    ExitCode.NO_PERMISSION: "a file cannot be read or written (permission denied)",
    ExitCode.REFUSED: "refused (nothing written): the log dirs' state does not allow it (the message says "
    "why)",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C): one line says what was stopped and, for a run that writes, "
    "its journal and the commands that finish or undo it",
}

# the sysexits-style names the commands use (aliases of ExitCode members)
EX_OK = ExitCode.OK
EX_WARNINGS = ExitCode.WARNINGS
EX_DATA = ExitCode.ERRORS
EX_FAILED = ExitCode.ERRORS
EX_USAGE = ExitCode.USAGE
EX_DATAERR = ExitCode.CHANGED
EX_NOINPUT = ExitCode.NO_INPUT
EX_UNAVAILABLE = ExitCode.UNAVAILABLE
EX_SOFTWARE = ExitCode.SOFTWARE
EX_CANTCREAT = ExitCode.CANT_CREATE
EX_IOERR = ExitCode.IO_ERROR
EX_TEMPFAIL = ExitCode.LOCKED
EX_NOPERM = ExitCode.NO_PERMISSION
EX_REFUSED = ExitCode.REFUSED

_CLICK_USAGE_ERRORS = frozenset(
    {
        "UsageError",
        "BadParameter",
        "MissingParameter",
        "NoSuchOption",
        "BadOptionUsage",
        "BadArgumentUsage",
        "NoArgsIsHelpError",
    }
)


def _usage_exit(e: BaseException) -> None:
    """click's usage errors (exit 2 there) exit 64 here: 2 means errors found in the data."""
    if hasattr(e, "exit_code") and type(e).__name__ in _CLICK_USAGE_ERRORS:
        e.exit_code = EX_USAGE


class LogdoctorCommand(TyperCommand):
    """Every command: usage errors exit 64, and help reads like kafka-dump-log's (see :mod:`.helptext`)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except Exception as e:
            _usage_exit(e)
            raise

    def get_params(self, ctx: Any) -> list[Any]:
        from logdoctor.cli.helptext import humanize

        return humanize(super().get_params(ctx))


class LogdoctorGroup(TyperGroup):
    """The ``logdoctor`` group: no command prints the help on stderr and exits 64, as does an unknown
    command (with its usage error); help without types."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            import contextlib

            # typer's rich help prints itself on stdout: a call without a command is a bad call, so the
            # help it gets goes where errors go (README "Commands")
            with contextlib.redirect_stdout(sys.stderr):
                typer.echo(ctx.get_help(), err=True, nl=False)
            raise typer.Exit(EX_USAGE)
        try:
            return super().parse_args(ctx, args)
        except Exception as e:
            _usage_exit(e)
            raise

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:  # Ctrl-C where no command said more (logdoctor.cli.interrupts)
            name = f"logdoctor {ctx.invoked_subcommand or ''}".rstrip()
            fail(f"interrupted: {name} was stopped by Ctrl-C", ExitCode.INTERRUPTED)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        try:
            return super().resolve_command(ctx, args)
        except Exception as e:  # "No such command": click says 2, a bad call here is 64
            _usage_exit(e)
            raise

    def get_params(self, ctx: Any) -> list[Any]:
        from logdoctor.cli.helptext import humanize

        return humanize(super().get_params(ctx))


UsageExit64 = LogdoctorCommand  # the old name


# --- error lines (stderr) -----------------------------------------------------------------------


def fail(line: str, code: int) -> NoReturn:
    """Print one line on stderr (control characters of the names in it escaped) and exit with ``code``."""
    from logdoctor.cli.output import printable

    typer.echo(printable(line, keep_newlines=True), err=True)
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


_CANNOT_WRITE = frozenset({errno.EROFS, errno.ENOSPC, errno.EDQUOT})
_DENIED = frozenset({errno.EACCES, errno.EPERM})


def os_error(e: OSError) -> tuple[str, int] | None:
    """What the file system refused, as ``(PATH: reason, exit code)``: a read-only file system or no
    space 73, permission denied 77, an I/O error 74; None for any other OSError (a tool failure, 70)."""
    if e.errno in _CANNOT_WRITE:
        code = EX_CANTCREAT
    elif e.errno in _DENIED:
        code = EX_NOPERM
    elif e.errno == errno.EIO:
        code = EX_IOERR
    else:
        return None
    reason = e.strerror or os.strerror(e.errno or 0)
    where = os.fsdecode(e.filename) if e.filename is not None else None
    if where is None:  # pyarrow: "Failed to open local file '/x'. Detail: [errno 30] Read-only file system"
        import re

        m = re.search(r"'([^']+)'", str(e))
        where = m.group(1) if m else None
        reason = os.strerror(e.errno or 0)
    return (f"{where}: {reason}" if where else reason), code


# --- inputs and outputs ---------------------------------------------------------------------------


def require_log_dirs(paths: Iterable[str | os.PathLike[str]]) -> None:
    """Refuse, before anything is read, a LOGDIR argument that is not a log dir (or an empty folder).

    What each path is comes from :func:`logdoctor.logdir.recognize.recognize`: a missing path exits 66;
    a file, a partition folder, a folder holding log dirs or any other folder exits 64 with what it is
    and what to give instead; a log dir this user may not list exits 77 (nothing in it can be checked;
    what the broker's own user may read is what the scan's PERMISSION_DENIED findings are about).
    Nothing is scanned, so no advice is printed for what is not a log dir.
    """
    from logdoctor.logdir.recognize import PathKind, recognize

    for path in paths:
        r = recognize(path)
        if r.kind is PathKind.MISSING:
            fail(f"error: {r.refusal()}", EX_NOINPUT)
        if not r.is_log_dir:
            usage_error(r.refusal())
        if not os.access(path, os.R_OK | os.X_OK):
            fail(
                f"error: {os.fspath(path)}: permission denied: this user cannot list the log dir "
                "(run logdoctor as the broker's user or as root)",
                EX_NOPERM,
            )


def require_inputs_exist(paths: Iterable[str | os.PathLike[str]]) -> None:
    """Exit 66 (EX_NOINPUT) at the first input path that does not exist (local paths only)."""
    for path in paths:
        p = os.fspath(path)
        if "://" not in p and not os.path.lexists(p):
            fail(f"error: {p}: no such file or directory", EX_NOINPUT)


def require_input_file(path: str | os.PathLike[str], what: str) -> None:
    """A file the command reads (a journal, ...): exit 66 when it does not exist or is a directory."""
    if not os.path.exists(path):
        fail(f"error: {what} {os.fspath(path)}: no such file", EX_NOINPUT)
    if os.path.isdir(path):
        fail(f"error: {what} {os.fspath(path)} is a directory, not a file", EX_NOINPUT)


def refuse_overlapping_outputs(
    outputs: Iterable[str | os.PathLike[str] | None], inputs: Iterable[str | os.PathLike[str]]
) -> None:
    """Exit 73 (nothing written or deleted) when an output is at, inside or above an input.

    Uses :func:`logdoctor.logdir.outputs.check_output_location`, the rule every writing command shares.
    """
    from logdoctor.errors import OutputOverlapsInputError
    from logdoctor.logdir.outputs import check_output_location

    ins = list(inputs)
    try:
        for out in outputs:
            if out is not None:
                check_output_location(out, ins)
    except OutputOverlapsInputError as e:
        fail(f"refused: {e}", EX_CANTCREAT)


# --- Spark session options --------------------------------------------------------------------

ConfOption = Annotated[
    list[str] | None,
    typer.Option(
        "--conf",
        metavar="KEY=VALUE",
        help="A Spark conf (repeatable), e.g. spark.jars.packages=..., spark.executor.memory=4g.",
    ),
]
RemoteOption = Annotated[
    str | None,
    typer.Option("--remote", metavar="sc://HOST:PORT", help="Spark Connect server (see README)."),
]


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


def render_findings(console: Console, findings: Iterable[Any], *, verbose: bool = False) -> None:
    """Each finding of scan or retention, grouped by code (:func:`logdoctor.cli.render.render_findings`)."""
    from logdoctor.cli import render

    render.render_findings(console, findings, verbose=verbose)


VerboseOption = Annotated[
    bool,
    typer.Option(
        "--verbose",
        "-v",
        help="List every finding and action (by default what repeats many times is summarised).",
    ),
]


# --- JSON ---------------------------------------------------------------------------------------


def print_json(obj: Any, *, indent: int = 1, default: Callable[[Any], Any] | None = None) -> None:
    """One JSON document on stdout (the ``--json`` of the report commands)."""
    sys.stdout.write(json.dumps(obj, indent=indent, default=default) + "\n")


def json_rows(obj: dict[str, Any]) -> str:
    """``obj`` as one JSON document laid out for reports of 50,000 partitions: each key of ``obj`` on a
    line of its own, each element of a list value on a line of its own, compact (``json.dumps``'s
    separators). Only a document without indentation is encoded by Python's C encoder; ``indent=1`` is
    its pure-Python encoder, ~5x slower (1.7 s for the 71 MB of 50,000 partitions). The same JSON value
    as :func:`print_json` gives, one partition or finding per line."""
    encode = json.JSONEncoder().encode
    lines = ["{"]
    last = len(obj) - 1
    for i, (key, value) in enumerate(obj.items()):
        end = "," if i < last else ""
        if isinstance(value, list) and value:
            lines.append(f" {encode(key)}: [")
            lines.append(",\n".join(["  " + encode(v) for v in value]))
            lines.append(f" ]{end}")
        else:
            lines.append(f" {encode(key)}: {encode(value)}{end}")
    lines.append("}")
    return "\n".join(lines)


def print_json_rows(obj: dict[str, Any]) -> None:
    """:func:`json_rows` on stdout (``scan --json``)."""
    sys.stdout.write(json_rows(obj) + "\n")


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
    resume = Annotated[
        Path | None,
        typer.Option(
            "--resume",
            metavar="JOURNAL",
            help=f"Finish an interrupted {what} (prints its steps; --apply runs them).",
        ),
    ]
    rollback = Annotated[
        Path | None,
        typer.Option(
            "--rollback", metavar="JOURNAL", help=f"Undo a {what} (prints its steps; --apply runs them)."
        ),
    ]
    return resume, rollback


DRY_RUN_LINE = "Dry run: nothing was written. Add --apply to make these changes."


def print_journal_preview(console: Console, command: str, preview: Any, json_out: bool) -> None:
    """The dry run of ``COMMAND --resume/--rollback JOURNAL``: the steps it would run, nothing written."""
    if json_out:
        print_json({"preview": preview.to_json(), "applied": False})
        return
    verb = "finish" if preview.mode == "resume" else "undo"
    total = len(preview.plan.steps)
    status = f" (journal status: {preview.status})" if preview.status else " (the run did not end)"
    console.print(
        Text(
            f"--{preview.mode} {preview.journal}{status}: would {verb} {len(preview.steps)} of {total} "
            "step(s)" + (":" if preview.steps else "."),
            style="bold",
        ),
        soft_wrap=True,
    )
    for step in preview.steps:
        dst = step.params.get("dst")
        console.print(
            Text(f"  step {step.number}: {step.op} {step.path}" + (f" -> {dst}" if dst else "")),
            soft_wrap=True,
        )
    console.print(
        Text(
            f"Dry run: nothing was written. Run `logdoctor {command} --{preview.mode} {preview.journal} "
            "--apply` to make these changes."
        ),
        soft_wrap=True,
    )


def _size(n: int | None) -> str:
    return "absent" if n is None else f"{n:,} B"


def print_plan(console: Console, plan: Any, *, verbose: bool = False) -> None:
    """Every action of a repair plan: what, why, each file's size before -> after, small diffs.

    At fleet scale (hundreds of the same action) the first few of each kind are shown in full and the
    rest counted; ``verbose`` shows every one (``--json`` always has the whole plan).
    """
    from logdoctor.cli.render import EXAMPLES, wrapped

    if plan.empty:
        console.print("Nothing to repair.")
    kinds = Counter(a.kind for a in plan.actions)
    shown: Counter[str] = Counter()
    for i, a in enumerate(plan.actions, 1):
        shown[a.kind] += 1
        if not verbose and kinds[a.kind] > EXAMPLES + 1 and shown[a.kind] > EXAMPLES:
            if shown[a.kind] == EXAMPLES + 1:
                rest = kinds[a.kind] - EXAMPLES
                console.print(
                    Text(
                        f"... and {rest} more {a.kind} action(s) like these, from [{i}] on "
                        "(--verbose lists every one, --json has the whole plan)",
                        style="dim",
                    ),
                    soft_wrap=True,
                )
            continue
        head = Text()
        head.append(f"[{i}] {a.kind} ", style="bold")
        head.append(a.target)
        console.print(head, soft_wrap=True)
        wrapped(console, a.reason, "         ", "yellow", first="    why: ")
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
    for note in getattr(plan, "notes", ()):
        wrapped(console, note, "      ", "yellow", first="note: ")
    if plan.unrepaired:
        console.print()
        console.print(Text(f"Not repaired ({len(plan.unrepaired)}):", style="bold"))
        print_code_paths(console, [(u.code, u.path, u.why) for u in plan.unrepaired], verbose=verbose)
    console.print()
    console.print(f"{len(plan.actions)} action(s), {len(plan.steps)} step(s); backup dir: {plan.backup_dir}")


def print_code_paths(
    console: Console, rows: list[tuple[str, str, str]], *, verbose: bool = False, style: str = "dim"
) -> None:
    """``CODE path: why`` lines grouped by code; a code with many paths shows a few and their count."""
    from logdoctor.cli.render import EXAMPLES, wrapped

    by_code: dict[str, list[tuple[str, str]]] = {}
    for code, path, why in rows:
        by_code.setdefault(code, []).append((path, why))
    for code, items in by_code.items():
        if verbose or len(items) <= EXAMPLES + 1:
            for path, why in items:
                console.print(Text(f"  {code} {path}:", style=style), soft_wrap=True)
                wrapped(console, why, "      ", style)
            continue
        console.print(Text(f"  {code}: {len(items)} files", style=style or "bold"), soft_wrap=True)
        for path, _why in items[:EXAMPLES]:
            console.print(Text(f"    {path}", style=style), soft_wrap=True)
        console.print(
            Text(f"    ... and {len(items) - EXAMPLES} more (--verbose lists every one)", style="dim"),
            soft_wrap=True,
        )
        whys = {why for _p, why in items}
        label = "    why: " if len(whys) == 1 else "    why (the first's): "
        wrapped(console, items[0][1], "      ", style, first=label)


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
            f"Finish it with `logdoctor {command} --resume {result.journal} --apply` or undo it with "
            f"`logdoctor {command} --rollback {result.journal} --apply` (each prints its steps without "
            "--apply).",
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
    """Map what planning or applying raises to one stderr line and its exit code (:class:`ExitCode`).

    A path that is not a log dir -> 64 (66 when missing); ``usage`` -> 64; a broker holding the lock ->
    75; no space -> 73; a log dir changed since planning -> 65; other ``refusals`` -> 78 (all four:
    nothing written); what the file system refuses (read-only, no space: 73; permission: 77; I/O error:
    74; :func:`os_error`), one line; any other exception -> 70. ``typer.Exit`` passes through.
    """
    from logdoctor.errors import BrokerRunningError
    from logdoctor.logdir.recognize import NotALogDirError
    from logdoctor.repair.apply import PlanChangedError
    from logdoctor.repair.backup import NoSpaceError
    from logdoctor.repair.journal import EmptyJournalError

    try:
        yield
    except NotALogDirError as e:
        fail(f"error: {e}", EX_NOINPUT if e.missing else EX_USAGE)
    except EmptyJournalError as e:
        # nothing to resume or roll back: the run changed nothing (it stopped before its commit point)
        fail(
            f"note: {e}; nothing to resume or roll back, the log dirs are as that run found them "
            f"(plan and apply the {command} again)",
            0,
        )
    except usage as e:
        usage_error(str(e))
    except BrokerRunningError as e:
        refused(str(e), EX_TEMPFAIL)
    except NoSpaceError as e:
        refused(str(e), EX_CANTCREAT)
    except PlanChangedError as e:
        refused(str(e), EX_DATAERR)
    except refusals as e:
        refused(str(e), EX_REFUSED)
    except typer.Exit:
        raise
    except OSError as e:  # a read-only file system, no space, permission: before anything was written
        said = os_error(e)
        if said is None:
            tool_failure(command, e)
        refused(said[0], said[1])
    except Exception as e:  # a bug or an environment failure
        tool_failure(command, e)
