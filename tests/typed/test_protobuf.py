"""The Protobuf decoder: every record of ``payments`` (schema id 4, message indexes [0] and [1]) equals
facts/records.jsonl (decoded there by protoc-compiled classes); crafted schemas for the message-index path,
references, the type mapping, truncation at every byte and undecodable bytes."""

from __future__ import annotations

import base64
import datetime as dt
import pickle

import pyarrow as pa
import pytest
import typed_set
from google.protobuf import json_format

from logdoctor.formats.registry.decoder import decoder_for
from logdoctor.formats.registry.protobuf import ProtobufDecoder, ends_early
from logdoctor.formats.registry.protobuf_schema import compile_schema
from logdoctor.formats.registry.reasons import DECODE_ERROR_SCHEMA_MISMATCH, DECODE_ERROR_TRUNCATED
from logdoctor.formats.registry.results import SchemaError
from logdoctor.formats.registry.store import RegisteredSchema, SchemaReference, SchemaRegistry

#: the oneof members of the messages of payments-value (only the set one appears in the canonical JSON)
_ONEOF_MEMBERS = {"card", "iban", "wallet"}


def _iso_ms(value: dt.datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def _canonical(value: object, arrow_type: pa.DataType, oneof: frozenset[str] = frozenset()) -> object:
    """An Arrow value (``to_pylist``) as the README's canonical JSON value of a Protobuf message."""
    if value is None:
        return None
    if pa.types.is_struct(arrow_type):
        out = {}
        for field in arrow_type:
            v = value[field.name]
            if field.name in oneof and v is None:
                continue
            out[field.name] = _canonical(v, field.type, oneof)
        return out
    if pa.types.is_map(arrow_type):
        return {str(k): _canonical(v, arrow_type.item_type, oneof) for k, v in value}
    if pa.types.is_list(arrow_type):
        return [_canonical(v, arrow_type.value_type, oneof) for v in value]
    if pa.types.is_timestamp(arrow_type):
        return _iso_ms(value)
    if pa.types.is_binary(arrow_type):
        return value.hex()
    if pa.types.is_decimal(arrow_type):
        return int(value)
    return value


def _registry_with(*schemas: RegisteredSchema) -> SchemaRegistry:
    reg = SchemaRegistry()
    for s in schemas:
        reg.schemas[s.id] = s
    return reg


def _proto(
    sid: int, text: str, subject: str = "", refs: tuple[SchemaReference, ...] = ()
) -> RegisteredSchema:
    subject = subject or f"s{sid}"
    return RegisteredSchema(sid, "PROTOBUF", text, refs, subject, 1, ((subject, 1),))


@pytest.mark.realworld
def test_payments_every_record_equals_the_facts() -> None:
    registry = typed_set.registry()
    raw = typed_set.raw_records("payments")
    facts = typed_set.topic_facts("payments")
    assert len(facts) == 500
    by_path: dict[tuple[int, ...], list[tuple[bytes, dict]]] = {}
    for fact in facts:
        assert fact["decode_status"] == "decoded"
        schema_id, payload = typed_set.unframe(raw[(fact["partition"], fact["offset"])][1])
        indexes, body = typed_set.message_indexes(payload)
        assert (schema_id, indexes) == (fact["schema_id"], fact["message_indexes"])
        by_path.setdefault(tuple(indexes), []).append((body, fact["value_decoded"]))
    assert sorted(by_path) == [(0,), (1,)]
    names = {}
    for path, cases in by_path.items():
        decoder = ProtobufDecoder(registry, registry.by_id(4), path)
        names[path] = decoder.record_name
        out = decoder.decode([body for body, _ in cases])
        assert out.reasons == [None] * len(cases)
        assert out.values.type == decoder.arrow_type
        for got, (_, expected) in zip(out.values.to_pylist(), cases, strict=True):
            mine = _canonical(got, decoder.arrow_type, frozenset(_ONEOF_MEMBERS))
            assert typed_set.canonical(mine) == typed_set.canonical(expected)
    assert names == {(0,): "shop.payments.Payment", (1,): "shop.payments.Refund"}
    assert len(by_path[(1,)]) == sum(1 for f in facts if f["offset"] % 6 == 5)


@pytest.mark.realworld
def test_payment_arrow_type_follows_the_mapping() -> None:
    registry = typed_set.registry()
    decoder = decoder_for(registry, registry.by_id(4), [0])
    money = pa.struct([("currency_code", pa.string()), ("units", pa.int64()), ("nanos", pa.int32())])
    card = pa.struct(
        [("brand", pa.string()), ("last4", pa.string()), ("exp_month", pa.int32()), ("exp_year", pa.int32())]
    )
    assert decoder.arrow_type == pa.struct(
        [
            ("payment_id", pa.string()),
            ("order_id", pa.string()),
            ("amount", money),
            ("status", pa.string()),
            ("tags", pa.list_(pa.string())),
            ("card", card),
            ("iban", pa.string()),
            ("wallet", pa.string()),
            ("attributes", pa.map_(pa.string(), pa.string())),
            ("created_at", pa.timestamp("us", tz="UTC")),
            ("attempt_count", pa.int64()),
            ("captured", pa.bool_()),
            ("fee_rate", pa.float64()),
            ("signature", pa.binary()),
        ]
    )
    assert decoder.schema_id == 4


def _walk(message) -> dict:
    """The canonical JSON of a parsed message read field by field through protobuf's own API (the oracle of
    the truncation test, checked against the facts on the whole payload)."""
    out = {}
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        oneof = field.containing_oneof
        if oneof is not None and message.WhichOneof(oneof.name) != field.name:
            continue
        if field.type == field.TYPE_MESSAGE and not field.is_repeated:
            if not message.HasField(field.name):
                out[field.name] = None
            elif field.message_type.full_name == "google.protobuf.Timestamp":
                out[field.name] = _iso_ms(value.ToDatetime(tzinfo=dt.UTC))
            else:
                out[field.name] = _walk(value)
        elif field.type == field.TYPE_MESSAGE and field.message_type.GetOptions().map_entry:
            out[field.name] = {str(k): v for k, v in value.items()}
        elif field.is_repeated:
            out[field.name] = list(value)
        elif field.type == field.TYPE_ENUM:
            out[field.name] = field.enum_type.values_by_number[value].name
        elif field.type == field.TYPE_BYTES:
            out[field.name] = value.hex()
        else:
            out[field.name] = value
    return out


@pytest.mark.realworld
def test_truncated_at_every_byte_never_crashes_nor_gives_a_wrong_value() -> None:
    registry = typed_set.registry()
    facts = [f for f in typed_set.topic_facts("payments") if f["message_indexes"] == [0]]
    fact = next(f for f in facts if "card" in f["value_decoded"] and f["value_decoded"]["attributes"])
    raw = typed_set.raw_records("payments")[(fact["partition"], fact["offset"])][1]
    _, body = typed_set.message_indexes(typed_set.unframe(raw)[1])
    decoder = ProtobufDecoder(registry, registry.by_id(4), (0,))
    parse = compile_schema(registry, registry.by_id(4)).message_class([0]).FromString
    assert typed_set.canonical(_walk(parse(body))) == typed_set.canonical(fact["value_decoded"])
    cuts = [body[:n] for n in range(len(body))]
    out = decoder.decode(cuts)
    values = out.values.to_pylist()
    truncated = 0
    for cut, reason, value in zip(cuts, out.reasons, values, strict=True):
        try:
            expected = _walk(parse(cut))
        except Exception:
            expected = None
        if expected is None:
            assert (reason, value) == (DECODE_ERROR_TRUNCATED, None), cut.hex()
            truncated += 1
        else:
            assert reason is None
            got = _canonical(value, decoder.arrow_type, frozenset(_ONEOF_MEMBERS))
            assert typed_set.canonical(got) == typed_set.canonical(expected)
    assert truncated > len(body) // 2


def test_bytes_that_are_no_message_of_the_schema_are_a_mismatch() -> None:
    reg = _registry_with(_proto(1, 'syntax = "proto3";\nmessage M { string s = 1; int32 n = 2; }\n'))
    decoder = ProtobufDecoder(reg, reg.by_id(1), (0,))
    payloads = [
        b"\x0a\x02\xff\xfe",  # s: invalid UTF-8
        b"\x0f",  # wire type 7
        b"\x0a\x01a\x10\x07",  # fine
        b"\x0a\x05ab",  # cut inside s
        b"\x10\xff\xff",  # cut inside n's varint
    ]
    out = decoder.decode(payloads)
    assert out.reasons == [
        DECODE_ERROR_SCHEMA_MISMATCH,
        DECODE_ERROR_SCHEMA_MISMATCH,
        None,
        DECODE_ERROR_TRUNCATED,
        DECODE_ERROR_TRUNCATED,
    ]
    assert out.values.to_pylist() == [None, None, {"s": "a", "n": 7}, None, None]
    assert not ends_early(b"\x0a\x01a") and ends_early(b"\x0b") and not ends_early(b"\x0b\x0c")


_NESTED = """syntax = "proto3";
package p.q;
message A {
  map<string, int32> counts = 1;
  message B { string b = 1; }
  message C { int32 c = 1; }
  B one = 2;
}
message D {
  message E { string e = 1; message F { bool f = 1; } }
  map<int32, E> by_number = 1;
  message G { int64 g = 1; }
}
"""


def test_message_index_path_names_nested_messages_in_either_convention() -> None:
    # Java's serializer does not count map entries, confluent-kafka-python's does (tests/typed/
    # test_protobuf_message_indexes.py checks both with the real serializers)
    reg = _registry_with(_proto(7, _NESTED))
    names = {
        path: ProtobufDecoder(reg, reg.by_id(7), path).record_name
        for path in [(0,), (0, 0), (0, 2), (1,), (1, 0), (1, 0, 0), (1, 1), (1, 2)]
    }
    assert names == {
        (0,): "p.q.A",
        (0, 0): "p.q.A.B",  # Python's [0, 0] is A.CountsEntry: no message
        (0, 2): "p.q.A.C",  # Python's only
        (1,): "p.q.D",
        (1, 0): "p.q.D.E",
        (1, 0, 0): "p.q.D.E.F",
        (1, 1): "p.q.D.G",  # Java's; Python's [1, 1] is D.ByNumberEntry
        (1, 2): "p.q.D.G",  # Python's only
    }
    decoder = ProtobufDecoder(reg, reg.by_id(7), (1, 0))
    assert decoder.decode([b"\x0a\x02hi"]).values.to_pylist() == [{"e": "hi"}]
    for bad in [(2,), (0, 3), (1, 0, 1)]:
        with pytest.raises(SchemaError, match="name no message"):
            ProtobufDecoder(reg, reg.by_id(7), bad)
    with pytest.raises(
        SchemaError, match=r"\[0, 1\] name p\.q\.A\.C as Java's .* and p\.q\.A\.B as confluent"
    ):
        ProtobufDecoder(reg, reg.by_id(7), (0, 1))


def test_a_chain_of_two_imports_by_reference() -> None:
    c = _proto(1, 'syntax = "proto3";\npackage c;\nmessage C { int64 n = 1; uint64 u = 2; }\n', "c-value")
    b = _proto(
        2,
        'syntax = "proto3";\npackage b;\nimport "deps/c.proto";\n'
        "message B { c.C inner = 1; string t = 2; }\n",
        "b-value",
        (SchemaReference("deps/c.proto", "c-value", 1),),
    )
    a = _proto(
        3,
        'syntax = "proto3";\npackage a;\nimport "b.proto";\n'
        "message A { b.B b = 1; repeated b.B more = 2; }\n",
        "a-value",
        (SchemaReference("b.proto", "b-value", 1),),
    )
    reg = _registry_with(c, b, a)
    decoder = ProtobufDecoder(reg, a, (0,))
    # A{b: B{inner: C{n: 5, u: 2**64-1}, t: "x"}, more: [B{}, B{t: "y"}]}
    u64 = b"\xff" * 9 + b"\x01"
    inner = b"\x08\x05\x10" + u64
    b1 = b"\x0a" + bytes([len(inner)]) + inner + b"\x12\x01x"
    payload = b"\x0a" + bytes([len(b1)]) + b1 + b"\x12\x00" + b"\x12\x03\x12\x01y"
    out = decoder.decode([payload])
    assert out.reasons == [None]
    assert out.values.to_pylist() == [
        {
            "b": {"inner": {"n": 5, "u": 2**64 - 1}, "t": "x"},
            "more": [{"inner": None, "t": ""}, {"inner": None, "t": "y"}],
        }
    ]
    assert decoder.arrow_type.field("b").type.field("inner").type.field("u").type == pa.decimal128(20, 0)
    missing = _registry_with(a, b)
    with pytest.raises(SchemaError, match="c-value"):
        ProtobufDecoder(missing, a, (0,))


def test_a_schema_protoc_rejects_is_a_schema_error_with_protocs_words() -> None:
    reg = _registry_with(_proto(9, 'syntax = "proto3";\nmessage M { strin s = 1; }\n'))
    with pytest.raises(SchemaError, match=r"schema id 9: protoc: .*strin"):
        ProtobufDecoder(reg, reg.by_id(9), (0,))
    up = SchemaReference("../x.proto", "x", 1)
    escaping = _proto(10, 'syntax = "proto3";\nimport "../x.proto";\n', refs=(up,))
    with pytest.raises(SchemaError, match="not a usable import path"):
        ProtobufDecoder(_registry_with(escaping), escaping, (0,))


def test_compiled_schemas_are_kept_per_schema() -> None:
    reg = _registry_with(_proto(12, 'syntax = "proto3";\nmessage M { string s = 1; }\n'))
    assert compile_schema(reg, reg.by_id(12)) is compile_schema(reg, reg.by_id(12))
    other = _registry_with(_proto(12, 'syntax = "proto3";\nmessage M { int32 s = 1; }\n'))
    assert compile_schema(other, other.by_id(12)) is not compile_schema(reg, reg.by_id(12))


_MAPPING = """syntax = "proto3";
package m;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/struct.proto";
message Node { string name = 1; repeated Node children = 2; Node parent = 3; }
message All {
  int32 i32 = 1; sint32 s32 = 2; sfixed32 sf32 = 3; int64 i64 = 4; sint64 s64 = 5; sfixed64 sf64 = 6;
  uint32 u32 = 7; fixed32 f32 = 8; uint64 u64 = 9; fixed64 f64 = 10; float fl = 11; double db = 12;
  bool ok = 13; string st = 14; bytes by = 15;
  enum Color { RED = 0; GREEN = 1; }
  Color color = 16; repeated Color colors = 17;
  optional int32 maybe = 18;
  google.protobuf.Int32Value w32 = 19; google.protobuf.UInt64Value wu64 = 20;
  google.protobuf.StringValue wst = 21;
  google.protobuf.Duration took = 22; google.protobuf.Timestamp at = 23;
  google.protobuf.Struct extra = 24;
  map<int32, Node> nodes = 25;
  Node tree = 26;
  oneof choice { int64 num = 27; Node node = 28; }
}
"""


def test_every_kind_of_field_maps_to_its_arrow_type_and_value() -> None:
    reg = _registry_with(_proto(11, _MAPPING))
    decoder = ProtobufDecoder(reg, reg.by_id(11), (1,))
    node_type = pa.struct(
        [("name", pa.string()), ("children", pa.list_(pa.string())), ("parent", pa.string())]
    )
    expected_type = pa.struct(
        [
            ("i32", pa.int32()), ("s32", pa.int32()), ("sf32", pa.int32()),
            ("i64", pa.int64()), ("s64", pa.int64()), ("sf64", pa.int64()),
            ("u32", pa.int64()), ("f32", pa.int64()), ("u64", pa.decimal128(20, 0)),
            ("f64", pa.decimal128(20, 0)), ("fl", pa.float32()), ("db", pa.float64()),
            ("ok", pa.bool_()), ("st", pa.string()), ("by", pa.binary()),
            ("color", pa.string()), ("colors", pa.list_(pa.string())), ("maybe", pa.int32()),
            ("w32", pa.int32()), ("wu64", pa.decimal128(20, 0)), ("wst", pa.string()),
            ("took", pa.duration("us")), ("at", pa.timestamp("us", tz="UTC")), ("extra", pa.string()),
            ("nodes", pa.map_(pa.int32(), node_type)), ("tree", node_type),
            ("num", pa.int64()), ("node", node_type),
        ]
    )  # fmt: skip
    assert decoder.arrow_type == expected_type
    cls = compile_schema(reg, reg.by_id(11)).message_class([1])
    full = {
        "i32": -1, "s32": -2, "sf32": -3, "i64": "-4", "s64": "-5", "sf64": "-6", "u32": 4294967295,
        "f32": 7, "u64": "18446744073709551615", "f64": "9", "fl": 1.5, "db": 2.25, "ok": True,
        "st": "é", "by": base64.b64encode(b"\x00\xff").decode(), "color": "GREEN", "colors": ["RED", "GREEN"],
        "maybe": 0, "w32": 0, "wu64": "3", "wst": "", "took": "1.5s", "at": "2025-11-24T16:00:00.123456Z",
        "extra": {"k": [1, "v"]},
        "nodes": {"2": {"name": "two", "children": [{"name": "c"}]}, "1": {"name": "one"}},
        "tree": {"name": "root", "parent": {"name": "up"}},
        "num": "12",
    }  # fmt: skip
    payloads = [
        json_format.ParseDict(full, cls()).SerializeToString(),
        b"",
        json_format.ParseDict({"node": {"name": "n"}}, cls()).SerializeToString(),
    ]
    out = decoder.decode(payloads)
    assert out.reasons == [None, None, None]
    got = out.values.to_pylist()
    utc = dt.UTC
    assert got[0] == {
        "i32": -1, "s32": -2, "sf32": -3, "i64": -4, "s64": -5, "sf64": -6, "u32": 4294967295, "f32": 7,
        "u64": 18446744073709551615, "f64": 9, "fl": 1.5, "db": 2.25, "ok": True, "st": "é",
        "by": b"\x00\xff", "color": "GREEN", "colors": ["RED", "GREEN"], "maybe": 0, "w32": 0, "wu64": 3,
        "wst": "", "took": dt.timedelta(seconds=1.5),
        "at": dt.datetime(2025, 11, 24, 16, 0, 0, 123456, tzinfo=utc).astimezone(got[0]["at"].tzinfo),
        "extra": '{"k":[1.0,"v"]}',
        "nodes": [
            (1, {"name": "one", "children": [], "parent": None}),
            (2, {"name": "two", "children": ['{"name":"c"}'], "parent": None}),
        ],
        "tree": {"name": "root", "children": [], "parent": '{"name":"up"}'},
        "num": 12, "node": None,
    }  # fmt: skip
    defaults = dict.fromkeys(expected_type.names)
    defaults.update(
        {"i32": 0, "s32": 0, "sf32": 0, "i64": 0, "s64": 0, "sf64": 0, "u32": 0, "f32": 0, "u64": 0, "f64": 0,
         "fl": 0.0, "db": 0.0, "ok": False, "st": "", "by": b"", "color": "RED", "colors": [], "nodes": []}
    )  # fmt: skip
    assert got[1] == defaults
    assert got[2] == {**defaults, "node": {"name": "n", "children": [], "parent": None}}


def test_the_decoder_pickles_for_executors() -> None:
    reg = _registry_with(_proto(1, 'syntax = "proto3";\nmessage M { string s = 1; }\n'))
    decoder = pickle.loads(pickle.dumps(ProtobufDecoder(reg, reg.by_id(1), (0,))))
    assert decoder.decode([b"\x0a\x01z"]).values.to_pylist() == [{"s": "z"}]


def test_enums_unset_in_a_oneof_and_numbers_no_value_names() -> None:
    text = (
        'syntax = "proto3";\nenum E { ZERO = 0; TWO = 2; }\n'
        "message M { oneof o { E e = 1; string s = 2; } repeated E many = 3; optional E maybe = 4; }\n"
    )
    reg = _registry_with(_proto(1, text))
    decoder = ProtobufDecoder(reg, reg.by_id(1), (0,))
    # e=TWO; s="x" (e unset); many=[0, 2, 1 (no name), 7 (no name)], maybe=ZERO (set)
    out = decoder.decode([b"\x08\x02", b"\x12\x01x", b"\x1a\x04\x00\x02\x01\x07\x20\x00"])
    assert out.reasons == [None, None, None]
    assert out.values.to_pylist() == [
        {"e": "TWO", "s": None, "many": [], "maybe": None},
        {"e": None, "s": "x", "many": [], "maybe": None},
        {"e": None, "s": None, "many": ["ZERO", "TWO", "1", "7"], "maybe": "ZERO"},
    ]
