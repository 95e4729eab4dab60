"""Control records: the records of control batches (attributes bit 5).

Key (K:clients/.../common/record/ControlRecordType.java): int16 version (0), int16 type.
Values:
- ABORT / COMMIT: EndTransactionMarker.java: int16 version, int32 coordinatorEpoch (a higher
  version is read as version 0, a negative one is corrupt);
- LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER, KRAFT_VERSION, KRAFT_VOTERS: the messages of
  K:clients/src/main/resources/common/message/{LeaderChangeMessage,SnapshotHeaderRecord,
  SnapshotFooterRecord,KRaftVersionRecord,VotersRecord}.json, all flexible (compact arrays and
  strings, tagged fields after every struct). The first field of each is an int16 ``Version``,
  which selects the schema version here; unknown tagged fields are kept so that building the
  parsed value gives the same bytes back.
"""

from __future__ import annotations

import enum
import struct
import uuid
from dataclasses import dataclass, field

from logdoctor.errors import CorruptRecordError, FormatError, TruncatedError, UnsupportedError
from logdoctor.formats.record_types import RecordSpec
from logdoctor.formats.varint import encode_unsigned_varint, read_unsigned_varint

Buffer = bytes | bytearray | memoryview
CONTROL_KEY_VERSION = 0
END_TXN_MARKER_VERSION = 0
_KEY = struct.Struct(">hh")
_MARKER = struct.Struct(">hi")


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


class _Reader:
    def __init__(self, data: Buffer, source: str | None, position: int) -> None:
        self.data = data
        self.pos = 0
        self.source = source
        self.base = position

    def _need(self, n: int, what: str) -> int:
        p = self.pos
        if n > len(self.data) - p:
            raise TruncatedError(
                f"{what} ({n} bytes)",
                source=self.source,
                position=self.base + p,
                found=f"{len(self.data) - p} bytes",
            )
        self.pos = p + n
        return p

    def fixed(self, fmt: str, what: str) -> int:
        s = struct.Struct(">" + fmt)
        p = self._need(s.size, what)
        return s.unpack_from(self.data, p)[0]

    def uvarint(self) -> int:
        value, self.pos = read_unsigned_varint(
            self.data, self.pos, source=self.source, base_position=self.base
        )
        return value

    def uuid(self) -> uuid.UUID:
        p = self._need(16, "a uuid")
        return uuid.UUID(bytes=bytes(self.data[p : p + 16]))

    def compact_string(self, what: str) -> str:
        n = self.uvarint()
        if n == 0:
            raise CorruptRecordError(
                f"a non-null string {what}", source=self.source, position=self.base + self.pos, found="null"
            )
        p = self._need(n - 1, what)
        return bytes(self.data[p : p + n - 1]).decode("utf-8", "replace")

    def compact_array_len(self, what: str) -> int:
        n = self.uvarint()
        if n == 0:
            raise CorruptRecordError(
                f"a non-null array {what}", source=self.source, position=self.base + self.pos, found="null"
            )
        if n - 1 > len(self.data) - self.pos:  # every element takes at least a byte
            raise CorruptRecordError(
                f"an array length {what} that fits",
                source=self.source,
                position=self.base + self.pos,
                found=str(n - 1),
            )
        return n - 1

    def tagged_fields(self) -> TaggedFields:
        count = self.uvarint()
        out = []
        last = -1
        for _ in range(count):
            tag_pos = self.pos
            tag = self.uvarint()
            if tag <= last:
                raise CorruptRecordError(
                    "tagged fields in increasing tag order",
                    source=self.source,
                    position=self.base + tag_pos,
                    found=f"tag {tag} after {last}",
                )
            last = tag
            size = self.uvarint()
            p = self._need(size, "a tagged field")
            out.append((tag, bytes(self.data[p : p + size])))
        return tuple(out)

    def done(self, what: str) -> None:
        if self.pos != len(self.data):
            raise CorruptRecordError(
                f"the end of the {what}",
                source=self.source,
                position=self.base + self.pos,
                found=f"{len(self.data) - self.pos} more bytes",
            )


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


def _read_version(r: _Reader, supported: range, what: str) -> int:
    version = r.fixed("h", f"the {what} version")
    if version not in supported:
        raise UnsupportedError(
            f"{what} version {supported.start}-{supported.stop - 1}",
            source=r.source,
            position=r.base,
            found=f"version {version}",
        )
    return version


def _leader_change(r: _Reader) -> LeaderChangeMessage:
    version = _read_version(r, range(0, 2), "LeaderChangeMessage")
    leader_id = r.fixed("i", "LeaderId")

    def voters() -> tuple[LeaderChangeVoter, ...]:
        out = []
        for _ in range(r.compact_array_len("Voters")):
            vid = r.fixed("i", "VoterId")
            dir_id = r.uuid() if version >= 1 else None
            out.append(LeaderChangeVoter(vid, dir_id, r.tagged_fields()))
        return tuple(out)

    v = voters()
    g = voters()
    return LeaderChangeMessage(version, leader_id, v, g, r.tagged_fields())


def _voters(r: _Reader) -> VotersRecord:
    version = _read_version(r, range(0, 1), "VotersRecord")
    voters = []
    for _ in range(r.compact_array_len("Voters")):
        vid = r.fixed("i", "VoterId")
        dir_id = r.uuid()
        endpoints = []
        for _ in range(r.compact_array_len("Endpoints")):
            name = r.compact_string("Name")
            host = r.compact_string("Host")
            port = r.fixed("H", "Port")
            endpoints.append(Endpoint(name, host, port, r.tagged_fields()))
        lo = r.fixed("h", "MinSupportedVersion")
        hi = r.fixed("h", "MaxSupportedVersion")
        feature = KRaftVersionFeature(lo, hi, r.tagged_fields())
        voters.append(Voter(vid, dir_id, tuple(endpoints), feature, r.tagged_fields()))
    return VotersRecord(version, tuple(voters), r.tagged_fields())


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
    r = _Reader(value, source, position)
    result: ControlValue
    if ctype is ControlType.LEADER_CHANGE:
        result = _leader_change(r)
    elif ctype is ControlType.SNAPSHOT_HEADER:
        version = _read_version(r, range(0, 1), "SnapshotHeaderRecord")
        ts = r.fixed("q", "LastContainedLogTimestamp")
        result = SnapshotHeaderRecord(version, ts, r.tagged_fields())
    elif ctype is ControlType.SNAPSHOT_FOOTER:
        result = SnapshotFooterRecord(
            _read_version(r, range(0, 1), "SnapshotFooterRecord"), r.tagged_fields()
        )
    elif ctype is ControlType.KRAFT_VERSION:
        version = _read_version(r, range(0, 1), "KRaftVersionRecord")
        result = KRaftVersionRecord(version, r.fixed("h", "KRaftVersion"), r.tagged_fields())
    elif ctype is ControlType.KRAFT_VOTERS:
        result = _voters(r)
    else:
        raise UnsupportedError(
            "a known control record type", source=source, position=position, found=ctype.name
        )
    r.done(ctype.name + " value")
    return result


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


def _tags(tagged: TaggedFields) -> bytes:
    out = bytearray(encode_unsigned_varint(len(tagged)))
    for tag, data in sorted(tagged):
        out += encode_unsigned_varint(tag) + encode_unsigned_varint(len(data)) + data
    return bytes(out)


def _string(s: str) -> bytes:
    b = s.encode("utf-8")
    return encode_unsigned_varint(len(b) + 1) + b


def _array(items: list[bytes]) -> bytes:
    return encode_unsigned_varint(len(items) + 1) + b"".join(items)


def encode_control_value(value: ControlValue) -> bytes:
    """The bytes of a control record value (inverse of parse_control_value)."""
    if isinstance(value, EndTxnMarker):
        return _MARKER.pack(value.version, value.coordinator_epoch)
    if isinstance(value, LeaderChangeMessage):

        def voters(vs: tuple[LeaderChangeVoter, ...]) -> bytes:
            items = []
            for v in vs:
                b = struct.pack(">i", v.voter_id)
                if value.version >= 1:
                    b += (v.voter_directory_id or uuid.UUID(int=0)).bytes
                items.append(b + _tags(v.tagged_fields))
            return _array(items)

        return (
            struct.pack(">hi", value.version, value.leader_id)
            + voters(value.voters)
            + voters(value.granting_voters)
            + _tags(value.tagged_fields)
        )
    if isinstance(value, SnapshotHeaderRecord):
        return struct.pack(">hq", value.version, value.last_contained_log_timestamp) + _tags(
            value.tagged_fields
        )
    if isinstance(value, SnapshotFooterRecord):
        return struct.pack(">h", value.version) + _tags(value.tagged_fields)
    if isinstance(value, KRaftVersionRecord):
        return struct.pack(">hh", value.version, value.kraft_version) + _tags(value.tagged_fields)
    if isinstance(value, VotersRecord):
        items = []
        for v in value.voters:
            eps = [
                _string(e.name) + _string(e.host) + struct.pack(">H", e.port) + _tags(e.tagged_fields)
                for e in v.endpoints
            ]
            f = v.kraft_version_feature
            items.append(
                struct.pack(">i", v.voter_id)
                + v.voter_directory_id.bytes
                + _array(eps)
                + struct.pack(">hh", f.min_supported_version, f.max_supported_version)
                + _tags(f.tagged_fields)
                + _tags(v.tagged_fields)
            )
        return struct.pack(">h", value.version) + _array(items) + _tags(value.tagged_fields)
    raise TypeError(f"not a control value: {value!r}")


def control_record_spec(value: ControlValue, *, timestamp: int = -1) -> RecordSpec:
    """A RecordSpec (key + value) for writer.build_record_batch(..., is_control=True)."""
    return RecordSpec(
        key=build_control_key(value.control_type), value=encode_control_value(value), timestamp=timestamp
    )
