"""The remote tier's partitions and segments as a backup: what the store holds, read for a restore.

Lists the tiered partitions a store holds (from its folder names: LocalTieredStorage's
``<topic>-<partition>-<topicId>``, Aiven's ``<topic>-<topicId>/<partition>``; the layouts are described in
:mod:`logdoctor.logdir.remote_layouts`), their segments as remote :class:`~logdoctor.logdir.refs.SegmentRef`
values that :func:`logdoctor.logdir.remote_reader.open_remote_log` reads, each segment's side files (its
indexes, the producer snapshot at its end and its leader-epoch checkpoint: LocalTieredStorage's own files,
the parts of Aiven's ``.indexes`` object) and the facts ``__remote_log_metadata`` records of a segment
(:func:`segment_facts`). Errors are :class:`~logdoctor.errors.FormatError` naming the object.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from logdoctor.errors import FormatError, MissingObjectError, TruncatedError
from logdoctor.logdir.names import topic_name_problem
from logdoctor.logdir.refs import RemoteSegment, SegmentRef
from logdoctor.logdir.remote_aiven import load_manifest
from logdoctor.logdir.remote_layouts import (
    AIVEN_TOPIC_DIR,
    KAFKA_LOCAL_DIR,
    KAFKA_LOCAL_ROOT,
    list_remote_segments,
)
from logdoctor.logdir.remote_reader import open_remote_log
from logdoctor.logdir.remote_store import RemoteOptions, open_store
from logdoctor.logdir.storage import Storage

__all__ = [
    "SIDE_FILES",
    "SegmentFacts",
    "StorePartition",
    "epochs_in_range",
    "find_store_partitions",
    "open_store",
    "segment_facts",
    "side_file",
    "side_files",
    "stored_segments",
]


#: side file suffix (the broker's, or LocalTieredStorage's) -> the index type in Aiven's manifest
SIDE_FILES = {
    "index": "offset",
    "timeindex": "timestamp",
    "txnindex": "transaction",
    "snapshot": "producerSnapshot",
    "leader_epoch_checkpoint": "leaderEpoch",
}


@dataclass(frozen=True, slots=True)
class StorePartition:
    """One tiered partition's folder in the store."""

    topic: str
    partition: int
    topic_id: str
    layout: str
    root: str  # the layout's root (kafka-local: the kafka-tiered-storage folder)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


def _dirs(storage: Storage, folder: str) -> list[str]:
    try:
        return sorted(e.name for e in storage.list(folder) if e.is_dir())
    except (FileNotFoundError, NotADirectoryError):
        return []


def find_store_partitions(
    storage: Storage,
    root: str,
    layout: str | None = None,
    topics: Collection[str] | None = None,
    illegal: list[tuple[str, str]] | None = None,
) -> list[StorePartition]:
    """Every partition folder of the store (of ``topics`` when given), in (topic, partition) order.

    A folder whose topic is no name Kafka accepts (K:clients/.../common/internals/Topic.java ``validate``:
    :func:`logdoctor.logdir.names.topic_name_problem`) is never one: a store folder for topic ``..`` would
    become ``LOGDIR/..-0``. Such folders are appended to ``illegal`` as (folder, why) when it is given
    (issue 48)."""
    out: list[StorePartition] = []

    def legal(topic: str, folder: str) -> bool:
        why = topic_name_problem(topic)
        if why is not None and illegal is not None:
            illegal.append((folder, f"topic name {topic!r}: {why} (Kafka's Topic.validate)"))
        return why is None

    if layout in (None, "kafka-local"):
        inner = storage.join(root, KAFKA_LOCAL_ROOT)
        base = inner if storage.info(inner) is not None else root
        for name in _dirs(storage, base):
            m = KAFKA_LOCAL_DIR.match(name)
            if m and (topics is None or m.group(1) in topics) and legal(m.group(1), storage.join(base, name)):
                out.append(StorePartition(m.group(1), int(m.group(2)), m.group(3), "kafka-local", base))
    if layout in (None, "aiven"):
        for name in _dirs(storage, root):
            m = AIVEN_TOPIC_DIR.match(name)
            if m is None or KAFKA_LOCAL_DIR.match(name) or (topics is not None and m.group(1) not in topics):
                continue
            if not legal(m.group(1), storage.join(root, name)):
                continue
            for part in _dirs(storage, storage.join(root, name)):
                if part.isdigit():
                    out.append(StorePartition(m.group(1), int(part), m.group(2), "aiven", root))
    return sorted(out, key=lambda p: (p.topic, p.partition, p.layout))


def stored_segments(
    storage: Storage, sp: StorePartition, opts: RemoteOptions, log_dir: str = ""
) -> list[SegmentRef]:
    """The partition's remote segments in offset order (``end_offset``: the next one's base - 1)."""
    listed = list_remote_segments(sp.root, storage, sp.layout, sp.topic, sp.partition, sp.topic_id)
    out: list[SegmentRef] = []
    for i, (start, seg_id, log, size) in enumerate(listed):
        nxt = listed[i + 1][0] if i + 1 < len(listed) else None
        end = None if nxt is None else nxt - 1
        remote = RemoteSegment.listed(sp.layout, seg_id, log, opts, end_offset=end)
        out.append(SegmentRef(log_dir, sp.topic, sp.partition, start, log, size, nxt, storage, remote))
    return out


def side_file(seg: SegmentRef, suffix: str) -> bytes | None:
    """The bytes of one side file of a remote segment (``suffix``: a key of :data:`SIDE_FILES`); None
    when the store has none. FormatError for an unreadable one (naming the object), OSError for a store
    that cannot be read."""
    return side_files(seg, (suffix,))[suffix]


def side_files(
    seg: SegmentRef, suffixes: Collection[str], loaded: tuple[Any, bytes | None] | None = None
) -> dict[str, bytes | None]:
    """:func:`side_file` of each of ``suffixes``, Aiven's manifest read (and its data key unwrapped) once,
    or taken from ``loaded`` (:func:`~logdoctor.logdir.remote_aiven.load_manifest`'s, already read by the
    caller)."""
    remote = seg.remote
    assert remote is not None
    if remote.layout == "kafka-local":
        out: dict[str, bytes | None] = {}
        for suffix in suffixes:
            try:
                out[suffix] = seg.storage.read(seg.path[: -len(".log")] + "." + suffix)
            except FileNotFoundError:
                out[suffix] = None
        return out
    manifest, key = loaded if loaded is not None else load_manifest(seg)
    parts = [w for s in suffixes if (w := manifest.indexes.get(SIDE_FILES[s])) is not None and w[1] > 0]
    span = None
    if (
        len(parts) > 1
    ):  # the parts wanted, in one ranged read of the .indexes object (one request, not one each)
        lo, hi = min(w[0] for w in parts), max(w[0] + w[1] for w in parts)
        span = (lo, _read_indexes(seg, lo, hi - lo))
    return {suffix: _aiven_side_file(seg, manifest, key, suffix, span) for suffix in suffixes}


def _read_indexes(seg: SegmentRef, position: int, size: int) -> bytes:
    remote = seg.remote
    assert remote is not None and remote.indexes is not None
    try:
        return seg.storage.read_range(remote.indexes, position, size)
    except FileNotFoundError:
        raise MissingObjectError(
            "the .indexes object", source=remote.indexes, position=0, found="no such object"
        ) from None


def _aiven_side_file(
    seg: SegmentRef, manifest: Any, key: bytes | None, suffix: str, span: tuple[int, bytes] | None = None
) -> bytes | None:
    """One part of the ``.indexes`` object, from ``span`` (position, bytes read there) when given."""
    from logdoctor.formats.aiven_rsm import detransform_chunk

    remote = seg.remote
    assert remote is not None
    where = manifest.indexes.get(SIDE_FILES[suffix])
    if where is None:
        return None
    if where[1] == 0:
        return b""
    assert remote.indexes is not None
    if span is None:
        data = _read_indexes(seg, where[0], where[1])
    else:
        at = where[0] - span[0]
        data = span[1][at : at + where[1]]
    if len(data) != where[1]:
        raise TruncatedError(
            f"{where[1]} bytes of the {SIDE_FILES[suffix]} index",
            source=remote.indexes,
            position=where[0] + len(data),
            found=f"{len(data)} bytes",
        )
    return detransform_chunk(data, manifest, key, compressed=False, source=remote.indexes)


@dataclass(frozen=True, slots=True)
class SegmentFacts:
    """What a RemoteLogSegmentMetadata record says of a segment, read from its objects."""

    start_offset: int
    end_offset: int
    max_timestamp_ms: int
    size: int  # the segment's original bytes
    leader_epochs: tuple[tuple[int, int], ...]  # (epoch, start offset), from its leader-epoch checkpoint


def segment_facts(seg: SegmentRef) -> SegmentFacts:
    """Offsets, max timestamp and size from a walk of the segment's batches (its bytes as the broker
    uploaded them), leader epochs from the segment's leader-epoch checkpoint (what RemoteLogManager
    copies and records as ``segmentLeaderEpochs``). FormatError naming the object for a bad one."""
    from logdoctor.formats.checkpoint import parse_leader_epoch_checkpoint
    from logdoctor.logdir.ranged import iter_ranged_batches

    end, max_ts = -1, -1
    with open_remote_log(seg) as reader:
        size = reader.size
        for batch in iter_ranged_batches(reader, source=seg.path, verify_crc=True):
            end = batch.last_offset
            max_ts = max(max_ts, batch.max_timestamp)
    if end < 0:
        raise FormatError("at least one record batch", source=seg.path, position=0, found="an empty segment")
    raw = side_file(seg, "leader_epoch_checkpoint")
    location = seg.path[: -len(".log")] + ".leader_epoch_checkpoint"
    if raw is None:
        raise TruncatedError(
            "the segment's leader-epoch checkpoint", source=location, position=0, found="none"
        )
    entries = parse_leader_epoch_checkpoint(raw, source=location).entries
    return SegmentFacts(seg.base_offset, end, max_ts, size, epochs_in_range(entries, seg.base_offset, end))


def epochs_in_range(entries: list[tuple[int, int]], start: int, end: int) -> tuple[tuple[int, int], ...]:
    """The (epoch, start offset) entries of ``[start, end]`` as LeaderEpochFileCache.epochEntriesInRange
    gives them to RemoteLogManager.copyLogSegment for ``segmentLeaderEpochs``: the entries starting at or
    before ``start`` fold into the latest of them, moved to ``start`` (truncateFromStart); the entries
    starting after ``end`` go (truncateFromEnd at the next segment's base offset). The checkpoint uploaded
    with the segment is the cache cut at the end only (K:core/src/main/java/kafka/log/remote/
    RemoteLogManager.java, getLeaderEpochEntries(log, -1, nextSegmentBaseOffset))."""
    ordered = sorted(entries, key=lambda e: e[1])
    below = [e for e in ordered if e[1] <= start]
    rest = [(e, o) for e, o in ordered if start < o <= end]
    return tuple(([(below[-1][0], start)] if below else []) + rest)
