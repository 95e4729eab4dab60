"""Reading the tables of `export --format iceberg|delta` back with each format's own library, and the
expected records from kafka-python (oracle.py), for tests/spark/test_tables*.py."""

from __future__ import annotations

from pathlib import Path

import oracle
import pyarrow.parquet as pq

FORMATS = ("iceberg", "delta")
COLS = ("topic", "partition", "offset", "key", "value")


def iceberg_table(out, name: str = "logdoctor.records", catalog: dict | None = None):
    from pyiceberg.catalog import load_catalog

    props = catalog or {"type": "sql", "uri": f"sqlite:///{Path(out).resolve()}.catalog.db"}
    return load_catalog("logdoctor", **props).load_table(name)


def read_table(fmt: str, out, catalog: dict | None = None, **delta_options):
    """The whole table as Arrow, read by the format's own reader (pyiceberg scan / deltalake)."""
    if fmt == "iceberg":
        return iceberg_table(out, catalog=catalog).scan().to_arrow()
    from deltalake import DeltaTable

    return DeltaTable(str(out), **delta_options).to_pyarrow_table()


def table_exists(fmt: str, out) -> bool:
    if fmt == "iceberg":
        from pyiceberg.exceptions import NoSuchTableError

        try:
            iceberg_table(out)
        except NoSuchTableError:
            return False
        return True
    return Path(out, "_delta_log").is_dir() and any(Path(out, "_delta_log").glob("*.json"))


def version(fmt: str, out):
    """The table's current snapshot id (Iceberg) or version (Delta)."""
    if fmt == "iceberg":
        snap = iceberg_table(out).current_snapshot()
        return None if snap is None else snap.snapshot_id
    from deltalake import DeltaTable

    return DeltaTable(str(out)).version()


def data_files(fmt: str, out) -> list[str]:
    """The data files the current snapshot references."""
    if fmt == "iceberg":
        return sorted(t.file.file_path for t in iceberg_table(out).scan().plan_files())
    from deltalake import DeltaTable

    return sorted(u.removeprefix("file://") for u in DeltaTable(str(out)).file_uris())


def properties(fmt: str, out) -> dict[str, str]:
    """logdoctor's table properties: Iceberg's table properties, Delta's last commitInfo."""
    if fmt == "iceberg":
        return dict(iceberg_table(out).properties)
    from deltalake import DeltaTable

    return {k: v for k, v in DeltaTable(str(out)).history(1)[0].items() if isinstance(v, str)}


def digest(table):
    return oracle.digest(zip(*(table.column(c).to_pylist() for c in COLS), strict=True))


def expected(logdir, below: dict | None = None, **kw):
    """kafka-python's (topic, partition, offset, key, value) of every record, optionally only offsets
    below ``below[(topic, partition)]``."""
    rows = []
    for log in sorted(Path(logdir).glob("*/*.log")):
        for t, p, o, _, k, v in oracle.records_of(log, **kw):
            if below is None or o < below.get((t, p), 2**63):
                rows.append((t, p, o, k, v))
    return oracle.digest(rows), rows


def files_sorted(path: str) -> bool:
    """Whether a data file's rows are sorted by (partition, offset)."""
    t = pq.read_table(path, columns=["partition", "offset"])
    keys = list(zip(t.column("partition").to_pylist(), t.column("offset").to_pylist(), strict=True))
    return keys == sorted(keys)
