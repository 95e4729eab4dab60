"""The remote tier compared three ways: the remote log metadata, the store's objects, the local log.

One comparison for every caller (the scan's findings, the census, the export's read-once check): what
the replay of ``__remote_log_metadata`` (:mod:`logdoctor.logdir.remote_metadata`) says exists, what a
listing of the store holds (:mod:`logdoctor.logdir.store_listing`: a direct listing or an S3 Inventory
report; keys parsed by :func:`logdoctor.logdir.remote_tier.parse_object_key`, both layouts), and the
partition's local leader-epoch lineage. Pure data in, data out: no finding, no I/O.

- :class:`StoreIndex` groups listed objects by partition (topic id, partition) and segment id;
- :func:`audit_partition` compares one partition: objects no live segment names (leaked), finished
  segments whose objects are missing, overlapping finished segments (a segment stored twice: same
  offsets under another id), segments outside the leader-epoch lineage and epoch breaks between
  consecutive segments (KAFKA-15168), and unfinished uploads with the objects they left;
- :func:`readable_segments`: each offset's one segment, in offset order, as the broker reads them.

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

from logdoctor.logdir.remote_metadata import (
    RemoteLogMetadata,
    RemotePartition,
    RemoteSegment,
    SegmentState,
    TopicIdPartition,
)
from logdoctor.logdir.remote_tier import parse_object_key
from logdoctor.logdir.store_listing import StoreObject

__all__ = [
    "ALL",
    "REQUIRED",
    "EpochBreak",
    "PartitionAudit",
    "PartitionObjects",
    "SegmentObjects",
    "StoreIndex",
    "audit",
    "audit_partition",
    "readable_segments",
    "within_leader_epochs",
]

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

    def missing(self) -> list[str]:
        """The suffixes a read needs that the store lacks."""
        return [s for s in REQUIRED[self.layout] if s not in self.files]


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


def _filtered_epochs(epochs: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """(epoch, start offset) sorted by epoch, without the epochs that hold no record (the next epoch
    starts at the same offset: RemoteLogManager.buildFilteredLeaderEpochMap)."""
    items = sorted(dict(epochs).items())
    return [(e, o) for i, (e, o) in enumerate(items) if i + 1 == len(items) or items[i + 1][1] != o]


def within_leader_epochs(
    seg: RemoteSegment, lineage: Iterable[tuple[int, int]], log_end_offset: int | None
) -> str | None:
    """Why ``seg`` is not within the partition's leader-epoch ``lineage`` as the broker's
    RemoteLogManager.isRemoteSegmentWithinLeaderEpochs decides it (None: it is): the segment's epochs
    must be the lineage's, each starting where the lineage says, and end before the next epoch."""
    leader = dict(sorted(dict(lineage).items()))
    seg_epochs = dict(_filtered_epochs(seg.leader_epochs))
    if not leader or not seg_epochs:
        return None
    lkeys = sorted(leader)
    skeys = sorted(seg_epochs)
    last = skeys[-1]
    if last < lkeys[0] or last > lkeys[-1]:
        return f"its last epoch {last} is outside the lineage's epochs {lkeys[0]}-{lkeys[-1]}"
    first = next((e for e in skeys if e >= lkeys[0]), None)
    if first is None:
        return "none of its epochs is in the lineage"
    for e in skeys:
        if e < first:
            continue
        if e not in leader:
            return f"its epoch {e} is not in the lineage"
        lower = [k for k in lkeys if k < e]
        if e == first and lower and seg_epochs[e] < leader[e]:
            return f"its epoch {e} starts at {seg_epochs[e]}, before the lineage's {leader[e]}"
        higher_l = next(((k, leader[k]) for k in lkeys if k > e), None)
        if e == last:
            if higher_l is not None and seg.end_offset > higher_l[1] - 1:
                return (
                    f"it ends at {seg.end_offset}, past the start {higher_l[1]} of epoch {higher_l[0]} "
                    f"in the lineage"
                )
        else:
            higher_s = next(((k, seg_epochs[k]) for k in skeys if k > e), None)
            if higher_l != higher_s:
                return f"after its epoch {e} come {higher_s}, the lineage has {higher_l}"
    if log_end_offset is not None and seg.end_offset >= log_end_offset:
        return f"it ends at {seg.end_offset}, at or past the log end offset {log_end_offset}"
    return None


def _last_epoch(seg: RemoteSegment) -> int | None:
    return max((e for e, _o in seg.leader_epochs), default=None)


def _first_epoch(seg: RemoteSegment) -> int | None:
    return min((e for e, _o in seg.leader_epochs), default=None)


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
    floor = log_start_offset if log_start_offset is not None else -1
    copied = [s for s in rp.copied if s.end_offset >= floor]
    for s in rp.copied:
        so = listed.get(s.segment_id)
        miss = [ALL] if so is None else so.missing()
        if miss:
            out.missing.append((s, miss))
    for s in rp.unfinished:
        out.unfinished.append((s, listed.get(s.segment_id)))
    reach: RemoteSegment | None = None
    for s in copied:
        if reach is not None and s.start_offset <= reach.end_offset:
            out.overlaps.append((reach, s))
        if reach is None or s.end_offset > reach.end_offset:
            reach = s
    lin = list(lineage) if lineage is not None else []
    prev: RemoteSegment | None = None
    for s in copied:
        why = within_leader_epochs(s, lin, log_end_offset) if lin else None
        if why is not None:
            out.epoch_breaks.append(EpochBreak("outside-lineage", s, None, why))
        elif prev is not None:
            pl, sf = _last_epoch(prev), _first_epoch(s)
            if pl is not None and sf is not None and sf < pl and s.start_offset > prev.end_offset:
                out.epoch_breaks.append(
                    EpochBreak(
                        "between-segments",
                        s,
                        prev,
                        f"it starts at epoch {sf}, below epoch {pl} of the segment before it",
                    )
                )
        prev = s
    off_lineage = {b.segment.segment_id for b in out.epoch_breaks if b.case == "outside-lineage"}
    in_lineage = [s for s in copied if s.segment_id not in off_lineage]
    if lin and in_lineage and local_log_start_offset is not None:
        last = max(in_lineage, key=lambda s: s.end_offset)
        le = _last_epoch(last)
        local_epoch = max((e for e, o in lin if o <= local_log_start_offset), default=None)
        if le is not None and local_epoch is not None and local_epoch < le:
            out.epoch_breaks.append(
                EpochBreak(
                    "into-local",
                    last,
                    None,
                    f"the local log starts at {local_log_start_offset} in epoch {local_epoch}, below the "
                    f"last remote segment's epoch {le}",
                )
            )
    return out


def audit(metadata: RemoteLogMetadata, index: StoreIndex) -> dict[TopicIdPartition, PartitionAudit]:
    """Every partition the metadata or the listing knows whose events the metadata covers (a partition
    whose metadata partition is not among the inputs is compared with nothing: never leaked)."""
    out: dict[TopicIdPartition, PartitionAudit] = {}
    keys: set[tuple[str, int]] = set(index.partitions)
    keys.update((t.topic_id, t.partition) for t in metadata.partitions)
    by_id = {(t.topic_id, t.partition): rp for t, rp in metadata.partitions.items()}
    for topic_id, partition in sorted(keys):
        if not metadata.covers(topic_id, partition):
            continue
        objs = index.partition(topic_id, partition)
        rp = by_id.get((topic_id, partition))
        a = audit_partition(rp, objs)
        out[a.topic_id_partition] = a
    return out


def readable_segments(rp: RemotePartition) -> list[RemoteSegment]:
    """The finished segments the broker reads, one per offset, in offset order: where two overlap, the
    one that starts later wins from its start (RemoteLogMetadataCache keeps, per leader epoch, the
    segment last added at each start offset; a fetch takes the segment holding the offset in its epoch)."""
    out: list[RemoteSegment] = []
    for s in rp.copied:
        while out and out[-1].start_offset >= s.start_offset:
            out.pop()
        out.append(s)
    return out
