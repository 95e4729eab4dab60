"""What both operator procedures' commands share (move-partition, sync-replica): print the plan,
apply, resume or roll back, verify, and map every refusal to its exit code."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from logdoctor.cli.exit_codes import EX_FAILED
from logdoctor.cli.input_checks import require_input_file
from logdoctor.cli.interrupts import run_interrupts
from logdoctor.cli.jsonout import print_json
from logdoctor.cli.lines import Lines, lines_for
from logdoctor.cli.plan_output import DRY_RUN_LINE, print_journal_preview, print_plan
from logdoctor.cli.progress import CopyProgress
from logdoctor.cli.run_status import print_run_paths, print_run_status, run_errors
from logdoctor.logdir.disk import DiskUsage, disk_usage
from logdoctor.repair.apply import RefusedError, RunResult, check_unfinished, hold_dir_locks, note_unfinished
from logdoctor.repair.journal import JOURNAL_NAME, JournalError
from logdoctor.repair.plan import Plan
from logdoctor.repair.procedures import run
from logdoctor.repair.procedures.common import ProcedurePlan, ProcedureRefused, ProcedureUsageError
from logdoctor.repair.safety import BackupLocationError, UnsafePathError


def _usage_lines(out: Lines, title: str, rows: list[dict[str, Any]]) -> None:
    """Each file system as ``df`` prints it (logdoctor.logdir.disk: the one definition of used %)."""
    out.line(title, "bold")
    for u in rows:
        usage = DiskUsage(
            u["path"], u["total_bytes"], u["used_bytes"], u["available_bytes"], u.get("source", "")
        )
        out.line("  " + usage.line())


def print_procedure_plan(out: Lines, pp: ProcedurePlan) -> None:
    print_plan(out, pp.plan, verbose=True)  # an operator procedure lists every action it takes
    for note in pp.notes:
        out.line("note: " + note, "yellow")
    if "disk_usage_before" in pp.summary:
        _usage_lines(out, "disk usage before:", pp.summary["disk_usage_before"])
    if "disk_usage_expected_after" in pp.summary:
        _usage_lines(out, "disk usage expected after:", pp.summary["disk_usage_expected_after"])


def finish(
    out: Lines, name: str, result: RunResult, plan: Plan, json_out: bool, extra: dict[str, Any]
) -> int:
    """Verify (when the run completed), report, and return the exit code."""
    problems: list[str] = []
    if result.status == "applied":
        problems = run.verify(plan)
    usage = [disk_usage(d).to_json() for d in plan.log_dirs]
    # a plan's findings (restore: remote objects it could not restore) leave the run short of its goal
    code = 0 if result.ok and not problems and not plan.unrepaired else EX_FAILED
    if json_out:
        print_json(
            {
                **extra,
                "result": result.to_json(),
                "verification": {"ok": not problems, "problems": problems},
                "disk_usage_after": usage,
            }
        )
        return code
    print_run_status(out, name, result, code)
    if result.status == "applied":
        if problems:
            for p in problems:
                out.line(f"verification: {p}", "red")
        else:
            out.line(
                "verified: every file at the destination matches the source "
                "(checksums, or the very same files for a rename); checkpoints well formed",
                "green",
            )
    _usage_lines(out, "disk usage now:", usage)
    print_run_paths(out, result)
    return code


def run_procedure(
    name: str,
    make_plan: Callable[[], ProcedurePlan] | None,
    *,
    do_apply: bool,
    json_out: bool,
    resume_journal: Path | None,
    rollback_journal: Path | None,
    lock_dirs: list[Path] | None = None,
    allow_unfinished: bool = False,
    backup_dir: Path | None = None,
) -> None:
    """Plan, apply, resume or roll back; maps every refusal to its exit code (nothing written).
    ``lock_dirs``: the log dirs whose own lock an ``--apply`` holds from before its planning scan."""
    out = lines_for()
    with (
        run_errors(
            name,
            usage=(ProcedureUsageError, BackupLocationError, JournalError),
            refusals=(ProcedureRefused, RefusedError, UnsafePathError),
        ),
        run_interrupts(name) as interrupts,
        contextlib.ExitStack() as held,
    ):
        if resume_journal is not None or rollback_journal is not None:
            journal = resume_journal or rollback_journal
            assert journal is not None
            require_input_file(journal, "journal")
            from logdoctor.repair.apply import load_journal

            if not do_apply:
                from logdoctor.repair.apply import preview

                mode = "resume" if resume_journal is not None else "rollback"
                print_journal_preview(out, name, preview(journal, mode), json_out)
                raise typer.Exit(0)
            plan, _ = load_journal(journal)
            interrupts.writing("--resume" if resume_journal is not None else "--rollback", journal)
            with CopyProgress(run.copy_bytes(plan), not json_out) as bar:
                if resume_journal is not None:
                    result, plan = run.resume_journal(journal, progress=bar)
                else:
                    result, plan = run.rollback_journal(journal, progress=bar)
            raise typer.Exit(finish(out, name, result, plan, json_out, {}))
        assert make_plan is not None
        if do_apply and lock_dirs:  # a second writing run of the same dirs is refused (75) before it plans
            held.enter_context(hold_dir_locks(list(lock_dirs)))
            check_unfinished(
                list(lock_dirs), str(backup_dir) if backup_dir else None, allow_unfinished=allow_unfinished
            )
        pp = make_plan()
        note_unfinished(pp.plan)
        if not do_apply:
            if json_out:
                print_json({**pp.to_json(), "applied": False})
            else:
                print_procedure_plan(out, pp)
                out.line(DRY_RUN_LINE)
            raise typer.Exit(0)
        if not json_out:
            print_procedure_plan(out, pp)
        interrupts.writing("--apply", os.path.join(pp.plan.backup_dir, JOURNAL_NAME))
        with CopyProgress(run.copy_bytes(pp.plan), not json_out) as bar:
            result = run.apply(pp.plan, progress=bar, command=name, allow_unfinished=allow_unfinished)
        raise typer.Exit(finish(out, name, result, pp.plan, json_out, pp.to_json()))
