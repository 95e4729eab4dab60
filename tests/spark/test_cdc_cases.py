"""``export --view cdc`` of hand-made Debezium topics (tests/debezium_logs.py: JsonConverter JSON written by
the project's batch writer), one rule each, through the whole export (survey, one task per partition, the
driver's merge, Parquet). The oracle is the table each case's events describe, written out by hand."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import debezium_logs as dl
from logdoctor.spark.cdc_job import run_cdc_export

pytestmark = [pytest.mark.spark]


def export(spark, root: Path, out: Path, **options: str):
    result = run_cdc_export(spark, [str(root)], str(out), options={"view": "cdc", **options})
    files = sorted((out / dl.TOPIC).glob("*.parquet"))
    table = pa.concat_tables(pq.read_table(f) for f in files)
    return result, rows_of(table)


def rows_of(table: pa.Table) -> list[tuple]:
    return sorted(zip(*(table.column(c).to_pylist() for c in ("id", "name", "note")), strict=True))


def test_a_delete_without_its_tombstone_deletes(spark, tmp_path) -> None:
    w = dl.TopicWriter(tmp_path / "logs")
    w.plain(dl.upsert("c", 1, "a", None, 10, 1), dl.upsert("c", 2, "b", None, 20, 2))
    w.plain(dl.delete(1, 30, 3))  # the connector ran with tombstones.on.delete=false
    result, rows = export(spark, tmp_path / "logs", tmp_path / "OUT")
    assert rows == [(2, "b", None)]
    assert result.typed.stats[dl.TOPIC].events_folded == 3


def test_a_tombstone_without_its_delete_deletes(spark, tmp_path) -> None:
    w = dl.TopicWriter(tmp_path / "logs")
    w.plain(dl.upsert("c", 1, "a", None, 10, 1), dl.upsert("c", 2, "b", None, 20, 2))
    w.plain(dl.tombstone(1))  # the delete itself is gone (a compacted topic keeps the tombstone)
    _, rows = export(spark, tmp_path / "logs", tmp_path / "OUT")
    assert rows == [(2, "b", None)]


def test_a_truncate_empties_the_table(spark, tmp_path) -> None:
    w = dl.TopicWriter(tmp_path / "logs")
    w.plain(dl.upsert("r", 1, "a", None, 10, 1), dl.upsert("c", 2, "b", None, 20, 2))
    w.plain(dl.truncate(30, 3), dl.upsert("c", 3, "c", None, 40, 4))
    result, rows = export(spark, tmp_path / "logs", tmp_path / "OUT")
    assert rows == [(3, "c", None)]
    assert result.typed.stats[dl.TOPIC].truncates == 1


def test_an_aborted_transactions_events_never_change_the_table(spark, tmp_path) -> None:
    w = dl.TopicWriter(tmp_path / "logs")
    w.plain(dl.upsert("c", 1, "a", "n", 10, 1))
    # a zombie's transaction: aborted, its update and insert must not show
    w.transaction([dl.upsert("u", 1, "zombie", "z", 20, 2), dl.upsert("c", 5, "ghost", None, 21, 3)], False)
    w.transaction([dl.upsert("u", 1, "b", dl.PLACEHOLDER, 30, 4)], True)
    _, rows = export(spark, tmp_path / "logs", tmp_path / "OUT")
    # the placeholder keeps the value before the committed update, never the aborted one's
    assert rows == [(1, "b", "n")]


def _history(root: Path) -> None:
    w = dl.TopicWriter(root)
    w.plain(dl.upsert("c", 1, "a", None, 100, 1))  # offset 0
    w.plain(dl.upsert("u", 1, "a2", None, 200, 2))  # 1
    w.plain(dl.upsert("c", 2, "b", None, 300, 3))  # 2
    w.plain(dl.delete(1, 400, 4), dl.tombstone(1))  # 3, 4


def test_ending_timestamp_is_the_table_at_that_source_time(spark, tmp_path) -> None:
    _history(tmp_path / "logs")
    result, rows = export(spark, tmp_path / "logs", tmp_path / "A", endingTimestamp="250")
    assert rows == [(1, "a2", None)]
    assert result.typed.stats[dl.TOPIC].events_after_end == 3
    _, rows = export(spark, tmp_path / "logs", tmp_path / "B", endingTimestamp="400")
    assert rows == [(2, "b", None)]


def test_ending_offsets_is_the_table_as_of_those_offsets(spark, tmp_path) -> None:
    _history(tmp_path / "logs")
    _, rows = export(spark, tmp_path / "logs", tmp_path / "A", endingOffsets="3")
    assert rows == [(1, "a2", None), (2, "b", None)]
    _, rows = export(spark, tmp_path / "logs", tmp_path / "B", endingOffsets="1")
    assert rows == [(1, "a", None)]
