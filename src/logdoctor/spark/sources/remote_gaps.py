"""What a remote-tier segment that is not read whole says: the offsets a read error left unread, and the
offsets between its end and the next segment's start that are in no object of the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from logdoctor.logdir.refs import SegmentRef


def remote_error_text(seg: SegmentRef, error: Exception, last_offset: int | None) -> str:
    """What a remote-tier segment that could not be read (whole) says: its id, the offsets not read."""
    assert seg.remote is not None
    unread = None if last_offset is None else last_offset + 1
    return (
        f"remote segment {seg.remote.segment_id} ({seg.remote.layout}): "
        f"{seg.remote.offsets_text(seg.base_offset, unread)} not read: {error}"
    )


def remote_gap_text(seg: SegmentRef, last_offset: int | None, end: int | None = None) -> str | None:
    """A remote-tier segment read whole that stops before the offset the next segment (remote, or the
    local log) starts at: the offsets between are in no object of the store (one missing: a tiered
    topic is never compacted, its offsets are contiguous). ``end``: the read stopped there on purpose."""
    if seg.remote is None:
        return None
    # its own last offset (the metadata's, or before the next one), the next segment, the local log, ``end``
    expected = seg.remote.read_end(seg.next_base_offset, end)
    if expected is None:
        return None
    first = seg.base_offset if last_offset is None else last_offset + 1
    if first >= expected:
        return None
    return (
        f"remote segment {seg.remote.segment_id} ({seg.remote.layout}): offsets {first}-{expected - 1} not "
        f"read: {seg.path} ends at offset {first - 1} and the next segment starts at {expected}: "
        "those offsets are in no object of the store (a missing segment?)"
    )
