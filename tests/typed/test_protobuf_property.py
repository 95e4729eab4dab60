"""The Protobuf decoder on any bytes (issue 75): for every payload it gives a value or a reason, never an
exception, in bounded time and memory; and where protobuf's own parser (the ``protobuf`` package) parses the
payload, the value is what protobuf read, through the type mapping of docs/typed-tables.md.

Schemas: the registered ``payments`` schema of ``../shared/typed`` (both messages), with its real payloads
mutated; and random ``proto3`` schemas (every scalar type, enums, nested and recursive messages, oneofs,
``optional``, maps, the well-known types) compiled by protoc, with random messages of them mutated and random
bytes. The oracle reads each payload with protobuf's parser (``FromString``) on the same compiled classes:
a payload it refuses must get ``decode_error_truncated`` or ``decode_error_schema_mismatch``; one holding a
well-known value protobuf calls invalid (its JSON mapping refuses it) ``decode_error_schema_mismatch``; any
other its value, field by field as protobuf's accessors give it.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import random
import time
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
import typed_fuzz
from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logdoctor.formats.registry.protobuf import ProtobufDecoder
from logdoctor.formats.registry.protobuf_schema import compile_schema
from logdoctor.formats.registry.reasons import DECODE_ERROR_SCHEMA_MISMATCH, DECODE_ERROR_TRUNCATED
from logdoctor.formats.registry.store import RegisteredSchema, SchemaRegistry

_F = FieldDescriptor
_TIME = ("google.protobuf.Timestamp", "google.protobuf.Duration")
_WRAPPERS = {
    "google.protobuf.DoubleValue",
    "google.protobuf.FloatValue",
    "google.protobuf.Int64Value",
    "google.protobuf.UInt64Value",
    "google.protobuf.Int32Value",
    "google.protobuf.UInt32Value",
    "google.protobuf.BoolValue",
    "google.protobuf.StringValue",
    "google.protobuf.BytesValue",
}
_JSON = {"google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue"}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
#: per decode call of a few KB: a bound no sane decoder nears on a loaded machine
_SECONDS_PER_CALL = 10.0


class Invalid(Exception):
    """The payload holds a value protobuf calls invalid."""


# -- the oracle: protobuf's parsed message, through the type mapping -----------------------------------------


def _expected_message(m: Any, path: tuple[str, ...]) -> dict:
    out = {}
    for f in m.DESCRIPTOR.fields:
        value = getattr(m, f.name)
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            vf = f.message_type.fields_by_name["value"]
            out[f.name] = [(k, _expected_value(vf, value[k], path)) for k in sorted(value)]
        elif f.is_repeated:
            out[f.name] = [_expected_value(f, v, path) for v in value]
        elif f.has_presence and not m.HasField(f.name):
            out[f.name] = None
        else:
            out[f.name] = _expected_value(f, value, path)
    return out


def _expected_value(f: FieldDescriptor, v: Any, path: tuple[str, ...]) -> Any:
    if f.type == _F.TYPE_ENUM:
        named = f.enum_type.values_by_number.get(v)
        return named.name if named is not None else str(v)
    if f.type == _F.TYPE_FLOAT or f.type == _F.TYPE_DOUBLE:
        return "nan" if math.isnan(v) else v
    if f.type not in (_F.TYPE_MESSAGE, _F.TYPE_GROUP):
        return v
    name = f.message_type.full_name
    if name in _TIME:
        try:
            json_format.MessageToJson(v)  # protobuf's own validity check of the value
        except (ValueError, json_format.Error):
            raise Invalid(name) from None
        return v.ToMicroseconds()
    if name in _WRAPPERS:
        inner = v.value
        return "nan" if isinstance(inner, float) and math.isnan(inner) else inner
    if name in _JSON or name in path:
        try:
            d = json_format.MessageToDict(v, preserving_proto_field_name=True)
        except (ValueError, TypeError, json_format.Error):
            raise Invalid(name) from None
        return json.dumps(d, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return _expected_message(v, (*path, name))


def _got(value: Any, t: pa.DataType) -> Any:
    """The decoder's Arrow value in the oracle's terms."""
    if value is None:
        return None
    if pa.types.is_struct(t):
        return {f.name: _got(value[f.name], f.type) for f in t}
    if pa.types.is_map(t):
        return [(k, _got(v, t.item_type)) for k, v in value]
    if pa.types.is_list(t):
        return [_got(v, t.value_type) for v in value]
    if pa.types.is_timestamp(t):
        return (value - _EPOCH) // dt.timedelta(microseconds=1)
    if pa.types.is_duration(t):
        return value // dt.timedelta(microseconds=1)
    if isinstance(value, Decimal):
        return int(value)
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return value


def check(decoder: ProtobufDecoder, message_class: type, payloads: list[bytes]) -> None:
    """Decode ``payloads`` as one batch and check every one against protobuf's parser, and the bounds."""
    typed_fuzz.payloads(len(payloads))
    started = time.monotonic()
    out = decoder.decode(payloads)
    took = time.monotonic() - started
    assert took < _SECONDS_PER_CALL * max(1, sum(map(len, payloads)) // 4096), took
    assert len(out.reasons) == len(out.values) == len(payloads)
    assert out.values.type == decoder.arrow_type
    # memory: each payload byte makes a bounded number of cells (every element, even an empty message, costs
    # a byte on the wire at least), each of bounded size
    width = _leaves(decoder.arrow_type)
    assert out.values.nbytes <= 64 * width * (sum(map(len, payloads)) + len(payloads)) + 4096
    values = out.values.to_pylist()
    for payload, reason, value in zip(payloads, out.reasons, values, strict=True):
        try:
            parsed = message_class.FromString(payload)
        except DecodeError:
            assert (reason, value) in ((DECODE_ERROR_TRUNCATED, None), (DECODE_ERROR_SCHEMA_MISMATCH, None))
            continue
        try:
            expected = _expected_message(parsed, (parsed.DESCRIPTOR.full_name,))
        except Invalid:
            assert (reason, value) == (DECODE_ERROR_SCHEMA_MISMATCH, None), payload.hex()
            continue
        assert reason is None, payload.hex()
        assert _got(value, decoder.arrow_type) == expected, payload.hex()


def _leaves(t: pa.DataType) -> int:
    if pa.types.is_struct(t):
        return 1 + sum(_leaves(f.type) for f in t)
    if pa.types.is_map(t):
        return 1 + _leaves(t.key_type) + _leaves(t.item_type)
    if pa.types.is_list(t):
        return 1 + _leaves(t.value_type)
    return 1


# -- mutations of valid payloads -----------------------------------------------------------------------------


@st.composite
def mutated(draw: st.DrawFn, payload: bytes) -> bytes:
    """``payload`` changed a few times: bytes flipped, set, inserted or deleted, cut, repeated."""
    data = bytearray(payload)
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["flip", "set", "insert", "delete", "cut", "repeat"]))
        at = draw(st.integers(0, len(data)))
        if kind == "flip" and at < len(data):
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "set" and at < len(data):
            data[at] = draw(st.sampled_from([0x00, 0x7F, 0x80, 0xFF, 0x0A, 0x12, 0x08, 0x0F]))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=12))
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 8))]
        elif kind == "cut":
            del data[at:]
        elif kind == "repeat":
            data += data[at:]
    return bytes(data)


# -- the registered schemas of ../shared/typed ---------------------------------------------------------------


@pytest.fixture(scope="module")
def payments() -> tuple[SchemaRegistry, list[bytes]]:
    import typed_set

    registry = typed_set.registry()
    bodies = []
    for _, value in sorted(typed_set.raw_records("payments").items())[:200]:
        _, payload = typed_set.unframe(value[1])
        bodies.append(typed_set.message_indexes(payload)[1])
    return registry, bodies


@pytest.mark.realworld
@settings(
    max_examples=typed_fuzz.examples(300),  # FUZZ_EXAMPLES in `make fuzz`
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
@typed_fuzz.timed
def test_the_registered_payments_schema_on_any_bytes(payments, data) -> None:
    registry, bodies = payments
    path = data.draw(st.sampled_from([(0,), (1,)]))
    decoder = ProtobufDecoder(registry, registry.by_id(4), path)
    message_class = compile_schema(registry, registry.by_id(4)).message_class(list(path))
    source = st.one_of(
        st.sampled_from(bodies).flatmap(mutated),
        st.binary(max_size=300),
    )
    payloads = data.draw(st.lists(source, min_size=1, max_size=8))
    check(decoder, message_class, payloads)


# -- random schemas ------------------------------------------------------------------------------------------

_SCALARS = [
    "double", "float", "int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32", "fixed64",
    "sfixed32", "sfixed64", "bool", "string", "bytes",
]  # fmt: skip
_KEYS = ["int32", "int64", "uint32", "uint64", "sint64", "fixed32", "sfixed64", "bool", "string"]
_WELL_KNOWN = [
    "google.protobuf.Timestamp", "google.protobuf.Duration", "google.protobuf.Int32Value",
    "google.protobuf.UInt64Value", "google.protobuf.StringValue", "google.protobuf.DoubleValue",
    "google.protobuf.Struct", "google.protobuf.Value",
]  # fmt: skip
_IMPORTS = (
    'import "google/protobuf/timestamp.proto";\nimport "google/protobuf/duration.proto";\n'
    'import "google/protobuf/wrappers.proto";\nimport "google/protobuf/struct.proto";\n'
)

_value_types = st.one_of(
    st.sampled_from(_SCALARS), st.sampled_from(["E", "N", "Top"]), st.sampled_from(_WELL_KNOWN)
)


@st.composite
def schemas(draw: st.DrawFn) -> str:
    """A random proto3 file: ``Top`` (the record's message) with random fields, message ``N``, enum ``E``."""
    lines = []
    number = 0
    oneof: list[str] = []
    for i in range(draw(st.integers(1, 10))):
        kind = draw(st.sampled_from(["plain", "repeated", "optional", "map", "oneof"]))
        number += 1
        if kind == "map":
            key = draw(st.sampled_from(_KEYS))
            value = draw(_value_types)
            lines.append(f"  map<{key}, {value}> f{i} = {number};")
            continue
        value = draw(_value_types)
        if kind == "oneof":
            oneof.append(f"    {value} f{i} = {number};")
        elif kind == "optional" and value in [*_SCALARS, "E"]:
            lines.append(f"  optional {value} f{i} = {number};")
        elif kind == "repeated":
            lines.append(f"  repeated {value} f{i} = {number};")
        else:
            lines.append(f"  {value} f{i} = {number};")
    if oneof:
        lines.append("  oneof choice {\n" + "\n".join(oneof) + "\n  }")
    negative = draw(st.booleans())
    enum = "enum E { E0 = 0; E1 = 1; E5 = 5;" + (" EM = -3;" if negative else "") + " }"
    nested = "message N { int32 a = 1; string b = 2; repeated N more = 3; google.protobuf.Timestamp t = 4; }"
    body = "\n".join(lines)
    return f'syntax = "proto3";\npackage r;\n{_IMPORTS}{enum}\n{nested}\nmessage Top {{\n{body}\n}}\n'


def _fill(message: Any, rnd: random.Random, depth: int = 0) -> None:
    """Random values in some of ``message``'s fields (well-known time values valid or not)."""
    for f in message.DESCRIPTOR.fields:
        if rnd.random() < 0.4:
            continue
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            target = getattr(message, f.name)
            kf, vf = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
            for _ in range(rnd.randint(0, 3)):
                key = _scalar(kf, rnd)
                if vf.message_type is None:
                    target[key] = _scalar(vf, rnd)
                elif depth <= 3:
                    _fill_message(target[key], rnd, depth)
            continue
        if f.message_type is None:
            if f.is_repeated:
                getattr(message, f.name).extend(_scalar(f, rnd) for _ in range(rnd.randint(0, 4)))
            else:
                setattr(message, f.name, _scalar(f, rnd))
            continue
        if depth > 3:
            continue
        if f.is_repeated:
            for _ in range(rnd.randint(0, 3)):
                _fill_message(getattr(message, f.name).add(), rnd, depth)
        else:
            _fill_message(getattr(message, f.name), rnd, depth)


def _fill_message(m: Any, rnd: random.Random, depth: int) -> None:
    name = m.DESCRIPTOR.full_name
    if name in _TIME:
        m.seconds = rnd.choice([0, 1, -1, 1_700_000_000, 253_402_300_799, 253_402_300_800, -62_135_596_801])
        m.nanos = rnd.choice([0, 1, -1, 999_999_999, 1_500_000_000, -999_999_999])
    elif name == "google.protobuf.Struct":
        m.fields["k"].string_value = "v"
        m.fields["n"].number_value = rnd.choice([1.5, -0.0, 1e300])
    elif name == "google.protobuf.Value":
        m.bool_value = rnd.random() < 0.5
    elif name in _WRAPPERS:
        m.value = _scalar(m.DESCRIPTOR.fields_by_name["value"], rnd)
    else:
        m.SetInParent()
        _fill(m, rnd, depth + 1)


def _scalar(f: FieldDescriptor, rnd: random.Random) -> Any:
    t = f.type
    if t == _F.TYPE_ENUM:
        return rnd.choice([0, 1, 5])
    if t in (_F.TYPE_DOUBLE, _F.TYPE_FLOAT):
        return rnd.choice([0.0, -1.5, 3.25, float("inf"), float("nan")])
    if t == _F.TYPE_BOOL:
        return rnd.random() < 0.5
    if t == _F.TYPE_STRING:
        return rnd.choice(["", "a", "é€", "x" * 40])
    if t == _F.TYPE_BYTES:
        return rnd.choice([b"", b"\x00\xff", b"z" * 30])
    bits = (
        64 if t in (_F.TYPE_INT64, _F.TYPE_UINT64, _F.TYPE_SINT64, _F.TYPE_FIXED64, _F.TYPE_SFIXED64) else 32
    )
    if t in (_F.TYPE_UINT32, _F.TYPE_UINT64, _F.TYPE_FIXED32, _F.TYPE_FIXED64):
        return rnd.choice([0, 1, 2**bits - 1])
    return rnd.choice([0, -1, 2 ** (bits - 1) - 1, -(2 ** (bits - 1))])


_schema_ids = iter(range(1000, 10**9))


def _random_schema_case(data: st.DataObject, max_payloads: int) -> None:
    text = data.draw(schemas(), label="schema")
    schema_id = next(_schema_ids)
    reg = SchemaRegistry()
    reg.schemas[schema_id] = RegisteredSchema(schema_id, "PROTOBUF", text, (), "r", 1, (("r", 1),))
    decoder = ProtobufDecoder(reg, reg.by_id(schema_id), (1,))  # N is [0], Top [1] (an enum is no message)
    assert decoder.record_name == "r.Top"
    message_class = compile_schema(reg, reg.by_id(schema_id)).message_class([1])
    rnd = random.Random(data.draw(st.integers(0, 2**32), label="seed"))
    valid = []
    for _ in range(6):
        m = message_class()
        _fill(m, rnd)
        valid.append(m.SerializeToString())
    source = st.one_of(
        st.sampled_from(valid), st.sampled_from(valid).flatmap(mutated), st.binary(max_size=200)
    )
    payloads = data.draw(st.lists(source, min_size=1, max_size=max_payloads), label="payloads")
    check(decoder, message_class, payloads)


# a protoc compile an example: FUZZ_EXAMPLES / 20 in `make fuzz` (tests/typed/typed_fuzz.py)
@settings(max_examples=typed_fuzz.examples(40, 1 / 20), deadline=None)
@given(data=st.data())
@typed_fuzz.timed
def test_random_schemas_on_any_bytes(data) -> None:
    _random_schema_case(data, 12)


@pytest.mark.slow
@settings(max_examples=typed_fuzz.examples(200, 1 / 20), deadline=None)
@given(data=st.data())
@typed_fuzz.timed
def test_random_schemas_on_any_bytes_long(data) -> None:
    _random_schema_case(data, 40)
