"""`logdoctor sync-replica TOPIC-PARTITION --leader LOGDIR --follower LOGDIR [--apply]`.

Replaces a lagging follower's copy of a partition with the leader's (both brokers stopped), and
sets the follower dir's high watermark, recovery point and log start offset entries to the
leader's. The follower's old copy stays in the backup dir. Exit codes as move-partition.
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
from logdoctor.repair.procedures.common import ProcedurePlan, parse_topic_partition

_Resume, _Rollback, _BackupDir = journal_options(
    "sync", "Where the follower's old copy goes (default: beside the follower's log dir)."
)


@app.command("sync-replica", options_metavar="--leader LOGDIR --follower LOGDIR [OPTIONS]")
def sync_replica_command(
    partition: Annotated[str | None, typer.Argument(help="TOPIC-PARTITION (e.g. orders-3).")] = None,
    leader: Annotated[
        Path | None,
        typer.Option(
            "--leader",
            metavar="LOGDIR",
            readable=False,
            help="The leader broker's log dir. Required, except with --resume/--rollback.",
        ),
    ] = None,
    follower: Annotated[
        Path | None,
        typer.Option(
            "--follower",
            metavar="LOGDIR",
            readable=False,
            help="The follower broker's log dir holding the partition. "
            "Required, except with --resume/--rollback.",
        ),
    ] = None,
    do_apply: ApplyOption = False,
    backup_dir: _BackupDir = None,
    allow_record_loss: Annotated[
        bool,
        typer.Option(
            "--allow-record-loss",
            help="Sync even when the follower holds records the leader lacks (what its broker would "
            "truncate: leader epochs, high watermark); they stay in the backup dir. Refused without it (78).",
        ),
    ] = False,
    json_out: JsonOption = False,
    resume_journal: _Resume = None,
    rollback_journal: _Rollback = None,
    allow_unfinished: AllowUnfinishedOption = False,
) -> None:
    """Bring a follower that fell out of the ISR back from the leader's copy (both brokers stopped)."""
    from logdoctor.repair.procedures.sync_replica import plan_sync

    planning = bool(partition or leader or follower)
    if not one_mode(planning, resume_journal, rollback_journal):
        usage_error("give TOPIC-PARTITION --leader --follower, or --resume JOURNAL, or --rollback JOURNAL")
    if planning and (partition is None or leader is None or follower is None):
        usage_error("TOPIC-PARTITION, --leader and --follower are required")
    if planning:
        require_log_dirs([leader, follower])

    def make() -> ProcedurePlan:
        assert partition is not None and leader is not None and follower is not None
        return plan_sync(
            parse_topic_partition(partition),
            leader,
            follower,
            backup_dir=backup_dir,
            allow_record_loss=allow_record_loss,
        )

    run_procedure(
        "sync-replica",
        make if planning else None,
        do_apply=do_apply,
        json_out=json_out,
        resume_journal=resume_journal,
        rollback_journal=rollback_journal,
        lock_dirs=[leader, follower] if planning else None,  # type: ignore[list-item]
        allow_unfinished=allow_unfinished,
        backup_dir=backup_dir,
    )
