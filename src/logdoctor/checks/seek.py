"""Index-based seeking, under the name it had before it moved below the checks.

Seeking lives in :mod:`logdoctor.logdir.seek` (plans, over a reader or a segment ref) and
:mod:`logdoctor.formats.index_lookup` (the lookups in index bytes); the counting reader and the
windowed walk in :mod:`logdoctor.logdir.reader`. This module re-exports what it used to define.
"""

from __future__ import annotations

from logdoctor.logdir.reader import DEFAULT_WINDOW, MAX_WINDOW, LogReader, iter_batches_from
from logdoctor.logdir.seek import (
    SeekPlan,
    iter_batches_in_offsets,
    iter_batches_in_timestamps,
    lookup_offset_position,
    lookup_timestamp_offset,
    plan_offset_seek,
    plan_timestamp_seek,
)

__all__ = [
    "DEFAULT_WINDOW",
    "MAX_WINDOW",
    "LogReader",
    "SeekPlan",
    "iter_batches_from",
    "iter_batches_in_offsets",
    "iter_batches_in_timestamps",
    "lookup_offset_position",
    "lookup_timestamp_offset",
    "plan_offset_seek",
    "plan_timestamp_seek",
]
