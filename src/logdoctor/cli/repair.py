"""`logdoctor repair LOGDIR... [--apply]`: fix what scan finds, atomically, reversibly, nothing lost.

Without --apply: print the plan (every action, the files it touches, why, sizes before/after, a
diff for small text files) and write nothing. With --apply: run it (journal + backup dir), then
scan again. ``--resume JOURNAL`` finishes an interrupted run; ``--rollback JOURNAL`` undoes one.

Exit codes: 0 done (or nothing to do / plan printed), 2 a step failed or repaired findings remain,
64 usage, 65 the log dir changed since planning, 70 tool failure, 73 not enough space for the
backup, 75 a broker holds a log dir's lock.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.cli.main import app
from logdoctor.cli.scan import UsageExit64
from logdoctor.errors import BrokerRunningError
from logdoctor.formats.recovery import DEFAULT_INDEX_INTERVAL_BYTES
from logdoctor.repair.apply import RefusedError, RunResult, apply_plan, resume, rollback
from logdoctor.repair.backup import NoSpaceError
from logdoctor.repair.journal import JournalError
from logdoctor.repair.plan import Plan
from logdoctor.repair.planner import PlanUsageError, parse_only, plan_repair
from logdoctor.repair.safety import BackupLocationError, UnsafePathError

EX_FAILED = 2
EX_USAGE = 64
EX_DATAERR = 65
EX_SOFTWARE = 70
EX_CANTCREAT = 73
EX_TEMPFAIL = 75


def _size(n: int | None) -> str:
    return "absent" if n is None else f"{n:,} B"


def render_plan(console: Console, plan: Plan) -> None:
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


def _post_scan(log_dirs: list[str], targeted: set[tuple[str, str]]) -> tuple[list[dict[str, Any]], int]:
    after = scan(log_dirs, ScanOptions(depth=Depth.DEFAULT), jobs=None)
    remaining = [f.to_json() for f in after.findings if (f.code, f.path) in targeted]
    return remaining, after.exit_code


def _finish(console: Console, result: RunResult, json_out: bool, extra: dict[str, Any]) -> int:
    code = 0 if result.ok else EX_FAILED
    if extra.get("remaining"):
        code = EX_FAILED
    if json_out:
        sys.stdout.write(json.dumps({**extra, "result": result.to_json()}, indent=1) + "\n")
        return code
    console.print()
    style = "green" if code == 0 else "bold red"
    console.print(
        Text(f"{result.status}: {result.steps_run} of {result.steps_total} step(s) run", style=style)
    )
    if result.error:
        console.print(Text(f"error: {result.error}", style="red"), soft_wrap=True)
        console.print(
            f"Finish it with `logdoctor repair --resume {result.journal}` or undo it with "
            f"`logdoctor repair --rollback {result.journal}`.",
            soft_wrap=True,
        )
    if result.journal:
        console.print(f"backup dir: {result.backup_dir}", soft_wrap=True)
        console.print(f"journal:    {result.journal}", soft_wrap=True)
    for f in extra.get("remaining") or []:
        console.print(Text(f"still found: {f['code']} {f['path']}", style="red"), soft_wrap=True)
    return code


@app.command("repair", cls=UsageExit64)
def repair_command(
    log_dirs: Annotated[list[Path] | None, typer.Argument(help="Log dirs of one broker.")] = None,
    do_apply: Annotated[
        bool, typer.Option("--apply", help="Make the changes (default: print the plan).")
    ] = False,
    only: Annotated[
        str | None, typer.Option("--only", help="Comma-separated finding codes to repair.")
    ] = None,
    backup_dir: Annotated[
        Path | None,
        typer.Option("--backup-dir", help="Where originals go (default: beside the first log dir)."),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    resume_journal: Annotated[
        Path | None, typer.Option("--resume", help="Finish an interrupted repair.")
    ] = None,
    rollback_journal: Annotated[Path | None, typer.Option("--rollback", help="Undo a repair.")] = None,
    index_interval_bytes: Annotated[
        int,
        typer.Option(
            "--index-interval-bytes", min=1, help="index.interval.bytes of the topics (for rebuilt indexes)."
        ),
    ] = DEFAULT_INDEX_INTERVAL_BYTES,
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", min=1, help="Scan worker processes.")] = None,
) -> None:
    """Repair what `scan` finds: indexes, torn tails, checkpoints, orphans, permissions."""
    console = Console()
    modes = sum(x is not None and x is not False for x in (resume_journal, rollback_journal)) + (
        1 if log_dirs else 0
    )
    if modes != 1:
        typer.echo("error: give LOGDIR... or --resume JOURNAL or --rollback JOURNAL (one of them)", err=True)
        raise typer.Exit(EX_USAGE)
    try:
        if resume_journal is not None or rollback_journal is not None:
            journal = resume_journal or rollback_journal
            assert journal is not None
            result = resume(journal) if resume_journal is not None else rollback(journal)
            extra: dict[str, Any] = {}
            if resume_journal is not None and result.ok:
                from logdoctor.repair.apply import load_journal

                plan, _ = load_journal(journal)
                targeted = {(c, p) for a in plan.actions for c in a.codes for p in a.finding_paths}
                extra["remaining"], _ = _post_scan(plan.log_dirs, targeted)
            raise typer.Exit(_finish(console, result, json_out, extra))
        assert log_dirs is not None
        codes = parse_only(only)
        plan, report = plan_repair(
            [str(d) for d in log_dirs],
            only=codes,
            backup_dir=str(backup_dir) if backup_dir else None,
            index_interval_bytes=index_interval_bytes,
            jobs=jobs,
        )
        if not do_apply:
            if json_out:
                sys.stdout.write(json.dumps({"plan": plan.to_json(), "applied": False}, indent=1) + "\n")
            else:
                render_plan(console, plan)
                if not plan.empty:
                    console.print("Dry run: nothing was written. Add --apply to make these changes.")
            raise typer.Exit(0)
        if not json_out:
            render_plan(console, plan)
        skipped = {u.path for u in plan.unrepaired}
        targeted = {
            (f.code, f.path)
            for f in report.findings
            if f.code in codes
            and f.path not in skipped
            and any(f.path in a.finding_paths and f.code in a.codes for a in plan.actions)
        }
        result = apply_plan(plan)
        extra = {"plan": plan.to_json()}
        if result.status == "applied":
            extra["remaining"], _ = _post_scan(plan.log_dirs, targeted)
        raise typer.Exit(_finish(console, result, json_out, extra))
    except (PlanUsageError, BackupLocationError) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(EX_USAGE) from None
    except JournalError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(EX_USAGE) from None
    except BrokerRunningError as e:
        typer.echo(f"refused (nothing written): {e}", err=True)
        raise typer.Exit(EX_TEMPFAIL) from None
    except NoSpaceError as e:
        typer.echo(f"refused (nothing written): {e}", err=True)
        raise typer.Exit(EX_CANTCREAT) from None
    except (RefusedError, UnsafePathError) as e:
        typer.echo(f"refused (nothing written): {e}", err=True)
        raise typer.Exit(EX_DATAERR) from None
    except typer.Exit:
        raise
    except Exception as e:  # a bug or an environment failure
        typer.echo(f"logdoctor repair failed: {type(e).__name__}: {e}", err=True)
        raise typer.Exit(EX_SOFTWARE) from None
