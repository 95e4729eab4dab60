"""`logdoctor repair LOGDIR... [--apply]`: fix what scan finds, atomically, reversibly, nothing lost.

Without --apply: print the plan (every action, the files it touches, why, sizes before/after, a
diff for small text files) and write nothing. With --apply: run it (journal + backup dir), then
scan again. ``--resume JOURNAL`` finishes an interrupted run; ``--rollback JOURNAL`` undoes one.

Exit codes (README "Exit codes"): 0 done (or nothing to do / plan printed), 2 a step failed or
repaired findings remain, 64 usage (or a path that is not a log dir), 65 the log dir changed since
planning, 66 a missing log dir or journal, 70 tool failure, 73 not enough space for the backup, 75 a
broker holds a log dir's lock, 78 refused for the state of the log dirs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.cli.common import (
    DRY_RUN_LINE,
    EX_FAILED,
    ApplyOption,
    JsonOption,
    UsageExit64,
    VerboseOption,
    journal_options,
    print_code_paths,
    print_json,
    print_plan,
    print_run_paths,
    print_run_status,
    require_input_file,
    require_log_dirs,
    run_errors,
    usage_error,
)
from logdoctor.cli.main import app
from logdoctor.formats.recovery import DEFAULT_INDEX_INTERVAL_BYTES
from logdoctor.repair.apply import RefusedError, RunResult, apply_plan, resume, rollback
from logdoctor.repair.journal import JournalError
from logdoctor.repair.planner import PlanUsageError, parse_only, plan_repair
from logdoctor.repair.safety import BackupLocationError, UnsafePathError


def _post_scan(log_dirs: list[str], targeted: set[tuple[str, str]]) -> tuple[list[dict[str, Any]], int]:
    after = scan(log_dirs, ScanOptions(depth=Depth.DEFAULT), jobs=None)
    remaining = [f.to_json() for f in after.findings if (f.code, f.path) in targeted]
    return remaining, after.exit_code


def _finish(
    console: Console, result: RunResult, json_out: bool, extra: dict[str, Any], verbose: bool = False
) -> int:
    code = 0 if result.ok else EX_FAILED
    if extra.get("remaining"):
        code = EX_FAILED
    if json_out:
        print_json({**extra, "result": result.to_json()})
        return code
    print_run_status(console, "repair", result, code)
    print_run_paths(console, result)
    remaining = extra.get("remaining") or []
    if remaining:
        console.print(Text(f"still found ({len(remaining)}):", style="red"), soft_wrap=True)
        rows = [(f["code"], f["path"], f["message"]) for f in remaining]
        print_code_paths(console, rows, verbose=verbose, style="red")
    return code


_Resume, _Rollback = journal_options("repair")


@app.command("repair", cls=UsageExit64)
def repair_command(
    log_dirs: Annotated[
        list[Path] | None, typer.Argument(metavar="LOGDIR", help="Log dirs of one broker.")
    ] = None,
    do_apply: ApplyOption = False,
    only: Annotated[
        str | None,
        typer.Option("--only", metavar="CODE,...", help="Comma-separated finding codes to repair."),
    ] = None,
    backup_dir: Annotated[
        Path | None,
        typer.Option(
            "--backup-dir", metavar="DIR", help="Where originals go (default: beside the first log dir)."
        ),
    ] = None,
    json_out: JsonOption = False,
    resume_journal: _Resume = None,
    rollback_journal: _Rollback = None,
    index_interval_bytes: Annotated[
        int,
        typer.Option(
            "--index-interval-bytes", min=1, help="index.interval.bytes of the topics (for rebuilt indexes)."
        ),
    ] = DEFAULT_INDEX_INTERVAL_BYTES,
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", min=1, help="Scan worker processes.")] = None,
    verbose: VerboseOption = False,
) -> None:
    """Repair what `scan` finds: indexes, torn tails, checkpoints, orphans, permissions."""
    console = Console()
    modes = sum(x is not None and x is not False for x in (resume_journal, rollback_journal)) + (
        1 if log_dirs else 0
    )
    if modes != 1:
        usage_error("give LOGDIR... or --resume JOURNAL or --rollback JOURNAL (one of them)")
    with run_errors(
        "repair",
        usage=(PlanUsageError, BackupLocationError, JournalError),
        refusals=(RefusedError, UnsafePathError),
    ):
        if resume_journal is not None or rollback_journal is not None:
            journal = resume_journal or rollback_journal
            assert journal is not None
            require_input_file(journal, "journal")
            result = resume(journal) if resume_journal is not None else rollback(journal)
            extra: dict[str, Any] = {}
            if resume_journal is not None and result.ok:
                from logdoctor.repair.apply import load_journal

                plan, _ = load_journal(journal)
                targeted = {(c, p) for a in plan.actions for c in a.codes for p in a.finding_paths}
                extra["remaining"], _ = _post_scan(plan.log_dirs, targeted)
            raise typer.Exit(_finish(console, result, json_out, extra, verbose))
        assert log_dirs is not None
        codes = parse_only(only)
        require_log_dirs(log_dirs)
        plan, report = plan_repair(
            [str(d) for d in log_dirs],
            only=codes,
            backup_dir=str(backup_dir) if backup_dir else None,
            index_interval_bytes=index_interval_bytes,
            jobs=jobs,
        )
        if not do_apply:
            if json_out:
                print_json({"plan": plan.to_json(), "applied": False})
            else:
                print_plan(console, plan, verbose=verbose)
                if not plan.empty:
                    console.print(DRY_RUN_LINE)
            raise typer.Exit(0)
        if not json_out:
            print_plan(console, plan, verbose=verbose)
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
        raise typer.Exit(_finish(console, result, json_out, extra, verbose))
