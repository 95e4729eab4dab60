"""The message-generator type system: byte layouts from the spec, round trips, bad bytes."""

from __future__ import annotations

import base64
import contextlib
import io
import struct
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.schemas.fields.struct import StructField

import tiers
from logdoctor.errors import CorruptRecordError, FormatError, TruncatedError, UnsupportedError
from logdoctor.formats.internal.protocol import (
    UNBOUNDED,
    ArrayOf,
    Field,
    Message,
    StructType,
    Versions,
    read_message,
    uuid_from_text,
    uuid_to_standard,
    uuid_to_text,
    write_message,
)
from logdoctor.formats.internal.schemas import ALL_MESSAGES, A, F, M, S

# A synthetic spec with every type, nullable and tagged variants, non-flexible v0 and flexible v1+.
EVERYTHING = M(
    "Everything", "0-2", "1+",
    F("b", "bool"), F("i8", "int8"), F("i16", "int16"), F("u16", "uint16"), F("i32", "int32"),
    F("u32", "uint32"), F("i64", "int64"), F("f64", "float64"), F("id", "uuid"),
    F("s", "string"), F("ns", "string", nullable="0+"), F("by", "bytes"), F("nby", "bytes", nullable="0+"),
    F("rec", "records", nullable="0+"),
    F("ints", A("int32")), F("nints", A("int32"), nullable="0+"), F("strs", A("string")),
    F("ids", A("uuid")),
    F("items", A(S("Item", F("name", "string"), F("n", "int64"), F("since2", "int16", "2+")))),
    F("opt", S("Opt", F("x", "int32")), nullable="0+"),
    F("v2only", "string", "2+", default="dflt"),
    F("t_int", "int32", tagged="1+", tag=0, default=-1),
    F("t_str", "string", nullable="1+", tagged="1+", tag=3, default=None),
    F("t_ints", A("int32"), tagged="1+", tag=5),
    F("t_struct", S("TS", F("a", "int32"), F("b", A("string"))), nullable="1+", tagged="1+", tag=7,
      default=None),
)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def strategy_for(t: Any, version: int, nullable: bool) -> st.SearchStrategy:
    if isinstance(t, ArrayOf):
        inner = st.lists(strategy_for(t.element, version, False), max_size=4)
    elif isinstance(t, StructType):
        inner = struct_strategy(t, version)
    else:
        inner = {
            "bool": st.booleans(),
            "int8": st.integers(-(2**7), 2**7 - 1),
            "int16": st.integers(-(2**15), 2**15 - 1),
            "uint16": st.integers(0, 2**16 - 1),
            "int32": st.integers(-(2**31), 2**31 - 1),
            "uint32": st.integers(0, 2**32 - 1),
            "int64": st.integers(-(2**63), 2**63 - 1),
            "float64": st.floats(allow_nan=False),
            "uuid": st.binary(min_size=16, max_size=16).map(uuid_to_text),
            "string": st.text(max_size=20),
            "bytes": st.binary(max_size=20).map(_b64),
            "records": st.binary(max_size=20).map(_b64),
        }[t]
    return st.one_of(st.none(), inner) if nullable else inner


def struct_strategy(s: StructType, version: int) -> st.SearchStrategy:
    return st.fixed_dictionaries({
        f.name: strategy_for(f.type, version, version in f.nullable)
        for f in s.fields
        if version in f.versions
    })


def message_cases() -> list[tuple[Message, int]]:
    cases = [(EVERYTHING, v) for v in range(3)]
    for m in ALL_MESSAGES.values():
        high = m.valid_versions.high
        cases += [(m, v) for v in range(m.valid_versions.low, high + 1)]
    return cases


CASES = message_cases()


@pytest.mark.parametrize("message,version", CASES, ids=[f"{m.name}-v{v}" for m, v in CASES])
@settings(max_examples=tiers.examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_round_trip_every_spec_and_version(message: Message, version: int, data: st.DataObject) -> None:
    value = data.draw(struct_strategy(message.struct, version))
    raw = write_message(message, value, version)
    decoded, end = read_message(message, raw, version)
    assert end == len(raw)
    assert decoded == value
    assert write_message(message, decoded, version) == raw
    # Every strict prefix is a truncation, reported inside the buffer.
    for cut in sorted({0, len(raw) // 3, len(raw) // 2, len(raw) - 1}):
        if cut < len(raw):
            with pytest.raises(TruncatedError) as err:
                read_message(message, raw[:cut], version)
            assert 0 <= err.value.position <= cut


def _oracle_json(m: Message) -> dict[str, Any]:
    def name(t: Any) -> str:
        if isinstance(t, ArrayOf):
            return "[]" + name(t.element)
        return t.name if isinstance(t, StructType) else t

    def field(f: Field) -> dict[str, Any]:
        d: dict[str, Any] = {"name": "".join(p.capitalize() for p in f.name.split("_")),
                             "type": name(f.type), "versions": str(f.versions)}
        if not f.nullable.empty:
            d["nullableVersions"] = str(f.nullable)
        if f.tag is not None:
            d["tag"], d["taggedVersions"] = f.tag, str(f.tagged)
        elem = f.type.element if isinstance(f.type, ArrayOf) else f.type
        if isinstance(elem, StructType):
            d["fields"] = [field(x) for x in elem.fields]
        return d

    return {"name": m.name, "type": "data", "validVersions": str(m.valid_versions),
            "flexibleVersions": str(m.flexible_versions),
            # kafka-python's engine reads no presence marker in a nullable tagged struct (Kafka's generator
            # does: MessageDataGenerator); leave such fields out, it then skips their tag by size
            "fields": [field(f) for f in m.fields
                       if f.tag is None or f.nullable.empty or not isinstance(f.type, StructType)]}


def _oracle_form(value: Any, t: Any, nested: bool = False) -> Any:
    if value is None:
        return None
    if isinstance(t, ArrayOf):
        return [_oracle_form(v, t.element, True) for v in value]
    if isinstance(t, StructType):
        # kafka-python's engine reads a nested struct's tagged field (StreamsGroup*Value's
        # TaskIds.AssignmentEpochs, 4.2) only when absent: compare nested structs without them
        return {f.name: _oracle_form(value[f.name], f.type, True) for f in t.fields
                if f.name in value and not (nested and f.tag is not None)}
    if t == "uuid":  # kafka-python reads the zero uuid as None
        return uuid.UUID(bytes=uuid_from_text(value)) if value != "AAAAAAAAAAAAAAAAAAAAAA" else None
    if t == "bytes":
        return base64.b64decode(value)
    return value


ORACLE_CASES = [(m, v) for m, v in CASES if m is not EVERYTHING and m.fields]


@pytest.mark.parametrize("message,version", ORACLE_CASES, ids=[f"{m.name}-v{v}" for m, v in ORACLE_CASES])
@settings(max_examples=tiers.examples(15), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_kafka_python_schema_engine_reads_our_bytes_the_same(message: Message, version: int,
                                                             data: st.DataObject) -> None:
    value = data.draw(struct_strategy(message.struct, version))
    raw = write_message(message, value, version)
    flexible = version in message.flexible_versions
    theirs = StructField(_oracle_json(message)).decode(io.BytesIO(raw), version=version, compact=flexible,
                                                       tagged=flexible)
    ours = _oracle_form(value, message.struct)
    fields = {f.name: f for f in message.fields}
    for name, their_value in theirs.items():
        if name in ours:
            assert ours[name] == _without_nested_tagged(their_value, fields[name].type), name


def _without_nested_tagged(value: Any, t: Any) -> Any:
    if value is None:
        return None
    if isinstance(t, ArrayOf):
        return [_without_nested_tagged(v, t.element) for v in value]
    if isinstance(t, StructType):
        tagged = {f.name for f in t.fields if f.tag is not None}
        types = {f.name: f.type for f in t.fields}
        return {k: _without_nested_tagged(v, types.get(k)) for k, v in value.items() if k not in tagged}
    return value


# ------------------------------------------------------------------------------------------------
# Byte layouts written out by hand from the spec rules


def test_non_flexible_layout() -> None:
    m = M("T", "0", "none", F("s", "string"), F("ns", "string", nullable="0+"), F("a", A("int16")),
          F("by", "bytes", nullable="0+"))
    raw = write_message(m, {"s": "ab", "ns": None, "a": [1, -1], "by": None}, 0)
    assert raw == b"\x00\x02ab" + b"\xff\xff" + b"\x00\x00\x00\x02\x00\x01\xff\xff" + b"\xff\xff\xff\xff"


def test_flexible_layout_with_tagged_fields_in_tag_order() -> None:
    m = M("T", "0", "0+", F("s", "string"), F("t5", "int32", tagged="0+", tag=5),
          F("t1", "string", nullable="0+", tagged="0+", tag=1, default=None))
    raw = write_message(m, {"s": "ab", "t5": 7, "t1": "x"}, 0)
    assert raw == b"\x03ab" + b"\x02" + b"\x01\x02\x02x" + b"\x05\x04\x00\x00\x00\x07"
    # Default-valued tagged fields are left out entirely.
    assert write_message(m, {"s": ""}, 0) == b"\x01\x00"


def test_partition_change_record_bytes_from_the_spec() -> None:
    from logdoctor.formats.internal import decode_metadata_record, encode_metadata_record

    topic = uuid.UUID("72b08a4d-dd30-4e5e-9b40-294a06d6b1e1")
    raw = (b"\x01\x05\x00" + struct.pack(">i", 4) + topic.bytes
           + b"\x02"  # two tagged fields
           + b"\x00\x05" + b"\x02" + struct.pack(">i", 3)  # tag 0 (isr), 5 bytes: compact [3]
           + b"\x01\x04" + struct.pack(">i", 3))  # tag 1 (leader), 4 bytes
    d = decode_metadata_record(raw)
    assert d["type"] == "PartitionChangeRecord" and d["version"] == 0
    assert d["data"] == {"partition_id": 4, "topic_id": "crCKTd0wTl6bQClKBtax4Q", "isr": [3], "leader": 3,
                         "replicas": None, "removing_replicas": None, "adding_replicas": None,
                         "leader_recovery_state": -1}
    assert uuid_to_standard(d["data"]["topic_id"]) == str(topic)
    assert encode_metadata_record(d) == raw


def test_unknown_tagged_fields_are_kept_for_the_round_trip() -> None:
    m = M("T", "0", "0+", F("a", "int8"))
    raw = b"\x01" + b"\x02" + b"\x03\x01\xaa" + b"\x09\x00"
    d, _ = read_message(m, raw, 0)
    assert d == {"a": 1, "_unknown_tagged_fields": [{"tag": 3, "data": "qg=="}, {"tag": 9, "data": ""}]}
    assert write_message(m, d, 0) == raw


def test_versions_parse() -> None:
    assert Versions.parse("3+") == Versions(3, UNBOUNDED)
    assert Versions.parse("1-4") == Versions(1, 4)
    assert Versions.parse("none").empty and 0 not in Versions.parse("")
    assert 7 in Versions.parse("2+") and 1 not in Versions.parse("2+")


# ------------------------------------------------------------------------------------------------
# Bad bytes


def test_unknown_version_is_unsupported() -> None:
    with pytest.raises(UnsupportedError):
        read_message(EVERYTHING, b"", 9)


def test_negative_length_of_non_nullable_field_is_corrupt() -> None:
    m = M("T", "0", "none", F("s", "string"))
    with pytest.raises(CorruptRecordError) as err:
        read_message(m, b"\xff\xff", 0)
    assert err.value.position == 0


def test_trailing_bytes_are_corrupt() -> None:
    m = M("T", "0", "none", F("a", "int8"))
    with pytest.raises(CorruptRecordError) as err:
        read_message(m, b"\x01\x02", 0, base_position=100, source="x.log")
    assert err.value.position == 101 and err.value.source == "x.log"


def test_huge_array_count_is_a_typed_error_not_an_allocation() -> None:
    m = M("T", "0", "none", F("a", A("int64")))
    with pytest.raises(TruncatedError):
        read_message(m, b"\x7f\xff\xff\xff", 0)


def test_overlong_varint_is_corrupt() -> None:
    m = M("T", "0", "0+", F("s", "string"))
    with pytest.raises(CorruptRecordError):
        read_message(m, b"\xff\xff\xff\xff\xff\x01", 0)


def test_invalid_utf8_is_corrupt_at_its_byte() -> None:
    m = M("T", "0", "none", F("s", "string"))
    with pytest.raises(CorruptRecordError) as err:
        read_message(m, b"\x00\x03a\xffb", 0)
    assert err.value.position == 3


@settings(max_examples=tiers.examples(300), deadline=None)
@given(raw=st.binary(max_size=80), version=st.integers(0, 2))
def test_random_bytes_raise_only_typed_errors(raw: bytes, version: int) -> None:
    with contextlib.suppress(FormatError):  # anything else (struct.error, IndexError, ...) fails the test
        read_message(EVERYTHING, raw, version)
