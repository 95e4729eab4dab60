"""The kind of a log-dir file, from its name alone (as DumpLogSegments decides it)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from logdoctor.logdir import names


class FileKind(enum.StrEnum):
    LOG = "log"
    KRAFT_SNAPSHOT = "kraft-snapshot"
    OFFSET_INDEX = "offset-index"
    TIME_INDEX = "time-index"
    TXN_INDEX = "txn-index"
    PRODUCER_SNAPSHOT = "producer-snapshot"
    OFFSET_CHECKPOINT = "offset-checkpoint"
    LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
    PARTITION_METADATA = "partition-metadata"
    META_PROPERTIES = "meta-properties"
    QUORUM_STATE = "quorum-state"
    CLEAN_SHUTDOWN = "clean-shutdown"
    LOCK = "lock"


_SUFFIX_KINDS = {
    ".log": FileKind.LOG,
    ".index": FileKind.OFFSET_INDEX,
    ".timeindex": FileKind.TIME_INDEX,
    ".txnindex": FileKind.TXN_INDEX,
    ".snapshot": FileKind.PRODUCER_SNAPSHOT,
    ".checkpoint": FileKind.KRAFT_SNAPSHOT,
}
_FIXED_KINDS = {
    **dict.fromkeys(names.OFFSET_CHECKPOINT_FILES, FileKind.OFFSET_CHECKPOINT),
    names.LEADER_EPOCH_CHECKPOINT_FILE: FileKind.LEADER_EPOCH_CHECKPOINT,
    names.PARTITION_METADATA_FILE: FileKind.PARTITION_METADATA,
    names.META_PROPERTIES_FILE: FileKind.META_PROPERTIES,
    names.QUORUM_STATE_FILE: FileKind.QUORUM_STATE,
    names.CLEAN_SHUTDOWN_FILE: FileKind.CLEAN_SHUTDOWN,
    names.LOCK_FILE: FileKind.LOCK,
    names.BOOTSTRAP_CHECKPOINT_FILE: FileKind.KRAFT_SNAPSHOT,
}
_STATE_SUFFIXES = (".deleted", ".cleaned", ".swap", ".part")


@dataclass(frozen=True, slots=True)
class FileInfo:
    kind: FileKind
    base_offset: int | None  # segment files: from the 20 digits; KRaft snapshots: end offset
    epoch: int | None = None  # KRaft snapshots


def classify(name: str) -> FileInfo | None:
    """The kind of a log-dir file from its name alone (None when unknown), like DumpLogSegments."""
    if name.endswith(names.TMP_SUFFIX) and name[: -len(names.TMP_SUFFIX)] in _FIXED_KINDS:
        name = name[: -len(names.TMP_SUFFIX)]  # an interrupted atomic write: same format
    if name in _FIXED_KINDS:
        return FileInfo(_FIXED_KINDS[name], None)
    snap = names.parse_kraft_snapshot(name)
    if snap is not None:
        return FileInfo(FileKind.KRAFT_SNAPSHOT, snap[0].offset, snap[0].epoch)
    seg = names.parse_segment_file(name)
    if seg is not None:
        return FileInfo(_SUFFIX_KINDS[seg.file_type.value], seg.base_offset)
    stem = next((name.removesuffix(state) for state in _STATE_SUFFIXES if name.endswith(state)), name)
    dot = stem.rfind(".")
    kind = _SUFFIX_KINDS.get(stem[dot:]) if dot >= 0 else None
    if kind is None:
        return None
    digits = stem[:dot].split("-", 1)[0]
    return FileInfo(kind, int(digits) if digits.isdigit() else None)
