"""Restore tiered partitions from the remote tier into a log dir (disks lost, or tiering turned off).

For each partition folder of the store (:mod:`logdoctor.logdir.remote_partitions`; of ``--topics`` only
when given), the remote segments the log dir lacks become the broker's own files again:

- the segment ``.log``, byte for byte as uploaded (``fetch-remote`` steps: streamed, ranged reads);
- its ``.index``, ``.timeindex`` and (when not empty) ``.txnindex`` from the store, byte for byte
  (LocalTieredStorage's files, the parts of Aiven's ``.indexes``); an ``.index`` or ``.timeindex`` the
  store lacks (or all three, when Aiven's ``.indexes`` object is gone) is rebuilt from the restored
  ``.log`` in the same run (``rebuild-index`` steps: :func:`logdoctor.formats.recovery.rebuild_indexes`,
  what K:storage/src/main/java/org/apache/kafka/storage/internals/log/LogSegment.java ``recover`` writes),
  and with them the ``.txnindex`` (written when the segment has an aborted transaction), the producer
  state at the segment's base offset taken from the store's snapshot of the segment before (or replayed
  from the restored segments, LogLoader's way). A ``.txnindex`` the store lacks beside its other indexes
  is none: Kafka uploads it only when the file exists (K:core/src/main/java/kafka/log/remote/
  RemoteLogManager.java ``copyLogSegment``: ``Optional.ofNullable(toPathIfExists(segment.txnIndex()
  .file()))``, the file created on the first aborted transaction) and reads a missing one as empty
  (K:storage/.../log/RemoteIndexCache.java: RemoteResourceNotFoundException, "the transaction index may
  not exist because of no transactional records");
- the producer snapshot the store keeps with the segment, as ``<end + 1>.snapshot``: the file the
  broker wrote when it rolled the segment (K:.../log/ProducerStateManager.java ``takeSnapshot`` at the
  new segment's base offset), so the log loads its producer state without a rebuild;
- ``partition.metadata`` (the topic id) and the ``leader-epoch-checkpoint`` (the local entries merged
  with every restored segment's epochs: one start offset per epoch, the lowest);
- the log dir's checkpoints, only for partitions without an entry (an entry the broker wrote is kept):
  ``log-start-offset-checkpoint`` the first restored offset, and for a partition of which the log dir
  has no segment ``recovery-point-offset-checkpoint`` and ``replication-offset-checkpoint`` the restored
  log end (the segments are complete and fsynced, and the
  remote tier holds only offsets below the high watermark: RemoteLogManager copies segments below the
  last stable offset).

Into a log dir that still holds the partition's newest segments, only the part below the local log start
is added (every offset once). Remote segments wholly below the partition's log-start-offset entry are
deleted data and are skipped. A remote segment that overlaps the local log without starting where a local
segment starts, or whose bytes differ from the local segment with its base offset, is a finding naming
both, and is not written. A segment object that is missing or torn, a wrong key, an unknown manifest
version: a finding naming the object and offsets, and that partition's older segments are not restored
(a gap would not load).
"""

from __future__ import annotations

import functools
import itertools
import os
import re
import struct
from collections import deque
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from typing import Any

from logdoctor.errors import FormatError
from logdoctor.formats.checkpoint import (
    new_leader_epoch_checkpoint,
    parse_leader_epoch_checkpoint,
    write_leader_epoch_checkpoint,
)
from logdoctor.formats.index import IndexKind, SanityEra, real_entry_count, sanity_check
from logdoctor.formats.partition_metadata import (
    PartitionMetadata,
    parse_partition_metadata,
    write_partition_metadata,
)
from logdoctor.formats.producer_snapshot import parse_producer_snapshot
from logdoctor.formats.recovery import DEFAULT_INDEX_INTERVAL_BYTES
from logdoctor.logdir.names import (
    LEADER_EPOCH_CHECKPOINT_FILE,
    LOG_START_OFFSET_CHECKPOINT,
    PARTITION_METADATA_FILE,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
)
from logdoctor.logdir.refs import SegmentRef
from logdoctor.logdir.remote_aiven import load_manifest
from logdoctor.logdir.remote_partitions import (
    StorePartition,
    find_store_partitions,
    open_store,
    side_files,
    stored_segments,
)
from logdoctor.logdir.remote_reader import open_remote_log
from logdoctor.logdir.remote_store import RemoteOptions, RemoteTierError
from logdoctor.repair import copies as cp
from logdoctor.repair import safety
from logdoctor.repair.backup import sha256_file
from logdoctor.repair.plan import Action, Change, Plan, Unrepaired
from logdoctor.repair.procedures.common import (
    ProcedurePlan,
    ProcedureRefused,
    add_checkpoint_edit,
    log_dir_path,
    new_plan,
    read_checkpoint,
)
from logdoctor.repair.steps.base import AFTER, BackupNames, StepContext
from logdoctor.repair.steps.copying import read_manifest
from logdoctor.repair.steps.fetch_remote import fetch_remote, fetched_checksum, hold_planned_read
from logdoctor.repair.steps.mkdir import make_dir
from logdoctor.repair.steps.move import delete_with_backup
from logdoctor.repair.steps.rebuild_index import rebuild_index
from logdoctor.repair.steps.registry import operation
from logdoctor.repair.steps.write import write_file

__all__ = ["PROCEDURE", "plan_restore", "verify_restore"]

PROCEDURE = "restore"
_LOG_NAME = re.compile(r"^(\d{20})\.log$")


@dataclass(slots=True)
class _Restored:
    """What the plan restores of one partition."""

    segments: list[tuple[SegmentRef, int]] = field(default_factory=list)  # (segment, end offset)
    epochs: list[tuple[int, int]] = field(default_factory=list)
    bytes: int = 0
    rebuilt: list[str] = field(default_factory=list)  # index files rebuilt from their restored .log


def _local_logs(folder: str) -> dict[int, str]:
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return {}
    return {int(m.group(1)): os.path.join(folder, n) for n in names if (m := _LOG_NAME.match(n))}


def _index_problem(
    suffix: str, data: bytes | None, base: int, end: int, size: int, source: str
) -> str | None:
    """Why a stored ``.index`` / ``.timeindex`` cannot be restored beside its segment (offsets base..end,
    ``size`` bytes), or None: what the broker's sanity check refuses (K:storage/.../log/OffsetIndex.java,
    TimeIndex.java ``sanityCheck``: a length that is not whole entries, a last offset below the base), and
    entries that cannot be the segment's (offsets outside base..end or not increasing; positions past its
    size or not increasing; timestamps going back). Issue 48: a truncated ``.index`` was copied as it was."""
    if not data:
        return None
    kind = IndexKind.OFFSET if suffix == "index" else IndexKind.TIME
    verdict = sanity_check(kind, data, base, SanityEra.KAFKA_2_0, source=source)
    if not verdict.passed:
        return f"{verdict.exception}: {verdict.message}"
    entry = 8 if kind is IndexKind.OFFSET else 12
    n = real_entry_count(data, entry)
    if _entries_fit(kind, data, n, base, end, size):
        return None
    return _first_bad_entry(kind, data, n, base, end, size)


def _entries_fit(kind: IndexKind, data: bytes, n: int, base: int, end: int, size: int) -> bool:
    """Whether :func:`_first_bad_entry` finds no entry that cannot be the segment's, decided over all ``n``
    entries at once (numpy comparisons: a per-segment cost of the plan, ~500 entries an index of a
    4 MiB segment); an index that does not fit is walked again by :func:`_first_bad_entry` for the
    entry to name."""
    from logdoctor.formats.index import offset_index_array, time_index_array

    if n == 0:
        return True
    if kind is IndexKind.OFFSET:
        entries = offset_index_array(data, strict=False)[:n]
        rel, second = entries["relative_offset"], entries["position"]
    else:
        entries = time_index_array(data, strict=False)[:n]
        rel, second = entries["relative_offset"], entries["timestamp"]
    # base + rel in base..end: rel in 0..end - base (an int32 bound: no comparison out of its range)
    top = max(-1, min(end - base, (1 << 31) - 1))
    if not (bool((rel >= 0).all()) and bool((rel <= top).all()) and bool((rel[1:] > rel[:-1]).all())):
        return False
    if kind is IndexKind.OFFSET:
        last = min(size, 1 << 31) - 1  # a position is an int32: below 2^31 always
        in_segment = bool((second >= 0).all()) and bool((second <= last).all())
        return in_segment and bool((second[1:] > second[:-1]).all())
    return bool((second[1:] >= second[:-1]).all())


def _first_bad_entry(kind: IndexKind, data: bytes, n: int, base: int, end: int, size: int) -> str | None:
    """The first of the ``n`` entries that cannot be the segment's (offsets base..end, ``size`` bytes),
    named, or None."""
    entry = 8 if kind is IndexKind.OFFSET else 12
    prev_off, prev_second = base - 1, -1
    for j in range(n):
        if kind is IndexKind.OFFSET:
            rel, second = struct.unpack_from(">ii", data, j * entry)
        else:
            second, rel = struct.unpack_from(">qi", data, j * entry)
        off = base + rel
        if off > end or off < base or (j and off <= prev_off):
            return f"entry {j}: offset {off} is not in {base}..{end} after the entry before ({prev_off})"
        if kind is IndexKind.OFFSET and (second >= size or second < 0 or (j and second <= prev_second)):
            return (
                f"entry {j}: position {second} is not in 0..{size - 1} after the entry before ({prev_second})"
            )
        if kind is IndexKind.TIME and j and second < prev_second:
            return f"entry {j}: timestamp {second} is below the entry before ({prev_second})"
        prev_off, prev_second = off, second
    return None


def _source(seg: SegmentRef) -> dict[str, Any]:
    r = seg.remote
    assert r is not None
    return {
        "storage": r.root,
        "layout": r.layout,
        "segment_id": r.segment_id,
        "topic": seg.topic,
        "partition": seg.partition,
        "base_offset": seg.base_offset,
        "log": seg.path,
        "object_size": seg.size,
        "manifest": r.manifest,
        "indexes": r.indexes,
        "private_key": r.private_key,
    }


def _segment_end(
    seg: SegmentRef, index: bytes | None, loaded: tuple[Any, bytes | None] | None = None
) -> tuple[int, int, list[tuple[int, int]], Any]:
    """(end offset, original size, leader epochs) of a remote segment: its last batches walked from the
    offset index's last entry (a torn or short object raises FormatError here, at planning). The epochs
    (epoch, start offset), as the broker's epoch cache assigns them from batches, when the walk started at
    the first batch (no offset index), else []; and the ``.log`` object of a remote store, left open for
    the fetch (None for a local store). ``loaded``: Aiven's manifest and data key, already read."""
    from logdoctor.formats.index import offset_index_array
    from logdoctor.logdir.ranged import iter_ranged_batches

    start = 0
    if index:
        try:
            entries = offset_index_array(index, source=seg.path)
            if len(entries):
                start = int(entries[-1]["position"])
        except FormatError:
            start = 0
    last = None
    epochs: list[tuple[int, int]] = []
    with open_remote_log(seg, loaded) as reader:
        size = reader.size
        for batch in iter_ranged_batches(reader, source=seg.path, start=start):
            last = batch.last_offset
            epoch = batch.partition_leader_epoch
            if start == 0 and epoch >= 0 and (not epochs or epoch > epochs[-1][0]):
                epochs.append((epoch, batch.base_offset))
        opened = None if seg.storage.is_local else reader.detach()  # a remote object: no fd held open
    if last is None:
        if opened is not None:
            opened.close()
        raise FormatError("record batches", source=seg.path, position=start, found="none")
    if seg.remote is not None and seg.remote.end_offset is not None and last != seg.remote.end_offset:
        raise FormatError(
            f"the last offset {seg.remote.end_offset} (the next segment starts at {seg.next_base_offset})",
            source=seg.path,
            position=size,
            found=f"last offset {last}",
        )
    return last, size, epochs, opened


def _remote_checksum(seg: SegmentRef) -> str:
    """The remote segment's :func:`~logdoctor.repair.steps.fetch_remote.fetched_checksum`, read as a restore
    reads it."""
    from logdoctor.formats.crc import crc32c

    crc = 0
    with open_remote_log(seg) as reader:
        pos = 0
        while pos < reader.size:
            chunk = reader.read_at(pos, min(cp.CHUNK, reader.size - pos))
            if not chunk:
                break
            crc = crc32c(chunk, crc)
            pos += len(chunk)
    return f"{crc:08x}"


def _seg_size(seg: SegmentRef) -> int:
    """The segment's original size (Aiven: the manifest's; the object is the transformed bytes)."""
    with open_remote_log(seg) as reader:
        return int(reader.size)


def _finding(plan: Plan, code: str, path: str, why: str, severity: str = "error") -> None:
    plan.unrepaired.append(Unrepaired(code, path, why, severity))


def _topic_id_of(folder: str) -> str | None:
    path = os.path.join(folder, PARTITION_METADATA_FILE)
    try:
        with open(path, "rb") as fh:
            return parse_partition_metadata(fh.read(), source=path).topic_id
    except (OSError, FormatError, ValueError):
        return None


def _file_action(
    plan: Plan,
    names: BackupNames,
    path: str,
    data: bytes,
    kind: str,
    reason: str,
    before: bytes | None = None,
) -> None:
    step = write_file(path, data, names)
    change = Change(path, len(before) if before is not None else None, len(data))
    plan.actions.append(Action(kind, path, reason, steps=[step], changes=[change]))


def _missing_offsets(first: int, seg: SegmentRef, older: int) -> str:
    """What stays missing when ``seg`` cannot be restored: its offsets and those of the ``older`` remote
    segments below it (left out: a log with a gap would not load), from ``first``. Its last offset is the
    next segment's base - 1, else the remote log metadata's end offset; else it is not known (the segment
    cannot be read), and the text says so instead of implying that the segment starts at ``first``."""
    last = None
    if seg.next_base_offset is not None:
        last = seg.next_base_offset - 1
    elif seg.remote is not None and seg.remote.end_offset is not None:
        last = seg.remote.end_offset
    if last is not None:
        span = f"offsets {first}-{last}"
    else:
        span = (
            f"offsets from {first} to the last offset of the segment from {seg.base_offset} (not known: the "
            "segment cannot be read)"
        )
    if older:
        return f"{span} stay missing: the segment from {seg.base_offset} and {older} older one(s) under it"
    return f"{span} stay missing"


def _plan_partition(
    plan: Plan,
    names: BackupNames,
    log_dir: str,
    sp: StorePartition,
    opts: RemoteOptions,
    storage: Any,
    log_start: int | None,
    interval: int = DEFAULT_INDEX_INTERVAL_BYTES,
) -> tuple[_Restored, bool]:
    """Append the partition's actions; (what is restored, whether the log dir has none of its segments)."""
    folder = os.path.join(log_dir, sp.name)
    new_folder = not os.path.isdir(folder)
    if not new_folder:
        local_id = _topic_id_of(folder)
        if local_id is not None and local_id != sp.topic_id:
            _finding(
                plan,
                "restore-topic-id",
                folder,
                f"the log dir's {sp.name} has topic id {local_id}, the store's {sp.topic_id}: another "
                "incarnation of the topic; not restored",
            )
            return _Restored(), False
    local = _local_logs(folder)
    no_local = not local
    local_start = min(local) if local else None
    segments = stored_segments(storage, sp, opts, log_dir)
    out = _Restored()
    todo: list[tuple[SegmentRef, int, int, dict[str, bytes | None], list[tuple[int, int]], Any]] = []
    # newest first: a bad object stops the restore of everything older (a gap would not load)
    newest_first = list(reversed(segments))
    reads = _read_ahead([s for s in newest_first if local_start is None or s.base_offset < local_start])
    for seg in newest_first:
        if local_start is not None and seg.base_offset >= local_start:
            local_path = local.get(seg.base_offset)
            if local_path is not None:
                try:
                    same = os.path.getsize(local_path) == _seg_size(seg) and _remote_checksum(
                        seg
                    ) == fetched_checksum(local_path)
                except (FormatError, OSError) as e:
                    _finding(
                        plan, "restore-remote-object", seg.path, f"cannot compare with {local_path}: {e}"
                    )
                    continue
                if not same:
                    _finding(
                        plan,
                        "restore-segment-differs",
                        local_path,
                        f"differs from the remote segment {seg.path} (offsets from {seg.base_offset}); the "
                        "local segment is kept",
                        "warning",
                    )
            continue
        try:
            sides, warning, (end, size, walked, opened), loaded = next(reads)()
        except (FormatError, OSError) as e:
            _finding(
                plan,
                "restore-remote-object",
                seg.path,
                f"remote segment {seg.remote.segment_id if seg.remote else ''} (offsets from "
                f"{seg.base_offset}) cannot be restored: {e}; "
                + _missing_offsets(
                    segments[0].base_offset, seg, len(newest_first) - newest_first.index(seg) - 1
                ),
            )
            # every older segment left out says why: it may be intact, but a gap would not load
            for older in newest_first[newest_first.index(seg) + 1 :]:
                _finding(
                    plan,
                    "restore-segment-left-out",
                    older.path,
                    f"remote segment {older.remote.segment_id if older.remote else ''} (offsets from "
                    f"{older.base_offset}) is not restored: the newer remote segment from {seg.base_offset} "
                    "cannot be, and a log with a gap would not load",
                    "warning",
                )
            break
        if warning is not None:
            assert seg.remote is not None and seg.remote.indexes is not None
            _finding(plan, "restore-remote-object", seg.remote.indexes, warning, "warning")
        sides = dict(sides)
        for suffix in ("index", "timeindex"):
            why = _index_problem(suffix, sides[suffix], seg.base_offset, end, size, f"{seg.path} (.{suffix})")
            if why is not None:  # never copied as it is: rebuilt from the restored .log in the same run
                sides[suffix] = None
                _finding(
                    plan,
                    "restore-remote-object",
                    seg.path,
                    f"the stored .{suffix} of remote segment {seg.remote.segment_id if seg.remote else ''} "
                    f"(offsets {seg.base_offset}-{end}) does not fit it: {why}; rebuilt from the restored "
                    "segment instead",
                    "warning",
                )
        if log_start is not None and end < log_start:
            break  # below the log start offset: deleted data (and so is everything older)
        if local_start is not None and end >= local_start:
            first_local = local[local_start]
            _finding(
                plan,
                "restore-overlap",
                seg.path,
                f"remote segment offsets {seg.base_offset}-{end} overlap the local segment {first_local} "
                f"(from {local_start}); not restored",
            )
            break
        todo.append((seg, end, size, sides, walked, (loaded, opened)))
    reads.close()  # the reads of segments past a stop cancelled
    todo.reverse()
    if not todo:
        return out, no_local
    if new_folder:
        step = make_dir(folder)
        plan.actions.append(
            Action("restore-partition-folder", folder, f"{sp.name} is not in the log dir", steps=[step])
        )
    existing = set(os.listdir(folder)) if not new_folder else set()
    # producer state at each segment's base offset, for a rebuilt .txnindex: (open transactions, the
    # restored segments to replay from there); the first restored segment starts the log: none open
    txns: tuple[dict[int, int], list[tuple[int, str]]] = ({}, [])
    first_snap = os.path.join(folder, f"{todo[0][0].base_offset:020d}.snapshot")
    if os.path.basename(first_snap) in existing:
        txns = (_ongoing(_read(first_snap), first_snap) or {}, [])
    for seg, end, size, sides, walked, held in todo:
        stem = os.path.join(folder, f"{seg.base_offset:020d}")
        log_path = stem + ".log"
        reason = f"remote segment {seg.path} (offsets {seg.base_offset}-{end}, {size:,} bytes)"
        steps = [fetch_remote(log_path, _source(seg), size)]
        hold_planned_read(steps[0], *held)  # this process's fetch reads neither object again
        changes = [Change(log_path, None, size, note=f"offsets {seg.base_offset}-{end}")]
        # the store's indexes byte for byte; the ones it lacks rebuilt (with the .txnindex, which the
        # same walk gives, when the store has none: a lost one is then found again)
        rebuild = [s for s in ("index", "timeindex") if sides[s] is None]
        if rebuild and sides["txnindex"] is None:
            rebuild.append("txnindex")
        for suffix in ("index", "timeindex", "txnindex"):
            data = sides[suffix]
            if data is None or (suffix == "txnindex" and not data):
                continue
            path = f"{stem}.{suffix}"
            steps.append(write_file(path, data, names))
            changes.append(Change(path, None, len(data)))
        for suffix in rebuild:
            path = f"{stem}.{suffix}"
            note = "rebuilt from the .log as LogSegment.recover writes it; the store has none"
            if suffix == "txnindex":
                note += " (written if the segment has an aborted transaction)"
            if os.path.lexists(path):  # an index file without its .log (LogLoader deletes those)
                steps.append(delete_with_backup(path, names))
                note += "; the file there, without its .log, goes to the backup"
            steps.append(rebuild_index(path, log_path, seg.base_offset, interval, txns[0], txns[1]))
            changes.append(Change(path, None, None, note=note))
            out.rebuilt.append(path)
        after = _ongoing(sides["snapshot"], seg.path)
        txns = (after, []) if after is not None else (txns[0], [*txns[1], (seg.base_offset, log_path)])
        snap = sides["snapshot"]
        snap_name = f"{end + 1:020d}.snapshot"
        if snap is not None and snap_name not in existing:
            path = os.path.join(folder, snap_name)
            steps.append(write_file(path, snap, names))
            changes.append(Change(path, None, len(snap)))
        plan.actions.append(Action("restore-segment", log_path, reason, steps=steps, changes=changes))
        out.segments.append((seg, end))
        out.bytes += size
        raw = sides["leader_epoch_checkpoint"]
        if raw is None:
            out.epochs.extend(walked)  # none in the store: its batches' epochs (when walked whole)
        else:
            try:
                out.epochs.extend(parse_leader_epoch_checkpoint(raw, source=seg.path).entries)
            except FormatError as e:
                _finding(
                    plan, "restore-remote-object", seg.path, f"its leader-epoch checkpoint: {e}", "warning"
                )
    meta_path = os.path.join(folder, PARTITION_METADATA_FILE)
    if not os.path.exists(meta_path):
        data = write_partition_metadata(PartitionMetadata(0, sp.topic_id))
        _file_action(plan, names, meta_path, data, "restore-partition-metadata", f"topic id {sp.topic_id}")
    _plan_epochs(plan, names, folder, out.epochs)
    return out, no_local


def _side_files(
    seg: SegmentRef, loaded: tuple[Any, bytes | None] | None = None
) -> tuple[dict[str, bytes | None], str | None]:
    """The segment's side files in the store (None: absent), and the warning to give. Aiven's ``.indexes``
    object gone: all absent (its indexes are rebuilt) and a warning naming it; any other fault raises
    FormatError."""
    wanted = ("index", "timeindex", "txnindex", "snapshot", "leader_epoch_checkpoint")
    try:
        return side_files(seg, wanted, loaded), None
    except FormatError:
        r = seg.remote
        if r is None or r.indexes is None or seg.storage.info(r.indexes) is not None:
            raise
    return dict.fromkeys(wanted), (
        f"the .indexes object of remote segment {r.segment_id} (offsets from {seg.base_offset}) is missing: "
        "its indexes are rebuilt from the segment and its leader epochs read from its batches; its producer "
        "snapshot is not restored (the broker rebuilds producer state from the log)"
    )


_Read = tuple[
    dict[str, bytes | None],
    str | None,
    tuple[int, int, list[tuple[int, int]], Any],
    tuple[Any, bytes | None] | None,
]


def _read_segment(seg: SegmentRef) -> _Read:
    """What the plan reads of a remote segment: its side files (and the warning to give), its end
    (:func:`_segment_end`), and Aiven's manifest and data key (read once here, for all three and for the
    fetch: :func:`~logdoctor.repair.steps.fetch_remote.hold_planned_read`)."""
    loaded = load_manifest(seg) if seg.remote is not None and seg.remote.layout == "aiven" else None
    sides, warning = _side_files(seg, loaded)
    return sides, warning, _segment_end(seg, sides["index"], loaded), loaded


#: remote segments read at once while planning (their side objects and the tail walk: a few requests
#: each, mostly waiting on the store)
PLAN_READERS = 4


def _read_ahead(segments: list[SegmentRef]) -> Iterator[Callable[[], _Read]]:
    """:func:`_read_segment` of each segment, in order, read on :data:`PLAN_READERS` threads ahead of the
    caller from a remote store (a local one is read in the caller's thread); each item returns the read or
    raises its error. Reads not yet taken when the caller stops are cancelled."""
    from concurrent.futures import ThreadPoolExecutor

    if len(segments) < 2 or segments[0].storage.is_local:
        for seg in segments:  # files in the page cache: no wait to overlap, threads would only cost
            yield functools.partial(_read_segment, seg)
        return
    ex = ThreadPoolExecutor(max_workers=PLAN_READERS, thread_name_prefix="restore-plan")
    try:
        futures = deque(ex.submit(_read_segment, seg) for seg in segments[: 2 * PLAN_READERS])
        rest = iter(segments[2 * PLAN_READERS :])
        while futures:
            fut = futures.popleft()
            nxt = next(rest, None)
            if nxt is not None:
                futures.append(ex.submit(_read_segment, nxt))
            yield fut.result
    finally:
        ex.shutdown(wait=True, cancel_futures=True)


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None


def _ongoing(snapshot: bytes | None, source: str) -> dict[int, int] | None:
    """The transactions open at a producer snapshot's offset (None: no readable snapshot)."""
    if snapshot is None:
        return None
    try:
        return parse_producer_snapshot(snapshot, source=source).ongoing_transactions()
    except FormatError:
        return None


def _plan_epochs(plan: Plan, names: BackupNames, folder: str, restored: list[tuple[int, int]]) -> None:
    path = os.path.join(folder, LEADER_EPOCH_CHECKPOINT_FILE)
    before: bytes | None
    try:
        with open(path, "rb") as fh:
            before = fh.read()
        local = parse_leader_epoch_checkpoint(before, source=path).entries
    except FileNotFoundError:
        before, local = None, []
    except FormatError as e:
        raise ProcedureRefused(
            f"{path} is not a checkpoint the broker reads ({e}); repair it first"
        ) from None
    starts: dict[int, int] = {}
    for epoch, start in [*restored, *local]:
        starts[epoch] = min(start, starts.get(epoch, start))
    merged = sorted(starts.items())
    for (_, a), (e2, b) in itertools.pairwise(merged):
        if b < a:
            raise ProcedureRefused(
                f"{path}: epoch {e2} starts at {b}, before the previous epoch's start {a} (the restored "
                "segments' epochs and the local ones disagree)"
            )
    after = write_leader_epoch_checkpoint(new_leader_epoch_checkpoint(merged))
    if after != before:
        _file_action(
            plan, names, path, after, "restore-leader-epochs", "the restored segments' leader epochs", before
        )


def target_log_dir(log_dir: str | os.PathLike[str]) -> str:
    """``log_dir`` absolute; BrokerRunningError for a held lock, NotALogDirError for a folder that is not a
    log dir (or empty)."""
    log_dir = os.path.abspath(os.fspath(log_dir))
    if os.path.exists(log_dir):
        log_dir = log_dir_path(log_dir)
        safety.refuse_if_locked([log_dir])
    return log_dir


def store_partitions(
    opts: RemoteOptions, topics: Collection[str] | None
) -> tuple[Any, list[StorePartition], list[tuple[str, str]]]:
    """(the store, its tiered partitions of ``topics``, the folders not named as a topic, with why)."""
    storage, root = open_store(opts)
    illegal: list[tuple[str, str]] = []
    partitions = find_store_partitions(storage, root, opts.layout, set(topics) if topics else None, illegal)
    return storage, partitions, illegal


def plan_restore(
    log_dir: str | os.PathLike[str],
    opts: RemoteOptions,
    *,
    topics: Collection[str] | None = None,
    backup_dir: str | os.PathLike[str] | None = None,
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
) -> ProcedurePlan:
    """The plan restoring the remote part of the store's tiered partitions into ``log_dir`` (see the
    module doc). Reads no segment's whole bytes except to compare one with a local segment of its base
    offset (or, for a segment the store has no offset index of, to find its end).
    ``index_interval_bytes``: the topics' index.interval.bytes, for rebuilt indexes. RemoteTierError for
    a store that cannot be used; BrokerRunningError for a held lock."""
    log_dir = target_log_dir(log_dir)
    storage, partitions, illegal = store_partitions(opts, topics)
    if not partitions and not illegal:
        raise RemoteTierError(
            f"remote storage {opts.storage}: no tiered partition"
            + (f" of {', '.join(sorted(topics))}" if topics else "")
            + " there (layouts: kafka-local, aiven)"
        )
    plan, names = new_plan([log_dir], backup_dir, log_dir)
    for folder, why in illegal:
        _finding(plan, "restore-topic-name", folder, f"{why}: the broker would never load it; not restored")
    read = {
        n: read_checkpoint(log_dir, n) if os.path.isdir(log_dir) else (None, None)
        for n in (LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT)
    }
    have = {n: (cp_[0].offsets() if cp_[0] is not None else {}) for n, cp_ in read.items()}
    put: dict[str, list[tuple[str, int, int]]] = {n: [] for n in have}
    rows: list[dict[str, Any]] = []
    rebuilt: list[str] = []
    for sp in partitions:
        tp = (sp.topic, sp.partition)
        restored, no_local = _plan_partition(
            plan,
            names,
            log_dir,
            sp,
            opts,
            storage,
            have[LOG_START_OFFSET_CHECKPOINT].get(tp),
            index_interval_bytes,
        )
        rebuilt.extend(restored.rebuilt)
        if not restored.segments:
            rows.append({"partition": sp.name, "layout": sp.layout, "segments": 0, "bytes": 0})
            continue
        first = restored.segments[0][0].base_offset
        end = restored.segments[-1][1] + 1
        rows.append(
            {
                "partition": sp.name,
                "topic_id": sp.topic_id,
                "layout": sp.layout,
                "segments": len(restored.segments),
                "rebuilt_indexes": len(restored.rebuilt),
                "bytes": restored.bytes,
                "offsets": [first, end - 1],
            }
        )
        if tp not in have[LOG_START_OFFSET_CHECKPOINT]:
            put[LOG_START_OFFSET_CHECKPOINT].append((sp.topic, sp.partition, first))
        for name in (RECOVERY_POINT_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT):
            if no_local and tp not in have[name]:  # a local log's end is beyond: its entries stay
                put[name].append((sp.topic, sp.partition, end))
    for name, cp_ in read.items():
        if put[name]:
            add_checkpoint_edit(
                plan,
                names,
                log_dir,
                name,
                cp_,
                set(),
                put[name],
                "restore-checkpoint",
                "entries of the restored partitions (entries the broker wrote are kept)",
            )
    summary = {
        "log_dir": log_dir,
        "remote_storage": opts.storage,
        "partitions": rows,
        "bytes": sum(r["bytes"] for r in rows),
        "rebuilt_indexes": rebuilt,
        "findings": len(plan.unrepaired),
    }
    notes = []
    if rebuilt:
        notes.append(
            f"{len(rebuilt)} index file(s) the store lacks are rebuilt from their restored segment as "
            f"LogSegment.recover writes them (index.interval.bytes {index_interval_bytes}): "
            + ", ".join(os.path.relpath(p, log_dir) for p in rebuilt[:6])
            + (", ..." if len(rebuilt) > 6 else "")
        )
    if not os.path.exists(log_dir):
        notes.append(f"{log_dir} does not exist: --apply creates it (an empty log dir)")
    notes.append(
        "a topic that stays tiered: the broker deletes restored segments again once they are past local "
        "retention (docs/restore.md)"
    )
    return ProcedurePlan(PROCEDURE, plan, summary, notes)


def verify_restore(plan: Plan) -> list[str]:
    """Every restored file reads back as planned (segments: their manifest checksums; others: sha256)."""
    problems: list[str] = []
    ctx = StepContext(plan.backup_dir)
    for step in plan.steps:
        if step.op == "fetch-remote":
            try:
                want = (read_manifest(ctx, step) or {}).get(".")
                if want is None:
                    problems.append(f"{step.path}: no checksum of it in {plan.backup_dir}")
                elif fetched_checksum(step.path) != want:
                    problems.append(f"{step.path} does not match the remote segment it was restored from")
            except OSError as e:
                problems.append(f"{step.path}: {e}")
        elif step.op == "write":
            try:
                if sha256_file(step.path) != step.params["sha_after"]:
                    problems.append(f"{step.path} is not as planned")
            except OSError as e:
                problems.append(f"{step.path}: {e}")
        elif step.op == "rebuild-index":
            if operation(step).state(step, ctx) != AFTER:
                problems.append(f"{step.path} is not as rebuilt")
        elif step.op == "mkdir" and not os.path.isdir(step.path):
            problems.append(f"{step.path} is missing")
    return problems
