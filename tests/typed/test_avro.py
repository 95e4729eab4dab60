"""AvroDecoder: every Avro record of the typed set (../shared/typed) against facts/records.jsonl (decoded
there by Apache avro), its side-table reasons; the Arrow types and field metadata of the mapping; crafted
payloads (written by fastavro, an independent encoder) for every logical type and union shape, recursive
records, references across subjects; truncation at every byte and broken payloads."""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import random
import uuid

import avro_oracle as oracle
import fastavro
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import tiers
from logdoctor.formats.registry import avro
from logdoctor.formats.registry.avro import AvroDecoder
from logdoctor.formats.registry.decoder import decoder_for
from logdoctor.formats.registry.reasons import DECODE_ERROR_SCHEMA_MISMATCH, DECODE_ERROR_TRUNCATED
from logdoctor.formats.registry.results import SchemaError
from logdoctor.formats.registry.store import RegisteredSchema, SchemaReference, SchemaRegistry

TRUNC, MISMATCH = DECODE_ERROR_TRUNCATED, DECODE_ERROR_SCHEMA_MISMATCH
AVRO_TOPICS = ("orders", "mixed", "dbserver1.inventory.customers")


@pytest.fixture(autouse=True, params=["columns", "one_at_a_time"])
def reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs with each of the decoder's two readers: the column decoder for any batch, then
    the sequential reader for any batch."""
    monkeypatch.setattr(avro, "COLUMNS_FROM", 0 if request.param == "columns" else 2**62)
    return request.param


# -- the typed set -------------------------------------------------------------------------------------


@pytest.mark.realworld
@pytest.mark.parametrize("topic", AVRO_TOPICS)
def test_real_values_and_reasons_equal_the_facts(topic: str) -> None:
    reg = oracle.registry()
    facts = {(r["partition"], r["offset"]): r for r in oracle.facts() if r["topic"] == topic}
    by_schema: dict[int, list[tuple[tuple[int, int], bytes]]] = {}
    for partition, offset, _key, value in oracle.records(topic):
        f = oracle.framed(value)
        if f is not None and f[0] in reg.schemas and reg.schemas[f[0]].schema_type == "AVRO":
            by_schema.setdefault(f[0], []).append(((partition, offset), f[1]))
    checked = 0
    for schema_id, rows in by_schema.items():
        schema = reg.schemas[schema_id]
        decoded = AvroDecoder(reg, schema).decode([p for _, p in rows])
        values = decoded.values.to_pylist()
        for (at, _), value, reason in zip(rows, values, decoded.reasons, strict=True):
            fact = facts[at]
            if fact["decode_status"] == "side_table" and fact["reason"] == "schema_hard_deleted":
                assert reason is None  # it decodes; the table builder sends it to the side table
                continue
            if fact["decode_status"] == "side_table":
                assert (reason, value) == (fact["reason"], None), at
            else:
                assert reason is None, (at, reason)
                assert oracle.canonical(json.loads(schema.schema), value) == fact["value_decoded"], at
            checked += 1
    expected = sum(
        1
        for r in facts.values()
        if r.get("schema_id") in (2, 6, 7, 8, 11, 12) and r["decode_status"] != "tombstone"
    )
    assert checked == expected > 0


@pytest.mark.realworld
@pytest.mark.parametrize("topic", ["orders", "dbserver1.inventory.customers"])
def test_real_keys_equal_the_facts(topic: str) -> None:
    reg = oracle.registry()
    facts = {(r["partition"], r["offset"]): r for r in oracle.facts() if r["topic"] == topic}
    rows = [(p, o, oracle.framed(k)) for p, o, k, _ in oracle.records(topic)]
    (schema_id,) = {f[0] for *_, f in rows}
    schema = reg.schemas[schema_id]
    decoded = AvroDecoder(reg, schema).decode([f[1] for *_, f in rows])
    assert decoded.reasons == [None] * len(rows)
    for (p, o, _), value in zip(rows, decoded.values.to_pylist(), strict=True):
        assert oracle.canonical(json.loads(schema.schema), value) == facts[(p, o)]["key_decoded"]


@pytest.mark.realworld
def test_real_truncation_at_every_byte_is_truncated() -> None:
    """A strict prefix of a payload reads as the whole payload does up to the cut, then needs more: always
    decode_error_truncated, never a value."""
    reg = oracle.registry()
    for topic, schema_id in (("orders", 2), ("orders", 12), ("dbserver1.inventory.customers", 11)):
        payload = next(
            f[1]
            for *_, v in oracle.records(topic)
            if (f := oracle.framed(v)) is not None and f[0] == schema_id
        )
        decoded = AvroDecoder(reg, reg.schemas[schema_id]).decode([payload[:n] for n in range(len(payload))])
        assert decoded.reasons == [TRUNC] * len(payload)
        assert decoded.values.null_count == len(payload)
        assert AvroDecoder(reg, reg.schemas[schema_id]).decode([payload + b"\x00"]).reasons == [MISMATCH]


@pytest.mark.realworld
def test_real_types_names_and_connect_metadata() -> None:
    reg = oracle.registry()
    orders = AvroDecoder(reg, reg.schemas[2])
    address = pa.struct([("street", pa.string()), ("city", pa.string()), ("zip", pa.string())])
    assert orders.record_name == "com.shop.orders.Order"
    assert orders.arrow_type == pa.struct(
        [
            ("order_id", pa.string()),
            ("customer_id", pa.int64()),
            ("quantity", pa.int32()),
            ("unit_price", pa.float64()),
            ("gift", pa.bool_()),
            ("signature", pa.binary()),
            ("status", pa.string()),
            ("items", pa.list_(pa.struct([("sku", pa.string()), ("qty", pa.int32())]))),
            ("attributes", pa.map_(pa.string(), pa.string())),
            ("shipping", address),
            ("billing", address),
            ("total", pa.decimal128(12, 2)),
            ("created_at", pa.timestamp("us", tz="UTC")),
            ("delivery_date", pa.date32()),
            ("trace_id", pa.string()),
        ]
    )
    assert orders.field_metadata == {}
    key = decoder_for(reg, reg.schemas[1])
    assert (key.record_name, key.arrow_type) == (None, pa.string())
    envelope = decoder_for(reg, reg.schemas[11])
    assert envelope.record_name == "dbserver1.inventory.customers.Envelope"
    assert envelope.field_metadata == {
        b"connect.name": b"dbserver1.inventory.customers.Envelope",
        b"connect.version": b"2",
    }
    t = envelope.arrow_type
    after = t.field("after")
    assert after.metadata == {b"connect.name": b"dbserver1.inventory.customers.Value"}
    assert after.type.field("balance").type == pa.decimal128(10, 2)
    assert after.type.field("balance").metadata == {
        b"connect.name": b"org.apache.kafka.connect.data.Decimal",
        b"connect.version": b"1",
        b"connect.parameters": b'{"scale":"2","connect.decimal.precision":"10"}',
    }
    assert after.type.field("birth_date").type == pa.int32()  # io.debezium.time.Date: an int, as written
    assert after.type.field("birth_date").metadata[b"connect.name"] == b"io.debezium.time.Date"
    snapshot = t.field("source").type.field("snapshot")
    assert snapshot.type == pa.string()
    assert json.loads(snapshot.metadata[b"connect.parameters"])["allowed"].startswith("true,first")
    assert t.field("transaction").metadata[b"connect.name"] == b"event.block"


# -- crafted schemas -----------------------------------------------------------------------------------


def _decoder(schema: dict | list | str, *refs: tuple[str, str, dict]) -> AvroDecoder:
    """The decoder of ``schema`` registered as id 1000, each of ``refs`` (reference name, subject, schema)
    registered before it as version 1 of its subject."""
    reg = SchemaRegistry()
    for i, (_name, subject, text) in enumerate(refs):
        reg.schemas[100 + i] = RegisteredSchema(
            100 + i, "AVRO", json.dumps(text), (), subject, 1, ((subject, 1),)
        )
    references = tuple(SchemaReference(name, subject, 1) for name, subject, _ in refs)
    reg.schemas[1000] = RegisteredSchema(1000, "AVRO", json.dumps(schema), references, "s-value", 1)
    return AvroDecoder(reg, reg.schemas[1000])


def _write(schema: dict | list | str, values: list, named: dict | None = None) -> list[bytes]:
    parsed = fastavro.parse_schema(schema, named if named is not None else {})
    out = []
    for v in values:
        b = io.BytesIO()
        fastavro.schemaless_writer(b, parsed, v)
        out.append(b.getvalue())
    return out


def _roundtrip(schema: dict | list | str, values: list) -> list:
    decoded = _decoder(schema).decode(_write(schema, values))
    assert decoded.reasons == [None] * len(values)
    return decoded.values.to_pylist()


UTC = dt.UTC


def test_every_logical_type() -> None:
    def field(name: str, t: dict | str) -> dict:
        return {"name": name, "type": t}

    schema = {
        "type": "record",
        "name": "L",
        "namespace": "t",
        "fields": [
            field("dec_b", {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 3}),
            field(
                "dec_f",
                {
                    "type": "fixed",
                    "name": "F",
                    "size": 5,
                    "logicalType": "decimal",
                    "precision": 11,
                    "scale": 2,
                },
            ),
            field("dec_wide", {"type": "bytes", "logicalType": "decimal", "precision": 50, "scale": 4}),
            field("ts_ms", {"type": "long", "logicalType": "timestamp-millis"}),
            field("ts_us", {"type": "long", "logicalType": "timestamp-micros"}),
            field("lts_ms", {"type": "long", "logicalType": "local-timestamp-millis"}),
            field("lts_us", {"type": "long", "logicalType": "local-timestamp-micros"}),
            field("date", {"type": "int", "logicalType": "date"}),
            field("t_ms", {"type": "int", "logicalType": "time-millis"}),
            field("t_us", {"type": "long", "logicalType": "time-micros"}),
            field("uuid", {"type": "string", "logicalType": "uuid"}),
            field("not_logical", {"type": "int", "logicalType": "no-such-type"}),
        ],
    }
    d = _decoder(schema)
    assert [f.type for f in d.arrow_type] == [
        pa.decimal128(9, 3),
        pa.decimal128(11, 2),
        pa.decimal256(50, 4),
        pa.timestamp("us", tz="UTC"),
        pa.timestamp("us", tz="UTC"),
        pa.timestamp("us"),
        pa.timestamp("us"),
        pa.date32(),
        pa.time32("ms"),
        pa.time64("us"),
        pa.string(),
        pa.int32(),
    ]
    rows = [
        {
            "dec_b": decimal.Decimal("-123456.789"),
            "dec_f": decimal.Decimal("999999999.99"),
            "dec_wide": decimal.Decimal("-" + "9" * 46 + ".1234"),
            "ts_ms": dt.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC),
            "ts_us": dt.datetime(2262, 4, 11, 23, 47, 16, 854775, tzinfo=UTC),
            "lts_ms": dt.datetime(2025, 1, 2, 3, 4, 5, 6000),
            "lts_us": dt.datetime(1900, 1, 1, 0, 0, 0, 1),
            "date": dt.date(1, 1, 1),
            "t_ms": dt.time(23, 59, 59, 999000),
            "t_us": dt.time(0, 0, 0, 1),
            "uuid": "6a9df49c-0954-449c-829f-dbf75da24106",
            "not_logical": -(2**31),
        },
        {
            "dec_b": decimal.Decimal("0.000"),
            "dec_f": decimal.Decimal("-0.01"),
            "dec_wide": decimal.Decimal(0),
            "ts_ms": dt.datetime(1970, 1, 1, tzinfo=UTC),
            "ts_us": dt.datetime(1, 1, 1, tzinfo=UTC),
            "lts_ms": dt.datetime(9999, 12, 31, 23, 59, 59, 999000),
            "lts_us": dt.datetime(1970, 1, 1),
            "date": dt.date(9999, 12, 31),
            "t_ms": dt.time(0, 0),
            "t_us": dt.time(23, 59, 59, 999999),
            "uuid": str(uuid.UUID(int=0)),
            "not_logical": 2**31 - 1,
        },
    ]
    got = _roundtrip(schema, rows)
    for g, r in zip(got, rows, strict=True):
        assert g == r


def test_uuid_on_fixed_and_duration_kept_as_bytes() -> None:
    schema = {
        "type": "record",
        "name": "U",
        "fields": [
            {"name": "u", "type": {"type": "fixed", "name": "U16", "size": 16, "logicalType": "uuid"}},
            {"name": "d", "type": {"type": "fixed", "name": "D12", "size": 12, "logicalType": "duration"}},
        ],
    }
    u = uuid.UUID("12345678-1234-5678-1234-567812345678")
    d = _decoder(schema)
    assert [f.type for f in d.arrow_type] == [pa.string(), pa.binary()]
    payload = u.bytes + bytes(range(12))
    assert d.decode([payload]).values.to_pylist() == [{"u": str(u), "d": bytes(range(12))}]


@pytest.mark.parametrize(
    ("union", "arrow", "values", "expected"),
    [
        (["null", "string"], pa.string(), [None, "x"], [None, "x"]),
        (["long", "null"], pa.int64(), [5, None], [5, None]),
        (
            ["int", "string"],
            pa.struct([("int", pa.int32()), ("string", pa.string())]),
            [1, "a"],
            [{"int": 1, "string": None}, {"int": None, "string": "a"}],
        ),
        (
            ["null", "int", "string"],
            pa.struct([("int", pa.int32()), ("string", pa.string())]),
            [None, 2, "b"],
            [None, {"int": 2, "string": None}, {"int": None, "string": "b"}],
        ),
        (["string"], pa.struct([("string", pa.string())]), ["only"], [{"string": "only"}]),
        (["null"], pa.struct([]), [None], [None]),
        (
            [{"type": "array", "items": "int"}, {"type": "map", "values": "int"}, "boolean"],
            pa.struct(
                [
                    ("array", pa.list_(pa.int32())),
                    ("map", pa.map_(pa.string(), pa.int32())),
                    ("boolean", pa.bool_()),
                ]
            ),
            [[1, 2], {"k": 3}, True],
            [
                {"array": [1, 2], "map": None, "boolean": None},
                {"array": None, "map": [("k", 3)], "boolean": None},
                {"array": None, "map": None, "boolean": True},
            ],
        ),
    ],
)
def test_union_shapes(union: list, arrow: pa.DataType, values: list, expected: list) -> None:
    schema = {"type": "record", "name": "R", "fields": [{"name": "u", "type": union}]}
    d = _decoder(schema)
    assert d.arrow_type.field("u").type == arrow
    assert _roundtrip(schema, [{"u": v} for v in values]) == [{"u": e} for e in expected]


def test_union_of_records_named_by_short_name_or_full_name_when_they_clash() -> None:
    a = {"type": "record", "name": "X", "namespace": "a", "fields": [{"name": "i", "type": "int"}]}
    b = {"type": "record", "name": "X", "namespace": "b", "fields": [{"name": "s", "type": "string"}]}
    e = {"type": "enum", "name": "E", "namespace": "c", "symbols": ["P", "Q"]}
    schema = {"type": "record", "name": "R", "fields": [{"name": "u", "type": ["null", a, b, e]}]}
    d = _decoder(schema)
    assert [f.name for f in d.arrow_type.field("u").type] == ["a.X", "b.X", "E"]
    got = d.decode(
        _write(schema, [{"u": None}, {"u": ("a.X", {"i": 1})}, {"u": ("b.X", {"s": "z"})}, {"u": "Q"}])
    ).values.to_pylist()
    assert got == [
        {"u": None},
        {"u": {"a.X": {"i": 1}, "b.X": None, "E": None}},
        {"u": {"a.X": None, "b.X": {"s": "z"}, "E": None}},
        {"u": {"a.X": None, "b.X": None, "E": "Q"}},
    ]


def test_recursive_records_hold_json_at_the_recursion() -> None:
    node = {
        "type": "record",
        "name": "Node",
        "namespace": "t",
        "fields": [
            {"name": "value", "type": "int"},
            {"name": "tag", "type": {"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 1}},
            {"name": "next", "type": ["null", "Node"]},
            {"name": "children", "type": {"type": "array", "items": "Node"}},
        ],
    }
    d = _decoder(node)
    assert d.arrow_type == pa.struct(
        [
            ("value", pa.int32()),
            ("tag", pa.decimal128(4, 1)),
            ("next", pa.string()),
            ("children", pa.list_(pa.string())),
        ]
    )
    leaf = {"value": 3, "tag": decimal.Decimal("-1.5"), "next": None, "children": []}
    mid = {"value": 2, "tag": decimal.Decimal("0.0"), "next": leaf, "children": [leaf]}
    top = {"value": 1, "tag": decimal.Decimal("12.3"), "next": mid, "children": [leaf, leaf]}
    (got,) = d.decode(_write(node, [top])).values.to_pylist()
    leaf_json = {"value": 3, "tag": "-1.5", "next": None, "children": []}
    assert (got["value"], got["tag"]) == (1, decimal.Decimal("12.3"))
    assert json.loads(got["next"]) == {"value": 2, "tag": "0.0", "next": leaf_json, "children": [leaf_json]}
    assert [json.loads(c) for c in got["children"]] == [leaf_json, leaf_json]
    # a truncated or broken value inside the recursion is found by the sequential reader
    (payload,) = _write(node, [top])
    assert d.decode([payload[:n] for n in range(len(payload))]).reasons == [TRUNC] * len(payload)


def test_mutual_recursion() -> None:
    a = {
        "type": "record",
        "name": "A",
        "fields": [
            {
                "name": "b",
                "type": [
                    "null",
                    {
                        "type": "record",
                        "name": "B",
                        "fields": [{"name": "a", "type": ["null", "A"]}, {"name": "n", "type": "long"}],
                    },
                ],
            }
        ],
    }
    d = _decoder(a)
    assert d.arrow_type == pa.struct([("b", pa.struct([("a", pa.string()), ("n", pa.int64())]))])
    value = {"b": {"a": {"b": {"a": None, "n": 7}}, "n": 8}}
    assert d.decode(_write(a, [value])).values.to_pylist() == [{"b": {"a": '{"b":{"a":null,"n":7}}', "n": 8}}]


def test_references_across_subjects() -> None:
    money = {
        "type": "record",
        "name": "Money",
        "namespace": "shop.common",
        "fields": [
            {"name": "units", "type": "long"},
            {"name": "currency", "type": {"type": "enum", "name": "Currency", "symbols": ["EUR", "USD"]}},
        ],
    }
    line = {
        "type": "record",
        "name": "Line",
        "namespace": "shop.orders",
        "fields": [{"name": "price", "type": "shop.common.Money"}],
    }
    order = {
        "type": "record",
        "name": "Order",
        "namespace": "shop.orders",
        "fields": [
            {"name": "lines", "type": {"type": "array", "items": "Line"}},
            {"name": "fee", "type": ["null", "shop.common.Money"]},
            {"name": "cur", "type": "shop.common.Currency"},
        ],
    }
    reg = SchemaRegistry()
    reg.schemas[1] = RegisteredSchema(1, "AVRO", json.dumps(money), (), "money", 1, (("money", 1),))
    reg.schemas[2] = RegisteredSchema(
        2,
        "AVRO",
        json.dumps(line),
        (SchemaReference("shop.common.Money", "money", 1),),
        "line",
        3,
        (("line", 3),),
    )
    # the order references only Line: Money comes through Line's own reference
    reg.schemas[3] = RegisteredSchema(
        3, "AVRO", json.dumps(order), (SchemaReference("shop.orders.Line", "line", 3),), "orders-value", 1
    )
    d = decoder_for(reg, reg.schemas[3])
    money_t = pa.struct([("units", pa.int64()), ("currency", pa.string())])
    assert d.arrow_type == pa.struct(
        [("lines", pa.list_(pa.struct([("price", money_t)]))), ("fee", money_t), ("cur", pa.string())]
    )
    named: dict = {}
    fastavro.parse_schema(money, named)
    fastavro.parse_schema(line, named)
    value = {"lines": [{"price": {"units": 5, "currency": "USD"}}], "fee": None, "cur": "EUR"}
    assert d.decode(_write(order, [value], named)).values.to_pylist() == [
        {"lines": [{"price": {"units": 5, "currency": "USD"}}], "fee": None, "cur": "EUR"}
    ]
    missing = RegisteredSchema(
        4, "AVRO", json.dumps(line), (SchemaReference("shop.common.Money", "money", 9),)
    )
    with pytest.raises(SchemaError, match="no schema for reference"):
        decoder_for(reg, missing)
    with pytest.raises(SchemaError):  # the named type is not defined without the reference
        decoder_for(reg, RegisteredSchema(5, "AVRO", json.dumps(line)))


def test_registered_schema_with_a_bad_default_still_parses() -> None:
    schema = {"type": "record", "name": "R", "fields": [{"name": "x", "type": "int", "default": "nope"}]}
    assert _decoder(schema).decode([b"\x02"]).values.to_pylist() == [{"x": 1}]


def test_unparsable_schema_is_a_schema_error() -> None:
    with pytest.raises(SchemaError, match="schema id 1000"):
        _decoder({"type": "record", "name": "R", "fields": [{"name": "x", "type": "no.Such"}]})


# -- broken payloads -------------------------------------------------------------------------------------

SIGNAL = {
    "type": "record",
    "name": "Signal",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["PING", "PONG", "DATA"]}},
        {"name": "note", "type": ["null", "string"]},
    ],
}


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"\x02\x00\x00", None),
        (b"\x02\x06\x00", MISMATCH),  # enum index 3 of 3 symbols
        (b"\x02\x01\x00", MISMATCH),  # enum index -1
        (b"\x02\x00\x04", MISMATCH),  # union index 2 of 2
        (b"\x02\x00\x01", MISMATCH),  # union index -1 (fastavro would take the last branch)
        (b"\x02\x00\x02\x01", MISMATCH),  # string length -1
        (b"\x02\x00\x02\x04\xff\xfe", MISMATCH),  # not UTF-8
        (b"\x02\x00\x02\x04a", TRUNC),
        (b"\x02\x00\x00\x00", MISMATCH),  # a byte left over
        (b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x00\x00\x00", MISMATCH),  # an 11-byte long
        (b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x00\x00\x00", None),  # 10 bytes: a long still
        (b"\x02\x80\x80\x80\x80\x80\x00\x00", MISMATCH),  # a 6-byte int (enum index)
        (b"\x80", TRUNC),
        (b"", TRUNC),
    ],
)
def test_broken_payloads(payload: bytes, reason: str | None) -> None:
    decoded = _decoder(SIGNAL).decode([payload, b"\x04\x02\x02\x02z"])
    assert decoded.reasons == [reason, None]
    assert decoded.values.to_pylist()[1] == {"id": 2, "kind": "PONG", "note": "z"}
    assert (decoded.values.to_pylist()[0] is None) == (reason is not None)


def _zigzag(n: int) -> bytes:
    z, out = (n << 1) ^ (n >> 63), bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    return bytes([*out, z])


def test_collection_limits() -> None:
    nulls = _decoder({"type": "array", "items": "null"})
    ok = nulls.decode([_zigzag(3) + _zigzag(-2) + _zigzag(0) + b"\x00", _zigzag(2**20) + b"\x00"])
    assert ok.reasons == [None, None]
    assert ok.values.to_pylist()[0] == [None] * 5
    assert len(ok.values.to_pylist()[1]) == 2**20
    assert nulls.decode([_zigzag(2**20) + _zigzag(1) + b"\x00"]).reasons == [MISMATCH]
    ints = _decoder({"type": "array", "items": "int"})
    # Java's SystemLimitException before any item is read (not a truncation)
    assert ints.decode([_zigzag(2**31 - 8) + b"\x00"]).reasons == [MISMATCH]
    assert ints.decode([_zigzag(2**31 - 9) + b"\x00"]).reasons == [TRUNC]
    assert ints.decode([_zigzag(-(2**63)) + b"\x00\x00"]).reasons == [MISMATCH]
    empty = {"type": "record", "name": "E", "fields": []}
    records = _decoder({"type": "array", "items": empty})
    assert records.decode([_zigzag(2) + _zigzag(1) + b"\x00"]).values.to_pylist() == [[{}, {}, {}]]


@pytest.mark.parametrize(
    ("schema", "payload", "reason"),
    [
        ("boolean", b"\x02", MISMATCH),
        ("boolean", b"\x01", None),
        ("bytes", b"\x03", MISMATCH),  # length -2
        ("bytes", b"\x06ab", TRUNC),
        ("double", b"\x00" * 7, TRUNC),
        ({"type": "fixed", "name": "F", "size": 20}, b"\x00" * 19, TRUNC),
        (
            {"type": "bytes", "logicalType": "decimal", "precision": 2, "scale": 0},
            b"\x02\x64",
            MISMATCH,
        ),  # 100
        ({"type": "bytes", "logicalType": "decimal", "precision": 3, "scale": 0}, b"\x02\x64", None),
        (
            {"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 0},
            b"\x22" + b"\x01" + bytes(16),
            MISMATCH,
        ),  # 2**128 > 16 bytes
        (
            {"type": "bytes", "logicalType": "decimal", "precision": 3, "scale": 0},
            b"\x24" + b"\xff" * 17 + b"\x9c",
            None,
        ),  # -100 sign-extended to 18 bytes
        ({"type": "int", "logicalType": "time-millis"}, b"\x80\xb4\xc4\x52", MISMATCH),  # 86,400,000
        ({"type": "array", "items": "null"}, b"\x01\x00\x00", None),  # a block of -1 items, with its size
        ({"type": "array", "items": "int"}, b"\x04\x02", TRUNC),
        ({"type": "map", "values": "int"}, b"\x02\x02a\x02\x00", None),
    ],
)
def test_broken_primitives(schema: dict | str, payload: bytes, reason: str | None) -> None:
    assert _decoder(schema).decode([payload]).reasons == [reason]


def test_big_decimal_sign_extended() -> None:
    d = _decoder({"type": "bytes", "logicalType": "decimal", "precision": 3, "scale": 1})
    assert d.decode([b"\x24" + b"\xff" * 17 + b"\x9c"]).values.to_pylist() == [decimal.Decimal("-10.0")]


# -- valid payloads against fastavro's reader --------------------------------------------------------------

_ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "p",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "n", "type": "long"},
        {"name": "q", "type": "int"},
        {"name": "f", "type": "float"},
        {"name": "d", "type": "double"},
        {"name": "b", "type": "boolean"},
        {"name": "raw", "type": "bytes"},
        {"name": "e", "type": {"type": "enum", "name": "S", "symbols": ["A", "B", "C"]}},
        {
            "name": "items",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "I",
                    "fields": [
                        {"name": "sku", "type": "string"},
                        {"name": "tags", "type": {"type": "array", "items": "string"}},
                    ],
                },
            },
        },
        {"name": "m", "type": {"type": "map", "values": ["null", "long"]}},
        {"name": "u", "type": ["null", "int", "string"]},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 20, "scale": 3}},
    ],
}
_ZERO_ORDER = {
    "id": "",
    "n": 0,
    "q": 0,
    "f": 0.0,
    "d": 0.0,
    "b": False,
    "raw": b"",
    "e": "A",
    "items": [],
    "m": {},
    "u": None,
    "amount": decimal.Decimal("0.000"),
}
_TEXT = st.text(max_size=12)
_ORDER_VALUES = st.fixed_dictionaries(
    {
        "id": _TEXT,
        "n": st.integers(-(2**63), 2**63 - 1),
        "q": st.integers(-(2**31), 2**31 - 1),
        "f": st.floats(width=32, allow_nan=False),
        "d": st.floats(allow_nan=False),
        "b": st.booleans(),
        "raw": st.binary(max_size=10),
        "e": st.sampled_from(["A", "B", "C"]),
        "items": st.lists(
            st.fixed_dictionaries({"sku": _TEXT, "tags": st.lists(_TEXT, max_size=3)}), max_size=4
        ),
        "m": st.dictionaries(_TEXT, st.none() | st.integers(-(2**63), 2**63 - 1), max_size=4),
        "u": st.none() | st.integers(-(2**31), 2**31 - 1) | _TEXT,
        "amount": st.decimals(min_value=-(10**17) + 1, max_value=10**17 - 1, places=3, allow_nan=False),
    }
)


@settings(max_examples=tiers.examples(60), deadline=None)
@given(st.lists(_ORDER_VALUES, max_size=30), st.randoms())
def test_valid_payloads_equal_fastavro(values: list[dict], rnd: random.Random) -> None:
    payloads = _write(_ORDER, values)
    # a few broken payloads among them must not disturb the others
    broken = [p[: rnd.randrange(len(p))] for p in payloads[:3]]
    decoded = _decoder(_ORDER).decode(broken + payloads)
    assert decoded.reasons == [TRUNC] * len(broken) + [None] * len(payloads)
    parsed = fastavro.parse_schema(_ORDER)
    for got, payload in zip(decoded.values.to_pylist()[len(broken) :], payloads, strict=True):
        want = fastavro.schemaless_reader(io.BytesIO(payload), parsed)
        u = want["u"]
        want["u"] = (
            None
            if u is None
            else {"int": u if isinstance(u, int) else None, "string": u if isinstance(u, str) else None}
        )
        want["m"] = list(want["m"].items())
        assert got == want


def _java_int(v: int) -> int:
    """fastavro's value of an Avro ``int`` as Java's ``BinaryDecoder.readInt`` (the reference reader) reads
    it. A mutation can make an int's varint 5 bytes with bits above the 32nd set: fastavro keeps them
    all, Java's ``readInt`` drops them from the zigzag varint itself, before it undoes the zigzag. So
    fastavro's value is zigzagged back to its varint, cut to 32 bits and undone again."""
    raw = ((v << 1) ^ (v >> 63)) & 0xFFFFFFFF
    return (raw >> 1) ^ -(raw & 1)


def test_java_int_folds_the_varint_not_the_value() -> None:
    # the varint 80 80 80 80 10 is 2**32: Java's int keeps 0 of it, so 0; fastavro reads 2**31
    assert _decoder("int").decode([b"\x80\x80\x80\x80\x10"]).values.to_pylist() == [0]
    assert fastavro.schemaless_reader(io.BytesIO(b"\x80\x80\x80\x80\x10"), "int") == 2**31
    assert _java_int(2**31) == 0
    # the varint fe ff ff ff 1f is 0x1fffffffe: Java keeps 0xfffffffe, 2**31 - 1; fastavro reads 2**32 - 1
    assert _decoder("int").decode([b"\xfe\xff\xff\xff\x1f"]).values.to_pylist() == [2**31 - 1]
    assert fastavro.schemaless_reader(io.BytesIO(b"\xfe\xff\xff\xff\x1f"), "int") == 2**32 - 1
    assert _java_int(2**32 - 1) == 2**31 - 1
    for v in (0, 1, -1, 2**31 - 1, -(2**31)):
        assert _java_int(v) == v


@settings(max_examples=tiers.examples(100), deadline=None)
@given(
    st.lists(_ORDER_VALUES, min_size=1, max_size=8),
    st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255))),
)
@example(
    # the 5-byte varint 80 80 80 80 10 of q: 2**32, whose low 32 bits Java keeps (0), fastavro all (2**31)
    [
        {
            **_ZERO_ORDER,
            "id": "00000",
            "n": 17_179_869_184,
            "q": 1024,
            "raw": b"\x00",
            "m": {"0000000": 8192},
            "amount": decimal.Decimal("0.128"),
        }
    ]
    + [_ZERO_ORDER] * 7,
    [(126480, 128), (1000000, 0)],
)
def test_mutated_payloads_never_crash_and_a_decoded_one_is_fastavros(values: list[dict], edits: list) -> None:
    """Bytes changed at random: each payload decodes or gets a reason, never an exception; one that
    decodes is what fastavro reads from all of its bytes."""
    payloads = [bytearray(p) for p in _write(_ORDER, values)]
    for at, byte in edits:
        p = payloads[at % len(payloads)]
        p[at % len(p)] = byte
    payloads = [bytes(p) for p in payloads] + [memoryview(bytes(payloads[0]))[1:]]
    decoded = _decoder(_ORDER).decode(payloads)
    parsed = fastavro.parse_schema(_ORDER)
    assert set(decoded.reasons) <= {None, TRUNC, MISMATCH}
    for got, payload, reason in zip(decoded.values.to_pylist(), payloads, decoded.reasons, strict=True):
        if reason is not None:
            assert got is None
            continue
        fo = io.BytesIO(bytes(payload))
        want = fastavro.schemaless_reader(fo, parsed)
        assert fo.tell() == len(payload)
        u = want["u"]
        want["u"] = (
            None
            if u is None
            else {"int": u if isinstance(u, int) else None, "string": u if isinstance(u, str) else None}
        )
        want["m"] = list(want["m"].items())
        want["q"] = _java_int(want["q"])
        if want["u"] is not None and want["u"]["int"] is not None:
            want["u"]["int"] = _java_int(want["u"]["int"])
        for key in ("f", "d"):  # a NaN of the mutation compares unequal to itself
            if want[key] != want[key]:
                assert got[key] != got[key]
                want[key] = got[key] = None
        assert got == want


def test_an_empty_batch() -> None:
    decoded = _decoder(_ORDER).decode([])
    assert (len(decoded.values), decoded.values.type, decoded.reasons) == (0, _decoder(_ORDER).arrow_type, [])


# -- random schemas against fastavro ------------------------------------------------------------------------

_LEAF_SCHEMAS = st.sampled_from(
    [
        "boolean",
        "int",
        "long",
        "float",
        "double",
        "bytes",
        "string",
        {"type": "fixed", "size": 3},
        {"type": "enum", "symbols": ["A", "B", "C"]},
        {"type": "bytes", "logicalType": "decimal", "precision": 15, "scale": 4},
        {"type": "fixed", "size": 9, "logicalType": "decimal", "precision": 20, "scale": 0},
        {"type": "long", "logicalType": "timestamp-millis"},
        {"type": "long", "logicalType": "timestamp-micros"},
        {"type": "int", "logicalType": "date"},
        {"type": "long", "logicalType": "time-micros"},
        {"type": "string", "logicalType": "uuid"},
    ]
)
# union branches fastavro tells apart by the value's Python type
_UNION_BRANCHES = ["null", "long", "string", "bytes", {"type": "array", "items": "int"}]


def _schema_tree(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        children.map(lambda t: {"type": "array", "items": t}),
        children.map(lambda t: {"type": "map", "values": t}),
        st.lists(children, min_size=1, max_size=4).map(
            lambda ts: {"type": "record", "fields": [{"name": f"f{i}", "type": t} for i, t in enumerate(ts)]}
        ),
        children.map(lambda t: ["null", t]),
        st.lists(st.sampled_from(range(len(_UNION_BRANCHES))), min_size=2, max_size=4, unique=True).map(
            lambda ix: [_UNION_BRANCHES[i] for i in sorted(ix)]
        ),
    )


def _named(schema: object, counter: list[int]) -> object:
    """``schema`` with a name of its own for every record, enum and fixed."""
    if isinstance(schema, list):
        return [_named(b, counter) for b in schema]
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    if out["type"] in ("record", "enum", "fixed"):
        counter[0] += 1
        out["name"] = f"N{counter[0]}"
    if "fields" in out:
        out["fields"] = [{**f, "type": _named(f["type"], counter)} for f in out["fields"]]
    for key in ("items", "values"):
        if key in out:
            out[key] = _named(out[key], counter)
    return out


RANDOM_SCHEMAS = st.recursive(_LEAF_SCHEMAS, _schema_tree, max_leaves=10).map(
    lambda s: {"type": "record", "name": "Top", "fields": [{"name": "v", "type": _named(s, [0])}]}
)


def _avro_values(schema: object) -> st.SearchStrategy:
    if isinstance(schema, list):
        return st.one_of([_avro_values(b) for b in schema])
    if isinstance(schema, str):
        return {
            "null": st.none(),
            "boolean": st.booleans(),
            "int": st.integers(-(2**31), 2**31 - 1),
            "long": st.integers(-(2**63), 2**63 - 1),
            "float": st.floats(width=32, allow_nan=False),
            "double": st.floats(allow_nan=False),
            "bytes": st.binary(max_size=6),
            "string": st.text(max_size=6),
        }[schema]
    t, logical = schema["type"], schema.get("logicalType")
    if logical == "decimal":
        digits = schema["precision"] - schema["scale"]
        return st.decimals(-(10**digits) + 1, 10**digits - 1, places=schema["scale"], allow_nan=False)
    if logical == "timestamp-millis":
        return st.datetimes(dt.datetime(1800, 1, 1), dt.datetime(2200, 1, 1), timezones=st.just(UTC)).map(
            lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000)
        )
    if logical == "timestamp-micros":
        return st.datetimes(dt.datetime(1800, 1, 1), dt.datetime(2200, 1, 1), timezones=st.just(UTC))
    if logical == "date":
        return st.dates()
    if logical == "time-micros":
        return st.times()
    if logical == "uuid":
        return st.uuids().map(str)
    if t == "fixed":
        return st.binary(min_size=schema["size"], max_size=schema["size"])
    if t == "enum":
        return st.sampled_from(schema["symbols"])
    if t == "array":
        return st.lists(_avro_values(schema["items"]), max_size=3)
    if t == "map":
        return st.dictionaries(st.text(max_size=3), _avro_values(schema["values"]), max_size=3)
    if t == "record":
        return st.fixed_dictionaries({f["name"]: _avro_values(f["type"]) for f in schema["fields"]})
    return _avro_values(t)


def _as_arrow(schema: object, value: object) -> object:
    """fastavro's reading of ``value`` as the decoder's to_pylist gives it (the type mapping)."""
    if value is None:
        return None
    if isinstance(schema, list):
        non_null = [b for b in schema if b != "null"]
        if len(schema) == 2 and len(non_null) == 1:
            return _as_arrow(non_null[0], value)
        kinds = {type(None): "null", int: "long", str: "string", bytes: "bytes", list: "array"}
        names = [b if isinstance(b, str) else b["type"] for b in non_null]
        (at,) = [i for i, name in enumerate(names) if name == kinds[type(value)]]
        return {name: (_as_arrow(non_null[i], value) if i == at else None) for i, name in enumerate(names)}
    if isinstance(schema, str):
        return value
    t = schema["type"]
    if schema.get("logicalType") == "uuid":
        return str(value)
    if t == "array":
        return [_as_arrow(schema["items"], v) for v in value]
    if t == "map":
        return [(k, _as_arrow(schema["values"], v)) for k, v in value.items()]
    if t == "record":
        return {f["name"]: _as_arrow(f["type"], value[f["name"]]) for f in schema["fields"]}
    return value


@settings(max_examples=tiers.examples(150), deadline=None)
@given(st.data(), RANDOM_SCHEMAS)
def test_random_schemas_equal_fastavro(data: st.DataObject, schema: dict) -> None:
    values = data.draw(st.lists(_avro_values(schema), max_size=5))
    payloads = _write(schema, values)
    decoded = _decoder(schema).decode(payloads)
    assert decoded.reasons == [None] * len(values)
    parsed = fastavro.parse_schema(schema)
    want = [_as_arrow(schema, fastavro.schemaless_reader(io.BytesIO(p), parsed)) for p in payloads]
    assert decoded.values.to_pylist() == want
    for p in payloads:  # every strict prefix is truncated, one more byte left over
        assert set(_decoder(schema).decode([p[:n] for n in range(len(p))]).reasons) <= {TRUNC}
        assert _decoder(schema).decode([p + b"\x00"]).reasons == [MISMATCH]


def test_connect_metadata_on_items_values_branches_and_the_value() -> None:
    dated = {"type": "int", "connect.name": "io.debezium.time.Date", "connect.version": 1}
    schema = [
        "null",
        {
            "type": "record",
            "name": "R",
            "connect.name": "x.R",
            "connect.parameters": {"a": "1"},
            "fields": [
                {"name": "days", "type": {"type": "array", "items": dated}},
                {"name": "by", "type": {"type": "map", "values": dated}},
                {"name": "u", "type": [dated, "string"]},
                {"name": "plain", "type": "int"},
            ],
        },
    ]
    d = _decoder(schema)
    date_meta = {b"connect.name": b"io.debezium.time.Date", b"connect.version": b"1"}
    assert d.field_metadata == {b"connect.name": b"x.R", b"connect.parameters": b'{"a":"1"}'}
    assert d.record_name is None  # a union at the top, as AvroSchema.name() says
    t = d.arrow_type
    assert t.field("days").type.value_field.metadata == date_meta
    assert t.field("by").type.item_field.metadata == date_meta
    assert t.field("u").type.field("int").metadata == date_meta
    assert t.field("plain").metadata is None
    assert d.decode(
        _write(schema, [None, {"days": [1], "by": {"k": 2}, "u": "s", "plain": 3}])
    ).values.to_pylist() == [
        None,
        {"days": [1], "by": [("k", 2)], "u": {"int": None, "string": "s"}, "plain": 3},
    ]
