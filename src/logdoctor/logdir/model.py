"""The lazy model of a broker log dir: LogDir -> Partition -> Segment.

Opening a :class:`LogDir` reads nothing. Listing partitions costs one ``os.scandir`` of the root;
listing a partition's segments costs one ``os.scandir`` of its folder (names only; sizes and
mtimes come from the cached ``DirEntry.stat()`` when first asked). File contents are read only
by the accessors that need them, and each is read at most once per object (cached).

Rules follow the broker (cited where subtle): K:core/src/main/scala/kafka/log/LogManager.scala
(loadLogs), K:storage/src/main/java/org/apache/kafka/storage/internals/log/LogLoader.java,
LogSegment.java, UnifiedLog.java.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from logdoctor.errors import FormatError
from logdoctor.logdir import files
from logdoctor.logdir.lock import is_locked as _is_locked
from logdoctor.logdir.names import (
    CLEAN_SHUTDOWN_FILE,
    CLEANER_OFFSET_CHECKPOINT,
    LEADER_EPOCH_CHECKPOINT_FILE,
    LOG_START_OFFSET_CHECKPOINT,
    META_PROPERTIES_FILE,
    OFFSET_CHECKPOINT_FILES,
    PARTITION_METADATA_FILE,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    DirKind,
    FileState,
    PartitionDirName,
    PartitionFile,
    PartitionFileKind,
    RootEntry,
    RootEntryKind,
    SegmentFileType,
    classify_partition_file,
    classify_root_entry,
    match_segment_file,
)

if TYPE_CHECKING:
    from logdoctor.formats.index import OffsetEntry, TimeEntry
    from logdoctor.formats.records import Batch
    from logdoctor.logdir.refs import PartitionRef

__all__ = [
    "CheckpointRead",
    "Irregular",
    "LogDir",
    "Orphan",
    "Partition",
    "Segment",
    "SmallFileRead",
    "shared_log_dirs",
]


_T = TypeVar("_T")


class _cached(Generic[_T]):
    """functools.cached_property without its lock (Python 3.11 takes a lock shared by every instance on
    each first access; 3.12 dropped it): the value is computed on first access and stored in the
    instance's ``__dict__``, where later lookups find it without calling this descriptor. A scan of
    50,000 partitions computes ~200,000 of them."""

    def __init__(self, fn: Callable[[Any], _T]) -> None:
        self.fn = fn
        self.attr = fn.__name__
        self.__doc__ = fn.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.attr = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> _cached[_T]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> _T: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> Any:
        if obj is None:
            return self
        value = obj.__dict__[self.attr] = self.fn(obj)
        return value


# --- small files, read leniently -------------------------------------------------------------------


@dataclass(slots=True)
class SmallFileRead:
    """A small file parsed leniently: ``value`` is None when missing or unparsable; ``error`` says why."""

    path: Path
    exists: bool
    value: Any = None
    error: FormatError | OSError | None = None


@dataclass
class CheckpointRead:
    """A checkpoint file read leniently (formats.checkpoint.scan_*): problems are kept, not raised.

    ``checkpoint`` holds every readable entry even when some lines are bad; ``problems`` lists
    what the broker would reject (CheckpointProblem, in Kafka's wording); ``error`` is set when the
    file could not be read or decoded at all. Kafka treats an unreadable recovery-point/log-start
    checkpoint as empty (LogManager.loadLogs); we keep what can be read and say what was wrong.
    """

    path: Path
    exists: bool
    checkpoint: Any = None  # OffsetCheckpoint | LeaderEpochCheckpoint
    problems: list[Any] = field(default_factory=list)
    error: FormatError | OSError | None = None

    @cached_property
    def offsets(self) -> dict[tuple[str, int], int]:
        """(topic, partition) -> offset of an offset checkpoint (a later duplicate wins, as in Kafka)."""
        cp = self.checkpoint
        return {(t, p): o for t, p, o in cp.entries} if cp is not None and hasattr(cp, "offsets") else {}

    @property
    def ok(self) -> bool:
        return self.exists and self.error is None and not self.problems

    def get(self, topic: str, partition: int) -> int | None:
        return self.offsets.get((topic, partition))


def _scan_checkpoint(path: Path, scan: Any) -> CheckpointRead:
    read = _read_small(path, scan)  # a FormatError: not UTF-8
    found = read.value
    if found is None:
        return CheckpointRead(path, read.exists, error=read.error)
    return CheckpointRead(path, True, found.checkpoint, list(found.problems))


def _read_offset_checkpoint(path: Path) -> CheckpointRead:
    from logdoctor.formats.checkpoint import scan_offset_checkpoint

    return _scan_checkpoint(path, scan_offset_checkpoint)


def _read_small(path: Path, parse: Any) -> SmallFileRead:
    try:
        data = files.read_file(path)
    except FileNotFoundError:
        return SmallFileRead(path, exists=False)
    except OSError as e:
        return SmallFileRead(path, exists=True, error=e)
    try:
        return SmallFileRead(path, True, parse(data, source=str(path)))
    except FormatError as e:
        return SmallFileRead(path, True, None, e)


# --- orphans ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Orphan:
    """Something in a log dir that is not part of a live log.

    ``kind``: "delete-dir", "future-dir", "stray-dir", "unknown-dir", "unknown-file", "tmp-file",
    or in a partition folder "deleted", "cleaned", "swap" (segment files in those states),
    "index-without-log", "partial-snapshot", "unknown-file", "tmp-file".
    """

    path: Path
    kind: str
    reason: str
    partition: Partition | None = None


# --- what is never read -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Irregular:
    """An entry of a log dir or partition folder that is never opened nor followed.

    ``kind`` (:func:`logdoctor.logdir.files.file_kind`): "symlink" (any symlink below the log dir's
    root: what it points to is not checked, and never read or written through), or "FIFO", "socket",
    "character device", "block device" (opening a FIFO for reading blocks), or "folder" where only
    files belong (in a partition folder). ``target`` is a symlink's target as written.
    """

    path: Path
    kind: str
    target: str | None = None

    @property
    def is_symlink(self) -> bool:
        return self.kind == "symlink"


def _irregular(e: os.DirEntry[str]) -> Irregular:
    try:
        mode = e.stat(follow_symlinks=False).st_mode
    except OSError:
        return Irregular(Path(e.path), "file of unknown type")
    kind = files.file_kind(mode)
    target = None
    if kind == "symlink":
        try:
            target = os.readlink(e.path)
        except OSError:
            target = None
    return Irregular(Path(e.path), kind, target)


# --- segments ---------------------------------------------------------------------------------------


class Segment:
    """One live segment: ``<base>.log`` and its index files. Reads nothing until asked."""

    def __init__(
        self, partition: Partition, base_offset: int, entries: dict[SegmentFileType, os.DirEntry[str]]
    ) -> None:
        self.partition = partition
        self.base_offset = base_offset
        self._entries = entries
        self.last_scan_error: FormatError | None = None  # why the walk for last_batch stopped early
        # the paths as listed, plain strings (no Path object): for hot loops that key sets by path
        self.log_file: str = entries[SegmentFileType.LOG].path
        self.index_file, self.timeindex_file, self.txnindex_file = (
            e.path if (e := entries.get(t)) is not None else None
            for t in (SegmentFileType.INDEX, SegmentFileType.TIMEINDEX, SegmentFileType.TXNINDEX)
        )

    def __repr__(self) -> str:
        return f"Segment({self.partition.name}/{self.base_offset:020d})"

    # paths, sizes, mtimes (scandir entries; stat on first use, cached by DirEntry)
    def _path(self, t: SegmentFileType) -> Path | None:
        e = self._entries.get(t)
        return Path(e.path) if e is not None else None

    @property
    def log_path(self) -> Path:
        return Path(self._entries[SegmentFileType.LOG].path)

    @property
    def index_path(self) -> Path | None:
        return self._path(SegmentFileType.INDEX)

    @property
    def timeindex_path(self) -> Path | None:
        return self._path(SegmentFileType.TIMEINDEX)

    @property
    def txnindex_path(self) -> Path | None:
        return self._path(SegmentFileType.TXNINDEX)

    @property
    def log_name(self) -> str:
        """The ``.log`` file's name (``<20-digit base offset>.log``)."""
        return self._entries[SegmentFileType.LOG].name

    def listed_stat(self, t: SegmentFileType) -> os.stat_result | None:
        """The stat of the segment's file of type ``t`` as listed (cached by the listing); None: no such
        file."""
        e = self._entries.get(t)
        return e.stat() if e is not None else None

    def _size(self, t: SegmentFileType) -> int | None:
        e = self._entries.get(t)
        return e.stat().st_size if e is not None else None

    @property
    def size(self) -> int:
        """Size of the ``.log`` in bytes."""
        return self._entries[SegmentFileType.LOG].stat().st_size

    @property
    def index_size(self) -> int | None:
        return self._size(SegmentFileType.INDEX)

    @property
    def timeindex_size(self) -> int | None:
        return self._size(SegmentFileType.TIMEINDEX)

    @property
    def mtime_ms(self) -> int:
        """The ``.log`` file's mtime in ms (File.lastModified, used by retention when no timestamp)."""
        return self._entries[SegmentFileType.LOG].stat().st_mtime_ns // 1_000_000

    @property
    def is_active(self) -> bool:
        return self.partition.active_segment is self

    # contents
    def map_log(self) -> memoryview:
        """The ``.log`` bytes as a read-only mmap view (empty view for an empty file), up to its size as
        listed (:attr:`size`: bytes a running broker appended since are not read)."""
        return files.map_file(self.log_path, end=self.size)

    def offset_index(self, *, include_zero_slots: bool = False) -> list[OffsetEntry]:
        """Entries of the ``.index`` (absolute offsets); [] when missing.

        By default the trailing zero slots of a preallocated (untrimmed) index are left out.
        """
        from logdoctor.formats.index import OFFSET_ENTRY_SIZE, parse_offset_index

        return self._index(self.index_path, OFFSET_ENTRY_SIZE, parse_offset_index, include_zero_slots)

    def time_index(self, *, include_zero_slots: bool = False) -> list[TimeEntry]:
        """Entries of the ``.timeindex`` (absolute offsets); [] when missing."""
        from logdoctor.formats.index import TIME_ENTRY_SIZE, parse_time_index

        return self._index(self.timeindex_path, TIME_ENTRY_SIZE, parse_time_index, include_zero_slots)

    def _index(self, path: Path | None, entry_size: int, parse: Any, include_zero_slots: bool) -> list[Any]:
        from logdoctor.formats.index import real_entry_count

        if path is None:
            return []
        data = files.read_file(path)
        if not include_zero_slots:
            data = data[: real_entry_count(data, entry_size) * entry_size]
        return parse(data, self.base_offset, source=str(path))

    def batches(self, *, start: int = 0, verify_crc: bool = False) -> Iterator[Batch]:
        """Walk the ``.log`` batch by batch (no decompression); typed errors on bad bytes."""
        from logdoctor.formats.records import iter_batches

        yield from iter_batches(self.map_log(), source=str(self.log_path), start=start, verify_crc=verify_crc)

    def _last_batch_from(
        self, buf: bytes | memoryview, start: int, base_position: int = 0
    ) -> tuple[Batch | None, FormatError | None]:
        from logdoctor.formats.records import iter_batches

        last = None
        try:
            for b in iter_batches(buf, source=str(self.log_path), start=start, base_position=base_position):
                last = b
        except FormatError as e:
            return last, e
        return last, None

    def _index_seek_position(self, log_size: int) -> int:
        """Start position of the last indexed batch, or 0 (no index, empty, or inconsistent)."""
        from logdoctor.formats.index import OFFSET_ENTRY_SIZE, parse_offset_index, real_entry_count

        path = self.index_path
        if path is None:
            return 0
        try:
            data = files.read_file(path)
            n = real_entry_count(data, OFFSET_ENTRY_SIZE)
            if n == 0:
                return 0
            tail = data[(n - 1) * OFFSET_ENTRY_SIZE : n * OFFSET_ENTRY_SIZE]
            entry = parse_offset_index(tail, self.base_offset, source=str(path))[0]
        except (FormatError, OSError):
            return 0
        return entry.position if 0 <= entry.position < log_size else 0

    @_cached
    def last_batch(self) -> Batch | None:
        """The last complete batch of the ``.log``, found without scanning from the start.

        Seeks to the last offset-index entry's position (the start of a batch) and walks from
        there. A torn final batch is end of data, as in recovery. If the index points at garbage
        the walk starts again from position 0.
        """
        size = self.size
        if size == 0:
            return None
        pos = self._index_seek_position(size)
        last: Batch | None = None
        err: FormatError | None = None
        if pos > 0:
            # one positioned read of the tail: no map, no file descriptor kept open
            tail = files.read_range(self.log_path, pos, size - pos)  # up to the size as listed
            last, err = self._last_batch_from(tail, 0, base_position=pos)
            if last is None or (err is not None and err.position == pos):
                pos = 0  # the index points at garbage: walk from the start
        if pos == 0:
            buf = self.map_log()
            last, err = self._last_batch_from(buf, 0)
            if last is not None:
                # keep a copy of the last batch only, so the map (and its fd) is released now
                last, _ = self._last_batch_from(bytes(last.raw()), 0, base_position=last.position)
            del buf
        self.last_scan_error = err
        return last

    def last_offset(self) -> int | None:
        """Last offset of the last complete batch; None when the segment holds no batch."""
        b = self.last_batch
        return b.last_offset if b is not None else None

    def next_offset(self) -> int:
        """The offset after this segment's data (its base offset when empty): the LEO if active."""
        last = self.last_offset()
        return self.base_offset if last is None else last + 1

    def largest_timestamp_from_index(self) -> int:
        """What the broker computes for time retention without recovery (LogSegment.largestTimestamp).

        maxTimestampSoFar comes from the time index's last entry, where an existing index file has
        ``length // 12`` entries (AbstractIndex: a pre-existing file's position is its rounded-down
        length), so an untrimmed, zero-filled index yields 0 (KAFKA-10207). A missing or empty
        index has no entry: NO_TIMESTAMP. A timestamp < 0 falls back to the ``.log`` mtime.
        """
        from logdoctor.formats.index import TIME_ENTRY_SIZE, parse_time_index

        path = self.timeindex_path
        ts = -1
        if path is not None:
            size = os.stat(path).st_size
            slots = size // TIME_ENTRY_SIZE
            if slots > 0:
                tail = files.read_range(path, (slots - 1) * TIME_ENTRY_SIZE, TIME_ENTRY_SIZE)
                ts = parse_time_index(tail, self.base_offset, source=str(path))[0].timestamp
        return ts if ts >= 0 else self.mtime_ms

    def largest_timestamp_from_log(self) -> int:
        """Max of the batches' max timestamps over the whole ``.log`` (what recovery computes); -1 if none.

        Stops quietly at the first bad batch, like recovery, which truncates there.
        """
        best = -1
        try:
            for b in self.batches():
                if b.max_timestamp > best:
                    best = b.max_timestamp
        except FormatError:
            pass
        return best


# --- partitions -------------------------------------------------------------------------------------


class Partition:
    """One topic-partition folder. Listing its files costs one scandir; nothing else until asked.

    Only regular files are listed: symlinks (never followed), FIFOs, sockets, devices and folders are
    left out of everything and listed in :attr:`irregular` instead (the entry's type comes with the
    scandir on most file systems: no extra stat). With ``stat_files=True`` (what the scan uses) the
    listing also stats every file once, and a file whose stat fails (removed since the scandir, a
    folder without search permission) is left out of everything: the segments' sizes and mtimes and
    :attr:`entries` then never stat again.
    """

    def __init__(
        self,
        log_dir: LogDir | None,
        path: str | os.PathLike[str],
        dir_name: PartitionDirName,
        *,
        stat_files: bool = False,
    ):
        self.log_dir = log_dir
        #: the folder as a plain string (a str ``path`` is taken as given: as ``os.scandir`` names it)
        self.path_str: str = os.fspath(path)
        if isinstance(path, Path):
            self.__dict__["path"] = path
        self.dir_name = dir_name
        self._stat_files = stat_files

    @_cached
    def path(self) -> Path:
        """The folder (a :class:`Path` made on first use: a scan of 50,000 partitions needs none)."""
        return Path(self.path_str)

    def __repr__(self) -> str:
        return f"Partition({self.name!r})"

    @property
    def topic(self) -> str:
        return self.dir_name.topic

    @property
    def partition(self) -> int:
        return self.dir_name.partition

    @property
    def kind(self) -> DirKind:
        return self.dir_name.kind

    @_cached
    def name(self) -> str:
        """The folder's name (given by the root's listing for its partitions: no basename for 50,000)."""
        return os.path.basename(self.path_str)

    @property
    def is_metadata(self) -> bool:
        return self.dir_name.is_metadata

    # listing ---------------------------------------------------------------------------------------
    @_cached
    def _scandir(self) -> tuple[list[os.DirEntry[str]], list[os.DirEntry[str]]]:
        regular: list[os.DirEntry[str]] = []
        other: list[os.DirEntry[str]] = []
        with os.scandir(self.path_str) as it:
            for e in it:
                (regular if e.is_file(follow_symlinks=False) else other).append(e)
        return regular, other

    @_cached
    def _listing(self) -> list[os.DirEntry[str]]:
        listing = self._scandir[0]
        return [e for e in listing if _stat_ok(e)] if self._stat_files else listing

    @_cached
    def irregular(self) -> list[Irregular]:
        """Symlinks, FIFOs, sockets, devices and folders in the folder, sorted by name: never opened."""
        return sorted((_irregular(e) for e in self._scandir[1]), key=lambda i: i.path.name)

    @_cached
    def entries(self) -> list[os.DirEntry[str]]:
        """Every regular file of the folder as listed, sorted by name (``.path`` is a str, ``.stat()``
        cached)."""
        return sorted(self._listing, key=lambda e: e.name)

    @_cached
    def _classified(self) -> list[tuple[PartitionFile, os.DirEntry[str]]]:
        return [(classify_partition_file(e.name), e) for e in self._listing]

    @_cached
    def files(self) -> list[PartitionFile]:
        """Every file of the folder, classified, sorted by name."""
        return sorted((pf for pf, _ in self._classified), key=lambda pf: pf.name)

    @_cached
    def _segments_and_orphans(self) -> tuple[list[Segment], list[Orphan], list[tuple[int, str]]]:
        groups: dict[int, dict[SegmentFileType, os.DirEntry[str]]] = {}
        orphans: list[Orphan] = []
        snapshots: list[tuple[int, str]] = []
        snapshot = SegmentFileType.SNAPSHOT
        live = FileState.LIVE
        for e in self._listing:
            seg = match_segment_file(e.name)  # the hot path: most files are segment files
            if seg is not None:
                base, ft, state = seg
                if ft is snapshot:
                    if state is live:
                        snapshots.append((base, e.path))
                    else:
                        orphans.append(Orphan(Path(e.path), "deleted", _STATE_REASON[state], self))
                elif state is live:
                    groups.setdefault(base, {})[ft] = e
                else:
                    orphans.append(Orphan(Path(e.path), state.value.lstrip("."), _STATE_REASON[state], self))
                continue
            pf = classify_partition_file(e.name)
            if pf.kind is PartitionFileKind.KRAFT_SNAPSHOT and pf.state is not live:
                orphans.append(Orphan(Path(e.path), "deleted", _STATE_REASON[FileState.DELETED], self))
            elif pf.kind is PartitionFileKind.KRAFT_SNAPSHOT_PARTIAL:
                orphans.append(Orphan(Path(e.path), "partial-snapshot", "KRaft snapshot being written", self))
            elif pf.kind is PartitionFileKind.TMP:
                orphans.append(Orphan(Path(e.path), "tmp-file", "left by an interrupted atomic write", self))
            elif pf.kind is PartitionFileKind.UNKNOWN:
                orphans.append(Orphan(Path(e.path), "unknown-file", "not a file Kafka writes here", self))
        # a .log that is a symlink, a FIFO or a folder is not a segment here, but its index files are
        # no orphans either: the broker follows the symlink (and would keep them), and a file to move
        # aside must not be inferred from an entry logdoctor never reads
        irregular_logs = set()
        for e in self._scandir[1]:
            seg = match_segment_file(e.name)
            if seg is not None and seg[1] is SegmentFileType.LOG and seg[2] is live:
                irregular_logs.add(seg[0])
        segments: list[Segment] = []
        for base in sorted(groups):
            entries = groups[base]
            if SegmentFileType.LOG in entries:
                segments.append(Segment(self, base, entries))
            elif base in irregular_logs:
                continue
            else:
                # LogLoader.removeTempFilesAndCollectSwapFiles deletes index files with no .log
                for t, e in sorted(entries.items()):
                    orphans.append(Orphan(Path(e.path), "index-without-log", f"{t.value} with no .log", self))
        orphans.sort(key=lambda o: o.path.name)
        snapshots.sort()
        return segments, orphans, snapshots

    @property
    def segments(self) -> list[Segment]:
        """Live segments sorted by base offset (a ``.log`` present; index files optional)."""
        return self._segments_and_orphans[0]

    @property
    def orphan_files(self) -> list[Orphan]:
        """.deleted/.cleaned/.swap files, index files without a .log, temp and unknown files."""
        return self._segments_and_orphans[1]

    def segment(self, base_offset: int) -> Segment:
        for s in self.segments:
            if s.base_offset == base_offset:
                return s
        raise KeyError(base_offset)

    @property
    def active_segment(self) -> Segment | None:
        segs = self.segments
        return segs[-1] if segs else None

    @_cached
    def producer_snapshots(self) -> list[tuple[int, Path]]:
        """Live producer snapshots ``(offset, path)`` sorted by offset."""
        return [(offset, Path(path)) for offset, path in self.producer_snapshot_files]

    @property
    def producer_snapshot_files(self) -> list[tuple[int, str]]:
        """:attr:`producer_snapshots` with the paths as listed (plain strings)."""
        return self._segments_and_orphans[2]

    @_cached
    def kraft_snapshots(self) -> list[tuple[int, int, Path]]:
        """Live KRaft snapshots ``(end offset, epoch, path)`` (only in ``__cluster_metadata-0``)."""
        return sorted(
            (pf.base_offset, pf.epoch, Path(e.path))
            for pf, e in self._classified
            if pf.kind is PartitionFileKind.KRAFT_SNAPSHOT
            and pf.state is FileState.LIVE
            and pf.base_offset is not None
            and pf.epoch is not None
        )

    def ref(self, log_dir: str | None = None) -> PartitionRef:
        """This folder and its live segments as a small picklable value (:mod:`logdoctor.logdir.refs`)
        for work planned here and done elsewhere (the Spark data sources). ``log_dir``: the log dir's
        path as the caller names it (default: this partition's log dir, else the folder holding it).

        Lists the folder (OSError when it cannot be) and stats each ``.log``; one that cannot be
        stat'ed is left out, but its base offset still ends the segment before it."""
        from logdoctor.logdir.refs import PartitionRef, segment_refs

        if log_dir is None:
            owner = self.log_dir.path if self.log_dir is not None else None
            log_dir = str(owner) if owner is not None else os.path.dirname(os.path.abspath(self.path))
        logs: list[tuple[int, str, int | None]] = []
        for seg in self.segments:
            try:
                size: int | None = seg.size
            except OSError:
                size = None
            logs.append((seg.base_offset, seg.log_file, size))
        segments = segment_refs(log_dir, self.topic, self.partition, logs)
        return PartitionRef(log_dir, self.topic, self.partition, str(self.path), self.kind.value, segments)

    # offsets ---------------------------------------------------------------------------------------
    def _checkpoint(self, name: str) -> int | None:
        if self.log_dir is None:
            return None
        return self.log_dir.checkpoint(name).get(self.topic, self.partition)

    @property
    def recovery_point(self) -> int | None:
        """From the log dir's recovery-point-offset-checkpoint (None when not listed)."""
        return self._checkpoint(RECOVERY_POINT_CHECKPOINT)

    @property
    def high_watermark(self) -> int | None:
        """From the log dir's replication-offset-checkpoint (None when not listed)."""
        return self._checkpoint(REPLICATION_OFFSET_CHECKPOINT)

    @property
    def cleaner_offset(self) -> int | None:
        return self._checkpoint(CLEANER_OFFSET_CHECKPOINT)

    @property
    def log_start_offset_checkpoint(self) -> int | None:
        return self._checkpoint(LOG_START_OFFSET_CHECKPOINT)

    @property
    def log_start_offset(self) -> int | None:
        """max(log-start checkpoint, first segment's base offset), as LogLoader.load computes it
        without remote storage; the checkpoint alone when there is no segment; None when neither.

        With remote storage (a tiered partition) the broker's log start is the checkpoint itself and this
        is its local log start offset: :func:`logdoctor.logdir.offsets.log_start_offsets` computes both,
        :mod:`logdoctor.checks.tiered` decides which rule applies.
        """
        cp = self.log_start_offset_checkpoint
        segs = self.segments
        if not segs:
            return cp
        first = segs[0].base_offset
        return first if cp is None else max(cp, first)

    @property
    def log_end_offset(self) -> int | None:
        """Next offset after the active segment's last batch (reads only the active segment)."""
        active = self.active_segment
        return active.next_offset() if active is not None else None

    # small files -----------------------------------------------------------------------------------
    @_cached
    def leader_epoch_checkpoint(self) -> CheckpointRead:
        """leader-epoch-checkpoint read leniently (readable entries plus problems)."""
        from logdoctor.formats.checkpoint import scan_leader_epoch_checkpoint

        path = Path(self.path_str, LEADER_EPOCH_CHECKPOINT_FILE)
        return _scan_checkpoint(path, scan_leader_epoch_checkpoint)

    @property
    def leader_epochs(self) -> list[tuple[int, int]]:
        """``(epoch, start offset)`` entries of leader-epoch-checkpoint ([] when missing/empty)."""
        cp = self.leader_epoch_checkpoint.checkpoint
        return list(cp.entries) if cp is not None else []

    @_cached
    def partition_metadata_read(self) -> SmallFileRead:
        from logdoctor.formats.partition_metadata import parse_partition_metadata

        return _read_small(Path(self.path_str, PARTITION_METADATA_FILE), parse_partition_metadata)

    @property
    def topic_id(self) -> str | None:
        """The base64 topic id of partition.metadata (None when missing/unparsable)."""
        pm = self.partition_metadata_read.value
        return pm.topic_id if pm is not None else None


def _stat_ok(e: os.DirEntry[str]) -> bool:
    """Stat ``e`` now (DirEntry caches it); False when that fails."""
    try:
        e.stat()
    except OSError:
        return False
    return True


_STATE_REASON = {
    FileState.DELETED: "renamed for async deletion; LogLoader deletes it at startup",
    FileState.CLEANED: "partial log-cleaner output; LogLoader deletes it at startup",
    FileState.SWAP: "cleaner/split result awaiting swap-in; LogLoader completes or deletes it",
}

# --- log dir -----------------------------------------------------------------------------------------

_ORPHAN_DIR_KIND = {DirKind.DELETE: "delete-dir", DirKind.FUTURE: "future-dir", DirKind.STRAY: "stray-dir"}
_ORPHAN_DIR_REASON = {
    DirKind.DELETE: "scheduled for deletion; LogManager deletes it at startup",
    DirKind.FUTURE: "KIP-113 move target (ReplicaAlterLogDirsThread)",
    DirKind.STRAY: "stray partition no longer assigned to this broker",
}


# LogDir.shared: the log dirs of the current shared_log_dirs() block, by path as given
_SHARED: ContextVar[dict[str, LogDir] | None] = ContextVar("logdoctor_shared_log_dirs", default=None)


@contextmanager
def shared_log_dirs() -> Iterator[None]:
    """Within this block (a scan), :meth:`LogDir.shared` gives one :class:`LogDir` per path, so its root
    listing and checkpoints are read once however many checks ask for them (a scan of 50,000 partitions
    listed its root three times). Nested blocks share the outer one's; per thread/context."""
    if _SHARED.get() is not None:
        yield
        return
    token = _SHARED.set({})
    try:
        yield
    finally:
        _SHARED.reset(token)


class LogDir:
    """A broker log dir (one entry of ``log.dirs``). Construction reads nothing."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)

    @classmethod
    def shared(cls, path: str | os.PathLike[str]) -> LogDir:
        """The LogDir of ``path`` shared within the current :func:`shared_log_dirs` block (what it has read
        is cached, so the files it read are read once); outside one, a new LogDir."""
        shared = _SHARED.get()
        if shared is None:
            return cls(path)
        key = os.fspath(path)
        ld = shared.get(key)
        if ld is None:
            ld = shared[key] = cls(path)
        return ld

    def __repr__(self) -> str:
        return f"LogDir({str(self.path)!r})"

    @_cached
    def _scandir(self) -> tuple[list[tuple[RootEntry, str]], list[Irregular]]:
        out: list[tuple[RootEntry, str]] = []
        other: list[Irregular] = []
        with os.scandir(self.path) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    out.append((classify_root_entry(e.name, True), e.path))
                elif e.is_file(follow_symlinks=False):
                    out.append((classify_root_entry(e.name, False), e.path))
                else:
                    other.append(_irregular(e))
        out.sort(key=lambda x: x[0].name)
        other.sort(key=lambda i: i.path.name)
        return out, other

    @property
    def listing(self) -> list[tuple[RootEntry, str]]:
        """:attr:`entries` with each path a plain string, as ``os.scandir`` names it (no :class:`Path`
        made for each of 50,000 partition folders)."""
        return self._scandir[0]

    @_cached
    def entries(self) -> list[tuple[RootEntry, Path]]:
        """Every folder and regular file of the root, classified, sorted by name (one scandir).

        Symlinks (a partition folder or checkpoint pointing elsewhere is never followed), FIFOs,
        sockets and devices are in :attr:`irregular` instead.
        """
        return [(re, Path(p)) for re, p in self._scandir[0]]

    @property
    def irregular(self) -> list[Irregular]:
        """Symlinks, FIFOs, sockets and devices at the root, sorted by name: never opened."""
        return self._scandir[1]

    @_cached
    def _partition_folders(self) -> list[tuple[PartitionDirName, str, str]]:
        """``(dir name, path as listed, name)`` of every topic-partition folder, sorted."""
        folder = RootEntryKind.PARTITION
        names = sorted(
            (dn.topic, dn.partition, dn.kind, dn.uuid or "", p, dn, re.name)  # a StrEnum: sorts as its value
            for re, p in self.listing
            if re.kind is folder and (dn := re.partition) is not None
        )  # the folder's path decides between equal names' keys (two folders never have one path)
        return [(dn, p, name) for *_key, p, dn, name in names]

    def _partition(self, folder: tuple[PartitionDirName, str, str]) -> Partition:
        dn, p, name = folder
        part = Partition(self, p, dn)
        part.__dict__["name"] = name  # its path's basename, as listed
        return part

    @_cached
    def partition_folders(self) -> list[tuple[PartitionDirName, str, str]]:
        """:attr:`partitions` as ``(dir name, path as listed, name)``, without a :class:`Partition` made for
        each (a scan of 50,000 partitions needs none)."""
        log = DirKind.LOG
        return [f for f in self._partition_folders if f[0].kind is log]

    @_cached
    def partitions(self) -> list[Partition]:
        """Live partition folders (``<topic>-<p>``, including ``__cluster_metadata-0``), sorted."""
        return [self._partition(f) for f in self.partition_folders]

    @_cached
    def _by_tp(self) -> dict[tuple[str, int], Partition]:
        return {(p.topic, p.partition): p for p in self.partitions}

    def partition(self, topic: str, partition: int) -> Partition:
        """The live partition folder ``<topic>-<partition>``; KeyError when absent."""
        return self._by_tp[(topic, partition)]

    def partition_refs(self, log_dir: str | None = None) -> list[PartitionRef]:
        """:meth:`Partition.ref` of every live partition folder, sorted (what the data sources read)."""
        name = str(self.path) if log_dir is None else log_dir
        return [p.ref(name) for p in self.partitions]

    @_cached
    def orphan_partitions(self) -> list[Partition]:
        """``-delete``, ``-future`` and ``-stray`` folders (as partitions, to inspect them)."""
        log = DirKind.LOG
        return [self._partition(f) for f in self._partition_folders if f[0].kind is not log]

    @_cached
    def orphans(self) -> list[Orphan]:
        """Entries of the root that are not part of a live log (never raises)."""
        out = [
            Orphan(p.path, _ORPHAN_DIR_KIND[p.kind], _ORPHAN_DIR_REASON[p.kind], p)
            for p in self.orphan_partitions
        ]
        unknown, tmp = RootEntryKind.UNKNOWN, RootEntryKind.TMP
        for re, p in self.listing:
            if re.kind is unknown:
                path = Path(p)
                is_dir = path.is_dir()
                kind = "unknown-dir" if is_dir else "unknown-file"
                reason = "not a topic-partition folder" if is_dir else "not a file Kafka writes here"
                out.append(Orphan(path, kind, reason))
            elif re.kind is tmp:
                out.append(Orphan(Path(p), "tmp-file", "left by an interrupted atomic write"))
        out.sort(key=lambda o: o.path.name)
        return out

    # root files ------------------------------------------------------------------------------------
    @_cached
    def meta_properties_read(self) -> SmallFileRead:
        from logdoctor.formats.properties import parse_meta_properties

        return _read_small(self.path / META_PROPERTIES_FILE, parse_meta_properties)

    @property
    def meta_properties(self) -> Any:
        """Parsed meta.properties (formats.properties.MetaProperties), None if missing/unparsable."""
        return self.meta_properties_read.value

    def checkpoint(self, name: str) -> CheckpointRead:
        """One of the four offset checkpoints of the root, read once and cached."""
        cache: dict[str, CheckpointRead] = self.__dict__.setdefault("_checkpoints", {})
        if name not in cache:
            cache[name] = _read_offset_checkpoint(self.path / name)
        return cache[name]

    @property
    def recovery_points(self) -> CheckpointRead:
        return self.checkpoint(RECOVERY_POINT_CHECKPOINT)

    @property
    def log_start_offsets(self) -> CheckpointRead:
        return self.checkpoint(LOG_START_OFFSET_CHECKPOINT)

    @property
    def high_watermarks(self) -> CheckpointRead:
        return self.checkpoint(REPLICATION_OFFSET_CHECKPOINT)

    @property
    def problems(self) -> list[tuple[Path, Any]]:
        """``(file, problem)`` for meta.properties and the four checkpoints (reads them if not yet read).

        A problem is an OSError/FormatError (unreadable) or a formats.checkpoint.CheckpointProblem.
        """
        out: list[tuple[Path, Any]] = []
        if self.meta_properties_read.error is not None:
            out.append((self.meta_properties_read.path, self.meta_properties_read.error))
        for name in OFFSET_CHECKPOINT_FILES:
            cp = self.checkpoint(name)
            if cp.error is not None:
                out.append((cp.path, cp.error))
            out.extend((cp.path, p) for p in cp.problems)
        return out

    @property
    def is_locked(self) -> bool:
        """A broker (or a repair holding :func:`logdoctor.logdir.lock.hold_lock`) holds ``.lock``."""
        return _is_locked(self.path)

    @property
    def has_clean_shutdown_marker(self) -> bool:
        return (self.path / CLEAN_SHUTDOWN_FILE).is_file()
