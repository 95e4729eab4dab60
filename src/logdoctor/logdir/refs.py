"""Small picklable values naming a partition and its live segments, for work planned on one machine
and done on another (Spark executors).

:class:`logdoctor.logdir.model.Partition` produces them for a local log dir (``Partition.ref()``,
``LogDir.partition_refs()``); :mod:`logdoctor.logdir.discovery` produces the same values for a log dir
at a URI, listed through its :class:`~logdoctor.logdir.storage.Storage` with the same naming rules
(:mod:`logdoctor.logdir.names`). A ref holds plain strings and numbers and the storage value: it
pickles cheaply, and reads nothing until :mod:`logdoctor.logdir.seek` reads through it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from logdoctor.logdir.names import SegmentFileType
from logdoctor.logdir.storage import LOCAL, Storage

__all__ = ["PartitionRef", "RemoteSegment", "SegmentRef"]

_LOG = SegmentFileType.LOG.value


@dataclass(frozen=True, slots=True)
class RemoteSegment:
    """How to read one segment of the remote tier (:mod:`logdoctor.logdir.remote_reader`): plain values."""

    layout: str
    segment_id: str
    root: str  # the store's root location (what the records' ``log_dir`` column names)
    manifest: str | None = None  # aiven: the .rsm-manifest location
    indexes: str | None = None  # aiven: the .indexes location
    private_key: str | None = None
    local_from: int | None = None  # offsets at and after this are read from the local log
    end_offset: int | None = None  # the last offset, when known (the next remote segment's base - 1)

    @classmethod
    def listed(cls, layout: str, segment_id: str, log: str, opts: Any, **bounds: int | None) -> RemoteSegment:
        """The segment whose ``.log`` object the store lists at ``log`` (Aiven's manifest and indexes objects
        beside it), read with ``opts`` (:class:`~logdoctor.logdir.remote_store.RemoteOptions`: the store's
        root, the private key); ``bounds``: ``local_from``, ``end_offset``."""
        stem, aiven = log[: -len(_LOG)], layout == "aiven"
        return cls(
            layout,
            segment_id,
            opts.storage,
            manifest=stem + ".rsm-manifest" if aiven else None,
            indexes=stem + ".indexes" if aiven else None,
            private_key=opts.private_key,
            **bounds,  # type: ignore[arg-type]
        )

    def read_end(self, *ends: int | None) -> int | None:
        """The first offset not read from this segment (None: it is read to its end): past its own last
        offset, where the local log takes over, or at one of ``ends`` (the read's own), whichever is first."""
        last = None if self.end_offset is None else self.end_offset + 1
        return min((c for c in (last, self.local_from, *ends) if c is not None), default=None)

    def offsets_text(self, base_offset: int, first_unread: int | None = None) -> str:
        start = base_offset if first_unread is None else first_unread
        end = self.read_end()
        return f"offsets {start}-{end - 1}" if end is not None else f"offsets {start} and after"


@dataclass(frozen=True, slots=True)
class SegmentRef:
    """One live ``.log`` file (``path``, ``size`` bytes when listed) and the names of its index files."""

    log_dir: str
    topic: str
    partition: int
    base_offset: int
    path: str
    size: int
    next_base_offset: int | None = None  # base offset of the next segment of the partition
    storage: Storage = LOCAL  # where ``path`` is (a local path, or a URI on that file system)
    # a segment of the remote tier (``path`` is its .log object in the store): how to read it
    # (:mod:`logdoctor.logdir.remote_attach`); None for a segment of a log dir
    remote: RemoteSegment | None = None

    @property
    def index_path(self) -> str:
        return self.path[: -len(_LOG)] + SegmentFileType.INDEX.value

    @property
    def time_index_path(self) -> str:
        return self.path[: -len(_LOG)] + SegmentFileType.TIMEINDEX.value

    @property
    def ranged(self) -> bool:
        """Read by byte ranges (a file at a URI, or a remote-tier object), never mapped."""
        return self.remote is not None or not self.storage.is_local

    @property
    def is_last(self) -> bool:
        return self.next_base_offset is None


@dataclass(frozen=True, slots=True)
class PartitionRef:
    """One topic-partition folder (``kind``: a :class:`~logdoctor.logdir.names.DirKind` value) and its
    live segments in base-offset order."""

    log_dir: str
    topic: str
    partition: int
    path: str
    kind: str
    segments: tuple[SegmentRef, ...] = ()
    storage: Storage = LOCAL
    #: why the folder could not be listed (permission denied): its segments are unknown, none is read,
    #: and the read plan names it as not read (:mod:`logdoctor.logdir.read_plan`)
    unreadable: str | None = None


def segment_refs(
    log_dir: str,
    topic: str,
    partition: int,
    logs: list[tuple[int, str, int | None]],
    storage: Storage = LOCAL,
) -> tuple[SegmentRef, ...]:
    """Refs of a partition's live ``.log`` files given as (base offset, path, size) in base-offset
    order; a size of None (the file could not be stat'ed) leaves the file out but still bounds the
    segment before it (its base offset is that segment's ``next_base_offset``)."""
    out: list[SegmentRef] = []
    for i, (base, path, size) in enumerate(logs):
        if size is None:
            continue
        nxt = logs[i + 1][0] if i + 1 < len(logs) else None
        out.append(SegmentRef(log_dir, topic, partition, base, path, size, nxt, storage))
    return tuple(out)
