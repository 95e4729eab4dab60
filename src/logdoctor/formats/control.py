"""Control records: the records of control batches (attributes bit 5).

Key (K:clients/.../common/record/ControlRecordType.java): int16 version (0), int16 type.
Values:
- ABORT / COMMIT: EndTransactionMarker.java: int16 version, int32 coordinatorEpoch (a higher
  version is read as version 0, a negative one is corrupt);
- LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER, KRAFT_VERSION, KRAFT_VOTERS: the messages of
  K:clients/src/main/resources/common/message/{LeaderChangeMessage,SnapshotHeaderRecord,
  SnapshotFooterRecord,KRaftVersionRecord,VotersRecord}.json, all flexible (compact arrays and
  strings, tagged fields after every struct), read and written with their layouts
  (formats/internal/kafka_layouts.py) by the generic reader and writer (formats/internal/protocol.py).
  The first field of each is an int16 ``Version``, which selects the schema version here; unknown
  tagged fields are kept so that building the parsed value gives the same bytes back.
"""

from __future__ import annotations

import enum
import struct
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from logdoctor.errors import CorruptRecordError, FormatError, TruncatedError, UnsupportedError
from logdoctor.formats.record_types import RecordSpec

if TYPE_CHECKING:  # formats.internal (the layout table) is loaded by the KRaft control records only
    from logdoctor.formats.internal.protocol import StructType

Buffer = bytes | bytearray | memoryview
CONTROL_KEY_VERSION = 0
END_TXN_MARKER_VERSION = 0
_KEY = struct.Struct(">hh")
_MARKER = struct.Struct(">hi")
_VERSION = struct.Struct(">h")


class ControlType(enum.IntEnum):
    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


TaggedFields = tuple[tuple[int, bytes], ...]


@dataclass(frozen=True, slots=True)
class EndTxnMarker:
    committed: bool
    coordinator_epoch: int
    version: int = END_TXN_MARKER_VERSION

    @property
    def control_type(self) -> ControlType:
        return ControlType.COMMIT if self.committed else ControlType.ABORT


@dataclass(frozen=True, slots=True)
class LeaderChangeVoter:
    voter_id: int
    voter_directory_id: uuid.UUID | None = None  # version 1+
    tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class LeaderChangeMessage:
    version: int
    leader_id: int
    voters: tuple[LeaderChangeVoter, ...] = ()
    granting_voters: tuple[LeaderChangeVoter, ...] = ()
    tagged_fields: TaggedFields = ()
    control_type = ControlType.LEADER_CHANGE


@dataclass(frozen=True, slots=True)
class SnapshotHeaderRecord:
    version: int
    last_contained_log_timestamp: int
    tagged_fields: TaggedFields = ()
    control_type = ControlType.SNAPSHOT_HEADER


@dataclass(frozen=True, slots=True)
class SnapshotFooterRecord:
    version: int
    tagged_fields: TaggedFields = ()
    control_type = ControlType.SNAPSHOT_FOOTER


@dataclass(frozen=True, slots=True)
class KRaftVersionRecord:
    version: int
    kraft_version: int
    tagged_fields: TaggedFields = ()
    control_type = ControlType.KRAFT_VERSION


@dataclass(frozen=True, slots=True)
class Endpoint:
    name: str
    host: str
    port: int
    tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class KRaftVersionFeature:
    min_supported_version: int
    max_supported_version: int
    tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class Voter:
    voter_id: int
    voter_directory_id: uuid.UUID
    endpoints: tuple[Endpoint, ...]
    kraft_version_feature: KRaftVersionFeature
    tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class VotersRecord:
    version: int
    voters: tuple[Voter, ...] = ()
    tagged_fields: TaggedFields = ()
    control_type = ControlType.KRAFT_VOTERS


ControlValue = (
    EndTxnMarker
    | LeaderChangeMessage
    | SnapshotHeaderRecord
    | SnapshotFooterRecord
    | KRaftVersionRecord
    | VotersRecord
)


@dataclass(frozen=True, slots=True)
class ControlRecord:
    """A parsed control record: its key version, its type and its typed value (None when UNKNOWN)."""

    key_version: int
    type_id: int
    control_type: ControlType
    value: ControlValue | None = field(default=None)


# ---------------------------------------------------------------------------------------------
# Reading


def parse_control_key(key: Buffer | None, *, source: str | None = None, position: int = 0) -> tuple[int, int]:
    """(version, type id) of a control record key (ControlRecordType.parseTypeId)."""
    if key is None or len(key) < _KEY.size:
        raise CorruptRecordError(
            "a control record key of at least 4 bytes",
            source=source,
            position=position,
            found="null" if key is None else f"{len(key)} bytes",
        )
    version, type_id = _KEY.unpack_from(key, 0)
    if version < 0:
        raise CorruptRecordError(
            "a control key version >= 0", source=source, position=position, found=str(version)
        )
    return version, type_id


def parse_end_txn_marker(
    type_id: int, value: Buffer | None, *, source: str | None = None, position: int = 0
) -> EndTxnMarker:
    if value is None or len(value) < _MARKER.size:
        raise CorruptRecordError(
            "an end transaction marker of at least 6 bytes",
            source=source,
            position=position,
            found="null" if value is None else f"{len(value)} bytes",
        )
    version, epoch = _MARKER.unpack_from(value, 0)
    if version < 0:
        raise CorruptRecordError(
            "a marker version >= 0", source=source, position=position, found=str(version)
        )
    return EndTxnMarker(committed=type_id == ControlType.COMMIT, coordinator_epoch=epoch, version=version)


#: the KRaft control messages (each dataclass named as its JSON file) -> the dataclasses of their structs
_STRUCTS: dict[type, dict[str, type]] = {
    LeaderChangeMessage: {"Voter": LeaderChangeVoter},
    SnapshotHeaderRecord: {},
    SnapshotFooterRecord: {},
    KRaftVersionRecord: {},
    VotersRecord: {"Voter": Voter, "Endpoint": Endpoint, "KRaftVersionFeature": KRaftVersionFeature},
}
_KRAFT: dict[ControlType, type] = {cls.control_type: cls for cls in _STRUCTS}


def _from_dict(st: StructType, data: dict[str, Any], classes: dict[str, type], source: str | None,
               position: int) -> Any:
    """The generic reader's dict of ``st`` -> its dataclass (uuids as uuid.UUID, unknown tags as pairs)."""
    from logdoctor.formats.internal.protocol import (
        UNKNOWN_TAGGED,
        ArrayOf,
        StructType,
        bytes_from_text,
        uuid_from_text,
    )

    kwargs: dict[str, Any] = {}
    for f in st.fields:
        if f.name not in data:  # a field of a later version
            continue
        v = data[f.name]
        if isinstance(f.type, ArrayOf):
            v = tuple(_from_dict(f.type.element, item, classes, source, position) for item in v)
        elif isinstance(f.type, StructType):
            v = _from_dict(f.type, v, classes, source, position)
        elif f.type == "uuid":
            v = uuid.UUID(bytes=uuid_from_text(v))
        kwargs[f.name] = v
    tags = tuple((t["tag"], bytes_from_text(t["data"])) for t in data.get(UNKNOWN_TAGGED, ()))
    ids = [tag for tag, _ in tags]
    if ids != sorted(set(ids)):
        raise CorruptRecordError(f"{st.name}: tagged fields in increasing tag order", source=source,
                                 position=position, found=f"tags {ids}")
    return classes[st.name](**kwargs, tagged_fields=tags)


def parse_control_value(
    control_type: ControlType | int, value: Buffer | None, *, source: str | None = None, position: int = 0
) -> ControlValue:
    """Parse the value of a control record of a known type."""
    ctype = ControlType(control_type)
    if ctype in (ControlType.ABORT, ControlType.COMMIT):
        return parse_end_txn_marker(ctype, value, source=source, position=position)
    if value is None:
        raise CorruptRecordError(
            f"a {ctype.name} control value", source=source, position=position, found="null"
        )
    cls = _KRAFT.get(ctype)
    if cls is None:
        raise UnsupportedError(
            "a known control record type", source=source, position=position, found=ctype.name
        )
    from logdoctor.formats.internal.layouts import newest
    from logdoctor.formats.internal.protocol import read_message

    message = newest(cls.__name__)
    if len(value) < _VERSION.size:  # the first field, Version, selects the schema version
        raise TruncatedError(f"{message.name}: the version (int16)", source=source, position=position,
                             found=f"{len(value)} bytes")
    # a string that is not UTF-8 is read as Kafka reads it (K:clients/.../protocol/Readable.java readString)
    fields, _ = read_message(message, value, _VERSION.unpack_from(value)[0], source=source,
                             base_position=position, text_errors="replace")
    return _from_dict(message.struct, fields, {message.name: cls, **_STRUCTS[cls]}, source, position)


def parse_control_record(
    key: Buffer | None, value: Buffer | None, *, source: str | None = None, position: int = 0
) -> ControlRecord:
    """Parse a control record's key and value. An unknown type id gives ControlType.UNKNOWN and no
    value (Kafka ignores those); a truncated value raises CorruptRecordError."""
    version, type_id = parse_control_key(key, source=source, position=position)
    try:
        ctype = ControlType(type_id)
    except ValueError:
        ctype = ControlType.UNKNOWN
    if ctype is ControlType.UNKNOWN:
        return ControlRecord(version, type_id, ctype, None)
    try:
        parsed = parse_control_value(ctype, value, source=source, position=position)
    except TruncatedError as exc:  # the record is complete: a short value is corrupt, not torn
        raise CorruptRecordError(
            exc.expected, source=exc.source, position=exc.position, found=exc.found
        ) from None
    except FormatError:
        raise
    return ControlRecord(version, type_id, ctype, parsed)


# ---------------------------------------------------------------------------------------------
# Writing


def build_control_key(control_type: ControlType | int, *, version: int = CONTROL_KEY_VERSION) -> bytes:
    if int(control_type) == ControlType.UNKNOWN:
        raise ValueError("cannot serialize an UNKNOWN control record type")
    return _KEY.pack(version, int(control_type))


def build_end_txn_marker(
    committed: bool, coordinator_epoch: int, *, version: int = END_TXN_MARKER_VERSION
) -> tuple[bytes, bytes]:
    """(key, value) of a COMMIT or ABORT marker (EndTransactionMarker)."""
    ctype = ControlType.COMMIT if committed else ControlType.ABORT
    return build_control_key(ctype), _MARKER.pack(version, coordinator_epoch)


def _to_dict(st: StructType, value: Any) -> dict[str, Any]:
    """A dataclass of ``st`` -> the generic writer's dict (a None field takes the spec's default)."""
    from logdoctor.formats.internal.protocol import UNKNOWN_TAGGED, ArrayOf, StructType

    out: dict[str, Any] = {UNKNOWN_TAGGED: [{"tag": tag, "data": data} for tag, data in value.tagged_fields]}
    for f in st.fields:
        v = getattr(value, f.name)
        if isinstance(f.type, ArrayOf):
            v = [_to_dict(f.type.element, item) for item in v]
        elif isinstance(f.type, StructType):
            v = _to_dict(f.type, v)
        if v is not None:
            out[f.name] = v
    return out


def encode_control_value(value: ControlValue) -> bytes:
    """The bytes of a control record value (inverse of parse_control_value)."""
    if isinstance(value, EndTxnMarker):
        return _MARKER.pack(value.version, value.coordinator_epoch)
    if type(value) not in _STRUCTS:
        raise TypeError(f"not a control value: {value!r}")
    from logdoctor.formats.internal.layouts import newest
    from logdoctor.formats.internal.protocol import write_message

    message = newest(type(value).__name__)
    return write_message(message, _to_dict(message.struct, value), value.version)


def control_record_spec(value: ControlValue, *, timestamp: int = -1) -> RecordSpec:
    """A RecordSpec (key + value) for writer.build_record_batch(..., is_control=True)."""
    return RecordSpec(
        key=build_control_key(value.control_type), value=encode_control_value(value), timestamp=timestamp
    )
