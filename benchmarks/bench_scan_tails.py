"""The cost of the default scan's tail walks and retention notes (issue 59 items 2 and 4): `scan` at the
default depth without :func:`logdoctor.checks.default.check_tails` (each inactive segment's .log read with
CRCs from its offset index's last entry to its end) and :func:`logdoctor.checks.retention_due.retention_due`
(the next retention round of each partition) as before them, with the tail walks alone, and with both, side
by side in one run (interleaved rounds), and ``--deep`` (what a user would run instead to find a torn
inactive segment) beside them.

    .venv/bin/python benchmarks/bench_scan_tails.py --partitions 1000 --segments 40

Inputs: every log dir of ../shared/realworld (one scan each, in turn), and a generated log dir of
``--partitions`` x ``--segments`` one-batch segments (benchmarks/_common.many_segments_dir: the most
segments per byte, so the most tail walks per byte scanned). Wall time is the best of ``--repeat`` rounds,
CPU the smallest of its runs (the machine is shared: the ratio of one run is what counts).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import command, machine, many_segments_dir, timed_interleaved
from logdoctor.checks import default, partition
from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan

REALWORLD = Path(__file__).resolve().parent.parent.parent / "shared" / "realworld"


def scans(dirs: list[Path], depth: Depth, tails: bool, due: bool, jobs: int) -> Callable[[], int]:
    """A run: each log dir scanned alone; returns the bytes read in all."""

    def run() -> int:
        kept = default.check_tails, partition.retention_due
        if not tails:
            default.check_tails = lambda st: None  # as the default depth was before issue 59 item 2
        if not due:
            partition.retention_due = lambda rep, now_ms: None  # before issue 59 item 4
        try:
            now = int(time.time() * 1000)
            return sum(scan([d], ScanOptions(depth=depth, now_ms=now), jobs=jobs).bytes_read for d in dirs)
        finally:
            default.check_tails, partition.retention_due = kept

    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--segments", type=int, default=40, help="segments per partition")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    jobs = os.cpu_count() or 1
    real = sorted(p for p in REALWORLD.iterdir() if p.is_dir() and not p.name.startswith("_"))
    generated = many_segments_dir(args.partitions, args.segments)
    inputs = {
        f"{len(real)} real log dirs (../shared/realworld)": real,
        f"generated: {args.partitions} partitions x {args.segments} one-batch segments": [generated],
    }
    print(f"command: {command()}")
    print(f"machine: {machine()}")
    print(f"load average before: {os.getloadavg()[0]:.2f}\n")
    head = ("input", "run", "best wall", "median wall", "CPU (least)", "bytes read")
    head += ("wall vs before", "CPU vs before")
    print("| " + " | ".join(head) + " |")
    print("|---|---|---|---|---|---|---|---|")
    for label, dirs in inputs.items():
        fns: dict[str, Callable[[], Any]] = {
            "default, before": scans(dirs, Depth.DEFAULT, False, False, jobs),
            "default, tail walks": scans(dirs, Depth.DEFAULT, True, False, jobs),
            "default, tail walks and RETENTION_DUE (after)": scans(dirs, Depth.DEFAULT, True, True, jobs),
            "--deep (the alternative)": scans(dirs, Depth.DEEP, True, True, jobs),
        }
        got = timed_interleaved(args.repeat, fns)
        anchor, anchor_cpu = got["default, before"][0].best, got["default, before"][1]
        for run, (t, cpu) in got.items():
            print(
                f"| {label} | {run} | {t.best:.3f} s | {t.median:.3f} s | {cpu:.3f} s | "
                f"{t.result / 1e6:.3f} MB | {t.best / anchor:.2f}x | {cpu / anchor_cpu:.2f}x |"
            )
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
