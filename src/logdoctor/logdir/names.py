"""Naming rules of a Kafka log dir: what every file and folder name means.

Sources (read, not copied):
- K:storage/src/main/java/org/apache/kafka/storage/internals/log/LogFileUtils.java (segment suffixes,
  20-digit base offsets, .deleted/.cleaned/.swap)
- K:core/src/main/scala/kafka/log/LocalLog.scala parseTopicPartitionName (the partition number is after
  the LAST dash; ``-delete``/``-future``/``-stray`` folders are ``<topic>-<p>.<uuid><suffix>``)
- K:core/src/main/scala/kafka/log/LogManager.scala (``.lock``, checkpoint names, skipped folders)
- K:clients/src/main/java/org/apache/kafka/common/internals/Topic.java (legal topic names)
- K:raft/src/main/java/org/apache/kafka/snapshot/Snapshots.java (KRaft snapshot names)

Nothing here raises on a strange name: anything not recognised is classified ``UNKNOWN``.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

# --- topic names (Topic.java) -------------------------------------------------------------------

MAX_TOPIC_LENGTH = 249
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")


def topic_name_problem(topic: str) -> str | None:
    """Why Kafka would reject ``topic`` as a topic name, or None when it is legal."""
    if not topic:
        return "the empty string is not allowed"
    if topic in (".", ".."):
        return f"'{topic}' is not allowed"
    if len(topic) > MAX_TOPIC_LENGTH:
        return f"longer than the max allowed length {MAX_TOPIC_LENGTH}"
    if not _LEGAL_TOPIC.fullmatch(topic):
        return "contains a character other than ASCII alphanumerics, '.', '_' and '-'"
    return None


def is_legal_topic(topic: str) -> bool:
    return topic_name_problem(topic) is None


# --- fixed file and folder names ----------------------------------------------------------------

LOCK_FILE = ".lock"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
META_PROPERTIES_FILE = "meta.properties"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"  # high watermarks
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
OFFSET_CHECKPOINT_FILES = (
    RECOVERY_POINT_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CLEANER_OFFSET_CHECKPOINT,
)
BOOTSTRAP_CHECKPOINT_FILE = "bootstrap.checkpoint"
REMOTE_LOG_INDEX_CACHE_DIR = "remote-log-index-cache"
METADATA_TOPIC = "__cluster_metadata"
CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
#: Schema Registry's DEK registry store (dek-registry ``DekRegistryConfig.java`` ``dek.registry.topic``): the
#: KEKs and encrypted DEKs of client-side field-level encryption; internal (left out of exports unless named)
DEK_REGISTRY_TOPIC = "_dek_registry_keys"
#: topics that are internal without Kafka's ``__`` prefix
INTERNAL_TOPICS_UNPREFIXED = (DEK_REGISTRY_TOPIC,)
LEADER_EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"
PARTITION_METADATA_FILE = "partition.metadata"
QUORUM_STATE_FILE = "quorum-state"
TMP_SUFFIX = ".tmp"  # CheckpointFile / PropertiesUtils / FileQuorumStateStore write <name>.tmp then move

# logdoctor's own folders, never a log dir (issue 32): a backup dir of repair, move-partition or
# sync-replica (its journal and README beside staged/, files/, tails/; by default
# <parent of the log dir>/.logdoctor-backups/<log dir name>.logdoctor-backup-<UTC time, ns>Z-<pid>: a
# hidden folder, so that no glob of log dirs (kafka-logs-*, broker-*/kafka-logs-*) matches it, issue 59)
# and an export's output folder (_SUCCESS and its part files)
BACKUPS_FOLDER = ".logdoctor-backups"
BACKUP_JOURNAL_FILE = "journal.jsonl"
BACKUP_README_FILE = "README.txt"
BACKUP_DIR_INFIX = ".logdoctor-backup-"
RECORDS_DIR_INFIX = ".logdoctor-records-"  # the records a repair's truncation removed, beside its backup
EXPORT_SUCCESS_FILE = "_SUCCESS"
LOGDOCTOR_MARKER_FILES = (BACKUP_JOURNAL_FILE, BACKUP_README_FILE, EXPORT_SUCCESS_FILE)


def logdoctor_output(file_names: Iterable[str]) -> str | None:
    """Why a folder holding the files ``file_names`` is one logdoctor wrote, by its marker files alone (a
    backup dir's journal and README, an export's ``_SUCCESS``), else None: an input of a command that is
    one is left out with a note (:func:`logdoctor.logdir.discovery.leave_out_own`)."""
    files = set(file_names)
    if BACKUP_JOURNAL_FILE in files and BACKUP_README_FILE in files:
        return f"a logdoctor backup dir (it holds {BACKUP_JOURNAL_FILE} and {BACKUP_README_FILE})"
    if EXPORT_SUCCESS_FILE in files:
        return f"a logdoctor export's output (it holds {EXPORT_SUCCESS_FILE})"
    return None


def logdoctor_folder(name: str, file_names: Iterable[str]) -> str | None:
    """Why the folder ``name`` holding the files ``file_names`` is one logdoctor wrote (a backup dir or
    an export's output), else None: never a log dir, nor searched for one."""
    if BACKUP_DIR_INFIX in name or RECORDS_DIR_INFIX in name or name == BACKUPS_FOLDER:
        return "a logdoctor backup dir (by its name)"
    return logdoctor_output(file_names)


# --- partition folders (LocalLog.parseTopicPartitionName) ----------------------------------------


class DirKind(enum.StrEnum):
    LOG = "log"  # <topic>-<p>
    DELETE = "delete"  # <topic>-<p>.<uuid>-delete: scheduled for async deletion
    FUTURE = "future"  # <topic>-<p>.<uuid>-future: KIP-113 move target being filled
    STRAY = "stray"  # <topic>-<p>.<uuid>-stray: partition the controller no longer assigns here


_SUFFIXED_DIR = re.compile(r"^(\S+)-(\S+)\.(\S+)-(delete|future|stray)$")
_SUFFIXED_ENDS = tuple(f"-{k.value}{nl}" for k in DirKind if k is not DirKind.LOG for nl in ("", "\n"))
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class PartitionDirName:
    topic: str
    partition: int
    kind: DirKind
    uuid: str | None = None  # the unique id of -delete/-future/-stray folders

    @property
    def name(self) -> str:
        """The folder name (round trip of :func:`parse_partition_dir`)."""
        base = f"{self.topic}-{self.partition}"
        if self.kind is DirKind.LOG:
            return base
        return f"{base}.{self.uuid}-{self.kind.value}"

    @property
    def is_metadata(self) -> bool:
        """The KRaft metadata log (``__cluster_metadata-0``): LogManager skips it when loading logs."""
        return self.topic == METADATA_TOPIC


def format_partition_dir(
    topic: str, partition: int, kind: DirKind = DirKind.LOG, uuid: str | None = None
) -> str:
    return PartitionDirName(topic, partition, DirKind(kind), uuid).name


def parse_partition_dir(name: str) -> PartitionDirName | None:
    """Parse a folder name the way the broker does; None when the broker would reject it.

    The broker takes the partition after the last dash (topics may contain dashes), and for
    suffixed folders first strips everything from the last dot. It fails startup on a name it
    cannot parse; we return None so the caller can report it as an orphan.
    """
    if not name or "-" not in name:
        return None
    kind = DirKind.LOG
    uuid: str | None = None
    # the pattern ends with the kind (``$`` also before a last newline): no other name can match it
    m = _SUFFIXED_DIR.match(name) if name.endswith(_SUFFIXED_ENDS) else None
    if m is not None:
        kind = DirKind(m.group(4))
        stem, _, tail = name.rpartition(".")
        uuid = tail[: -len(kind.value) - 1]
    elif name.endswith(("-delete", "-future", "-stray")):
        return None
    else:
        stem = name
    topic, _, number = stem.rpartition("-")
    if not topic or not (number.isascii() and number.isdigit()):  # [0-9]+, without a regex (50,000 names)
        return None
    partition = int(number)
    if partition > _INT32_MAX:
        return None
    if kind is DirKind.LOG and f"{topic}-{partition}" != name:
        return None  # leading zeros (e.g. "t-01"): Java would accept it, but no broker writes it
    return PartitionDirName(topic, partition, kind, uuid)


# --- entries of the log dir root ------------------------------------------------------------------


class RootEntryKind(enum.StrEnum):
    PARTITION = "partition"  # any topic-partition folder (see .partition.kind)
    META_PROPERTIES = "meta.properties"
    OFFSET_CHECKPOINT = "offset-checkpoint"  # one of OFFSET_CHECKPOINT_FILES
    LOCK = "lock"
    CLEAN_SHUTDOWN = "clean-shutdown"
    BOOTSTRAP_CHECKPOINT = "bootstrap-checkpoint"  # KRaft controller bootstrap metadata
    REMOTE_LOG_INDEX_CACHE = "remote-log-index-cache"
    TMP = "tmp"  # <known file>.tmp left by an interrupted atomic write
    UNKNOWN = "unknown"


_ROOT_FILES = {
    META_PROPERTIES_FILE: RootEntryKind.META_PROPERTIES,
    LOCK_FILE: RootEntryKind.LOCK,
    CLEAN_SHUTDOWN_FILE: RootEntryKind.CLEAN_SHUTDOWN,
    BOOTSTRAP_CHECKPOINT_FILE: RootEntryKind.BOOTSTRAP_CHECKPOINT,
    **dict.fromkeys(OFFSET_CHECKPOINT_FILES, RootEntryKind.OFFSET_CHECKPOINT),
}


@dataclass(frozen=True, slots=True)
class RootEntry:
    name: str
    kind: RootEntryKind
    partition: PartitionDirName | None = None


def classify_root_entry(name: str, is_dir: bool) -> RootEntry:
    """Classify one entry of a log dir's root folder (never raises)."""
    if is_dir:
        if name == REMOTE_LOG_INDEX_CACHE_DIR:
            return RootEntry(name, RootEntryKind.REMOTE_LOG_INDEX_CACHE)
        parsed = parse_partition_dir(name)
        if parsed is not None:
            return RootEntry(name, RootEntryKind.PARTITION, parsed)
        return RootEntry(name, RootEntryKind.UNKNOWN)
    kind = _ROOT_FILES.get(name)
    if kind is not None:
        return RootEntry(name, kind)
    if name.endswith(TMP_SUFFIX) and name[: -len(TMP_SUFFIX)] in _ROOT_FILES:
        return RootEntry(name, RootEntryKind.TMP)
    return RootEntry(name, RootEntryKind.UNKNOWN)


# --- files of a partition folder ------------------------------------------------------------------


class SegmentFileType(enum.StrEnum):
    LOG = ".log"
    INDEX = ".index"
    TIMEINDEX = ".timeindex"
    TXNINDEX = ".txnindex"
    SNAPSHOT = ".snapshot"  # producer state snapshot (named by offset like segment files)


class FileState(enum.StrEnum):
    LIVE = ""
    DELETED = ".deleted"  # renamed for async deletion (retention, truncation)
    CLEANED = ".cleaned"  # being written by the log cleaner
    SWAP = ".swap"  # cleaned/split result about to replace the originals


class SegmentFileName(NamedTuple):
    """``(base_offset, suffix)`` of a segment file; suffix is everything after the digits."""

    base_offset: int
    suffix: str

    @property
    def file_type(self) -> SegmentFileType:
        return _SUFFIXES[self.suffix][0]

    @property
    def state(self) -> FileState:
        return _SUFFIXES[self.suffix][1]


_INT64_MAX = 2**63 - 1
# every legal suffix -> (file type, state); .snapshot only live or .deleted
_SUFFIXES: dict[str, tuple[SegmentFileType, FileState]] = {
    t.value + st.value: (t, st)
    for t in SegmentFileType
    for st in FileState
    if t is not SegmentFileType.SNAPSHOT or st in (FileState.LIVE, FileState.DELETED)
}
_SEGMENT_FILE = re.compile(
    r"^([0-9]{20})(\.(?:log|index|timeindex|txnindex)(?:\.deleted|\.cleaned|\.swap)?|\.snapshot(?:\.deleted)?)$"
)
_KRAFT_SNAPSHOT = re.compile(r"^([0-9]{20})-([0-9]{10})(?:-[0-9]+)?\.checkpoint(\.part|\.deleted)?$")


def segment_file_name(base_offset: int, file_type: SegmentFileType | str, state: FileState | str = "") -> str:
    """The file name Kafka gives (LogFileUtils.filenamePrefixFromOffset: 20 digits, zero padded)."""
    return f"{base_offset:020d}{SegmentFileType(file_type).value}{FileState(state).value}"


def match_segment_file(name: str) -> tuple[int, SegmentFileType, FileState] | None:
    """Fast path of :func:`parse_segment_file` for listing big folders: a plain tuple or None."""
    m = _SEGMENT_FILE.match(name)
    if m is None:
        return None
    base = int(m.group(1))
    if base > _INT64_MAX:
        return None
    ft, state = _SUFFIXES[m.group(2)]
    return base, ft, state


def parse_segment_file(name: str) -> SegmentFileName | None:
    """``00000000000000000042.index.swap`` -> (42, ".index.swap"); None for anything else."""
    found = match_segment_file(name)
    return None if found is None else SegmentFileName(found[0], found[1].value + found[2].value)


class SnapshotId(NamedTuple):
    offset: int
    epoch: int


def kraft_snapshot_file_name(offset: int, epoch: int) -> str:
    return f"{offset:020d}-{epoch:010d}.checkpoint"


def parse_kraft_snapshot(name: str) -> tuple[SnapshotId, FileState | None] | None:
    """``<20-digit offset>-<10-digit epoch>.checkpoint`` (Snapshots.java).

    Returns (id, state): state LIVE, DELETED for ``.checkpoint.deleted``, None for a partial
    ``.checkpoint.part`` temp file. None when the name is not a snapshot.
    """
    m = _KRAFT_SNAPSHOT.match(name)
    if m is None:
        return None
    sid = SnapshotId(int(m.group(1)), int(m.group(2)))
    tail = m.group(3)
    if tail == ".part":
        return sid, None
    return sid, FileState.DELETED if tail == ".deleted" else FileState.LIVE


class PartitionFileKind(enum.StrEnum):
    SEGMENT_FILE = "segment-file"  # .log/.index/.timeindex/.txnindex (any state)
    PRODUCER_SNAPSHOT = "producer-snapshot"
    LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
    PARTITION_METADATA = "partition.metadata"
    QUORUM_STATE = "quorum-state"
    KRAFT_SNAPSHOT = "kraft-snapshot"
    KRAFT_SNAPSHOT_PARTIAL = "kraft-snapshot-partial"
    TMP = "tmp"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class PartitionFile:
    name: str
    kind: PartitionFileKind
    base_offset: int | None = None  # segment files, producer snapshots, KRaft snapshots (end offset)
    file_type: SegmentFileType | None = None
    state: FileState = FileState.LIVE
    epoch: int | None = None  # KRaft snapshots


_PARTITION_FIXED = {
    LEADER_EPOCH_CHECKPOINT_FILE: PartitionFileKind.LEADER_EPOCH_CHECKPOINT,
    PARTITION_METADATA_FILE: PartitionFileKind.PARTITION_METADATA,
    QUORUM_STATE_FILE: PartitionFileKind.QUORUM_STATE,
}


def classify_partition_file(name: str) -> PartitionFile:
    """Classify one file of a partition folder (never raises)."""
    seg = match_segment_file(name)
    if seg is not None:
        base, ft, state = seg
        snapshot = ft is SegmentFileType.SNAPSHOT
        kind = PartitionFileKind.PRODUCER_SNAPSHOT if snapshot else PartitionFileKind.SEGMENT_FILE
        return PartitionFile(name, kind, base, ft, state)
    fixed = _PARTITION_FIXED.get(name)
    if fixed is not None:
        return PartitionFile(name, fixed)
    snap = parse_kraft_snapshot(name)
    if snap is not None:
        sid, state = snap
        if state is None:
            return PartitionFile(name, PartitionFileKind.KRAFT_SNAPSHOT_PARTIAL, sid.offset, epoch=sid.epoch)
        return PartitionFile(name, PartitionFileKind.KRAFT_SNAPSHOT, sid.offset, state=state, epoch=sid.epoch)
    if name.endswith(TMP_SUFFIX) and name[: -len(TMP_SUFFIX)] in _PARTITION_FIXED:
        return PartitionFile(name, PartitionFileKind.TMP)
    return PartitionFile(name, PartitionFileKind.UNKNOWN)
