"""``logdoctor scan LOGDIR... [FLAGS]`` without the CLI framework (:mod:`logdoctor.cli.fast`): the line's
log dirs and on/off flags, then :func:`logdoctor.cli.scan_run.run_scan`, the typer command's work. This
module imports nothing of the scan: with ``--deep``, the walks of a few big partitions' .log files start
first (:mod:`logdoctor.checks.early_walk`), and the scan's modules (~60 ms) load while they run on the
walk threads; the scan then takes those walks instead of walking the files again (issue 35).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from logdoctor.cli.fast import files_and_flags

__all__ = ["FLAGS", "run_fast"]

# flag -> the keyword of run_scan it sets (the typer command's boolean options, every spelling)
FLAGS: dict[str, str] = {
    "--quick": "quick",
    "--deep": "deep",
    "--json": "json_out",
    "--verbose": "verbose",
    "-v": "verbose",
}


def run_fast(args: Sequence[str]) -> int | None:
    """Scan as ``logdoctor scan ARGS`` would and return its exit code; None when ARGS hold anything but
    log dirs and :data:`FLAGS` (the caller then runs the typer command)."""
    got = files_and_flags(args, FLAGS)
    if got is None:
        return None
    log_dirs, flags = got
    from logdoctor.cli.main import _load_uncollected  # the modules loaded as main() loads a command's

    walking = flags.get("deep") and not flags.get("quick") and _load_uncollected(_start_early_walks, log_dirs)
    interval = sys.getswitchinterval()
    if walking:
        sys.setswitchinterval(WALKING_SWITCH_INTERVAL_S)
    try:
        scan_run: ModuleType = _load_uncollected(importlib.import_module, "logdoctor.cli.scan_run")
    finally:
        sys.setswitchinterval(interval)
    from pathlib import Path  # after the early walks started: the walk needs none of pathlib (~2 ms)

    code: int = scan_run.run_scan([Path(d) for d in log_dirs], **flags)
    return code


#: the interpreter's switch interval while the scan's modules load beside early walks. A walk thread takes
#: the GIL back after each call into C (a read, a chunk's batches, its records: a few per 8 MiB chunk) and
#: waits for it until the importing thread lets go, at the latest after the switch interval (5 ms by
#: default, for ~1 ms of work in C): the walks then crawl while the imports run. Measured under load
#: (paired rounds, BENCHMARKS.md): the early walks with 5 ms +16 ms against none, with 0.5 ms -22 ms.
WALKING_SWITCH_INTERVAL_S = 0.0005


def _start_early_walks(log_dirs: Any) -> bool:
    from logdoctor.checks import early_walk

    return early_walk.start(log_dirs) > 0
