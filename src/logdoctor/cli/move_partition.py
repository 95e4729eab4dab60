"""`logdoctor move-partition TOPIC-PARTITION... --from LOGDIR --to LOGDIR [--apply]`: a full disk.

Moves partition folders (and their checkpoint entries) to another log dir of the same stopped
broker. Without --apply: print the plan and write nothing. ``--resume JOURNAL`` /
``--rollback JOURNAL`` finish or undo a run (``logdoctor repair --resume/--rollback`` do the same).

Exit codes (README "Exit codes"): 0 done (or plan printed), 2 a step failed or the final
verification found a difference, 64 usage (or a path that is not a log dir), 65 a log dir changed
since planning, 66 a missing log dir or journal, 70 tool failure, 73 not enough space, 75 a broker
holds a log dir's lock, 78 refused for the state of the log dirs (see the message).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from logdoctor.cli.common import (
    DRY_RUN_LINE,
    EX_FAILED,
    ApplyOption,
    CopyProgress,
    JsonOption,
    UsageExit64,
    journal_options,
    one_mode,
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
from logdoctor.logdir.disk import DiskUsage, disk_usage
from logdoctor.repair.apply import RefusedError, RunResult
from logdoctor.repair.journal import JournalError
from logdoctor.repair.plan import Plan
from logdoctor.repair.procedures import run
from logdoctor.repair.procedures.common import (
    ProcedurePlan,
    ProcedureRefused,
    ProcedureUsageError,
    parse_topic_partition,
)
from logdoctor.repair.safety import BackupLocationError, UnsafePathError


def _usage_lines(console: Console, title: str, rows: list[dict[str, Any]]) -> None:
    """Each file system as ``df`` prints it (logdoctor.logdir.disk: the one definition of used %)."""
    console.print(Text(title, style="bold"))
    for u in rows:
        usage = DiskUsage(
            u["path"], u["total_bytes"], u["used_bytes"], u["available_bytes"], u.get("source", "")
        )
        console.print(Text("  " + usage.line()), soft_wrap=True)


def print_procedure_plan(console: Console, pp: ProcedurePlan) -> None:
    print_plan(console, pp.plan, verbose=True)  # an operator procedure lists every action it takes
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
        print_json(out)
        return code
    print_run_status(console, name, result, code)
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
    print_run_paths(console, result)
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
    with run_errors(
        name,
        usage=(ProcedureUsageError, BackupLocationError, JournalError),
        refusals=(ProcedureRefused, RefusedError, UnsafePathError),
    ):
        if resume_journal is not None or rollback_journal is not None:
            journal = resume_journal or rollback_journal
            assert journal is not None
            require_input_file(journal, "journal")
            from logdoctor.repair.apply import load_journal

            plan, _ = load_journal(journal)
            with CopyProgress(run.copy_bytes(plan), not json_out) as bar:
                if resume_journal is not None:
                    result, plan = run.resume_journal(journal, progress=bar)
                else:
                    result, plan = run.rollback_journal(journal, progress=bar)
            raise typer.Exit(finish(console, name, result, plan, json_out, {}))
        assert make_plan is not None
        pp = make_plan()
        if not do_apply:
            if json_out:
                print_json({**pp.to_json(), "applied": False})
            else:
                print_procedure_plan(console, pp)
                console.print(DRY_RUN_LINE)
            raise typer.Exit(0)
        if not json_out:
            print_procedure_plan(console, pp)
        with CopyProgress(run.copy_bytes(pp.plan), not json_out) as bar:
            result = run.apply(pp.plan, progress=bar)
        raise typer.Exit(finish(console, name, result, pp.plan, json_out, pp.to_json()))


_Resume, _Rollback = journal_options("move")


@app.command("move-partition", cls=UsageExit64, options_metavar="--from LOGDIR --to LOGDIR [OPTIONS]")
def move_partition_command(
    partitions: Annotated[
        list[str] | None, typer.Argument(help="TOPIC-PARTITION names (e.g. orders-3).")
    ] = None,
    source: Annotated[
        Path | None,
        typer.Option(
            "--from",
            metavar="LOGDIR",
            help="The log dir that holds them now. Required, except with --resume/--rollback.",
        ),
    ] = None,
    destination: Annotated[
        Path | None,
        typer.Option(
            "--to",
            metavar="LOGDIR",
            help="Another log dir of the same broker. Required, except with --resume/--rollback.",
        ),
    ] = None,
    topics: Annotated[
        list[str] | None, typer.Option("--topic", help="Move every partition of this topic.")
    ] = None,
    do_apply: ApplyOption = False,
    backup_dir: Annotated[
        Path | None,
        typer.Option(
            "--backup-dir",
            metavar="DIR",
            help="Where replaced files go (default: beside the source log dir).",
        ),
    ] = None,
    force_copy: Annotated[
        bool,
        typer.Option(
            "--copy", help="Copy, verify and delete even on one file system (the cross-file-system method)."
        ),
    ] = False,
    metadata_log_dir: Annotated[
        Path | None,
        typer.Option(
            "--metadata-log-dir",
            help="KRaft: the broker's log dir holding __cluster_metadata-0, when neither --from nor --to "
            "holds it (the directory assignments are read from it).",
        ),
    ] = None,
    json_out: JsonOption = False,
    resume_journal: _Resume = None,
    rollback_journal: _Rollback = None,
) -> None:
    """Move partitions to another log dir of the same (stopped) broker: folders and checkpoint entries."""
    from logdoctor.repair.procedures.move_partition import plan_move

    planning = bool(partitions or topics or source or destination)
    if not one_mode(planning, resume_journal, rollback_journal):
        usage_error(
            "give TOPIC-PARTITION.../--topic with --from and --to, or --resume JOURNAL, or "
            "--rollback JOURNAL (one of them)"
        )
    if planning and (source is None or destination is None):
        usage_error("--from and --to are required")
    if planning:
        require_log_dirs([source, destination])

    def make() -> ProcedurePlan:
        assert source is not None and destination is not None
        tps = [parse_topic_partition(p) for p in partitions or []]
        return plan_move(
            source,
            destination,
            tps,
            topics=topics or [],
            backup_dir=backup_dir,
            force_copy=force_copy,
            metadata_log_dir=metadata_log_dir,
        )

    run_procedure(
        "move-partition",
        make if planning else None,
        do_apply=do_apply,
        json_out=json_out,
        resume_journal=resume_journal,
        rollback_journal=rollback_journal,
    )
