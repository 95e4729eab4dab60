"""What Spark 4.1's Python Data Source path costs with no decoding at all: the floor under issue 12's goals.

A Python data source (``prebuilt``, defined here) yields one Arrow batch of the ``kafka-log`` schema,
read once per task from the benchmark's real segments with ``read_slice``, again and again: the Python
workers do nothing but send Arrow IPC, so the time left is Spark's own row path (the JVM turns every
Arrow batch into rows with ``ColumnarBatch.rowIterator`` + ``UnsafeProjection``: there is no columnar
read and no column pruning for Python data sources in 4.1.1, ``PythonScan.columnarSupportMode`` is
``UNSUPPORTED``). Measured on ``local[1]`` (per core) and ``local[2]``, best of ``--repeat`` after a warm-up:

- ``prebuilt -> noop``: the most any Python data source can reach into a DataFrame sink (issue 12's
  goal for ``kafka-log`` -> ``noop``: >= 1M rows/s per core), and the same with the empty header
  lists made null (what Spark's own Kafka source gives for a record without headers);
- ``kafka-log -> noop`` over segments of as many records (16 per batch, bench_dataframe.py's shape);
- ``prebuilt -> parquet`` with Spark's writer, with its defaults and with the dictionary encoding off
  (``parquet.enable.dictionary=false``, per write): the most ``export --writer spark`` can reach;
- Spark's own vectorized Parquet reader over the same rows (written by pyarrow) -> ``noop`` and ->
  ``parquet``: Spark's writer fed by Spark's columnar reader, with no Python at all;
- one process: pyarrow writing the same rows to Parquet (issue 12's baseline for ``--writer spark``).

Usage: PYSPARK_PYTHON=$PWD/.venv/bin/python .venv/bin/python benchmarks/bench_spark_floor.py
    [--rows 2400000] [--repeat 2]
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

from _common import BENCH_TMP, machine
from bench_dataframe import make_data, measure

TASKS = 4


def first_batch(path: str, null_headers: bool = False):
    """One Arrow batch of kafka-log's schema: the first ``read_slice`` gives of the real segments
    (``null_headers``: its empty header lists made null, as Spark's Kafka source has them)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from logdoctor.logdir.discovery import discover
    from logdoctor.logdir.slices import parse_read_options, plan_slices
    from logdoctor.spark.sources.slice_reader import read_slice

    opts = parse_read_options({})
    batch = next(read_slice(plan_slices(discover(path), opts)[0], opts))
    if not null_headers:
        return batch
    i = batch.schema.get_field_index("headers")
    headers = batch.column(i)
    empty = pc.equal(pc.list_value_length(headers), 0)
    nulled = pa.ListArray.from_arrays(headers.offsets, headers.values, mask=empty)
    return batch.set_column(i, batch.schema.field(i), nulled)


def repeated(batch, rows: int):
    """``batch`` again and again, the last one cut, until ``rows`` rows are yielded."""
    while rows > 0:
        out = batch if rows >= batch.num_rows else batch.slice(0, rows)
        rows -= out.num_rows
        yield out


def register_prebuilt(spark) -> None:
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class PrebuiltReader(DataSourceReader):
        def __init__(self, options: dict[str, str]) -> None:
            self.path = options["path"]
            self.rows = int(options["rows"])
            self.null_headers = options.get("null_headers") == "true"

        def partitions(self):
            return [InputPartition(i) for i in range(TASKS)]

        def read(self, partition):
            yield from repeated(first_batch(self.path, self.null_headers), self.rows // TASKS)

    class Prebuilt(DataSource):
        @classmethod
        def name(cls) -> str:
            return "prebuilt"

        def schema(self) -> str:
            from logdoctor.spark.schema import records_ddl

            return records_ddl()

        def reader(self, schema):
            return PrebuiltReader(dict(self.options))

    spark.dataSource.register(Prebuilt)


def pyarrow_parquet(path: Path, rows: int, out: Path) -> Path:
    """The same rows (the batch repeated) as one Parquet file, written by pyarrow (snappy, its defaults)."""
    import pyarrow.parquet as pq

    batch = first_batch(str(path))
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    with pq.ParquetWriter(out / "part-0.parquet", batch.schema, compression="snappy") as w:
        for b in repeated(batch, rows):
            w.write_batch(b)
    return out


def spark_runs(path: Path, master: str, rows: int, repeat: int) -> dict[str, dict[str, float]]:
    from logdoctor.spark.session import get_spark

    spark = get_spark(master, "bench-spark-floor")
    register_prebuilt(spark)
    cores = master.removeprefix("local[").rstrip("]")
    native = pyarrow_parquet(path, rows, BENCH_TMP / "floor-pyarrow-input")

    def prebuilt(null_headers: bool = False):
        read = spark.read.format("prebuilt").option("path", str(path)).option("rows", str(rows))
        return read.option("null_headers", str(null_headers).lower()).load()

    def sink(df_fn, fmt: str, **options: str):
        def run() -> int:
            w = df_fn().write.mode("overwrite")
            for k, v in options.items():
                w = w.option(k, v)
            if fmt == "noop":
                w.format("noop").save()
            else:
                w.parquet(str(BENCH_TMP / f"floor-out-{cores}"))
            return rows

        return run

    def kafka_log():
        return spark.read.format("kafka-log").load(str(path))

    def spark_parquet():
        return spark.read.parquet(str(native))

    no_dict = {"parquet.enable.dictionary": "false"}
    out = {
        f"{master}: prebuilt Arrow batches -> noop": measure(repeat, sink(prebuilt, "noop")),
        f"{master}: prebuilt, null headers -> noop": measure(repeat, sink(lambda: prebuilt(True), "noop")),
        f"{master}: kafka-log -> noop": measure(repeat, sink(kafka_log, "noop")),
        f"{master}: prebuilt -> Spark Parquet writer": measure(repeat, sink(prebuilt, "parquet")),
        f"{master}: prebuilt -> Spark Parquet writer, no dictionary": measure(
            repeat, sink(prebuilt, "parquet", **no_dict)
        ),
        f"{master}: Spark Parquet reader -> noop": measure(repeat, sink(spark_parquet, "noop")),
        f"{master}: Spark Parquet reader -> Spark Parquet writer": measure(
            repeat, sink(spark_parquet, "parquet")
        ),
    }
    spark.stop()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_400_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--masters", nargs="+", default=["local[1]", "local[2]"])
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    path = make_data(args.rows, 16)
    if args.child:
        print(json.dumps(spark_runs(path, args.child, args.rows, args.repeat)))
        return
    print(machine())
    print(f"rows per run: {args.rows:,} (kafka-log: segments of as many records, 16 per batch)")
    one = measure(args.repeat, lambda: _one_process(path, args.rows))
    results = {"one process: pyarrow Parquet writer, same rows": one}
    for master in args.masters:
        cmd = [sys.executable, __file__, "--child", master, "--rows", str(args.rows)]
        cmd += ["--repeat", str(args.repeat)]
        done = subprocess.run(cmd, check=True, capture_output=True, text=True, env=dict(os.environ))
        results.update(json.loads(done.stdout.strip().splitlines()[-1]))
    base = one["wall"]
    print(
        "| run | wall | rows/s | per core | CPU-s (JVM / Python workers) | per-core time vs pyarrow writer |"
    )
    print("|---|---|---|---|---|---|")
    for name, r in results.items():
        cores = int(name.split("[", 1)[1].split("]", 1)[0]) if name.startswith("local[") else 1
        rate = args.rows / r["wall"]
        split = f"{r.get('cpu jvm', 0):.2f} / {r.get('cpu python workers', 0):.2f}"
        ratio = (r["wall"] * cores) / base
        print(f"| {name} | {r['wall']:.3f} s | {rate:,.0f} | {rate / cores:,.0f} | {r['cpu']:.2f} ({split}) "
              f"| {ratio:.2f}x |")  # fmt: skip


def _one_process(path: Path, rows: int) -> int:
    pyarrow_parquet(path, rows, BENCH_TMP / "floor-one-process")
    return rows


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
