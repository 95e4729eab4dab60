"""``logdoctor scan LOGDIR... [FLAGS]`` without the CLI framework (:mod:`logdoctor.cli.fast`): the line's
log dirs and on/off flags, then :func:`logdoctor.cli.scan_run.run_scan`, the typer command's work. This
module imports nothing of the scan: with ``--deep``, the walks of a few big partitions' .log files start
first (:mod:`logdoctor.checks.early_walk`), and the scan's modules (~60 ms) load while they run on the
walk threads; the scan then takes those walks instead of walking the files again (issue 35).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from logdoctor.cli.fast import WALKING_SWITCH_INTERVAL_S, files_and_flags, import_beside

__all__ = ["FLAGS", "WALKING_SWITCH_INTERVAL_S", "run_fast"]

# flag -> the keyword of run_scan it sets (the typer command's boolean options, every spelling)
FLAGS: dict[str, str] = {
    "--quick": "quick",
    "--deep": "deep",
    "--json": "json_out",
    "--verbose": "verbose",
    "-v": "verbose",
    "--keep-cache": "keep_cache",
}


def run_fast(args: Sequence[str]) -> int | None:
    """Scan as ``logdoctor scan ARGS`` would and return its exit code; None when ARGS hold anything but
    log dirs and :data:`FLAGS` (the caller then runs the typer command)."""
    got = files_and_flags(args, FLAGS)
    if got is None:
        return None
    log_dirs, flags = got
    from logdoctor.logdir import page_cache

    # as the typer command sets it (cli.read_options), before the early walks start reading
    page_cache.leave_as_found(not flags.pop("keep_cache", False))
    from logdoctor.cli.main import _load_uncollected  # the modules loaded as main() loads a command's

    walking = flags.get("deep") and not flags.get("quick") and _load_uncollected(_start_early_walks, log_dirs)
    scan_run = import_beside(bool(walking), "logdoctor.cli.scan_run")
    from pathlib import Path  # after the early walks started: the walk needs none of pathlib (~2 ms)

    code: int = scan_run.run_scan([Path(d) for d in log_dirs], **flags)
    return code


def _start_early_walks(log_dirs: Any) -> bool:
    from logdoctor.checks import early_walk

    return early_walk.start(log_dirs) > 0
