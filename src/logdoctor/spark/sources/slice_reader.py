"""The records of planned slices as Arrow rows, as every output reads them (the ``kafka-log`` source, export,
the tables, the typed and CDC jobs): one slice's batches walked, filtered by offsets and isolation level,
decoded and built into rows; a task's slices, or with ``view=latest`` each key's latest record.

A bad batch fails nothing. A batch whose CRC does not match where the framing goes on intact after it
(the next batch where its size says, or the segment's end) is left out alone and the rows go on
(:func:`logdoctor.formats.records.skip_crc_mismatches`); where the framing breaks (a torn or zero-filled
tail, an impossible size or magic) the rows of a segment stop at the last valid batch, as the broker's
recovery would truncate there. A batch whose header and CRC are valid but whose records do not decode is
one the broker keeps (``LogSegment.recover`` checks CRCs, it does not decode records): its rows are left
out and the rows go on after it (:mod:`logdoctor.spark.sources.batch_decode`).

A remote segment is read by byte ranges of the planned slice only, in chunks cut at batch boundaries; a
remote file that cannot be read fails the task (Spark retries it) instead of giving no rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from logdoctor.spark.sources.batch_decode import _decode
from logdoctor.spark.sources.columns import crc_skip_row, row_log_dir
from logdoctor.spark.sources.records_arrow import _build_arrow
from logdoctor.spark.sources.remote_gaps import remote_error_text, remote_gap_text

if TYPE_CHECKING:
    import pyarrow as pa

    from logdoctor.logdir.slices import ReadOptions, SegmentSlice


#: what a writing task holds of Arrow rows before it writes them (besides a row count): a decompression
#: bomb's rows are large, a million of them would be the whole bomb in memory (issue 31)
WRITE_FLUSH_BYTES = 32 * 1024 * 1024


def read_slices(
    slices: Sequence[SegmentSlice],
    opts: ReadOptions,
    undecodable: list[dict[str, Any]] | None = None,
    problems: list[dict[str, Any]] | None = None,
    latest: Any = None,
    tombstones: bool = False,
) -> Iterator[pa.RecordBatch]:
    """The rows of one task's slices (:func:`logdoctor.logdir.slices.task_groups`), as every output reads
    them: each slice's records (:func:`read_slice`), or with ``view=latest`` the latest record of each key
    of each partition (:func:`logdoctor.spark.latest.latest_rows`; ``latest``: a dict the per-partition
    :class:`~logdoctor.spark.latest.LatestStats` go into, keyed by (log dir, topic, partition);
    ``tombstones``: keep the keys whose latest record is a tombstone, for an upsert to delete them)."""
    from logdoctor.logdir import page_cache, read_rate

    # the task's read discipline, from the read options (a Python worker runs many tasks: set for each)
    page_cache.leave_as_found(not opts.keep_cache)
    read_rate.limit(opts.max_read_rate)
    if opts.view != "latest":
        for sl in slices:
            yield from read_slice(sl, opts, undecodable=undecodable, problems=problems)
        return
    from logdoctor.logdir.slices import partition_groups
    from logdoctor.spark.latest import LatestStats, latest_rows

    for group in partition_groups(slices):
        seg = group[0].segment
        st = LatestStats()
        yield from latest_rows(
            group,
            opts,
            read_slice,
            stats=st,
            undecodable=undecodable,
            problems=problems,
            tombstones=tombstones,
        )
        if latest is not None:
            latest[(row_log_dir(seg), seg.topic, seg.partition)] = st


def read_slice(
    sl: SegmentSlice,
    opts: ReadOptions,
    undecodable: list[dict[str, Any]] | None = None,
    problems: list[dict[str, Any]] | None = None,
) -> Iterator[pa.RecordBatch]:
    """The records of one slice as Arrow batches of about ``opts.batch_rows`` rows. Batches whose records
    do not decode are skipped (appended to ``undecodable`` when given), the rows go on after them.

    ``problems``: where a remote-tier segment that cannot be read (whole) is reported, as a
    ``kafka-log-segments`` row would (path, valid_bytes, size_bytes, error), so that ``export`` need not
    read the remote tier a second time to find it."""
    from logdoctor.errors import FormatError
    from logdoctor.formats.records import CrcSkip, skip_crc_mismatches
    from logdoctor.logdir.batch_walk import END, BatchAdmission
    from logdoctor.logdir.seek import segment_batches

    seg = sl.segment
    start, end = sl.start_offset, sl.end_offset
    pending: list = []
    rows = 0
    walk = segment_batches(
        seg,
        sl.read_from,
        verify_crc=False,
        stop=sl.emit_to,
        hint=sl.fetch_hint,
        hint_offset=end if sl.fetch_hint is not None else None,
    )
    crc_skipped: list[CrcSkip] = []
    batches = skip_crc_mismatches(walk, crc_skipped) if opts.verify_crc else walk
    walked_end, walked_last = sl.read_from, None
    whole = True  # read to the segment's end (a gap after it is then the store's)
    errors: list[str] = []  # a remote segment's read that failed (``problems``)
    # each offset once (a batch going back is named, not read twice), the range, the isolation level
    admission = BatchAdmission(seg, start, end, sl.txn, opts.include_control, crc_skipped)
    verdict = admission.verdict
    order = admission.order
    try:
        for batch in batches:
            walked_end, walked_last = batch.position + batch.size, batch.last_offset
            if batch.position < sl.emit_from:
                continue  # walked (and CRC-checked) only: an earlier slice emits it
            if sl.emit_to is not None and batch.position >= sl.emit_to:
                break
            v = verdict(batch)
            if v:
                if v == END:
                    whole = False
                    break
                continue  # left out; at or above the LSO (or the high watermark): never decoded, walked on
            pending.append(batch)
            rows += batch.record_count
            if rows >= opts.batch_rows:
                for good, cols in _decode(pending, seg.path, undecodable):
                    out = _build_arrow(seg, good, cols, opts, start, end, sl.txn, sl.features)
                    if out is not None:
                        yield out
                pending, rows = [], 0
    except FormatError as exc:
        # rows stop at the last valid batch; kafka-log-segments reports the damage
        if seg.remote is not None:
            errors.append(remote_error_text(seg, exc, walked_last))
        whole = False
    except OSError:
        if seg.ranged:
            raise  # a remote read failed: fail the task (Spark retries it), never lose rows silently
        return  # a local file gone since planning: no rows, as before
    finally:
        batches.close()
        walk.close()
        if undecodable is not None:  # the CRC-bad batches this slice emits, skipped alone
            undecodable.extend(
                crc_skip_row(c, seg.path)
                for c in crc_skipped
                if c.position >= sl.emit_from
                and (sl.emit_to is None or c.position < sl.emit_to)
                and (start is None or c.last_offset >= start)
                and (end is None or c.base_offset is None or c.base_offset < end)
            )
    if crc_skipped and (walked_last is None or crc_skipped[-1].last_offset > walked_last):
        walked_last = crc_skipped[-1].last_offset  # named as skipped, not a gap in the store
    if problems is not None:
        gap = remote_gap_text(seg, walked_last, end) if whole else None
        problems.extend(
            {"path": seg.path, "valid_bytes": walked_end, "size_bytes": seg.size, "error": text}
            for text in [*errors, *order.problems, *([gap] if gap is not None else [])]
        )
    if pending:
        for good, cols in _decode(pending, seg.path, undecodable):
            out = _build_arrow(seg, good, cols, opts, start, end, sl.txn, sl.features)
            if out is not None:
                yield out
