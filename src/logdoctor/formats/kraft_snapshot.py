"""KRaft snapshots: ``__cluster_metadata-0/<20-digit end offset>-<10-digit epoch>.checkpoint`` and
the metadata dir's ``bootstrap.checkpoint``.

K: raft/src/main/java/org/apache/kafka/snapshot/Snapshots.java (file names), RecordsSnapshotWriter.java
/ RecordsSnapshotReader.java (layout), metadata/.../bootstrap/BootstrapDirectory.java.

A snapshot is a sequence of v2 record batches: a control batch whose first record is
SNAPSHOT_HEADER (from 3.9 followed in that batch by KRAFT_VERSION and KRAFT_VOTERS records), data
batches of metadata records (value = uvarint frame version, uvarint apiKey, uvarint version,
message; decoded by :mod:`logdoctor.formats.internal`), and a final control batch with
SNAPSHOT_FOOTER. The snapshot id (end offset, epoch) is in the file name, not in the bytes; the
end offset is exclusive (the snapshot holds the state up to ``end_offset - 1``).

The parse keeps every batch's raw bytes, so :func:`write_kraft_snapshot` returns the file as read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from logdoctor.errors import CorruptRecordError, FormatError
from logdoctor.formats.control import (
    ControlRecord,
    ControlType,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    parse_control_record,
)
from logdoctor.formats.records import iter_batches

SNAPSHOT_SUFFIX = ".checkpoint"
BOOTSTRAP_FILE_NAME = "bootstrap.checkpoint"
_NAME = re.compile(r"(\d{20})-(\d{10})\.checkpoint")


@dataclass(frozen=True, slots=True, order=True)
class SnapshotId:
    """OffsetAndEpoch of a snapshot: ``end_offset`` (exclusive) and the leader ``epoch``."""

    end_offset: int
    epoch: int


def parse_snapshot_name(name: str) -> SnapshotId | None:
    """The id in ``<20-digit offset>-<10-digit epoch>.checkpoint``; None for any other name."""
    m = _NAME.fullmatch(name)
    return SnapshotId(int(m.group(1)), int(m.group(2))) if m else None


def snapshot_file_name(snapshot_id: SnapshotId) -> str:
    """Snapshots.filenameFromSnapshotId: ``%020d-%010d.checkpoint``."""
    return f"{snapshot_id.end_offset:020d}-{snapshot_id.epoch:010d}{SNAPSHOT_SUFFIX}"


@dataclass(frozen=True, slots=True)
class SnapshotControl:
    offset: int
    position: int  # of its batch
    record: ControlRecord


@dataclass(frozen=True, slots=True)
class MetadataRecordBytes:
    """A metadata record as stored: its offset, timestamp and raw value (decoded elsewhere)."""

    offset: int
    timestamp: int
    value: bytes
    position: int  # of its batch


@dataclass(slots=True)
class KRaftSnapshot:
    snapshot_id: SnapshotId | None  # from the name, when given
    header: SnapshotHeaderRecord | None
    footer: SnapshotFooterRecord | None
    controls: list[SnapshotControl] = field(default_factory=list)
    records: list[MetadataRecordBytes] = field(default_factory=list)
    batch_count: int = 0
    raw_batches: list[bytes] = field(default_factory=list)

    @property
    def last_contained_log_timestamp(self) -> int | None:
        return self.header.last_contained_log_timestamp if self.header is not None else None


def parse_kraft_snapshot(
    data: bytes | memoryview, *, name: str | None = None, source: str | None = None, verify_crc: bool = True
) -> KRaftSnapshot:
    """Parse a snapshot; ``name`` (the file name) gives the snapshot id.

    Raises the typed errors of the record walk (CRC, torn tail...) and FormatError when the
    first record is not a SNAPSHOT_HEADER or the last is not a SNAPSHOT_FOOTER, as
    RecordsSnapshotReader would.
    """
    snap = KRaftSnapshot(parse_snapshot_name(name) if name else None, None, None)
    last_kind: ControlType | None = None
    first = True
    for batch in iter_batches(data, source=source, verify_crc=verify_crc):
        snap.batch_count += 1
        snap.raw_batches.append(bytes(batch.raw()))
        for record in batch.records():
            if batch.is_control:
                ctrl = parse_control_record(record.key, record.value, source=source, position=batch.position)
                snap.controls.append(SnapshotControl(record.offset, batch.position, ctrl))
                if ctrl.control_type is ControlType.SNAPSHOT_HEADER:
                    if not first:
                        raise CorruptRecordError(
                            "SNAPSHOT_HEADER only as the first record", source=source, position=batch.position
                        )
                    assert isinstance(ctrl.value, SnapshotHeaderRecord)
                    snap.header = ctrl.value
                elif ctrl.control_type is ControlType.SNAPSHOT_FOOTER:
                    assert isinstance(ctrl.value, SnapshotFooterRecord)
                    snap.footer = ctrl.value
                last_kind = ctrl.control_type
            else:
                if record.value is None:
                    raise CorruptRecordError(
                        "a metadata record value", source=source, position=batch.position, found="null"
                    )
                snap.records.append(
                    MetadataRecordBytes(record.offset, record.timestamp, bytes(record.value), batch.position)
                )
                last_kind = None
            if first and snap.header is None:
                raise FormatError(
                    "a SNAPSHOT_HEADER control record first", source=source, position=batch.position
                )
            first = False
    if first:
        raise FormatError(
            "a SNAPSHOT_HEADER control record first", source=source, position=0, found="no records"
        )
    if last_kind is not ControlType.SNAPSHOT_FOOTER:
        raise FormatError(
            "a SNAPSHOT_FOOTER control record last", source=source, position=len(data), found="end of file"
        )
    return snap


def write_kraft_snapshot(snapshot: KRaftSnapshot) -> bytes:
    """The file bytes: the batches as read, in order."""
    return b"".join(snapshot.raw_batches)


__all__ = [
    "BOOTSTRAP_FILE_NAME",
    "KRaftSnapshot",
    "MetadataRecordBytes",
    "SnapshotControl",
    "SnapshotId",
    "parse_kraft_snapshot",
    "parse_snapshot_name",
    "snapshot_file_name",
    "write_kraft_snapshot",
]
