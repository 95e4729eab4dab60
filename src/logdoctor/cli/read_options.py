"""The read discipline of the read-only commands (``scan``, ``dump``, ``export``, ``inventory``), issue 58:
the page cache left as the command found it unless ``--keep-cache`` (:mod:`logdoctor.logdir.page_cache`), and
the reads paced to ``--max-read-rate`` (:mod:`logdoctor.logdir.read_rate`). The options are declared here
once and :func:`apply_read_discipline` sets both for the process (``export`` also hands them to its
Spark tasks through the read options: ``keepCache``, ``maxReadRate``)."""

from __future__ import annotations

from typing import Annotated

import typer

from logdoctor.cli.error_lines import usage_error
from logdoctor.logdir import page_cache, read_rate

__all__ = [
    "KeepCacheOption",
    "MaxReadRateOption",
    "apply_read_discipline",
    "parse_read_rate",
    "task_read_rate",
]

KeepCacheOption = Annotated[
    bool,
    typer.Option(
        "--keep-cache",
        help="Leave the pages this command reads in the page cache (by default the pages it brought in "
        "are dropped after reading them, and those cached before are kept: a running broker's hot data "
        "stays cached).",
    ),
]
MaxReadRateOption = Annotated[
    str | None,
    typer.Option(
        "--max-read-rate",
        metavar="BYTES/s",
        help="Read at most this many bytes a second on average (50MiB, 20m, 1048576): a scan of a running "
        "broker's disks that never saturates them.",
    ),
]


def parse_read_rate(text: str | None) -> int | None:
    """``--max-read-rate``'s bytes a second (None: not given); a usage error (exit 64) when not a size."""
    if text is None:
        return None
    try:
        return read_rate.parse_size(text)
    except ValueError as e:
        usage_error(f"--max-read-rate: {e}")


def apply_read_discipline(keep_cache: bool, max_read_rate: str | None) -> int | None:
    """Set the page cache's guard and the read rate for this process; returns the rate (bytes a second)."""
    rate = parse_read_rate(max_read_rate)
    page_cache.leave_as_found(not keep_cache)
    read_rate.limit(rate)
    return rate


def task_read_rate(rate: int, master: str | None) -> int:
    """Each Spark task's share of an export's ``--max-read-rate``: the rate divided among the tasks a local
    master runs at once (``local``: 1, ``local[N]``: N, ``local[*]`` and the default: the cores). A cluster's
    master: the rate is each task's (its executors read their own disks)."""
    import os
    import re

    m = re.fullmatch(r"local(?:\[(\d+|\*)(?:,\s*\d+)?\])?", (master or "local[*]").strip())
    if m is None:
        return rate
    if m.group(1) is None and master is not None:
        tasks = 1  # "local": one thread
    elif m.group(1) in (None, "*"):
        tasks = os.cpu_count() or 1
    else:
        tasks = int(m.group(1))
    return max(1, rate // tasks)
