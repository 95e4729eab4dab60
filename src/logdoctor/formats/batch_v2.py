"""Record batches of magic 2 (K:clients/src/main/java/org/apache/kafka/common/record/DefaultRecordBatch.java).

A batch is a 61-byte header (read with one ``struct.unpack_from``) and a records section,
compressed as a whole when the codec bits say so. Records (DefaultRecord.java) are decoded
on demand, by the C extension ``_speedups`` when it is built, else by the pure-Python decoder
below; both give identical results and raise the same typed errors.

Rules kept from Kafka:
- the CRC-32C covers attributes..end (the partition leader epoch is left out so that a leader
  can set it without recomputing the CRC);
- ``ensure_valid()`` is what LogSegment.recover calls (DefaultRecordBatch.ensureValid): the size
  must hold the header and the CRC must match; ``ensure_valid(deep=True)`` also decodes the records;
- with LogAppendTime every record's timestamp is the batch's max timestamp;
- when the delete-horizon bit is set, baseTimestamp is the delete horizon (the log cleaner sets it,
  records keep their deltas against it);
- a record's sequence is baseSequence + offsetDelta with Java's int32 wrap-around
  (DefaultRecordBatch.incrementSequence), -1 when the batch has no sequence.

Decoding paths (the C one when ``_speedups`` is built, else the pure-Python twin; same results):

- ``RecordBatchV2.record_list()`` / ``records()``: Record objects. Uncompressed and lz4 batches are
  one C call (``_speedups.batch_records``: header, lz4 frame, records, Record objects made with the
  type's tp_alloc and their slots set); gzip/snappy/zstd are decompressed by ``codecs`` first.
- ``decode_columns(batches) -> RecordColumns``: the columnar path for Spark and bulk readers.
  Consecutive v2 batches of one buffer (as ``records.iter_batches`` yields them) are decoded by one
  C call (``_speedups.decode_batch_columns``) that writes, in one pass, int64 offsets and timestamps
  (numpy), and keys, values and headers as Arrow buffers (validity bitmap + offsets + one data
  buffer each): every key and value is copied exactly once, from the segment itself (uncompressed)
  or from the decompressed records (lz4 is decompressed inside that call, other codecs by
  ``codecs`` just before). ``RecordColumns.to_arrow()`` gives a ``pyarrow.RecordBatch`` (key, value,
  offset, timestamp, timestampType, headers) without copying the payload again. Call it on chunks
  of a few hundred batches (a few MB to a few tens of MB of records) to bound memory.
- lz4 blocks are decoded in C by LZ4_decompress_safe of the lz4 package's own extension (found with
  ctypes), i.e. by the same code codecs.py calls; frames the C walk does not take (block checksums,
  or damage) go through codecs.py, so errors are the same typed errors either way.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from logdoctor.errors import (
    CorruptRecordError,
    CrcMismatchError,
    FormatError,
    TruncatedError,
    UnsupportedError,
)
from logdoctor.formats.crc import crc32c
from logdoctor.formats.record_types import (
    LOG_OVERHEAD,
    NO_SEQUENCE,
    Batch,
    Compression,
    Header,
    Record,
    TimestampType,
)

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

# The 61-byte header: baseOffset, length, partitionLeaderEpoch, magic, crc, attributes,
# lastOffsetDelta, baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount.
HEADER = struct.Struct(">qiibIhiqqqhii")
RECORD_BATCH_OVERHEAD = HEADER.size  # 61
RECORDS_OFFSET = RECORD_BATCH_OVERHEAD
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
LENGTH_OFFSET = 8
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_VALUE_V2 = 2

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40

_INT32_MAX = 0x7FFFFFFF

try:  # the C decoder; LOGDOCTOR_PURE_PYTHON=1 turns it off (tests compare both)
    if os.environ.get("LOGDOCTOR_PURE_PYTHON"):
        raise ImportError("disabled by LOGDOCTOR_PURE_PYTHON")
    from logdoctor.formats import _speedups

    _speedups.configure(Record, Header, TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME)
    _RecordError: type[Exception] = _speedups.RecordError
except (ImportError, TypeError):  # pragma: no cover - not built, or Record/Header changed their slots
    _speedups = None  # type: ignore[assignment]

    class _RecordError(Exception):  # type: ignore[no-redef]
        pass


HAVE_SPEEDUPS = _speedups is not None


def _lz4_decompress_safe_address() -> int | None:
    """The address of LZ4_decompress_safe in the lz4 package's own extension (the library codecs.py
    uses), so that the C walker decodes lz4 blocks with exactly the same code; None if not found."""
    try:
        import ctypes

        import lz4.block._block as lz4_block

        return ctypes.cast(ctypes.CDLL(lz4_block.__file__).LZ4_decompress_safe, ctypes.c_void_p).value
    except (ImportError, OSError, AttributeError):  # pragma: no cover - another lz4 build
        return None


# lz4 batches are decompressed inside the C walker when it has the lz4 library's decoder.
HAVE_C_LZ4 = False
if _speedups is not None:
    _lz4_address = _lz4_decompress_safe_address()
    _speedups.configure_lz4(_lz4_address)
    HAVE_C_LZ4 = _lz4_address is not None


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

_RECORD_ERRORS: dict[int, tuple[str, str]] = {
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


# ---------------------------------------------------------------------------------------------
# Pure-Python record decoder (the reference the C decoder is tested against)


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
        key_len, i = _varint(data, i, rend)
        key = None
        if key_len >= 0:
            if key_len > rend - i:
                raise _RecordFault(_E_FIELD_OVERRUN)
            key = bytes(data[i : i + key_len])
            i += key_len
        field = i
        value_len, i = _varint(data, i, rend)
        value = None
        if value_len >= 0:
            if value_len > rend - i:
                raise _RecordFault(_E_FIELD_OVERRUN)
            value = bytes(data[i : i + value_len])
            i += value_len
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
            hv_len, i = _varint(data, i, rend)
            hvalue = None
            if hv_len >= 0:
                if hv_len > rend - i:
                    raise _RecordFault(_E_FIELD_OVERRUN)
                hvalue = bytes(data[i : i + hv_len])
                i += hv_len
            headers.append((hkey, hvalue))
    except _RecordFault as fault:
        raise _RecordFault(fault.args[0], field) from None
    if i != rend:
        raise _RecordFault(_E_LENGTH_MISMATCH, i)
    return _RawRecord(ts_delta, offset_delta, key, value, headers), rend


def _raw_records_py(data, pos: int, end: int, count: int) -> list[_RawRecord]:
    if count < 0:
        raise _RecordError(_E_BAD_COUNT, pos, 0)
    out = []
    for n in range(count):
        try:
            rec, pos = _parse_record_py(data, pos, end)
        except _RecordFault as fault:
            raise _RecordError(fault.args[0], fault.args[1], n) from None
        out.append(rec)
    if pos != end:
        raise _RecordError(_E_TRAILING, pos, count)
    return out


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
    import numpy as np

    mv = _byte_view(buf)
    offsets: list[int] = []
    timestamps: list[int] = []
    ts_types: list[int] = []
    key_valid: list[bool] = []
    key_ends: list[int] = [0]
    keys: list[bytes] = []
    value_valid: list[bool] = []
    value_ends: list[int] = [0]
    values: list[bytes] = []
    list_ends: list[int] = [0]
    hkey_ends: list[int] = [0]
    hkeys: list[bytes] = []
    hvalue_valid: list[bool] = []
    hvalue_ends: list[int] = [0]
    hvalues: list[bytes] = []
    for b, start in enumerate(starts):
        (base_offset, length, _, _, _, attributes, _, base_ts, max_ts, _, _, _, count) = HEADER.unpack_from(
            mv, start
        )
        if count == 0:
            continue
        section = sections[b] if sections is not None else None
        if section is not None:
            data, pos, end = section, 0, len(section)
        elif attributes & COMPRESSION_CODEC_MASK == 0:
            data, pos, end = mv, start + RECORDS_OFFSET, start + LOG_OVERHEAD + length
        else:
            raise ValueError(f"batch {b}: a compressed batch needs its decompressed section")
        try:
            raws = _raw_records_py(data, pos, end, count)
        except _RecordError as exc:
            raise _RecordError(*exc.args, b) from None
        lat = attributes & TIMESTAMP_TYPE_MASK
        for raw in raws:
            offsets.append(wrap_int64(base_offset + raw.offset_delta))
            timestamps.append(max_ts if lat else wrap_int64(base_ts + raw.timestamp_delta))
            ts_types.append(1 if lat else 0)
            if not payload:
                continue
            key_valid.append(raw.key is not None)
            keys.append(raw.key or b"")
            key_ends.append(key_ends[-1] + len(keys[-1]))
            value_valid.append(raw.value is not None)
            values.append(raw.value or b"")
            value_ends.append(value_ends[-1] + len(values[-1]))
            for hk, hv in raw.headers:
                hkeys.append(hk)
                hkey_ends.append(hkey_ends[-1] + len(hk))
                hvalue_valid.append(hv is not None)
                hvalues.append(hv or b"")
                hvalue_ends.append(hvalue_ends[-1] + len(hvalues[-1]))
            list_ends.append(len(hkeys))

    def i64(values: list[int]) -> bytearray:
        return bytearray(np.array(values, dtype=np.int64).tobytes())

    def bitmap(valid: list[bool]) -> bytearray:
        return bytearray(np.packbits(np.array(valid, dtype=bool), bitorder="little").tobytes())

    return (
        len(offsets),
        i64(offsets),
        i64(timestamps),
        bytearray(np.array(ts_types, dtype=np.int8).tobytes()),
        key_valid.count(False),
        bitmap(key_valid),
        i64(key_ends),
        bytearray(b"".join(keys)),
        value_valid.count(False),
        bitmap(value_valid),
        i64(value_ends),
        bytearray(b"".join(values)),
        i64(list_ends),
        len(hkeys),
        i64(hkey_ends),
        bytearray(b"".join(hkeys)),
        hvalue_valid.count(False),
        bitmap(hvalue_valid),
        i64(hvalue_ends),
        bytearray(b"".join(hvalues)),
    )


def _byte_view(buf) -> memoryview:
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    if mv.ndim != 1 or mv.itemsize != 1 or mv.format not in ("B", "b", "c"):
        mv = mv.cast("B")
    return mv


if _speedups is not None:
    decode_records_fast = _speedups.decode_records
    decode_batch_columns_fast = _speedups.decode_batch_columns
    _batch_records = _speedups.batch_records
else:  # pragma: no cover
    decode_records_fast = decode_records_py
    decode_batch_columns_fast = decode_batch_columns_py
    _batch_records = None


# ---------------------------------------------------------------------------------------------
# The batch


class RecordBatchV2(Batch):
    """One magic-2 record batch inside a buffer (bytes, bytearray, mmap'd memoryview).

    ``position`` is the batch's byte position in the file (``base_position`` + its index in
    the buffer). Header fields are attributes read once; records are decoded on demand.
    """

    __slots__ = (
        "_buf",
        "_start",
        "attributes",
        "base_offset",
        "base_sequence",
        "base_timestamp",
        "last_offset_delta",
        "length",
        "magic",
        "max_timestamp",
        "partition_leader_epoch",
        "position",
        "producer_epoch",
        "producer_id",
        "record_count",
        "size",
        "source",
        "stored_crc",
    )

    def __init__(
        self,
        buf: memoryview,
        start: int,
        header: tuple[int, ...],
        *,
        source: str | None = None,
        base_position: int = 0,
    ) -> None:
        (
            self.base_offset,
            self.length,
            self.partition_leader_epoch,
            self.magic,
            self.stored_crc,
            self.attributes,
            self.last_offset_delta,
            self.base_timestamp,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            self.record_count,
        ) = header
        self._buf = buf
        self._start = start
        self.size = self.length + LOG_OVERHEAD
        self.position = base_position + start
        self.source = source

    @classmethod
    def parse(
        cls, buf, start: int = 0, *, source: str | None = None, base_position: int = 0
    ) -> RecordBatchV2:
        """The batch at ``buf[start:]``; raises TruncatedError if it is incomplete, CorruptRecordError
        if its size cannot hold the 61-byte header, and CorruptRecordError if the magic is not 2."""
        mv = buf if isinstance(buf, memoryview) else memoryview(buf)
        if mv.ndim != 1 or mv.itemsize != 1:
            mv = mv.cast("B")
        avail = len(mv) - start
        where = base_position + start
        if avail < LOG_OVERHEAD:
            raise TruncatedError(
                "a 12-byte batch offset and length", source=source, position=where, found=f"{avail} bytes"
            )
        (length,) = struct.unpack_from(">i", mv, start + LENGTH_OFFSET)
        check_v2_size(length, source=source, position=where)
        if avail < length + LOG_OVERHEAD:
            raise TruncatedError(
                f"a batch of {length + LOG_OVERHEAD} bytes",
                source=source,
                position=where,
                found=f"{avail} bytes",
            )
        header = HEADER.unpack_from(mv, start)
        if header[3] != MAGIC_VALUE_V2:
            raise CorruptRecordError(
                "magic 2", source=source, position=where + 16, found=f"magic {header[3]}"
            )
        return cls(mv, start, header, source=source, base_position=base_position)

    # --- derived header fields ---------------------------------------------------------------

    @property
    def last_offset(self) -> int:
        return wrap_int64(self.base_offset + self.last_offset_delta)

    @property
    def codec_id(self) -> int:
        return self.attributes & COMPRESSION_CODEC_MASK

    @property
    def compression(self) -> Compression:
        codec = self.attributes & COMPRESSION_CODEC_MASK
        try:
            return Compression(codec)
        except ValueError:
            raise UnsupportedError(
                "a codec id 0-4 (none, gzip, snappy, lz4, zstd)",
                source=self.source,
                position=self.position + ATTRIBUTES_OFFSET,
                found=f"codec id {codec}",
            ) from None

    @property
    def timestamp_type(self) -> TimestampType:
        if self.attributes & TIMESTAMP_TYPE_MASK:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_FLAG_MASK)

    @property
    def delete_horizon_ms(self) -> int | None:
        """DefaultRecordBatch.deleteHorizonMs: the base timestamp when the delete-horizon bit is set."""
        return self.base_timestamp if self.attributes & DELETE_HORIZON_FLAG_MASK else None

    @property
    def first_timestamp(self) -> int:
        """The first record's timestamp: the base timestamp, unless it holds a delete horizon
        (then the first record is decoded); -1 for an empty batch with a delete horizon."""
        if not self.attributes & DELETE_HORIZON_FLAG_MASK:
            return self.base_timestamp
        for record in self.records():
            return record.timestamp
        return -1

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, self.last_offset_delta)

    @property
    def is_compressed(self) -> bool:
        return bool(self.attributes & COMPRESSION_CODEC_MASK)

    # --- bytes and checks --------------------------------------------------------------------

    def raw(self) -> memoryview:
        return self._buf[self._start : self._start + self.size]

    def records_section(self) -> memoryview:
        """The bytes after the header (compressed when the batch is)."""
        return self._buf[self._start + RECORDS_OFFSET : self._start + self.size]

    def compute_crc(self) -> int:
        return crc32c(self._buf[self._start + ATTRIBUTES_OFFSET : self._start + self.size])

    def crc_valid(self) -> bool:
        return self.compute_crc() == self.stored_crc

    def ensure_valid(self, *, deep: bool = False) -> None:
        """DefaultRecordBatch.ensureValid (size >= 61 and the CRC); ``deep`` also checks the header
        (count, offset delta) and decodes every record (lengths, count, trailing bytes)."""
        if self.size < RECORD_BATCH_OVERHEAD:  # pragma: no cover - parse() refuses these
            raise CorruptRecordError(
                f"a batch size >= {RECORD_BATCH_OVERHEAD}",
                source=self.source,
                position=self.position,
                found=str(self.size),
            )
        computed = self.compute_crc()
        if computed != self.stored_crc:
            raise CrcMismatchError(self.stored_crc, computed, source=self.source, position=self.position)
        if deep:
            self._check_header()
            offsets = _decode_v2_run([self], pure_python=False, payload=False)[1]
            self._check_offset_deltas(offsets)

    def _check_header(self) -> None:
        if self.record_count < 0:
            raise CorruptRecordError(
                "a record count >= 0",
                source=self.source,
                position=self.position + RECORDS_OFFSET - 4,
                found=str(self.record_count),
            )
        if self.last_offset_delta < 0 or self.record_count > self.last_offset_delta + 1:
            raise CorruptRecordError(
                "a last offset delta >= record count - 1",
                source=self.source,
                position=self.position + 23,
                found=f"last offset delta {self.last_offset_delta}, {self.record_count} records",
            )

    def _check_offset_deltas(self, offsets_bytes: bytes | bytearray) -> None:
        import numpy as np

        deltas = np.frombuffer(offsets_bytes, dtype=np.int64) - np.int64(self.base_offset)
        if len(deltas) and (
            deltas[0] < 0
            or deltas[-1] > self.last_offset_delta
            or (len(deltas) > 1 and (np.diff(deltas) <= 0).any())
        ):
            raise CorruptRecordError(
                f"increasing offset deltas within 0..{self.last_offset_delta}",
                source=self.source,
                position=self.position + RECORDS_OFFSET,
                found=f"deltas {int(deltas.min())}..{int(deltas.max())}",
            )

    # --- records -----------------------------------------------------------------------------

    def _records_data(self) -> tuple[object, int, int, bool]:
        """(data, pos, end, decompressed) of the records section."""
        start = self._start + RECORDS_OFFSET
        end = self._start + self.size
        codec = self.compression
        if codec is Compression.NONE:
            return self._buf, start, end, False
        from logdoctor.formats import codecs

        where = self.position + RECORDS_OFFSET
        try:
            data = codecs.decompress(codec, self._buf[start:end], magic=2, source=self.source, position=where)
        except FormatError:
            raise
        except Exception as exc:  # a codec library's own exception: never let it escape untyped
            raise CorruptRecordError(
                f"{codec.label}-compressed records", source=self.source, position=where, found=repr(exc)[:200]
            ) from exc
        return data, 0, len(data), True

    def _record_error(self, exc: Exception, decompressed: bool) -> CorruptRecordError:
        code, pos, index = exc.args[:3]
        expected, found = _RECORD_ERRORS.get(code, ("a valid record", "record {index}"))
        found = found.format(index=index)
        if decompressed:
            position = self.position + RECORDS_OFFSET
            found += f" (byte {pos} of the decompressed records)"
        else:
            position = self.position + (pos - self._start)
        return CorruptRecordError(expected, source=self.source, position=position, found=found)

    def record_list(self, *, pure_python: bool = False) -> list[Record]:
        """Decode every record (absolute offsets and timestamps) into a list."""
        if self.record_count == 0:
            return []
        if not pure_python and _batch_records is not None:
            # uncompressed and lz4 batches: one C call reads the header, decompresses, builds the list
            try:
                records = _batch_records(self._buf, self._start)
            except _RecordError as exc:
                raise self._record_error(exc, bool(self.attributes & COMPRESSION_CODEC_MASK)) from None
            if records is not None:
                return records
        data, pos, end, decompressed = self._records_data()
        lat = self.max_timestamp if self.attributes & TIMESTAMP_TYPE_MASK else None
        decode = decode_records_py if pure_python else decode_records_fast
        try:
            return decode(
                data,
                pos,
                end,
                self.record_count,
                self.base_offset,
                self.base_timestamp,
                lat,
                self.base_sequence,
                self.timestamp_type,
            )
        except _RecordError as exc:
            raise self._record_error(exc, decompressed) from None

    def records(self) -> Iterator[Record]:
        # Kafka returns an empty iterator for a count of 0 without looking at the bytes
        # (DefaultRecordBatch.iterator). The whole batch is decoded by this call (a list iterator
        # costs less per record than a generator), so bad records raise here.
        return iter(self.record_list())

    def decode_columns(self, *, pure_python: bool = False) -> RecordColumns:
        """The records as columns (numpy offsets/timestamps, Arrow keys/values/headers)."""
        return decode_columns([self], pure_python=pure_python)

    def __repr__(self) -> str:
        return (
            f"RecordBatchV2(position={self.position}, offsets=[{self.base_offset}, {self.last_offset}], "
            f"count={self.record_count}, size={self.size}, attributes={self.attributes:#x})"
        )


if _speedups is not None:
    _speedups.configure_batch(RecordBatchV2)
    walk_v2 = _speedups.walk_v2
else:  # pragma: no cover
    walk_v2 = None
"""walk_v2(buf, pos, limit, source, base_position, max_batches) -> (batches, next_pos): the C fast
lane of records.iter_batches (whole v2 batches only; None without the C extension)."""


def _crc32c_address() -> int | None:
    """The address of the CRC-32C function inside the crc32c package's own extension (the one
    formats.crc calls: hardware when ``crc32c.hardware_based``, else its slicing-by-8), taking and
    returning the raw register (no pre/post inversion); None if not found. _speedups checks it
    against the CRC-32C check value before using it."""
    try:
        import ctypes

        import crc32c
        import crc32c._crc32c as crc32c_ext

        names = ("_crc32c_hw_adler", "_crc32c_hw_arm64") if crc32c.hardware_based else ()
        lib = ctypes.CDLL(crc32c_ext.__file__)
        for name in (*names, "_crc32c_sw_slicing_by_8"):
            fn = getattr(lib, name, None)
            if fn is not None:
                return ctypes.cast(fn, ctypes.c_void_p).value
    except (ImportError, OSError, AttributeError):  # pragma: no cover - another crc32c build
        pass
    return None  # pragma: no cover


recover_v2 = None
"""The C fast lane of recovery.rebuild_indexes (see _speedups.c ``recover_v2``); None without the C
extension or without a usable CRC-32C function from the crc32c package."""
if _speedups is not None and _speedups.configure_crc32c(_crc32c_address()):
    from logdoctor.formats.index import OffsetEntry, TimeEntry

    _speedups.configure_recovery(OffsetEntry, TimeEntry)
    recover_v2 = _speedups.recover_v2


def check_v2_size(length: int, *, source: str | None, position: int) -> None:
    """A v2 batch's length field must cover the header (DefaultRecordBatch.ensureValid)."""
    if length + LOG_OVERHEAD < RECORD_BATCH_OVERHEAD:
        raise CorruptRecordError(
            f"a record batch size >= {RECORD_BATCH_OVERHEAD} (the v2 header)",
            source=source,
            position=position,
            found=f"size {length + LOG_OVERHEAD}",
        )


# ---------------------------------------------------------------------------------------------
# Columns


@dataclass(slots=True)
class RecordColumns:
    """Records of one or more batches as columns, for the Spark pipeline and benchmarks.

    ``offsets``/``timestamps`` are int64 numpy arrays, ``timestamp_types`` int8 (0 CreateTime,
    1 LogAppendTime, -1 none for magic 0). ``keys``/``values`` are Arrow binary arrays (null = null
    key/value; large_binary past 2 GiB), ``headers`` an Arrow list<struct<key: string, value: binary>>
    array. The numpy arrays and Arrow buffers share the memory the decoder wrote (no copy).
    """

    offsets: np.ndarray
    timestamps: np.ndarray
    timestamp_types: np.ndarray
    keys: pa.Array
    values: pa.Array
    headers: pa.Array

    def __len__(self) -> int:
        return len(self.offsets)

    def to_arrow(self) -> pa.RecordBatch:
        """One Arrow record batch: key, value, offset, timestamp, timestampType, headers."""
        import pyarrow as pa

        return pa.RecordBatch.from_arrays(
            [
                self.keys,
                self.values,
                pa.array(self.offsets, type=pa.int64()),
                pa.array(self.timestamps, type=pa.int64()),
                pa.array(self.timestamp_types.astype("int32"), type=pa.int32()),
                self.headers,
            ],
            names=["key", "value", "offset", "timestamp", "timestampType", "headers"],
        )


def decode_columns(batches: Iterable[Batch], *, pure_python: bool = False) -> RecordColumns:
    """Decode the records of many batches into one RecordColumns.

    Consecutive v2 batches of one buffer (as ``iter_batches`` yields them) are decoded by one C
    call that writes every column in a single pass: each key and value is copied once, from the
    segment (uncompressed) or from the decompressed records (lz4 is decompressed in that call;
    gzip, snappy and zstd by ``codecs`` first). v0/v1 entries go through ``records()``. Raises the
    typed error of the first bad batch (CorruptRecordError, UnsupportedError, ...).
    """
    parts: list[RecordColumns] = []
    run: list[RecordBatchV2] = []
    for batch in batches:
        if isinstance(batch, RecordBatchV2):
            if run and batch._buf is not run[0]._buf:
                parts.append(_columns_from_buffers(_decode_v2_run(run, pure_python=pure_python)))
                run = []
            run.append(batch)
            continue
        if run:
            parts.append(_columns_from_buffers(_decode_v2_run(run, pure_python=pure_python)))
            run = []
        records = list(batch.records())
        parts.append(_columns_from_buffers(_buffers_from_records(records, batch.timestamp_type)))
    if run or not parts:
        parts.append(_columns_from_buffers(_decode_v2_run(run, pure_python=pure_python)))
    return parts[0] if len(parts) == 1 else _concat_columns(parts)


def _decode_v2_run(run: list[RecordBatchV2], *, pure_python: bool, payload: bool = True) -> tuple:
    """decode_batch_columns over v2 batches sharing one buffer, with typed errors."""
    if not run:
        return decode_batch_columns_py(b"", [], None, payload)
    buf = run[0]._buf
    starts = [b._start for b in run]
    decode = decode_batch_columns_py if pure_python else decode_batch_columns_fast
    c_lz4 = HAVE_C_LZ4 and not pure_python
    sections: list | None = None
    for k, b in enumerate(run):  # batches the C walker does not decompress itself
        codec = b.attributes & COMPRESSION_CODEC_MASK
        if codec == 0 or (codec == Compression.LZ4 and c_lz4) or b.record_count == 0:
            continue
        try:
            data = b._records_data()[0]
        except FormatError:
            if k:  # an earlier batch's bad records come first
                _decode_v2_run(run[:k], pure_python=pure_python, payload=False)
            raise
        if sections is None:
            sections = [None] * len(run)
        sections[k] = data
    while True:
        try:
            return decode(buf, starts, sections, payload)
        except _RecordError as exc:
            code, _, _, k = exc.args
            batch = run[k]
            if code != _E_CODEC:
                raise batch._record_error(exc, bool(batch.attributes & COMPRESSION_CODEC_MASK)) from None
        # an lz4 frame the C walker leaves to codecs.py (block checksums, or damage: then this raises)
        if sections is None:
            sections = [None] * len(run)
        sections[k] = batch._records_data()[0]
        for j in range(k + 1, len(run)):  # the same for later frames with block checksums
            later = run[j]
            if later.attributes & COMPRESSION_CODEC_MASK == Compression.LZ4 and later.record_count:
                flg_at = later._start + RECORDS_OFFSET + 4
                if flg_at < later._start + later.size and later._buf[flg_at] & 0x10:
                    sections[j] = later._records_data()[0]


def _arrow_binary(n: int, nulls: int, validity, ends, data, *, string: bool = False) -> pa.Array:
    """An Arrow binary (or string) array over the decoder's buffers (int64 ends, n + 1 of them)."""
    import numpy as np
    import pyarrow as pa

    offsets = np.frombuffer(ends, dtype=np.int64)
    large = bool(offsets[-1] > _INT32_MAX)
    if string:
        typ = pa.large_string() if large else pa.string()
    else:
        typ = pa.large_binary() if large else pa.binary()
    arr = pa.Array.from_buffers(
        typ,
        n,
        [
            pa.py_buffer(validity) if nulls else None,
            pa.py_buffer(offsets if large else offsets.astype(np.int32)),
            pa.py_buffer(data),
        ],
        null_count=nulls,
    )
    if string:
        try:
            arr.validate(full=True)
        except pa.ArrowInvalid:  # invalid UTF-8: decode like Java's new String(bytes, UTF_8)
            raw = arr.view(pa.large_binary() if large else pa.binary()).to_pylist()
            arr = pa.array([b.decode("utf-8", "replace") for b in raw], type=typ)
    return arr


def _columns_from_buffers(t: tuple) -> RecordColumns:
    import numpy as np
    import pyarrow as pa

    (n, offsets, timestamps, ts_types, key_nulls, key_valid, key_ends, key_data, value_nulls, value_valid,
     value_ends, value_data, list_ends, nh, hkey_ends, hkey_data, hvalue_nulls, hvalue_valid, hvalue_ends,
     hvalue_data) = t  # fmt: skip
    hkeys = _arrow_binary(nh, 0, None, hkey_ends, hkey_data, string=True)
    hvalues = _arrow_binary(nh, hvalue_nulls, hvalue_valid, hvalue_ends, hvalue_data)
    struct_arr = pa.StructArray.from_arrays([hkeys, hvalues], names=["key", "value"])
    list_offsets = np.frombuffer(list_ends, dtype=np.int64)
    if nh > _INT32_MAX:  # pragma: no cover - 2**31 headers
        headers = pa.LargeListArray.from_arrays(pa.array(list_offsets), struct_arr)
    else:
        headers = pa.ListArray.from_arrays(pa.array(list_offsets.astype(np.int32)), struct_arr)
    return RecordColumns(
        offsets=np.frombuffer(offsets, dtype=np.int64),
        timestamps=np.frombuffer(timestamps, dtype=np.int64),
        timestamp_types=np.frombuffer(ts_types, dtype=np.int8),
        keys=_arrow_binary(n, key_nulls, key_valid, key_ends, key_data),
        values=_arrow_binary(n, value_nulls, value_valid, value_ends, value_data),
        headers=headers,
    )


def _buffers_from_records(records: list[Record], timestamp_type: TimestampType) -> tuple:
    """The decode_batch_columns tuple for records decoded one by one (v0/v1 entries)."""
    import numpy as np

    def i64(values) -> bytearray:
        return bytearray(np.array(list(values), dtype=np.int64).tobytes())

    def ends(blobs: list[bytes | None]) -> bytearray:
        out = np.zeros(len(blobs) + 1, dtype=np.int64)
        np.cumsum([len(b or b"") for b in blobs], out=out[1:])
        return bytearray(out.tobytes())

    def bitmap(blobs: list[bytes | None]) -> bytearray:
        return bytearray(np.packbits(np.array([b is not None for b in blobs], dtype=bool), bitorder="little"))

    keys = [r.key for r in records]
    values = [r.value for r in records]
    headers = [h for r in records for h in r.headers]
    hkeys: list[bytes | None] = [h.key.encode("utf-8", "surrogatepass") for h in headers]
    hvalues = [h.value for h in headers]
    list_ends = np.zeros(len(records) + 1, dtype=np.int64)
    np.cumsum([len(r.headers) for r in records], out=list_ends[1:])
    return (
        len(records),
        i64(r.offset for r in records),
        i64(r.timestamp for r in records),
        bytearray(np.full(len(records), int(timestamp_type), dtype=np.int8).tobytes()),
        keys.count(None),
        bitmap(keys),
        ends(keys),
        bytearray(b"".join(k or b"" for k in keys)),
        values.count(None),
        bitmap(values),
        ends(values),
        bytearray(b"".join(v or b"" for v in values)),
        bytearray(list_ends.tobytes()),
        len(headers),
        ends(hkeys),
        bytearray(b"".join(k or b"" for k in hkeys)),
        hvalues.count(None),
        bitmap(hvalues),
        ends(hvalues),
        bytearray(b"".join(v or b"" for v in hvalues)),
    )


def _concat_columns(parts: list[RecordColumns]) -> RecordColumns:
    """Several RecordColumns as one (a copy: only for mixed v0/v1/v2 input or several buffers)."""
    import numpy as np
    import pyarrow as pa

    def cat(arrays: list[pa.Array]) -> pa.Array:
        types = {a.type for a in arrays}
        if len(types) > 1:  # binary and large_binary: all large
            large = next(t for t in types if t in (pa.large_binary(), pa.large_string()))
            arrays = [a.cast(large) for a in arrays]
        return pa.concat_arrays(arrays)

    return RecordColumns(
        offsets=np.concatenate([p.offsets for p in parts]),
        timestamps=np.concatenate([p.timestamps for p in parts]),
        timestamp_types=np.concatenate([p.timestamp_types for p in parts]),
        keys=cat([p.keys for p in parts]),
        values=cat([p.values for p in parts]),
        headers=pa.concat_arrays([p.headers for p in parts]),
    )
