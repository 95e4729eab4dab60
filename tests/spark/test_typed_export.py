"""``export --typed`` (issue 55): one typed table per topic of ../shared/typed whose rows equal
facts/records.jsonl (decoded there by the Apache avro package, protoc-compiled classes and json + jsonschema,
not by the project), every undecodable record in ``_undecoded`` with the facts' reason, the counts of
facts/counts.json; through every output: Parquet (arrow writer), Iceberg, Delta, the ``kafka-log`` DataFrame;
both isolation levels."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import typed_facts as tf
from logdoctor.spark.export import run_export

pytestmark = [pytest.mark.realworld, pytest.mark.spark]

SIDE = "_undecoded"


def read_parquet_table(folder: Path) -> pa.Table:
    files = sorted(folder.glob("*.parquet"))
    assert files, f"no Parquet file in {folder}"
    return pa.concat_tables([pq.read_table(f) for f in files])


def check_topic_table(topic: str, table: pa.Table, side: dict[tuple[str, int, int], dict], committed: bool):
    """Every fact of ``topic`` is in its table (decoded, flagged, tombstone) or in the side table
    (``side``), with the facts' value, key, schema id and reason; nothing else is anywhere."""
    rows = {(r["kafka"]["partition"], r["kafka"]["offset"]): r for r in table.to_pylist()}
    expected = [f for f in tf.data_records(topic) if not (committed and f["aborted"])]
    in_table = 0
    for fact in expected:
        where = (fact["partition"], fact["offset"])
        if fact["decode_status"] == "side_table":
            got = side.pop((topic, *where), None)
            assert got is not None, f"{topic} {where}: not in {SIDE}"
            assert got["reason"] == fact["reason"], (topic, where, got["reason"], fact["reason"])
            assert where not in rows
            continue
        row = rows.get(where)
        assert row is not None, f"{topic} {where}: not in its table ({fact['decode_status']})"
        in_table += 1
        if fact["decode_status"] == "tombstone":
            value_columns = [n for n in table.column_names if n != "kafka"]
            assert all(row[n] is None for n in value_columns), (topic, where)
        else:
            fields = None
            spread = [c for c in table.column_names if c != "kafka"] != ["value"]
            if isinstance(fact["value_decoded"], dict) and spread:
                fields = list(fact["value_decoded"])
            got = tf.row_value(row, table.schema, fields)
            assert got == fact["value_decoded"], (topic, where, got, fact["value_decoded"])
            assert row["kafka"]["value_schema_id"] == fact.get("schema_id"), (topic, where)
            assert row["kafka"]["schema_deleted"] is (fact["decode_status"] == "decoded_deleted_schema")
        assert tf.key_value(row, table.schema) == fact["key_decoded"], (topic, where)
    assert len(rows) == in_table, f"{topic}: {len(rows) - in_table} rows the facts do not have"


def check_export(out: Path, read_table: Any, committed: bool = True) -> None:
    side_table = read_table(out / SIDE)
    side = {(r["topic"], r["partition"], r["offset"]): r for r in side_table.to_pylist()}
    assert len(side) == side_table.num_rows
    for topic in tf.topics():
        check_topic_table(topic, read_table(out / topic), side, committed)
    assert not side, f"side-table rows the facts do not have: {sorted(side)[:5]}"


def check_counts(typed: dict[str, Any], committed: bool = True) -> None:
    """The summary's counts per topic against facts/counts.json (less what read_committed leaves out)."""
    facts = tf.counts()["topics"]
    for topic in tf.topics():
        want = facts[topic]
        got = typed["topics"][topic]
        aborted = [f for f in tf.data_records(topic) if f["aborted"]] if committed else []
        gone = Counter(f["decode_status"] for f in aborted)
        assert got["decoded"] == want["decoded"] + want["decoded_deleted_schema"] - gone["decoded"] - gone[
            "decoded_deleted_schema"
        ], topic
        assert got["schema_deleted"] == want["decoded_deleted_schema"], topic
        assert got["tombstones"] == want["tombstones"] - gone["tombstone"], topic
        assert sum(got["undecoded"].values()) == want["side_table"], topic
        assert got["undecoded"] == {k: v for k, v in want["side_table_reasons"].items()}, topic


@pytest.fixture(scope="module")
def parquet_export(spark, tmp_path_factory):
    out = tmp_path_factory.mktemp("typed") / "out"
    result = run_export(spark, [str(tf.logs())], str(out), options={"typed": "true"})
    return out, result


def test_parquet_tables_equal_the_facts(parquet_export) -> None:
    out, result = parquet_export
    check_export(out, read_parquet_table)
    check_counts(result.to_json()["typed"])
    assert result.typed.undecoded == 15


def test_read_uncommitted_keeps_the_aborted_records(spark, tmp_path) -> None:
    out = tmp_path / "out"
    run_export(
        spark,
        [str(tf.logs())],
        str(out),
        options={"typed": "true", "kafka.isolation.level": "read_uncommitted"},
    )
    check_export(out, read_parquet_table, committed=False)


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_tables_equal_the_facts(spark, tmp_path, fmt) -> None:
    from logdoctor.spark.tables.typed_export import run_typed_table_export

    out = tmp_path / "out"
    result = run_typed_table_export(spark, [str(tf.logs())], str(out), fmt=fmt, options={"typed": "true"})
    check_counts(result.to_json()["typed"])

    def read_back(location: Path) -> pa.Table:
        if fmt == "delta":
            from deltalake import DeltaTable, QueryBuilder

            query = QueryBuilder().register("t", DeltaTable(str(location)))
            return pa.table(query.execute("SELECT * FROM t").read_all())
        from pyiceberg.catalog import load_catalog

        from logdoctor.spark.tables.iceberg import catalog_properties
        from logdoctor.spark.tables.typed_export import table_identifier

        catalog = load_catalog("logdoctor", **catalog_properties(str(out), None))
        return catalog.load_table(table_identifier(None, location.name)).scan().to_arrow()

    check_export(out, read_back)
    # a second run with --mode append adds nothing: every offset is in the tables already
    again = run_typed_table_export(
        spark, [str(tf.logs())], str(out), fmt=fmt, mode="append", options={"typed": "true"}
    )
    assert again.rows == 0
    check_export(out, read_back)


def test_dataframe_typed_one_topic(spark) -> None:
    df = (
        spark.read.format("kafka-log")
        .option("typed", "true")
        .option("topics", "orders")
        .load(str(tf.logs()))
    )
    assert "order_id" in df.columns and "kafka" in df.columns
    table = pa.Table.from_pylist([r.asDict(recursive=True) for r in df.collect()])
    rows = {(r["kafka"]["partition"], r["kafka"]["offset"]): r for r in table.to_pylist()}
    facts = tf.data_records("orders")
    assert len(rows) == len(facts) == 2000
    for fact in facts[:200]:
        row = rows[(fact["partition"], fact["offset"])]
        assert row["order_id"] == fact["value_decoded"]["order_id"]
        assert row["kafka"]["key"] == fact["key_decoded"]


def test_dataframe_refuses_topics_of_different_schemas(spark) -> None:
    df = spark.read.format("kafka-log").option("typed", "true").option("topics", "orders,clicks")
    with pytest.raises(Exception, match="orders") as exc:
        df.load(str(tf.logs())).schema  # noqa: B018
    assert "clicks" in str(exc.value)


def test_dataframe_side_table(spark) -> None:
    df = (
        spark.read.format("kafka-log")
        .option("typed", "undecoded")
        .option("topics", "mixed")
        .load(str(tf.logs()))
    )
    got = Counter(r["reason"] for r in df.collect())
    assert got == Counter(tf.counts()["topics"]["mixed"]["side_table_reasons"])


def test_cli_done_when(tmp_path) -> None:
    """The issue's command, as printed: exit 1 (records went to the side table), one folder per topic."""
    out = tmp_path / "OUT"
    proc = subprocess.run(
        [sys.executable, "-m", "logdoctor", "export", str(tf.logs()), "--out", str(out), "--typed", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 1, proc.stderr
    summary = json.loads(proc.stdout)
    check_counts(summary["typed"])
    # _schemas is a topic too: its values name no schema, its table keeps them as bytes (column value)
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == sorted([*tf.topics(), SIDE, "_schemas"])


def test_spark_writer_tables_equal_the_facts(spark, tmp_path) -> None:
    """--writer spark: each topic's frame and the side table written by Spark's committer, same rows."""
    out = tmp_path / "out"
    result = run_export(spark, [str(tf.logs())], str(out), options={"typed": "true"}, writer="spark")
    check_export(out, read_parquet_table)
    check_counts(result.to_json()["typed"])


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_append_evolves_the_schema(spark, tmp_path, fmt) -> None:
    """orders' first offsets are all of writer schema v1 (id 2); v2 (id 12) adds ``coupon``. A table made of
    the first offsets lacks the column; an append of the rest adds it, null in the earlier rows."""
    from logdoctor.spark.tables.typed_export import run_typed_table_export

    out = tmp_path / "out"
    first = {"typed": "true", "topics": "orders", "endingOffsets": "300"}
    run_typed_table_export(spark, [str(tf.logs())], str(out), fmt=fmt, options=first)
    early = [f for f in tf.data_records("orders") if f["offset"] < 300]
    assert {f["schema_id"] for f in early} == {2}
    rest = {"typed": "true", "topics": "orders"}
    result = run_typed_table_export(spark, [str(tf.logs())], str(out), fmt=fmt, mode="append", options=rest)
    assert result.rows == 2000 - len(early)
    if fmt == "delta":
        from deltalake import DeltaTable, QueryBuilder

        query = QueryBuilder().register("t", DeltaTable(str(out / "orders")))
        table = pa.table(query.execute("SELECT * FROM t").read_all())
    else:
        from pyiceberg.catalog import load_catalog

        from logdoctor.spark.tables.iceberg import catalog_properties

        catalog = load_catalog("logdoctor", **catalog_properties(str(out), None))
        table = catalog.load_table("logdoctor.orders").scan().to_arrow()
    assert "coupon" in table.column_names
    rows = {(r["kafka"]["partition"], r["kafka"]["offset"]): r for r in table.to_pylist()}
    assert len(rows) == 2000
    for fact in tf.data_records("orders"):
        row = rows[(fact["partition"], fact["offset"])]
        assert row["coupon"] == fact["value_decoded"].get("coupon")
        assert row["order_id"] == fact["value_decoded"]["order_id"]
