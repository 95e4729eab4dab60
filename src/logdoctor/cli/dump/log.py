"""``.log`` segments and KRaft ``.checkpoint`` snapshots: batches, records, seeking with the indexes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from logdoctor.checks.live import active_segment_of_live_dir
from logdoctor.checks.verify_index import (
    Finding,
    FindingCode,
    Severity,
    scan_log_layout,
    verify_offset_index,
    verify_time_index,
)
from logdoctor.cli.dump.context import (
    Event,
    FileContext,
    file_event,
    format_failure,
    read_optional,
    sibling,
    summary_event,
)
from logdoctor.cli.dump.decoders import RecordDecoder, decode_control, pick_decoder
from logdoctor.cli.dump.kinds import FileKind
from logdoctor.errors import FormatError, TruncatedError
from logdoctor.formats.record_types import Batch, Record

if TYPE_CHECKING:
    from logdoctor.formats.record_lines import RecordLines
from logdoctor.logdir import names, read_rate
from logdoctor.logdir.read_plan import OffsetOrder
from logdoctor.logdir.reader import DEFAULT_WINDOW, LogReader, iter_batches_from
from logdoctor.logdir.seek import SeekPlan, plan_offset_seek, plan_timestamp_seek


class _Outcomes:
    """The outcome of each transactional batch of the segment dumped, from the markers of its partition
    (:mod:`logdoctor.logdir.transactions`: the marker may be in a later segment). Found on the first
    transactional batch only, so a log without transactions reads nothing more."""

    def __init__(self, ctx: FileContext) -> None:
        self._ctx = ctx
        self._view: object = None
        self._found = False

    def _find(self) -> object:
        from logdoctor.logdir.discovery import DiscoveryError
        from logdoctor.logdir.read_options import ReadOptions
        from logdoctor.logdir.read_plan import plan_read
        from logdoctor.logdir.refs import PartitionRef
        from logdoctor.logdir.transactions import READ_UNCOMMITTED, partition_transactions, segment_views

        ctx = self._ctx
        alone = False
        decisions = None  # a remote object's: its log dir's coordinator state is not among the inputs
        try:
            if ctx.remote is not None:
                from logdoctor.cli.dump.context import PARTITIONS

                seg = ctx.remote
                ref = PARTITIONS.get(seg.path)
                if ref is None:  # one object named alone: its later segments are not known here
                    alone = True
                    ref = PartitionRef(seg.log_dir, seg.topic, seg.partition, seg.path, "remote", (seg,))
                refs = [ref]
            elif names.parse_partition_dir(ctx.path.parent.name) is not None:
                plan = plan_read([str(ctx.path.parent)], ReadOptions(include_internal=True))
                refs, decisions = list(plan.refs), plan.decisions
            else:
                return None
        except (OSError, DiscoveryError, FormatError) as exc:
            ctx.warnings.append(f"{ctx.file}: the outcome of its transactions is not known: {exc}")
            return None
        for ref in refs:
            txns = partition_transactions(ref, high_watermark=False, decisions=decisions)
            if alone and txns.open_transactions():
                txns.transactions = [t for t in txns.transactions if t.marker_offset is not None]
                ctx.warnings.append(
                    f"{ctx.file}: the markers of its transactions still open at its end are in later "
                    "segments: their records' transaction_result is null (dump the partition folder with "
                    "--remote-storage to see them)"
                )
            views = segment_views(txns, ref.segments, READ_UNCOMMITTED, False)
            here = ctx.remote.path if ctx.remote is not None else None
            for seg, view in zip(ref.segments, views, strict=True):
                if seg.path == here if here is not None else Path(seg.path).name == ctx.path.name:
                    return view
        return None

    def result(self, b: Batch) -> str | None:
        if b.magic < 2 or not b.is_transactional or b.producer_id < 0:
            return None
        if not self._found:
            self._view, self._found = self._find(), True
        if self._view is None:
            return None
        from logdoctor.logdir.transactions import RESULTS

        code = self._view.results([b.producer_id], [b.base_offset], [1])[0]  # type: ignore[attr-defined]
        return RESULTS[code]


def _batch_event(ctx: FileContext, b: Batch, verify_crc: bool, outcomes: _Outcomes | None = None) -> Event:
    return {
        "type": "batch",
        "file": ctx.file,
        "position": b.position,
        "size": b.size,
        "base_offset": b.base_offset,
        "last_offset": b.last_offset,
        "record_count": b.record_count,
        "magic": b.magic,
        "compression": b.compression.label,
        "crc": b.stored_crc,
        "crc_valid": b.crc_valid() if verify_crc else None,
        "timestamp_type": b.timestamp_type.label,
        "max_timestamp": b.max_timestamp,
        "first_timestamp": getattr(b, "first_timestamp", -1),
        "producer_id": b.producer_id,
        "producer_epoch": b.producer_epoch,
        "base_sequence": b.base_sequence,
        "last_sequence": getattr(b, "last_sequence", -1),
        "partition_leader_epoch": b.partition_leader_epoch,
        "is_transactional": bool(b.is_transactional),
        "is_control": bool(b.is_control),
        "delete_horizon_ms": getattr(b, "delete_horizon_ms", None),
        # how its transaction ended (committed, aborted, open), from the partition's markers; null outside one
        "transaction_result": None if outcomes is None else outcomes.result(b),
    }


def _record_event(
    ctx: FileContext,
    b: Batch,
    r: Record,
    decoder: RecordDecoder | None,
    decoder_name: str | None,
    transaction_result: str | None = None,
) -> Event:
    ev: Event = {
        "type": "record",
        "file": ctx.file,
        "batch_position": b.position,
        "offset": r.offset,
        "timestamp": r.timestamp,
        "timestamp_type": r.timestamp_type.label,
        "key_size": -1 if r.key is None else len(r.key),
        "value_size": -1 if r.value is None else len(r.value),
        "key": r.key,
        "value": r.value,
        "headers": [{"key": h.key, "value": h.value} for h in r.headers],
        "sequence": r.sequence,
        "transaction_result": transaction_result,
    }
    try:
        if b.is_control:
            ev["decoded"] = decode_control(r, ctx.file)
        elif decoder is not None:
            ev["decoder"] = decoder_name
            ev["decoded"] = decoder(r)
    except FormatError as e:
        ev["decode_error"] = f"{type(e).__name__}: {e}"
    return ev


def _index(ctx: FileContext, suffix: str) -> bytes | None:
    """The segment's ``.index``/``.timeindex``: its sibling file, or a remote segment's from its store."""
    if ctx.remote is not None:
        from logdoctor.logdir.remote_reader import remote_index_bytes

        return remote_index_bytes(ctx.remote, "offset" if suffix == ".index" else "timestamp") or None
    return read_optional(sibling(ctx.path, suffix))


def _open(ctx: FileContext, stack: ExitStack) -> LogReader:
    """The file mapped; a remote-tier segment's original bytes read from its store by byte ranges, a window
    at a time, never whole (the remote reader closed with ``stack``)."""
    if ctx.remote is None:
        return LogReader.open(ctx.path)
    from logdoctor.logdir.reader import RangedLogReader
    from logdoctor.logdir.remote_reader import open_remote_log

    return RangedLogReader(stack.enter_context(open_remote_log(ctx.remote)), source=ctx.file)


def _log_plan(ctx: FileContext, reader: LogReader) -> SeekPlan:
    opts, info = ctx.opts, ctx.info
    base = info.base_offset if info.kind is FileKind.LOG and info.base_offset is not None else None
    if base is None or (opts.offsets is None and opts.timestamps is None):
        return SeekPlan(0, "start")
    index = _index(ctx, ".index")
    if opts.offsets is not None and opts.offsets.first is not None:
        plan = plan_offset_seek(reader, index, base, opts.offsets.first, source=ctx.file)
    elif opts.timestamps is not None and opts.timestamps.first is not None:
        tindex = _index(ctx, ".timeindex")
        plan = plan_timestamp_seek(reader, index, tindex, base, opts.timestamps.first, source=ctx.file)
    else:
        return SeekPlan(0, "start")
    if plan.fallback:
        ctx.warnings.append(f"{ctx.file}: {plan.fallback}; reading from the start of the segment")
    return plan


def dump_log(ctx: FileContext) -> Iterator[Event]:
    """A ``.log`` segment or a KRaft ``.checkpoint`` snapshot: batches, records, findings."""
    with ExitStack() as stack:
        yield from _dump_log(ctx, _open(ctx, stack))


def _dump_log(ctx: FileContext, reader: LogReader) -> Iterator[Event]:
    opts = ctx.opts
    header = file_event(ctx, reader.size)
    live = ctx.remote is None and active_segment_of_live_dir(ctx.path)
    if live:
        ctx.warnings.append(
            f"{ctx.file}: the active segment of a running broker (.lock held): read as of its "
            f"{reader.size:,} bytes when opened; the broker appends after"
        )
    if ctx.remote is not None:
        header["remote_segment_id"] = ctx.remote.remote.segment_id
        header["remote_layout"] = ctx.remote.remote.layout
    if ctx.info.kind is FileKind.KRAFT_SNAPSHOT:
        header["snapshot_end_offset"] = ctx.info.base_offset
        header["snapshot_epoch"] = ctx.info.epoch
        header["bootstrap"] = ctx.path.name == names.BOOTSTRAP_CHECKPOINT_FILE
    else:
        header["base_offset"] = ctx.info.base_offset
    decoder_name, decoder = pick_decoder(opts.decoder, ctx.path, opts.schemas, typed=opts.print_data)
    header["decoder"] = decoder_name
    yield header

    plan = _log_plan(ctx, reader)
    seeking = plan.position > 0 or opts.offsets is not None or opts.timestamps is not None
    end = reader.size if opts.max_bytes is None else min(reader.size, plan.position + opts.max_bytes)
    limited = end < reader.size
    deep = opts.deep or opts.print_data
    off_r, ts_r = opts.offsets, opts.timestamps
    stats = {"batches": 0, "records": 0, "first_offset": None, "last_offset": None}
    last_record_offset: int | None = None
    valid_end = plan.position
    error: FormatError | None = None
    gaps: list[Finding] = []
    crc_bad: list[Finding] = []
    below: list[Finding] = []  # batches below the segment's base offset (scan: SEGMENT_BASE_OFFSET_MISMATCH)
    segment_base = ctx.info.base_offset if ctx.info.kind is FileKind.LOG else None
    # a remote segment's own last offset: an object that runs on into the next segment is named and its
    # offsets past the end dumped once, from the segment that holds them (issue 48, as export reads it)
    remote_end = OffsetOrder(ctx.remote).end if ctx.remote is not None else None
    past: list[Finding] = []
    started = ts_r is None or ts_r.first is None
    # a walk that may stop early (a seek, --max-batches) or is paced reads a window at a time (growing from
    # DEFAULT_WINDOW): it reads little more than the batches it yields
    windowed = seeking or opts.max_batches is not None or read_rate.limited() is not None
    walk = iter_batches_from(reader, plan.position, end=end, window=DEFAULT_WINDOW if windowed else None)
    outcomes = _Outcomes(ctx) if ctx.info.kind is FileKind.LOG else None
    lines = _lines_writer(ctx, decoder) if deep else None
    try:
        for b in walk:
            valid_end = b.position + b.size
            if off_r is not None:
                if off_r.first is not None and b.last_offset < off_r.first:
                    continue
                if off_r.last is not None and b.magic >= 2 and b.base_offset > off_r.last:
                    break
            if remote_end is not None and b.magic >= 2 and b.last_offset > remote_end:
                past.append(_past_remote_end(ctx, b, remote_end))
                if b.base_offset > remote_end:
                    break
            if not started:
                if b.max_timestamp < ts_r.first:  # type: ignore[union-attr]
                    continue
                started = True
            ev = _batch_event(ctx, b, opts.verify_crc, outcomes)
            yield ev
            if segment_base is not None and b.base_offset is not None and b.base_offset < segment_base:
                below.append(_below_base(ctx, b, segment_base))
            stats["batches"] += 1
            if stats["first_offset"] is None:
                stats["first_offset"] = b.base_offset  # v0/v1: the (first inner) message's offset
            stats["last_offset"] = b.last_offset
            if ev["crc_valid"] is False:
                crc_bad.append(
                    Finding(
                        FindingCode.LOG_CRC_MISMATCH,
                        Severity.ERROR,
                        ctx.file,
                        f"batch at position {b.position} ({b.base_offset}..{b.last_offset}): stored CRC "
                        f"{b.stored_crc:#010x}, computed {b.compute_crc():#010x}",
                        log={
                            "position": b.position,
                            "base_offset": b.base_offset,
                            "last_offset": b.last_offset,
                        },
                    )
                )
            got = lines(b, ev["transaction_result"]) if lines is not None else None
            if got is not None:  # the batch's record lines at once (formats.record_lines)
                if last_record_offset is not None and got.first_offset != last_record_offset + 1:
                    gaps.append(_gap(ctx, last_record_offset, got.first_offset))
                gaps.extend(_gap(ctx, prev, nxt) for prev, nxt in got.gaps)
                last_record_offset = got.last_offset
                stats["records"] += got.count
                yield {"type": "record_lines", "file": ctx.file, "records": got.count, "text": got.text}
            elif deep:
                try:
                    for r in b.records():
                        if stats["first_offset"] is None:
                            stats["first_offset"] = r.offset
                        if last_record_offset is not None and r.offset != last_record_offset + 1:
                            gaps.append(_gap(ctx, last_record_offset, r.offset))
                        last_record_offset = r.offset
                        if remote_end is not None and r.offset > remote_end:
                            continue  # the next segment's: dumped with it
                        if off_r is not None and not off_r.contains(r.offset):
                            continue
                        if ts_r is not None and not ts_r.contains(r.timestamp):
                            continue
                        stats["records"] += 1
                        yield _record_event(ctx, b, r, decoder, decoder_name, ev["transaction_result"])
                except FormatError as e:
                    if ctx.failure is None:
                        ctx.failure = format_failure(ctx.path, e)
            else:
                stats["records"] += b.record_count
                if b.magic >= 2:
                    if last_record_offset is not None and b.base_offset != last_record_offset + 1:
                        gaps.append(_gap(ctx, last_record_offset, b.base_offset))
                    last_record_offset = b.last_offset
            if off_r is not None and off_r.last is not None and b.last_offset >= off_r.last:
                break
            if ts_r is not None and ts_r.last is not None and b.max_timestamp > ts_r.last:
                break
            if opts.max_batches is not None and stats["batches"] >= opts.max_batches:
                break  # --max-batches: the rest is not read (an error past it is not looked for either)
    except FormatError as e:
        if not isinstance(e, TruncatedError):
            error = e
        elif live and not limited:
            # a batch the broker was writing when the file was opened (its moment): not yet written, as
            # Kafka's reader takes a partial batch at the end (FileLogInputStream.nextBatch)
            ctx.warnings.append(
                f"{ctx.file}: the batch at position {valid_end:,} was being written when the file was opened "
                f"({reader.size - valid_end:,} bytes of it then): not yet written, not dumped"
            )
        elif not limited:
            error = e
    ctx.findings.extend(below[:1])  # the first (the scan reports the segment once)
    ctx.findings.extend(past[:1])  # the first batch past the end (the dump stops there)
    ctx.findings.extend(crc_bad)
    ctx.findings.extend(gaps)
    invalid = 0
    if error is not None:
        invalid = reader.size - valid_end
        ctx.findings.append(
            Finding(
                FindingCode.LOG_INVALID_BYTES,
                Severity.ERROR,
                ctx.file,
                f"Found {invalid} invalid bytes at the end of {ctx.path.name} (from position {valid_end}): "
                f"{error.kind}: expected {error.expected}"
                + (f", found {error.found}" if error.found else ""),
                log={"position": valid_end, "invalid_bytes": invalid, "size": reader.size},
            )
        )
        if ctx.failure is None:
            ctx.failure = format_failure(ctx.path, error)
            if valid_end == 0 and plan.position == 0:
                ctx.failure.line += " (no batch at all: is this a Kafka log segment?)"
    yield from (f.to_dict() for f in ctx.findings)
    bytes_read = reader.distinct_bytes_read  # each byte once; before the verification reads the log again
    if opts.verify_index and ctx.info.kind is FileKind.LOG and ctx.info.base_offset is not None:
        yield from _verify_siblings(ctx, reader)
    yield summary_event(
        ctx,
        batches=stats["batches"],
        records=stats["records"],
        first_offset=stats["first_offset"],
        last_offset=stats["last_offset"],
        start_position=plan.position,
        seek=plan.via,
        valid_bytes=valid_end - plan.position,
        invalid_bytes=invalid,
        size=reader.size,
        bytes_read=bytes_read,
        findings=len(ctx.findings),
    )


def _lines_writer(
    ctx: FileContext, decoder: RecordDecoder | None
) -> Callable[..., RecordLines | None] | None:
    """:func:`logdoctor.formats.record_lines.record_lines` when a batch's records may be printed as its
    lines at once: a sink that takes them (text), no --print-data, no decoder (its errors show on the
    record's line), no --offsets/--timestamps filter of records, not a remote segment; else None (one
    ``record`` event a record)."""
    opts = ctx.opts
    if not ctx.record_lines or opts.print_data or decoder is not None or ctx.remote is not None:
        return None
    if opts.offsets is not None or opts.timestamps is not None:
        return None
    from logdoctor.formats import record_lines

    return record_lines.record_lines if record_lines.available() else None


def _past_remote_end(ctx: FileContext, b: Batch, end: int) -> Finding:
    """A remote segment's batch holding offsets past the segment's last offset (the remote log metadata's
    end offset, or before the next segment): the object runs on into the next segment."""
    return Finding(
        FindingCode.LOG_PAST_REMOTE_SEGMENT,
        Severity.ERROR,
        ctx.file,
        f"the batch at position {b.position} holds offsets {max(b.base_offset, end + 1)}-{b.last_offset}, "
        f"past the segment's last offset {end} (its metadata's end, or the next segment's start): the object "
        "runs on into the next segment; those offsets are dumped once, with the segment that holds them",
        log={"position": b.position, "base_offset": b.base_offset, "last_offset": b.last_offset, "end": end},
    )


def _below_base(ctx: FileContext, b: Batch, base: int) -> Finding:
    """A batch below the segment's base offset: LogSegment.recover's ensureOffsetInRange throws
    InvalidOffsetException and the broker deletes the segment's data (issue 48: the scan said it, the dump
    did not)."""
    return Finding(
        FindingCode.LOG_OFFSET_BELOW_BASE,
        Severity.ERROR,
        ctx.file,
        f"the batch at position {b.position} starts at offset {b.base_offset}, below the segment's base "
        f"offset {base} (from its file name): the broker's recovery deletes the segment's data",
        log={"position": b.position, "base_offset": b.base_offset, "segment_base_offset": base},
    )


def _gap(ctx: FileContext, prev: int, nxt: int) -> Finding:
    # a remote segment's topic is never compacted (UnifiedLog.isRemoteLogEnabled): a skip there is lost
    # offsets, an error as a step back is (issue 31)
    remote = ctx.remote is not None
    severity = Severity.ERROR if nxt <= prev or remote else Severity.INFO
    what = "goes back" if nxt <= prev else "skips"
    if nxt <= prev:
        why = ")"
    elif remote:
        why = f"; a tiered topic is never compacted: offsets {prev + 1}-{nxt - 1} are missing)"
    else:
        why = "; normal after compaction or a transaction abort cleanup)"
    return Finding(
        FindingCode.LOG_NON_CONSECUTIVE_OFFSETS,
        severity,
        ctx.file,
        f"{prev} is followed by {nxt} (the offset {what}{why}",
        log={"offset": prev, "next_offset": nxt},
    )


def _verify_siblings(ctx: FileContext, reader: LogReader) -> Iterator[Event]:
    base = ctx.info.base_offset or 0
    layout = scan_log_layout(reader)
    for suffix, fn in ((".index", verify_offset_index), (".timeindex", verify_time_index)):
        p = sibling(ctx.path, suffix)
        data = _index(ctx, suffix)
        if data is None:
            continue
        name = str(p) if ctx.remote is None else f"{ctx.file} ({suffix[1:]})"
        for f in fn(data, base, layout, file=name):
            ctx.findings.append(f)
            yield f.to_dict()
