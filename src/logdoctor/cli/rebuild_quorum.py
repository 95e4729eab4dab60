"""`logdoctor rebuild-quorum LOGDIR... --controller ID@HOST:PORT=DIR... [--apply]`: lost KRaft controllers.

The metadata dir of each new controller of a static or dynamic quorum (a dynamic one's voter set rewritten
to the new controllers), rebuilt from the brokers' copies of ``__cluster_metadata-0``
(:mod:`logdoctor.repair.procedures.rebuild_quorum`). Without --apply: print the plan (the copies found, the
one chosen, who is behind, the configuration to start with) and write nothing.
``--resume JOURNAL --apply`` / ``--rollback JOURNAL --apply`` finish or undo a run.

Exit codes (docs/exit-codes.md): 0 done (or plan printed), 2 a step failed or the final verification found
a difference, 64 usage (an ID=DIR --controller for a dynamic quorum, whose voter set names each endpoint),
65 a file changed since planning, 66 a missing log dir or journal, 70 tool failure, 73 not enough space,
75 a broker holds a log dir's lock, 78 refused (a target dir that holds metadata, log dirs of different
clusters, no readable metadata log, a controller that still answers at an old controller's registered
endpoint or a --controller's, at planning and again at --resume).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from logdoctor.cli.app import app
from logdoctor.cli.error_lines import usage_error
from logdoctor.cli.input_checks import require_log_dirs
from logdoctor.cli.plan_options import ApplyOption, JsonOption, journal_options, one_mode
from logdoctor.cli.procedure import run_procedure
from logdoctor.repair.procedures.common import ProcedurePlan

_Resume, _Rollback, _BackupDir = journal_options(
    "rebuild", "Where the journal goes (default: beside the first DIR)."
)


@app.command("rebuild-quorum", options_metavar="--controller ID@HOST:PORT=DIR [OPTIONS]")
def rebuild_quorum_command(
    log_dirs: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="LOGDIR...", help="Every log dir of the brokers (their metadata.log.dir among them)."
        ),
    ] = None,
    controllers: Annotated[
        list[str] | None,
        typer.Option(
            "--controller",
            metavar="ID@HOST:PORT=DIR",
            help="A new controller: its node id and CONTROLLER listener, as controller.quorum.voters names "
            "it, and its empty metadata dir (ID=DIR when the listener is not known yet). Repeat for each.",
        ),
    ] = None,
    not_voters: Annotated[
        list[str] | None,
        typer.Option(
            "--not-a-voter",
            metavar="HOST:PORT",
            help="The controller that answers at HOST:PORT is not a voter of this cluster (another "
            "cluster's): go on (without it a controller answering at an old or new controller's endpoint "
            "refuses the run, 78). Repeat for each.",
        ),
    ] = None,
    do_apply: ApplyOption = False,
    backup_dir: _BackupDir = None,
    json_out: JsonOption = False,
    resume_journal: _Resume = None,
    rollback_journal: _Rollback = None,
) -> None:
    """Rebuild lost KRaft controllers from the brokers' copies of the metadata log."""
    from logdoctor.repair.procedures.rebuild_quorum import parse_controller, plan_rebuild_quorum

    planning = bool(log_dirs or controllers)
    if not one_mode(planning, resume_journal, rollback_journal):
        usage_error(
            "give LOGDIR... --controller ID@HOST:PORT=DIR, or --resume JOURNAL, or --rollback JOURNAL"
        )
    if planning and (not log_dirs or not controllers):
        usage_error("LOGDIR... and --controller are required")
    if planning:
        require_log_dirs(log_dirs or [])
    from logdoctor.repair.procedures.common import ProcedureUsageError

    try:
        targets = [parse_controller(c) for c in controllers or []] if planning else []
    except ProcedureUsageError as e:
        usage_error(str(e))

    def make() -> ProcedurePlan:
        pp = plan_rebuild_quorum(
            [str(d) for d in log_dirs or []], targets, backup_dir=backup_dir, not_voters=not_voters
        )
        if do_apply:  # after the refusals: an empty folder for each, where the engine's lock goes
            for t in targets:
                os.makedirs(t.directory, exist_ok=True)
        return pp

    run_procedure(
        "rebuild-quorum",
        make if planning else None,
        do_apply=do_apply,
        json_out=json_out,
        resume_journal=resume_journal,
        rollback_journal=rollback_journal,
        lock_dirs=[Path(t.directory) for t in targets if os.path.isdir(t.directory)] or None,
        backup_dir=backup_dir,
    )
