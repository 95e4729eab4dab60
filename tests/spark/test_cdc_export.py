"""``export --view cdc`` (issue 56): both Debezium topics of ../shared/typed folded into the tables of
facts/cdc (their SHA-256 as its README defines it; never the naive fold), through Parquet, Iceberg and Delta,
and a second ``--mode append`` run that changes nothing; the CLI's done-when command."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import typed_facts as tf
from logdoctor.spark.cdc_job import run_cdc_export

pytestmark = [pytest.mark.realworld, pytest.mark.spark]

CDC_TOPICS = ("dbserver1.inventory.customers", "dbserver1.inventory.orders")


def check_tables(read) -> None:
    for topic in CDC_TOPICS:
        final, sha = tf.cdc_final(topic)
        got = tf.cdc_canonical(read(topic))
        assert hashlib.sha256(got).hexdigest() == sha, topic
        assert got == final


def test_parquet_equals_the_final_tables(spark, tmp_path) -> None:
    out = tmp_path / "OUT"
    result = run_cdc_export(spark, [str(tf.logs())], str(out), options={"view": "cdc"})
    check_tables(lambda t: pa.concat_tables(pq.read_table(f) for f in sorted((out / t).glob("*.parquet"))))
    stats = result.typed.stats
    assert stats["dbserver1.inventory.customers"].rows_written == 117
    assert stats["dbserver1.inventory.orders"].rows_written == 35
    # the other topics are not Debezium change events: named, no table
    topics = {p.name.rsplit("-", 1)[0] for p in tf.logs().iterdir() if p.is_dir()}
    assert set(result.typed.left_out) == topics - set(CDC_TOPICS)
    assert not (out / "orders").exists()


def test_a_compacted_topic_s_cleaned_range_is_counted(spark, tmp_path) -> None:
    """The log cleaner's offset of a partition (its ``cleaner-offset-checkpoint`` entry) reaches the fold:
    the rows whose history starts below it are counted, the tables stay the same."""
    logs = tmp_path / "kafka-logs"
    shutil.copytree(tf.logs(), logs)
    customers = "dbserver1.inventory.customers"
    end = 1 + max(r["offset"] for r in tf.records() if r["topic"] == customers)  # the cleaner reached the end
    (logs / "cleaner-offset-checkpoint").write_text(f"0\n1\n{customers} 0 {end}\n")
    out = tmp_path / "OUT"
    result = run_cdc_export(spark, [str(logs)], str(out), options={"view": "cdc"})
    check_tables(lambda t: pa.concat_tables(pq.read_table(f) for f in sorted((out / t).glob("*.parquet"))))
    stats = result.typed.stats
    assert stats[customers].rows_in_cleaned_range == stats[customers].rows_written == 117
    assert stats["dbserver1.inventory.orders"].rows_in_cleaned_range == 0


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_tables_and_a_second_append_changes_nothing(spark, tmp_path, fmt) -> None:
    out = tmp_path / "OUT"

    def read(topic: str) -> pa.Table:
        if fmt == "delta":
            from deltalake import DeltaTable, QueryBuilder

            query = QueryBuilder().register("t", DeltaTable(str(out / topic)))
            return pa.table(query.execute("SELECT * FROM t").read_all())
        from pyiceberg.catalog import load_catalog

        from logdoctor.spark.tables.iceberg import catalog_properties
        from logdoctor.spark.tables.typed_export import table_identifier

        catalog = load_catalog("logdoctor", **catalog_properties(str(out), None))
        return catalog.load_table(table_identifier(None, topic)).scan().to_arrow()

    run_cdc_export(spark, [str(tf.logs())], str(out), fmt=fmt, options={"view": "cdc"})
    check_tables(read)
    again = run_cdc_export(spark, [str(tf.logs())], str(out), fmt=fmt, mode="append", options={"view": "cdc"})
    assert sorted(again.typed.unchanged) == sorted(CDC_TOPICS)
    check_tables(read)


def test_cli_done_when(tmp_path: Path) -> None:
    out = tmp_path / "OUT"
    proc = subprocess.run(
        [sys.executable, "-m", "logdoctor", "export", str(tf.logs()), "--view", "cdc", "--out", str(out), "--json"],  # noqa: E501
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["typed"]["topics"]["dbserver1.inventory.customers"]["rows_written"] == 117
    for topic in CDC_TOPICS:
        final, _ = tf.cdc_final(topic)
        table = pa.concat_tables(pq.read_table(f) for f in sorted((out / topic).glob("*.parquet")))
        assert tf.cdc_canonical(table) == final
