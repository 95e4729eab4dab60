"""Shared state of one partition check: the task, the report, cached reads, and finding helpers.

Every read goes through here so that an unreadable file becomes a PERMISSION_DENIED finding (and
the scan goes on) and each file is read at most once per partition. Invariants: a segment's .log is
walked once (a CRC walk satisfies a request without CRCs, a walk with positions one without); what the
walks record (results, denied reads, bytes read) is recorded in segment order, whichever threads walked
them; a path is reported denied once; in a live log dir, what the broker is writing at the moment is not
a finding (:mod:`logdoctor.checks.live`).
"""

from __future__ import annotations

import errno
import os
from typing import TYPE_CHECKING, Any

from logdoctor.checks import live
from logdoctor.checks.access import describe, missing_access, permission_denied
from logdoctor.checks.state.fast_lane import in_walk_threads
from logdoctor.checks.state.file_records import _take_early, walk_file, walk_files
from logdoctor.logdir import page_cache, read_rate
from logdoctor.logdir.files import NotRegularFileError, open_regular, read_file

if TYPE_CHECKING:  # checks.context (topic configs, tiering: ~17 ms) is imported by the first PartitionState:
    # a `repair`'s early mappings (checks.state.early_mappings) start before it loads; nor the log dir
    # model and the findings catalog (~5 ms; the catalog at the first finding made)
    from logdoctor.checks.context import PartitionTask, SegmentInfo
    from logdoctor.checks.findings import Finding
    from logdoctor.checks.state.segment_walk import WalkResult
    from logdoctor.logdir.model import Partition, Segment


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
        """PERMISSION_DENIED once per path; a path the broker's user cannot read is read no more."""
        if "r" in lacking:
            self.unreadable.add(path)
        if path in self._reported_denied:
            return
        self._reported_denied.add(path)
        self.add(permission_denied(path, self.task.log_dir, self.task.broker_user, lacking, why, what))

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
            return None
        except OSError as e:
            if e.errno == errno.ENOENT:
                if self.task.live:
                    raise  # removed by the broker since the listing: read again (checks.live)
                return None
            self.denied(path, "r", what, f"read failed: {e.strerror}")
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
