"""The Kafka Connect JsonConverter decoder: every key and value of ``legacy`` and of
``dbserver1.inventory.orders`` (Debezium with JsonConverter) equals facts/records.jsonl; crafted schemas for
every logical type, integer widths, optional and default values, maps with non-string keys, nested
structs, field metadata, and values that do not decode."""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections import defaultdict
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
import typed_set

from logdoctor.formats.registry.connect_json import ConnectJsonDecoder, envelope_schema
from logdoctor.formats.registry.reasons import DECODE_ERROR_SCHEMA_MISMATCH, DECODE_ERROR_TRUNCATED
from logdoctor.formats.registry.results import SchemaError


def _canonical(value: object, arrow_type: pa.DataType) -> object:
    """An Arrow value (``to_pylist``) as the README's canonical JSON value of a Connect value."""
    if value is None:
        return None
    if pa.types.is_struct(arrow_type):
        return {f.name: _canonical(value[f.name], f.type) for f in arrow_type}
    if pa.types.is_map(arrow_type):
        return {str(k): _canonical(v, arrow_type.item_type) for k, v in value}
    if pa.types.is_list(arrow_type):
        return [_canonical(v, arrow_type.value_type) for v in value]
    if pa.types.is_decimal(arrow_type):
        return str(value)  # the Decimal pyarrow gives has the column's scale
    if pa.types.is_timestamp(arrow_type):
        return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
    if pa.types.is_date(arrow_type):
        return value.isoformat()
    if pa.types.is_time(arrow_type):
        return value.strftime("%H:%M:%S.") + f"{value.microsecond // 1000:03d}"
    if pa.types.is_binary(arrow_type):
        return value.hex()
    if pa.types.is_float32(arrow_type):
        return float(str(np.float32(value)))  # the shortest text of the float32, as JSON wrote it
    return value


def _envelope(schema: dict, payload: object) -> bytes:
    return json.dumps({"schema": schema, "payload": payload}).encode()


@pytest.mark.realworld
@pytest.mark.parametrize("topic", ["legacy", "dbserver1.inventory.orders"])
def test_every_key_and_value_equals_the_facts(topic: str) -> None:
    raw = typed_set.raw_records(topic)
    facts = typed_set.topic_facts(topic)
    assert len(facts) == len(raw)
    compared = 0
    for side, fact_key in ((0, "key_decoded"), (1, "value_decoded")):
        groups: dict[str, list[tuple[bytes, object]]] = defaultdict(list)
        for fact in facts:
            data = raw[(fact["partition"], fact["offset"])][side]
            if data is None:
                assert fact["decode_status"] == "tombstone" and side == 1
                assert envelope_schema(data) is None
                continue
            schema = envelope_schema(data)
            assert schema is not None
            groups[schema].append((data, fact[fact_key]))
        for schema, cases in groups.items():
            decoder = ConnectJsonDecoder(schema)
            out = decoder.decode([data for data, _ in cases])
            assert out.reasons == [None] * len(cases)
            for got, (_, expected) in zip(out.values.to_pylist(), cases, strict=True):
                mine = _canonical(got, decoder.arrow_type)
                assert typed_set.canonical(mine) == typed_set.canonical(expected)
                compared += 1
    assert compared == 2 * len(facts) - sum(f["decode_status"] == "tombstone" for f in facts)


@pytest.mark.realworld
def test_debezium_envelope_types_and_metadata() -> None:
    facts = typed_set.topic_facts("dbserver1.inventory.orders")
    raw = typed_set.raw_records("dbserver1.inventory.orders")
    value = raw[(facts[0]["partition"], facts[0]["offset"])][1]
    decoder = ConnectJsonDecoder(envelope_schema(value))
    assert decoder.record_name == "dbserver1.inventory.orders.Envelope"
    assert decoder.field_metadata == {
        b"connect.name": b"dbserver1.inventory.orders.Envelope",
        b"connect.version": b"2",
    }
    after = decoder.arrow_type.field("after")
    assert after.metadata == {b"connect.name": b"dbserver1.inventory.orders.Value"}
    total = after.type.field("total")
    assert total.type == pa.decimal128(12, 2)
    assert total.metadata == {
        b"connect.name": b"org.apache.kafka.connect.data.Decimal",
        b"connect.version": b"1",
        b"connect.parameters": b'{"connect.decimal.precision":"12","scale":"2"}',
    }
    assert after.type.field("order_date").type == pa.date32()
    assert after.type.field("quantity").type == pa.int16()
    assert after.type.field("updated_at").type == pa.timestamp("us", tz="UTC")
    snapshot = decoder.arrow_type.field("source").type.field("snapshot")
    assert snapshot.type == pa.string() and snapshot.metadata[b"connect.name"] == b"io.debezium.data.Enum"


def test_envelope_schema_is_canonical_and_only_of_envelopes() -> None:
    a = b'{"schema":{"type":"int32","optional":false},"payload":1}'
    b = b'{"payload":2,"schema":{"optional":false,"type":"int32"}}'
    assert envelope_schema(a) == envelope_schema(b) == '{"optional":false,"type":"int32"}'
    with_default = b'{"schema":{"type":"double","optional":true,"default":1.50},"payload":null}'
    text = envelope_schema(with_default)
    assert text == '{"default":1.5,"optional":true,"type":"double"}'
    assert ConnectJsonDecoder(text).decode([with_default]).values.to_pylist() == [1.5]
    for not_one in [b"", b"{", b"[1]", b'{"payload":1}', b'{"schema":null,"payload":1}',
                    b'{"schema":{"type":"int32"},"payload":1,"x":0}', b"\xff", None]:  # fmt: skip
        assert envelope_schema(not_one) is None


_DECIMAL = "org.apache.kafka.connect.data.Decimal"
_ALL = {
    "type": "struct",
    "name": "t.All",
    "version": 7,
    "optional": False,
    "fields": [
        {"field": "i8", "type": "int8", "optional": False},
        {"field": "i16", "type": "int16", "optional": False},
        {"field": "i32", "type": "int32", "optional": True},
        {"field": "i64", "type": "int64", "optional": False},
        {"field": "f32", "type": "float", "optional": False},
        {"field": "f64", "type": "double", "optional": False},
        {"field": "ok", "type": "boolean", "optional": False, "default": True},
        {"field": "s", "type": "string", "optional": True, "default": "dflt"},
        {"field": "raw", "type": "bytes", "optional": True},
        {"field": "dec", "type": "bytes", "optional": False, "name": _DECIMAL, "version": 1,
         "parameters": {"scale": "3"}},
        {"field": "big", "type": "bytes", "optional": True, "name": _DECIMAL,
         "parameters": {"scale": "2", "connect.decimal.precision": "40"}},
        {"field": "day", "type": "int32", "optional": False, "name": "org.apache.kafka.connect.data.Date",
         "version": 1},
        {"field": "tod", "type": "int32", "optional": False, "name": "org.apache.kafka.connect.data.Time",
         "version": 1},
        {"field": "at", "type": "int64", "optional": False, "name": "org.apache.kafka.connect.data.Timestamp",
         "version": 1},
        {"field": "by_id", "type": "map", "optional": True, "keys": {"type": "int64", "optional": False},
         "values": {"type": "array", "items": {"type": "string", "optional": True}, "optional": False}},
        {"field": "by_point", "type": "map", "optional": True,
         "keys": {"type": "struct", "optional": False, "name": "t.Point",
                  "fields": [{"field": "x", "type": "int32", "optional": False}]},
         "values": {"type": "string", "optional": False}},
        {"field": "inner", "type": "struct", "optional": True, "name": "t.Inner",
         "fields": [{"field": "when", "type": "int32", "optional": True,
                     "name": "org.apache.kafka.connect.data.Date", "default": 1}]},
    ],
}  # fmt: skip


def _b64(unscaled: int, length: int) -> str:
    return base64.b64encode(unscaled.to_bytes(length, "big", signed=True)).decode()


def test_every_logical_type_width_default_and_map_kind() -> None:
    decoder = ConnectJsonDecoder(json.dumps(_ALL))
    date_name = b"org.apache.kafka.connect.data.Date"
    inner_type = pa.struct([pa.field("when", pa.date32(), metadata={b"connect.name": date_name})])
    types = {f.name: f.type for f in decoder.arrow_type}
    assert types == {
        "i8": pa.int8(), "i16": pa.int16(), "i32": pa.int32(), "i64": pa.int64(), "f32": pa.float32(),
        "f64": pa.float64(), "ok": pa.bool_(), "s": pa.string(), "raw": pa.binary(),
        "dec": pa.decimal128(38, 3), "big": pa.decimal256(40, 2), "day": pa.date32(), "tod": pa.time32("ms"),
        "at": pa.timestamp("us", tz="UTC"), "by_id": pa.map_(pa.int64(), pa.list_(pa.string())),
        "by_point": pa.map_(pa.struct([("x", pa.int32())]), pa.string()), "inner": inner_type,
    }  # fmt: skip
    assert decoder.record_name == "t.All"
    assert decoder.field_metadata == {b"connect.name": b"t.All", b"connect.version": b"7"}
    assert decoder.arrow_type.field("dec").metadata == {
        b"connect.name": _DECIMAL.encode(),
        b"connect.version": b"1",
        b"connect.parameters": b'{"scale":"3"}',
    }
    full = {
        "i8": -128, "i16": 32767, "i32": None, "i64": -(2**63), "f32": 0.25, "f64": 1e300, "ok": None,
        "s": None, "raw": base64.b64encode(b"\x00\x01").decode(), "dec": _b64(-1234567, 3),
        "big": _b64(10**39 - 1, 17), "day": -1, "tod": 86_399_999, "at": -1,
        "by_id": [[3, ["a", None]], [1, []]], "by_point": [[{"x": 1}, "one"]], "inner": {"when": None},
    }  # fmt: skip
    numeric = {**full, "dec": 12.5, "big": None, "by_id": None, "by_point": None, "inner": None}
    out = decoder.decode([_envelope(_ALL, full), _envelope(_ALL, numeric)])
    assert out.reasons == [None, None]
    got = out.values.to_pylist()
    assert got[0] == {
        "i8": -128, "i16": 32767, "i32": None, "i64": -(2**63), "f32": 0.25, "f64": 1e300, "ok": True,
        "s": "dflt", "raw": b"\x00\x01", "dec": Decimal("-1234.567"), "big": Decimal("9" * 37 + ".99"),
        "day": dt.date(1969, 12, 31), "tod": dt.time(23, 59, 59, 999000),
        "at": dt.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=dt.UTC).astimezone(got[0]["at"].tzinfo),
        "by_id": [(3, ["a", None]), (1, [])], "by_point": [({"x": 1}, "one")],
        "inner": {"when": dt.date(1970, 1, 2)},
    }  # fmt: skip
    assert got[1]["dec"] == Decimal("12.500") and got[1]["inner"] is None


def test_values_that_do_not_decode() -> None:
    decoder = ConnectJsonDecoder(json.dumps(_ALL))
    good = {"i8": 1, "i16": 1, "i64": 1, "f32": 1, "f64": 1, "dec": _b64(1, 1), "day": 1, "tod": 1, "at": 1}
    other_schema = {**_ALL, "name": "t.Other"}
    cases = [
        _envelope(_ALL, good),
        _envelope(_ALL, {**good, "i8": 128}),  # out of int8
        _envelope(_ALL, {**good, "i64": None}),  # required, no default
        _envelope(_ALL, {**good, "dec": "not base64!"}),
        _envelope(_ALL, {**good, "dec": 1.2345}),  # NUMERIC with more decimals than the scale
        _envelope(_ALL, {**good, "tod": 86_400_000}),
        _envelope(_ALL, {**good, "by_id": {"1": []}}),  # non-string keys must be pairs
        _envelope(_ALL, [1]),
        _envelope(other_schema, good),
        b'{"payload": 1}',
        _envelope(_ALL, good)[:40],
    ]
    out = decoder.decode(cases)
    assert out.reasons == [None] + [DECODE_ERROR_SCHEMA_MISMATCH] * 9 + [DECODE_ERROR_TRUNCATED]
    assert out.values.null_count == 10


def test_a_schema_the_converter_rejects_is_a_schema_error() -> None:
    for bad in [{"type": "nope"}, {"type": "array"}, {"type": "struct", "fields": [{"type": "int8"}]},
                {"type": "bytes", "name": _DECIMAL, "parameters": {}}, [1]]:  # fmt: skip
        with pytest.raises(SchemaError):
            ConnectJsonDecoder(json.dumps(bad))
