"""Confluent's frames (formats.registry.framing): the bytes of the typed data set's README, the frames of its
records as facts/records.jsonl gives them (schema id, message indexes, no_magic_byte), and the vectorized
pre-pass against the per-record reader on random data."""

from __future__ import annotations

import struct
import uuid

import numpy as np
import pyarrow as pa
import pytest
import registry_facts as rf
from hypothesis import given, settings
from hypothesis import strategies as st

import tiers
from logdoctor.errors import CorruptRecordError, TruncatedError
from logdoctor.formats.registry.framing import (
    VALUE_SCHEMA_ID_HEADER,
    Frame,
    binary_slices,
    prefix_ids,
    read_frame,
    read_message_indexes,
    scan_prefix,
)
from logdoctor.formats.registry.reasons import (
    DECODE_ERROR_SCHEMA_MISMATCH,
    DECODE_ERROR_TRUNCATED,
    NO_MAGIC_BYTE,
)

GUID = "095d71cf-1255-6b9d-5e33-0ad575b3df5d"
GUID_BYTES = bytes.fromhex(GUID.replace("-", ""))


def test_prefix_id_and_prefix_guid() -> None:
    assert read_frame(b"\x00\x00\x00\x00\x0c" + b"avro", None) == Frame(12, None, 5, "prefix")
    # Java's getInt reads -2; ids start at 1 (issue 75): no registered schema has it, so it is no frame
    assert read_frame(b"\x00\xff\xff\xff\xfe", None) == NO_MAGIC_BYTE
    assert read_frame(b"\x00\x00\x00\x00\x00\x00\x00\x07", None) == NO_MAGIC_BYTE  # LongSerializer's 7
    assert read_frame(b"\x01" + GUID_BYTES + b"x", None) == Frame(None, GUID, 17, "prefix")


def test_header_id_and_header_guid_with_message_indexes() -> None:
    bare = b"\x08\x96\x01"
    assert read_frame(bare, b"\x00\x00\x00\x00\x04") == Frame(4, None, 0, "header")
    assert read_frame(bare, b"\x01" + GUID_BYTES) == Frame(None, GUID, 0, "header")
    assert read_frame(bare, b"\x01" + GUID_BYTES + b"\x00") == Frame(None, GUID, 0, "header", (0,))
    assert read_frame(bare, b"\x00\x00\x00\x00\x04\x04\x02\x00") == Frame(4, None, 0, "header", (1, 0))
    # a value that itself looks framed is still the bare payload when the header names the schema
    assert read_frame(b"\x00\x00\x00\x00\x07", b"\x00\x00\x00\x00\x04").payload == 0


def test_the_reasons() -> None:
    for data in (
        b"",
        b"\x00\x00\x00\x01",
        b"\x01" + GUID_BYTES[:15],
        b'{"a":1}',
        b"\x02\x00\x00\x00\x01",
        None,
    ):
        assert read_frame(data, None) == NO_MAGIC_BYTE
    assert read_frame(b"x", b"\x00\x00\x01") == NO_MAGIC_BYTE  # a header shorter than a frame
    assert read_frame(b"x", b"\x05" + GUID_BYTES) == NO_MAGIC_BYTE
    assert read_frame(b"x", b"\x01" + GUID_BYTES + b"\x04\x02") == DECODE_ERROR_TRUNCATED  # [1, ?]
    assert read_frame(b"x", b"\x01" + GUID_BYTES + b"\x01") == DECODE_ERROR_SCHEMA_MISMATCH  # count -1
    assert (
        read_frame(b"x", b"\x01" + GUID_BYTES + b"\x02\x02\x00") == DECODE_ERROR_SCHEMA_MISMATCH
    )  # left over


def test_message_indexes_as_the_readme_writes_them() -> None:
    assert read_message_indexes(b"\x00", 0) == ((0,), 1)
    assert read_message_indexes(b"\x02\x02", 0) == ((1,), 2)
    assert read_message_indexes(b"..\x04\x02\x00rest", 2) == ((1, 0), 5)
    assert read_message_indexes(b"\x02\xac\x02", 0) == ((150,), 3)  # zig-zag 300
    with pytest.raises(TruncatedError):
        read_message_indexes(b"\x04\x02", 0)
    with pytest.raises(TruncatedError):
        read_message_indexes(b"", 0)
    with pytest.raises(TruncatedError):
        read_message_indexes(b"\x02\x80", 0)  # an index varint that ends early
    with pytest.raises(CorruptRecordError):
        read_message_indexes(b"\x03\x00", 0)  # a count of -2


def test_the_frames_of_the_real_records_are_the_facts() -> None:
    rf.require()
    want = {(x["topic"], x["partition"], x["offset"]): x for x in rf.facts() if x["topic"] != "_schemas"}
    seen = 0
    for part in sorted(p for p in rf.LOG_DIR.iterdir() if p.is_dir() and not p.name.startswith("_schemas")):
        topic, _, partition = part.name.rpartition("-")
        for offset, _, value, headers in rf.raw_records(part):
            fact = want[(topic, int(partition), offset)]
            header = next((v for k, v in reversed(headers) if k == VALUE_SCHEMA_ID_HEADER), None)
            frame = read_frame(value, header)
            if fact.get("framing") == "prefix":
                assert isinstance(frame, Frame) and frame.source == "prefix"
                assert frame.schema_id == fact["schema_id"]
                if "message_indexes" in fact:
                    assert read_message_indexes(value, frame.payload)[0] == tuple(fact["message_indexes"])
                seen += 1
            elif fact["reason"] == NO_MAGIC_BYTE:
                assert frame == NO_MAGIC_BYTE
                seen += 1
    assert seen == 500 + 266 + 195 + 3 + 2000 + 500  # every framed record, and the mixed ones with no frame


def test_prefix_ids_of_the_real_values_are_read_frames() -> None:
    rf.require()
    values = [v for _, _, v, _ in rf.raw_records(rf.LOG_DIR / "mixed-0")]
    magic, ids = prefix_ids(pa.array(values, pa.binary()))
    for v, m, i in zip(values, magic, ids, strict=True):
        frame = read_frame(v, None)
        assert (m == 0 and i == frame.schema_id) if isinstance(frame, Frame) else m not in (0, 1)


_elements = st.one_of(
    st.none(),
    st.binary(max_size=24),
    st.tuples(st.sampled_from([0, 1]), st.binary(max_size=20)).map(lambda t: bytes([t[0]]) + t[1]),
    st.integers(-(2**31), 2**31 - 1).map(lambda i: b"\x00" + struct.pack(">i", i)),
)


def _check(values: list[bytes | None], arr: pa.Array) -> None:
    magic, ids = prefix_ids(arr)
    assert magic.shape == ids.shape == (len(values),)
    for v, m, i in zip(values, magic.tolist(), ids.tolist(), strict=True):
        frame = read_frame(v, None)
        if isinstance(frame, Frame):
            assert m == (0 if frame.schema_id is not None else 1)
            if frame.schema_id is not None:
                assert i == frame.schema_id
        else:
            assert frame == NO_MAGIC_BYTE and m not in (0, 1)
            assert m == (-1 if not v or v[0] in (0, 1) else v[0])


@settings(max_examples=tiers.examples(200), deadline=None)
@given(st.lists(_elements, max_size=40), st.integers(0, 5), st.booleans())
def test_prefix_ids_agree_with_read_frame(values: list[bytes | None], cut: int, large: bool) -> None:
    arr = pa.array(values, pa.large_binary() if large else pa.binary())
    _check(values, arr)
    _check(values[cut:], arr.slice(cut))  # a slice: its offsets and validity start inside the buffers


def test_prefix_ids_of_nothing() -> None:
    magic, ids = prefix_ids(pa.array([], pa.binary()))
    assert magic.dtype == np.int16 and ids.dtype == np.int32 and len(magic) == 0
    magic, ids = prefix_ids(pa.array([None, b""], pa.binary()))
    assert magic.tolist() == [-1, -1]


def test_guid_text_is_javas_uuid() -> None:
    # java.util.UUID(msb, lsb).toString(): the 16 bytes big-endian, lowercase, 8-4-4-4-12
    raw = bytes(range(16))
    frame = read_frame(b"\x01" + raw, None)
    assert frame.guid == "00010203-0405-0607-0809-0a0b0c0d0e0f" == str(uuid.UUID(bytes=raw))


# -- scan_prefix: the whole column's frames (C where built) against read_frame and read_message_indexes ---


def _varint(value: int) -> bytes:
    raw = ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF
    out = bytearray()
    while raw >= 0x80:
        out.append(raw & 0x7F | 0x80)
        raw >>= 7
    return bytes([*out, raw])


# a message-index path: its count (or a wrong one: negative, more than follow), then the indexes
_paths = st.tuples(
    st.one_of(st.none(), st.integers(-3, 6)), st.lists(st.integers(-(2**31), 2**31 - 1), max_size=4)
).map(lambda t: _varint(len(t[1]) if t[0] is None else t[0]) + b"".join(map(_varint, t[1])))
_framed = st.tuples(
    st.integers(-5, 2**31 - 1),
    st.one_of(_paths, st.binary(max_size=12)),
    st.binary(max_size=6),
    st.integers(0, 3),
).map(lambda t: (b"\x00" + struct.pack(">i", t[0]) + t[1] + t[2])[: None if t[3] else -1])
_scan_elements = st.one_of(_elements, _framed, st.binary(min_size=1, max_size=8).map(lambda b: b"{" + b))


def _reference(values: list[bytes | None]) -> list[tuple[int, int, int, int]]:
    """(magic, id, index bytes, index key) of each value by read_frame and read_message_indexes."""
    out = []
    for v in values:
        frame = read_frame(v, None)
        if not isinstance(frame, Frame):
            out.append((-1 if not v or v[0] in (0, 1) else v[0], 0, -1, 0))
        elif frame.guid is not None:
            out.append((1, 0, -1, 0))
        else:
            try:
                end = read_message_indexes(v, 5)[1]
            except (TruncatedError, CorruptRecordError):
                end = -1
            size = end - 5 if 5 <= end <= 13 else -1
            out.append((0, frame.schema_id, size, int.from_bytes(v[5:end], "little") if size >= 0 else 0))
    return out


def _scanned(arr: pa.Array) -> list[tuple[int, int, int, int]]:
    s = scan_prefix(arr)
    assert s.magic.dtype == np.int16 and s.ids.dtype == np.int32
    assert s.index_bytes.dtype == np.int8 and s.index_keys.dtype == np.uint64
    cols = (s.magic.tolist(), s.ids.tolist(), s.index_bytes.tolist(), s.index_keys.tolist())
    return list(zip(*cols, strict=True))


@pytest.fixture(params=["c", "python"])
def scan_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    from logdoctor.formats import native

    if request.param == "c":
        if native.speedups is None:
            pytest.skip("the C extension is not built")
    else:
        monkeypatch.setattr(native, "speedups", None)
    return request.param


@settings(max_examples=tiers.examples(300), deadline=None)
@given(st.lists(_scan_elements, max_size=40), st.integers(0, 5), st.booleans())
def test_scan_prefix_agrees_with_read_frame(values: list[bytes | None], cut: int, large: bool) -> None:
    from logdoctor.formats import native

    for speedups in (native.speedups, None):  # the C scan, then the Python twin (what it falls back to)
        saved, native.speedups = native.speedups, speedups
        try:
            arr = pa.array(values, pa.large_binary() if large else pa.binary())
            assert _scanned(arr) == _reference(values)
            assert _scanned(arr.slice(cut)) == _reference(values[cut:])
            rows = np.arange(len(values) - cut, dtype=np.int64)[::-1]
            want = [None if v is None else v[3:] for v in values[cut:][::-1]]
            assert binary_slices(arr.slice(cut), rows, 3) == want
            magic, ids = prefix_ids(arr.slice(cut))  # the numpy pre-pass too: the same
            assert [(m, i) for m, i, _, _ in _reference(values[cut:])] == list(zip(magic, ids, strict=True))
        finally:
            native.speedups = saved


def test_scan_prefix_of_the_payments_values_gives_the_facts_message_indexes(scan_path: str) -> None:
    rf.require()
    want = {x["offset"]: x for x in rf.facts() if x["topic"] == "payments" and x.get("framing") == "prefix"}
    values = {o: v for o, _, v, _ in rf.raw_records(rf.LOG_DIR / "payments-0")}
    offsets = sorted(want)
    s = scan_prefix(pa.array([values[o] for o in offsets], pa.binary()))
    for o, m, i, size, key in zip(offsets, s.magic, s.ids, s.index_bytes, s.index_keys, strict=True):
        assert (m, i) == (0, want[o]["schema_id"])
        path = int(key).to_bytes(8, "little")[:size]
        assert read_message_indexes(path, 0) == (tuple(want[o]["message_indexes"]), size)


def test_scan_prefix_of_nothing_and_of_nulls(scan_path: str) -> None:
    assert _scanned(pa.array([], pa.binary())) == []
    assert _scanned(pa.array([None, b"", None], pa.binary())) == [(-1, 0, -1, 0)] * 3
    assert binary_slices(pa.array([None, b"ab"], pa.binary()), np.array([1, 0, 1]), 5) == [b"", None, b""]


def test_the_c_scan_refuses_buffers_that_do_not_hold_the_column() -> None:
    """frame_scan and binary_slices read only what the Arrow buffers hold: offsets short of the length,
    an offset past the data, a bitmap short of the length or a row outside the array are a ValueError or
    IndexError, never a read past a buffer (make asan-check runs this too)."""
    from logdoctor.formats import native

    if native.speedups is None:
        pytest.skip("the C extension is not built")
    scan, slices = native.speedups.frame_scan, native.speedups.binary_slices
    offsets = np.array([0, 5, 9], np.int32).tobytes()
    data = b"\x00\x00\x00\x00\x07abcd"
    assert scan(None, offsets, data, 0, 2, False)[0] == np.array([0, ord("a")], np.int16).tobytes()
    with pytest.raises(ValueError, match="offsets"):
        scan(None, offsets, data, 0, 3, False)
    with pytest.raises(ValueError, match="offsets"):
        scan(None, offsets, data, 0, 1, True)  # 12 bytes are not two int64 offsets
    with pytest.raises(ValueError, match="outside the data"):
        scan(None, offsets, data[:8], 0, 2, False)
    with pytest.raises(ValueError, match="validity"):
        scan(b"", offsets, data, 0, 2, False)
    with pytest.raises(ValueError):
        scan(None, offsets, data, -1, 2, False)
    with pytest.raises(IndexError):
        slices(None, offsets, data, 0, 2, False, np.array([2], np.int64), 0)
    assert slices(b"\x02", offsets, data, 0, 2, False, np.array([1, 0], np.int64), 1) == [b"bcd", None]
