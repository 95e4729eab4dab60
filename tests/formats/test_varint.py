"""Varints against kafka-python's encoder/decoder and Java's ByteUtils rules."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.record.util import decode_varint as kp_decode
from kafka.record.util import encode_varint as kp_encode

from logdoctor.errors import CorruptRecordError, TruncatedError
from logdoctor.formats import varint as v

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)


def _kp_bytes(value: int) -> bytes:
    out = bytearray()
    kp_encode(value, out.append)
    return bytes(out)


@given(INT32)
def test_varint_matches_kafka_python(value: int) -> None:
    encoded = v.encode_varint(value)
    assert encoded == _kp_bytes(value)
    assert len(encoded) == v.size_of_varint(value) <= 5
    assert v.read_varint(encoded + b"\xff", 0) == (value, len(encoded))


@given(INT64)
def test_varlong_matches_kafka_python(value: int) -> None:
    encoded = v.encode_varlong(value)
    assert kp_decode(encoded, 0) == (value, len(encoded))
    assert len(encoded) == v.size_of_varlong(value) <= 10
    assert v.read_varlong(b"\x00" + encoded, 1) == (value, 1 + len(encoded))


@given(st.integers(0, 2**32 - 1))
def test_unsigned_varint_round_trip(value: int) -> None:
    encoded = v.encode_unsigned_varint(value)
    assert v.read_unsigned_varint(encoded, 0) == (value, len(encoded))
    assert len(encoded) == v.size_of_unsigned_varint(value)


def test_known_encodings() -> None:
    # protobuf zigzag: 0 -> 0, -1 -> 1, 1 -> 2, -64 -> 127, 64 -> 128 (2 bytes)
    assert v.encode_varint(0) == b"\x00"
    assert v.encode_varint(-1) == b"\x01"
    assert v.encode_varint(1) == b"\x02"
    assert v.encode_varint(-64) == b"\x7f"
    assert v.encode_varint(64) == b"\x80\x01"
    assert v.encode_varint(2**31 - 1) == b"\xfe\xff\xff\xff\x0f"
    assert v.encode_varint(-(2**31)) == b"\xff\xff\xff\xff\x0f"
    assert v.encode_unsigned_varint(300) == b"\xac\x02"


def test_overlong_varint_is_corrupt() -> None:
    with pytest.raises(CorruptRecordError) as err:
        v.read_varint(b"\x80\x80\x80\x80\x80\x01", 0, source="x.log", base_position=100)
    assert err.value.position == 100 and err.value.source == "x.log"
    with pytest.raises(CorruptRecordError):
        v.read_varlong(b"\x80" * 10 + b"\x01", 0)


def test_fifth_byte_high_bits_dropped_like_java() -> None:
    # ByteUtils.readUnsignedVarint shifts the 5th byte by 28 in an int: bits beyond 32 are lost.
    assert v.read_unsigned_varint(b"\xff\xff\xff\xff\x7f", 0) == (0xFFFFFFFF, 5)
    assert v.read_unsigned_varint(b"\x80\x80\x80\x80\x10", 0) == (0, 5)
    assert v.read_varint(b"\xff\xff\xff\xff\x7f", 0) == (-(2**31), 5)


def test_truncated_varint() -> None:
    with pytest.raises(TruncatedError) as err:
        v.read_varint(b"\x00\x80\x80", 1, base_position=10)
    assert err.value.position == 11
    with pytest.raises(TruncatedError):
        v.read_varlong(b"", 0)


def test_out_of_range_encode() -> None:
    with pytest.raises(OverflowError):
        v.encode_varint(2**31)
    with pytest.raises(OverflowError):
        v.encode_unsigned_varint(-1)
