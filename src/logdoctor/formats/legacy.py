"""Message sets v0 and v1: one log entry per message, compressed ones wrapping inner messages.

Log entry (K:clients/.../record/LegacyRecord.java, AbstractLegacyRecordBatch.java)::

    int64 offset, int32 size,
    uint32 crc (CRC-32 over magic..end), int8 magic, int8 attributes,
    [int64 timestamp, v1 only], int32 keyLen, key, int32 valueLen, value

A compressed entry (a "wrapper") has the compressed inner message set as its value.
Its offset is the LAST inner offset. v1 inner offsets are relative (absolute =
wrapperOffset - lastInnerOffset + inner, except that a wrapper offset of 0, written by
some librdkafka versions, takes the inner offsets as they are); v0 inner offsets are
absolute. With LogAppendTime the inner v1 messages take the wrapper's timestamp and
timestamp type. Inner messages must not be compressed.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from logdoctor.errors import CorruptRecordError, CrcMismatchError, TruncatedError, UnsupportedError
from logdoctor.formats.codecs import compress, decompress
from logdoctor.formats.crc import crc32
from logdoctor.formats.record_types import (
    LOG_ENTRY_HEAD,
    LOG_OVERHEAD,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    Batch,
    Compression,
    Record,
    RecordSpec,
    TimestampType,
)

__all__ = [
    "RECORD_OVERHEAD_V0",
    "RECORD_OVERHEAD_V1",
    "LegacyBatch",
    "build_message_set",
    "parse_legacy_entry",
]

# LegacyRecord.RECORD_OVERHEAD_V0/V1: crc + magic + attributes [+ timestamp] + keyLen + valueLen
RECORD_OVERHEAD_V0 = 14
RECORD_OVERHEAD_V1 = 22
_CODEC_MASK = 0x07
_TIMESTAMP_TYPE_MASK = 0x08

_ENTRY = struct.Struct(">qiIbB")  # offset, size, crc, magic, attributes
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class _Inner(NamedTuple):
    """One decoded inner message of a wrapper (absolute offset once the wrapper's base is applied)."""

    offset: int
    timestamp: int
    timestamp_type: TimestampType
    key: bytes | None
    value: bytes | None
    crc: int
    computed_crc: int


def _read_message(
    buf: memoryview, start: int, end: int, what: str, source: str | None, position: int
) -> tuple[int, int, int, int, bytes | None, int, int]:
    """Read the message (crc..value) of an entry whose offset+size header ends at ``start``.

    Returns (crc, magic, attributes, timestamp, key or None, value start, value length).
    ``position`` is the byte position used in errors.
    """
    size = end - start
    if size < RECORD_OVERHEAD_V0:
        raise CorruptRecordError(
            f"{what} size >= {RECORD_OVERHEAD_V0}", source=source, position=position, found=str(size)
        )
    crc, magic, attributes = struct.unpack_from(">IbB", buf, start)
    if magic == 0:
        timestamp = NO_TIMESTAMP
        p = start + 6
    elif magic == 1:
        if size < RECORD_OVERHEAD_V1:
            raise CorruptRecordError(
                f"v1 {what} size >= {RECORD_OVERHEAD_V1}", source=source, position=position, found=str(size)
            )
        (timestamp,) = _I64.unpack_from(buf, start + 6)
        p = start + 14
    else:
        raise CorruptRecordError(f"{what} magic 0 or 1", source=source, position=position, found=str(magic))
    (key_len,) = _I32.unpack_from(buf, p)
    p += 4
    if key_len < -1 or p + max(key_len, 0) + 4 > end:
        raise CorruptRecordError(
            f"{what} key length -1..{end - p - 4}", source=source, position=position, found=str(key_len)
        )
    if key_len >= 0:
        key: bytes | None = bytes(buf[p : p + key_len])
        p += key_len
    else:
        key = None
    (value_len,) = _I32.unpack_from(buf, p)
    p += 4
    if value_len < -1 or p + value_len > end:
        raise CorruptRecordError(
            f"{what} value length -1..{end - p}", source=source, position=position, found=str(value_len)
        )
    return crc, magic, attributes, timestamp, key, p, value_len


class LegacyBatch(Batch):
    """One v0/v1 log entry: a plain message, or a compressed wrapper of inner messages.

    Header fields need no decompression except ``base_offset``, ``record_count`` and
    ``first_timestamp`` of a wrapper, which are computed on first use and cached.
    """

    __slots__ = (
        "_attributes",
        "_buf",
        "_crc",
        "_inner_cache",
        "_inner_tail",
        "_key",
        "_offset",
        "_start",
        "_timestamp",
        "_value_len",
        "_value_start",
        "magic",
        "position",
        "size",
        "source",
    )

    producer_id = NO_PRODUCER_ID
    producer_epoch = NO_PRODUCER_EPOCH
    base_sequence = NO_SEQUENCE
    partition_leader_epoch = NO_PARTITION_LEADER_EPOCH
    is_transactional = False
    is_control = False
    has_delete_horizon = False

    def __init__(
        self,
        buf: memoryview,
        start: int,
        *,
        offset: int,
        size: int,
        crc: int,
        magic: int,
        attributes: int,
        timestamp: int,
        key: bytes | None,
        value_start: int,
        value_len: int,
        position: int,
        source: str | None,
    ) -> None:
        self._buf = buf
        self._start = start  # index of the entry in ``buf``
        self.position = position  # byte position of the entry in the file
        self.size = size + LOG_OVERHEAD
        self.magic = magic
        self.source = source
        self._offset = offset
        self._crc = crc
        self._attributes = attributes
        self._timestamp = timestamp
        self._key = key
        self._value_start = value_start
        self._value_len = value_len
        self._inner_cache: list[_Inner] | None = None
        self._inner_tail = 0

    # -- header fields -------------------------------------------------------------------

    @property
    def offset(self) -> int:
        """The entry's offset field (a wrapper's last inner offset)."""
        return self._offset

    @property
    def attributes(self) -> int:
        return self._attributes

    @property
    def timestamp(self) -> int:
        """The entry's own timestamp field (-1 for magic 0)."""
        return self._timestamp

    @property
    def key(self) -> bytes | None:
        return self._key

    @property
    def value(self) -> bytes | None:
        """The entry's value (for a wrapper: the compressed inner message set)."""
        if self._value_len < 0:
            return None
        return bytes(self._buf[self._value_start : self._value_start + self._value_len])

    @property
    def is_compressed(self) -> bool:
        return self._attributes & _CODEC_MASK != 0

    @property
    def compression(self) -> Compression:
        return Compression(self._attributes & _CODEC_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        if self.magic == 0:
            return TimestampType.NO_TIMESTAMP
        if self._attributes & _TIMESTAMP_TYPE_MASK:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def max_timestamp(self) -> int:
        # AbstractLegacyRecordBatch.maxTimestamp() is the (wrapper) message's timestamp.
        return self._timestamp

    @property
    def first_timestamp(self) -> int:
        if not self.is_compressed:
            return self._timestamp
        return self._inner()[0].timestamp

    @property
    def last_offset(self) -> int:
        return self._offset

    @property
    def base_offset(self) -> int:
        if not self.is_compressed:
            return self._offset
        return self._inner()[0].offset

    @property
    def record_count(self) -> int:
        if not self.is_compressed:
            return 1
        return len(self._inner())

    @property
    def stored_crc(self) -> int:
        return self._crc

    @property
    def inner_trailing_bytes(self) -> int:
        """Bytes after the last complete inner message (Java's reader ignores them); 0 if plain."""
        if not self.is_compressed:
            return 0
        self._inner()
        return self._inner_tail

    # -- validity ------------------------------------------------------------------------

    def compute_crc(self) -> int:
        return crc32(self._buf[self._start + 16 : self._start + self.size])

    def ensure_valid(self) -> None:
        computed = self.compute_crc()
        if computed != self._crc:
            raise CrcMismatchError(
                self._crc,
                computed,
                source=self.source,
                position=self.position,
                what=f"v{self.magic} message",
            )

    def raw(self) -> memoryview:
        return self._buf[self._start : self._start + self.size]

    # -- records -------------------------------------------------------------------------

    def records(self, *, verify_crc: bool = False) -> Iterator[Record]:
        """The messages a consumer sees: the entry itself, or a wrapper's inner messages.

        ``verify_crc`` checks each inner message's CRC (as a consumer with check.crcs does).
        """
        if not self.is_compressed:
            value = self.value
            yield Record(
                self._offset, self._timestamp, self._key, value, (), self.timestamp_type, NO_SEQUENCE
            )
            return
        for m in self._inner():
            if verify_crc and m.computed_crc != m.crc:
                raise CrcMismatchError(
                    m.crc,
                    m.computed_crc,
                    source=self.source,
                    position=self.position,
                    what=f"inner message (offset {m.offset})",
                )
            yield Record(m.offset, m.timestamp, m.key, m.value, (), m.timestamp_type, NO_SEQUENCE)

    def _decompress(self) -> bytes:
        codec = self.compression
        where = f"compressed value of the v{self.magic} wrapper message"
        if self._value_len < 0:
            raise CorruptRecordError(f"a {where}", source=self.source, position=self.position, found="null")
        if codec == Compression.ZSTD:
            raise UnsupportedError(
                "a v0/v1 codec (zstd needs magic 2)", source=self.source, position=self.position, found="zstd"
            )
        payload = self._buf[self._value_start : self._value_start + self._value_len]
        return decompress(codec, payload, magic=self.magic, source=self.source, position=self.position)

    def _inner(self) -> list[_Inner]:
        if self._inner_cache is not None:
            return self._inner_cache
        data = memoryview(self._decompress())
        n = len(data)
        src, pos0 = self.source, self.position
        wrapper_type = self.timestamp_type
        raw: list[_Inner] = []
        p = 0
        # DataLogInputStream: a partial entry at the end ends the inner set silently.
        while n - p >= LOG_OVERHEAD:
            offset, size = LOG_ENTRY_HEAD.unpack_from(data, p)
            if size < RECORD_OVERHEAD_V0:
                raise CorruptRecordError(
                    f"inner message size >= {RECORD_OVERHEAD_V0} (at {p} of the decompressed set)",
                    source=src,
                    position=pos0,
                    found=str(size),
                )
            end = p + LOG_OVERHEAD + size
            if end > n:
                break
            crc, magic, attributes, ts, key, vstart, vlen = _read_message(
                data, p + LOG_OVERHEAD, end, f"inner message (at {p} of the decompressed set)", src, pos0
            )
            if attributes & _CODEC_MASK:
                raise CorruptRecordError(
                    "uncompressed inner messages (no nested compression)",
                    source=src,
                    position=pos0,
                    found=f"codec {attributes & _CODEC_MASK} at {p} of the decompressed set",
                )
            value = None if vlen < 0 else bytes(data[vstart : vstart + vlen])
            if magic == 0:
                ts_type = TimestampType.NO_TIMESTAMP
            else:
                # LegacyRecord(buffer, wrapperTimestamp, wrapperTimestampType)
                ts_type = wrapper_type
                if wrapper_type == TimestampType.LOG_APPEND_TIME:
                    ts = self._timestamp
            raw.append(_Inner(offset, ts, ts_type, key, value, crc, crc32(data[p + LOG_OVERHEAD + 4 : end])))
            p = end
        if not raw:
            raise CorruptRecordError(
                "a compressed message set with inner messages", source=src, position=pos0, found="none"
            )
        if self.magic == 1:
            last_inner = raw[-1].offset
            if self._offset == 0:
                base = 0  # librdkafka wrote wrapper offset 0: inner offsets are taken as they are
            elif self._offset < last_inner:
                raise CorruptRecordError(
                    f"a v1 wrapper offset >= its last inner offset {last_inner} (or 0)",
                    source=src,
                    position=pos0,
                    found=str(self._offset),
                )
            else:
                base = self._offset - last_inner
        else:
            base = 0
        self._inner_cache = [_Inner(m[0] + base, *m[1:]) for m in raw] if base else raw
        self._inner_tail = n - p
        return self._inner_cache

    def __repr__(self) -> str:
        return (
            f"LegacyBatch(position={self.position}, magic={self.magic}, offset={self._offset}, "
            f"size={self.size}, compression={self.compression.label})"
        )


def parse_legacy_entry(
    buf: memoryview, position: int, *, source: str | None = None, base_position: int = 0
) -> LegacyBatch:
    """Parse the v0/v1 log entry starting at ``buf[position]``.

    The caller (the walker) has read the offset and size fields; everything else is
    validated here (size, magic, key and value lengths within the entry, codec id).
    ``base_position`` is the file position of ``buf[0]``, for ``Batch.position`` and errors.
    The CRC is not checked here (``ensure_valid`` does).
    """
    where = base_position + position
    n = len(buf)
    if n - position < LOG_OVERHEAD:
        raise TruncatedError("a log entry header (12 bytes)", source=source, position=where)
    offset, size = LOG_ENTRY_HEAD.unpack_from(buf, position)
    start = position + LOG_OVERHEAD
    end = start + size
    if size < RECORD_OVERHEAD_V0:
        raise CorruptRecordError(
            f"message size >= {RECORD_OVERHEAD_V0}", source=source, position=where, found=str(size)
        )
    if end > n:
        raise TruncatedError(f"a log entry of {size + LOG_OVERHEAD} bytes", source=source, position=where)
    crc, magic, attributes, timestamp, key, vstart, vlen = _read_message(
        buf, start, end, "message", source, where
    )
    batch = LegacyBatch(
        buf,
        position,
        offset=offset,
        size=size,
        crc=crc,
        magic=magic,
        attributes=attributes,
        timestamp=timestamp,
        key=key,
        value_start=vstart,
        value_len=vlen,
        position=where,
        source=source,
    )
    codec = attributes & _CODEC_MASK
    if codec > Compression.ZSTD:
        batch.ensure_valid()  # a flipped bit is a CRC mismatch rather than an unknown codec
        raise UnsupportedError("a codec id 0-4", source=source, position=where, found=str(codec))
    return batch


# --- writer -------------------------------------------------------------------------------


def _entry(
    magic: int, offset: int, attributes: int, timestamp: int, key: bytes | None, value: bytes | None
) -> bytes:
    klen = -1 if key is None else len(key)
    vlen = -1 if value is None else len(value)
    overhead = RECORD_OVERHEAD_V0 if magic == 0 else RECORD_OVERHEAD_V1
    size = overhead + max(klen, 0) + max(vlen, 0)
    if magic == 0:
        head = struct.pack(">bBi", 0, attributes, klen)
    else:
        head = struct.pack(">bBqi", 1, attributes, timestamp, klen)
    body = b"".join((head, key or b"", _I32.pack(vlen), value or b""))
    return b"".join((struct.pack(">qiI", offset, size, crc32(body)), body))


def build_message_set(
    records: Sequence[RecordSpec],
    *,
    magic: int,
    base_offset: int,
    compression: Compression = Compression.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    log_append_time: int | None = None,
) -> bytes:
    """The v0/v1 message set Kafka's MemoryRecordsBuilder writes for ``records``.

    Uncompressed: one entry per record, offsets base_offset + i (or + ``offset_delta`` when
    a RecordSpec sets it, as a compacted set has gaps).
    Compressed: one wrapper whose offset is the last offset, inner offsets relative (v1)
    or absolute (v0), wrapper timestamp = max timestamp (CreateTime) or the log append
    time. With LogAppendTime every v1 message carries ``log_append_time`` (default: the
    largest record timestamp). Magic 0 stores no timestamps. Headers are not allowed.
    """
    if magic not in (0, 1):
        raise ValueError(f"message sets have magic 0 or 1, not {magic}")
    if compression == Compression.ZSTD:
        raise UnsupportedError("a v0/v1 codec (zstd needs magic 2)", found=f"zstd with magic {magic}")
    if not records:
        return b""
    lat = magic == 1 and timestamp_type == TimestampType.LOG_APPEND_TIME
    if lat and log_append_time is None:
        log_append_time = max(r.timestamp for r in records)
    ts_bit = _TIMESTAMP_TYPE_MASK if lat else 0
    compressed = compression != Compression.NONE
    entries: list[bytes] = []
    max_timestamp = NO_TIMESTAMP
    last_delta = -1
    for i, r in enumerate(records):
        if r.headers:
            raise ValueError(f"magic {magic} messages have no headers")
        ts = NO_TIMESTAMP
        if magic == 1:
            ts = log_append_time if lat else r.timestamp
            if ts < 0 and ts != NO_TIMESTAMP:  # type: ignore[operator]
                raise ValueError(f"invalid message timestamp {ts}")
            max_timestamp = max(max_timestamp, ts)  # type: ignore[type-var]
        delta = i if r.offset_delta is None else r.offset_delta
        if delta <= last_delta:
            raise ValueError(f"offset deltas must increase ({delta} after {last_delta})")
        last_delta = delta
        # MemoryRecordsBuilder.toInnerOffset: relative inner offsets only for compressed v1
        inner_offset = delta if compressed and magic == 1 else base_offset + delta
        entries.append(_entry(magic, inner_offset, ts_bit, ts, r.key, r.value))  # type: ignore[arg-type]
    if not compressed:
        return b"".join(entries)
    payload = compress(compression, b"".join(entries), magic=magic)
    wrapper_ts = NO_TIMESTAMP if magic == 0 else (log_append_time if lat else max_timestamp)
    return _entry(
        magic, base_offset + last_delta, int(compression) | ts_bit, wrapper_ts, None, payload  # type: ignore[arg-type]
    )
