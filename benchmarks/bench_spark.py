"""Records/s of `logdoctor export` with local Spark (local[1], local[2]) against one Python process.

Data: a generated log dir (logdoctor.sample.logdir) in /tmp/logdoctor-bench, reused while its spec
is unchanged. Each Spark run is a fresh process (one session per master); its time is the export
job alone (planning, reading, Parquet writing), not the session start, best of ``--repeat``.
Baselines in one process on the same segments:
- decode: ``iter_batches`` + ``Batch.records()`` (the plain record iterator), no output;
- arrow: ``read_slice`` (exactly the code a Spark task runs) to Arrow batches;
- parquet: ``read_slice`` + ``pyarrow.parquet`` (a single-process export).

Usage: .venv/bin/python benchmarks/bench_spark.py [--records 600000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import BENCH_TMP, export_parquet_one_process, machine


def make_data(records: int) -> Path:
    from logdoctor.sample.logdir import TopicSpec, generate_log_dir

    root = BENCH_TMP / f"spark-{records}"
    marker = root / ".complete"
    if marker.exists():
        return root / "broker-0" / "kafka-logs-0"
    if root.exists():
        shutil.rmtree(root)
    per_partition = records // 4
    path, _ = generate_log_dir(
        root,
        [
            TopicSpec(
                "bench",
                partitions=4,
                records_per_partition=per_partition,
                records_per_batch=16,
                value_size=200,
                key_size=12,
                segment_bytes=32 * 1024 * 1024,
            )
        ],
    )
    marker.write_text("ok\n")
    return path


def baselines(path: Path) -> dict[str, float]:

    from logdoctor.formats.records import iter_batches
    from logdoctor.logdir.discovery import discover
    from logdoctor.logdir.files import map_file
    from logdoctor.logdir.slices import parse_read_options, plan_slices
    from logdoctor.spark.sources.slice_reader import read_slice

    opts = parse_read_options({})
    slices = plan_slices(discover(str(path)), opts)
    out: dict[str, float] = {}

    t = time.perf_counter()
    n = 0
    for sl in slices:
        for b in iter_batches(map_file(sl.segment.path), verify_crc=True):
            for _r in b.records():
                n += 1
    out["decode"] = n / (time.perf_counter() - t)

    t = time.perf_counter()
    n = 0
    for sl in slices:
        for rb in read_slice(sl, opts):
            n += rb.num_rows
    out["arrow"] = n / (time.perf_counter() - t)

    t = time.perf_counter()
    n = export_parquet_one_process(slices, opts, BENCH_TMP / "spark-baseline-parquet")
    out["parquet"] = n / (time.perf_counter() - t)
    out["records"] = n
    return out


def spark_run(path: Path, master: str, repeat: int, writer: str) -> dict[str, float]:
    """Runs in a child process: export with ``master``; best time of ``repeat`` runs."""
    from logdoctor.spark.export import run_export
    from logdoctor.spark.session import get_spark

    spark = get_spark(master, "bench")
    best = None
    rows = 0
    for i in range(repeat + 1):  # the first run starts the Python workers: not counted
        out = BENCH_TMP / f"spark-export-{master.removeprefix('local[').rstrip(']')}"
        res = run_export(spark, [str(path)], out, writer=writer, mode="overwrite")
        rows = res.rows
        if i > 0:
            best = res.elapsed_s if best is None else min(best, res.elapsed_s)
    spark.stop()
    return {"records": rows, "seconds": best or 0.0, "records_per_s": rows / best if best else 0.0}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=600_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--writer", default="arrow", help=argparse.SUPPRESS)
    args = ap.parse_args()
    path = make_data(args.records)
    if args.child:
        print(json.dumps(spark_run(path, args.child, args.repeat, args.writer)))
        return
    size = sum(p.stat().st_size for p in path.glob("*/*.log"))
    base = baselines(path)
    results = {}
    for writer in ("arrow", "spark"):
        for master in ("local[1]", "local[2]"):
            proc = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--records",
                    str(args.records),
                    "--repeat",
                    str(args.repeat),
                    "--child",
                    master,
                    "--writer",
                    writer,
                ],
                capture_output=True,
                text=True,
                check=True,
                env=os.environ.copy(),
            )
            results[(writer, master)] = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"machine: {machine()}")
    print(f"data: {base['records']:,} records, {size / 1e6:.0f} MB of segments in {path}")
    print("| run | records/s | vs one process (parquet) |")
    print("|---|---|---|")
    for name in ("decode", "arrow", "parquet"):
        print(f"| one process: {name} | {base[name]:,.0f} | {base[name] / base['parquet']:.2f}x |")
    for (writer, master), r in results.items():
        assert r["records"] == base["records"], (writer, master, r)
        print(
            f"| spark export --writer {writer} {master} | {r['records_per_s']:,.0f} | "
            f"{r['records_per_s'] / base['parquet']:.2f}x |"
        )
    for writer in ("arrow", "spark"):
        one, two = (
            results[(writer, "local[1]")]["records_per_s"],
            results[(writer, "local[2]")]["records_per_s"],
        )
        print(
            f"--writer {writer}: Spark overhead per core (one process parquet / local[1]): "
            f"{base['parquet'] / one:.2f}x; local[2] per core: {base['parquet'] / (two / 2):.2f}x; "
            f"scaling local[2]/local[1]: {two / one:.2f}x"
        )


if __name__ == "__main__":
    main()
