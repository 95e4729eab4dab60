"""Shared state of one partition check: the task, the report, cached reads, and finding helpers.

Every read goes through here so that an unreadable file becomes a PERMISSION_DENIED finding (and
the scan goes on) and each file is read at most once per partition.
"""

from __future__ import annotations

import errno
import os
from datetime import UTC, datetime
from typing import Any

from logdoctor.checks import catalog, logwalk
from logdoctor.checks.access import describe, missing_access
from logdoctor.checks.context import PartitionReport, PartitionTask, SegmentInfo
from logdoctor.checks.findings import Finding
from logdoctor.checks.layout import FolderLayout, SegmentFiles
from logdoctor.checks.logwalk import WalkResult


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


class PartitionState:
    def __init__(self, task: PartitionTask, layout: FolderLayout) -> None:
        self.task = task
        self.options = task.options
        self.layout = layout
        self.rep = PartitionReport(
            topic=task.topic,
            partition=task.partition,
            log_dir=task.log_dir,
            path=task.path,
            kind=task.kind,
            recovery_point=task.recovery_point,
            high_watermark=task.high_watermark,
        )
        self.segments: list[SegmentFiles] = layout.segments
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

    # findings ------------------------------------------------------------------------------------
    def add(self, finding: Finding) -> None:
        self.rep.findings.append(finding)

    def make(self, code: str, path: str, **kw: Any) -> None:
        self.add(catalog.make(code, path, **kw))

    def is_active(self, seg: SegmentFiles) -> bool:
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
            with open(path, "rb") as f:
                data = f.read()
        except PermissionError as e:
            self.denied(path, "r", what, f"open failed: {e.strerror}")
            self.unreadable.add(path)
            return None
        except OSError as e:
            if e.errno == errno.ENOENT:
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
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except PermissionError as e:
            self.denied(path, "r", what, f"open failed: {e.strerror}")
            self.unreadable.add(path)
            return None
        except OSError:
            return None
        try:
            out = [os.pread(fd, length, start) for start, length in ranges]
        finally:
            os.close(fd)
        self.rep.bytes_read += sum(len(b) for b in out)
        return out

    def walk(self, seg: SegmentFiles, *, verify_crc: bool, with_positions: bool = False) -> WalkResult | None:
        """Walk the segment's .log (cached; a CRC walk satisfies a non-CRC request)."""
        base = seg.base_offset
        cached = self.walks.get(base)
        if (
            cached is not None
            and (self.walk_crc[base] or not verify_crc)
            and (cached.positions is not None or not with_positions)
        ):
            return cached
        path = seg.log_path
        if path in self.unreadable:
            return None
        try:
            view, handle = logwalk.read_buffer(path)
        except PermissionError as e:
            self.denied(path, "r", "the broker cannot load this segment", f"open failed: {e.strerror}")
            self.unreadable.add(path)
            return None
        except OSError as e:
            self.denied(path, "r", "the broker cannot load this segment", f"read failed: {e.strerror}")
            self.unreadable.add(path)
            return None
        try:
            res = logwalk.walk(view, base, verify_crc=verify_crc, with_positions=with_positions)
        finally:
            logwalk.release(view, handle)
        self.rep.bytes_read += res.size
        self.walks[base] = res
        self.walk_crc[base] = verify_crc
        info = self.infos.get(base)
        if info is not None:
            info.true_largest_ts = res.max_timestamp if res.max_timestamp >= 0 else None
            info.last_offset = res.last_offset
        return res
