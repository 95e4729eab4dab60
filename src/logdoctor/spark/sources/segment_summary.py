"""One ``kafka-log-segments`` row: a segment's batches walked once (local, ranged or remote-tier), summarized
as they go (counts, offsets, timestamps, codecs, the batches left out for their CRC or, with
``checkRecords``, whose records do not decode), with its time index's last timestamp and its findings; and
the row of offsets the read plan names as not read.

A remote segment is summarized from its bytes as a local one is, but its ``findings`` hold only what
reading it finds (``LOG_CORRUPT``): the scan's checks of indexes, checkpoints and snapshots read local
files only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from logdoctor.spark.sources.batch_decode import _decode
from logdoctor.spark.sources.columns import crc_skip_row, row_log_dir
from logdoctor.spark.sources.remote_gaps import remote_error_text, remote_gap_text
from logdoctor.spark.sources.segment_findings import segment_findings

if TYPE_CHECKING:
    from logdoctor.logdir.refs import SegmentRef
    from logdoctor.logdir.storage import Storage


def _ts(ms: int | None):
    import datetime as dt

    if ms is None or ms < 0:
        return None
    try:
        return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)
    except (OverflowError, OSError, ValueError):
        return None


def broker_time_index_max(path: str, storage: Storage | None = None) -> int | None:
    """The time index's last slot timestamp, as the broker takes it (every slot counts, KAFKA-10207)."""
    from logdoctor.formats.index import TIME_ENTRY_SIZE
    from logdoctor.logdir.storage import LOCAL

    storage = storage or LOCAL
    try:
        entry = storage.info(path)
        if entry is None or entry.is_dir():
            return None
        slots = entry.size // TIME_ENTRY_SIZE
        if slots == 0:
            return None
        tail = storage.read_range(path, (slots - 1) * TIME_ENTRY_SIZE, 8)
    except (OSError, ValueError):
        return None
    return int.from_bytes(tail, "big", signed=True) if len(tail) == 8 else None


def _remote_time_index_max(seg: SegmentRef) -> int | None:
    """The last time-index slot's timestamp of a remote-tier segment (its index from the store)."""
    from logdoctor.formats.index import TIME_ENTRY_SIZE
    from logdoctor.logdir.remote_reader import remote_index_bytes

    data = remote_index_bytes(seg, "timestamp")
    slots = len(data) // TIME_ENTRY_SIZE
    if slots == 0:
        return None
    return int.from_bytes(
        data[(slots - 1) * TIME_ENTRY_SIZE : (slots - 1) * TIME_ENTRY_SIZE + 8], "big", signed=True
    )


_CHECK_BATCHES = 256  # batches decoded at once by checkRecords


class _Summary:
    """What kafka-log-segments says about a segment's batches, gathered as they are walked (the batches
    are not kept: a remote segment is read in chunks, and only one or two are in memory at a time)."""

    def __init__(self, path: str = "", check_records: bool = False) -> None:
        self.path = path
        self.undecodable: list[dict[str, Any]] | None = [] if check_records else None
        self._pending: list[Any] = []
        self.batch_count = 0
        self.record_count = 0
        self.valid_bytes = 0
        self.last_offset: int | None = None
        self.codecs: set[str] = set()
        self.magics: set[int] = set()
        self.min_ts: int | None = None
        self.max_ts: int | None = None
        self.error: Exception | None = None
        self.crc_mismatches: list[Any] = []  # CrcSkip: batches left out alone for their CRC
        self._crc_told = 0  # of crc_mismatches, told to order
        self.order: Any = None  # logdir.read_plan.OffsetOrder of the segment, when given

    def walk(self, batches: Iterator[Any]) -> None:
        """Summarize a walk made with ``verify_crc=False``: a batch whose CRC does not match is left out
        alone where the framing goes on after it (``crc_mismatches``), else the walk stops there."""
        from logdoctor.errors import FormatError
        from logdoctor.formats.records import skip_crc_mismatches

        try:
            for b in skip_crc_mismatches(batches, self.crc_mismatches):
                self.add(b)
        except FormatError as exc:
            self.error = exc
        self.valid_bytes += sum(c.size for c in self.crc_mismatches)  # the framing is intact over them
        if self.crc_mismatches and (
            self.last_offset is None or self.crc_mismatches[-1].last_offset > self.last_offset
        ):
            self.last_offset = self.crc_mismatches[-1].last_offset
        self._check()

    def _check(self) -> None:
        """Decode the records of the pending batches (checkRecords), naming those that do not decode."""
        if self._pending:
            for _ in _decode(self._pending, self.path, self.undecodable):
                pass
            self._pending = []

    def add(self, b: Any) -> None:
        if self.order is not None:
            while self._crc_told < len(self.crc_mismatches):  # left out alone before b: no gap
                self.order.passed(self.crc_mismatches[self._crc_told].last_offset)
                self._crc_told += 1
            self.order.admit(b)
        if self.undecodable is not None:
            self._pending.append(b)
            if len(self._pending) >= _CHECK_BATCHES:
                self._check()
        self.batch_count += 1
        self.valid_bytes += b.size
        self.last_offset = b.last_offset
        with contextlib.suppress(Exception):  # a legacy wrapper whose inner messages do not decode
            self.record_count += b.record_count
        self.codecs.add(b.compression.label)
        self.magics.add(int(b.magic))
        mts = b.max_timestamp
        if mts >= 0:
            self.max_ts = mts if self.max_ts is None else max(self.max_ts, mts)
        try:
            fts = b.first_timestamp
        except Exception:
            fts = mts
        for t in (fts, mts):
            if t >= 0:
                self.min_ts = t if self.min_ts is None else min(self.min_ts, t)


def not_read_row(p: Any) -> dict[str, Any]:
    """The kafka-log-segments row of offsets the read plan names as not read once (no batch read)."""
    return {
        "log_dir": None,
        "topic": p.topic,
        "partition": p.partition,
        "path": p.path,
        "base_offset": p.first_offset,
        "last_offset": p.last_offset,
        "size_bytes": 0,
        "record_count": 0,
        "batch_count": 0,
        "min_timestamp": None,
        "max_timestamp": None,
        "time_index_max_timestamp": None,
        "codecs": [],
        "magic_versions": [],
        "valid_bytes": 0,
        "error": p.error,
        "findings": [{"code": "REMOTE_OFFSETS_LOST", "severity": "error", "message": p.error}]
        if p.lost
        else [],
        "undecodable": None,
        "crc_mismatches": None,
    }


def _torn_at_the_plans_edge(seg: SegmentRef, error: Exception | None) -> bool:
    """Whether ``error`` is a batch torn at the planned end of a live partition's active segment (the last
    one planned, its log dir's ``.lock`` held): a batch the broker was in the middle of writing when the
    plan listed the size. Kafka's reader takes a partial batch at the end as not yet written
    (K:clients/.../record/FileLogInputStream.nextBatch), so it is no damage (docs/live-broker.md)."""
    from logdoctor.errors import TruncatedError
    from logdoctor.logdir.lock import lock_holder

    if not isinstance(error, TruncatedError) or seg.ranged or seg.next_base_offset is not None:
        return False
    try:
        return lock_holder(seg.log_dir) is not None
    except OSError:
        return False


def segment_summary(
    seg: SegmentRef, scan_findings: list[Any] | None = None, check_records: bool = False
) -> dict[str, Any]:
    """One row of kafka-log-segments (never raises on bad bytes; a remote read failure raises OSError).
    ``check_records``: also decode every valid batch's records and list those that do not decode
    (column ``undecodable``; null without it)."""
    from logdoctor.formats.records import iter_batches
    from logdoctor.logdir.files import map_file
    from logdoctor.logdir.read_plan import OffsetOrder

    error_text: str | None = None
    summary = _Summary(seg.path, check_records)
    summary.order = OffsetOrder(seg)
    size = 0
    if not seg.ranged:
        try:
            # up to its planned size; a segment renamed .deleted since the plan is read there (map_file)
            buf = map_file(seg.path, seg.size)
        except FileNotFoundError:
            buf = memoryview(b"")
            # a running broker's retention or log cleaner removed it since the plan: no damage, and its
            # records are not exported (docs/live-broker.md)
            error_text = f"{seg.path}: removed since the plan (a running broker's retention or log cleaner)"
        except OSError as exc:
            buf = memoryview(b"")
            error_text = f"{seg.path}: cannot read: {exc.strerror}"
        size = len(buf)
        summary.walk(iter_batches(buf, source=seg.path, verify_crc=False))
        if _torn_at_the_plans_edge(seg, summary.error):
            summary.error = None  # a batch a running broker was writing at the plan's moment: not yet written
    elif seg.remote is not None:  # a remote-tier segment: its object(s) may be bad before any batch
        from logdoctor.errors import FormatError
        from logdoctor.logdir.ranged import iter_ranged_batches
        from logdoctor.logdir.remote_reader import open_remote_log

        try:
            with open_remote_log(seg) as reader:
                size = reader.size
                summary.walk(iter_ranged_batches(reader, source=seg.path, verify_crc=False))
        except FormatError as exc:
            summary.error = exc
    else:
        from logdoctor.logdir.ranged import iter_ranged_batches

        with seg.storage.open(seg.path) as reader:
            size = reader.size
            summary.walk(iter_ranged_batches(reader, source=seg.path, verify_crc=False))
    error = summary.error
    if error is not None:
        error_text = str(error)
        if seg.remote is not None:  # name the offsets that could not be read
            error_text = remote_error_text(seg, error, summary.last_offset)
    elif seg.remote is not None:
        error_text = remote_gap_text(seg, summary.last_offset)
    if summary.order.problems:  # offsets going back (or, remote, skipped or past the segment's end)
        error_text = "; ".join([*([error_text] if error_text else []), *summary.order.problems])
    findings = segment_findings(seg, error, summary.valid_bytes, scan_findings, summary.crc_mismatches)
    return {
        "log_dir": row_log_dir(seg),
        "topic": seg.topic,
        "partition": seg.partition,
        "path": seg.path,
        "base_offset": seg.base_offset,
        "last_offset": summary.last_offset,
        "size_bytes": size if size else seg.size,
        "record_count": summary.record_count,
        "batch_count": summary.batch_count,
        "min_timestamp": _ts(summary.min_ts),
        "max_timestamp": _ts(summary.max_ts),
        "time_index_max_timestamp": _ts(
            broker_time_index_max(seg.time_index_path, seg.storage)
            if seg.remote is None
            else _remote_time_index_max(seg)
        ),
        "codecs": sorted(summary.codecs),
        "magic_versions": sorted(summary.magics),
        "valid_bytes": summary.valid_bytes,
        "error": error_text,
        "findings": findings,
        "undecodable": (
            None
            if summary.undecodable is None
            else [{k: v for k, v in u.items() if k != "path"} for u in summary.undecodable]
        ),
        "crc_mismatches": [
            {k: v for k, v in crc_skip_row(c, seg.path).items() if k != "path"}
            for c in summary.crc_mismatches
        ],
    }
