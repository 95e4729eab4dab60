"""``logdoctor repair LOGDIR... [FLAGS] [--backup-dir DIR] [--only CODE,...] [--jobs N]`` run without the CLI
framework (:mod:`logdoctor.cli.fast`): :func:`run_fast`, which the registry names for `repair`. Any other
call (an option with a value other than these, a ``--jobs`` value other than a plain decimal from 1,
``--resume``/``--rollback``, ``--help``, ...) is left to the typer command (:mod:`logdoctor.cli.repair`);
both run :func:`logdoctor.cli.repair_run.run_repair`. This module imports nothing of the repair: the big
.log files of a few partitions are mapped first, on a thread of their own and populated without the GIL
(:func:`logdoctor.checks.early_walk.start_mappings`), while the repair's modules (~90 ms) load; its
planning scan then adopts those mappings instead of mapping the files anew (issue 35).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from logdoctor.cli.fast import files_and_flags, import_beside

__all__ = ["COUNTS", "FLAGS", "VALUES", "run_fast"]

# flag -> the keyword of run_repair it sets (the typer command's boolean options, every spelling)
FLAGS: dict[str, str] = {
    "--apply": "do_apply",
    "--json": "json_out",
    "--deep": "deep",
    "--verbose": "verbose",
    "-v": "verbose",
    "--allow-metadata-loss": "allow_metadata_loss",
    "--allow-unfinished-journal": "allow_unfinished",
}
# option taking a value -> its keyword (typer's types for these are certain: a Path, a str)
VALUES: dict[str, str] = {"--backup-dir": "backup_dir", "--only": "only"}
# option taking a whole number of at least 1 (typer: int, min=1) -> its keyword. Only a plain decimal
# (ASCII digits, no sign, space, underscore or leading zero) is taken here, a value click's int() turns
# into that very number and its range accepts; any other value is left to typer's parsing and messages.
COUNTS: dict[str, str] = {"--jobs": "jobs", "-j": "jobs"}
_PLAIN_COUNT = re.compile(r"[1-9][0-9]*")


def run_fast(args: Sequence[str]) -> int | None:
    """Repair as ``logdoctor repair ARGS`` would and return its exit code; None when ARGS hold anything
    but log dirs, :data:`FLAGS` and :data:`VALUES` (the caller then runs the typer command)."""
    got = files_and_flags(args, FLAGS, {**VALUES, **COUNTS})
    if got is None:
        return None
    log_dirs, options = got
    if "jobs" in options:
        if not _PLAIN_COUNT.fullmatch(options["jobs"]):
            return None
        options["jobs"] = int(options["jobs"])
    from logdoctor.cli.main import _load_uncollected  # the modules loaded as main() loads a command's

    mapping = bool(log_dirs) and _load_uncollected(_start_early_mappings, log_dirs)
    repair_run = import_beside(bool(mapping), "logdoctor.cli.repair_run")
    from pathlib import Path  # after the early mappings started (~2 ms)

    if "backup_dir" in options:
        options["backup_dir"] = Path(options["backup_dir"])
    try:
        code: int = repair_run.run_repair([Path(d) for d in log_dirs], **options)
    finally:
        if mapping:  # those not adopted (an error before the planning scan): never seen by a later run
            from logdoctor.checks.state.early_mappings import drop_early_mappings

            drop_early_mappings()
    return code


def _start_early_mappings(log_dirs: Any) -> bool:
    from logdoctor.checks import early_walk

    return early_walk.start_mappings(log_dirs) > 0
