"""Records/s of `export --format iceberg|delta` (pyarrow tasks + one commit) beside `--writer spark` and the
single-process pyarrow export (``_common.export_parquet_one_process``), per core, on local Spark.

Data: bench_spark.py's generated log dir in /tmp/logdoctor-bench. Each Spark run is a fresh process; its
time is the export job alone (planning, tasks, commit, removal of uncommitted files; not the session
start), best of ``--repeat`` after one warm-up run. Each table run starts from an empty table
(``--mode overwrite`` of a fresh folder) so every run writes and commits every record.

``--standalone N`` adds a real Spark standalone cluster (tests/spark/standalone.py: the pinned PySpark's
master and N one-core workers on 127.0.0.1, executors of 512 MiB) as master ``standalone``, N cores.

Usage: PYSPARK_PYTHON=$PWD/.venv/bin/python .venv/bin/python benchmarks/bench_tables.py \
    [--records 300000] [--repeat 1] [--masters local[1] local[2]] [--standalone 2]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "spark"))

from _common import BENCH_TMP, export_parquet_one_process, machine
from bench_spark import make_data

KINDS = ("iceberg", "delta", "spark")


def one_process(path: Path) -> tuple[int, float]:
    from logdoctor.logdir.discovery import discover
    from logdoctor.logdir.slices import parse_read_options, plan_slices

    opts = parse_read_options({})
    slices = plan_slices(discover(str(path)), opts)
    t = time.perf_counter()
    n = export_parquet_one_process(slices, opts, BENCH_TMP / "tables-baseline-parquet")
    return n, n / (time.perf_counter() - t)


def child(path: Path, master: str, kind: str, repeat: int) -> dict[str, float]:
    from logdoctor.spark.session import get_spark

    conf = {} if master.startswith("local") else {"spark.executor.memory": "512m"}
    spark = get_spark(master, "bench-tables", conf=conf)
    best = None
    rows = 0
    for i in range(repeat + 1):  # the first run starts the Python workers: not counted
        out = BENCH_TMP / f"tables-{kind}-{i}"
        shutil.rmtree(out, ignore_errors=True)
        Path(f"{out}.catalog.db").unlink(missing_ok=True)
        if kind == "spark":
            from logdoctor.spark.export import run_export

            res = run_export(spark, [str(path)], out, writer="spark", mode="overwrite")
        else:
            from logdoctor.spark.tables.export import run_table_export

            res = run_table_export(spark, [str(path)], str(out), fmt=kind, mode="overwrite")
        rows = res.rows
        if i > 0:
            best = res.elapsed_s if best is None else min(best, res.elapsed_s)
    spark.stop()
    return {"records": rows, "seconds": best or 0.0, "records_per_s": rows / best if best else 0.0}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--masters", nargs="+", default=["local[1]", "local[2]"])
    ap.add_argument(
        "--standalone",
        type=int,
        default=0,
        metavar="WORKERS",
        help="also run on a standalone cluster of WORKERS one-core workers",
    )
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    path = make_data(args.records)
    if args.child:
        print(json.dumps(child(path, args.child[0], args.child[1], args.repeat)))
        return
    size = sum(p.stat().st_size for p in path.glob("*/*.log"))
    records, base = one_process(path)
    results = {}
    cores = {m: int(m.removeprefix("local[").rstrip("]")) for m in args.masters}
    with contextlib.ExitStack() as stack:
        env = os.environ.copy()
        masters = {m: m for m in args.masters}
        if args.standalone:
            from standalone import cluster_env, standalone_cluster

            url = stack.enter_context(standalone_cluster(BENCH_TMP / "standalone", workers=args.standalone))
            env = cluster_env()
            masters["standalone"] = url
            cores["standalone"] = args.standalone
        for kind in KINDS:
            for name, master in masters.items():
                proc = subprocess.run(
                    [sys.executable, __file__, "--records", str(args.records), "--repeat", str(args.repeat),
                     "--child", master, kind],
                    capture_output=True, text=True, check=True, env=env,
                )  # fmt: skip
                results[(kind, name)] = json.loads(proc.stdout.strip().splitlines()[-1])
                print(
                    f"{time.strftime('%H:%M:%S')} {kind} {name}: {results[(kind, name)]} "
                    f"load {os.getloadavg()}",
                    file=sys.stderr,
                    flush=True,
                )
    print(f"machine: {machine()}")
    print(f"data: {records:,} records, {size / 1e6:.0f} MB of segments in {path}")
    print("| run | records/s | per core | one process (pyarrow Parquet) / per core |")
    print("|---|---|---|---|")
    print(f"| one process: read_slice + pyarrow Parquet | {base:,.0f} | {base:,.0f} | 1.00x |")
    for (kind, master), r in results.items():
        assert r["records"] == records, (kind, master, r)
        per_core = r["records_per_s"] / cores[master]
        name = f"--format {kind}" if kind != "spark" else "--format parquet --writer spark"
        rate = r["records_per_s"]
        print(f"| export {name} {master} | {rate:,.0f} | {per_core:,.0f} | {base / per_core:.2f}x |")


if __name__ == "__main__":
    main()
