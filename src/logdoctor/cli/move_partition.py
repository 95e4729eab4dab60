"""`logdoctor move-partition TOPIC-PARTITION... --from LOGDIR --to LOGDIR [--apply]`: a full disk.

Moves partition folders (and their checkpoint entries) to another log dir of the same stopped
broker. Without --apply: print the plan and write nothing. ``--resume JOURNAL`` /
``--rollback JOURNAL`` finish or undo a run (``logdoctor repair --resume/--rollback`` do the same).

Exit codes: 0 done (or plan printed), 2 a step failed or the final verification found a
difference, 64 usage, 65 refused (see the message), 70 tool failure, 73 not enough space,
75 a broker holds a log dir's lock.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn
from rich.text import Text

from logdoctor.cli.main import app
from logdoctor.cli.repair import (
    EX_CANTCREAT,
    EX_DATAERR,
    EX_FAILED,
    EX_SOFTWARE,
    EX_TEMPFAIL,
    EX_USAGE,
    render_plan,
)
from logdoctor.cli.scan import UsageExit64
from logdoctor.errors import BrokerRunningError
from logdoctor.repair.apply import RefusedError, RunResult
from logdoctor.repair.backup import NoSpaceError
from logdoctor.repair.journal import JournalError
from logdoctor.repair.plan import Plan
from logdoctor.repair.procedures import run
from logdoctor.repair.procedures.common import (
    ProcedurePlan,
    ProcedureRefused,
    ProcedureUsageError,
    disk_usage,
    parse_topic_partition,
)
from logdoctor.repair.safety import BackupLocationError, UnsafePathError

PROGRESS_MIN_BYTES = 16 << 20  # a progress bar for copies at least this large


class _Bar:
    """A rich progress bar over the bytes the plan copies (on stderr; none for small copies or --json)."""

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


def _usage_lines(console: Console, title: str, rows: list[dict[str, Any]]) -> None:
    console.print(Text(title, style="bold"))
    for u in rows:
        pct = 100.0 * u["used"] / u["total"] if u["total"] else 0.0
        console.print(
            f"  {u['path']}: {u['used']:,} of {u['total']:,} bytes used ({pct:.1f}%), {u['free']:,} free",
            soft_wrap=True,
        )


def print_plan(console: Console, pp: ProcedurePlan) -> None:
    render_plan(console, pp.plan)
    for note in pp.notes:
        console.print(Text("note: " + note, style="yellow"), soft_wrap=True)
    if "disk_usage_before" in pp.summary:
        _usage_lines(console, "disk usage before:", pp.summary["disk_usage_before"])
    if "disk_usage_expected_after" in pp.summary:
        _usage_lines(console, "disk usage expected after:", pp.summary["disk_usage_expected_after"])


def finish(
    console: Console, name: str, result: RunResult, plan: Plan, json_out: bool, extra: dict[str, Any]
) -> int:
    """Verify (when the run completed), report, and return the exit code."""
    problems: list[str] = []
    if result.status == "applied":
        problems = run.verify(plan)
    usage = [disk_usage(d).to_json() for d in plan.log_dirs]
    code = 0 if result.ok and not problems else EX_FAILED
    if json_out:
        out = {
            **extra,
            "result": result.to_json(),
            "verification": {"ok": not problems, "problems": problems},
            "disk_usage_after": usage,
        }
        sys.stdout.write(json.dumps(out, indent=1) + "\n")
        return code
    console.print()
    style = "green" if code == 0 else "bold red"
    console.print(
        Text(f"{result.status}: {result.steps_run} of {result.steps_total} step(s) run", style=style)
    )
    if result.error:
        console.print(Text(f"error: {result.error}", style="red"), soft_wrap=True)
        console.print(
            f"Finish it with `logdoctor {name} --resume {result.journal}` or undo it with "
            f"`logdoctor {name} --rollback {result.journal}`.",
            soft_wrap=True,
        )
    if result.status == "applied":
        if problems:
            for p in problems:
                console.print(Text(f"verification: {p}", style="red"), soft_wrap=True)
        else:
            console.print(
                Text(
                    "verified: every file at the destination matches the source "
                    "(checksums, or the very same files for a rename); checkpoints well formed",
                    style="green",
                ),
                soft_wrap=True,
            )
    _usage_lines(console, "disk usage now:", usage)
    if result.journal:
        console.print(f"backup dir: {result.backup_dir}", soft_wrap=True)
        console.print(f"journal:    {result.journal}", soft_wrap=True)
    return code


def run_procedure(
    name: str,
    make_plan: Callable[[], ProcedurePlan] | None,
    *,
    do_apply: bool,
    json_out: bool,
    resume_journal: Path | None,
    rollback_journal: Path | None,
) -> None:
    """Plan, apply, resume or roll back; maps every refusal to its exit code (nothing written)."""
    console = Console()
    try:
        if resume_journal is not None or rollback_journal is not None:
            journal = resume_journal or rollback_journal
            assert journal is not None
            from logdoctor.repair.apply import load_journal

            plan, _ = load_journal(journal)
            with _Bar(run.copy_bytes(plan), not json_out) as bar:
                if resume_journal is not None:
                    result, plan = run.resume_journal(journal, progress=bar)
                else:
                    result, plan = run.rollback_journal(journal, progress=bar)
            raise typer.Exit(finish(console, name, result, plan, json_out, {}))
        assert make_plan is not None
        pp = make_plan()
        if not do_apply:
            if json_out:
                sys.stdout.write(json.dumps({**pp.to_json(), "applied": False}, indent=1) + "\n")
            else:
                print_plan(console, pp)
                console.print("Dry run: nothing was written. Add --apply to make these changes.")
            raise typer.Exit(0)
        if not json_out:
            print_plan(console, pp)
        with _Bar(run.copy_bytes(pp.plan), not json_out) as bar:
            result = run.apply(pp.plan, progress=bar)
        raise typer.Exit(finish(console, name, result, pp.plan, json_out, pp.to_json()))
    except (ProcedureUsageError, BackupLocationError, JournalError) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(EX_USAGE) from None
    except BrokerRunningError as e:
        typer.echo(f"refused (nothing written): {e}", err=True)
        raise typer.Exit(EX_TEMPFAIL) from None
    except NoSpaceError as e:
        typer.echo(f"refused (nothing written): {e}", err=True)
        raise typer.Exit(EX_CANTCREAT) from None
    except (ProcedureRefused, RefusedError, UnsafePathError) as e:
        typer.echo(f"refused (nothing written): {e}", err=True)
        raise typer.Exit(EX_DATAERR) from None
    except typer.Exit:
        raise
    except Exception as e:  # a bug or an environment failure
        typer.echo(f"logdoctor {name} failed: {type(e).__name__}: {e}", err=True)
        raise typer.Exit(EX_SOFTWARE) from None


def _modes_ok(plan_args: bool, resume_journal: Path | None, rollback_journal: Path | None) -> bool:
    return sum((plan_args, resume_journal is not None, rollback_journal is not None)) == 1


@app.command("move-partition", cls=UsageExit64)
def move_partition_command(
    partitions: Annotated[
        list[str] | None, typer.Argument(help="TOPIC-PARTITION names (e.g. orders-3).")
    ] = None,
    source: Annotated[Path | None, typer.Option("--from", help="The log dir that holds them now.")] = None,
    destination: Annotated[
        Path | None, typer.Option("--to", help="Another log dir of the same broker.")
    ] = None,
    topics: Annotated[
        list[str] | None, typer.Option("--topic", help="Move every partition of this topic.")
    ] = None,
    do_apply: Annotated[
        bool, typer.Option("--apply", help="Make the changes (default: print the plan).")
    ] = False,
    backup_dir: Annotated[
        Path | None,
        typer.Option("--backup-dir", help="Where replaced files go (default: beside the source log dir)."),
    ] = None,
    force_copy: Annotated[
        bool,
        typer.Option(
            "--copy", help="Copy, verify and delete even on one file system (the cross-file-system method)."
        ),
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    resume_journal: Annotated[
        Path | None, typer.Option("--resume", help="Finish an interrupted move.")
    ] = None,
    rollback_journal: Annotated[Path | None, typer.Option("--rollback", help="Undo a move.")] = None,
) -> None:
    """Move partitions to another log dir of the same (stopped) broker: folders and checkpoint entries."""
    from logdoctor.repair.procedures.move_partition import plan_move

    planning = bool(partitions or topics or source or destination)
    if not _modes_ok(planning, resume_journal, rollback_journal):
        typer.echo(
            "error: give TOPIC-PARTITION.../--topic with --from and --to, or --resume JOURNAL, or "
            "--rollback JOURNAL (one of them)",
            err=True,
        )
        raise typer.Exit(EX_USAGE)
    if planning and (source is None or destination is None):
        typer.echo("error: --from and --to are required", err=True)
        raise typer.Exit(EX_USAGE)

    def make() -> ProcedurePlan:
        assert source is not None and destination is not None
        tps = [parse_topic_partition(p) for p in partitions or []]
        return plan_move(
            source, destination, tps, topics=topics or [], backup_dir=backup_dir, force_copy=force_copy
        )

    run_procedure(
        "move-partition",
        make if planning else None,
        do_apply=do_apply,
        json_out=json_out,
        resume_journal=resume_journal,
        rollback_journal=rollback_journal,
    )
