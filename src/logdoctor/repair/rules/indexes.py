"""Index files rebuilt from their ``.log``: INDEX_CORRUPT, INDEX_MISSING, RETENTION_RISK.

Restates K:storage/src/main/java/org/apache/kafka/storage/internals/log/LogSegment.java ``recover``:
the offset index, time index and transaction index of a segment are what one walk of its valid
batches produces (:func:`logdoctor.formats.recovery.rebuild_indexes`, byte-identical to Kafka's).
Only the files named by the findings are written (RETENTION_RISK: the ``.timeindex``, so retention
sees the true largest timestamp; also planned for an inactive segment whose time index would expose
it once below the recovery point). The ``.txnindex`` is seeded with the transactions open at the
segment's base offset: the producer snapshot there, else replayed from the partition's first segment
(K:.../log/LogLoader.java rebuilds producer state the same way before recovering a segment). A
``.txnindex`` is written only when it has an entry or already exists (Kafka creates it lazily).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from logdoctor.checks.findings import Finding, Severity
from logdoctor.checks.state.fast_lane import crc_checked_prefix, in_walk_threads
from logdoctor.checks.state.file_records import read_buffer, release
from logdoctor.checks.state.kept_mappings import crc_walked_unchanged
from logdoctor.errors import FormatError
from logdoctor.formats.producer_snapshot import parse_producer_snapshot
from logdoctor.formats.producer_state import ProducerStateError
from logdoctor.formats.recovery import RebuiltIndexes, rebuild_indexes
from logdoctor.logdir import files
from logdoctor.logdir.model import Segment
from logdoctor.logdir.names import segment_file_name
from logdoctor.repair.plan import Action, Unrepaired
from logdoctor.repair.rules.context import (
    INDEX_SUFFIXES,
    PartitionPlan,
    PlanContext,
    read,
    segment_base,
)

CODES = ("INDEX_CORRUPT", "INDEX_MISSING", "RETENTION_RISK")


def plan(ctx: PlanContext, pp: PartitionPlan, segs: dict[int, Segment]) -> None:
    """Rebuild the index files the findings name, for each segment not removed nor rebuilt already."""
    wanted: dict[int, dict[str, list[Finding]]] = {}
    for f in pp.findings:
        base = segment_base(f.path)
        if base is None or base not in segs:
            continue
        if f.code == "INDEX_CORRUPT":
            suffix = Path(f.path).suffix
            if suffix in INDEX_SUFFIXES:
                wanted.setdefault(base, {}).setdefault(suffix, []).append(f)
        elif f.code == "INDEX_MISSING":
            for m in f.details.get("missing") or [".index", ".timeindex"]:
                wanted.setdefault(base, {}).setdefault(m, []).append(f)
        elif f.code == "RETENTION_RISK":
            wanted.setdefault(base, {}).setdefault(".timeindex", []).append(f)
    done = pp.removed | pp.rebuilt
    todo = [(base, which) for base, which in sorted(wanted.items()) if base not in done]
    # the segments whose .txnindex is not rebuilt need no producer state: rebuilt at once, in order
    ready = rebuilt_each(ctx, [segs[base] for base, which in todo if ".txnindex" not in which])
    for base, which in todo:
        rebuild(ctx, pp, segs[base], which, None if ".txnindex" in which else next(ready))


def open_transactions(ctx: PlanContext, pp: PartitionPlan, seg: Segment) -> dict[int, int]:
    """Transactions open at ``seg``'s base offset, as LogLoader rebuilds producer state."""
    snap = dict(pp.part.producer_snapshots).get(seg.base_offset)
    if snap is not None:
        try:
            return parse_producer_snapshot(files.read_file(snap), source=str(snap)).ongoing_transactions()
        except (FormatError, OSError):
            pass
    open_txns: dict[int, int] = {}
    for s in pp.part.segments:
        if s.base_offset >= seg.base_offset:
            break
        open_txns = rebuild_from_log(ctx, s, open_txns).open_transactions
    return open_txns


def rebuilt(ctx: PlanContext, pp: PartitionPlan, seg: Segment, need_txn: bool) -> RebuiltIndexes:
    return rebuild_from_log(ctx, seg, open_transactions(ctx, pp, seg) if need_txn else None)


def rebuild_from_log(ctx: PlanContext, seg: Segment, txns: dict[int, int] | None = None) -> RebuiltIndexes:
    """The indexes of ``seg`` rebuilt from its .log (``txns``: the transactions open at its base offset),
    the file mapped for the rebuild only (read_buffer: MAP_POPULATE for a large file). Called outside
    the walk threads, a big segment has its CRCs checked first on every core (crc_checked_prefix, 0
    otherwise) and the C lane does not check them again; a segment whose kept mapping the planning scan
    walked with CRCs, unchanged since, is not checked again at all (crc_walked_unchanged)."""
    view, handle, _ = read_buffer(seg.log_path)
    try:
        unchanged = crc_walked_unchanged(seg.log_path)
        if unchanged is not None:
            # the planning scan walked this very mapping with CRCs (the active segment): not checked
            # again when the file is provably unchanged since (crc_walked_unchanged says why)
            built = _rebuilt(ctx, seg, view, txns, len(view))
            if unchanged():
                return built
        return _rebuilt(ctx, seg, view, txns, crc_checked_prefix(view))
    finally:
        release(view, handle)


def _rebuilt(
    ctx: PlanContext, seg: Segment, view: memoryview, txns: dict[int, int] | None, crc_checked_until: int
) -> RebuiltIndexes:
    return rebuild_indexes(
        view,
        seg.base_offset,
        index_interval_bytes=ctx.interval,
        source=str(seg.log_path),
        open_transactions=txns,
        crc_checked_until=crc_checked_until,
    )


def rebuilt_each(ctx: PlanContext, segments: list[Segment]) -> Iterator[RebuiltIndexes]:
    """:func:`rebuilt` without producer state of each segment, in order, computed on a thread per core:
    each thread maps one segment at a time and rebuilds it in the C lane of rebuild_indexes, which walks
    without the GIL (a segment rebuilt alone is rebuilt in this thread, its CRCs on every core). The
    same results as one after another: LogSegment.recover's walk of a segment starts from its own bytes
    alone when no producer state is carried in. Memory: a few results at a time (in_walk_threads),
    whatever the count."""
    return in_walk_threads(lambda seg: rebuild_from_log(ctx, seg), segments)


def index_meta(ctx: PlanContext, seg: Segment) -> dict[str, int]:
    """Owner and mode of a new index file: the broker's user (the log dir's owner), mode like siblings."""
    log_dir = ctx.log_dir_of(str(seg.log_path))
    assert log_dir is not None
    uid, gid = ctx.owner_of(log_dir)
    return {"uid": uid, "gid": gid, "mode": ctx.sibling_modes.mode(str(seg.log_path), False, uid) | 0o600}


def write_indexes(
    ctx: PlanContext, pp: PartitionPlan, seg: Segment, action: Action, r: RebuiltIndexes, which: Iterable[str]
) -> None:
    folder = str(pp.part.path)
    meta = index_meta(ctx, seg)
    data = {".index": r.offset_index, ".timeindex": r.time_index, ".txnindex": r.txn_index}
    for suffix in which:
        path = os.path.join(folder, segment_file_name(seg.base_offset, suffix))
        if suffix == ".txnindex" and not os.path.exists(path) and not r.txn_index:
            continue  # Kafka creates a .txnindex only when it has an entry
        ctx.write_step(
            action,
            path,
            data[suffix],
            "rebuilt from the .log as LogSegment.recover does",
            meta_after=meta,
        )


def rebuild(
    ctx: PlanContext,
    pp: PartitionPlan,
    seg: Segment,
    which: dict[str, list[Finding]],
    ready: RebuiltIndexes | None = None,
) -> None:
    fs = [f for v in which.values() for f in v]
    uniq = list(dict.fromkeys(f.path for f in fs))
    action = Action(
        "rebuild-indexes",
        str(seg.log_path),
        "; ".join(dict.fromkeys(f"{f.code}: {f.message}" for f in fs)),
        sorted({f.code for f in fs}),
        uniq,
    )
    r = ready if ready is not None else rebuilt(ctx, pp, seg, ".txnindex" in which)
    log_path = str(seg.log_path)
    if r.valid_bytes < seg.size and r.error is not None:
        # the .log itself has an invalid batch the scan at this depth did not report (below the
        # recovery point after a clean shutdown the broker never re-reads it): the rebuilt
        # indexes cover the valid bytes only, as recovery's would; the cut is repair --deep's
        cut = (
            f"its batch at byte position {r.valid_bytes} is invalid ({r.error}); the rebuilt "
            "indexes stop there. `logdoctor repair --deep` truncates the segment there as the "
            "broker's recovery would (the cut bytes kept in the backup)"
            if not isinstance(r.error, ProducerStateError)
            else f"the broker's load of this partition fails at its batch at byte position "
            f"{r.error.position} ({r.error.kafka_exception}: {r.error}); the rebuilt indexes stop there, "
            "and nothing is truncated (the broker truncates nothing there either)"
        )
        if not any(u.code == "LOG_CORRUPT" and u.path == log_path for u in ctx.plan.unrepaired):
            ctx.plan.unrepaired.append(Unrepaired("LOG_CORRUPT", log_path, cut, Severity.ERROR.label))
        for f in fs:
            if f.code == "RETENTION_RISK":  # the true largest timestamp may lie beyond the cut
                ctx.unrepaired(f, f"{seg.log_name}: " + cut)
    write_indexes(ctx, pp, seg, action, r, sorted(which))
    ctx.add(action)


def latent_retention(ctx: PlanContext, pp: PartitionPlan) -> None:
    """Inactive segments whose time index would give retention a wrong largest timestamp once the
    segment is below the recovery point (the scan reports it only then; a repaired recovery-point
    checkpoint can expose it): rebuild their .timeindex too."""
    try:
        segs = pp.part.segments
    except OSError:
        return
    candidates: list[tuple[Segment, str]] = []
    for seg in segs[:-1]:
        base = seg.base_offset
        path = os.path.join(str(pp.part.path), segment_file_name(base, ".timeindex"))
        if base in pp.removed or base in pp.rebuilt or path in ctx.written or path in ctx.moved:
            continue
        if ctx.left_alone(path):
            continue
        try:
            if seg.size == 0:
                continue
            size = os.path.getsize(path) if os.path.exists(path) else 0
            last = files.read_range(path, (size // 12 - 1) * 12, 12) if size >= 12 else b""
        except OSError:
            continue
        if len(last) == 12 and int.from_bytes(last[:8], "big", signed=True) > 0:
            continue
        candidates.append((seg, path))
    ready = rebuilt_each(ctx, [seg for seg, _ in candidates])  # at once: no producer state needed
    for (seg, path), r in zip(candidates, ready, strict=True):
        if r.max_timestamp < 0 or read(path) == r.time_index:
            continue
        a = Action(
            "rebuild-indexes",
            str(seg.log_path),
            f"RETENTION_RISK (latent): {path} gives no true largest timestamp (empty, zero or "
            f"missing); once the segment is below the recovery point, time retention would use 0 or "
            f"the .log mtime instead of {r.max_timestamp}",
            ["RETENTION_RISK"],
            [path],
        )
        write_indexes(ctx, pp, seg, a, r, [".timeindex"])
        pp.rebuilt.add(seg.base_offset)
        ctx.add(a)
