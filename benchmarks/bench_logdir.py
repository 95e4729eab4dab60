"""Log dir model benchmark: open a log dir of 100,000 segments (2,000 partitions) and list every
partition with its log start and log end offsets.

    .venv/bin/python benchmarks/bench_logdir.py --partitions 2000 --segments 50

The log dir is generated once (cached in /tmp/logdoctor-bench, never in the repo) with
logdoctor.sample.logdir: tiny segments of one small batch each (a roll per batch), with their
.index/.timeindex, a producer snapshot at each log end, checkpoints and meta.properties.
Timings are wall time, warm page cache, best and median of ``--repeat`` runs, each on a fresh LogDir.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from logdoctor.logdir import LogDir
from logdoctor.sample.logdir import TopicSpec, generate_log_dir

BENCH_TMP = Path(os.environ.get("LOGDOCTOR_BENCH_TMP", "/tmp/logdoctor-bench"))


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {model}, Python {platform.python_version()}, {platform.system()}"


def build(partitions: int, segments: int) -> Path:
    topics = max(1, partitions // 100)
    root = BENCH_TMP / f"logdir-{partitions}p-{segments}s"
    log_dir = root / "broker-0" / "kafka-logs-0"
    if (root / "DONE").exists():
        return log_dir
    t0 = time.perf_counter()
    specs = [
        TopicSpec(f"bench.topic_{t:03d}-x", partitions=partitions // topics, records_per_partition=segments,
                  records_per_batch=1, value_size=16, key_size=0, segment_bytes=1)
        for t in range(topics)
    ]
    generate_log_dir(root, specs, producer_snapshots="last")
    (root / "DONE").write_text("")
    print(f"  generated {log_dir} in {time.perf_counter() - t0:.1f}s", flush=True)
    return log_dir


def list_partitions(path: Path) -> tuple[int, int]:
    ld = LogDir(path)
    segs = 0
    for p in ld.partitions:
        segs += len(p.segments)
    return len(ld.partitions), segs


def offsets(path: Path) -> list[tuple[str, int, int | None, int | None]]:
    ld = LogDir(path)
    return [(p.topic, p.partition, p.log_start_offset, p.log_end_offset) for p in ld.partitions]


def timed(repeat: int, fn):
    """(best, median) wall time of ``repeat`` runs, collecting garbage before each."""
    times, result = [], None
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return (min(times), statistics.median(times)), result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=2000)
    ap.add_argument("--segments", type=int, default=50, help="segments per partition")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    path = build(args.partitions, args.segments)
    t_list, (n_parts, n_segs) = timed(args.repeat, lambda: list_partitions(path))
    t_offsets, rows = timed(args.repeat, lambda: offsets(path))
    assert n_parts == args.partitions and n_segs == args.partitions * args.segments, (n_parts, n_segs)
    assert all(r[2] == 0 and r[3] == args.segments for r in rows), rows[:3]
    print(f"command: .venv/bin/python {' '.join(sys.argv)}")
    print(f"machine: {machine()}")
    print(f"log dir: {n_parts} partitions, {n_segs} segments ({path})")
    for label, (best, median) in (
        ("list partitions + segments (scandir only)", t_list),
        ("list partitions + log start/end offsets", t_offsets),
    ):
        print(f"{label:<44} best {best:.2f} s, median {median:.2f} s")


if __name__ == "__main__":
    main()
