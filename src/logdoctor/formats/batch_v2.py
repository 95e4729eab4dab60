"""Record batches of magic 2 (K:clients/src/main/java/org/apache/kafka/common/record/DefaultRecordBatch.java).

The bytes, big-endian, as DefaultRecordBatch.java lays them out. A batch is a 61-byte header and a
records section:

    offset  size  field
         0     8  baseOffset            offset of the first record
         8     4  length                bytes after this field (batch size - 12)
        12     4  partitionLeaderEpoch  set by the leader; outside the CRC so it can change
        16     1  magic                 2
        17     4  crc                   CRC-32C of attributes .. end of batch
        21     2  attributes            bits 0-2 codec (none, gzip, snappy, lz4, zstd), 3 timestamp
                                        type (LogAppendTime), 4 transactional, 5 control, 6 delete horizon
        23     4  lastOffsetDelta
        27     8  baseTimestamp         the delete horizon when bit 6 is set
        35     8  maxTimestamp
        43     8  producerId
        51     2  producerEpoch
        53     4  baseSequence
        57     4  recordsCount
        61        records               compressed as a whole when the codec bits say so

Each record (DefaultRecord.java) is a zig-zag varint length, then: an attributes byte (unused),
timestampDelta (varlong), offsetDelta (varint), key length (varint, -1 = null) and key, value length
(varint, -1 = null) and value, a header count (varint) and that many headers, each a key length
(varint, >= 0) and UTF-8 key, a value length (varint, -1 = null) and value. Varints are at most 5
bytes, varlongs 10; the fields must fill the record's length exactly, and the records the section.

Rules kept from Kafka:
- ``ensure_valid()`` is what LogSegment.recover calls (DefaultRecordBatch.ensureValid): the size
  must hold the header and the CRC must match; ``ensure_valid(deep=True)`` also decodes the records;
- with LogAppendTime every record's timestamp is the batch's max timestamp;
- when the delete-horizon bit is set, baseTimestamp is the delete horizon (the log cleaner sets it,
  records keep their deltas against it);
- a record's sequence is baseSequence + offsetDelta with Java's int32 wrap-around
  (DefaultRecordBatch.incrementSequence), -1 when the batch has no sequence.

Decoding: :data:`DECODERS` is chosen once, at import: the C extension's when it is built
(:mod:`logdoctor.formats.native`), else the pure-Python twin's (:mod:`logdoctor.formats.v2_twin`);
both give identical results and errors. ``RecordBatchV2.record_list()`` / ``records()`` give Record
objects (uncompressed and lz4 batches in one C call: header, lz4 frame, records; gzip/snappy/zstd
are decompressed by ``codecs`` first); :mod:`logdoctor.formats.columns` decodes runs of batches
into Arrow-ready columns through :func:`decode_v2_run`.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from logdoctor.errors import (
    CorruptRecordError,
    CrcMismatchError,
    FormatError,
    TruncatedError,
    UnsupportedError,
)
from logdoctor.formats import native
from logdoctor.formats.crc import crc32c
from logdoctor.formats.lazy_numpy import np
from logdoctor.formats.ranged_bytes import RangedBytes
from logdoctor.formats.record_types import (
    BATCH_V2_HEADER,
    LOG_OVERHEAD,
    NO_PARTITION_LEADER_EPOCH,
    NO_SEQUENCE,
    Batch,
    Compression,
    Record,
    TimestampType,
)
from logdoctor.formats.v2_twin import (
    _E_CODEC,
    _E_WINDOW,
    RECORD_ERRORS,
    RecordError,
    check_records_py,
    decode_batch_columns_py,
    decode_records_py,
    increment_sequence,
    wrap_int64,
)

HEADER = BATCH_V2_HEADER  # the 61-byte header (record_types)
RECORD_BATCH_OVERHEAD = HEADER.size  # 61
RECORDS_OFFSET = RECORD_BATCH_OVERHEAD
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

_CODECS: Any = None  # logdoctor.formats.codecs (its libraries' import: ~50 ms), imported at its first need


def _codecs() -> Any:
    """logdoctor.formats.codecs, imported once (an import statement per batch costs more than its check)."""
    global _CODECS
    if _CODECS is None:
        from logdoctor.formats import codecs as _CODECS
    return _CODECS


@dataclass(frozen=True, slots=True)
class Decoders:
    """One implementation of the record decoder: the C extension's or the pure-Python twin's."""

    name: str
    decode_records: Callable[..., list[Record]]
    decode_batch_columns: Callable[..., tuple]
    batch_records: Callable[..., list[Record] | None] | None  # header + lz4 + records in one call
    record_error: type[Exception]
    lz4_in_c: bool  # lz4 frames are decompressed inside decode_batch_columns
    check_records: Callable[..., tuple[int, int, int, int]]  # the --deep records check (no objects)


PURE_PYTHON = Decoders(
    "pure-python", decode_records_py, decode_batch_columns_py, None, RecordError, False, check_records_py
)
NATIVE: Decoders | None = (
    Decoders(
        "c",
        native.speedups.decode_records,
        native.speedups.decode_batch_columns,
        native.speedups.batch_records,
        native.speedups.RecordError,
        native.HAVE_C_LZ4,
        native.speedups.check_records_v2,
    )
    if native.speedups is not None
    else None
)
DECODERS: Decoders = NATIVE or PURE_PYTHON
"""The decoder every batch uses, chosen once at import (tests swap it to compare the twins)."""
HAVE_SPEEDUPS = NATIVE is not None


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
        return cls._checked(mv, start, len(mv) - start, mv, source, base_position)

    @classmethod
    def parse_ranged(
        cls, data: RangedBytes, *, source: str | None = None, base_position: int = 0
    ) -> RecordBatchV2:
        """The batch that ``data`` holds whole (a batch larger than any window, read by byte ranges as it
        is used: its CRC and records a window at a time); the checks of :meth:`parse`, on its header."""
        head = memoryview(data[: min(len(data), RECORD_BATCH_OVERHEAD)])  # type: ignore[arg-type]
        return cls._checked(head, 0, len(data), data, source, base_position)  # type: ignore[arg-type]

    @classmethod
    def _checked(
        cls, mv: memoryview, start: int, avail: int, buf: memoryview, source: str | None, base_position: int
    ) -> RecordBatchV2:
        """The one check of a v2 batch's header (``mv[start:]``, ``avail`` bytes of the batch's buffer
        ``buf`` there) before it is made."""
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
        return cls(buf, start, header, source=source, base_position=base_position)

    # --- derived header fields ---------------------------------------------------------------

    @property
    def last_offset(self) -> int:
        return wrap_int64(self.base_offset + self.last_offset_delta)

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

    @property
    def buffer(self) -> memoryview:
        """The buffer the batch lies in (batches of one segment share it)."""
        return self._buf

    def raw(self) -> memoryview:
        return self._buf[self._start : self._start + self.size]

    def records_section(self) -> memoryview:
        """The bytes after the header (compressed when the batch is)."""
        return self._buf[self._start + RECORDS_OFFSET : self._start + self.size]

    def compute_crc(self) -> int:
        if isinstance(self._buf, RangedBytes):  # over the stream, a window at a time
            value = 0
            for piece in self._buf.windows(self._start + ATTRIBUTES_OFFSET, self._start + self.size):
                value = crc32c(piece, value)
            return value
        return crc32c(self._buf[self._start + ATTRIBUTES_OFFSET : self._start + self.size])

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
            self.check_count()
            offsets = decode_v2_run([self], payload=False)[1]
            self._check_offset_deltas(offsets)

    def check_count(self) -> None:
        """The one batch validation of the header's record count, which every reader of records goes through
        (``record_list``, ``records``, ``record_windows``, ``small_section``, :func:`decode_v2_run` and so
        ``decode_columns``, ``ensure_valid(deep=True)``; the C ``--deep`` check leaves such a batch to the
        Python path, which calls this): raises CorruptRecordError unless the count is >= 0, fits the offset
        range (``lastOffsetDelta + 1``) and a count of 0 comes with no records section.

        Kafka's LogValidator.validateBatch refuses a produced batch whose count is not ``lastOffsetDelta + 1``
        ("Inconsistent batch offset range and count"); on disk the log cleaner keeps a batch's
        ``lastOffsetDelta`` when it drops records from it (MemoryRecords.filterTo) and writes a batch it
        empties as the 61-byte header alone (DefaultRecordBatch.writeEmptyHeader), so a count below the
        range is legal there, and the records decoded must then match the count (the decoders check that:
        E_FEWER_RECORDS, E_TRAILING). A count of 0 with records behind it is what a decoder can never see:
        DefaultRecordBatch.iterator returns nothing for a count of 0 without reading the bytes, so its
        records would be dropped silently (issue 48).

        The same validation names a partition leader epoch below -1: the leader stamps every batch it
        appends with its epoch, >= 0 (LogValidator's setPartitionLeaderEpoch; the KRaft log's BatchBuilder
        likewise), and -1 (RecordBatch.NO_PARTITION_LEADER_EPOCH) is the only negative value Kafka writes
        (a batch converted from v0/v1). The field is outside the batch's CRC, so a damaged one passes
        ``ensureValid``; LogSegment.recover skips negative epochs for the leader-epoch cache, and a
        consumer takes the batch's epoch for its records' ``leaderEpoch`` (CompletedFetch.maybeLeaderEpoch:
        only -1 means none). Timestamps are not checked here: LogValidator.validateTimestamp compares them
        with the append time, which a log at rest does not have, and accepts negative ones under the
        default ``message.timestamp.before.max.ms``."""
        epoch = self.partition_leader_epoch
        if epoch < NO_PARTITION_LEADER_EPOCH:
            raise CorruptRecordError(
                "a partition leader epoch >= 0, or -1 (RecordBatch.NO_PARTITION_LEADER_EPOCH)",
                source=self.source,
                position=self.position + PARTITION_LEADER_EPOCH_OFFSET,
                found=f"{epoch} (offsets {self.base_offset}..{self.last_offset})",
            )
        count, delta = self.record_count, self.last_offset_delta
        if count >= 0 and delta >= 0 and count <= delta + 1 and (count or self._holds_no_record()):
            return
        raise CorruptRecordError(
            "a record count that agrees with the batch's offset range and records "
            "(Kafka's LogValidator: Inconsistent batch offset range and count)",
            source=self.source,
            position=self.position + RECORDS_OFFSET,  # where the records start, as the decoders' errors
            found=(
                f"record count {count}, offsets {self.base_offset}..{self.last_offset} "
                f"(last offset delta {delta}), {self.size - RECORD_BATCH_OVERHEAD} bytes of records"
            ),
        )

    def _holds_no_record(self) -> bool:
        """Whether a batch of count 0 holds no record: no records section (the cleaner's empty batch), or a
        compressed one that decompresses to nothing (KafkaJS writes an empty batch so); one window at most."""
        if self.size == RECORD_BATCH_OVERHEAD:
            return True
        if not self.attributes & COMPRESSION_CODEC_MASK:
            return False
        first, second, _ = self._section_windows()
        return not first and second is None

    def _check_offset_deltas(self, offsets_bytes: bytes | bytearray) -> None:
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
        codecs = _codecs()
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
        expected, found = RECORD_ERRORS.get(code, ("a valid record", "record {index}"))
        found = found.format(index=index)
        if decompressed:
            position = self.position + RECORDS_OFFSET
            found += f" (byte {pos} of the decompressed records)"
        else:
            position = self.position + (pos - self._start)
        return CorruptRecordError(expected, source=self.source, position=position, found=found)

    def record_list(self) -> list[Record]:
        """Decode every record (absolute offsets and timestamps) into a list."""
        self.check_count()
        if self.record_count == 0:
            return []
        if isinstance(self._buf, RangedBytes):
            return [r for window in self.record_windows() for r in window]
        dec = DECODERS
        if dec.batch_records is not None:
            # uncompressed and lz4 batches: one C call reads the header, decompresses, builds the list
            try:
                records = dec.batch_records(self._buf, self._start)
            except dec.record_error as exc:
                raise self._record_error(exc, bool(self.attributes & COMPRESSION_CODEC_MASK)) from None
            if records is not None:
                return records
        data, pos, end, decompressed = self._records_data()
        lat = self.max_timestamp if self.attributes & TIMESTAMP_TYPE_MASK else None
        try:
            return dec.decode_records(
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
        except dec.record_error as exc:
            raise self._record_error(exc, decompressed) from None

    def control_record(self) -> Record | None:
        """The first record of a control batch as Kafka's producer state reads it, None when the header
        counts none: ``ProducerAppendInfo.append`` takes ``batch.iterator().next()`` and the batch's base
        offset (K:storage/src/main/java/org/apache/kafka/storage/internals/log/ProducerAppendInfo.java),
        and that iterator checks neither the offset range nor the count against it. The one reader that
        goes past :meth:`check_count`: the transaction walk, which names a marker this check refuses and
        lets it decide its transaction as Kafka's producer state does. Raises CorruptRecordError when the
        record itself does not decode."""
        if self.record_count <= 0:
            return None
        data, pos, end, decompressed = self._records_data()
        length, body = _varint_at(bytearray(data[pos : min(end, pos + 5)]), 0)
        if length is not None and length >= 0:
            end = min(end, pos + body + length)  # the first record alone
        lat = self.max_timestamp if self.attributes & TIMESTAMP_TYPE_MASK else None
        dec = DECODERS
        try:
            (first,) = dec.decode_records(
                data, pos, end, 1, self.base_offset, self.base_timestamp, lat, self.base_sequence,
                self.timestamp_type,
            )  # fmt: skip
        except dec.record_error as exc:
            raise self._record_error(exc, decompressed) from None
        return first

    def records(self) -> Iterator[Record]:
        # Kafka returns an empty iterator for a count of 0 without looking at the bytes
        # (DefaultRecordBatch.iterator). The whole batch is decoded by this call (a list iterator
        # costs less per record than a generator), so bad records raise here; except a compressed
        # batch whose records do not fit one window (codecs.WINDOW): those are decompressed and decoded
        # a window at a time as they are iterated (a decompression bomb is never whole in memory), and
        # a bad record raises when its window is reached, as Kafka's compressedIterator does.
        # An uncompressed batch of more than a window is decoded a window at a time too, as Kafka's
        # uncompressedIterator reads it (its record values are never all copied out at once).
        self.check_count()
        if self.record_count == 0 or (self.compression == Compression.NONE and not self._plain_over_window()):
            return iter(self.record_list())
        return itertools.chain.from_iterable(self.record_windows())

    def _section_windows(self) -> tuple[bytes, bytes | None, Iterator[bytes]]:
        """The decompressed records section of a compressed batch as windows: (the first, the second
        or None when the first holds it all, the rest). Typed errors."""
        codecs = _codecs()
        start, end = self._start + RECORDS_OFFSET, self._start + self.size
        where = self.position + RECORDS_OFFSET
        try:
            windows = codecs.decompress_windows(
                self.compression, self._buf[start:end], source=self.source, position=where
            )
            first = next(windows, b"")
            second = next(windows, None)
        except FormatError:
            raise
        except Exception as exc:  # a codec library's own exception: never let it escape untyped
            raise CorruptRecordError(
                f"{self.compression.label}-compressed records", source=self.source, position=where,
                found=repr(exc)[:200],
            ) from exc  # fmt: skip
        return first, second, windows

    def record_windows(self) -> Iterator[list[Record]]:
        """The records as lists of about a window (``codecs.WINDOW`` bytes) each: one list for a batch
        that is not compressed, or whose records fit one window (decoded by this call, so bad records
        raise here); else decompressed and decoded a window at a time as the lists are taken."""
        self.check_count()
        if self.record_count == 0:
            return iter(([],))
        if self.compression == Compression.NONE:
            if not self._plain_over_window():
                return iter((self.record_list(),))
            windows = self._plain_windows()
            return self._windowed_records(next(windows), next(windows), windows, decompressed=False)
        first, second, windows = self._section_windows()
        if second is None:  # the usual case: one window holds every record
            return iter((self._decode_section(first, 0, len(first), self.record_count, 0),))
        return self._windowed_records(first, second, windows)

    def _plain_over_window(self) -> bool:
        WINDOW = _codecs().WINDOW
        return self.size - RECORDS_OFFSET > WINDOW

    def _plain_windows(self) -> Iterator[bytes]:
        """The records section of an uncompressed batch as copies of a window each."""
        WINDOW = _codecs().WINDOW
        start, end = self._start + RECORDS_OFFSET, self._start + self.size
        for at in range(start, end, WINDOW):
            yield bytes(self._buf[at : min(end, at + WINDOW)])

    def small_section(self) -> bytes | None:
        """The decompressed records section of a compressed batch when it fits one window, else None
        (a batch whose records are to be read with :meth:`record_windows`)."""
        self.check_count()
        first, second, _ = self._section_windows()
        return first if second is None else None

    def _decode_section(
        self, data: bytes | bytearray, pos: int, end: int, count: int, skipped: int, decompressed: bool = True
    ) -> list[Record]:
        """``count`` whole records of decompressed ``data[pos:end]`` (``skipped`` bytes of the section
        came before ``data``: error positions are within the whole section; ``decompressed`` False: ``data``
        is a copy of part of an uncompressed section, error positions are the batch's bytes')."""
        dec = DECODERS
        lat = self.max_timestamp if self.attributes & TIMESTAMP_TYPE_MASK else None
        try:
            return dec.decode_records(
                data, pos, end, count, self.base_offset, self.base_timestamp, lat, self.base_sequence,
                self.timestamp_type,
            )  # fmt: skip
        except dec.record_error as exc:
            code, at, index = exc.args[:3]
            at += skipped if decompressed else skipped + self._start + RECORDS_OFFSET
            raise self._record_error(
                dec.record_error(code, at, index + (self.record_count - count)), decompressed
            ) from None

    def _windowed_records(
        self, first: bytes, second: bytes, windows: Iterator[bytes], decompressed: bool = True
    ) -> Iterator[list[Record]]:
        WINDOW = _codecs().WINDOW
        buf = bytearray(first)
        buf += second
        del first, second
        left = self.record_count
        skipped = 0  # section bytes decoded and dropped before buf[0]
        more = True
        while True:
            pos = 0  # decode whole records of buf, at most a window of them per call
            while left:
                group, n, length = pos, 0, None
                while n < left and group - pos < WINDOW:
                    length, body = _varint_at(buf, group)
                    if length is None or length < 0 or body + length > len(buf):
                        break
                    group, n = body + length, n + 1
                if n == 0:
                    break
                yield self._decode_section(buf, pos, group, n, skipped, decompressed)
                pos, left = group, left - n
            del buf[:pos]
            skipped += pos
            if left == 0:
                for piece in windows:
                    buf += piece
                if buf:  # bytes after the last record
                    self._decode_section(buf, 0, len(buf), 0, skipped, decompressed)
                return
            if (length is not None and length < 0) or not more:
                # a bad length, or no more input: the decoder names what is wrong with the rest
                yield self._decode_section(buf, 0, len(buf), left, skipped, decompressed)
                return
            piece = next(windows, None)
            if piece is None:
                more = False
            else:
                buf += piece


class SectionTooLargeError(Exception):
    """Not a damage: ``decode_v2_run`` (and so ``decode_columns``) met a compressed batch whose records
    decompress to more than a window (a decompression bomb, or a very large batch). Its records are to be
    read a window at a time with ``batch.record_windows()``; ``.batch`` is it."""

    def __init__(self, batch: RecordBatchV2) -> None:
        super().__init__(f"the records of the batch at position {batch.position} span more than one window")
        self.batch = batch


def _varint_at(buf: bytearray, pos: int) -> tuple[int | None, int]:
    """The zigzag varint at ``pos`` (a record's length) and where its bytes end; (None, pos) when the
    buffer ends inside it (or it is longer than 5 bytes: the decoder reports that)."""
    value = shift = 0
    for i in range(pos, min(pos + 5, len(buf))):
        b = buf[i]
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return (value >> 1) ^ -(value & 1), i + 1
        shift += 7
    return None, pos


walk_v2: Any = native.configure_batch_class(RecordBatchV2)
"""walk_v2(buf, pos, limit, source, base_position, max_batches) -> (batches, next_pos): the C fast
lane of records.iter_batches (whole v2 batches only; None without the C extension)."""
recover_v2: Any = native.recover_v2
"""The C fast lane of recovery.rebuild_indexes; None without it."""


def check_v2_size(length: int, *, source: str | None, position: int) -> None:
    """A v2 batch's length field must cover the header (DefaultRecordBatch.ensureValid)."""
    if length + LOG_OVERHEAD < RECORD_BATCH_OVERHEAD:
        raise CorruptRecordError(
            f"a record batch size >= {RECORD_BATCH_OVERHEAD} (the v2 header)",
            source=source,
            position=position,
            found=f"size {length + LOG_OVERHEAD}",
        )


def decode_v2_run(run: list[RecordBatchV2], *, payload: bool = True) -> tuple:
    """decode_batch_columns over v2 batches sharing one buffer, with typed errors (the tuple of
    buffers ``_speedups.decode_batch_columns`` documents; :mod:`logdoctor.formats.columns` wraps it)."""
    dec = DECODERS
    if not run:
        return decode_batch_columns_py(b"", [], None, payload)
    buf = run[0]._buf
    if isinstance(buf, RangedBytes):  # a batch over any window, alone in its run: read a window at a time
        raise SectionTooLargeError(run[0])
    starts = [b._start for b in run]
    decode = dec.decode_batch_columns
    c_lz4 = dec.lz4_in_c
    sections: list | None = None
    for k, b in enumerate(run):  # batches the C walker does not decompress itself
        try:
            b.check_count()
        except FormatError:
            if k:  # an earlier batch's bad records come first
                decode_v2_run(run[:k], payload=False)
            raise
        codec = b.attributes & COMPRESSION_CODEC_MASK
        if codec == 0 or (codec == Compression.LZ4 and c_lz4) or b.record_count == 0:
            continue
        try:
            if codec != Compression.NONE:  # lz4 here only when the C walker does not do it
                data = b.small_section()
                if data is None:  # more than a window: never decompressed whole here
                    if k:  # an earlier batch's bad records come first
                        decode_v2_run(run[:k], payload=False)
                    raise SectionTooLargeError(b)
            else:
                data = b._records_data()[0]
        except FormatError:
            if k:  # an earlier batch's bad records come first
                decode_v2_run(run[:k], payload=False)
            raise
        if sections is None:
            sections = [None] * len(run)
        sections[k] = data
    while True:
        try:
            return decode(buf, starts, sections, payload)
        except dec.record_error as exc:
            code, _, _, k = exc.args
            batch = run[k]
            if code == _E_WINDOW:  # an lz4 section of more than a window: never decompressed whole here
                raise SectionTooLargeError(batch) from None
            if code != _E_CODEC:
                raise batch._record_error(exc, bool(batch.attributes & COMPRESSION_CODEC_MASK)) from None
        # an lz4 frame the C walker leaves to codecs.py (block checksums, or damage: then this raises), a
        # window at most: a larger one is read a window at a time (SectionTooLargeError)
        if sections is None:
            sections = [None] * len(run)
        sections[k] = _one_window(batch)
        for j in range(k + 1, len(run)):  # the same for later frames with block checksums
            later = run[j]
            if later.attributes & COMPRESSION_CODEC_MASK == Compression.LZ4 and later.record_count:
                flg_at = later._start + RECORDS_OFFSET + 4
                if flg_at < later._start + later.size and later._buf[flg_at] & 0x10:
                    sections[j] = _one_window(later)


def _one_window(batch: RecordBatchV2) -> bytes:
    """The decompressed records section of a compressed batch that fits one window; SectionTooLargeError
    for a larger one (never decompressed whole)."""
    data = batch.small_section()
    if data is None:
        raise SectionTooLargeError(batch)
    return data
