"""Peak memory of the Iceberg latest view's upsert (issue 57 item 5;
``python benchmarks/bench_upsert_memory.py N [DIR]``): an Iceberg table of N rows (one topic, one partition,
distinct 40-byte keys, four data files) is made in DIR (a temporary folder when not given), then N new
latest rows for the same keys (every tenth a tombstone) are upserted by ``IcebergTable.upsert`` in a process
of its own. Prints the rows the table holds after, the upsert process's peak RSS (its ``VmHWM``)
and its time.

``--delta``: the same over a Delta table, upserted by ``DeltaTable.upsert`` (delta-rs's MERGE).

Comparisons: run the same file with ``PYTHONPATH`` at another checkout's ``src``."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from logdoctor.spark.schema import records_arrow_schema
from logdoctor.spark.tables.iceberg import IcebergTable, _arrow_schema

FILES = int(os.environ.get("BENCH_FILES", "4"))


def rows(lo: int, hi: int, offset0: int, tombstone_every: int = 0) -> pa.Table:
    """Rows of keys ``lo..hi`` (each once) at offsets from ``offset0``, in the table's schema."""
    schema = _arrow_schema(records_arrow_schema(False))
    n = hi - lo
    ids = np.arange(lo, hi)
    keys = pa.array([b"key-%036d" % i for i in ids.tolist()], pa.binary())
    values = pa.array([b"value-%d" % i for i in ids.tolist()], pa.binary())
    if tombstone_every:
        values = pa.compute.if_else(pa.array(ids % tombstone_every == 0), pa.nulls(n, pa.binary()), values)
    cols = {}
    for field in schema:
        if field.name == "topic":
            cols["topic"] = pa.array(["t"] * n, pa.string())
        elif field.name == "partition":
            cols["partition"] = pa.array(np.zeros(n, dtype=np.int32))
        elif field.name == "offset":
            cols["offset"] = pa.array(np.arange(offset0 + lo, offset0 + hi, dtype=np.int64))
        elif field.name == "key":
            cols["key"] = keys
        elif field.name == "value":
            cols["value"] = values
        else:
            cols[field.name] = pa.nulls(n, field.type)
    return pa.table(cols, schema=schema)


def write(folder: Path, name: str, table: pa.Table) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    pq.write_table(table, path)
    return str(path)


def build_delta(root: Path, n: int) -> tuple[list[str], list[str]]:
    """``--delta``: the same as a Delta table (files without the partition column ``topic``)."""
    from logdoctor.spark.tables.delta import DeltaLakeTable
    from logdoctor.spark.tables.files import WrittenFile

    table = DeltaLakeTable(str(root / "table"))
    data = Path(table.data_uri) / "topic=t"
    step = -(-n // FILES)

    def written(name: str, rows_: pa.Table) -> WrittenFile:
        path = write(data, name, rows_.drop_columns(["topic"]))
        return WrittenFile(path, Path(path).stat().st_size, rows_.num_rows, {"topic": "t"})

    spans = list(enumerate(range(0, n, step)))
    old = [written(f"old-{i}.parquet", rows(lo, min(n, lo + step), 0)) for i, lo in spans]
    table.commit(old, records_arrow_schema(False), "error", {})
    live, dead = [], []
    for i, lo in enumerate(range(0, n, step)):
        new = rows(lo, min(n, lo + step), n, tombstone_every=10)
        is_dead = pa.compute.is_null(new.column("value"))
        live.append(written(f"new-{i}.parquet", new.filter(pa.compute.invert(is_dead))).path)
        dead.append(written(f"dead-{i}.parquet", new.filter(is_dead)).path)
    return live, dead


def upsert_delta(root: Path, live: list[str], dead: list[str]) -> None:
    from logdoctor.spark.tables.delta import DeltaLakeTable
    from logdoctor.spark.tables.files import WrittenFile

    table = DeltaLakeTable(str(root / "table"))
    table.load()
    files = [WrittenFile(p, Path(p).stat().st_size, 0, {"topic": "t"}) for p in [*live, *dead]]
    t = time.perf_counter()
    table.upsert(files, records_arrow_schema(False), {})
    took = time.perf_counter() - t
    with open("/proc/self/status") as fh:
        peak = next(int(x.split()[1]) for x in fh if x.startswith("VmHWM:")) / 1024
    held = table.load().to_pyarrow_dataset().count_rows()
    changed = sum(pq.ParquetFile(p).metadata.num_rows for p in [*live, *dead])
    print(f"delta upsert of {changed:,} changed keys: {held:,} rows after, peak {peak:.0f} MiB, {took:.1f} s")


def build(root: Path, n: int) -> tuple[list[str], list[str]]:
    """The table of n rows; (the new live files, the new tombstone files) of the upsert, not yet added."""
    table = IcebergTable(str(root / "table"))
    data = Path(table.data_uri) / "topic=t"
    step = -(-n // FILES)
    paths = [
        write(data, f"old-{i}.parquet", rows(lo, min(n, lo + step), 0))
        for i, lo in enumerate(range(0, n, step))
    ]
    schema = records_arrow_schema(False)
    table.commit(paths, schema, "error", {}, {})
    live, dead = [], []
    for i, lo in enumerate(range(0, n, step)):
        new = rows(lo, min(n, lo + step), n, tombstone_every=10)
        is_dead = pa.compute.is_null(new.column("value"))
        live.append(write(data, f"new-{i}.parquet", new.filter(pa.compute.invert(is_dead))))
        dead.append(write(data, f"dead-{i}.parquet", new.filter(is_dead)))
    return live, dead


def upsert(root: Path, live: list[str], dead: list[str]) -> None:
    table = IcebergTable(str(root / "table"))
    table.load()
    t = time.perf_counter()
    table.upsert(live, [*live, *dead], records_arrow_schema(False), {}, {})
    took = time.perf_counter() - t
    with open("/proc/self/status") as fh:  # not ru_maxrss: it keeps the forking parent's peak across exec
        peak = next(int(x.split()[1]) for x in fh if x.startswith("VmHWM:")) / 1024
    held = int(table._table.current_snapshot().summary["total-records"])
    print(
        f"upsert of {len(live) and sum(pq.ParquetFile(p).metadata.num_rows for p in [*live, *dead]):,} "
        f"changed keys: {held:,} rows after, peak {peak:.0f} MiB, {took:.1f} s"
    )


def main() -> None:
    delta = "--delta" in sys.argv
    args = [a for a in sys.argv[1:] if a != "--delta"]
    if args[0] == "--upsert":
        root, files = Path(args[1]), args[2:]
        half = files.index("--")
        (upsert_delta if delta else upsert)(root, files[:half], files[half + 1 :])
        return
    n = int(args[0])
    with tempfile.TemporaryDirectory(dir=args[1] if len(args) > 1 else None) as tmp:
        live, dead = (build_delta if delta else build)(Path(tmp), n)
        wrap = os.environ.get("BENCH_WRAP", "").split()  # e.g. a profiler's script
        flag = ["--delta"] if delta else []
        cmd = [sys.executable, *wrap, __file__, *flag, "--upsert", tmp, *live, "--", *dead]
        subprocess.run(cmd, check=True)


if __name__ == "__main__":
    main()
