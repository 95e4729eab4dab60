"""The vocabulary of the record format shared by v0/v1 message sets and v2 record batches.

Kept apart from the parsers so that codecs, legacy message sets and v2 batches can all
import it without importing each other.
"""

from __future__ import annotations

import enum
import struct
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass


class Compression(enum.IntEnum):
    """Codec ids of the attributes' low 3 bits (Kafka's CompressionType)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def label(self) -> str:
        return self.name.lower()


class TimestampType(enum.IntEnum):
    """Kafka's TimestampType; NO_TIMESTAMP is what magic 0 has."""

    NO_TIMESTAMP = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1

    @property
    def label(self) -> str:
        return {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}[int(self)]


# Every entry of a log starts with int64 offset and int32 size (LOG_OVERHEAD, Records.java),
# whatever its magic; the magic byte sits at the same place in all versions.
OFFSET_LENGTH = 8
SIZE_LENGTH = 4
LOG_OVERHEAD = OFFSET_LENGTH + SIZE_LENGTH
#: those 12 bytes, big-endian: ``offset, size = LOG_ENTRY_HEAD.unpack_from(buf, position)``
LOG_ENTRY_HEAD = struct.Struct(">qi")
#: a magic-2 batch's 61-byte header (DefaultRecordBatch): baseOffset, length, partitionLeaderEpoch, magic,
#: crc, attributes, lastOffsetDelta, baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence,
#: recordsCount (the C extension's ``read_batch_header`` reads the same fields at the same places)
BATCH_V2_HEADER = struct.Struct(">qiibIhiqqqhii")
MAGIC_POSITION = 16  # 8 offset + 4 size + 4 (v0/v1 crc | v2 partition leader epoch)
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1


def entry_length(buf: bytes | memoryview, position: int = 0) -> int:
    """The bytes of the entry (a batch or a message set entry) at ``position``, its 12 included."""
    return LOG_ENTRY_HEAD.unpack_from(buf, position)[1] + LOG_OVERHEAD


@dataclass(frozen=True, slots=True)
class Header:
    key: str
    value: bytes | None


@dataclass(slots=True)
class Record:
    """One record as a consumer sees it (absolute offset, absolute timestamp)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    timestamp_type: TimestampType = TimestampType.CREATE_TIME
    sequence: int = NO_SEQUENCE


@dataclass(slots=True)
class RecordSpec:
    """What a writer needs to build a record (offsets come from the batch's base offset)."""

    value: bytes | None
    key: bytes | None = None
    timestamp: int = NO_TIMESTAMP
    headers: tuple[Header, ...] = ()
    # v2 only: the record's offset - base offset (None: its index in the batch). Lets writers
    # build compacted batches with gaps.
    offset_delta: int | None = None


class Batch(ABC):
    """One v2 record batch, or one v0/v1 log entry (a plain message or a compressed wrapper).

    Header fields are read without decompressing anything; ``records()`` decodes on demand.
    Attributes (see docs/API.md): position, size, magic, base_offset, last_offset,
    record_count, compression, timestamp_type, max_timestamp, first_timestamp, producer_id,
    producer_epoch, base_sequence, partition_leader_epoch, is_transactional, is_control,
    has_delete_horizon, stored_crc.
    """

    position: int
    size: int
    magic: int

    @property
    @abstractmethod
    def base_offset(self) -> int: ...

    @property
    @abstractmethod
    def last_offset(self) -> int: ...

    @property
    @abstractmethod
    def record_count(self) -> int: ...

    @property
    @abstractmethod
    def compression(self) -> Compression: ...

    @property
    @abstractmethod
    def timestamp_type(self) -> TimestampType: ...

    @property
    @abstractmethod
    def max_timestamp(self) -> int: ...

    @property
    @abstractmethod
    def stored_crc(self) -> int: ...

    @abstractmethod
    def compute_crc(self) -> int: ...

    def crc_valid(self) -> bool:
        return self.compute_crc() == self.stored_crc

    @abstractmethod
    def ensure_valid(self) -> None:
        """Raise CrcMismatchError / CorruptRecordError when the batch is not valid."""

    @abstractmethod
    def records(self) -> Iterator[Record]:
        """Decompress (if needed) and decode the records, with absolute offsets and timestamps."""

    @abstractmethod
    def raw(self) -> memoryview:
        """The batch's bytes, from its offset field to its end."""

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1
