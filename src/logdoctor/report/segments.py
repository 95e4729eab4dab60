"""Per-segment figures for the timeline: from the input when it carries them, else from the log dir.

What the scan result gives (``SegmentInfo``: base offset, size, the broker's largest timestamp and
its source, sometimes the true one) is completed from the files through the lazy model
(:mod:`logdoctor.logdir.model`): the first batch's timestamp (one header read), the last offset
(the next segment's base offset, or the last batch found through the offset index), and the true
largest timestamp (a walk of batch headers) while a byte budget lasts. Nothing here raises on bad
bytes: a figure that cannot be read stays ``None``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from logdoctor.errors import FormatError
from logdoctor.logdir.model import Partition, Segment
from logdoctor.logdir.names import parse_partition_dir
from logdoctor.report.model import SegmentView, _get, _int

#: bytes of .log the report may walk for true largest timestamps (over all partitions shown)
DEFAULT_READ_BUDGET = 256 * 1024 * 1024


class ReadBudget:
    def __init__(self, limit: int = DEFAULT_READ_BUDGET) -> None:
        self.left = limit

    def take(self, n: int) -> bool:
        if n > self.left:
            return False
        self.left -= n
        return True


def _model_partition(path: str) -> Partition | None:
    p = Path(path)
    name = parse_partition_dir(p.name)
    if name is None or not p.is_dir():
        return None
    return Partition(None, p, name)


def _first_timestamp(seg: Segment) -> int | None:
    try:
        for b in seg.batches():
            ts = b.first_timestamp if b.first_timestamp >= 0 else b.max_timestamp
            return ts if ts >= 0 else None
    except (FormatError, OSError):
        return None
    return None


def _broker_ts(seg: Segment) -> tuple[int | None, str]:
    try:
        path = seg.timeindex_path
        ts = seg.largest_timestamp_from_index()
        if path is not None and os.path.getsize(path) >= 12 and ts != seg.mtime_ms:
            return ts, "timeindex"
        return ts, "mtime"
    except (FormatError, OSError):
        return None, "unreadable timeindex"


def _from_rows(raw: list[dict[str, Any]]) -> list[SegmentView]:
    out = []
    for r in raw:
        base = _int(_get(r, "base_offset"))
        if base is None:
            continue
        broker = _int(_get(r, "broker_largest_timestamp"))
        if broker is None:
            broker = _int(r.get("mtime_ms"))
        out.append(SegmentView(
            base_offset=base, size=_int(_get(r, "bytes")) or 0, last_offset=_int(_get(r, "last_offset")),
            min_timestamp=_int(_get(r, "min_timestamp")), broker_largest_timestamp=broker,
            broker_timestamp_source=str(_get(r, "broker_timestamp_source", "")),
            true_largest_timestamp=_int(_get(r, "true_largest_timestamp")),
            mtime_ms=_int(r.get("mtime_ms")), recovered=bool(r.get("recovered_at_startup")),
        ))
    out.sort(key=lambda s: s.base_offset)
    return out


def segment_views(
    path: str,
    raw: list[dict[str, Any]] | None,
    log_end_offset: int | None,
    budget: ReadBudget | None = None,
) -> list[SegmentView] | None:
    """The segments of the partition folder ``path``, or None when neither input nor disk has them."""
    budget = budget or ReadBudget()
    views = _from_rows(raw) if raw else None
    part = _model_partition(path)
    model_segs: dict[int, Segment] = {}
    if part is not None:
        try:
            model_segs = {s.base_offset: s for s in part.segments}
        except OSError:
            model_segs = {}
    if views is None:
        if not model_segs:
            return None
        views = []
        for base, seg in sorted(model_segs.items()):
            try:
                size = seg.size
            except OSError:
                size = 0
            ts, src = _broker_ts(seg)
            try:
                mtime = seg.mtime_ms
            except OSError:
                mtime = None
            views.append(SegmentView(base_offset=base, size=size, broker_largest_timestamp=ts,
                                     broker_timestamp_source=src, mtime_ms=mtime))
    for k, v in enumerate(views):
        seg = model_segs.get(v.base_offset)
        if v.last_offset is None:
            if k + 1 < len(views):
                v.last_offset = views[k + 1].base_offset - 1
            elif seg is not None:
                try:
                    v.last_offset = seg.last_offset()
                except (FormatError, OSError):
                    v.last_offset = None
            if v.last_offset is None and k + 1 == len(views) and log_end_offset is not None:
                v.last_offset = log_end_offset - 1 if log_end_offset > v.base_offset else None
        if seg is None:
            continue
        if v.min_timestamp is None:
            v.min_timestamp = _first_timestamp(seg)
        if v.true_largest_timestamp is None and budget.take(v.size):
            try:
                ts = seg.largest_timestamp_from_log()
            except (FormatError, OSError):
                ts = -1
            v.true_largest_timestamp = ts if ts >= 0 else None
    return views
