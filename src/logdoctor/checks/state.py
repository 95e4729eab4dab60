"""Shared state of one partition check: the task, the report, cached reads, and finding helpers.

Every read goes through here so that an unreadable file becomes a PERMISSION_DENIED finding (and
the scan goes on) and each file is read at most once per partition.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import mmap
import os
import threading
import time
from array import array
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from logdoctor.checks import live
from logdoctor.checks.access import describe, missing_access
from logdoctor.checks.undecodable import Undecodable, undecodable_batches
from logdoctor.checks.walk_ahead import (
    MMAP_THRESHOLD,
    READ_CHUNK,
    SETTLED_NS,
    RawWalk,
    cores,
    new_chunk,
    read_walk,
)
from logdoctor.checks.walk_ahead import identity as _identity
from logdoctor.checks.walk_ahead import take as _take_raw
from logdoctor.errors import FormatError, TruncatedError
from logdoctor.formats import native
from logdoctor.formats.crc import CRC32C_EXTENSION
from logdoctor.formats.lazy_numpy import import_in_background
from logdoctor.formats.records import RECORD_BATCH_OVERHEAD, iter_batches
from logdoctor.logdir import page_cache, read_rate
from logdoctor.logdir.files import NotRegularFileError, open_regular, read_fd, read_file
from logdoctor.logdir.sparse import data_extents, is_sparse

if TYPE_CHECKING:  # checks.context (topic configs, tiering: ~17 ms) is imported by the first PartitionState:
    # a `repair`'s early mappings (:func:`map_early`) import this module and start before it loads;
    # nor the log dir model and the findings catalog (~5 ms; the catalog at the first finding made)
    from logdoctor.checks.context import PartitionTask, SegmentInfo
    from logdoctor.checks.findings import Finding
    from logdoctor.logdir.model import Partition, Segment


def iso(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "none"
    try:
        return (
            datetime.fromtimestamp(ms / 1000, tz=UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z")
        )
    except (OverflowError, OSError, ValueError):
        return "out of range"


def duration(ms: int) -> str:
    s = abs(ms) // 1000
    if s >= 86400:
        return f"{s / 86400:.1f} days"
    if s >= 3600:
        return f"{s / 3600:.1f} hours"
    if s >= 60:
        return f"{s / 60:.1f} minutes"
    return f"{s} s"


#: :attr:`PartitionState.open_txns` not computed yet
NOT_REPLAYED = object()


class PartitionState:
    def __init__(self, task: PartitionTask, partition: Partition, segments: list[Segment]) -> None:
        """``partition`` is listed with ``stat_files=True``; ``segments`` its segments ([] when the
        folder could not be listed)."""
        from logdoctor.checks.context import PartitionReport

        self.task = task
        self.options = task.options
        self.partition = partition
        self.rep = PartitionReport(
            topic=task.topic,
            partition=task.partition,
            log_dir=task.log_dir,
            path=task.path,
            kind=task.kind,
            recovery_point=task.recovery_point,
            high_watermark=task.high_watermark,
            topic_config=task.topic_config,
        )
        self.segments = segments
        self.infos: dict[int, SegmentInfo] = {}
        self.walks: dict[int, WalkResult] = {}
        self.walk_crc: dict[int, bool] = {}
        self.unreadable: set[str] = set()
        self._reported_denied: set[str] = set()
        self.log_end_offset: int | None = None
        self.damage_reported: set[int] = set()
        self.offsets_checked: set[int] = set()
        self.last_index_slot: dict[int, bytes] = {}  # base offset -> last .index slot, once read
        self.last_time_slot: dict[int, bytes] = {}  # base offset -> last .timeindex slot, once read
        #: base offset -> the walk (with CRCs) of an inactive segment's tail from its offset index's last
        #: entry, positions relative to that entry's (checks.default.walk_tail; None: not walked, see there)
        self.tails: dict[int, WalkResult | None] = {}
        #: the open transactions of the loaded producer state, once replayed (checks.transactions
        #: open_transactions: the hanging-transaction and cleaner checks both ask)
        self.open_txns: Any = NOT_REPLAYED
        #: a live log dir's partition: what the broker is writing at the moment (checks.live.Moment)
        self.moment = live.Moment.of(segments) if task.live else None

    # findings ------------------------------------------------------------------------------------
    def add(self, finding: Finding) -> None:
        if self.moment is not None and self.moment.being_written(finding):
            return  # the running broker's work in progress, not damage (checks.live)
        self.rep.findings.append(finding)

    def segment_index(self, offset: int) -> int:
        """The index in :attr:`segments` of the segment holding ``offset`` (the last whose base offset is at
        or below it; the first when every base is above it). ``segments`` must not be empty."""
        import bisect

        return max(0, bisect.bisect_right([s.base_offset for s in self.segments], offset) - 1)

    def make(self, code: str, path: str, **kw: Any) -> None:
        from logdoctor.checks import catalog  # see TYPE_CHECKING above

        kw.setdefault("logdir", self.task.log_dir)
        self.add(catalog.make(code, path, **kw))

    def is_active(self, seg: Segment) -> bool:
        return bool(self.segments) and seg is self.segments[-1]

    # access --------------------------------------------------------------------------------------
    def check_access(self, path: str, st: os.stat_result, need: str, what: str) -> bool:
        """PERMISSION_DENIED when the broker's user lacks ``need`` on ``path``; True when fine."""
        user = self.task.broker_user
        lacking = missing_access(st, user, need)
        if not lacking:
            return True
        self.denied(path, lacking, what, describe(st))
        return False

    def denied(self, path: str, lacking: str, what: str, why: str) -> None:
        if path in self._reported_denied:
            return
        self._reported_denied.add(path)
        if "r" in lacking:
            self.unreadable.add(path)
        words = {"r": "readable", "w": "writable", "x": "searchable"}
        need = " and ".join(words[c] for c in lacking)
        self.make(
            "PERMISSION_DENIED",
            path,
            need=need,
            user=self.task.broker_user.name,
            why=why,
            consequence=f"; {what}",
            mode_fix=lacking,
        )

    # reads ---------------------------------------------------------------------------------------
    def read_small(self, path: str, what: str) -> bytes | None:
        if path in self.unreadable:
            return None
        try:
            data = read_file(path)
        except NotRegularFileError:
            return None  # replaced since the listing, which reports what is not a regular file
        except PermissionError as e:
            self.denied(path, "r", what, f"open failed: {e.strerror}")
            self.unreadable.add(path)
            return None
        except OSError as e:
            if e.errno == errno.ENOENT:
                if self.task.live:
                    raise  # removed by the broker since the listing: read again (checks.live)
                return None
            self.denied(path, "r", what, f"read failed: {e.strerror}")
            self.unreadable.add(path)
            return None
        self.rep.bytes_read += len(data)
        return data

    def read_range(self, path: str, start: int, length: int, what: str) -> bytes | None:
        got = self.read_ranges(path, ((start, length),), what)
        return None if got is None else got[0]

    def read_ranges(self, path: str, ranges: tuple[tuple[int, int], ...], what: str) -> list[bytes] | None:
        """Several positioned reads with one open (index headers: first and last slot)."""
        if path in self.unreadable:
            return None
        try:
            fd = open_regular(path)
        except NotRegularFileError:
            return None
        except PermissionError as e:
            self.denied(path, "r", what, f"open failed: {e.strerror}")
            self.unreadable.add(path)
            return None
        except FileNotFoundError:
            if self.task.live:
                raise  # removed by the broker since the listing: read again (checks.live)
            return None
        except OSError:
            return None
        guard = page_cache.guard(fd, sum(length for _start, length in ranges))
        try:
            if guard is not None:
                for start, length in ranges:
                    guard.note(start, length)
            out = [os.pread(fd, length, start) for start, length in ranges]
        finally:
            if guard is not None:
                guard.close()
            os.close(fd)
        read = sum(len(b) for b in out)
        read_rate.pace(read)
        self.rep.bytes_read += read
        return out

    def walk(self, seg: Segment, *, verify_crc: bool, with_positions: bool = False) -> WalkResult | None:
        """Walk the segment's .log (cached; a CRC walk satisfies a non-CRC request)."""
        if self._cached(seg, verify_crc, with_positions):
            return self.walks[seg.base_offset]
        if seg.log_file in self.unreadable:
            return None
        return self._keep(seg, walk_file(seg.log_file, verify_crc, with_positions, seg.size), verify_crc)

    def walk_all(
        self, segments: list[Segment], *, verify_crc: bool, with_positions: bool = False
    ) -> list[WalkResult | None]:
        """:meth:`walk` of every segment, the segments walked at once on every core (threads: the C
        fast lane of :func:`walk` releases the GIL); what it records (results, denied reads, bytes
        read) is recorded in segment order, as the serial walk does."""
        todo = [
            s
            for s in segments
            if not self._cached(s, verify_crc, with_positions) and s.log_file not in self.unreadable
        ]
        early = {s.base_offset: _take_early(s.log_file, verify_crc, with_positions, s.size) for s in todo}
        todo = [s for s in todo if early[s.base_offset] is None]
        outcomes: dict[int, WalkResult | OSError] = dict(
            zip(
                (s.base_offset for s in todo),
                walk_files([s.log_file for s in todo], verify_crc, with_positions, [s.size for s in todo]),
                strict=True,
            )
        )
        outcomes.update((k, v) for k, v in early.items() if v is not None)
        out: list[WalkResult | None] = []
        for seg in segments:
            got = outcomes.pop(seg.base_offset, None)
            out.append(
                self.walk(seg, verify_crc=verify_crc, with_positions=with_positions)
                if got is None
                else self._keep(seg, got, verify_crc)
            )
        return out

    def walk_ahead(self, items: list[tuple[Segment, bool]]) -> None:
        """Walk ``(segment, verify_crc)`` pairs at once on every core, before the checks that ask for them
        (:meth:`walk` then takes them from the cache): for walks that a check is certain to ask for later,
        so that they run beside one asked for now. What is recorded (results, denied reads, bytes read)
        is in the order given."""
        todo = [(s, c) for s, c in items if not self._cached(s, c, False)]
        todo = [(s, c) for s, c in todo if s.log_file not in self.unreadable]
        walked = in_walk_threads(lambda item: walk_file(item[0].log_file, item[1], False, item[0].size), todo)
        for (seg, crc), outcome in zip(todo, walked, strict=True):
            self._keep(seg, outcome, crc)

    def _cached(self, seg: Segment, verify_crc: bool, with_positions: bool) -> bool:
        cached = self.walks.get(seg.base_offset)
        return (
            cached is not None
            and (self.walk_crc[seg.base_offset] or not verify_crc)
            and (cached.positions is not None or not with_positions)
        )

    def _keep(self, seg: Segment, outcome: WalkResult | OSError, verify_crc: bool) -> WalkResult | None:
        """Record one segment's walk (or why its .log could not be read)."""
        path = seg.log_file
        if isinstance(outcome, NotRegularFileError):
            return None
        if isinstance(outcome, OSError):
            how = "open" if isinstance(outcome, PermissionError) else "read"
            self.denied(path, "r", "the broker cannot load this segment", f"{how} failed: {outcome.strerror}")
            self.unreadable.add(path)
            return None
        res, base = outcome, seg.base_offset
        self.rep.bytes_read += res.size
        self.walks[base] = res
        self.walk_crc[base] = verify_crc
        info = self.infos.get(base)
        if info is not None:
            info.true_largest_ts = res.max_timestamp if res.max_timestamp >= 0 else None
            info.last_offset = res.last_offset
        return res


# --- the segment walk -----------------------------------------------------------------------------
# The scan's view of one .log: offsets, timestamps, CRCs and the first damage, over the batch walk of
# logdoctor.formats.records (whole v2 batches made in C, nothing decompressed). It follows what the
# broker's recovery does (K:storage/.../log/LogSegment.java recover, K:clients/.../record/
# FileLogInputStream.java nextBatch): a partial entry at the end is where the valid data stops, a size
# below 14 bytes is corrupt, the first CRC mismatch is where the broker would truncate the segment.
# Unlike the broker it keeps walking after a CRC mismatch (the framing is intact) to count further
# damage and to learn the real offsets. (It replaced checks/logwalk.py, a second header walker: this
# one is faster, see BENCHMARKS.md.)

V2_HEADER = RECORD_BATCH_OVERHEAD
_CRC_START_V2 = 21  # the v2 crc covers attributes..end (DefaultRecordBatch)
FAST_WALK: Any = native.scan_v2
"""The C fast lane of :func:`walk` (``_speedups.scan_v2``: runs of whole v2 batches with good CRCs and
growing offsets, walked without the GIL); None: the Python loop alone (what tests compare it with)."""
FAST_CRC: Any = native.crc_check_v2
"""The CRC check of framed v2 batches (``_speedups.crc_check_v2``, without the GIL): a big run's CRCs
on every walk thread (:func:`_fast_lane`); None: scan_v2 checks them as it walks."""
#: a run of at least this many bytes has its CRCs checked on every walk thread (below, one is as fast)
SPLIT_CRC_BYTES = 32 << 20
_FAST_CHUNK = 1 << 16  # batches per call: the positions buffer is 16 bytes a batch (1 MiB)


@dataclass(slots=True)
class Damage:
    """The first place the walk found bad bytes. ``kind``: crc, truncated, zero_tail, corrupt, order."""

    kind: str
    position: int
    message: str


@dataclass(slots=True)
class WalkResult:
    size: int = 0
    batches: int = 0
    valid_bytes: int = 0  # bytes before the first damage (what recovery would keep)
    first_offset: int | None = None  # first batch's first offset (None: unknown, v0/v1 wrapper)
    first_batch_last_offset: int | None = None
    last_offset: int | None = None  # last offset of the last batch walked
    valid_last_offset: int | None = None  # last offset before the first damage (what recovery keeps)
    max_timestamp: int = -1  # like LogSegment.recover: max of batch max timestamps
    offset_of_max_timestamp: int = -1
    max_timestamp_valid_prefix: int = -1  # the same, before the first damage
    crc_errors: int = 0
    records: int = 0  # records of every batch walked (a v0/v1 compressed wrapper: its offsets)
    valid_records: int = 0  # the same, before the first damage (what recovery keeps)
    damage: list[Damage] = field(default_factory=list)
    positions: array | None = None  # batch start positions (with_positions=True)
    last_offsets: array | None = None  # their last offsets
    magics: set[int] = field(default_factory=set)
    # batches whose CRC matches and whose records do not decode (with_positions: the --deep walk)
    undecodable: list[Undecodable] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.damage


#: what :func:`mappings_kept` keeps mapped at most (page tables: 2 MiB per GiB kept)
KEEP_MAPPED_BYTES = 2 << 30


class _KeptMappings:
    """The big files :func:`read_buffer` mapped while :func:`mappings_kept` is in force, by (device,
    inode, size), for the process that entered it."""

    def __init__(self, limit: int) -> None:
        self.pid = os.getpid()
        self.limit = limit
        self.bytes = 0
        self.maps: dict[tuple[int, int, int], mmap.mmap] = {}
        self.lock = threading.Lock()
        # kept mapping -> (mtime_ns, ctime_ns) of the file, stat'ed before a CRC walk over that mapping
        # found it whole v2 batches with matching CRC-32Cs to its end (:func:`crc_walked_unchanged`)
        self.crc_clean: dict[tuple[int, int, int], tuple[int, int]] = {}
        self.behind: list[threading.Thread] = []  # unmap_ahead's threads, joined on leaving


_kept: _KeptMappings | None = None


@contextlib.contextmanager
def mappings_kept(limit: int = KEEP_MAPPED_BYTES) -> Iterator[None]:
    """Within it, a big file that :func:`read_buffer` maps (MAP_POPULATE) stays mapped, up to ``limit``
    bytes in all (the first files mapped; later ones are mapped and unmapped as outside it), and a later
    :func:`read_buffer` of the same file gets that mapping again instead of mapping it anew: for a
    command that reads the same segments several times (``repair``: its planning scan, the index
    rebuild, the scan after the apply), each is mapped once instead of three times (mapping a file and
    unmapping it costs more CPU than reading its bytes: BENCHMARKS.md, issue 35).

    The same mapping only for the same inode at the same size (a MAP_SHARED mapping shows the file's
    bytes as they are now, so its bytes are those a new mapping would give); a file truncated, grown or
    replaced since is mapped anew, its old mapping never touched again. Everything kept is unmapped on
    leaving. Only in the process that entered it (a forked pool worker maps as outside it)."""
    global _kept
    outer, _kept = _kept, _KeptMappings(limit)
    try:
        yield
    finally:
        kept, _kept = _kept, outer
        for thread in kept.behind:
            thread.join()
        # the early mappings' thread joined (it may still populate one adopted), those never adopted closed
        unadopted = drop_early_mappings(close=False)
        # unmapped on the walk threads at once (mmap.close releases the GIL; a populated mapping takes as
        # long to unmap as to read: BENCHMARKS.md, issue 35)
        for _ in in_walk_threads(_unmap, [*kept.maps.values(), *unadopted]):
            pass


def unmap_ahead() -> None:
    """Within :func:`mappings_kept`: unmap now, on a thread of its own, every kept mapping except those of
    files whose CRC walk over it was noted clean (:func:`crc_walked_unchanged`: the active segments, which
    a ``repair``'s scan after walks again), for a caller about to wait on the disk (a ``repair``'s apply:
    its writes and fsyncs), so that unmapping them (as long as mapping them, ~12-20 ms per 256 MiB)
    overlaps that wait instead of following the run. A file read after that is mapped anew."""
    kept = _kept
    if kept is None or kept.pid != os.getpid():
        return
    _stop_early()  # nothing unmapped while the early mappings' thread may still populate it
    with kept.lock:
        gone = [key for key in kept.maps if key not in kept.crc_clean]
        maps = [kept.maps.pop(key) for key in gone]
        kept.bytes -= sum(size for _, _, size in gone)
    if maps:
        thread = threading.Thread(
            target=lambda: [_unmap(mm) for mm in maps], name="logdoctor-unmap-ahead", daemon=True
        )
        thread.start()
        kept.behind.append(thread)


def _unmap(mm: mmap.mmap) -> None:
    with contextlib.suppress(BufferError):  # a view still held: unmapped when it is collected
        mm.close()


def _keeping() -> bool:
    """Whether :func:`mappings_kept` is in force in this process."""
    kept = _kept
    return kept is not None and kept.pid == os.getpid()


def _map_kept(fd: int, st: os.stat_result) -> mmap.mmap | None:
    """The kept mapping of this file (mapped now if there is room), or None: map it as usual."""
    kept = _kept
    if kept is None or kept.pid != os.getpid():
        return None
    key = (st.st_dev, st.st_ino, st.st_size)
    with kept.lock:
        mm = kept.maps.get(key)
        if mm is not None or kept.bytes + st.st_size > kept.limit:
            return mm
        kept.bytes += st.st_size  # room taken before mapping outside the lock
    early = _adopt_early(key)  # mapped (and being populated) while the command's modules loaded
    try:
        flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
        mm = early if early is not None else mmap.mmap(fd, 0, flags=flags, prot=mmap.PROT_READ)
    except BaseException:
        with kept.lock:
            kept.bytes -= st.st_size
        raise
    with kept.lock:
        other = kept.maps.setdefault(key, mm)
        if other is not mm:  # another thread mapped it at the same time: one kept
            kept.bytes -= st.st_size
    if other is not mm:
        if early is not None:
            _give_back_early(key, early)  # closed with the early mappings (it may still be populated)
        else:
            mm.close()
    return other


# --- early mappings: `repair` maps its big .log files while its modules load -----------------------------
#: the populate of :func:`map_early` (``_speedups.populate_read``: without the GIL); None: no early mappings
POPULATE: Any = native.populate_read


#: the nice value of the early mappings' thread: on a machine whose other core is busy, the thread shares a
#: core with the imports it should run beside, and at the same priority it delayed them as long as it ran
#: (their wait in the run queue: ~50-90 ms of ~90; at 10, ~5-14 ms)
EARLY_NICE = 10
#: bytes populated per call: what is left when the thread is told to stop (~10 ms of a core)
EARLY_POPULATE_CHUNK = 64 << 20


class _EarlyMappings:
    """The mappings :func:`map_early` made, by (device, inode, size), for the process that made them; the
    thread that maps and populates them."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.maps: dict[tuple[int, int, int], mmap.mmap] = {}
        self.order: list[mmap.mmap] = []  # every one mapped, adopted or not: populated in this order
        self.lock = threading.Lock()
        self.stopping = False
        self.thread: threading.Thread | None = None
        self.mapped = threading.Event()  # every file mapped (or given up): what there is to adopt is there


_early_maps: _EarlyMappings | None = None


def map_early(paths: Sequence[str], limit: int = KEEP_MAPPED_BYTES) -> int:
    """Map these big .log files (MAP_SHARED, read only) and fault their pages in, on one thread of its own,
    now: for a command about to enter :func:`mappings_kept` (``logdoctor repair LOGDIR...``, whose
    planning scan maps its segments with MAP_POPULATE, ~0.1 s per GiB in the kernel), so that the kernel
    does it while the command's modules load on the other core (:mod:`logdoctor.cli.repair_fast`, which
    chooses the files as a ``scan --deep``'s early walks do: :func:`logdoctor.checks.early_walk.early_logs`,
    only those the broker's user may read). Each file is mapped without MAP_POPULATE (Python's mmap holds
    the GIL while it maps: with MAP_POPULATE the imports waited for it) and populated by
    :data:`POPULATE` without the GIL, one byte read a page (madvise, like MAP_POPULATE, holds the process's
    mmap lock and made the imports wait: ``populate_read`` in _speedups.c).

    :func:`mappings_kept` adopts such a mapping instead of mapping the file anew when it is the same
    inode at the same size (the rule of every kept mapping: a MAP_SHARED mapping shows the file's bytes
    as they are now, whenever it was made); it then counts against the kept limit. Files beyond
    ``limit`` bytes in all (they would not be kept), under MMAP_THRESHOLD or with holes (never kept), or
    changed within :data:`SETTLED_NS` (being written: a broker's active segment, whose size would differ by
    then, and a cut under the mapping would make a read of it SIGBUS) are not mapped. What is not
    adopted is closed when :func:`mappings_kept` is left, or by :func:`drop_early_mappings` (the
    command's end): a later run in the same process never sees it. Only in this process (a forked child
    maps as without them). Returns how many files it will map at most (0: none, or no C extension)."""
    global _early_maps
    drop_early_mappings()
    if POPULATE is None or not paths:
        return 0
    early = _EarlyMappings()
    early.thread = threading.Thread(
        target=_map_and_populate, args=(early, list(paths), limit), name="logdoctor-map-early", daemon=True
    )
    _early_maps = early
    early.thread.start()
    return len(paths)


def _map_and_populate(early: _EarlyMappings, paths: list[str], limit: int) -> None:
    """Map every file first (a few microseconds each: all of them there to adopt, whenever the scan asks),
    then fault each one's pages in, in order (reads, not madvise: see ``populate_read`` in _speedups.c,
    madvise made the imports wait). At a lower priority (:data:`EARLY_NICE`) than the thread importing."""
    with contextlib.suppress(OSError, AttributeError):  # this thread alone (Linux: a nice value per thread)
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), EARLY_NICE)
    try:
        _map_all(early, paths, limit)
    finally:
        early.mapped.set()
    for mm in early.order:
        try:
            view = memoryview(mm)
        except ValueError:  # closed
            continue
        try:
            for at in range(0, len(view), EARLY_POPULATE_CHUNK):  # stops within a chunk when told
                if early.stopping:
                    return
                POPULATE(view[at : at + EARLY_POPULATE_CHUNK], False)
        except OSError:
            pass
        finally:
            view.release()


def _map_all(early: _EarlyMappings, paths: list[str], limit: int) -> None:
    mapped = 0
    for path in paths:
        try:
            fd = open_regular(path)
        except OSError:  # NotRegularFileError is one: the scan finds what it is
            continue
        try:
            st = os.fstat(fd)
            if (
                st.st_size < MMAP_THRESHOLD
                or is_sparse(st)
                or mapped + st.st_size > limit
                or time.time_ns() - st.st_ctime_ns < SETTLED_NS  # being written (a broker's active segment)
            ):
                continue
            mm = mmap.mmap(fd, 0, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
        except (OSError, ValueError):
            continue
        finally:
            os.close(fd)
        mapped += st.st_size
        with early.lock:
            if early.stopping:
                mm.close()
                return
            early.maps[(st.st_dev, st.st_ino, st.st_size)] = mm
            early.order.append(mm)


def _adopt_early(key: tuple[int, int, int]) -> mmap.mmap | None:
    """The early mapping of the file of this (device, inode, size), taken from the early mappings."""
    early = _early_maps
    if early is None or early.pid != os.getpid():
        return None
    early.mapped.wait()  # still mapping (microseconds a file): the file asked for may be next
    with early.lock:
        return early.maps.pop(key, None)


def _give_back_early(key: tuple[int, int, int], mm: mmap.mmap) -> None:
    early = _early_maps
    if early is not None and early.pid == os.getpid():
        with early.lock:
            early.maps.setdefault(key, mm)


def _stop_early() -> None:
    """The early mappings' thread stopped (within a chunk: the pages it did not fault are faulted by
    whoever reads them) and joined."""
    early = _early_maps
    if early is not None and early.pid == os.getpid():
        _stop(early)


def _stop(early: _EarlyMappings) -> None:
    with early.lock:
        early.stopping = True
    if early.thread is not None:
        early.thread.join()


def drop_early_mappings(*, close: bool = True) -> list[mmap.mmap]:
    """The early mappings of this process given up: their thread stopped (after the file it maps) and
    joined, those not adopted closed (``close=False``: returned, for the caller to close)."""
    global _early_maps
    early, _early_maps = _early_maps, None
    if early is None or early.pid != os.getpid():
        return []
    _stop(early)
    with early.lock:
        left = list(early.maps.values())
        early.maps.clear()
    if close:
        for mm in left:
            _unmap(mm)
        return []
    return left


def _note_crc_clean(before: os.stat_result, res: WalkResult) -> None:
    """A CRC walk over the kept mapping of the file stat'ed as ``before`` (before it was read) found
    whole v2 batches with matching CRCs to its end: noted for :func:`crc_walked_unchanged`, when the
    file had not changed for :data:`SETTLED_NS` then."""
    kept = _kept
    key = (before.st_dev, before.st_ino, before.st_size)
    if (
        kept is None
        or kept.pid != os.getpid()
        or key not in kept.maps
        or not (res.clean and res.magics == {2} and res.valid_bytes == res.size == before.st_size)
        or time.time_ns() - before.st_ctime_ns < SETTLED_NS
    ):
        return
    with kept.lock:
        kept.crc_clean[key] = (before.st_mtime_ns, before.st_ctime_ns)


def crc_walked_unchanged(path: str | os.PathLike[str]) -> Callable[[], bool] | None:
    """For a file that :func:`mappings_kept` keeps mapped and whose every batch a CRC walk over that
    mapping found whole and matching (the active segment of a ``repair``: its planning scan walked it
    with CRCs, and its index rebuild reads the same mapping): a function telling whether the file is
    still unchanged, to be called *after* the caller has read the mapping again; None when nothing is
    known (then check the CRCs).

    Why the CRCs need not be checked again when that function answers True: it compares the file's
    stat (device, inode, size, mtime, ctime) with the one taken before the CRC walk read it. Every change
    of a file's bytes (write, truncate, fallocate, a write through a shared mapping) sets its ctime to the
    time of the change, and no call sets a ctime back; the file had not changed for :data:`SETTLED_NS`
    when it was first stat'ed, so a change after that stat has a ctime of its own. Equal stats after the
    second read therefore mean that no byte changed between the first stat and now: the bytes read
    the second time are the ones whose CRCs were checked. Not equal: the caller reads and checks
    again (``repair``'s safety does not rest on this: its scan after the apply walks the file with CRCs
    anew)."""
    kept = _kept
    if kept is None or kept.pid != os.getpid() or not kept.crc_clean:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (st.st_dev, st.st_ino, st.st_size)
    noted = kept.crc_clean.get(key)
    if noted != (st.st_mtime_ns, st.st_ctime_ns):
        return None
    first = _identity(st)

    def unchanged() -> bool:
        try:
            return _identity(os.stat(path)) == first
        except OSError:
            return False

    return unchanged


def read_buffer(
    path: str | os.PathLike[str], *, numpy_ahead: bool = False, end: int | None = None
) -> tuple[memoryview, object | None, list[tuple[int, int]] | None]:
    """The whole file as a memoryview (mmap for large or sparse files), and where it holds data when it has
    holes (None: no holes, all data). With ``end`` (the size the file was listed with: the moment its
    partition is read as of, ``Segment.size``), its first ``end`` bytes at most: bytes appended since are
    not read, as Kafka's FileRecords.slice reads a segment up to the size taken when the read began.
    Release it with :func:`release` when done (which closes the returned handle; a mapping kept by
    :func:`mappings_kept` has no handle). ``numpy_ahead``: the caller's work after reading a big file wants
    numpy (the --deep walk's index cross-check without the C extension), imported meanwhile on a thread of
    its own; with the extension no reader needs it (the index checks run in C:
    ``checks.indexes.first_bad_entry``)."""
    fd = open_regular(path)
    try:
        st = os.fstat(fd)
        size = st.st_size if end is None else min(st.st_size, end)
        extents = data_extents(fd) if is_sparse(st) else None
        if extents is not None and size < st.st_size:
            extents = [(a, min(b, size)) for a, b in extents if a < size]
        if size >= MMAP_THRESHOLD or extents is not None:
            # MAP_POPULATE: fault the whole file in at once instead of page by page during the walk;
            # never for a file with holes (it would fault in the holes: issue 24's 10 GiB hole cost 10 GB)
            flags = mmap.MAP_SHARED | (getattr(mmap, "MAP_POPULATE", 0) if extents is None else 0)
            if size == 0:
                return memoryview(b""), None, extents
            if numpy_ahead:
                import_in_background()  # a big segment's walk ahead: its index cross-check wants numpy
            kept = _map_kept(fd, st) if extents is None and size == st.st_size else None
            if kept is not None:
                return memoryview(kept), None, None
            # the command's read discipline: the pages it brings in dropped once unmapped (logdir.page_cache),
            # and with a read rate, the pages faulted in a paced chunk at a time instead of all at once
            attach = page_cache.watch_mapping(fd, size)
            paced = read_rate.limited() is not None and POPULATE is not None
            if paced:
                flags &= ~getattr(mmap, "MAP_POPULATE", 0)
            mm = mmap.mmap(fd, size, flags=flags, prot=mmap.PROT_READ)
            if attach is not None:
                attach(mm)
            view = memoryview(mm)
            if paced:
                _populate_paced(view, extents)
            return view, mm, extents
        return memoryview(read_fd(fd, end)), None, None
    finally:
        os.close(fd)


def _populate_paced(view: memoryview, extents: list[tuple[int, int]] | None) -> None:
    """The pages of a mapped file (its data, not its holes) faulted in ``read_rate.BURST`` bytes at a time,
    each chunk paced (:func:`logdoctor.logdir.read_rate.pace`)."""
    for start, end in extents if extents is not None else [(0, len(view))]:
        for at in range(start, min(end, len(view)), read_rate.BURST):
            chunk = view[at : min(at + read_rate.BURST, end, len(view))]
            POPULATE(chunk, False)
            read_rate.pace(len(chunk))
            chunk.release()


def release(view: memoryview, handle: object | None) -> None:
    view.release()
    if handle is not None:
        handle.close()  # type: ignore[attr-defined]


_buffers = threading.local()  # the chunk of each walk thread's _walk_read


def _walk_read(
    path: str, verify_crc: bool, with_positions: bool, end: int | None = None
) -> WalkResult | OSError | None:
    """:func:`walk` of a big .log read a chunk at a time (``READ_CHUNK``, into a buffer of this thread that
    stays in the core's cache: :func:`logdoctor.checks.walk_ahead.read_walk`), for a file whose every batch
    the C walk takes: the same result as :func:`walk` of the mapped file, without mapping it (mapping a
    file from the page cache and unmapping it again costs more CPU than copying its bytes, and the CRCs
    and records are then read from the cache: BENCHMARKS.md, issue 35). None, at once, for anything else
    (a file under MMAP_THRESHOLD or with holes, a batch the C walk stops at: damage, v0/v1, a torn end, a
    batch bigger than ``walk_ahead.MAX_BATCH_READ``; with ``with_positions``, a batch whose records do not
    decode): the caller then walks the mapped file, which finds and words it as always."""
    if len(getattr(_buffers, "chunk", b"")) != READ_CHUNK:
        _buffers.chunk = new_chunk(READ_CHUNK)
    got = read_walk(path, verify_crc, with_positions, _buffers.chunk, MMAP_THRESHOLD, end)
    return _walk_result(got, with_positions) if isinstance(got, RawWalk) else got


def _walk_result(raw: RawWalk, with_positions: bool) -> WalkResult:
    """The WalkResult of a file whose every batch :func:`read_walk` took."""
    res = WalkResult(
        size=raw.size,
        batches=raw.batches,
        valid_bytes=raw.size,
        first_offset=raw.first_offset,
        first_batch_last_offset=raw.first_batch_last_offset,
        last_offset=raw.last_offset,
        valid_last_offset=raw.last_offset,
        max_timestamp=raw.max_timestamp,
        offset_of_max_timestamp=raw.offset_of_max_timestamp,
        max_timestamp_valid_prefix=raw.max_timestamp,
        records=raw.records,
        valid_records=raw.records,
        magics={2},
    )
    if with_positions:
        res.positions, res.last_offsets = array("q"), array("q")
        res.positions.frombytes(raw.positions)
        res.last_offsets.frombytes(raw.last_offsets)
    return res


def walk_file(
    path: str, verify_crc: bool, with_positions: bool, end: int | None = None
) -> WalkResult | OSError:
    """:func:`walk` of one .log, mapped and released again, up to ``end`` (its listed size: the segment as of
    the moment its partition was listed, :func:`read_buffer`; None: to its end now); an OSError
    (NotRegularFileError included) is returned, not raised: the caller records it (PartitionState._keep). Safe
    in any thread. With ``with_positions`` (the --deep walk) the records of every batch are decoded too
    (:func:`logdoctor.checks.undecodable.undecodable_batches`, while the file is mapped). A big file is read a
    chunk at a time instead (:func:`_walk_read`) when its CRCs would not be checked on every walk thread
    anyway and no :func:`mappings_kept` keeps its mapping for a later read."""
    if FAST_WALK is not None and not (verify_crc and _crc_on_threads(MMAP_THRESHOLD)) and not _keeping():
        got = _walk_read(path, verify_crc, with_positions, end)
        if got is not None:
            return got
    try:
        # stat'ed before it is read: a clean CRC walk over a kept mapping is noted (crc_walked_unchanged)
        before = os.stat(path) if verify_crc and _keeping() else None
        view, handle, extents = read_buffer(
            path, numpy_ahead=with_positions and native.speedups is None, end=end
        )
    except OSError as e:  # NotRegularFileError is one
        return e
    try:
        res = walk(view, verify_crc=verify_crc, with_positions=with_positions, data_extents=extents)
        if with_positions and res.positions is not None:  # the --deep walk: every record decoded too
            res.undecodable = undecodable_batches(view, res.positions, res.valid_bytes, path)
        if before is not None and handle is None and extents is None:
            _note_crc_clean(before, res)
        return res
    finally:
        release(view, handle)


T = TypeVar("T")
R = TypeVar("R")
_pool: tuple[int, ThreadPoolExecutor] | None = None
_thread_limit: int | None = None


def limit_walk_threads(n: int | None) -> None:
    """At most ``n`` walk threads in this process (None: one per core). The scan's pool workers take one:
    the pool already spreads partitions over the cores, and threads there would map cores x cores
    segments at once."""
    global _thread_limit
    _thread_limit = n


def walk_threads() -> int:
    """Threads :func:`walk_files` uses: one per core this process may run on, at most the limit of
    :func:`limit_walk_threads`."""
    return max(1, min(cores(), _thread_limit)) if _thread_limit is not None else cores()


def in_walk_threads(fn: Callable[[T], R], items: Sequence[T]) -> Iterator[R]:
    """``fn(x)`` of each item, yielded in order, computed on :func:`walk_threads` threads: for work that
    spends its time in C without the GIL (the deep walk, the index rebuild), one mapped segment per
    thread at a time. At most two results per thread wait to be taken, so memory does not grow with
    the number of items. One item, or one core: in this thread."""
    threads = min(walk_threads(), len(items))
    if threads <= 1 or FAST_WALK is None:
        yield from map(fn, items)
        return
    pool = _walk_pool()
    pending: deque[Future[R]] = deque()
    try:
        for x in items:
            pending.append(pool.submit(fn, x))
            if len(pending) >= 2 * threads:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for f in pending:  # the caller stopped early (or one raised): drop what was not started
            f.cancel()


def _walk_pool() -> ThreadPoolExecutor:
    """The walk threads of this process (:func:`walk_threads` of them), made on first use."""
    global _pool
    if _pool is None or _pool[0] != os.getpid():  # a forked pool worker makes its own
        _pool = (os.getpid(), ThreadPoolExecutor(walk_threads(), thread_name_prefix="logdoctor-walk"))
    return _pool[1]


def _take_early(path: str, verify_crc: bool, with_positions: bool, end: int | None) -> WalkResult | None:
    """The early walk of ``path`` (:func:`logdoctor.checks.walk_ahead.take`: a ``scan --deep``'s, started
    before its modules loaded) when it is the walk asked for (with CRCs and positions) and the file is
    unchanged since it was read; None otherwise: the caller walks it."""
    if not (verify_crc and with_positions):
        return None
    raw = _take_raw(path)
    return None if raw is None or (end is not None and raw.size != end) else _walk_result(raw, True)


def walk_files(
    paths: list[str], verify_crc: bool, with_positions: bool, ends: list[int] | None = None
) -> list[WalkResult | OSError]:
    """:func:`walk_file` of every path (up to its end in ``ends``: its listed size), in order, on
    :func:`walk_threads` threads: each reads (in chunks) or maps one file at a time (memory: one segment per
    thread at most) and spends its time in the C fast lane without the GIL. One file, or one core: in this
    thread."""
    items = list(zip(paths, ends if ends is not None else [None] * len(paths), strict=True))
    return list(in_walk_threads(lambda p: walk_file(p[0], verify_crc, with_positions, p[1]), items))


def _fast_lane(
    mv: memoryview,
    pos: int,
    n: int,
    verify_crc: bool,
    has_prev: bool,
    prev_last: int,
    max_ts: int,
    max_ts_off: int,
    out: bytearray | None,
    max_batches: int,
) -> tuple[int, int, int, int, int, int, int, int]:
    """``FAST_WALK`` (scan_v2), with the CRCs of a big run checked on every walk thread: the batches are
    framed first without CRCs (the same walk, the same stops but the CRC), then slices of them are
    checked at once (``FAST_CRC``, without the GIL). All good: that walk is the CRC walk's (it would
    have taken the same batches and stopped at the same place). Any mismatch: the serial CRC walk runs
    from ``pos`` again, and finds it as before. Only from the main thread (a walk thread never waits on
    the walk threads) and with more than one of them."""
    fast = FAST_WALK
    if not verify_crc or not _crc_on_threads(n - pos):
        return fast(mv, pos, n, verify_crc, has_prev, prev_last, max_ts, max_ts_off, out, max_batches)
    frame = out if out is not None else bytearray(16 * max_batches)
    got = fast(mv, pos, n, False, has_prev, prev_last, max_ts, max_ts_off, frame, max_batches)
    if got[1] and _first_crc_mismatch(mv, frame, got[1]) is not None:
        return fast(mv, pos, n, True, has_prev, prev_last, max_ts, max_ts_off, out, max_batches)
    return got


def _crc_on_threads(nbytes: int) -> bool:
    """Whether ``nbytes`` of batches have their CRCs checked in slices on the walk threads: a big run
    (SPLIT_CRC_BYTES), more than one thread, and a caller that is not a walk thread itself (it would
    wait on its own pool)."""
    return (
        FAST_CRC is not None
        and nbytes >= SPLIT_CRC_BYTES
        and walk_threads() >= 2
        and threading.current_thread() is threading.main_thread()
    )


def _first_crc_mismatch(mv: memoryview, frame: bytearray, count: int) -> int | None:
    """The index of the first of the ``count`` batches framed in ``frame`` (scan_v2's positions) whose
    CRC-32C does not match, checked in slices on every walk thread; None when all match."""
    slices = walk_threads()
    cuts = [count * k // slices for k in range(slices + 1)]
    checked = list(in_walk_threads(lambda k: FAST_CRC(mv, frame, cuts[k], cuts[k + 1]), range(slices)))
    return next((got for got, end in zip(checked, cuts[1:], strict=True) if got < end), None)


def crc_checked_prefix(buf: memoryview | bytes) -> int:
    """Where the run of whole v2 batches from position 0 whose CRC-32Cs match ends, found on every walk
    thread: the batches are framed without CRCs (scan_v2, which stops where the walk would: a torn or
    corrupt entry, v0/v1, offsets going backwards), then slices of them checked at once (FAST_CRC,
    without the GIL); the run ends at the first mismatch. 0 when the buffer is small, one thread is
    all there is, the caller is a walk thread itself, or there is no C lane. What
    ``formats.recovery.rebuild_indexes(crc_checked_until=...)`` takes, so that one big segment's
    rebuild checks its CRCs on every core."""
    mv = memoryview(buf)
    n = len(mv)
    if FAST_WALK is None or not _crc_on_threads(n):
        return 0
    frame = bytearray(16 * _FAST_CHUNK)
    pos, has_prev, prev_last = 0, False, 0
    while pos < n:
        pos2, count, _, _, _, last, _, _ = FAST_WALK(
            mv, pos, n, False, has_prev, prev_last, -1, -1, frame, _FAST_CHUNK
        )
        if not count:
            break
        bad = _first_crc_mismatch(mv, frame, count)
        if bad is not None:  # the run ends where that batch starts
            return int(array("q", bytes(frame[8 * bad : 8 * bad + 8]))[0])
        pos, has_prev, prev_last = pos2, True, last
    return pos


def walk(
    buf: memoryview | bytes,
    base_offset: int = 0,
    *,
    verify_crc: bool = True,
    with_positions: bool = False,
    stop_at_damage: bool = False,
    data_extents: list[tuple[int, int]] | None = None,
) -> WalkResult:
    """Walk every batch of a segment buffer (formats.records.iter_batches); never raises on bad data.

    ``base_offset`` is accepted for the callers' sake: the first batch is checked against it by them.
    ``data_extents`` (a sparse file's, logdir/sparse.py) are the only ranges read past the first bad
    entry (to tell a zero-filled tail): holes are zeros without being read.
    """
    mv = memoryview(buf)
    n = len(mv)
    res = WalkResult(size=n)
    positions = lasts = None
    if with_positions:
        positions, lasts = res.positions, res.last_offsets = array("q"), array("q")
    crc32c = CRC32C_EXTENSION.crc32c
    prev_last: int | None = None
    max_ts = max_ts_off = -1
    batches = crc_errors = 0
    first_crc: Damage | None = None
    stop: Damage | None = None
    magics: set[int] = set()
    pos = 0  # where the next entry starts (the end of the last one walked)
    fast = _fast_lane if FAST_WALK is not None else None
    out = bytearray(16 * _FAST_CHUNK) if fast is not None and with_positions else None
    try:
        while True:
            # the C fast lane while nothing is damaged: the batches the loop below would take without a
            # finding, the same figures; it stops before anything else, which the loop below walks
            while fast is not None and first_crc is None and pos < n:
                pos2, nb, recs, first_base, first_last, last, max_ts, max_ts_off = fast(
                    mv,
                    pos,
                    n,
                    verify_crc,
                    prev_last is not None,
                    prev_last or 0,
                    max_ts,
                    max_ts_off,
                    out,
                    _FAST_CHUNK,
                )
                if not nb:
                    break
                if batches == 0:
                    res.first_offset, res.first_batch_last_offset = first_base, first_last
                if positions is not None:
                    positions.frombytes(memoryview(out)[: 8 * nb])  # type: ignore[arg-type]
                    lasts.frombytes(memoryview(out)[8 * _FAST_CHUNK : 8 * (_FAST_CHUNK + nb)])  # type: ignore
                magics.add(2)
                res.records += recs
                res.valid_records += recs
                res.max_timestamp_valid_prefix = max_ts
                res.valid_last_offset = last
                res.valid_bytes = pos2
                prev_last, batches, pos = last, batches + nb, pos2
            if pos >= n:
                break
            for b in iter_batches(mv, start=pos, verify_crc=False):
                end = pos + b.size
                magic = b.magic
                if magic == 2:
                    first = b.base_offset
                    # Java's long arithmetic: base + delta wraps around (a fuzzed base offset near 2^63
                    # made a Python int too big for the positions array: OverflowError)
                    last = b.last_offset
                    batch_max_ts = b.max_timestamp
                    if verify_crc and crc32c(mv[pos + _CRC_START_V2 : end]) != b.stored_crc:
                        crc_errors += 1
                        if first_crc is None:
                            first_crc = Damage(
                                "crc",
                                pos,
                                f"CRC mismatch in the v2 batch at position {pos} (offsets "
                                f"{first}..{last}): stored {b.stored_crc:#010x}, computed "
                                f"{b.compute_crc():#010x}",
                            )
                else:
                    last = b.last_offset
                    # a wrapper's first offset needs decompression
                    first = None if b.is_compressed else last
                    batch_max_ts = b.max_timestamp if magic == 1 else -1
                    if verify_crc and (computed := b.compute_crc()) != b.stored_crc:
                        crc_errors += 1
                        if first_crc is None:
                            first_crc = Damage(
                                "crc",
                                pos,
                                f"CRC mismatch in the v{magic} message at position {pos} (offset {last}): "
                                f"stored {b.stored_crc:#010x}, computed {computed:#010x}",
                            )
                lower = first if first is not None else last
                if prev_last is not None and lower <= prev_last:
                    stop = Damage(
                        "order",
                        pos,
                        f"offsets go backwards: the batch at position {pos} starts at offset {lower} but "
                        f"the previous batch ended at {prev_last}",
                    )
                    break
                if batches == 0:
                    res.first_offset = first
                    res.first_batch_last_offset = last
                if magic == 2:
                    count = max(0, b.record_count)
                elif first is not None:
                    count = 1
                else:  # a compressed wrapper: its inner messages end at ``last``, after the previous entry
                    count = last - prev_last if prev_last is not None else 1
                res.records += count
                magics.add(magic)
                if batch_max_ts > max_ts:
                    max_ts, max_ts_off = batch_max_ts, last
                if positions is not None:
                    positions.append(pos)
                    lasts.append(last)  # type: ignore[union-attr]
                if first_crc is None:
                    res.valid_bytes = end
                    res.valid_records += count
                    res.max_timestamp_valid_prefix = max_ts
                    res.valid_last_offset = last
                elif stop_at_damage:
                    break
                prev_last = last
                batches += 1
                pos = end
                if fast is not None and first_crc is None:
                    break  # back to the fast lane
            else:
                break  # the end of the buffer
            if stop is not None or first_crc is not None:
                break  # the loop above stopped the walk (or, with stop_at_damage, found the damage)
    except FormatError as e:
        stop = _damage_at(mv, pos, n, e, data_extents)
    if first_crc is None:
        res.valid_bytes = stop.position if stop is not None else pos
    res.batches = batches
    res.last_offset = prev_last
    res.max_timestamp = max_ts
    res.offset_of_max_timestamp = max_ts_off
    res.crc_errors = crc_errors
    res.magics = magics
    res.damage.extend(d for d in (first_crc, stop) if d is not None)
    return res


#: the piece :func:`_all_zero` copies and compares with zeros: it stays in the core's cache between the copy
#: and the compare (256 KiB: 0.75 ms per 16 MiB, as numpy's ``any`` without its ~45 ms import)
_ZERO_PIECE = 256 << 10


@functools.cache
def _zero_piece() -> bytes:
    return bytes(_ZERO_PIECE)


def _all_zero(mv: memoryview, pos: int, n: int, extents: list[tuple[int, int]] | None) -> bool:
    """``mv[pos:n]`` is all zero: a piece at a time, each copied and compared with zeros (memcpy and memcmp;
    stops at the first piece with a byte that is not), and for a sparse file only its data extents (a hole
    reads as zeros)."""
    if extents is None:
        ranges = [(pos, n)]
    else:
        ranges = [(max(a, pos), min(b, n)) for a, b in extents if b > pos and a < n]
    zeros = _zero_piece()
    for a, b in ranges:
        for at in range(a, b, _ZERO_PIECE):
            piece = bytes(mv[at : min(b, at + _ZERO_PIECE)])
            if piece != (zeros if len(piece) == _ZERO_PIECE else bytes(len(piece))):
                return False
    return True


def _damage_at(
    mv: memoryview, pos: int, n: int, error: FormatError, extents: list[tuple[int, int]] | None = None
) -> Damage:
    """The entry at ``pos`` stopped the walk: a zero-filled tail, a torn last entry, or bad framing."""
    if _all_zero(mv, pos, n, extents):
        return Damage(
            "zero_tail",
            pos,
            f"zero-filled tail: the last {n - pos} bytes from position {pos} are all zero (preallocated or "
            "never written before a crash)",
        )
    if isinstance(error, TruncatedError):
        return Damage(
            "truncated",
            pos,
            f"truncated entry at position {pos}: {n - pos} bytes left where {error.expected} should be "
            "(a partial write at the end of the segment)",
        )
    return Damage(
        "corrupt",
        pos,
        f"corrupt entry at position {pos}: expected {error.expected} at position {error.position}, found "
        f"{error.found} (CorruptRecordException)",
    )
