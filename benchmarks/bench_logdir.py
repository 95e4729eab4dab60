"""Log dir model benchmark: open a log dir of 100,000 segments (2,000 partitions) and list every
partition with its log start and log end offsets.

    .venv/bin/python benchmarks/bench_logdir.py --partitions 2000 --segments 50

The log dir is generated once (cached in /tmp/logdoctor-bench, never in the repo) with
logdoctor.sample.logdir: tiny segments of one small batch each (a roll per batch), with their
.index/.timeindex, a producer snapshot at each log end, checkpoints and meta.properties.
Timings are wall time, warm page cache, best and median of ``--repeat`` runs, each on a fresh LogDir. The
rows of BENCHMARKS.md's "Records" table follow (``benchmarks/update_table.py`` puts them in place).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import TableRows, command, machine, many_segments_dir, timed
from logdoctor.logdir import LogDir


def list_partitions(path: Path) -> tuple[int, int]:
    ld = LogDir(path)
    segs = 0
    for p in ld.partitions:
        segs += len(p.segments)
    return len(ld.partitions), segs


def offsets(path: Path) -> list[tuple[str, int, int | None, int | None]]:
    ld = LogDir(path)
    return [(p.topic, p.partition, p.log_start_offset, p.log_end_offset) for p in ld.partitions]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=2000)
    ap.add_argument("--segments", type=int, default=50, help="segments per partition")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    path = many_segments_dir(args.partitions, args.segments)
    t_list = timed(args.repeat, lambda: list_partitions(path))
    t_offsets = timed(args.repeat, lambda: offsets(path))
    (n_parts, n_segs), rows = t_list.result, t_offsets.result
    assert n_parts == args.partitions and n_segs == args.partitions * args.segments, (n_parts, n_segs)
    assert all(r[2] == 0 and r[3] == args.segments for r in rows), rows[:3]
    print(f"command: {command()}")
    print(f"machine: {machine()}")
    print(f"log dir: {n_parts} partitions, {n_segs} segments ({path})")
    for label, t in (
        ("list partitions + segments (scandir only)", t_list),
        ("list partitions + log start/end offsets", t_offsets),
    ):
        print(f"{label:<44} best {t.best:.2f} s, median {t.median:.2f} s")
    table = TableRows()
    table.add(
        f"log dir model: list {n_parts:,} partitions and their {n_segs:,} segments",
        f"{t_list.best:.2f} s best, {t_list.median:.2f} s median",
    )
    table.add(
        f"log dir model: list {n_parts:,} partitions with their log start and end offsets",
        f"{t_offsets.best:.2f} s best, {t_offsets.median:.2f} s median",
    )
    table.print()


if __name__ == "__main__":
    main()
