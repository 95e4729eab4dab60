"""The typed survey that shapes a topic's table (logdoctor.spark.typed, no Spark needed), on ../shared/typed's
``orders`` (Avro ``Order`` v1, id 2, and v2, id 12, which adds ``coupon`` with a default):

- issue 75 item 1: a record whose frame names another subject's schema (the key's ``"string"``, id 1) goes
  to ``_undecoded`` and does not reshape the table (the survey counts only writers that decoded something);
- issue 73: the v1 rows are resolved to v2, the newest schema, as fastavro's
  ``schemaless_reader(writer_schema, reader_schema)`` reads them; a topic whose writers do not resolve to
  the newest keeps the union of their types and the plan says why (``mixed``)."""

from __future__ import annotations

import io
import json
import sys
import uuid
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "typed"))

import avro_oracle as oracle

from logdoctor.formats.registry.reasons import DECODE_ERROR_SCHEMA_MISMATCH
from logdoctor.spark.schema import records_arrow_schema
from logdoctor.spark.typed import TypedBatches, plan_topics, survey

pytestmark = pytest.mark.realworld


def _batch(topic: str, rows: list[tuple[int, int, bytes | None, bytes | None]]) -> pa.RecordBatch:
    """A raw batch of the records columns: the given (partition, offset, key, value), the rest null."""
    given = {
        "topic": pa.array([topic] * len(rows), pa.string()),
        "partition": pa.array([r[0] for r in rows], pa.int32()),
        "offset": pa.array([r[1] for r in rows], pa.int64()),
        "key": pa.array([r[2] for r in rows], pa.binary()),
        "value": pa.array([r[3] for r in rows], pa.binary()),
        "is_control": pa.array([False] * len(rows)),
        "headers": pa.array([[]] * len(rows), records_arrow_schema().field("headers").type),
    }
    schema = records_arrow_schema()
    return pa.RecordBatch.from_arrays(
        [given.get(f.name, pa.nulls(len(rows), f.type)) for f in schema], schema=schema
    )


def _orders() -> list[tuple[int, int, bytes | None, bytes | None]]:
    oracle.require()
    return list(oracle.records("orders"))


def test_a_record_naming_another_subjects_schema_does_not_shape_the_table() -> None:
    registry = oracle.registry()
    rows = _orders()
    partition, _offset, key, value = rows[0]
    assert value is not None and value[1:5] == (2).to_bytes(4, "big")
    damaged = (partition, 10**9, key, b"\x00" + (1).to_bytes(4, "big") + value[5:])  # the key's "string"
    raw = [_batch("orders", rows), _batch("orders", [damaged])]
    plan = plan_topics(survey(raw, registry), registry)
    tp = plan.topics["orders"]
    assert [w.schema_id for w in tp.value_writers] == [2, 12]
    newest = json.loads(registry.by_id(12).schema)
    assert [f.name for f in tp.value_columns()] == [f["name"] for f in newest["fields"]]
    splitter = TypedBatches(plan)
    _, typed, bad = splitter.split(_batch("orders", [damaged]))
    assert typed is None and bad is not None
    assert bad.column("reason").to_pylist() == [DECODE_ERROR_SCHEMA_MISMATCH]


def _like(got: Any, expected: Any) -> Any:
    """``got`` (Arrow's ``to_pylist``) in fastavro's Python shapes: maps as dicts, uuids as text."""
    if isinstance(expected, dict) and isinstance(got, list):
        return {k: _like(v, expected.get(k)) for k, v in got}
    if isinstance(expected, dict) and isinstance(got, dict):
        return {k: _like(v, expected.get(k)) for k, v in got.items()}
    if isinstance(expected, list) and isinstance(got, list):
        return [_like(g, e) for g, e in zip(got, expected, strict=False)]
    return got


def _fastavro_like(value: Any) -> Any:
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, dict):
        return {k: _fastavro_like(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fastavro_like(v) for v in value]
    return value


def test_old_rows_are_resolved_to_the_newest_schema_as_fastavro_reads_them() -> None:
    registry = oracle.registry()
    rows = _orders()
    plan = plan_topics(survey([_batch("orders", rows)], registry), registry)
    tp = plan.topics["orders"]
    assert tp.value_reader is not None and tp.value_reader.schema_id == 12 and tp.notes == ()
    v1 = fastavro.parse_schema(json.loads(registry.by_id(2).schema))
    v2 = fastavro.parse_schema(json.loads(registry.by_id(12).schema))
    _, typed, bad = TypedBatches(plan).split(_batch("orders", rows))
    assert bad is None and typed is not None and typed.num_rows == len(rows)
    names = [f.name for f in tp.value_columns()]
    table = pa.Table.from_batches([typed])
    old = 0
    for i, (_, _, _, value) in enumerate(rows):
        writer = v1 if value[1:5] == (2).to_bytes(4, "big") else v2
        old += writer is v1
        expected = _fastavro_like(fastavro.schemaless_reader(io.BytesIO(value[5:]), writer, v2))
        got = {n: table.column(n)[i].as_py() for n in names}
        assert _like(got, expected) == expected, i
    assert old >= 1100


def test_writers_that_do_not_resolve_keep_the_union_and_say_why() -> None:
    registry = oracle.registry()
    oracle.require()
    rows = list(oracle.records("mixed"))
    plan = plan_topics(survey([_batch("mixed", rows)], registry), registry)
    tp = plan.topics["mixed"]
    assert tp.value_reader is None
    assert tp.notes and "does not resolve to the newest" in tp.notes[0], tp.notes
    _, _, _ = TypedBatches(plan).split(_batch("mixed", rows))
    counts = TypedBatches(plan)
    counts.split(_batch("mixed", rows))
    assert counts.counts["mixed"].to_json()["notes"] == list(tp.notes)
