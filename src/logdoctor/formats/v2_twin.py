"""The pure-Python record decoder of magic-2 batches: the reference the C extension
(``_speedups``) is tested against, and the decoder where the extension is not built or
``LOGDOCTOR_PURE_PYTHON=1`` turns it off (:mod:`logdoctor.formats.native` decides, once).

Same arguments, results and errors as ``_speedups.decode_records`` and
``_speedups.decode_batch_columns``: errors are ``RecordError(code, position, record_index[,
batch_index])`` with the codes of ``_speedups.c``; :mod:`logdoctor.formats.batch_v2` turns them into
typed errors naming the file and byte position.
"""

from __future__ import annotations

import itertools
import struct
from dataclasses import dataclass

from logdoctor.formats.lazy_numpy import np
from logdoctor.formats.record_types import BATCH_V2_HEADER as _HEADER
from logdoctor.formats.record_types import LOG_OVERHEAD, NO_SEQUENCE, Header, Record, TimestampType

__all__ = [
    "RECORD_ERRORS",
    "RecordError",
    "check_records_py",
    "decode_batch_columns_py",
    "decode_records_py",
    "increment_sequence",
    "wrap_int32",
    "wrap_int64",
]

_INT32_MAX = 0x7FFFFFFF
_RECORDS_OFFSET = _HEADER.size
_COMPRESSION_CODEC_MASK = 0x07
_TIMESTAMP_TYPE_MASK = 0x08


class RecordError(Exception):
    """The twin's error: the same arguments as ``_speedups.RecordError``."""


class _RecordFault(Exception):
    """Raised by the pure-Python decoder with the same (code, position, index) as the C one."""


# Error codes shared with _speedups.c: (what Kafka expects there, what was found)
_E_FEWER_RECORDS = 1
_E_OVERLONG_VARINT = 2
_E_BAD_LENGTH = 3
_E_FIELD_OVERRUN = 4
_E_BAD_HEADER_COUNT = 5
_E_BAD_HEADER_KEY = 6
_E_LENGTH_MISMATCH = 7
_E_TRAILING = 8
_E_TRUNCATED_LENGTH = 9
_E_BAD_COUNT = 10
_E_CODEC = 100  # C walker: "decompress this batch with codecs.py" (never leaves this module)
_E_WINDOW = 101  # C walker: an lz4 section of more than a window (batch_v2.SectionTooLargeError)

RECORD_ERRORS: dict[int, tuple[str, str]] = {
    _E_FEWER_RECORDS: ("as many records as the batch's record count", "the records end at record {index}"),
    _E_OVERLONG_VARINT: ("a varint of at most 5 bytes (varlong 10)", "an overlong varint in record {index}"),
    _E_BAD_LENGTH: ("a record length within the records section", "record {index} has an impossible length"),
    _E_FIELD_OVERRUN: ("record fields within the record's length", "a field of record {index} runs past it"),
    _E_BAD_HEADER_COUNT: (
        "a header count >= 0 that fits the record",
        "record {index} has an impossible count",
    ),
    _E_BAD_HEADER_KEY: ("a header key length >= 0", "a negative header key length in record {index}"),
    _E_LENGTH_MISMATCH: ("fields that fill the record's length", "record {index} ends before its length"),
    _E_TRAILING: ("no bytes after the last record", "bytes after record {index} (the declared count)"),
    _E_TRUNCATED_LENGTH: ("a complete record length varint", "the records end inside record {index}"),
    _E_BAD_COUNT: ("a record count >= 0", "a negative record count"),
}


def wrap_int64(value: int) -> int:
    return ((value + (1 << 63)) & 0xFFFFFFFFFFFFFFFF) - (1 << 63)


def wrap_int32(value: int) -> int:
    return ((value + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def increment_sequence(sequence: int, increment: int) -> int:
    """DefaultRecordBatch.incrementSequence, with Java's int32 arithmetic."""
    if sequence > wrap_int32(_INT32_MAX - increment):
        return wrap_int32(increment - wrap_int32(_INT32_MAX - sequence) - 1)
    return wrap_int32(sequence + increment)


def _uvarint(data, i: int, end: int, max_bytes: int) -> tuple[int, int]:
    """Unsigned varint of at most max_bytes; bits beyond the width are dropped by the callers."""
    b = data[i] if i < end else -1
    if 0 <= b < 0x80:
        return b, i + 1
    value = 0
    shift = 0
    for n in range(max_bytes):
        if i >= end:
            raise _RecordFault(_E_FIELD_OVERRUN)
        b = data[i]
        i += 1
        if n == max_bytes - 1:
            if b & 0x80:
                raise _RecordFault(_E_OVERLONG_VARINT)
            return value | (b << shift), i
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i
    raise AssertionError("unreachable")  # pragma: no cover


def _varint(data, i: int, end: int) -> tuple[int, int]:
    raw, i = _uvarint(data, i, end, 5)
    raw &= 0xFFFFFFFF
    return (raw >> 1) ^ -(raw & 1), i


def _varlong(data, i: int, end: int) -> tuple[int, int]:
    raw, i = _uvarint(data, i, end, 10)
    raw &= 0xFFFFFFFFFFFFFFFF
    return (raw >> 1) ^ -(raw & 1), i


@dataclass(slots=True)
class _RawRecord:
    timestamp_delta: int
    offset_delta: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[bytes, bytes | None]]


def _nullable_bytes(data, i: int, end: int) -> tuple[bytes | None, int]:
    """A varint length (-1: null) and that many bytes: a record's key and value, a header's value."""
    length, i = _varint(data, i, end)
    if length < 0:
        return None, i
    if length > end - i:
        raise _RecordFault(_E_FIELD_OVERRUN)
    return bytes(data[i : i + length]), i + length


def _parse_record_py(data, pos: int, end: int) -> tuple[_RawRecord, int]:
    """One record at pos; raises _RecordFault((code, position))."""
    if pos >= end:
        raise _RecordFault(_E_FEWER_RECORDS, pos)
    try:
        length, i = _varint(data, pos, end)
    except _RecordFault as fault:
        code = _E_TRUNCATED_LENGTH if fault.args[0] == _E_FIELD_OVERRUN else fault.args[0]
        raise _RecordFault(code, pos) from None
    if length < 0 or length > end - i:
        raise _RecordFault(_E_BAD_LENGTH, pos)
    rend = i + length
    if i >= rend:
        raise _RecordFault(_E_FIELD_OVERRUN, i)
    i += 1  # attributes: unused
    field = i
    try:
        ts_delta, i = _varlong(data, i, rend)
        field = i
        offset_delta, i = _varint(data, i, rend)
        field = i
        key, i = _nullable_bytes(data, i, rend)
        field = i
        value, i = _nullable_bytes(data, i, rend)
        field = i
        count, i = _varint(data, i, rend)
        if count < 0 or count > rend - i:
            raise _RecordFault(_E_BAD_HEADER_COUNT)
        headers = []
        for _ in range(count):
            field = i
            hk_len, i = _varint(data, i, rend)
            if hk_len < 0:
                raise _RecordFault(_E_BAD_HEADER_KEY)
            if hk_len > rend - i:
                raise _RecordFault(_E_FIELD_OVERRUN)
            hkey = bytes(data[i : i + hk_len])
            i += hk_len
            field = i
            hvalue, i = _nullable_bytes(data, i, rend)
            headers.append((hkey, hvalue))
    except _RecordFault as fault:
        raise _RecordFault(fault.args[0], field) from None
    if i != rend:
        raise _RecordFault(_E_LENGTH_MISMATCH, i)
    return _RawRecord(ts_delta, offset_delta, key, value, headers), rend


def _raw_records_py(data, pos: int, end: int, count: int) -> list[_RawRecord]:
    if count < 0:
        raise RecordError(_E_BAD_COUNT, pos, 0)
    out = []
    for n in range(count):
        try:
            rec, pos = _parse_record_py(data, pos, end)
        except _RecordFault as fault:
            raise RecordError(fault.args[0], fault.args[1], n) from None
        out.append(rec)
    if pos != end:
        raise RecordError(_E_TRAILING, pos, count)
    return out


def check_records_py(buf, positions, first: int, end: int) -> tuple[int, int, int, int]:
    """Pure-Python twin of ``_speedups.check_records_v2`` (same arguments and results): whether every
    record of the uncompressed v2 batches at ``positions[first:end]`` decodes, read as
    ``decode_records_py`` reads them; stops at a batch for the Python path (code 0) or at the first
    that fails: (i, code, errpos, index)."""
    data = memoryview(buf)
    n = len(data)
    starts = memoryview(positions).cast("B").cast("q")
    if first < 0 or end < first or end > len(starts):
        raise ValueError("check_records_v2: first/end outside the positions")
    for i in range(first, end):
        start = starts[i]
        if start < 0 or start > n - _RECORDS_OFFSET:
            return i, 0, 0, 0
        length = struct.unpack_from(">i", data, start + 8)[0]
        if (
            data[start + 16] != 2
            or length < _RECORDS_OFFSET - LOG_OVERHEAD
            or length > n - start - LOG_OVERHEAD
        ):
            return i, 0, 0, 0
        count = struct.unpack_from(">i", data, start + 57)[0]
        delta = struct.unpack_from(">i", data, start + 23)[0]
        if struct.unpack_from(">i", data, start + 12)[0] < -1:
            return i, 0, 0, 0  # a partition leader epoch below -1: for RecordBatchV2.check_count
        if count == 0 and length == _RECORDS_OFFSET - LOG_OVERHEAD:
            continue
        if count <= 0 or delta < 0 or count > delta + 1:
            return i, 0, 0, 0  # for RecordBatchV2.check_count
        if data[start + 22] & _COMPRESSION_CODEC_MASK:
            return i, 0, 0, 0
        try:
            _raw_records_py(data, start + _RECORDS_OFFSET, start + LOG_OVERHEAD + length, count)
        except RecordError as exc:
            code, errpos, index = exc.args
            return i, code, errpos, index
    return end, 0, 0, 0


def decode_records_py(
    data,
    pos: int,
    end: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
    base_sequence: int,
    timestamp_type: TimestampType,
) -> list[Record]:
    """Pure-Python twin of ``_speedups.decode_records`` (same arguments, results and errors)."""
    records = []
    for raw in _raw_records_py(data, pos, end, count):
        ts = (
            log_append_time
            if log_append_time is not None
            else wrap_int64(base_timestamp + raw.timestamp_delta)
        )
        seq = increment_sequence(base_sequence, raw.offset_delta) if base_sequence >= 0 else NO_SEQUENCE
        headers = tuple(Header(k.decode("utf-8", "replace"), v) for k, v in raw.headers)
        records.append(
            Record(
                wrap_int64(base_offset + raw.offset_delta),
                ts,
                raw.key,
                raw.value,
                headers,
                timestamp_type,
                seq,
            )
        )
    return records


def decode_batch_columns_py(buf, starts, sections, payload: bool = True) -> tuple:
    """Pure-Python twin of ``_speedups.decode_batch_columns`` (same arguments, results and errors;
    every compressed batch needs its decompressed section here). See that function in _speedups.c
    for the layout of the returned tuple."""
    mv = _byte_view(buf)
    offsets: list[int] = []
    timestamps: list[int] = []
    ts_types: list[int] = []
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    list_ends: list[int] = [0]
    hkeys: list[bytes] = []
    hvalues: list[bytes | None] = []
    for b, start in enumerate(starts):
        (base_offset, length, _, _, _, attributes, _, base_ts, max_ts, _, _, _, count) = _HEADER.unpack_from(
            mv, start
        )
        if count == 0:
            continue
        section = sections[b] if sections is not None else None
        if section is not None:
            data, pos, end = section, 0, len(section)
        elif attributes & _COMPRESSION_CODEC_MASK == 0:
            data, pos, end = mv, start + _RECORDS_OFFSET, start + LOG_OVERHEAD + length
        else:
            raise ValueError(f"batch {b}: a compressed batch needs its decompressed section")
        try:
            raws = _raw_records_py(data, pos, end, count)
        except RecordError as exc:
            raise RecordError(*exc.args, b) from None
        lat = attributes & _TIMESTAMP_TYPE_MASK
        for raw in raws:
            offsets.append(wrap_int64(base_offset + raw.offset_delta))
            timestamps.append(max_ts if lat else wrap_int64(base_ts + raw.timestamp_delta))
            ts_types.append(1 if lat else 0)
            if not payload:
                continue
            keys.append(raw.key)
            values.append(raw.value)
            for hk, hv in raw.headers:
                hkeys.append(hk)
                hvalues.append(hv)
            list_ends.append(len(hkeys))
    return column_buffers(offsets, timestamps, ts_types, keys, values, list_ends, hkeys, hvalues)


def column_buffers(
    offsets: list[int],
    timestamps: list[int],
    ts_types: list[int],
    keys: list[bytes | None],
    values: list[bytes | None],
    list_ends: list[int],
    hkeys: list[bytes],
    hvalues: list[bytes | None],
) -> tuple:
    """The ``decode_batch_columns`` tuple of these columns (None: a null key, value or header value)."""

    def i64(values: list[int]) -> bytearray:
        return bytearray(np.array(values, dtype=np.int64).tobytes())

    def ends(blobs: list[bytes] | list[bytes | None]) -> bytearray:
        return i64([0, *itertools.accumulate(len(b or b"") for b in blobs)])

    def binary(blobs: list[bytes | None]) -> tuple:
        """nulls, validity bitmap, ends and data of a nullable binary column"""
        valid = np.array([b is not None for b in blobs], dtype=bool)
        bitmap = bytearray(np.packbits(valid, bitorder="little").tobytes())
        return blobs.count(None), bitmap, ends(blobs), bytearray(b"".join(b or b"" for b in blobs))

    return (
        len(offsets),
        i64(offsets),
        i64(timestamps),
        bytearray(np.array(ts_types, dtype=np.int8).tobytes()),
        *binary(keys),
        *binary(values),
        i64(list_ends),
        len(hkeys),
        ends(hkeys),
        bytearray(b"".join(hkeys)),
        *binary(hvalues),
    )


def _byte_view(buf) -> memoryview:
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    if mv.ndim != 1 or mv.itemsize != 1 or mv.format not in ("B", "b", "c"):
        mv = mv.cast("B")
    return mv
