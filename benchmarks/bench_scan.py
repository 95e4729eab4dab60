"""`logdoctor scan` benchmark: --quick and default on 100,000 segments in 2,000 partitions, and --deep
throughput on big segments.

    .venv/bin/python benchmarks/bench_scan.py --partitions 2000 --segments 50

Log dirs are generated once and cached in /tmp/logdoctor-bench (never in the repo):
- the many-segments dir with logdoctor.sample.logdir (_common.many_segments_dir, shared with
  bench_logdir.py: tiny segments of one batch each, trimmed indexes, clean shutdown marker, checkpoints);
- the deep dir: two partitions whose single segment is a hard link to a 1 GiB generated segment
  (uncompressed and lz4, ~16 KB batches, logdoctor.sample.records), with indexes rebuilt as
  LogSegment.recover would (logdoctor.formats.recovery).
Timings are wall time with a warm page cache, all cores (one worker process per core), best and
median of ``--repeat`` runs; the CLI row includes interpreter start-up and JSON output. The rows of
BENCHMARKS.md's "Scan" table follow (``benchmarks/update_table.py`` puts them in place).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import BENCH_TMP, TableRows, command, machine, many_segments_dir, ratio, segment, timed
from logdoctor.formats.checkpoint import new_offset_checkpoint, write_offset_checkpoint
from logdoctor.formats.records import Compression
from logdoctor.formats.recovery import rebuild_indexes
from logdoctor.sample.records import RecordDataSpec

REPO = Path(__file__).resolve().parent.parent


def deep_dir() -> Path:
    root = BENCH_TMP / "scan-deep-2x1g"
    if (root / "DONE").exists():
        return root
    root.mkdir(parents=True, exist_ok=True)
    sources = [
        segment(
            RecordDataSpec(record_count=None, target_bytes=1 << 30, compression=c),
            f"records-{c.label}-1024mb",
        )
        for c in (Compression.NONE, Compression.LZ4)
    ]
    entries = []
    for i, src in enumerate(sources):
        part = root / f"bench.deep-{i}"
        part.mkdir(exist_ok=True)
        log = part / "00000000000000000000.log"
        if not log.exists():
            os.link(src, log)
        data = log.read_bytes()
        rebuilt = rebuild_indexes(data, 0, source=str(log))
        (part / "00000000000000000000.index").write_bytes(rebuilt.offset_index)
        (part / "00000000000000000000.timeindex").write_bytes(rebuilt.time_index)
        from logdoctor.checks.state.segment_walk import walk

        end = walk(data, 0, verify_crc=False).last_offset
        entries.append((part.name.rsplit("-", 1)[0], i, (end or -1) + 1))
    cp = write_offset_checkpoint(new_offset_checkpoint(entries))
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        (root / name).write_bytes(cp)
    (root / "meta.properties").write_text("version=0\nbroker.id=0\ncluster.id=AAAAAAAAAAAAAAAAAAAAAQ\n")
    (root / ".kafka_cleanshutdown").write_text("")
    (root / "DONE").write_text("")
    return root


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=2000)
    ap.add_argument("--segments", type=int, default=50, help="segments per partition")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-deep", action="store_true")
    args = ap.parse_args()
    jobs = os.cpu_count() or 1
    now = int(time.time() * 1000)
    path = many_segments_dir(args.partitions, args.segments)
    table = TableRows()
    depth_names = {Depth.QUICK: "`--quick`", Depth.DEFAULT: "default depth", Depth.DEEP: "`--deep`"}
    rows = []
    for depth in (Depth.QUICK, Depth.DEFAULT, Depth.DEEP):
        best, median, cpu, rep = timed(
            args.repeat, lambda d=depth: scan([path], ScanOptions(depth=d, now_ms=now), jobs=jobs)
        )
        segs = sum(p.segments for p in rep.partitions)
        assert len(rep.partitions) == args.partitions and segs == args.partitions * args.segments
        assert rep.exit_code == 0, rep.findings[:3]
        rows.append((f"{depth.name.lower()} (scanner API)", best, median, cpu, rep.bytes_read))
        table.add(
            f"scanner API {depth_names[depth]}, {args.partitions:,} partitions x {args.segments} segments",
            f"{best:.2f} s best, {median:.2f} s median (CPU {cpu:.2f} s; {rep.bytes_read / 1e6:.1f} MB read)",
        )
    cli = REPO / ".venv" / "bin" / "logdoctor"
    for flag in ("--quick", None):
        cmd = [str(cli), "scan", "--json", *([flag] if flag else []), str(path)]
        best, median, cpu, _ = timed(
            args.repeat, lambda c=cmd: subprocess.run(c, stdout=subprocess.DEVNULL, check=False)
        )
        rows.append((f"`logdoctor scan {flag or ''}` (CLI, JSON)", best, median, cpu, None))
    print(f"command: {command()}")
    print(f"machine: {machine()}")
    print(f"log dir: {args.partitions} partitions, {args.partitions * args.segments} segments ({path})\n")
    print(f"load average before: {os.getloadavg()[0]:.2f}\n")
    print("| run | best wall | median wall | CPU (best run) | bytes read |")
    print("|---|---|---|---|---|")
    for label, best, median, cpu, read in rows:
        print(
            f"| {label} | {best:.2f} s | {median:.2f} s | {cpu:.2f} s | "
            f"{'' if read is None else f'{read / 1e6:.1f} MB'} |"
        )
    if args.skip_deep:
        table.print()
        return
    d = deep_dir()
    total = sum((d / p / "00000000000000000000.log").stat().st_size for p in ("bench.deep-0", "bench.deep-1"))
    one_worker = None
    for j in (1, jobs):
        best, median, cpu, rep = timed(
            args.repeat, lambda j=j: scan([d], ScanOptions(depth=Depth.DEEP, now_ms=now), jobs=j)
        )
        assert rep.exit_code == 0, rep.findings[:3]
        print(
            f"| --deep, 2 x 1 GiB segments, {j} worker(s) | {best:.2f} s ({total / best / 1e9:.2f} GB/s) | "
            f"{median:.2f} s ({total / median / 1e9:.2f} GB/s) | {cpu:.2f} s ({total / cpu / 1e9:.2f} GB per "
            f"CPU-s) | {rep.bytes_read / 1e9:.2f} GB |"
        )
        if j == 1:
            one_worker = best
        elif one_worker is not None:
            table.add(
                f"scanner API `--deep`, 2 x 1 GiB segments, {j} workers",
                f"{best:.2f} s best ({total / best / 1e9:.2f} GB/s)",
                f"the same on 1 worker: {one_worker:.2f} s ({total / one_worker / 1e9:.2f} GB/s)",
                ratio(best, one_worker),
            )
    table.print()


if __name__ == "__main__":
    main()
