"""A Protobuf schema with every kind of field the C decoder (formats/registry/protobuf_plan.py) covers,
compiled by protoc, and random messages of it filled by protobuf's own classes (the independent encoder):
every scalar type plain, ``optional``, repeated packed and unpacked; open enums (a negative number too);
strings and bytes; nested messages four deep, with a oneof of a scalar and a message inside; repeated
messages (of messages holding repeated messages), Timestamps, Durations, wrappers and empty messages; a oneof
of scalars, an enum, a message and a Timestamp at the top; maps of every key type to scalar, enum, bytes and
string values; Timestamp, Duration and the wrappers. Shared by tests/typed/test_protobuf_c_path.py and
tests/fuzz/test_fuzz_protobuf_plan.py.
"""

from __future__ import annotations

import random
from typing import Any

from google.protobuf.descriptor import FieldDescriptor

from logdoctor.formats.registry.protobuf import ProtobufDecoder
from logdoctor.formats.registry.protobuf_schema import compile_schema
from logdoctor.formats.registry.store import RegisteredSchema, SchemaRegistry

_F = FieldDescriptor
SCALARS = [
    "double", "float", "int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32", "fixed64",
    "sfixed32", "sfixed64", "bool", "string", "bytes",
]  # fmt: skip
_KEYS = [
    "int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32", "fixed64", "sfixed32", "sfixed64",
    "bool", "string",
]  # fmt: skip
_WRAPPERS = ["Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String", "Bytes"]


def _text() -> str:
    lines = []
    n = 0

    def number() -> int:
        nonlocal n
        n += 1
        return n

    for s in SCALARS:
        lines.append(f"  {s} p_{s} = {number()};")
        lines.append(f"  optional {s} o_{s} = {number()};")
        lines.append(f"  repeated {s} r_{s} = {number()};")
        if s not in ("string", "bytes"):
            lines.append(f"  repeated {s} u_{s} = {number()} [packed = false];")
    lines.append(f"  E e = {number()};")
    lines.append(f"  optional E o_e = {number()};")
    lines.append(f"  repeated E r_e = {number()};")
    lines.append(f"  repeated E u_e = {number()} [packed = false];")
    for i, k in enumerate(_KEYS):
        value = ["string", "int32", "E", "bytes", "double", "sint64"][i % 6]
        lines.append(f"  map<{k}, {value}> m_{k} = {number()};")
    lines.append(f"  Inner inner = {number()};")
    lines.append(f"  Deep deep = {number()};")
    lines.append(f"  Empty empty = {number()};")
    lines.append(f"  repeated Inner items = {number()};")
    lines.append(f"  repeated Empty r_empty = {number()};")
    lines.append(f"  repeated google.protobuf.Timestamp r_ts = {number()};")
    lines.append(f"  repeated google.protobuf.Duration r_du = {number()};")
    lines.append(f"  repeated google.protobuf.Int32Value r_w_int32 = {number()};")
    lines.append(f"  repeated google.protobuf.StringValue r_w_string = {number()};")
    lines.append(f"  google.protobuf.Timestamp ts = {number()};")
    lines.append(f"  google.protobuf.Duration du = {number()};")
    for w in _WRAPPERS:
        lines.append(f"  google.protobuf.{w}Value w_{w.lower()} = {number()};")
    lines.append(
        f"  oneof choice {{ int32 c_int = {number()}; string c_str = {number()}; Inner c_inner = {number()}; "
        f"google.protobuf.Timestamp c_ts = {number()}; E c_e = {number()}; }}"
    )
    body = "\n".join(lines)
    return f"""syntax = "proto3";
package every;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";
enum E {{ E0 = 0; E1 = 1; E5 = 5; EM = -3; }}
message Empty {{}}
message Leaf {{ int32 v = 1; string w = 2; }}
message Deep {{
  optional uint64 u = 1; bytes b = 2; repeated sint32 s = 3; E e = 4; repeated Leaf leaves = 5;
}}
message Inner {{
  int32 a = 1; string b = 2; repeated sint64 c = 3; google.protobuf.Timestamp t = 4; Deep d = 5;
  oneof o {{ string x = 6; Deep y = 7; }}
  map<string, E> m = 8;
  repeated Deep ds = 9;
}}
message All {{
{body}
}}
"""


TEXT = _text()
#: All is the fifth message: Empty [0], Leaf [1], Deep [2], Inner [3], All [4]
INDEXES = (4,)
_ids = iter(range(50_000, 10**9))


def registry() -> tuple[SchemaRegistry, RegisteredSchema]:
    schema_id = next(_ids)
    reg = SchemaRegistry()
    reg.schemas[schema_id] = RegisteredSchema(schema_id, "PROTOBUF", TEXT, (), "every", 1, (("every", 1),))
    return reg, reg.by_id(schema_id)


def decoder_and_class() -> tuple[ProtobufDecoder, type]:
    reg, schema = registry()
    return ProtobufDecoder(reg, schema, INDEXES), compile_schema(reg, schema).message_class(list(INDEXES))


def scalar(f: FieldDescriptor, rnd: random.Random) -> Any:
    t = f.type
    if t == _F.TYPE_ENUM:
        # 7 and the extremes: numbers E does not name
        return rnd.choice([0, 1, 5, -3, 7, 2**31 - 1, -(2**31)])
    if t in (_F.TYPE_DOUBLE, _F.TYPE_FLOAT):
        return rnd.choice([0.0, -0.0, -1.5, 3.25, 1e30, float("inf"), float("-inf"), float("nan")])
    if t == _F.TYPE_BOOL:
        return rnd.random() < 0.5
    if t == _F.TYPE_STRING:
        return rnd.choice(["", "a", "b", "é€", "\U0001f600", "x" * 40, "\x00"])
    if t == _F.TYPE_BYTES:
        return rnd.choice([b"", b"\x00\xff", b"z" * 30, b"\xc3"])
    bits = (
        64 if t in (_F.TYPE_INT64, _F.TYPE_UINT64, _F.TYPE_SINT64, _F.TYPE_FIXED64, _F.TYPE_SFIXED64) else 32
    )
    if t in (_F.TYPE_UINT32, _F.TYPE_UINT64, _F.TYPE_FIXED32, _F.TYPE_FIXED64):
        return rnd.choice([0, 1, 2, 300, 2**bits - 1, 2 ** (bits - 1)])
    return rnd.choice([0, 1, -1, 2, -300, 2 ** (bits - 1) - 1, -(2 ** (bits - 1))])


def fill(message: Any, rnd: random.Random, depth: int = 0, invalid: float = 0.1) -> None:
    """Random values in some of ``message``'s fields (a Timestamp or Duration invalid at rate ``invalid``)."""
    for f in message.DESCRIPTOR.fields:
        if rnd.random() < 0.5:
            continue
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            target = getattr(message, f.name)
            kf, vf = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
            for _ in range(rnd.randint(0, 4)):
                target[scalar(kf, rnd)] = scalar(vf, rnd)
        elif f.message_type is None:
            if f.is_repeated:
                getattr(message, f.name).extend(scalar(f, rnd) for _ in range(rnd.randint(0, 4)))
            else:
                setattr(message, f.name, scalar(f, rnd))
        elif depth < 3 and f.is_repeated:
            for _ in range(rnd.randint(0, 3)):
                _fill_message(getattr(message, f.name).add(), rnd, depth, invalid)
        elif depth < 3:
            _fill_message(getattr(message, f.name), rnd, depth, invalid)


def _fill_message(m: Any, rnd: random.Random, depth: int, invalid: float) -> None:
    name = m.DESCRIPTOR.full_name
    if name in ("google.protobuf.Timestamp", "google.protobuf.Duration"):
        if rnd.random() < invalid:  # valid or not
            m.seconds = rnd.choice(
                [1, -1, 253_402_300_799, 253_402_300_800, -62_135_596_801, 315_576_000_001]
            )
            m.nanos = rnd.choice([0, 1, -1, 999_999_999, 1_500_000_000, -999_999_999])
        else:  # valid for both
            m.seconds = rnd.choice([0, 1, 1_700_000_000, 253_402_300_799 // 1000])
            m.nanos = rnd.choice([0, 1, 999, 1000, 999_999_999])
    elif name.startswith("google.protobuf."):
        m.value = scalar(m.DESCRIPTOR.fields_by_name["value"], rnd)
    else:
        m.SetInParent()
        fill(m, rnd, depth + 1, invalid)


def messages(message_class: type, seed: int, count: int, invalid: float = 0.1) -> list[bytes]:
    """``count`` random messages, serialized; some of them two messages end to end (protobuf merges them:
    last value wins, repeated fields and maps append, embedded messages merge, a oneof takes the last)."""
    rnd = random.Random(seed)
    out = []
    for _ in range(count):
        m = message_class()
        fill(m, rnd, 0, invalid)
        payload = m.SerializeToString()
        if rnd.random() < 0.3:
            other = message_class()
            fill(other, rnd, 0, invalid)
            payload += other.SerializeToString()
        out.append(payload)
    return out
