"""A tiered partition's remote segments, read straight from the remote store (KIP-405), offline.

The store is a local folder or any location :class:`~logdoctor.logdir.storage.Storage` opens (``s3://``,
``gs://``, ``hdfs://``...), written by one of two RemoteStorageManager plugins (``layout``):

- ``kafka-local``: Kafka's reference ``LocalTieredStorage`` (K:storage/src/test/java/org/apache/kafka/
  server/log/remote/storage/LocalTieredStorage.java, RemoteTopicPartitionDirectory.java,
  RemoteLogSegmentFileset.java): ``<root>/<topic>-<partition>-<topicId>/<20-digit start offset>-<segment
  uuid>.{log,index,timeindex,snapshot,leader_epoch_checkpoint}``, the segment's own files unchanged
  (its root folder is ``kafka-tiered-storage`` under the configured ``dir``: either may be given).
- ``aiven``: Aiven's tiered-storage-for-apache-kafka (v1.0.0, ``ObjectKeyFactory.mainPath``):
  ``<root>/<topic>-<topicId>/<partition>/<20-digit start offset>-<segment id>.{log,indexes,rsm-manifest}``,
  the ``.log`` chunked and maybe compressed and encrypted (:mod:`logdoctor.formats.aiven_rsm`); it is
  read chunk by chunk, only the chunks a read needs (:class:`AivenLogReader`).

Which remote segments exist is what the store's folder for the partition lists (what is really there).
``attach_remote`` puts them before the partition's local segments in each
:class:`~logdoctor.logdir.refs.PartitionRef`, as :class:`~logdoctor.logdir.refs.SegmentRef` values whose
``remote`` says how to read them; the records of offsets a local segment still holds are read from the
local log only (``RemoteSegment.local_from``), so that every offset is read once. Where the remote log
metadata (``__remote_log_metadata``) is among the inputs, it says which segments exist: the listing is
checked against it, a copied segment with no object in the store is a named gap, an object it does not
list (a second copy under another segment id, a renamed object) is not read and is named; of finished
segments that share offsets, the one the broker reads is read and the others named
(:func:`logdoctor.logdir.remote_lineage.readable_segments`: the leader-epoch lineage rule); without it,
one object per start offset is read, the larger (a second one is named). Each segment is read up to its last
offset (the metadata's, or the next segment's start): an object that also holds the next segment's
offsets gives them once.

Bad remote objects raise :class:`~logdoctor.errors.FormatError` naming the object key (a missing or
truncated object, a chunk that does not decompress or decrypt, a wrong private key, a manifest version
other than 1), never a silent gap: callers stop that segment's rows there and report the offsets.
"""

from __future__ import annotations

import os
import re
import threading
from collections import deque
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar

from logdoctor.errors import CorruptRecordError, FormatError, TruncatedError
from logdoctor.formats.aiven_rsm import STREAM_ABOVE
from logdoctor.logdir.refs import PartitionRef, RemoteSegment, SegmentRef
from logdoctor.logdir.storage import RangeReader, Storage

if TYPE_CHECKING:
    from concurrent.futures import Future

    from logdoctor.formats.aiven_rsm import Chunk

__all__ = [
    "LAYOUTS",
    "AivenLogReader",
    "ListingProblem",
    "RemoteObjectKey",
    "RemoteOptions",
    "RemoteSegment",
    "RemoteTierError",
    "attach_remote",
    "detect_layout",
    "list_remote_segments",
    "load_manifest",
    "open_remote_log",
    "open_store",
    "parse_object_key",
    "private_key_spec",
    "remote_index_bytes",
    "remote_partition_folder",
]

LAYOUTS = ("kafka-local", "aiven")
KAFKA_LOCAL_ROOT = "kafka-tiered-storage"  # LocalTieredStorage.ROOT_STORAGE_DIR_NAME
_NAME = re.compile(
    r"^(\d{20})-([A-Za-z0-9_-]{22})\.(log|rsm-manifest|indexes|index|timeindex|snapshot|txnindex"
    r"|leader_epoch_checkpoint)$"
)
#: the objects each layout writes per segment (LocalTieredStorage's RemoteLogSegmentFileset; Aiven's
#: ObjectKeyFactory suffixes): any of them lists the segment, so that a segment whose ``.log`` object is
#: gone is still listed, and its read names the missing object
_SUFFIXES = {
    "kafka-local": {"log", "index", "timeindex", "snapshot", "txnindex", "leader_epoch_checkpoint"},
    "aiven": {"log", "indexes", "rsm-manifest"},
}


#: a segment object's file name in either layout: ``<20-digit start offset>-<segment id>.<suffix>``
_OBJECT = re.compile(r"^(\d{20})-([A-Za-z0-9_-]{22})\.([A-Za-z_.-]+)$")
_UUID = r"[A-Za-z0-9_-]{22}"
_KAFKA_LOCAL_DIR = re.compile(rf"^(.+)-(\d+)-({_UUID})$")
_AIVEN_TOPIC_DIR = re.compile(rf"^(.+)-({_UUID})$")


@dataclass(frozen=True, slots=True)
class RemoteObjectKey:
    """What an object's key says in either layout: the partition, the segment and which of its files."""

    layout: str
    topic: str
    partition: int
    topic_id: str
    start_offset: int
    segment_id: str
    suffix: str  # log, index, timeindex, snapshot, leader_epoch_checkpoint, txnindex; indexes, rsm-manifest
    prefix: str  # the key's part before the partition's folder ("" at the store's root)


def parse_object_key(key: str) -> RemoteObjectKey | None:
    """The segment object ``key`` (a path relative to anything: only its last three names count) names in
    Kafka's LocalTieredStorage layout (``<topic>-<partition>-<topicId>/<start>-<id>.<suffix>``) or Aiven's
    (``<topic>-<topicId>/<partition>/<start>-<id>.<suffix>``); None for any other object."""
    parts = key.rsplit("/", 3)
    m = _OBJECT.match(parts[-1])
    if m is None or len(parts) < 2:
        return None
    start, seg_id, suffix = int(m.group(1)), m.group(2), m.group(3)
    parent = parts[-2]
    if parent.isdigit() and len(parts) >= 3 and parent == str(int(parent)):
        t = _AIVEN_TOPIC_DIR.match(parts[-3])
        if t is not None:
            prefix = parts[0] if len(parts) == 4 else ""
            return RemoteObjectKey(
                "aiven", t.group(1), int(parent), t.group(2), start, seg_id, suffix, prefix
            )
    k = _KAFKA_LOCAL_DIR.match(parent)
    if k is not None:
        prefix = "/".join(parts[:-2])
        return RemoteObjectKey(
            "kafka-local", k.group(1), int(k.group(2)), k.group(3), start, seg_id, suffix, prefix
        )
    return None


class RemoteTierError(ValueError):
    """A bad remote-tier option or a store that cannot be used (shown to the user as is)."""


@dataclass(frozen=True, slots=True)
class RemoteOptions:
    """Where the remote tier is and how to read it (the data-source options ``remoteStorage``,
    ``remoteLayout`` and ``remotePrivateKey``; the CLI's ``--remote-storage/-layout/-private-key``)."""

    storage: str
    layout: str | None = None  # None: detected per partition from what is stored
    private_key: str | None = None  # a PEM file (Aiven's encryption): path on every executor

    @classmethod
    def from_options(cls, options: Mapping[str, Any] | None) -> RemoteOptions | None:
        opts = {str(k).lower(): v for k, v in (options or {}).items() if v is not None and str(v).strip()}
        store = opts.get("remotestorage")
        layout = opts.get("remotelayout")
        key = opts.get("remoteprivatekey")
        if store is None:
            if layout is not None or key is not None:
                raise RemoteTierError("remoteLayout / remotePrivateKey need remoteStorage (the remote store)")
            return None
        if layout is not None:
            layout = str(layout).strip().lower()
            if layout == "auto":
                layout = None
            elif layout not in LAYOUTS:
                raise RemoteTierError(f"remoteLayout: expected auto, {' or '.join(LAYOUTS)}, got {layout!r}")
        if key is not None:
            key_id, path = private_key_spec(str(key).strip())
            path = os.path.abspath(path) if "://" not in path else path
            key = path if key_id is None else f"{key_id}={path}"
        store = str(store).strip()
        if "://" not in store:
            store = os.path.abspath(store)
        return cls(store, layout, key)

    def to_options(self) -> dict[str, str]:
        """The data-source options that give these (:meth:`from_options` of them is equal)."""
        out = {"remoteStorage": self.storage, "remoteLayout": self.layout or "auto"}
        if self.private_key is not None:
            out["remotePrivateKey"] = self.private_key
        return out


def remote_partition_folder(
    root: str, storage: Storage, layout: str, topic: str, partition: int, topic_id: str
) -> str:
    if layout == "kafka-local":
        return storage.join(root, f"{topic}-{partition}-{topic_id}")
    return storage.join(root, f"{topic}-{topic_id}", str(partition))


def _kafka_local_root(root: str, storage: Storage) -> str:
    inner = storage.join(root, KAFKA_LOCAL_ROOT)
    entry = storage.info(inner)
    return inner if entry is not None and entry.is_dir() else root


def detect_layout(
    root: str, storage: Storage, topic: str, partition: int, topic_id: str
) -> tuple[str, str] | None:
    """(layout, root) of the partition's folder in the store, from what is there; None when neither."""
    for layout in LAYOUTS:
        base = _kafka_local_root(root, storage) if layout == "kafka-local" else root
        entry = storage.info(remote_partition_folder(base, storage, layout, topic, partition, topic_id))
        if entry is not None and entry.is_dir():
            return layout, base
    return None


def list_remote_segments(
    root: str,
    storage: Storage,
    layout: str,
    topic: str,
    partition: int,
    topic_id: str,
    *,
    only: Collection[str] | None = None,
) -> list[tuple[int, str, str, int]]:
    """(start offset, segment id, .log location, .log object size) of the partition's remote segments
    in offset order: every segment that has an object of the layout in the folder (its ``.log``, or
    another of its objects, so that a segment whose ``.log`` is gone is still listed, and its read names
    the missing object; size 0 then). ``only``: segment ids to keep."""
    if layout == "kafka-local":
        root = _kafka_local_root(root, storage)
    folder = remote_partition_folder(root, storage, layout, topic, partition, topic_id)
    try:
        entries = storage.list(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []
    found: dict[tuple[int, str], int] = {}
    for e in entries:
        m = _NAME.match(e.name)
        if m is None or e.is_dir():
            continue
        if m.group(3) not in _SUFFIXES[layout]:
            continue
        key = (int(m.group(1)), m.group(2))
        if only is not None and key[1] not in only:
            continue
        if m.group(3) == "log":
            found[key] = e.size
        else:
            found.setdefault(key, -1)
    return [
        (base, seg_id, storage.join(folder, f"{base:020d}-{seg_id}.log"), max(size, 0))
        for (base, seg_id), size in sorted(found.items())
    ]


def _topic_id(ref: PartitionRef) -> str | None:
    from logdoctor.formats.partition_metadata import parse_partition_metadata

    location = ref.storage.join(ref.path, "partition.metadata")
    try:
        return parse_partition_metadata(ref.storage.read(location), source=location).topic_id
    except (OSError, ValueError, FormatError):
        return None


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
                    problems.append(
                        ListingProblem(
                            ref.topic,
                            ref.partition,
                            log,
                            start,
                            last,
                            f"remote segment {seg_id}: a second copy of {_offsets(start, last)}, "
                            f"COPY_SEGMENT_FINISHED in {metadata_name} as segment {holder} is: the broker "
                            f"reads {holder} (the leader-epoch lineage rule, RemoteLogMetadataCache); not "
                            f"read, its offsets are read once, from {logs[holder]}",
                            lost=False,
                        )
                    )
            elif seg_id in expected:
                keep.append((start, seg_id, log, size, expected[seg_id][1]))
            elif below(start):
                problems.append(
                    ListingProblem(
                        ref.topic,
                        ref.partition,
                        log,
                        start,
                        last_of(start),
                        f"remote segment {seg_id}: {log} is in the store but {metadata_name} lists no "
                        f"copied segment {seg_id} ({_offsets(start, last_of(start))}): a second copy (a "
                        "retried upload) or a renamed object; not read (its offsets are read from the "
                        "segments the metadata lists)",
                        lost=False,
                    )
                )
        for seg_id, (start, end) in sorted(expected.items(), key=lambda kv: kv[1]):
            if seg_id in ids or not below(start) or _read_instead(seg_id, known, ids) is not None:
                continue  # listed; held by the local log; or not read anyway (another copy is)
            last = end if local_from is None else min(end, local_from - 1)
            where = storage.join(folder, f"{start:020d}-{seg_id}.log")
            problems.append(
                ListingProblem(
                    ref.topic,
                    ref.partition,
                    where,
                    start,
                    last,
                    f"remote segment {seg_id} ({_offsets(start, last)}, copied as {metadata_name} "
                    f"says): no object of it is in the store: {_offsets(start, last)} not read",
                )
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
                problems.append(
                    ListingProblem(
                        ref.topic,
                        ref.partition,
                        log,
                        start_,
                        last_of(start_),
                        f"remote segment {seg_id}: a second object of {_offsets(start_, last_of(start_))} "
                        f"(segment {first[1]} holds them too: a retried upload?); not read, its offsets "
                        f"are read once, from {first[2]}",
                        lost=False,
                    )
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


def open_store(opts: RemoteOptions) -> tuple[Storage, str]:
    """The store's Storage and root location; RemoteTierError when it is not a folder."""
    try:
        storage, root = Storage.of(opts.storage)
    except (ValueError, OSError) as exc:
        raise RemoteTierError(f"remote storage {opts.storage}: {exc}") from None
    entry = storage.info(root)
    if entry is None or not entry.is_dir():
        raise RemoteTierError(f"remote storage {opts.storage}: no such folder")
    return storage, root


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
        topic_id = _topic_id(ref) if ref.kind == "log" else None
        where = detect_layout(root, storage, ref.topic, ref.partition, topic_id) if topic_id else None
        if where is not None and opts.layout is not None and where[0] != opts.layout:
            where = None
        if where is None:
            out.append(ref)
            continue
        layout, base = where
        listed = list_remote_segments(
            base,
            storage,
            layout,
            ref.topic,
            ref.partition,
            topic_id,  # type: ignore[arg-type]
        )
        if not listed:
            out.append(ref)
            continue
        found_any = True
        local_from = ref.segments[0].base_offset if ref.segments else None
        expected = _expected_segments(metadata, topic_id, ref)  # type: ignore[arg-type]
        folder = remote_partition_folder(
            base,  # detect_layout's: kafka-local's root folder already
            storage,
            layout,
            ref.topic,
            ref.partition,
            topic_id,  # type: ignore[arg-type]
        )
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
            stem = log[: -len(".log")]
            seg = RemoteSegment(
                layout,
                seg_id,
                opts.storage,
                manifest=stem + ".rsm-manifest" if layout == "aiven" else None,
                indexes=stem + ".indexes" if layout == "aiven" else None,
                private_key=opts.private_key,
                local_from=local_from,
                end_offset=end,
            )
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


# --- reading ---------------------------------------------------------------------------------------


def _missing(location: str, what: str) -> TruncatedError:
    from logdoctor.errors import MissingObjectError

    return MissingObjectError(f"the {what} object", source=location, position=0, found="no such object")


class _PlainReader:
    """A kafka-local segment: the object is the segment's bytes."""

    def __init__(self, seg: SegmentRef, opened: RangeReader | None = None) -> None:
        try:
            self._reader = opened if opened is not None else seg.storage.open(seg.path)
        except FileNotFoundError:
            raise _missing(seg.path, ".log") from None
        self.size = self._reader.size

    def detach(self) -> RangeReader:
        """The open object, left open by this reader's close (for another: :func:`open_remote_log`)."""
        opened, self._reader = self._reader, RangeReader(None, self._reader.size, False)
        return opened

    def read_at(self, offset: int, length: int) -> bytes:
        return self._reader.read_at(offset, length)

    def close(self) -> None:
        self._reader.close()

    def __enter__(self) -> _PlainReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_KEY_PAIR = re.compile(r"([A-Za-z0-9._-]+)=(.+)", re.S)


def private_key_spec(spec: str) -> tuple[str | None, str]:
    """``--remote-private-key`` / ``remotePrivateKey``: ``PEM`` or ``KEYPAIRID=PEM`` (the plugin's
    ``encryption.key.pair.id`` the key belongs to, checked against each manifest's data key): (id, path)."""
    m = _KEY_PAIR.fullmatch(spec)
    if m is None or "/" in m.group(1) or "://" in spec.split("=", 1)[0]:
        return None, spec
    return m.group(1), m.group(2)


def _read_private_key(spec: str | None, manifest_location: str, key_id: str | None) -> bytes:
    if not spec:
        raise CorruptRecordError(
            f"the private key of key pair {key_id!r} (--remote-private-key PEM): the segment is encrypted",
            source=manifest_location,
        )
    given, path = private_key_spec(spec)
    if given is not None and key_id is not None and given != key_id:
        raise CorruptRecordError(
            f"the private key of key pair {key_id!r} (the manifest's data key is wrapped with it)",
            source=manifest_location,
            found=f"the key of key pair {given!r} given ({path})",
        )
    try:
        if "://" in path:
            storage, loc = Storage.of(path)
            return storage.read(loc)
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise CorruptRecordError(
            "a readable private key file", source=path, found=exc.strerror or str(exc)
        ) from None


def load_manifest(seg: SegmentRef) -> tuple[Any, bytes | None]:
    """An Aiven segment's manifest, parsed, and its data key unwrapped (None: not encrypted); FormatError
    naming the object for a missing or bad manifest or key."""
    return _load_manifest(seg)


def _load_manifest(seg: SegmentRef) -> tuple[Any, bytes | None]:
    from logdoctor.formats.aiven_rsm import parse_manifest, unwrap_data_key

    remote = seg.remote
    assert remote is not None and remote.manifest is not None
    try:
        data = seg.storage.read(remote.manifest)
    except FileNotFoundError:
        raise _missing(remote.manifest, ".rsm-manifest") from None
    manifest = parse_manifest(data, source=remote.manifest)
    key = None
    if manifest.encrypted:
        pem = _read_private_key(remote.private_key, remote.manifest, manifest.data_key_id)
        try:
            key = unwrap_data_key(manifest, pem, source=remote.manifest)
        except CorruptRecordError as exc:  # name the key given beside the key pair the manifest names
            exc.found = f"{exc.found}: {private_key_spec(remote.private_key or '')[1]}"
            exc.args = (exc._render(),)
            raise
    return manifest, key


_T = TypeVar("_T")


def _name_chunk(exc: FormatError, c: Chunk) -> None:
    """Name the chunk and its original bytes in a chunk's error."""
    exc.expected = (
        f"{exc.expected} (chunk {c.index}: original bytes {c.original_position}-"
        f"{c.original_position + c.original_size - 1})"
    )
    exc.args = (exc._render(),)


def _original_size(group: list[Chunk]) -> int:
    return group[-1].original_position + group[-1].original_size - group[0].original_position


def _spans(chunks: list[Chunk], span: int) -> list[list[Chunk]]:
    """Consecutive chunks in groups of about ``span`` original bytes (one chunk at least)."""
    out: list[list[Chunk]] = []
    group: list[Chunk] = []
    size = 0
    for c in chunks:
        if group and size + c.original_size > span:
            out.append(group)
            group, size = [], 0
        group.append(c)
        size += c.original_size
    if group:
        out.append(group)
    return out


_FREE_BUFFERS: list[tuple[bytearray, bytearray]] = []
_BUFFERS_LOCK = threading.Lock()


def _round_up(size: int) -> int:
    """``size`` rounded up to a whole MiB."""
    return -(-size // (1 << 20)) << 20


@contextmanager
def _span_buffers(raw: int, original: int) -> Iterator[tuple[memoryview, memoryview]]:
    """A pair of buffers (transformed bytes, original bytes) lent to one span and taken back: a process
    keeps a few (as many as spans run at once), each grown to the largest span it held."""
    with _BUFFERS_LOCK:
        pair = _FREE_BUFFERS.pop() if _FREE_BUFFERS else (bytearray(), bytearray())
    if len(pair[0]) < raw or len(pair[1]) < original:  # sizes rounded up: spans of about one size fit
        pair = (
            bytearray(max(_round_up(raw), len(pair[0]))),
            bytearray(max(_round_up(original), len(pair[1]))),
        )
    try:
        yield memoryview(pair[0]), memoryview(pair[1])
    finally:
        with _BUFFERS_LOCK:
            if len(_FREE_BUFFERS) < 4:
                _FREE_BUFFERS.append(pair)


#: what a chunk's stream is read ahead by (and skipped through)
_STREAM_PIECE = 1 << 20


@dataclass(slots=True)
class _OpenStream:
    """A large chunk's stream and the bytes from ``start`` (in the chunk) it last handed out and after."""

    index: int
    stream: Any
    start: int = 0
    held: bytearray = field(default_factory=bytearray)


class AivenLogReader:
    """The original bytes of an Aiven ``.log`` object, read by position: each read fetches (in one ranged
    read) only the transformed chunks it needs and detransforms them; the last chunks are kept, so
    reads that walk the segment fetch each chunk once. ``size`` is the segment's original size."""

    _KEEP = 4

    def __init__(
        self,
        seg: SegmentRef,
        loaded: tuple[Any, bytes | None] | None = None,
        opened: RangeReader | None = None,
    ) -> None:
        self.source = seg.path
        self.manifest, self._key = loaded if loaded is not None else _load_manifest(seg)
        self._chunks = self.manifest.chunks()
        self.size = self.manifest.original_file_size
        try:
            self._reader = opened if opened is not None else seg.storage.open(seg.path)
        except FileNotFoundError:
            raise _missing(seg.path, ".log") from None
        want = self.manifest.transformed_file_size
        if self._reader.size != want:
            have = self._reader.size
            why = "truncated, or chunks missing" if have < want else "bytes the chunk index does not know"
            self._reader.close()
            raise TruncatedError(
                f"{want} bytes of {len(self._chunks)} transformed chunks (the manifest's chunk index)",
                source=seg.path,
                position=min(have, want),
                found=f"an object of {have} bytes ({why})",
            )
        self._cache: dict[int, bytes | memoryview] = {}
        self._pair: tuple[bytearray, bytearray] | None = None
        self._stream: _OpenStream | None = None  # the chunk larger than STREAM_ABOVE read last

    def _chunk_range(self, first: int, last: int) -> None:
        """Chunks ``first``-``last`` detransformed into the cache: read (one ranged read) and detransformed
        into a pair of buffers this reader keeps until it is closed (:func:`_span_buffers`' pool: no new
        memory per chunk, whose page faults cost more than zstd); the chunks cached before are copied out
        of them first."""
        from logdoctor.formats.aiven_rsm import detransform_chunk_into

        todo = [i for i in range(first, last + 1) if i not in self._cache]
        if not todo:
            return
        lo, hi = todo[0], todo[-1]
        start = self._chunks[lo].transformed_position
        end = self._chunks[hi].transformed_position + self._chunks[hi].transformed_size
        base = self._chunks[lo].original_position
        original = self._chunks[hi].original_position + self._chunks[hi].original_size - base
        if len(self._cache) + (hi - lo + 1) > self._KEEP:
            self._cache = {k: v for k, v in self._cache.items() if first <= k <= last}  # this read's
        self._cache = {k: bytes(v) for k, v in self._cache.items()}  # out of the buffers reused below
        scratch = self._scratch_size(lo, hi)
        raw, out = self._buffers(end - start + scratch, original)
        got = self._reader.read_into(start, raw[: end - start])
        if got != end - start:
            raise TruncatedError(
                f"chunks {lo}-{hi} ({end - start} bytes)",
                source=self.source,
                position=start,
                found=f"{got} bytes",
            )
        for i in range(lo, hi + 1):
            c = self._chunks[i]
            at = c.transformed_position - start
            dest = out[c.original_position - base : c.original_position - base + c.original_size]
            try:
                detransform_chunk_into(
                    raw[at : at + c.transformed_size],
                    self.manifest,
                    self._key,
                    dest,
                    source=self.source,
                    position=c.transformed_position,
                    scratch=raw[end - start : end - start + scratch] if scratch else None,
                )
            except FormatError as exc:
                self._cache.pop(i, None)
                _name_chunk(exc, c)
                raise
            self._cache[i] = dest

    def _scratch_size(self, lo: int, hi: int) -> int:
        """The room after a read's transformed bytes that chunks ``lo``-``hi`` are decrypted into before
        they are decompressed (encrypted and compressed chunks; else 0)."""
        if not (self.manifest.encrypted and self.manifest.compression):
            return 0
        return max(self._chunks[i].transformed_size for i in range(lo, hi + 1))

    def _buffers(self, raw: int, original: int) -> tuple[memoryview, memoryview]:
        """This reader's pair of buffers (transformed, original bytes), taken from the pool of
        :func:`_span_buffers` at the first read and given back by :meth:`close`; grown as needed."""
        if self._pair is None:
            with _BUFFERS_LOCK:
                self._pair = _FREE_BUFFERS.pop() if _FREE_BUFFERS else (bytearray(), bytearray())
        if len(self._pair[0]) < raw or len(self._pair[1]) < original:
            self._pair = (
                bytearray(max(_round_up(raw), len(self._pair[0]))),
                bytearray(max(_round_up(original), len(self._pair[1]))),
            )
        return memoryview(self._pair[0]), memoryview(self._pair[1])

    def read_at(self, offset: int, length: int) -> bytes:
        length = max(0, min(length, self.size - offset))
        if length == 0:
            return b""
        size = self.manifest.original_chunk_size
        first, last = offset // size, (offset + length - 1) // size
        streamed = self._chunks[first].original_size > STREAM_ABOVE or (
            self._chunks[last].original_size > STREAM_ABOVE
        )  # every chunk but the last has the first's size
        if not streamed:
            self._chunk_range(first, last)
        parts = []
        for i in range(first, last + 1):
            c = self._chunks[i]
            lo = max(offset, c.original_position) - c.original_position
            hi = min(offset + length, c.original_position + c.original_size) - c.original_position
            if c.original_size > STREAM_ABOVE:
                parts.append(self._streamed(c, lo, hi))
            else:
                if streamed:
                    self._chunk_range(i, i)
                parts.append(self._cache[i][lo:hi])
        return parts[0] if len(parts) == 1 and isinstance(parts[0], (bytes, bytearray)) else b"".join(parts)

    def _open_stream(self, c: Chunk) -> Any:
        """A :class:`~logdoctor.formats.aiven_rsm.ChunkStream` of chunk ``c``: its stored bytes read (one
        ranged read: what is held is what the object holds, never what the chunk declares)."""
        from logdoctor.formats.aiven_rsm import ChunkStream

        raw = bytearray(c.transformed_size)
        got = self._reader.read_into(c.transformed_position, memoryview(raw))
        if got != c.transformed_size:
            raise TruncatedError(
                f"chunk {c.index} ({c.transformed_size} bytes)",
                source=self.source,
                position=c.transformed_position,
                found=f"{got} bytes",
            )
        try:
            return ChunkStream(
                raw,
                self.manifest,
                self._key,
                expected_size=c.original_size,
                source=self.source,
                position=c.transformed_position,
            )
        except FormatError as exc:
            _name_chunk(exc, c)
            raise

    def _stream_into(self, stream: Any, c: Chunk, out: memoryview) -> int:
        try:
            return int(stream.readinto(out))
        except FormatError as exc:
            _name_chunk(exc, c)
            raise

    def _streamed(self, c: Chunk, lo: int, hi: int) -> bytes | bytearray:
        """Bytes ``lo``-``hi`` of a chunk larger than :data:`STREAM_ABOVE`, from its stream: read on from
        where the last read of it ended (reads that walk the chunk decompress it once), reopened from the
        chunk's start for a read behind that. What is held: the bytes from the last read's start on (a
        piece read ahead after a small read). A read of more than a piece is decompressed straight into the
        one buffer it returns, which is also what is held (never resized afterwards): a batch of 1 GiB is
        in memory once, not four times (issue 57 item 6)."""
        st = self._stream
        if st is None or st.index != c.index or lo < st.start:
            if st is not None:
                st.stream.close()
            st = self._stream = _OpenStream(c.index, self._open_stream(c))
        held_end = st.start + len(st.held)
        if hi <= held_end:  # held already
            return bytes(memoryview(st.held)[lo - st.start : hi - st.start])
        if lo >= held_end:  # skip to ``lo``, a piece at a time
            skip = lo - held_end
            st.start, st.held = lo, bytearray()
            scratch = memoryview(bytearray(min(skip, _STREAM_PIECE) or 1))
            while skip:
                n = self._stream_into(st.stream, c, scratch[: min(skip, len(scratch))])
                if not n:
                    break
                skip -= n
            held_end = lo
        want = hi - lo
        size = max(want, min(_STREAM_PIECE, c.original_size - lo))
        out = bytearray(size)
        kept = held_end - lo  # the held bytes from ``lo`` on (fewer than ``want``)
        if kept:
            out[:kept] = memoryview(st.held)[lo - st.start :]
        filled = kept
        view = memoryview(out)
        while filled < size:
            n = self._stream_into(st.stream, c, view[filled:])
            if not n:
                break
            filled += n
        view.release()
        if filled < size:
            del out[filled:]
        st.start, st.held = lo, out
        if want > _STREAM_PIECE and len(out) <= want:
            return out  # shared with what is held: never resized while held
        return bytes(out[:want])

    def _streamed_spans(
        self,
        c: Chunk,
        work: Callable[[int, memoryview], _T],
        done: Callable[[int, int, _T], None],
        span: int,
    ) -> None:
        """:meth:`for_each_span` over one chunk larger than :data:`STREAM_ABOVE`: its stream in pieces of
        ``span`` bytes into one buffer, on the caller's thread (a stream is read in order)."""
        stream = self._open_stream(c)
        try:
            with _span_buffers(0, min(span, c.original_size)) as (_, out):
                pos = c.original_position
                while pos < c.original_position + c.original_size:
                    n = self._stream_into(
                        stream, c, out[: min(span, c.original_position + c.original_size - pos)]
                    )
                    if not n:
                        break
                    done(pos, n, work(pos, out[:n]))
                    pos += n
        finally:
            stream.close()

    def for_each_span(
        self,
        work: Callable[[int, memoryview], _T],
        done: Callable[[int, int, _T], None],
        *,
        span: int = 8 << 20,
        workers: int = 2,
    ) -> None:
        """The segment's original bytes, span by span: consecutive chunks of about ``span`` original bytes
        (each span's transformed chunks fetched in one ranged read), detransformed on ``workers`` threads
        into buffers the threads reuse (no new memory per chunk: fresh memory's page faults cost more than
        zstd, which like the reads runs without the GIL). ``work(position, view)`` runs on that thread
        with the span's original bytes (``view`` is valid only during the call); ``done(position, length,
        result)`` on the caller's, span by span in order of position. Errors are :meth:`read_at`'s (a
        short read, a chunk that does not detransform, named by object, chunk and original bytes), the
        first raised once no thread is still working. A chunk larger than :data:`STREAM_ABOVE` is read as a
        stream, ``span`` bytes at a time on the caller's thread: never whole."""
        spans = _spans(self._chunks, span)
        if any(g[0].original_size > STREAM_ABOVE for g in spans):  # such a chunk is a group of its own
            run: list[list[Chunk]] = []
            for group in [*spans, []]:
                if group and group[0].original_size <= STREAM_ABOVE:
                    run.append(group)
                    continue
                if run:
                    self._for_spans(run, work, done, workers)
                    run = []
                if group:
                    self._streamed_spans(group[0], work, done, span)
            return
        self._for_spans(spans, work, done, workers)

    def _for_spans(
        self,
        spans: list[list[Chunk]],
        work: Callable[[int, memoryview], _T],
        done: Callable[[int, int, _T], None],
        workers: int,
    ) -> None:
        from concurrent.futures import ThreadPoolExecutor

        if len(spans) == 1 or workers < 2:  # nothing to overlap: no thread to hand over to
            for group in spans:
                done(group[0].original_position, _original_size(group), self._span(group, work))
            return
        pending: deque[tuple[list[Chunk], Future[_T]]] = deque()
        with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="aiven-span") as ex:
            try:
                for group in spans:
                    pending.append((group, ex.submit(self._span, group, work)))
                    if len(pending) > workers:
                        first, fut = pending.popleft()
                        done(first[0].original_position, _original_size(first), fut.result())
                while pending:
                    first, fut = pending.popleft()
                    done(first[0].original_position, _original_size(first), fut.result())
            except BaseException:
                for _, fut in pending:
                    fut.cancel()
                raise

    def _span(self, group: list[Chunk], work: Callable[[int, memoryview], _T]) -> _T:
        from logdoctor.formats.aiven_rsm import detransform_chunk_into

        start = group[0].transformed_position
        length = group[-1].transformed_position + group[-1].transformed_size - start
        scratch = self._scratch_size(group[0].index, group[-1].index)
        with _span_buffers(length + scratch, _original_size(group)) as (raw, out):
            got = self._reader.read_into(start, raw[:length])
            if got != length:
                lo, hi = group[0].index, group[-1].index
                raise TruncatedError(
                    f"chunks {lo}-{hi} ({length} bytes)",
                    source=self.source,
                    position=start,
                    found=f"{got} bytes",
                )
            base = group[0].original_position
            for c in group:
                at = c.transformed_position - start
                try:
                    detransform_chunk_into(
                        raw[at : at + c.transformed_size],
                        self.manifest,
                        self._key,
                        out[c.original_position - base : c.original_position - base + c.original_size],
                        source=self.source,
                        position=c.transformed_position,
                        scratch=raw[length : length + scratch] if scratch else None,
                    )
                except FormatError as exc:
                    _name_chunk(exc, c)
                    raise
            return work(base, out[: _original_size(group)])

    def detach(self) -> RangeReader:
        """The open object, left open by this reader's close (for another: :func:`open_remote_log`)."""
        opened, self._reader = self._reader, RangeReader(None, self._reader.size, False)
        return opened

    def close(self) -> None:
        self._reader.close()
        if self._stream is not None:
            self._stream.stream.close()
            self._stream = None
        pair, self._pair = self._pair, None
        self._cache = {}  # views of the buffers given back
        if pair is not None:
            with _BUFFERS_LOCK:
                if len(_FREE_BUFFERS) < 4:
                    _FREE_BUFFERS.append(pair)

    def __enter__(self) -> AivenLogReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_remote_log(
    seg: SegmentRef, loaded: tuple[Any, bytes | None] | None = None, opened: RangeReader | None = None
) -> Any:
    """A reader (``size``, ``read_at``, ``close``; a context manager) of a remote segment's original
    ``.log`` bytes. Raises FormatError naming the object for a missing or bad object or key, OSError
    when the store cannot be read. What this process already read of the segment, so that no object is
    asked for twice in one run: ``loaded``, Aiven's manifest and data key (:func:`load_manifest`);
    ``opened``, the ``.log`` object opened by an earlier reader (its ``detach``: no second HEAD request;
    the reader owns it now). The size checks run on it again, and every read's short-read check."""
    assert seg.remote is not None
    if seg.remote.layout == "aiven":
        return AivenLogReader(seg, loaded, opened)
    return _PlainReader(seg, opened)


_INDEX_KINDS = {"offset": (".index", "offset"), "timestamp": (".timeindex", "timestamp")}


def remote_index_bytes(seg: SegmentRef, kind: str) -> bytes:
    """The segment's ``offset`` or ``timestamp`` index (empty when it is missing or unreadable: the
    index only makes seeks shorter)."""
    from logdoctor.formats.aiven_rsm import detransform_chunk

    remote = seg.remote
    assert remote is not None
    suffix, name = _INDEX_KINDS[kind]
    try:
        if remote.layout == "kafka-local":
            return seg.storage.read(seg.path[: -len(".log")] + suffix)
        manifest, key = _load_manifest(seg)
        where = manifest.indexes.get(name)
        if where is None or where[1] == 0:
            return b""
        data = seg.storage.read_range(remote.indexes, where[0], where[1])  # type: ignore[arg-type]
        return detransform_chunk(data, manifest, key, compressed=False, source=remote.indexes)
    except (OSError, ValueError, FormatError):
        return b""
