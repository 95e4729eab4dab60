"""The CDC fold's input built from ../shared/typed's facts, as the decoders will hand it over.

``facts/records.jsonl`` gives each record of the two Debezium topics as independent decoders decoded it
(``value_decoded``: the envelope in canonical JSON; ``key_decoded``; ``aborted``; ``headers``). This module
turns those into the fold's input: per partition, Arrow record batches whose columns are the envelope's
fields, typed by the writer schema (Avro schema id 11 from the ``_schemas`` records; the orders topic's Kafka
Connect schema from its first record in the log) with the ``connect.name`` / ``connect.version`` /
``connect.parameters`` field metadata the decoders keep, plus the ``kafka`` struct column. It also builds
batches of hand-made events for the rule tests (:func:`batch_of`).
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

import pyarrow as pa

import realworld
import typed_facts

REPO_ROOT = Path(__file__).resolve().parents[2]
TYPED = realworld.TYPED
SKIP_REASON = realworld.TYPED_SKIP_REASON

CUSTOMERS = "dbserver1.inventory.customers"
ORDERS = "dbserver1.inventory.orders"
TIMESTAMP_UTC = pa.timestamp("us", tz="UTC")


def require() -> Path:
    """The typed set's folder, or skip the calling test."""
    return realworld.require_typed()


def records() -> tuple[dict, ...]:
    """Every line of facts/records.jsonl (tests/typed_facts.py)."""
    return typed_facts.records()


# --- writer schemas to Arrow (the type mapping, version 1) ------------------------------------------------


def _meta(props: dict[str, Any], prefix: str) -> dict[bytes, bytes] | None:
    """Arrow field metadata of a schema's Connect properties (Avro ``connect.*``, Connect JSON bare names)."""
    out: dict[bytes, bytes] = {}
    for key in ("name", "version", "parameters"):
        value = props.get(prefix + key)
        if value is None:
            continue
        text = json.dumps(value, separators=(",", ":")) if isinstance(value, dict) else str(value)
        out[b"connect." + key.encode()] = text.encode()
    return out or None


_AVRO_PRIMITIVES = {
    "string": pa.string(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
    "double": pa.float64(), "boolean": pa.bool_(), "bytes": pa.binary(),
}  # fmt: skip


def avro_field(name: str, schema: Any, named: dict[str, Any]) -> pa.Field:
    """An Arrow field of an Avro schema: [null, T] -> nullable T, the branch's ``connect.*`` as metadata."""
    if isinstance(schema, list):
        branches = [b for b in schema if b != "null"]
        assert len(branches) == 1, f"{name}: only [null, T] unions here"
        schema = branches[0]
    if isinstance(schema, str):
        if schema in _AVRO_PRIMITIVES:
            return pa.field(name, _AVRO_PRIMITIVES[schema])
        schema = named[schema]
    typ = schema["type"]
    meta = _meta(schema, "connect.")
    if typ == "record":
        named[schema["name"]] = schema
        if "namespace" in schema:
            named[f"{schema['namespace']}.{schema['name']}"] = schema
        children = [avro_field(f["name"], f["type"], named) for f in schema["fields"]]
        return pa.field(name, pa.struct(children), metadata=meta)
    logical = schema.get("logicalType")
    if logical == "decimal":
        return pa.field(name, pa.decimal128(schema["precision"], schema.get("scale", 0)), metadata=meta)
    return pa.field(name, _AVRO_PRIMITIVES[typ], metadata=meta)


_CONNECT_PRIMITIVES = {
    "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(), "float32": pa.float32(),
    "float64": pa.float64(), "boolean": pa.bool_(), "string": pa.string(), "bytes": pa.binary(),
}  # fmt: skip


def connect_field(name: str, schema: dict[str, Any]) -> pa.Field:
    """An Arrow field of a Kafka Connect JSON schema (Connect's logical types mapped, names as metadata)."""
    meta = _meta(schema, "")
    logical = schema.get("name")
    if schema["type"] == "struct":
        return pa.field(
            name, pa.struct([connect_field(f["field"], f) for f in schema["fields"]]), metadata=meta
        )
    if logical == "org.apache.kafka.connect.data.Decimal":
        params = schema.get("parameters", {})
        typ = pa.decimal128(int(params.get("connect.decimal.precision", 38)), int(params["scale"]))
    elif logical == "org.apache.kafka.connect.data.Date":
        typ = pa.date32()
    elif logical == "org.apache.kafka.connect.data.Time":
        typ = pa.time32("ms")
    elif logical == "org.apache.kafka.connect.data.Timestamp":
        typ = TIMESTAMP_UTC
    else:
        typ = _CONNECT_PRIMITIVES[schema["type"]]
    return pa.field(name, typ, metadata=meta)


@cache
def writer_fields(topic: str) -> tuple[tuple[pa.Field, ...], pa.DataType]:
    """The envelope's top-level fields and the key's type of a Debezium topic's writer schemas."""
    if topic == CUSTOMERS:
        schemas = {
            r["value_decoded"]["id"]: json.loads(r["value_decoded"]["schema"])
            for r in records()
            if r["topic"] == "_schemas"
            and r["value_decoded"]
            and r["key_decoded"].get("keytype") == "SCHEMA"
            and r["value_decoded"]["id"] in (10, 11)  # the customers topic's key and value (Avro)
        }
        envelope = avro_field("value", schemas[11], {})
        key = avro_field("key", schemas[10], {})
    else:
        key_schema, value_schema = _first_connect_schemas(topic)
        envelope = connect_field("value", value_schema)
        key = connect_field("key", key_schema)
    typ = envelope.type
    return tuple(typ.field(i) for i in range(typ.num_fields)), key.type


def _log_records(topic: str) -> list:
    from logdoctor.formats.records import iter_batches

    out = []
    for path in sorted((require() / "kafka-logs" / f"{topic}-0").glob("*.log")):
        for batch in iter_batches(path.read_bytes()):
            if batch.is_control:
                continue
            out.extend(batch.records())
    return out


def _first_connect_schemas(topic: str) -> tuple[dict, dict]:
    record = next(r for r in _log_records(topic) if r.value is not None)
    return json.loads(bytes(record.key))["schema"], json.loads(bytes(record.value))["schema"]


@cache
def log_timestamps(topic: str) -> dict[int, int]:
    """offset -> the record's timestamp (ms) in partition 0's log."""
    return {r.offset: r.timestamp for r in _log_records(topic)}


# --- canonical JSON values to Arrow's Python values ---------------------------------------------------------


def to_arrow_value(typ: pa.DataType, value: Any) -> Any:
    """A canonical-JSON value (records.jsonl) as pyarrow takes it for ``typ``."""
    if value is None:
        return None
    if pa.types.is_struct(typ):
        return {typ.field(i).name: to_arrow_value(typ.field(i).type, value.get(typ.field(i).name))
                for i in range(typ.num_fields)}  # fmt: skip
    if pa.types.is_decimal(typ):
        return Decimal(value)
    if pa.types.is_date32(typ):
        return date.fromisoformat(value)
    if pa.types.is_timestamp(typ):
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    if pa.types.is_binary(typ):
        return bytes.fromhex(value)
    if pa.types.is_list(typ):
        return [to_arrow_value(typ.value_type, v) for v in value]
    return value


def kafka_type(key_type: pa.DataType) -> pa.StructType:
    return pa.struct([
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", TIMESTAMP_UTC),
        pa.field("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
        pa.field("transaction_result", pa.string()),
        pa.field("key", key_type),
    ])  # fmt: skip


def batch_of(
    envelope_fields: tuple[pa.Field, ...] | list[pa.Field],
    key_type: pa.DataType,
    rows: list[tuple[dict | None, dict]],
) -> pa.RecordBatch:
    """A batch of the fold's input: each row an envelope (Python values of the Arrow types, or None for a
    tombstone) and its ``kafka`` struct (Python values)."""
    columns = []
    for f in envelope_fields:
        columns.append(pa.array([None if env is None else env.get(f.name) for env, _ in rows], f.type))
    kafka = pa.array([meta for _, meta in rows], kafka_type(key_type))
    schema = pa.schema([*envelope_fields, pa.field("kafka", kafka.type)])
    return pa.RecordBatch.from_arrays([*columns, kafka], schema=schema)


def topic_batches(topic: str, batch_size: int = 64) -> dict[int, list[pa.RecordBatch]]:
    """A Debezium topic of the typed set as the fold's input (every record, those of aborted transactions
    included with ``transaction_result`` "aborted": the fold must refuse them itself)."""
    fields, key_type = writer_fields(topic)
    struct = pa.struct(list(fields))
    transactional = topic == CUSTOMERS  # Kafka Connect exactly-once source: every poll is a transaction
    stamps = log_timestamps(topic)
    rows = []
    for r in records():
        if r["topic"] != topic:
            continue
        envelope = to_arrow_value(struct, r["value_decoded"]) if r["value_decoded"] is not None else None
        headers = [{"key": k, "value": v.encode()} for k, v in (r.get("headers") or {}).items()]
        meta = {
            "partition": r["partition"],
            "offset": r["offset"],
            "timestamp": datetime.fromtimestamp(stamps[r["offset"]] / 1000, UTC),
            "headers": headers,
            "transaction_result": ("aborted" if r["aborted"] else "committed") if transactional else None,
            "key": to_arrow_value(key_type, r["key_decoded"]),
        }
        rows.append((r["partition"], envelope, meta))
    out: dict[int, list[pa.RecordBatch]] = {}
    for partition in sorted({p for p, _, _ in rows}):
        mine = [(env, meta) for p, env, meta in rows if p == partition]
        out[partition] = [
            batch_of(fields, key_type, mine[i : i + batch_size]) for i in range(0, len(mine), batch_size)
        ]
    return out
