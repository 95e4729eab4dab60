"""`logdoctor restore LOGDIR --remote-storage URI [--apply]`: the remote tier as a backup.

Without ``--remote-log-metadata``: the remote part of each tiered partition of the store back into
LOGDIR as the broker's own files (:mod:`logdoctor.repair.procedures.restore`). With it: the
``__remote_log_metadata`` partitions rebuilt from the objects (:mod:`logdoctor.repair.procedures.
restore_metadata`). Without --apply: print the plan and write nothing. ``--resume JOURNAL --apply`` /
``--rollback JOURNAL --apply`` finish or undo a run.

Exit codes (docs/exit-codes.md): 0 done (or plan printed), 2 a step failed or the final verification
found a difference (or a remote object could not be restored), 64 usage, 65 the log dir changed since
planning, 66 a missing journal, 70 tool failure, 73 not enough space, 75 a broker holds the log dir's
lock, 78 refused (a store that is not there or holds no tiered partition; see the message).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from logdoctor.cli.app import app
from logdoctor.cli.error_lines import usage_error
from logdoctor.cli.plan_options import ApplyOption, JsonOption, journal_options, one_mode
from logdoctor.cli.procedure import run_procedure
from logdoctor.cli.remote_options import RemoteLayoutOption, RemotePrivateKeyOption, remote_options
from logdoctor.formats.recovery import DEFAULT_INDEX_INTERVAL_BYTES
from logdoctor.repair.procedures.common import ProcedurePlan

_Resume, _Rollback, _BackupDir = journal_options(
    "restore", "Where the journal goes (default: beside LOGDIR)."
)


@app.command("restore", options_metavar="--remote-storage URI [OPTIONS]")
def restore_command(
    log_dir: Annotated[
        Path | None, typer.Argument(metavar="LOGDIR", help="The log dir to restore into.")
    ] = None,
    remote_storage: Annotated[
        str | None,
        typer.Option(
            "--remote-storage",
            metavar="URI",
            help="The remote tier (folder, s3://, gs://, hdfs://, abfs://...). Required, except with "
            "--resume/--rollback.",
        ),
    ] = None,
    topics: Annotated[
        list[str] | None,
        typer.Option("--topics", help="Only these topics (default: every one in the store)."),
    ] = None,
    remote_layout: RemoteLayoutOption = None,
    remote_private_key: RemotePrivateKeyOption = None,
    remote_log_metadata: Annotated[
        bool,
        typer.Option(
            "--remote-log-metadata",
            help="Rebuild the __remote_log_metadata partitions from the objects instead.",
        ),
    ] = False,
    server_properties: Annotated[
        Path | None,
        typer.Option(
            "--server-properties",
            help="The broker's server.properties (with --remote-log-metadata, when LOGDIR has no KRaft "
            "metadata log: the metadata topic's partition count, "
            "rlmm.config.remote.log.metadata.topic.num.partitions; default 50).",
        ),
    ] = None,
    index_interval_bytes: Annotated[
        int,
        typer.Option(
            "--index-interval-bytes",
            min=1,
            help="index.interval.bytes of the topics (for the indexes the store lacks, rebuilt).",
        ),
    ] = DEFAULT_INDEX_INTERVAL_BYTES,
    do_apply: ApplyOption = False,
    backup_dir: _BackupDir = None,
    json_out: JsonOption = False,
    resume_journal: _Resume = None,
    rollback_journal: _Rollback = None,
) -> None:
    """Restore tiered partitions, or their lost remote log metadata, from the remote tier."""
    from logdoctor.logdir.remote_store import RemoteTierError
    from logdoctor.repair.procedures.common import ProcedureRefused

    planning = bool(log_dir or remote_storage)
    if not one_mode(planning, resume_journal, rollback_journal):
        usage_error(
            "give LOGDIR --remote-storage URI, or --resume JOURNAL, or --rollback JOURNAL (one of them)"
        )
    if planning and (log_dir is None or remote_storage is None):
        usage_error("LOGDIR and --remote-storage are required")
    if log_dir is not None and os.path.exists(log_dir) and not os.path.isdir(log_dir):
        usage_error(f"{log_dir} is not a folder")
    if planning:  # a missing store or key file: 66 before anything is read, dry run or --apply alike
        from logdoctor.cli.remote_options import require_remote_inputs

        require_remote_inputs(remote_storage, remote_private_key)

    def make() -> ProcedurePlan:
        assert log_dir is not None and remote_storage is not None
        try:
            opts = remote_options(remote_storage, remote_layout, remote_private_key)
            assert opts is not None
            if remote_log_metadata:
                from logdoctor.repair.procedures.restore_metadata import plan_restore_metadata

                return plan_restore_metadata(
                    log_dir, opts, topics=topics, backup_dir=backup_dir, server_properties=server_properties
                )
            from logdoctor.repair.procedures.restore import plan_restore

            pp = plan_restore(
                log_dir, opts, topics=topics, backup_dir=backup_dir, index_interval_bytes=index_interval_bytes
            )
        except RemoteTierError as e:
            raise ProcedureRefused(str(e)) from None
        if do_apply and not os.path.exists(log_dir):
            os.makedirs(log_dir)  # the dry run said so: an empty log dir, the engine's lock goes in it
        return pp

    run_procedure(
        "restore",
        make if planning else None,
        do_apply=do_apply,
        json_out=json_out,
        resume_journal=resume_journal,
        rollback_journal=rollback_journal,
        # the log dir's own lock before the planning scan (issue 32), when it exists already
        lock_dirs=[log_dir] if planning and log_dir is not None and os.path.isdir(log_dir) else None,
        backup_dir=backup_dir,
    )
