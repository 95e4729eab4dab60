"""Which remote segments of each partition are read, each offset once: ``attach_remote`` puts a tiered
partition's remote segments (as the store lists them, :mod:`logdoctor.logdir.remote_layouts`) before its
local segments.

Each :class:`~logdoctor.logdir.refs.PartitionRef` gets its remote segments as
:class:`~logdoctor.logdir.refs.SegmentRef` values whose ``remote`` says how to read them
(:func:`logdoctor.logdir.remote_reader.open_remote_log`).

Invariants: every offset is read once. The records of offsets a local segment still holds are read from
the local log only (``RemoteSegment.local_from``). Where the remote log metadata (``__remote_log_metadata``)
is among the inputs, it says which segments exist: the listing is checked against it, a copied segment with
no object in the store is a named gap, an object it does not list (a second copy under another segment id,
a renamed object) is not read and is named; of finished segments that share offsets, the one the broker
reads is read and the others named (:func:`logdoctor.logdir.remote_lineage.readable_segments`: the
leader-epoch lineage rule); without it, one object per start offset is read, the larger (a second one is
named). Each segment is read up to its last offset (the metadata's, or the next segment's start): an object
that also holds the next segment's offsets gives them once. Whatever is not read once is a
:class:`ListingProblem`, never a silent gap.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

from logdoctor.errors import FormatError
from logdoctor.logdir.identity import topic_id_of
from logdoctor.logdir.refs import PartitionRef, RemoteSegment, SegmentRef
from logdoctor.logdir.remote_layouts import detect_layout, list_remote_segments, remote_partition_folder
from logdoctor.logdir.remote_store import RemoteOptions, RemoteTierError, open_store
from logdoctor.logdir.storage import Storage

__all__ = ["ListingProblem", "attach_remote"]


@dataclass(frozen=True, slots=True)
class ListingProblem:
    """What the store's listing of a partition's remote segments, checked against the remote log metadata
    (or against itself), says is not read once: ``lost`` offsets no object holds (a segment the metadata
    lists as copied with no object in the store), or an object not read because another one holds its
    offsets (``lost`` False: a second copy under another segment id, or an object the metadata does not
    list). ``path`` names the object (or where it should be); offsets inclusive."""

    topic: str
    partition: int
    path: str
    first_offset: int
    last_offset: int | None
    error: str
    lost: bool = True
    #: this user may not read it (permission denied): the CLI exits 77 (NO_PERMISSION) for it
    permission: bool = False


def _offsets(first: int, last: int | None) -> str:
    return f"offsets {first}-{last}" if last is not None else f"offsets {first} and after"


def _reconcile(
    ref: PartitionRef,
    listed: list[tuple[int, str, str, int]],
    known: _Expected | None,
    local_from: int | None,
    problems: list[ListingProblem],
    storage: Storage,
    folder: str,
) -> list[tuple[int, str, str, int, int | None]]:
    """The listed segments to read, each once, with their last offset when known: (start, id, .log
    location, size, last offset). ``known``: what the remote log metadata says, when it is among the
    inputs (None: it is not). Everything left out is named in ``problems``."""
    below = (lambda start: True) if local_from is None else (lambda start: start < local_from)
    starts = sorted({e[0] for e in listed} | ({local_from} if local_from is not None else set()))

    def last_of(start: int) -> int | None:  # an object's last offset: before the next start listed
        later = [s for s in starts if s > start]
        return later[0] - 1 if later else None

    def problem(path: str, first: int, last: int | None, error: str, lost: bool = True) -> None:
        problems.append(ListingProblem(ref.topic, ref.partition, path, first, last, error, lost))

    keep: list[tuple[int, str, str, int, int | None]] = []
    lasts: dict[str, int | None] = {}  # the metadata's last offset of each segment
    if known is not None:
        expected, metadata_name = known.segments, known.name
        ids = {seg_id for _s, seg_id, _l, _z in listed}
        logs = {seg_id: log for _s, seg_id, log, _z in listed}
        for start, seg_id, log, size in listed:
            holder = _read_instead(seg_id, known, ids)
            if holder is not None:
                # two finished segments of the same offsets (a segment stored twice, both
                # COPY_SEGMENT_FINISHED: the scan's REMOTE_SEGMENTS_OVERLAP): the one the broker reads
                if below(start):
                    end = expected[seg_id][1]
                    last = end if local_from is None else min(end, local_from - 1)
                    problem(
                        log,
                        start,
                        last,
                        f"remote segment {seg_id}: a second copy of {_offsets(start, last)}, "
                        f"COPY_SEGMENT_FINISHED in {metadata_name} as segment {holder} is: the broker "
                        f"reads {holder} (the leader-epoch lineage rule, RemoteLogMetadataCache); not "
                        f"read, its offsets are read once, from {logs[holder]}",
                        lost=False,
                    )
            elif seg_id in expected:
                keep.append((start, seg_id, log, size, expected[seg_id][1]))
            elif below(start):
                problem(
                    log,
                    start,
                    last_of(start),
                    f"remote segment {seg_id}: {log} is in the store but {metadata_name} lists no "
                    f"copied segment {seg_id} ({_offsets(start, last_of(start))}): a second copy (a "
                    "retried upload) or a renamed object; not read (its offsets are read from the "
                    "segments the metadata lists)",
                    lost=False,
                )
        for seg_id, (start, end) in sorted(expected.items(), key=lambda kv: kv[1]):
            if seg_id in ids or not below(start) or _read_instead(seg_id, known, ids) is not None:
                continue  # listed; held by the local log; or not read anyway (another copy is)
            last = end if local_from is None else min(end, local_from - 1)
            where = storage.join(folder, f"{start:020d}-{seg_id}.log")
            problem(
                where,
                start,
                last,
                f"remote segment {seg_id} ({_offsets(start, last)}, copied as {metadata_name} "
                f"says): no object of it is in the store: {_offsets(start, last)} not read",
            )
        listed = [(start, seg_id, log, size) for start, seg_id, log, size, _last in keep]
        lasts = {seg_id: last for _s, seg_id, _l, _z, last in keep}
        keep = []
    by_start: dict[int, list[tuple[int, str, str, int]]] = {}
    for entry in listed:
        by_start.setdefault(entry[0], []).append(entry)
    for _start, entries in sorted(by_start.items()):
        # the same offsets stored twice (a retried upload under a new segment id) with no remote log
        # metadata to say which one the broker reads: the larger object is read, the other named
        entries.sort(key=lambda e: (-e[3], e[1]))
        first = entries[0]
        keep.append((*first, lasts.get(first[1])))
        for start_, seg_id, log, _size in entries[1:]:
            if below(start_):
                problem(
                    log,
                    start_,
                    last_of(start_),
                    f"remote segment {seg_id}: a second object of {_offsets(start_, last_of(start_))} "
                    f"(segment {first[1]} holds them too: a retried upload?); not read, its offsets "
                    f"are read once, from {first[2]}",
                    lost=False,
                )
    return keep


def _lineage(ref: PartitionRef) -> tuple[list[tuple[int, int]], int | None]:
    """The partition's leader-epoch lineage (its ``leader-epoch-checkpoint`` entries) and log end offset
    ([] and None: not a local log dir, or not readable)."""
    if not ref.storage.is_local:
        return [], None
    from logdoctor.logdir.model import LogDir

    try:
        part = LogDir.shared(ref.log_dir).partition(ref.topic, ref.partition)
        return part.leader_epochs, part.log_end_offset
    except (OSError, KeyError, ValueError, AttributeError, FormatError):
        return [], None


@dataclass(frozen=True, slots=True)
class _Expected:
    """What the remote log metadata says of a partition: ``segments`` {segment id: (start, end)} of its
    COPY_SEGMENT_FINISHED segments, ``read``: the ones the broker reads (one per offset, the leader-epoch
    lineage rule of :func:`logdoctor.logdir.remote_lineage.readable_segments`), ``name``: the metadata
    partition."""

    segments: dict[str, tuple[int, int]]
    read: frozenset[str]
    name: str


def _read_instead(seg_id: str, known: _Expected, listed: Collection[str]) -> str | None:
    """The listed segment the broker reads instead of the finished segment ``seg_id`` (one of the same
    offsets, the leader-epoch lineage rule; None: ``seg_id`` is read, or no listed segment holds its
    offsets in its place)."""
    if seg_id not in known.segments or seg_id in known.read:
        return None
    start, end = known.segments[seg_id]
    holders = [
        (s, other)
        for other, (s, e) in known.segments.items()
        if other in known.read and other in listed and s <= end and start <= e
    ]
    return min(holders)[1] if holders else None


def _expected_segments(metadata: Any, topic_id: str, ref: PartitionRef) -> _Expected | None:
    """What the remote log metadata lists as copied for the partition, when its events are among the
    inputs and were read whole (None: not known)."""
    if metadata is None or not metadata.covers(topic_id, ref.partition):
        return None
    rp = metadata.partition(topic_id, ref.topic, ref.partition)
    if rp is None:
        name = f"__remote_log_metadata-{metadata.metadata_partition_for(topic_id, ref.partition)}"
        return _Expected({}, frozenset(), name)
    from logdoctor.logdir.remote_lineage import readable_segments

    lineage, log_end = _lineage(ref)
    read = frozenset(s.segment_id for s in readable_segments(rp, lineage, log_end))
    return _Expected(
        {s.segment_id: (s.start_offset, s.end_offset) for s in rp.copied},
        read,
        f"__remote_log_metadata-{rp.metadata_partition}",
    )


def attach_remote(
    refs: Sequence[PartitionRef],
    opts: RemoteOptions | None,
    *,
    metadata: Any = None,
    problems: list[ListingProblem] | None = None,
    keep_local_copies: bool = False,
) -> list[PartitionRef]:
    """``refs`` with each partition's remote segments first (see the module doc); as is without ``opts``.

    A partition is looked up in the store by its topic id (its ``partition.metadata``); one without a
    folder there (not tiered) keeps its local segments only. Raises :class:`RemoteTierError` when the
    store does not exist, or when no partition of ``refs`` has a folder in it (a wrong root or layout).
    ``metadata``: the replay of ``__remote_log_metadata``
    (:class:`~logdoctor.logdir.remote_metadata.RemoteLogMetadata`) when it is among the inputs: the
    segments it lists as copied are the ones read, the listing is checked against it. Without it, one
    object per start offset is read. Whatever is not read once is appended to ``problems``
    (:class:`ListingProblem`). ``keep_local_copies``: list remote segments the local log holds entirely
    too (``dump``).
    """
    if opts is None:
        return list(refs)
    storage, root = open_store(opts)
    out: list[PartitionRef] = []
    found_any = False
    sink: list[ListingProblem] = [] if problems is None else problems
    for ref in refs:
        topic_id = topic_id_of(ref) if ref.kind == "log" else None
        where = detect_layout(root, storage, ref.topic, ref.partition, topic_id) if topic_id else None
        if where is not None and opts.layout is not None and where[0] != opts.layout:
            where = None
        if where is None:
            out.append(ref)
            continue
        layout, base = where
        # detect_layout's base: kafka-local's root folder already
        partition: Any = (storage, layout, ref.topic, ref.partition, topic_id)
        listed = list_remote_segments(base, *partition)
        if not listed:
            out.append(ref)
            continue
        found_any = True
        local_from = ref.segments[0].base_offset if ref.segments else None
        expected = _expected_segments(metadata, topic_id, ref)  # type: ignore[arg-type]
        folder = remote_partition_folder(base, *partition)
        kept = _reconcile(
            ref, listed, expected, None if keep_local_copies else local_from, sink, storage, folder
        )
        remote: list[SegmentRef] = []
        for i, (start, seg_id, log, size, last) in enumerate(kept):
            if local_from is not None and start >= local_from and not keep_local_copies:
                continue  # the local log holds all of it
            nxt = kept[i + 1][0] if i + 1 < len(kept) else None
            end = nxt - 1 if nxt is not None else None
            if last is not None:
                end = last if end is None else min(end, last)
            seg = RemoteSegment.listed(layout, seg_id, log, opts, local_from=local_from, end_offset=end)
            remote.append(
                SegmentRef(ref.log_dir, ref.topic, ref.partition, start, log, size, nxt, storage, seg)
            )
        out.append(replace(ref, segments=(*remote, *ref.segments)))
    if not found_any and refs:
        raise RemoteTierError(
            f"remote storage {opts.storage}: no remote segment of "
            f"{', '.join(sorted({r.topic for r in refs}))} there"
            + (f" in the {opts.layout} layout" if opts.layout else " (layouts: kafka-local, aiven)")
        )
    return out
