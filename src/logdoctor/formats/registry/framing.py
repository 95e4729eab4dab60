"""Where a record's key or value names its schema: Confluent's frames.

Restated from confluentinc/schema-registry ``schema-serializer/src/main/java/io/confluent/kafka/serializers/
schema/id/`` (``SchemaId.java``, ``HeaderSchemaIdSerializer.java``, ``DualSchemaIdDeserializer.java``) and
``protobuf-provider/.../protobuf/MessageIndexes.java``:

- **prefix**: the bytes start with magic byte 0 and the 4-byte big-endian schema id (``MAGIC_BYTE_V0``,
  read with ``getInt``: signed), or magic byte 1 and the 16-byte GUID (``MAGIC_BYTE_V1``: two big-endian
  longs, most significant first, as ``java.util.UUID``); the payload follows (for Protobuf, first its
  message indexes: the decoder reads them with :func:`read_message_indexes`, knowing the schema's type).
- **header**: the record's last header ``__value_schema_id`` (``__key_schema_id`` for the key) with a
  non-null value names the schema with the same bytes (the serializer writes byte 1 + GUID; the
  deserializer reads byte 0 + id too), followed for Protobuf by the message indexes; the key or value is
  then the bare payload, from its first byte. A header with a null value is as if absent.
- **message indexes** (Protobuf): a zig-zag varint count (Kafka's ``ByteUtils.readVarint``) then that many
  zig-zag varint indexes; a count of 0 is the path ``[0]`` (the first message), written as the single byte
  ``00``.

What is not a frame (no magic byte 0 or 1, fewer bytes than the frame) is the side-table reason
``no_magic_byte``. So is a magic 0 followed by an id of 0 or less: Schema Registry gives ids from 1 up
(``core/.../id/IncrementalIdGenerator.java``: a context's first id is 1; Confluent Cloud's start higher), so
no registered schema has one, and such bytes are something else: a key written by Kafka's
``LongSerializer`` (8 bytes big-endian) from 0 to 2^24 - 1 starts with five zero bytes. (Which topic's keys
are frames at all is the typed tables' call: a topic whose keys never resolve keeps them as bytes.)
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from logdoctor.errors import CorruptRecordError, FormatError, TruncatedError
from logdoctor.formats.registry.reasons import (
    DECODE_ERROR_SCHEMA_MISMATCH,
    DECODE_ERROR_TRUNCATED,
    NO_MAGIC_BYTE,
)
from logdoctor.formats.varint import read_varint

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

__all__ = [
    "GUID_FRAME",
    "ID_FRAME",
    "KEY_SCHEMA_ID_HEADER",
    "MAGIC_GUID",
    "MAGIC_ID",
    "VALUE_SCHEMA_ID_HEADER",
    "Frame",
    "PrefixScan",
    "binary_slices",
    "prefix_ids",
    "read_frame",
    "read_message_indexes",
    "scan_prefix",
]

KEY_SCHEMA_ID_HEADER = "__key_schema_id"
VALUE_SCHEMA_ID_HEADER = "__value_schema_id"
MAGIC_ID = 0  # SchemaId.MAGIC_BYTE_V0: a 4-byte id follows
MAGIC_GUID = 1  # SchemaId.MAGIC_BYTE_V1: a 16-byte GUID follows
ID_FRAME = 5  # bytes of a magic-0 frame
GUID_FRAME = 17  # bytes of a magic-1 frame

_INT32 = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class Frame:
    """What a frame says: the schema's ``schema_id`` or ``guid`` (canonical UUID text), where the payload
    starts in the key or value (``payload``: 5 or 17 after a prefix, 0 with a header), the framing
    (``source``: ``"prefix"`` or ``"header"``), and the message indexes a header gives after the id
    (``message_indexes``; None when it gives none, and always for a prefix: they are then the payload's
    first bytes)."""

    schema_id: int | None
    guid: str | None
    payload: int
    source: str
    message_indexes: tuple[int, ...] | None = None


def _id_or_guid(data: bytes | memoryview) -> tuple[int | None, str | None, int] | None:
    """(id, guid, frame size) of the frame at the start of ``data``, None when there is none."""
    if len(data) >= ID_FRAME and data[0] == MAGIC_ID:
        schema_id = _INT32.unpack_from(data, 1)[0]
        return (schema_id, None, ID_FRAME) if schema_id > 0 else None
    if len(data) >= GUID_FRAME and data[0] == MAGIC_GUID:
        return None, str(uuid.UUID(bytes=bytes(data[1:GUID_FRAME]))), GUID_FRAME
    return None


def read_frame(data: bytes | memoryview | None, header: bytes | memoryview | None) -> Frame | str:
    """The frame of a key or value ``data`` whose record has ``header`` (the value of its last
    ``__value_schema_id`` header, ``__key_schema_id`` for a key; None when it has none, or its value is
    null), or a side-table reason: ``no_magic_byte`` (no frame, or fewer bytes than one; also for a null
    ``data`` without a header), and for a header whose message indexes end early or do not parse
    ``decode_error_truncated`` / ``decode_error_schema_mismatch``."""
    if header is not None:
        found = _id_or_guid(header)
        if found is None:
            return NO_MAGIC_BYTE
        schema_id, guid, size = found
        indexes = None
        if len(header) > size:
            try:
                indexes, end = read_message_indexes(header, size)
            except TruncatedError:
                return DECODE_ERROR_TRUNCATED
            except FormatError:
                return DECODE_ERROR_SCHEMA_MISMATCH
            if end != len(header):
                return DECODE_ERROR_SCHEMA_MISMATCH
        return Frame(schema_id, guid, 0, "header", indexes)
    if data is None:
        return NO_MAGIC_BYTE
    found = _id_or_guid(data)
    if found is None:
        return NO_MAGIC_BYTE
    schema_id, guid, size = found
    return Frame(schema_id, guid, size, "prefix")


def read_message_indexes(data: bytes | memoryview, pos: int) -> tuple[tuple[int, ...], int]:
    """Protobuf's message-index path at ``data[pos:]`` and the position after it (MessageIndexes.java
    ``readFrom``): a count of 0 is ``(0,)``. Raises :class:`~logdoctor.errors.TruncatedError` when the data
    ends first, :class:`~logdoctor.errors.CorruptRecordError` for a negative count or an overlong varint."""
    count, pos = read_varint(data, pos)
    if count == 0:
        return (0,), pos
    if count < 0:
        raise CorruptRecordError("a message-index count of 0 or more", position=pos, found=str(count))
    if count > len(data) - pos:  # each index takes a byte at least
        raise TruncatedError(f"{count} message indexes", position=pos, found=f"{len(data) - pos} bytes left")
    indexes = []
    for _ in range(count):
        index, pos = read_varint(data, pos)
        indexes.append(index)
    return tuple(indexes), pos


def prefix_ids(values: pa.BinaryArray | pa.LargeBinaryArray) -> tuple[np.ndarray, np.ndarray]:
    """The prefix frame of every element of ``values``: ``(magic, ids)``, two numpy arrays of
    ``len(values)`` (:func:`scan_prefix`'s). ``magic`` (int16): the first byte where it starts a whole frame
    (0 with 5 bytes or more and an id above 0, 1 with 17 or more), any other first byte as it is, -1 for a
    null, an empty element, a 0/1 with fewer bytes than its frame or a 0 whose id is 0 or less; ``ids``
    (int32): the big-endian id after a magic 0 that starts a frame, 0 elsewhere. An element ``read_frame``
    gives a frame has magic 0 or 1 here; the others ``no_magic_byte``."""
    scanned = scan_prefix(values)
    return scanned.magic, scanned.ids


@dataclass(frozen=True, slots=True)
class PrefixScan:
    """The prefix frame of every element of a binary column (:func:`scan_prefix`): ``magic`` and ``ids`` as
    :func:`prefix_ids` gives them, and after each magic-0 frame the Protobuf message-index path that
    :func:`read_message_indexes` would read there (whether the schema id is Protobuf's is the registry's
    call): ``index_bytes`` (int8) its length in bytes, -1 when it does not parse or takes more than 8 bytes
    (and for every element that is no magic-0 frame), ``index_keys`` (uint64) those bytes little-endian, so
    that elements with equal (id, index_bytes, index_keys) have the same frame and payload start."""

    magic: np.ndarray
    ids: np.ndarray
    index_bytes: np.ndarray
    index_keys: np.ndarray


def _buffers(values: pa.BinaryArray | pa.LargeBinaryArray) -> tuple[object, object, object, int, int, bool]:
    import pyarrow as pa

    validity, offsets, data = values.buffers()
    large = pa.types.is_large_binary(values.type)
    return validity if values.null_count else None, offsets, data, values.offset, len(values), large


def _c_scan(values: pa.BinaryArray | pa.LargeBinaryArray) -> PrefixScan | None:
    """:func:`scan_prefix` by the C extension (``_speedups.frame_scan``), None without it."""
    from logdoctor.formats.native import speedups

    if speedups is None:
        return None
    import numpy as np

    n = len(values)
    if n == 0:
        e = np.zeros(0, np.int8)
        return PrefixScan(np.zeros(0, np.int16), np.zeros(0, np.int32), e, np.zeros(0, np.uint64))
    validity, offsets, data, offset, n, large = _buffers(values)
    magic, ids, ilen, ikey = speedups.frame_scan(validity, offsets, data, offset, n, large)
    return PrefixScan(
        np.frombuffer(magic, np.int16),
        np.frombuffer(ids, np.int32),
        np.frombuffer(ilen, np.int8),
        np.frombuffer(ikey, np.uint64),
    )


def scan_prefix(values: pa.BinaryArray | pa.LargeBinaryArray) -> PrefixScan:
    """The prefix frame of every element of ``values`` (:class:`PrefixScan`): :func:`read_frame`'s prefix
    rule and :func:`read_message_indexes` over a whole column, in C where the extension is built
    (``_speedups.frame_scan``, from the Arrow buffers), else element by element with those two functions."""
    scanned = _c_scan(values)
    if scanned is not None:
        return scanned
    import numpy as np

    n = len(values)
    magic = np.full(n, -1, np.int16)
    ids = np.zeros(n, np.int32)
    ilen = np.full(n, -1, np.int8)
    ikey = np.zeros(n, np.uint64)
    for i, d in enumerate(values.to_pylist()):
        if not d:
            continue
        frame = read_frame(d, None)
        if isinstance(frame, str):
            if d[0] not in (MAGIC_ID, MAGIC_GUID):
                magic[i] = d[0]
            continue
        if frame.guid is not None:
            magic[i] = MAGIC_GUID
            continue
        magic[i], ids[i] = MAGIC_ID, frame.schema_id
        try:
            _, end = read_message_indexes(d, ID_FRAME)
        except (TruncatedError, FormatError):
            continue
        if end - ID_FRAME <= 8:
            ilen[i] = end - ID_FRAME
            ikey[i] = int.from_bytes(d[ID_FRAME:end], "little")
    return PrefixScan(magic, ids, ilen, ikey)


def binary_slices(values: pa.BinaryArray | pa.LargeBinaryArray, rows: np.ndarray, start: int) -> list:
    """The bytes of the elements ``rows`` (int64 indexes) of ``values`` from byte ``start`` on (None for a
    null), as a list: in C from the Arrow buffers where the extension is built."""
    import numpy as np

    from logdoctor.formats.native import speedups

    rows = np.ascontiguousarray(rows, dtype=np.int64)
    if speedups is not None and len(values):
        validity, offsets, data, offset, n, large = _buffers(values)
        return speedups.binary_slices(validity, offsets, data, offset, n, large, rows, start)
    return [None if (d := values[r].as_py()) is None else d[start:] for r in rows.tolist()]
