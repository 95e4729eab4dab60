"""Issue 73: a double column holding Infinity, -Infinity, NaN and -0.0 in a Delta (and Iceberg) table. The
files and the commit are made by the functions the exports use (``typed_export.write_file``, the tables'
``commit``); the tables are read back by the formats' own libraries (deltalake: its reader, its SQL engine,
its MERGE and OPTIMIZE, which parse every file's statistics; pyiceberg). Python's ``json`` wrote
``Infinity`` into the statistics: the commit landed, but delta-rs's kernel refused the log from then on
("Json error: Encountered unexpected 'I'")."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import pyarrow as pa
import pytest

from logdoctor.spark.tables.files import FileLayout
from logdoctor.spark.tables.typed_export import write_file

INF, NAN = float("inf"), float("nan")
# one file per case: its values, and the min and max the statistics may hold (None: left out)
CASES = [
    ([1.5, INF, -2.0], -2.0, None),  # +Infinity: the max left out, the min kept
    ([-INF, 3.0], None, 3.0),
    ([INF], None, None),
    ([NAN, 1.0, 7.0], None, None),  # NaN: neither (Spark orders NaN above every number)
    ([-0.0, 2.0], -0.0, 2.0),
    ([None, -INF, INF], None, None),
]


def _bits(values):
    """Each float by its bits (NaN, and -0.0 against 0.0, compare by value otherwise)."""
    return [None if v is None else struct.pack(">d", v) for v in values]


def _no_constant(token):
    pytest.fail(f"{token} in a statistics string")


def _gt(v, bound):
    return v is not None and (math.isnan(v) or v > bound)


def _key(v):
    return (math.isnan(v), 0.0 if math.isnan(v) else v)


def _rows(values, i):
    return pa.table(
        {"x": pa.array(values, pa.float64()), "f": pa.array(values, pa.float32()), "n": [i] * len(values)}
    )


def _commit_delta(out: Path):
    from logdoctor.spark.tables.delta import DeltaLakeTable

    table = DeltaLakeTable(str(out), partition_topic=False)
    for i, (values, _, _) in enumerate(CASES):
        rows = _rows(values, i)
        written = write_file(rows, FileLayout(data_uri=str(out), job="ldnonfinite"), i, 0, {})
        table.load()
        table.commit([written], rows.schema, "append", {"logdoctor.case": str(i)})
    return table


def test_delta_statistics_are_json_and_the_table_reads_back_whole(tmp_path):
    from deltalake import DeltaTable, QueryBuilder

    out = tmp_path / "t"
    _commit_delta(out)
    table = DeltaTable(str(out))
    assert table.version() == len(CASES) - 1
    # every statistics string is JSON (no Infinity / NaN tokens), with the bounds the cases allow
    for entry in sorted((out / "_delta_log").glob("*.json")):
        for line in entry.read_text().splitlines():
            add = json.loads(line).get("add")
            if add is None:
                continue
            stats = json.loads(add["stats"], parse_constant=_no_constant)
            values, low, high = CASES[int(entry.stem)]
            assert stats["numRecords"] == len(values)
            for col in ("x", "f"):
                assert stats["nullCount"][col] == sum(v is None for v in values)
                assert _bits([stats["minValues"].get(col)]) == _bits([low]), (entry.name, col, stats)
                assert _bits([stats["maxValues"].get(col)]) == _bits([high]), (entry.name, col, stats)
    # delta-rs's own statistics, parsed from the log (num_records was null for every file before)
    adds = pa.table(table.get_add_actions(flatten=True)).to_pylist()
    assert sorted(a["num_records"] for a in adds) == sorted(len(v) for v, _, _ in CASES)
    # the data, value for value by its bits (-0.0 and NaN kept), through the reader and the SQL engine
    got = table.to_pyarrow_table().sort_by("n")
    want = [v for values, _, _ in CASES for v in values]
    assert _bits(got.column("x").to_pylist()) == _bits(want)
    assert _bits(got.column("f").to_pylist()) == _bits(want)  # each value is a float32 exactly
    sql = QueryBuilder().register("t", table)
    count = pa.table(sql.execute("SELECT count(*) AS c FROM t").read_all()).column("c")[0].as_py()
    assert count == len(want)  # "Json error: Encountered unexpected 'I'" before
    # data skipping by the statistics keeps every file a row of which matches (DataFusion, as Spark,
    # orders NaN above every number: NaN > 2.5)
    above = pa.table(sql.execute("SELECT x FROM t WHERE x > 2.5").read_all()).column("x").to_pylist()
    assert _bits(sorted(above, key=_key)) == _bits(sorted((v for v in want if _gt(v, 2.5)), key=_key))
    below = pa.table(sql.execute("SELECT x FROM t WHERE x < -1").read_all()).column("x").to_pylist()
    assert sorted(below) == sorted(v for v in want if v is not None and not math.isnan(v) and v < -1)
    # the library's own writes that read every file's statistics work on the table
    table.merge(
        pa.table({"x": pa.array([9.0]), "f": pa.array([9.0], pa.float32()), "n": [99]}),
        predicate="t.n = s.n",
        source_alias="s",
        target_alias="t",
    ).when_not_matched_insert_all().execute()
    DeltaTable(str(out)).optimize.compact()
    assert DeltaTable(str(out)).to_pyarrow_table().num_rows == len(want) + 1


def test_iceberg_table_reads_back_whole(tmp_path):
    """The same files added to an Iceberg table (pyiceberg reads their footers for its metrics)."""
    from pyiceberg.catalog import load_catalog

    from logdoctor.spark.tables.iceberg import IcebergTable

    out = tmp_path / "t"
    for i, (values, _, _) in enumerate(CASES):
        table = IcebergTable(str(out), "logdoctor.nonfinite", partition_topic=False)  # one export each
        rows = _rows(values, i)
        written = write_file(rows, FileLayout(data_uri=table.data_uri, job="ldnonfinite"), i, 0, {})
        table.load()
        table.commit([written.path], rows.schema, "append", {"p": "1"}, {"p": "1"})
    catalog = load_catalog("logdoctor", type="sql", uri=f"sqlite:///{out}.catalog.db")
    got = catalog.load_table("logdoctor.nonfinite").scan().to_arrow().sort_by("n")
    want = [v for values, _, _ in CASES for v in values]
    assert _bits(got.column("x").to_pylist()) == _bits(want)
    above = catalog.load_table("logdoctor.nonfinite").scan(row_filter="x > 2.5").to_arrow()
    assert sorted(above.column("x").to_pylist()) == sorted(
        v for v in want if v is not None and not math.isnan(v) and v > 2.5
    )
