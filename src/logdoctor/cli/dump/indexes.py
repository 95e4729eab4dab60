"""Offset, time and transaction indexes: entries, checks without a log, and ``--verify-index``."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

from logdoctor.checks.live import active_segment_of_live_dir
from logdoctor.checks.preallocated_index import (
    Tail,
    classify_tail,
    is_active_segment_file,
    what_the_broker_does,
)
from logdoctor.checks.verify_index import (
    Finding,
    FindingCode,
    Severity,
    scan_log_layout,
    verify_offset_index,
    verify_time_index,
)
from logdoctor.cli.dump.context import DumpFailure, Event, FileContext, file_event, sibling, summary_event
from logdoctor.cli.exit_codes import EX_DATA
from logdoctor.formats.index import (
    OFFSET_ENTRY_SIZE,
    TIME_ENTRY_SIZE,
    TXN_ENTRY_SIZE,
    IndexKind,
    SanityEra,
    offset_index_array,
    real_entry_count,
    sanity_check,
    time_index_array,
)
from logdoctor.logdir.files import read_file
from logdoctor.logdir.reader import LogReader


def _index_checks(ctx: FileContext, data: bytes, kind: IndexKind, entry_size: int) -> None:
    """Checks that need no log: whole entries, era sanity, entries in order. Each problem is a finding
    (counted in the summary, with or without --verify-index) and the file's failure (exit code 2)."""

    def bad(code: FindingCode, message: str, position: int | None, slot: int | None = None) -> None:
        ctx.findings.append(Finding(code, Severity.ERROR, ctx.file, message, slot=slot))
        if ctx.failure is None:
            where = f"{ctx.file}@{position}" if position is not None else ctx.file
            ctx.failure = DumpFailure(f"{where}: {message}", EX_DATA, position)

    if len(data) % entry_size:
        pos = len(data) - len(data) % entry_size
        bad(
            FindingCode.INDEX_PARTIAL_ENTRY,
            f"truncated: expected whole {entry_size}-byte entries, found {len(data) % entry_size} trailing "
            f"bytes (file length {len(data)})",
            pos,
        )
    checked = data
    n = real_entry_count(data, entry_size)
    if _preallocated(ctx, data, entry_size, n):
        # the active segment's preallocated working copy, zero past its entries (AbstractIndex): its sanity
        # is that of its entries, as scan judges it (checks.preallocated_index, one rule for both)
        checked = data[: n * entry_size]
    verdict = sanity_check(kind, checked, ctx.info.base_offset or 0, SanityEra.KAFKA_2_0, source=ctx.file)
    if not verdict.passed:
        bad(FindingCode.INDEX_SANITY_CHECK_FAILED, f"corrupt index: {verdict.message}", None)
    if ctx.findings:
        return
    # Entries must grow (OffsetIndex.append / TimeIndex.maybeAppend refuse anything else): a file
    # of another kind named like an index fails here at once.
    n = real_entry_count(data, entry_size)
    if kind is IndexKind.OFFSET:
        arr = offset_index_array(data, strict=False)[:n]
        keys = [arr["relative_offset"], arr["position"]]
    else:
        arr = time_index_array(data, strict=False)[:n]
        keys = [arr["timestamp"], arr["relative_offset"]]
    for col, strict in zip(keys, (True, kind is IndexKind.OFFSET), strict=True):
        if col.size < 2:
            continue
        diffs = col[1:].astype("int64") - col[:-1].astype("int64")
        wrong = (diffs <= 0) if strict else (diffs < 0)
        if wrong.any():
            i = int(wrong.argmax()) + 1
            bad(
                FindingCode.INDEX_OUT_OF_ORDER
                if kind is IndexKind.OFFSET
                else FindingCode.TIME_INDEX_OUT_OF_ORDER,
                f"corrupt: expected index entries in increasing order, found slot {i} going back"
                + ("" if ctx.opts.verify_index else " (use --verify-index for every finding)"),
                i * entry_size,
                slot=i,
            )
            return


def _preallocated(ctx: FileContext, data: bytes, entry_size: int, n: int) -> bool:
    """Whether the index is its segment's preallocated working copy (:attr:`Tail.PREALLOCATED`: the active
    segment's, clean zero slots after its ``n`` entries); if so, says so once: a warning on a running
    broker's dir (the file changes as it is read), else the summary's note of what the broker does with it."""
    if ctx.remote is not None or n * entry_size >= len(data) - len(data) % entry_size:
        return False
    active = is_active_segment_file(ctx.path)
    if classify_tail(data, entry_size, active=active, real=n) is not Tail.PREALLOCATED:
        return False
    if ctx.notes or any("preallocated" in w for w in ctx.warnings):
        return True
    if active_segment_of_live_dir(ctx.path):
        ctx.warnings.append(
            f"{ctx.file}: the active segment's index of a running broker (.lock held): preallocated, "
            f"zero past its {n} entries, read as of now; the broker trims it at the roll"
        )
    else:
        ctx.notes.append(what_the_broker_does(ctx.path.parent.name, n, len(data) // entry_size - n))
    return True


def _layout_for(ctx: FileContext) -> Any:
    log_path = sibling(ctx.path, ".log")
    try:
        reader = LogReader.open(log_path)
    except OSError:
        ctx.findings.append(
            Finding(
                FindingCode.INDEX_WITHOUT_LOG,
                Severity.WARNING,
                ctx.file,
                f"cannot verify: no readable log segment {log_path.name} next to the index "
                "(the broker deletes such orphan indexes at startup)",
            )
        )
        return None
    return scan_log_layout(reader)


def _by_slot(findings: list[Finding]) -> dict[int, list[Finding]]:
    """Findings about one index slot each, by slot (the status column of ``--verify-index``)."""
    out: dict[int, list[Finding]] = {}
    for f in findings:
        if f.slot is not None:
            out.setdefault(f.slot, []).append(f)
    return out


def _findings_and_summary(ctx: FileContext, entries: int, shown: int, zero_slots: int) -> Iterator[Event]:
    yield from (f.to_dict() for f in ctx.findings)
    notes = {"note": " ".join(ctx.notes)} if ctx.notes else {}
    yield summary_event(
        ctx, entries=entries, shown=shown, zero_slots=zero_slots, findings=len(ctx.findings), **notes
    )


def _dump_index(ctx: FileContext, time: bool) -> Iterator[Event]:
    """An offset index's entries (slot, offset, position) or a time index's (slot, timestamp, offset)."""
    size, name, kind = (
        (TIME_ENTRY_SIZE, "time", IndexKind.TIME) if time else (OFFSET_ENTRY_SIZE, "offset", IndexKind.OFFSET)
    )
    data = read_file(ctx.path)
    base = ctx.info.base_offset or 0
    n = real_entry_count(data, size)
    yield file_event(ctx, len(data), base_offset=base)
    annotations: dict[int, dict[str, Any]] = {}
    layout = _layout_for(ctx) if ctx.opts.verify_index else None
    if layout is None:  # no --verify-index, or no log to verify against: at least what plain dump checks
        _index_checks(ctx, data, kind, size)
    else:
        verify = verify_time_index if time else verify_offset_index
        extra = {} if time else {"annotations": annotations}
        ctx.findings.extend(
            verify(data, base, layout, file=ctx.file, preallocated=_preallocated(ctx, data, size, n), **extra)
        )
    by_slot = _by_slot(ctx.findings)
    arr = (time_index_array if time else offset_index_array)(data, strict=False)[:n]
    rel = arr["relative_offset"].tolist()
    other = arr["timestamp" if time else "position"].tolist()
    off_r, ts_r = ctx.opts.offsets, ctx.opts.timestamps if time else None
    shown = 0
    for i in range(n):
        offset = base + rel[i]
        if off_r is not None and not off_r.contains(offset):
            continue
        if ts_r is not None and not ts_r.contains(other[i]):
            continue
        ev: Event = {"type": "index_entry", "file": ctx.file, "index": name, "slot": i}
        if time:
            ev.update(timestamp=other[i], offset=offset)
        else:
            ev.update(offset=offset, position=other[i])
        if ctx.opts.verify_index:
            ev["status"] = ",".join(f.code.value for f in by_slot.get(i, [])) or (
                "append-chunk" if i in annotations else "ok"
            )
            ev.update(annotations.get(i, {}))
        shown += 1
        if not ctx.opts.verify_index_only:
            yield ev
    yield from _findings_and_summary(ctx, n, shown, len(data) // size - n)


dump_offset_index = functools.partial(_dump_index, time=False)
dump_time_index = functools.partial(_dump_index, time=True)


def dump_txn_index(ctx: FileContext) -> Iterator[Event]:
    from logdoctor.formats.index import parse_txn_index

    data = read_file(ctx.path)
    yield file_event(ctx, len(data), base_offset=ctx.info.base_offset)
    entries = parse_txn_index(data[: len(data) - len(data) % TXN_ENTRY_SIZE], source=ctx.file)
    for i, e in enumerate(entries):
        yield {
            "type": "aborted_txn",
            "file": ctx.file,
            "slot": i,
            "version": e.version,
            "producer_id": e.producer_id,
            "first_offset": e.first_offset,
            "last_offset": e.last_offset,
            "last_stable_offset": e.last_stable_offset,
        }
    yield summary_event(ctx, entries=len(entries))
    if len(data) % TXN_ENTRY_SIZE:
        parse_txn_index(data, source=ctx.file)  # raises the TruncatedError naming the position
