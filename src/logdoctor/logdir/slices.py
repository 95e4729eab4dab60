"""The slices of a read: which segments to read, from where, in how many pieces, with the transactions
each reader needs. No Spark here: ``dump``, ``export``, ``replay`` and the data sources share it (it
moved out of ``spark/``, issue 86); Spark's data sources and jobs only hand its slices to their tasks.

Everything here runs in Spark's planning worker (``DataSourceReader.partitions()``), in the export driver or
in a command's own process, never per record. The partitions come from
:func:`logdoctor.logdir.discovery.discover` as :class:`~logdoctor.logdir.refs.PartitionRef` values (for a
local log dir, produced by the model, :mod:`logdoctor.logdir.model`); where to start in a segment comes from
:mod:`logdoctor.logdir.seek`, the seeking ``dump --offsets/--timestamps`` uses too; the read options are one
typed object (:class:`~logdoctor.logdir.read_options.ReadOptions`, made once at each edge). Here: the offset
range per partition, the slices of segments and their packing into tasks. The results are small picklable
dataclasses handed to the executors.

Every path is a local path or a URI of a file system pyarrow opens (``s3://``, ``gs://``, ``hdfs://``,
``abfs://``; :mod:`logdoctor.logdir.storage`): listings, index reads and header reads go through the
:class:`~logdoctor.logdir.storage.Storage` of the path, which each ref carries to the executors.
With the options ``remoteStorage`` (``remoteLayout``, ``remotePrivateKey``) the partitions' remote-tier
segments come first (:mod:`logdoctor.logdir.remote_attach`, :func:`discover_refs`), each read up to the
partition's first local offset, so that every offset is read once.
A local segment larger than ``maxPartitionBytes`` is split at offset-index positions; a remote one is
not (a split's task walks the segment from its start to stop at its first invalid batch, which would
read the bytes before the split again over the network): it is read once, by byte ranges in chunks.

Offsets and timestamps follow Spark's Kafka source: ``startingOffsets`` is inclusive,
``endingOffsets`` exclusive, -2 is earliest and -1 latest; a timestamp T stands for the first
offset whose record timestamp is >= T (Kafka's ListOffsets by timestamp:
:func:`logdoctor.logdir.seek.offset_for_timestamp`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from logdoctor.formats.index_lookup import IndexEntries
from logdoctor.logdir.batch_walk import PartitionRange, resolve_range
from logdoctor.logdir.coordinator import CoordinatorDecisions
from logdoctor.logdir.discovery import DiscoveryError
from logdoctor.logdir.read_options import (
    DEFAULT_MAX_PARTITION_BYTES,
    EARLIEST,
    LATEST,
    PerPartition,
    ReadOptions,
    parse_per_partition,
    topic_matcher,
)
from logdoctor.logdir.read_plan import ReadPlan, one_remote_copy
from logdoctor.logdir.reader import ByteReader
from logdoctor.logdir.refs import PartitionRef, SegmentRef
from logdoctor.logdir.seek import (
    batch_start_at,
    seek_offset,
    segment_offset_entries,
    segment_reader,
)
from logdoctor.logdir.transactions import PartitionTransactions, SegmentTransactions

__all__ = [
    "DEFAULT_MAX_PARTITION_BYTES",
    "EARLIEST",
    "LATEST",
    "PartitionRange",
    "PerPartition",
    "PlanningError",
    "ReadOptions",
    "SegmentSlice",
    "discover_refs",
    "pack_slices",
    "parse_per_partition",
    "parse_read_options",
    "partition_groups",
    "plan_slices",
    "plan_transactions",
    "read_plan",
    "resolve_range",
    "split_points",
    "task_groups",
    "topic_matcher",
]

#: A bad path (found by :mod:`logdoctor.logdir.discovery`) or a bad option (found by
#: :meth:`logdoctor.logdir.read_options.ReadOptions.from_options`), shown to the user as is: one kind of
#: error for the data sources' users (the CLI exits 66 for its subclass
#: :class:`logdoctor.logdir.discovery.InputNotFoundError`, a path that does not exist).
PlanningError = DiscoveryError

#: the data sources' options parsed (:meth:`ReadOptions.from_options`), by its older name
parse_read_options = ReadOptions.from_options


# --- input partitions -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SegmentSlice:
    """What one Spark task reads: the batches of one segment that start in [emit_from, emit_to).

    The reader walks (and CRC-checks) from ``read_from`` to ``emit_from`` without emitting, so
    that a split of a large segment still stops at the segment's first invalid batch.
    """

    segment: SegmentRef
    read_from: int = 0
    emit_from: int = 0
    emit_to: int | None = None
    start_offset: int | None = None  # inclusive
    end_offset: int | None = None  # exclusive
    part: int = 0
    parts: int = 1
    # a remote segment: probably no batch at or after this position is wanted (from the offset index
    # and end_offset); its reads stop there unless the batch there proves otherwise
    fetch_hint: int | None = None
    # the transactions overlapping the segment and the stable end (logdoctor.logdir.transactions)
    txn: SegmentTransactions | None = None
    # the cluster's feature levels (formats.internal.layouts.ClusterFeatures) for the decoder of a topic
    # whose records Kafka changed under one version (the 4.1 share-group records): :func:`plan_slices`
    features: Any = None


def read_plan(paths: str | Sequence[str], opts: ReadOptions | None = None) -> ReadPlan:
    """The read plan of ``paths`` (:func:`logdoctor.logdir.read_plan.plan_read`: discovery, the remote tier
    of the options ``remoteStorage``/``remoteLayout``/``remotePrivateKey`` checked against the remote log
    metadata, the topics, the offsets named as not read once), with the offsets not read clipped to the
    range the options ask for. Every output plans with it; a bad path or option: :data:`PlanningError`."""
    from logdoctor.logdir.read_plan import plan_read
    from logdoctor.logdir.remote_store import RemoteTierError

    opts = opts if opts is not None else ReadOptions()
    try:
        plan = plan_read(paths, opts)
    except RemoteTierError as exc:
        raise PlanningError(str(exc)) from None
    if not plan.not_read:
        return plan
    by_key = {(r.topic, r.partition): r for r in plan.refs}
    kept = []
    for p in plan.not_read:
        if p.permission:  # a folder or file this user cannot read: named whatever the range
            kept.append(p)
            continue
        rng = resolve_range(by_key[(p.topic, p.partition)], opts)
        last = p.last_offset
        if rng.end_offset is not None and p.first_offset >= rng.end_offset:
            continue
        if rng.start_offset is not None and last is not None and last < rng.start_offset:
            continue
        kept.append(p)
    return dataclasses.replace(plan, not_read=tuple(kept))


def discover_refs(paths: str | Sequence[str], opts: ReadOptions | None = None) -> list[PartitionRef]:
    """The partitions :func:`read_plan` reads (remote tier attached, topics chosen)."""
    return list(read_plan(paths, opts).refs)


def split_points(
    seg: SegmentRef, start: int, max_bytes: int, entries: IndexEntries | None = None
) -> list[int]:
    """Positions after ``start`` where a large local segment is cut, taken from its offset index
    (each checked to hold a batch header, :func:`logdoctor.logdir.seek.batch_start_at`)."""
    if seg.size - start <= max_bytes:
        return []
    if entries is None:
        entries = segment_offset_entries(seg)
    positions = [pos for pos in entries.values.tolist() if pos > start]
    if not positions:
        return []
    cuts: list[int] = []
    with segment_reader(seg) as reader:
        target = start + max_bytes
        i = 0
        while target < seg.size and i < len(positions):
            best = None
            while i < len(positions) and positions[i] <= target:
                best = positions[i]
                i += 1
            if best is None:  # no index entry in this window: cut at the next one
                best = positions[i]
                i += 1
            if _batch_starts(reader, best, seg) and (not cuts or best > cuts[-1]):
                cuts.append(best)
            target = best + max_bytes
    return cuts


def _batch_starts(reader: ByteReader, position: int, seg: SegmentRef) -> bool:
    first = batch_start_at(
        reader, position, base_offset=seg.base_offset, next_base_offset=seg.next_base_offset
    )
    return first is not None


def txn_key(ref: PartitionRef) -> tuple[str, str, int]:
    return (ref.log_dir, ref.topic, ref.partition)


def plan_transactions(
    refs: Sequence[PartitionRef], opts: ReadOptions, decisions: CoordinatorDecisions | None = None
) -> dict[tuple[str, str, int], PartitionTransactions]:
    """Every transaction of each partition read, from its markers (one walk of its batch headers, the
    remote tier's included: :func:`logdoctor.logdir.transactions.partition_transactions`), each counting
    its records in the range the options ask for, those left without a marker decided by ``decisions``
    (the read plan's), those past the cut ``cutAt`` marked (:mod:`logdoctor.logdir.cut`). Keyed by
    :func:`txn_key`."""
    from logdoctor.logdir.cut import apply_cut
    from logdoctor.logdir.transactions import partition_transactions

    match = topic_matcher(opts.topics)
    out: dict[tuple[str, str, int], PartitionTransactions] = {}
    for ref in refs:
        if not match(ref.topic) or not ref.segments:
            continue
        rng = resolve_range(ref, opts)
        walked = partition_transactions(
            ref, start=rng.start_offset, end=rng.end_offset, decisions=decisions, cut_at=opts.cut_at
        )
        out[txn_key(ref)] = apply_cut(walked, decisions)
    return out


def plan_slices(
    refs: Sequence[PartitionRef],
    opts: ReadOptions,
    txns: Mapping[tuple[str, str, int], PartitionTransactions] | None = None,
) -> list[SegmentSlice]:
    """One slice per segment in the requested range; segments over maxPartitionBytes are split. Each
    carries what its reader needs of the partition's transactions (``txns``: :func:`plan_transactions`;
    without it, the markers' alone, no coordinator state deciding)."""
    from logdoctor.logdir.transactions import segment_views

    match = topic_matcher(opts.topics)
    if txns is None:
        txns = plan_transactions(refs, opts)
    if opts.view != "latest":  # a replica's latest view is its whole log, its remote part included
        refs = one_remote_copy(refs)
    levels = _decoder_features(refs, opts)
    out: list[SegmentSlice] = []
    for ref in refs:
        if not match(ref.topic) or not ref.segments:
            continue
        features = levels.get(os.path.abspath(ref.log_dir)) if ref.topic in LAYOUT_BY_FEATURES else None
        whole = resolve_range(ref, opts)
        partition_txns = txns.get(txn_key(ref))
        views = (
            segment_views(partition_txns, ref.segments, opts.isolation_level, opts.upto_high_watermark)
            if partition_txns is not None
            else [None] * len(ref.segments)
        )
        for seg, view in zip(ref.segments, views, strict=True):
            rng = whole
            if seg.remote is not None:
                # a remote segment: up to its last offset (an object that also holds the next segment's
                # offsets gives them once); the offsets the local log still holds are read from it
                rng = PartitionRange(whole.start_offset, seg.remote.read_end(whole.end_offset))
            if (
                rng.start_offset is not None
                and seg.next_base_offset is not None
                and seg.next_base_offset <= rng.start_offset
            ):
                continue  # the whole segment is before the start
            if rng.end_offset is not None and seg.base_offset >= rng.end_offset:
                continue
            if (
                rng.start_offset is not None
                and rng.end_offset is not None
                and rng.start_offset >= rng.end_offset
            ):
                continue
            seeking = rng.start_offset is not None and rng.start_offset > seg.base_offset
            if seg.ranged:  # read once, by ranges: not split (module doc)
                wanted = seeking or rng.end_offset is not None
                entries = segment_offset_entries(seg) if wanted else IndexEntries()
                read_from = seek_offset(seg, rng.start_offset, entries) if seeking else 0  # type: ignore[arg-type]
                hint = _end_hint(entries, rng.end_offset) if rng.end_offset is not None else None
                out.append(
                    SegmentSlice(
                        seg,
                        read_from,
                        read_from,
                        None,
                        rng.start_offset,
                        rng.end_offset,
                        fetch_hint=hint,
                        txn=view,
                        features=features,
                    )
                )
                continue
            entries = segment_offset_entries(seg) if seeking or seg.size > opts.max_partition_bytes else None
            read_from = seek_offset(seg, rng.start_offset, entries) if seeking else 0  # type: ignore[arg-type]
            cuts = split_points(seg, read_from, opts.max_partition_bytes, entries)
            bounds = [read_from, *cuts, None]
            n = len(bounds) - 1
            for k in range(n):
                out.append(
                    SegmentSlice(
                        seg,
                        read_from,
                        bounds[k],
                        bounds[k + 1],
                        rng.start_offset,
                        rng.end_offset,
                        k,
                        n,
                        txn=view,
                        features=features,
                    )
                )
    return out


#: the topics whose records' layout the cluster's feature levels choose (ShareGroupMetadataValue and
#: ShareGroupStatePartitionMetadataValue in __consumer_offsets, ShareSnapshotValue and ShareUpdateValue in
#: __share_group_state: formats.internal.layouts)
LAYOUT_BY_FEATURES = ("__consumer_offsets", "__share_group_state")


def _decoder_features(refs: Sequence[PartitionRef], opts: ReadOptions) -> dict[str, Any]:
    """log dir -> its cluster's feature levels (:func:`logdoctor.logdir.metadata_image.log_dir_features`)
    where the records of :data:`LAYOUT_BY_FEATURES` are decoded; the local log dirs of the partitions read,
    one replay per metadata log, here on the driver."""
    if not opts.decoded or not any(r.topic in LAYOUT_BY_FEATURES for r in refs):
        return {}
    from logdoctor.logdir.metadata_image import log_dir_features

    dirs = sorted({r.log_dir for r in refs if r.storage.is_local})
    return log_dir_features(dirs)


def _end_hint(entries: IndexEntries, end_offset: int) -> int | None:
    """A position where every batch has offsets >= ``end_offset``, from the offset index: that of the
    entry after the first entry at or past ``end_offset`` (an entry's offset is the last of the batches
    appended from its position on, so everything from the next entry's position on comes after it)."""
    i = int(entries.keys.searchsorted(end_offset, side="left"))
    return int(entries.values[i + 1]) if i + 1 < len(entries) else None


#: What opening one segment costs, in bytes of reading (Spark's spark.sql.files.openCostInBytes idea):
#: many small segments share a task, because every Python task has a fixed cost of its own.
OPEN_COST_BYTES = 1024 * 1024


def _slice_bytes(sl: SegmentSlice) -> int:
    end = sl.segment.size if sl.emit_to is None else sl.emit_to
    if sl.fetch_hint is not None:
        end = min(end, sl.fetch_hint)
    return max(0, end - sl.emit_from)


def task_groups(slices: Sequence[SegmentSlice], opts: ReadOptions) -> list[tuple[SegmentSlice, ...]]:
    """The slices of each task: packed by size (:func:`pack_slices`), or for ``view=latest`` all the slices of
    one replica's partition in one task (:func:`partition_groups`)."""
    if opts.view in ("latest", "cdc"):  # a partition's records in one task, in offset order
        return partition_groups(slices)
    return pack_slices(slices, opts.max_partition_bytes, opts.min_partitions)


def partition_groups(slices: Sequence[SegmentSlice]) -> list[tuple[SegmentSlice, ...]]:
    """The slices of each replica's partition together, in offset order (one task each)."""
    groups: dict[tuple[str, str, int], list[SegmentSlice]] = {}
    for sl in slices:
        seg = sl.segment
        groups.setdefault((seg.log_dir, seg.topic, seg.partition), []).append(sl)
    return [tuple(g) for g in groups.values()]


def pack_slices(
    slices: Sequence[SegmentSlice], max_bytes: int, min_partitions: int
) -> list[tuple[SegmentSlice, ...]]:
    """Group slices into tasks of about ``max_bytes`` (at least ``min_partitions`` tasks when there is
    enough data), keeping each partition's segments together and in order, like Spark's FilePartition.
    """
    if not slices:
        return []
    total = sum(_slice_bytes(s) + OPEN_COST_BYTES for s in slices)
    target = min(max_bytes, max(OPEN_COST_BYTES, total // max(1, min_partitions)))
    groups: list[tuple[SegmentSlice, ...]] = []
    cur: list[SegmentSlice] = []
    size = 0
    for sl in slices:
        cost = _slice_bytes(sl) + OPEN_COST_BYTES
        if cur and size + cost > target:
            groups.append(tuple(cur))
            cur, size = [], 0
        cur.append(sl)
        size += cost
    if cur:
        groups.append(tuple(cur))
    return groups
