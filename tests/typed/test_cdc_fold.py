"""The CDC fold: the typed set's Debezium topics against facts/cdc (the oracle); a hand-made case per rule.

The facts' final tables were computed by the set's own generator from independently decoded records
(facts/records.jsonl); the fold reads the same records as the decoders will hand them over
(tests/typed/cdc_input.py) and must give the same bytes once written as the README's canonical JSON.
"""

from __future__ import annotations

import hashlib
import json
import pickle
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import cdc_input as ci
import pyarrow as pa
import pytest

from logdoctor.formats.registry.debezium import DEFAULT_PLACEHOLDER
from logdoctor.spark.cdc import (
    Compaction,
    FoldOptions,
    PartitionFold,
    build_table,
    fold_topic,
    merge_partitions,
)

# --- the canonical JSON of the README ("Canonical JSON", "Final table") -------------------------------------


def _canonical_value(value: Any) -> Any:
    if isinstance(value, Decimal):
        return format(value, "f")  # the column's scale: Arrow's decimal keeps it
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {k: _canonical_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical_value(v) for v in value]
    return value


def canonical(table: pa.Table) -> bytes:
    """The table's rows (``after``'s columns, not the provenance) as the README's canonical JSON lines."""
    columns = [n for n in table.column_names if n != "kafka"]
    lines = []
    for row in table.select(columns).to_pylist():
        text = json.dumps(_canonical_value(row), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        lines.append(text + "\n")
    return "".join(lines).encode()


# --- the typed set's topics against facts/cdc ---------------------------------------------------------------


@pytest.mark.parametrize("topic", [ci.CUSTOMERS, ci.ORDERS])
def test_facts_final_table(topic: str) -> None:
    facts = ci.require() / "facts" / "cdc"
    final = (facts / f"{topic}.final.jsonl").read_bytes()
    naive = (facts / f"{topic}.naive.jsonl").read_bytes()
    expected_sha = (facts / f"{topic}.final.sha256").read_text().split()[0]

    result = fold_topic(ci.topic_batches(topic))

    assert result.table is not None, result.stats.refused
    out = canonical(result.table)
    assert hashlib.sha256(out).hexdigest() == expected_sha
    assert out == final
    if naive != final:
        assert out != naive
    assert result.stats.rows_written == final.count(b"\n")
    aborted = sum(1 for r in ci.records() if r["topic"] == topic and r["aborted"])
    assert result.stats.events_uncommitted == aborted
    counts = json.loads((ci.require() / "facts" / "counts.json").read_text())["cdc"][topic]
    assert result.stats.rows_written == counts["final_rows"]
    committed = [r for r in ci.records() if r["topic"] == topic and not r["aborted"]]
    assert result.stats.events_folded == len(committed)
    placeholders = sum(
        1
        for r in committed
        if r["value_decoded"] and r["value_decoded"]["after"]
        for v in r["value_decoded"]["after"].values()
        if v == DEFAULT_PLACEHOLDER
    )
    assert result.stats.placeholder_cells_resolved == placeholders  # every key has a snapshot or insert
    assert (result.stats.partial_rows, result.stats.placeholder_cells_null) == (0, 0)


def test_facts_customers_provenance() -> None:
    """The provenance of each row names the last committed event of its key in records.jsonl."""
    result = fold_topic(ci.topic_batches(ci.CUSTOMERS))
    assert result.table is not None
    last: dict[int, dict] = {}
    for r in ci.records():
        if r["topic"] == ci.CUSTOMERS and not r["aborted"] and r["value_decoded"] is not None:
            last[r["key_decoded"]["id"]] = r
    for row in result.table.to_pylist():
        event = last[row["id"]]
        kafka = row["kafka"]
        assert (kafka["partition"], kafka["offset"], kafka["op"]) == (
            0,
            event["offset"],
            event["value_decoded"]["op"],
        )
        source = event["value_decoded"]["source"]
        assert kafka["source_ts_ms"] == source["ts_ms"]
        assert kafka["position"] == {"sequence": source["sequence"], "lsn": source["lsn"]}
        assert kafka["transaction_id"] == str(source["txId"])


# --- hand-made cases ----------------------------------------------------------------------------------------

DATE = {b"connect.name": b"io.debezium.time.Date", b"connect.version": b"1"}
VALUE = pa.struct([
    pa.field("id", pa.int32(), nullable=False),
    pa.field("name", pa.string()),
    pa.field("notes", pa.string()),
    pa.field("born", pa.int32(), metadata=DATE),
])  # fmt: skip
SOURCE = pa.struct([
    pa.field("connector", pa.string()),
    pa.field("ts_ms", pa.int64()),
    pa.field("sequence", pa.string()),
    pa.field("txId", pa.int64()),
    pa.field("lsn", pa.int64()),
])  # fmt: skip
ENVELOPE = (
    pa.field("before", VALUE),
    pa.field("after", VALUE),
    pa.field("source", SOURCE),
    pa.field("op", pa.string()),
    pa.field("ts_ms", pa.int64()),
)
KEY = pa.struct([pa.field("id", pa.int32())])


class Log:
    """Hand-made events of one topic, partition by partition, offsets counted per partition."""

    def __init__(self) -> None:
        self.rows: dict[int, list[tuple[dict | None, dict]]] = {}

    def _meta(self, partition: int, key: int | None, headers: dict[str, str] | None, result: str) -> dict:
        offset = len(self.rows.setdefault(partition, []))
        return {
            "partition": partition,
            "offset": offset,
            "timestamp": None,
            "headers": [{"key": k, "value": v.encode()} for k, v in (headers or {}).items()],
            "transaction_result": result,
            "key": None if key is None else {"id": key},
        }

    def event(
        self,
        op: str,
        key: int | None,
        *,
        name: str | None = None,
        notes: str | None = None,
        lsn: int | None = None,
        ts: int = 1_000,
        partition: int = 0,
        headers: dict[str, str] | None = None,
        result: str = "committed",
        born: int | None = 10,
    ) -> Log:
        after = None if op in ("d", "t") else {"id": key, "name": name, "notes": notes, "born": born}
        before = {"id": key, "name": None, "notes": None, "born": None} if op == "d" else None
        source = {"connector": "postgresql", "ts_ms": ts, "sequence": None, "txId": 7, "lsn": lsn}
        envelope = {"before": before, "after": after, "source": source, "op": op, "ts_ms": ts + 3}
        meta = self._meta(partition, key, headers, result)
        self.rows[partition].append((envelope, meta))
        return self

    def tombstone(
        self,
        key: int,
        *,
        partition: int = 0,
        headers: dict[str, str] | None = None,
        result: str = "committed",
    ) -> Log:
        meta = self._meta(partition, key, headers, result)
        self.rows[partition].append((None, meta))
        return self

    def fold(self, **options: Any):
        batches = {p: [ci.batch_of(ENVELOPE, KEY, rows)] for p, rows in self.rows.items()}
        return fold_topic(batches, FoldOptions(**options))


def rows(result) -> dict[int, dict]:
    assert result.table is not None, result.stats.refused
    return {r["id"]: r for r in result.table.to_pylist()}


def test_upsert_and_semantic_type() -> None:
    result = (
        Log()
        .event("r", 1, name="a", born=-4760)
        .event("u", 1, name="b", born=0)
        .event("c", 2, name="c")
        .fold()
    )
    got = rows(result)
    assert {k: (v["name"], v["born"]) for k, v in got.items()} == {
        1: ("b", date(1970, 1, 1)),
        2: ("c", date(1970, 1, 11)),
    }
    assert result.table.schema.field("born").type == pa.date32()
    assert got[1]["kafka"]["op"] == "u" and got[1]["kafka"]["offset"] == 1
    assert result.stats.events_folded == 3 and result.stats.rows_without_snapshot == 0


def test_truncate_empties_the_table() -> None:
    result = (
        Log().event("r", 1, name="a").event("r", 2, name="b").event("t", None).event("c", 3, name="c").fold()
    )
    assert sorted(rows(result)) == [3]
    assert result.stats.truncates == 1


def test_primary_key_change_moves_the_row_with_its_unchanged_columns() -> None:
    log = (
        Log()
        .event("r", 1, name="a", notes="long text")
        .event("d", 1, headers={"__debezium.newkey": '{"id":2}'})
        .tombstone(1, headers={"__debezium.newkey": '{"id":2}'})
        .event("c", 2, name="a", notes=DEFAULT_PLACEHOLDER, headers={"__debezium.oldkey": '{"id":1}'})
    )
    result = log.fold()
    got = rows(result)
    assert sorted(got) == [2]
    assert got[2]["notes"] == "long text"
    assert result.stats.placeholder_cells_resolved == 1 and result.stats.partial_rows == 0


def test_placeholder_keeps_the_previous_value() -> None:
    result = (
        Log().event("r", 1, name="a", notes="kept").event("u", 1, name="b", notes=DEFAULT_PLACEHOLDER).fold()
    )
    assert (rows(result)[1]["name"], rows(result)[1]["notes"]) == ("b", "kept")


def test_placeholder_as_the_first_event_of_a_key() -> None:
    result = (
        Log()
        .event("u", 5, name="x", notes=DEFAULT_PLACEHOLDER)
        .event("u", 5, name="y", notes=DEFAULT_PLACEHOLDER)
        .fold()
    )
    got = rows(result)
    assert got[5]["notes"] is None and got[5]["name"] == "y"
    assert result.stats.placeholder_cells_null == 1
    assert result.stats.partial_rows == 1
    assert result.stats.rows_without_snapshot == 1


def test_a_named_placeholder() -> None:
    log = Log().event("r", 1, notes="kept").event("u", 1, notes="??").event("u", 1, notes=DEFAULT_PLACEHOLDER)
    got = rows(log.fold(placeholder="??"))
    assert (
        got[1]["notes"] == DEFAULT_PLACEHOLDER
    )  # the default text is data when another placeholder is named


@pytest.mark.parametrize("result", ["aborted", "open"])
def test_uncommitted_events_never_change_the_table(result: str) -> None:
    log = (
        Log()
        .event("r", 1, name="a")
        .event("r", 2, name="b")
        .event("u", 1, name="zombie", result=result)
        .event("d", 2, result=result)
        .tombstone(2, result=result)
    )
    folded = log.fold()
    assert {k: v["name"] for k, v in rows(folded).items()} == {1: "a", 2: "b"}
    assert folded.stats.events_uncommitted == 3


def test_a_delete_without_its_tombstone() -> None:
    assert sorted(rows(Log().event("r", 1).event("r", 2).event("d", 1).fold())) == [2]


def test_a_tombstone_without_its_delete() -> None:
    assert sorted(rows(Log().event("r", 1).event("r", 2).tombstone(1).fold())) == [2]


def _timeline() -> Log:
    return (
        Log()
        .event("r", 1, name="a", ts=100, lsn=10)
        .event("u", 1, name="b", ts=200, lsn=20)
        .event("c", 2, name="c", ts=300, lsn=30)
        .event("d", 1, ts=400, lsn=40)
        .tombstone(1)
    )


def test_point_in_time_by_timestamp() -> None:
    assert {k: v["name"] for k, v in rows(_timeline().fold(ending_timestamp_ms=150)).items()} == {1: "a"}
    at_250 = _timeline().fold(ending_timestamp_ms=250)
    assert {k: v["name"] for k, v in rows(at_250).items()} == {1: "b"}
    assert at_250.stats.events_after_end == 3
    assert {k: v["name"] for k, v in rows(_timeline().fold(ending_timestamp_ms=399)).items()} == {
        1: "b",
        2: "c",
    }
    assert sorted(rows(_timeline().fold(ending_timestamp_ms=400))) == [2]


def test_point_in_time_by_offsets() -> None:
    assert {k: v["name"] for k, v in rows(_timeline().fold(ending_offsets={0: 2})).items()} == {1: "b"}
    assert {k: v["name"] for k, v in rows(_timeline().fold(ending_offsets={0: 3})).items()} == {
        1: "b",
        2: "c",
    }
    assert sorted(rows(_timeline().fold(ending_offsets={0: 4}))) == [2]  # the delete without its tombstone
    assert sorted(rows(_timeline().fold(ending_offsets={1: 0}))) == [2]  # partition 0 not named: to its end


def test_order_across_partitions_by_source_position() -> None:
    log = (
        Log()
        .event("r", 1, lsn=10, partition=0)
        .event("r", 2, lsn=20, partition=0)
        .event("t", None, lsn=30, partition=1)
        .event("c", 3, lsn=40, partition=1)
        .event("c", 4, lsn=50, partition=0)
        .event("c", 6, lsn=None, partition=0)  # no source position: cannot be ordered against the truncate
        .event("c", 7, lsn=60, partition=0)
        .event("d", 7, lsn=70, partition=1)  # a key that moved partitions: its later delete wins
        .event("c", 8, lsn=80, partition=1)
        .event("d", 8, lsn=75, partition=0)
    )
    result = log.fold()
    assert sorted(rows(result)) == [3, 4, 6, 8]
    assert result.stats.rows_truncated_across_partitions == 2
    assert [(e.partition, e.offset, e.op, e.against) for e in result.stats.unordered_events] == [
        (0, 3, "c", "1/0")
    ]


def test_a_topic_with_no_primary_key_is_refused() -> None:
    result = Log().event("c", None, name="a").event("c", None, name="b").fold()
    assert result.table is None
    assert result.stats.refused is not None and "no primary key" in result.stats.refused


def test_compacted_topic_says_what_the_cleaner_may_have_removed() -> None:
    log = Log().event("r", 1).event("d", 1).tombstone(1).event("u", 2, name="x").event("c", 3)
    result = log.fold(compaction=Compaction({0: 4}))
    assert result.stats.deletes_in_cleaned_range == 1
    assert result.stats.rows_in_cleaned_range == 1  # key 2, first seen at offset 3
    assert not result.stats.point_in_time_in_cleaned_range
    assert log.fold(compaction=Compaction({0: 4}), ending_offsets={0: 2}).stats.point_in_time_in_cleaned_range
    assert Log().event("r", 1).fold().stats.deletes_in_cleaned_range == 0


def test_partitions_folded_apart_then_merged() -> None:
    """The partitions' folds travel (pickled, as from Spark tasks) and merge into the same table."""
    log = (
        _timeline()
        .event("c", 9, name="p1", lsn=35, ts=350, partition=1)
        .event("t", None, lsn=25, partition=2)
    )
    whole = log.fold()
    results = []
    for partition, batch_rows in log.rows.items():
        fold = PartitionFold(partition, VALUE)
        fold.feed(ci.batch_of(ENVELOPE, KEY, batch_rows))
        results.append(pickle.loads(pickle.dumps(fold.result())))
    merged, stats = merge_partitions(results)
    table = build_table(merged, VALUE, SOURCE, stats)
    assert table.equals(whole.table)
    assert sorted(rows(whole)) == [2, 9]  # key 1: deleted at lsn 40; the truncate at lsn 25 is before both
    assert stats == whole.stats


def test_primary_key_change_across_partitions() -> None:
    """The new key hashes to another partition: the create's placeholder takes the old key's value there."""
    log = (
        Log()
        .event("r", 1, name="a", notes="long text", lsn=10, partition=0)
        .event("u", 1, name="b", notes=DEFAULT_PLACEHOLDER, lsn=20, partition=0)
        .event("d", 1, lsn=30, partition=0, headers={"__debezium.newkey": '{"id":2}'})
        .tombstone(1, partition=0, headers={"__debezium.newkey": '{"id":2}'})
        .event(
            "c",
            2,
            name="b",
            notes=DEFAULT_PLACEHOLDER,
            lsn=30,
            partition=1,
            headers={"__debezium.oldkey": '{"id":1}'},
        )
        .event("u", 2, name="c", notes=DEFAULT_PLACEHOLDER, lsn=40, partition=1)
    )
    result = log.fold()
    got = rows(result)
    assert sorted(got) == [2]
    assert (got[2]["name"], got[2]["notes"]) == ("c", "long text")
    assert result.stats.partial_rows == 0 and result.stats.placeholder_cells_null == 0
    assert result.stats.placeholder_cells_resolved == 2  # the update of key 1, then the move


def test_a_table_folds_as_its_batches() -> None:
    batches = ci.topic_batches(ci.ORDERS, batch_size=7)
    as_table = {p: [pa.Table.from_batches(b)] for p, b in batches.items()}
    assert fold_topic(as_table).table.equals(fold_topic(batches).table)
