"""The remote tier compared three ways: the remote log metadata, the store's objects, the local log.

One comparison for every caller (the scan's findings, the census, the export's read-once check): what
the replay of ``__remote_log_metadata`` (:mod:`logdoctor.logdir.remote_metadata`) says exists, what a
listing of the store holds (:mod:`logdoctor.logdir.store_listing`: a direct listing or an S3 Inventory
report; keys parsed by :func:`logdoctor.logdir.remote_layouts.parse_object_key`, both layouts), and the
partition's local leader-epoch lineage. Pure data in, data out: no finding, no I/O.

- :class:`StoreIndex` groups listed objects by partition (topic id, partition) and segment id;
- :func:`audit_partition` compares one partition: objects no live segment names (leaked), finished
  segments whose objects are missing, overlapping finished segments (a segment stored twice: same
  offsets under another id), segments outside the leader-epoch lineage and epoch breaks between
  consecutive segments (KAFKA-15168), and unfinished uploads with the objects they left;
- :func:`dangling_uploads`: which COPY_SEGMENT_STARTED segments are dangling rather than in progress
  (the bound below);
- :func:`readable_segments` and :func:`within_leader_epochs` (which segment the broker reads, the
  leader-epoch lineage rule) are :mod:`logdoctor.logdir.remote_lineage`'s, shared with the read plan:
  of two overlapping finished segments, the one the broker does not read is named second.

The objects a segment needs: LocalTieredStorage writes ``.log``, ``.index``, ``.timeindex``,
``.snapshot``, ``.leader_epoch_checkpoint`` (and ``.txnindex`` when the segment has one)
(K:storage/src/test/.../remote/storage/RemoteLogSegmentFileset.java); Aiven's plugin ``.log``,
``.indexes`` and ``.rsm-manifest`` (RemoteStorageManager.copyLogSegmentData). A fetch needs the segment
and its offset index (K:core/.../log/remote/RemoteLogManager.java read, RemoteIndexCache), and Aiven's
every read needs the manifest: those are the ones whose absence loses data.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from logdoctor.logdir.remote_layouts import parse_object_key
from logdoctor.logdir.remote_lineage import first_epoch, last_epoch, readable_segments, within_leader_epochs
from logdoctor.logdir.remote_metadata import (
    RemoteLogMetadata,
    RemotePartition,
    RemoteSegment,
    SegmentState,
    TopicIdPartition,
)
from logdoctor.logdir.store_listing import StoreObject

__all__ = [
    "ALL",
    "DANGLING_AFTER_MS",
    "REQUIRED",
    "EpochBreak",
    "PartitionAudit",
    "PartitionObjects",
    "SegmentObjects",
    "StoreIndex",
    "audit",
    "audit_partition",
    "dangling_uploads",
    "lineage_audit",
    "newest_event_ms",
    "readable_segments",
    "within_leader_epochs",
]

#: an upload left in COPY_SEGMENT_STARTED is dangling, not in progress, once the remote log metadata
#: holds an event this much newer than its start (the copy task runs every
#: remote.log.manager.task.interval.ms, 30 s by default, and one segment's copy takes seconds to minutes)
DANGLING_AFTER_MS = 3_600_000
#: in :attr:`PartitionAudit.missing`: no object of the segment at all
ALL = "all"
#: per layout, the objects without which the broker cannot read the segment
REQUIRED = {"kafka-local": ("log", "index", "timeindex"), "aiven": ("log", "indexes", "rsm-manifest")}


@dataclass(slots=True)
class SegmentObjects:
    """The objects of one remote segment id in the store (by suffix)."""

    layout: str
    start_offset: int
    segment_id: str
    files: dict[str, StoreObject] = field(default_factory=dict)

    @property
    def bytes(self) -> int:
        return sum(o.size for o in self.files.values())

    @property
    def keys(self) -> list[str]:
        return sorted(o.key for o in self.files.values())

    def missing(self, log_size: int | None = None) -> list[str]:
        """The suffixes a read needs that the store lacks; with ``log_size`` (the size the remote log
        metadata records), a Kafka-layout ``.log`` object shorter than that too, as :func:`short_log` words
        it (LocalTieredStorage copies the segment file as it is: RemoteLogManager records
        ``segment.log().sizeInBytes()`` in the COPY_SEGMENT_STARTED event; Aiven's object is transformed).
        A read of the segment stops at the end of the object: its last batches are not there (issue 48)."""
        out = [s for s in REQUIRED[self.layout] if s not in self.files]
        log = self.files.get("log")
        if self.layout == "kafka-local" and log is not None and log_size is not None and log.size < log_size:
            out.append(short_log(log.size, log_size))
        return out


def short_log(listed: int, recorded: int) -> str:
    """A ``missing`` entry for a Kafka-layout ``.log`` object shorter than the metadata says (issue 48)."""
    return f"the end of .log ({listed:,} bytes listed where the remote log metadata records {recorded:,})"


def missing_what(entry: str) -> str:
    """How a finding names a ``missing`` entry: ``.index``, or ``short_log``'s words."""
    return entry if entry.startswith("the end of .log") else f".{entry}"


def missing_key(entry: str) -> str:
    """The object suffix of a ``missing`` entry (``short_log``'s included)."""
    return "log" if entry.startswith("the end of .log") else entry


@dataclass(slots=True)
class PartitionObjects:
    topic: str
    partition: int
    topic_id: str
    layout: str
    folder: str  # the partition's folder (the key of any object, up to the file name)
    segments: dict[str, SegmentObjects] = field(default_factory=dict)

    @property
    def topic_id_partition(self) -> TopicIdPartition:
        return TopicIdPartition(self.topic_id, self.topic, self.partition)


@dataclass(slots=True)
class StoreIndex:
    """A store listing grouped by partition and segment; objects of neither layout are counted only."""

    source: str
    partitions: dict[tuple[str, int], PartitionObjects] = field(default_factory=dict)
    other_objects: int = 0
    other_bytes: int = 0
    objects: int = 0

    @classmethod
    def build(cls, objects: Iterable[StoreObject], source: str) -> StoreIndex:
        out = cls(source)
        for obj in objects:
            out.add(obj)
        return out

    def add(self, obj: StoreObject) -> None:
        self.objects += 1
        k = parse_object_key(obj.key)
        if k is None:
            self.other_objects += 1
            self.other_bytes += obj.size
            return
        po = self.partitions.get((k.topic_id, k.partition))
        if po is None:
            folder = obj.key[: obj.key.rfind("/")]
            po = self.partitions[(k.topic_id, k.partition)] = PartitionObjects(
                k.topic, k.partition, k.topic_id, k.layout, folder
            )
        seg = po.segments.get(k.segment_id)
        if seg is None:
            seg = po.segments[k.segment_id] = SegmentObjects(k.layout, k.start_offset, k.segment_id)
        seg.files[k.suffix] = obj

    def partition(self, topic_id: str | None, partition: int) -> PartitionObjects | None:
        return None if topic_id is None else self.partitions.get((topic_id, partition))


@dataclass(frozen=True, slots=True)
class EpochBreak:
    """A finished segment whose leader epochs do not follow the partition's lineage (``case``:
    "outside-lineage": not within the local leader-epoch-checkpoint as RemoteLogManager checks it;
    "between-segments": an epoch lower than the previous segment's last one; "into-local": the local
    log starts at an epoch lower than the last remote segment's)."""

    case: str
    segment: RemoteSegment
    previous: RemoteSegment | None
    reason: str


@dataclass(slots=True)
class PartitionAudit:
    topic_id_partition: TopicIdPartition
    metadata_partition: int | None
    #: segment ids in the store that no live metadata segment names, with why (no event at all,
    #: DELETE_SEGMENT_FINISHED, the partition deleted)
    leaked: list[tuple[SegmentObjects, str]] = field(default_factory=list)
    #: finished segments whose objects are missing (the suffixes missing; all of them: no object at all)
    missing: list[tuple[RemoteSegment, list[str]]] = field(default_factory=list)
    #: pairs of finished segments whose offsets overlap (same offsets: a segment stored twice)
    overlaps: list[tuple[RemoteSegment, RemoteSegment]] = field(default_factory=list)
    epoch_breaks: list[EpochBreak] = field(default_factory=list)
    #: COPY_SEGMENT_STARTED segments and their objects (None: none in the store)
    unfinished: list[tuple[RemoteSegment, SegmentObjects | None]] = field(default_factory=list)

    @property
    def leaked_bytes(self) -> int:
        return sum(s.bytes for s, _why in self.leaked)

    @property
    def clean(self) -> bool:
        return not (self.leaked or self.missing or self.overlaps or self.epoch_breaks)


def audit_partition(
    rp: RemotePartition | None,
    objects: PartitionObjects | None,
    *,
    lineage: Iterable[tuple[int, int]] | None = None,
    log_end_offset: int | None = None,
    local_log_start_offset: int | None = None,
    log_start_offset: int | None = None,
) -> PartitionAudit:
    """Compare one partition's metadata (``rp``; None: no event of it in metadata that covers it) with
    its objects (None: none listed) and its local log (``lineage``: its leader-epoch-checkpoint entries;
    None: not here). Segments ending below ``log_start_offset`` are the expiration task's business and
    take no part in overlaps or the lineage."""
    tip = (
        rp.topic_id_partition if rp is not None else objects.topic_id_partition  # type: ignore[union-attr]
    )
    out = PartitionAudit(tip, rp.metadata_partition if rp is not None else None)
    segments = rp.segments if rp is not None and not rp.deleted else {}
    listed = objects.segments if objects is not None else {}
    for seg_id, so in sorted(listed.items(), key=lambda kv: (kv[1].start_offset, kv[0])):
        seg = segments.get(seg_id)
        if rp is not None and rp.deleted:
            out.leaked.append(
                (so, "the partition was deleted from the remote tier (DELETE_PARTITION_FINISHED)")
            )
        elif seg is None:
            out.leaked.append((so, "no event of the remote log metadata names it"))
        elif seg.state is SegmentState.DELETE_SEGMENT_FINISHED:
            out.leaked.append((so, "its deletion finished (DELETE_SEGMENT_FINISHED)"))
    if rp is None or rp.deleted:
        return out
    for s in rp.copied:
        so = listed.get(s.segment_id)
        miss = [ALL] if so is None else so.missing(s.size)
        if miss:
            out.missing.append((s, miss))
    for s in rp.unfinished:
        out.unfinished.append((s, listed.get(s.segment_id)))
    out.overlaps, out.epoch_breaks = lineage_audit(
        rp,
        lineage=lineage,
        log_end_offset=log_end_offset,
        local_log_start_offset=local_log_start_offset,
        log_start_offset=log_start_offset,
    )
    return out


def lineage_audit(
    rp: RemotePartition,
    *,
    lineage: Iterable[tuple[int, int]] | None = None,
    log_end_offset: int | None = None,
    local_log_start_offset: int | None = None,
    log_start_offset: int | None = None,
) -> tuple[list[tuple[RemoteSegment, RemoteSegment]], list[EpochBreak]]:
    """The overlapping finished segments (pairs, the one the broker reads first) and the breaks of the
    leader-epoch lineage of one partition's remote tier: the one rule of the scan and the census (which
    gathers each partition's metadata rows and its replica's lineage into one task to run it). Segments
    ending below ``log_start_offset`` are the expiration task's business and take no part."""
    overlaps: list[tuple[RemoteSegment, RemoteSegment]] = []
    breaks: list[EpochBreak] = []
    floor = log_start_offset if log_start_offset is not None else -1
    copied = [s for s in rp.copied if s.end_offset >= floor]
    lin = list(lineage) if lineage is not None else []
    read = {s.segment_id for s in readable_segments(rp, lin, log_end_offset)}
    reach: RemoteSegment | None = None
    for s in copied:
        if reach is not None and s.start_offset <= reach.end_offset:
            # the one the broker does not read second (the one the read plan names as not read)
            pair = (s, reach) if reach.segment_id not in read and s.segment_id in read else (reach, s)
            overlaps.append(pair)
        if reach is None or s.end_offset > reach.end_offset:
            reach = s
    prev: RemoteSegment | None = None
    for s in copied:
        why = within_leader_epochs(s, lin, log_end_offset) if lin else None
        if why is not None:
            breaks.append(EpochBreak("outside-lineage", s, None, why))
        elif prev is not None:
            pl, sf = last_epoch(prev), first_epoch(s)
            if pl is not None and sf is not None and sf < pl and s.start_offset > prev.end_offset:
                breaks.append(
                    EpochBreak(
                        "between-segments",
                        s,
                        prev,
                        f"it starts at epoch {sf}, below epoch {pl} of the segment before it",
                    )
                )
        prev = s
    off_lineage = {b.segment.segment_id for b in breaks if b.case == "outside-lineage"}
    in_lineage = [s for s in copied if s.segment_id not in off_lineage]
    if lin and in_lineage and local_log_start_offset is not None:
        last = max(in_lineage, key=lambda s: s.end_offset)
        le = last_epoch(last)
        local_epoch = max((e for e, o in lin if o <= local_log_start_offset), default=None)
        if le is not None and local_epoch is not None and local_epoch < le:
            breaks.append(
                EpochBreak(
                    "into-local",
                    last,
                    None,
                    f"the local log starts at {local_log_start_offset} in epoch {local_epoch}, below the "
                    f"last remote segment's epoch {le}",
                )
            )
    return overlaps, breaks


_COPY_STATES = (SegmentState.COPY_SEGMENT_STARTED.name, SegmentState.COPY_SEGMENT_FINISHED.name)


def newest_event_ms(partitions: Iterable[RemotePartition]) -> int | None:
    """The newest event timestamp of the remote log metadata read (None: no event): the time the
    metadata shows, which a dangling upload is measured against (never the machine's clock)."""
    return max(
        (
            ev.event_timestamp_ms
            for rp in partitions
            for ev in (*(e for seg in rp.segments.values() for e in seg.events), *rp.delete_events)
        ),
        default=None,
    )


def dangling_uploads(rp: RemotePartition, newest_ms: int | None) -> list[tuple[RemoteSegment, str]]:
    """The partition's COPY_SEGMENT_STARTED segments that are not a copy in progress, with why.

    Kafka itself tells the two apart only in memory (RemoteLogManager ``segmentIdsBeingCopied``; since
    KAFKA-17062 a copy that fails is deleted at once, and the size retention counts only finished
    segments: "either they are being copied ... or they are dangling"). Offline, an upload is dangling
    when the metadata shows its copy ended: a later copy event of the same partition (its leader's
    RLMCopyTask copies the partition's segments one at a time, in offset order:
    K:core/.../log/remote/RemoteLogManager.java copyLogSegmentsToRemote), or an event anywhere in the
    metadata read at least :data:`DANGLING_AFTER_MS` newer than its start (``newest_ms``:
    :func:`newest_event_ms`). The newest upload of an idle cluster's partition is not flagged."""
    out: list[tuple[RemoteSegment, str]] = []
    unfinished = rp.unfinished
    if not unfinished:
        return out
    last_copy = max(
        (e.offset for s in rp.segments.values() for e in s.events if e.state in _COPY_STATES), default=-1
    )
    for seg in unfinished:
        ev = seg.first_event
        if ev.offset < last_copy:
            out.append((seg, f"a later upload of {rp.topic_id_partition.name} was recorded after it"))
        elif newest_ms is not None and newest_ms - ev.event_timestamp_ms >= DANGLING_AFTER_MS:
            age = (newest_ms - ev.event_timestamp_ms) / 3_600_000
            out.append(
                (seg, f"the remote log metadata holds events {age:.1f} h newer than its start (an upload "
                 f"left more than {DANGLING_AFTER_MS // 60_000} min is not in progress)")
            )  # fmt: skip
    return out


def audit(metadata: RemoteLogMetadata, index: StoreIndex) -> dict[TopicIdPartition, PartitionAudit]:
    """Every partition the metadata or the listing knows whose events the metadata covers (a partition
    whose metadata partition is not among the inputs is compared with nothing: never leaked)."""
    keys: set[tuple[str, int]] = set(index.partitions)
    keys.update((t.topic_id, t.partition) for t in metadata.partitions)
    by_id = {(t.topic_id, t.partition): rp for t, rp in metadata.partitions.items()}
    audits = (audit_partition(by_id.get(k), index.partition(*k)) for k in sorted(keys) if metadata.covers(*k))
    return {a.topic_id_partition: a for a in audits}
