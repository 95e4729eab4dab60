"""Catalog entries of `logdoctor dump --verify-index` (scope ``dump``): the entry-level mismatches
DumpLogSegments reports, each pointing to the scan code whose fix mends it.

Invariants: a dump code is defined in no other module of the catalog and never changes meaning once
released; every dump code names the scan code that fixes it (:data:`DUMP_FIXED_BY`), and the fix points
to that code's repair unless repair does not fix it (:data:`_SCAN_ONLY`: then to the scan).
"""

from __future__ import annotations

from logdoctor.checks.catalog.entry import _E, _I, _W, Entry

#: `logdoctor dump --verify-index` (and the log dump): one entry-level mismatch each, as DumpLogSegments
#: reports them (K:core/src/main/scala/kafka/tools/DumpLogSegments.scala); (code, severity, title, scan
#: code whose repair fixes it)
_DUMP = (
    (
        "INDEX_OFFSET_MISMATCH",
        _E,
        "an offset index entry whose offset differs from the log's (DLS 'Mismatches')",
        "INDEX_CORRUPT",
    ),
    (
        "INDEX_POSITION_BEYOND_LOG",
        _E,
        "an offset index entry pointing past the end of the .log",
        "INDEX_CORRUPT",
    ),
    ("INDEX_POSITION_NOT_BATCH_START", _E, "an offset index entry pointing inside a batch", "INDEX_CORRUPT"),
    (
        "INDEX_POSITION_NEGATIVE",
        _E,
        "an offset index entry with a negative position (before the .log's first byte)",
        "INDEX_CORRUPT",
    ),
    ("INDEX_OFFSET_NOT_IN_LOG", _E, "an offset index entry whose offset no batch holds", "INDEX_CORRUPT"),
    ("INDEX_OUT_OF_ORDER", _E, "offset index entries that do not increase", "INDEX_CORRUPT"),
    (
        "TIME_INDEX_OFFSET_NOT_IN_LOG",
        _E,
        "a time index offset not found in the log (DLS 'indexed offsets are not found')",
        "INDEX_CORRUPT",
    ),
    (
        "TIME_INDEX_TIMESTAMP_MISMATCH",
        _E,
        "a time index timestamp that is not its batch's max timestamp (DLS 'timestamp mismatch')",
        "INDEX_CORRUPT",
    ),
    (
        "TIME_INDEX_OUT_OF_ORDER",
        _E,
        "time index timestamps that go backwards (DLS 'out of order timestamp')",
        "INDEX_CORRUPT",
    ),
    ("INDEX_PARTIAL_ENTRY", _E, "an index whose length is not a whole number of entries", "INDEX_CORRUPT"),
    (
        "INDEX_SANITY_CHECK_FAILED",
        _E,
        "an index the broker's sanity check rejects (DLS --index-sanity-check)",
        "INDEX_CORRUPT",
    ),
    ("INDEX_GARBAGE_AFTER_ZERO_SLOT", _W, "non-zero bytes after an index's zero slot", "INDEX_CORRUPT"),
    ("INDEX_WITHOUT_LOG", _W, "an index file with no .log beside it", "ORPHAN_FILE"),
    (
        "LOG_INVALID_BYTES",
        _E,
        "bytes at the end of a .log that are no batch (DLS 'Found N invalid bytes')",
        "LOG_CORRUPT",
    ),
    ("LOG_CRC_MISMATCH", _E, "a batch whose CRC does not match (DLS 'isvalid: false')", "LOG_CORRUPT"),
    (
        "LOG_OFFSET_BELOW_BASE",
        _E,
        "a batch whose offsets start below the segment's base offset (LogSegment.recover: "
        "InvalidOffsetException)",
        "SEGMENT_BASE_OFFSET_MISMATCH",
    ),
    (
        "LOG_PAST_REMOTE_SEGMENT",
        _E,
        "a remote segment's object holding offsets past the segment's last offset (its metadata's end, or "
        "the next segment's start): those offsets are dumped once, from the segment that holds them",
        "REMOTE_SEGMENTS_OVERLAP",
    ),
    (
        "LOG_NON_CONSECUTIVE_OFFSETS",
        _I,
        "offsets that skip (info: compaction) or go backwards (error) (DLS 'Non-consecutive offsets')",
        "LOG_CORRUPT",
    ),
)

#: scan codes that repair does not fix (the broker's own recovery, or the remote store, decides): a dump
#: finding of theirs points to the scan's fix instead of a repair command
_SCAN_ONLY = ("SEGMENT_BASE_OFFSET_MISMATCH", "REMOTE_SEGMENTS_OVERLAP")

ENTRIES: tuple[Entry, ...] = tuple(
    Entry(
        code,
        severity,
        title,
        "{problem}",
        (
            f"The scan reports this as {scan_code}: `logdoctor scan {{logdir}} --deep` gives it with its fix."
            if scan_code in _SCAN_ONLY
            else f"Stop the broker; {{repair}} (the scan reports this as {scan_code})."
        ),
        "K:core/src/main/scala/kafka/tools/DumpLogSegments.scala (dumpIndex, dumpTimeIndex, dumpLog)",
        "dump",
    )
    for code, severity, title, scan_code in _DUMP
)
#: the scan code whose repair fixes each dump code
DUMP_FIXED_BY: dict[str, str] = {code: scan_code for code, _s, _t, scan_code in _DUMP}
