"""`logdoctor move-partition TOPIC-PARTITION... --from LOGDIR --to LOGDIR [--apply]`: a full disk.

Moves partition folders (and their checkpoint entries) to another log dir of the same stopped
broker. Without --apply: print the plan and write nothing. ``--resume JOURNAL --apply`` /
``--rollback JOURNAL --apply`` finish or undo a run (``logdoctor repair --resume/--rollback`` do the same;
without --apply both print the steps they would run).

Exit codes (docs/exit-codes.md): 0 done (or plan printed), 2 a step failed or the final
verification found a difference, 64 usage (or a path that is not a log dir), 65 a file changed
since planning or since the journal recorded it (or the journal is rolled back already, or another
run's journal of a dir is unfinished or later), 66 a missing log dir or journal, 70 tool failure, 73
not enough space, 75 a broker or another logdoctor run holds a log dir's lock, 78 refused for the
state of the log dirs (see the message; e.g. a destination the broker has cordoned, KIP-1066, named by
the metadata record that cordons it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from logdoctor.cli.app import app
from logdoctor.cli.error_lines import usage_error
from logdoctor.cli.input_checks import require_log_dirs
from logdoctor.cli.plan_options import (
    AllowUnfinishedOption,
    ApplyOption,
    JsonOption,
    journal_options,
    one_mode,
)
from logdoctor.cli.procedure import run_procedure
from logdoctor.repair.procedures.common import (
    ProcedurePlan,
    parse_topic_partition,
)

_Resume, _Rollback, _BackupDir = journal_options(
    "move", "Where replaced files go (default: beside the source log dir)."
)


@app.command("move-partition", options_metavar="--from LOGDIR --to LOGDIR [OPTIONS]")
def move_partition_command(
    partitions: Annotated[
        list[str] | None, typer.Argument(help="TOPIC-PARTITION names (e.g. orders-3).")
    ] = None,
    source: Annotated[
        Path | None,
        typer.Option(
            "--from",
            metavar="LOGDIR",
            readable=False,
            help="The log dir that holds them now. Required, except with --resume/--rollback.",
        ),
    ] = None,
    destination: Annotated[
        Path | None,
        typer.Option(
            "--to",
            metavar="LOGDIR",
            readable=False,
            help="Another log dir of the same broker. Required, except with --resume/--rollback.",
        ),
    ] = None,
    topics: Annotated[
        list[str] | None, typer.Option("--topic", help="Move every partition of this topic.")
    ] = None,
    do_apply: ApplyOption = False,
    backup_dir: _BackupDir = None,
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
    allow_unfinished: AllowUnfinishedOption = False,
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
        lock_dirs=[source, destination] if planning else None,  # type: ignore[list-item]
        allow_unfinished=allow_unfinished,
        backup_dir=backup_dir,
    )
