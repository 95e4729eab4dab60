"""`logdoctor repair LOGDIR... [--apply]`: fix what scan finds, atomically, reversibly, nothing lost.

Without --apply: print the plan (every action, the files it touches, why, sizes before/after, a
diff for small text files) and write nothing. With --apply: run it (journal + backup dir), then
scan again. ``--resume JOURNAL --apply`` finishes an interrupted run; ``--rollback JOURNAL --apply``
undoes one (without --apply both print the steps they would run and write nothing).

``--deep`` plans from a ``scan --deep`` (every batch's CRC), so a CRC mismatch in a segment the
broker does not re-read at startup is truncated as the broker's recovery would.

Exit codes (docs/exit-codes.md): a plan printed (dry run) 0; "Nothing to repair" 0 only when the
scan at the same depth is clean, else 1 (warnings remain) or 2 (errors remain), each listed with why
it is not repaired offline; after --apply, the exit code of the scan at the same depth (0 clean,
1 warnings only, 2 errors), or 2 when a step failed; 64 usage, 65 a file changed since planning or
since the journal recorded it, a journal rolled back already, or another run's journal of the dir
unfinished or later, 66 a missing log dir or journal, 70 tool failure, 73 not enough space for the
backup (or the disk filled up while it wrote: the run undone), 75 a broker or another logdoctor run
holds a log dir's lock, 78 refused for the state of the log dirs.

The options are typer's here; what the command does with them is
:func:`logdoctor.cli.repair_run.run_repair` (a call of log dirs, flags, ``--backup-dir`` and ``--only``
runs it without typer: :func:`logdoctor.cli.repair_fast.run_fast`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from logdoctor.cli.app import app
from logdoctor.cli.findings_output import VerboseOption
from logdoctor.cli.plan_options import AllowUnfinishedOption, ApplyOption, JsonOption, journal_options
from logdoctor.cli.repair_run import _finish, run_repair
from logdoctor.cli.topic_options import ServerPropertiesOption, TopicConfigOption
from logdoctor.formats.recovery import DEFAULT_INDEX_INTERVAL_BYTES

__all__ = ["_finish", "repair_command"]

_Resume, _Rollback, _BackupDir = journal_options(
    "repair", "Where originals go (default: beside the first log dir)."
)


@app.command("repair")
def repair_command(
    log_dirs: Annotated[
        list[Path] | None, typer.Argument(metavar="LOGDIR", readable=False, help="Log dirs of one broker.")
    ] = None,
    do_apply: ApplyOption = False,
    only: Annotated[
        str | None,
        typer.Option("--only", metavar="CODE,...", help="Comma-separated finding codes to repair."),
    ] = None,
    backup_dir: _BackupDir = None,
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
    deep: Annotated[
        bool,
        typer.Option(
            "--deep",
            help="Plan from a scan --deep (every batch's CRC): truncate at the first invalid batch as the "
            "broker's recovery would, the cut bytes kept in the backup.",
        ),
    ] = False,
    topic_config: TopicConfigOption = None,
    server_properties: ServerPropertiesOption = None,
    allow_metadata_loss: Annotated[
        bool,
        typer.Option(
            "--allow-metadata-loss",
            help="Consent to truncating a KRaft metadata log (__cluster_metadata-0) that no other voter "
            "holds (a single-node cluster, the last voter): the records after the cut are lost for good.",
        ),
    ] = False,
    allow_unfinished: AllowUnfinishedOption = False,
) -> None:
    """Repair what `scan` finds: indexes, torn tails, checkpoints, orphans, permissions."""
    raise typer.Exit(
        run_repair(
            log_dirs,
            do_apply=do_apply,
            only=only,
            backup_dir=backup_dir,
            json_out=json_out,
            resume_journal=resume_journal,
            rollback_journal=rollback_journal,
            index_interval_bytes=index_interval_bytes,
            jobs=jobs,
            verbose=verbose,
            deep=deep,
            topic_config=topic_config,
            server_properties=server_properties,
            allow_metadata_loss=allow_metadata_loss,
            allow_unfinished=allow_unfinished,
        )
    )
