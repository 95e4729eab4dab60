"""--quick: what KIP-263 proposed a broker check at startup, no more.

Names, sizes and permissions of every file (one scandir + stat each), leftovers, the headers of
every index file (size, first and last slot: the inputs of the sanity checks), the active segment
of each partition in full (its indexes and its .log, with CRCs), and the small per-partition files.
No inactive .log is ever opened at this depth.
"""

from __future__ import annotations

import os

from logdoctor.checks import live
from logdoctor.checks.context import Depth
from logdoctor.checks.default import check_offsets, check_segment_indexes, mark_recovered, report_damage
from logdoctor.checks.indexes import tail_check
from logdoctor.checks.irregular import irregular_findings
from logdoctor.checks.state.partition import PartitionState
from logdoctor.checks.timestamps import (
    broker_largest_timestamp,
    check_retention_risk,
    report_risk,
    scan_risk_moment,
    topic_config,
)
from logdoctor.errors import FormatError
from logdoctor.formats.checkpoint import scan_leader_epoch_checkpoint
from logdoctor.formats.index import IndexKind
from logdoctor.formats.partition_metadata import parse_partition_metadata
from logdoctor.formats.producer_snapshot import parse_producer_snapshot
from logdoctor.logdir.names import LEADER_EPOCH_CHECKPOINT_FILE, PARTITION_METADATA_FILE


def check_listing(st: PartitionState) -> None:
    """Permissions of the folder and every file, leftovers, missing indexes; symlinks, FIFOs and
    folders among the files (never read)."""
    try:
        dst = os.stat(st.task.path)
    except OSError:
        dst = None
    if dst is not None:
        st.check_access(st.task.path, dst, "rwx", "the broker cannot load this partition")
    for e in st.partition.entries:
        st.check_access(
            e.path,
            e.stat(),
            "rw",
            "the broker cannot load this partition (LogLoader: 'Could not read "
            "file'; the log dir goes offline)",
        )
    for f in irregular_findings(st.partition.irregular, st.task.log_dir, "partition folder"):
        st.add(f)
    for orphan in st.partition.orphan_files:
        path = str(orphan.path)
        if st.task.live and orphan.kind in live.TRANSIENT_ORPHANS:
            continue  # a running broker's work in progress (checks.live)
        if orphan.kind == "unknown-file":
            st.make("UNKNOWN_FILE", path, where="partition folder")
            continue
        case = orphan.kind
        if orphan.kind == "deleted" and path.endswith(".checkpoint.deleted"):
            case = "deleted-snapshot"  # K:raft/.../snapshot/Snapshots.java, KafkaMetadataLog.recoverSnapshots
        st.make("ORPHAN_FILE", path, case=case, details={"kind": orphan.kind})
    for seg in st.segments:
        if st.task.live and st.is_active(seg):
            # a running broker opens a new segment's indexes lazily, at its first append
            # (K:storage/.../log/LazyIndex.java; LogSegment.append): not there yet is its normal state
            continue
        missing = [
            s for s, f in ((".index", seg.index_file), (".timeindex", seg.timeindex_file)) if f is None
        ]
        if missing:
            if seg.index_file is None:
                effect = (
                    "at startup the broker recovers the segment, reading all of it to rebuild its indexes "
                    "(LogLoader: 'Could not find offset index file ... recovering segment and rebuilding "
                    "index "
                    "files')"
                )
            else:
                # LogLoader: timeIndexFileNewlyCreated -> an empty time index, no recovery
                effect = (
                    "the broker creates an empty one without recovering the segment, so until the segment is "
                    "recovered time lookups scan the log"
                )
                if not st.is_active(seg):
                    effect += " and time retention uses the .log mtime as its largest timestamp"
            st.make(
                "INDEX_MISSING",
                seg.log_file,
                offset=seg.base_offset,
                missing=" and ".join(missing),
                effect=effect,
                details={"missing": missing},
            )


def check_index_headers(st: PartitionState) -> None:
    """Size and first/last slot of every inactive segment's indexes; a full read only when suspicious."""
    mark_recovered(st)
    for i, seg in enumerate(st.segments[:-1]):
        flagged = False
        for kind, path, size in (
            (IndexKind.OFFSET, seg.index_file, seg.index_size),
            (IndexKind.TIME, seg.timeindex_file, seg.timeindex_size),
        ):
            if path is not None and size is not None and tail_check(st, seg, kind, str(path), size):
                flagged = True
        if flagged:
            check_segment_indexes(st, i)
        info = st.infos[seg.base_offset]
        cause = broker_largest_timestamp(st, seg, info)
        if info.recovered:
            continue  # recovery rebuilds its time index at the next start
        cfg = topic_config(st)
        if cause is not None and not cfg.time_retention:
            continue  # compact-only or retention.ms=-1: time retention deletes nothing
        if cause is not None:
            # --quick never reads an inactive .log: report the risk with the true timestamp unknown, when
            # time retention deletes the segment by the broker's timestamps (scan's and `retention`'s rule)
            report_risk(st, seg, info, cause, scan_risk_moment(st, seg, true_known=False), None, None)
        else:
            check_retention_risk(st, seg, info, None)


def check_active(st: PartitionState) -> None:
    """The active segment in full: indexes, and the .log with CRCs (what recovery of it reads)."""
    if not st.segments:
        st.log_end_offset = None
        return
    i = len(st.segments) - 1
    seg = st.segments[i]
    check_segment_indexes(st, i)
    # --deep walks it again with batch positions for the index cross-check: take them now
    w = st.walk(seg, verify_crc=True, with_positions=st.options.depth is Depth.DEEP)
    if w is None:
        return
    check_offsets(st, seg, w)
    if not w.clean:
        report_damage(st, i, w)
    st.log_end_offset = seg.base_offset if w.valid_last_offset is None else w.valid_last_offset + 1


def check_small_files(st: PartitionState) -> None:
    """partition.metadata, leader-epoch-checkpoint and producer snapshots against the log end offset."""
    folder = st.task.path
    names = {e.name for e in st.partition.entries}
    leo = st.log_end_offset
    if PARTITION_METADATA_FILE in names:
        path = os.path.join(folder, PARTITION_METADATA_FILE)
        data = st.read_small(path, "the broker cannot read the topic id")
        if data is not None:
            try:
                st.rep.topic_id = parse_partition_metadata(data, source=path).topic_id
            except FormatError as e:
                st.make(
                    "PARTITION_METADATA_INVALID",
                    path,
                    position=e.position,
                    error=e,
                )
    if LEADER_EPOCH_CHECKPOINT_FILE in names:
        path = os.path.join(folder, LEADER_EPOCH_CHECKPOINT_FILE)
        data = st.read_small(path, "the broker cannot read the leader epoch cache")
        if data is not None:
            scan = None
            try:
                scan = scan_leader_epoch_checkpoint(data, source=path)
                fails = "reading the leader epoch cache fails and the log dir goes offline"
                problems = [(p.position, p.message, fails) for p in scan.problems[:1]]
            except FormatError as e:
                problems = [(e.position, str(e), "the log dir goes offline (KafkaStorageException)")]
            for position, problem, consequence in problems:
                st.make(
                    "CHECKPOINT_CORRUPT",
                    path,
                    position=position,
                    problem=problem,
                    consequence=consequence,
                    logdir=st.task.log_dir,
                    delete_effect="the broker rebuilds the epoch cache from the log's batches",
                )
            if scan is not None:
                st.rep.leader_epochs = list(scan.checkpoint.entries)
                if leo is not None:
                    for epoch, start in scan.checkpoint.entries:
                        if start > leo:
                            st.make(
                                "LEADER_EPOCH_BEYOND_LOG_END",
                                path,
                                offset=start,
                                epoch=epoch,
                                log_end_offset=leo,
                            )
                            break
    for off, spath in st.partition.producer_snapshot_files:
        data = st.read_small(spath, "the broker cannot load producer state")
        if data is None:
            continue
        try:
            parse_producer_snapshot(data, source=spath)
        except FormatError as e:
            st.make(
                "PRODUCER_SNAPSHOT_CORRUPT",
                spath,
                position=e.position,
                offset=off,
                error=e,
            )
    if leo is not None:
        for off, spath in st.partition.producer_snapshot_files:
            if off > leo:
                st.make(
                    "PRODUCER_SNAPSHOT_AHEAD",
                    str(spath),
                    offset=off,
                    log_end_offset=leo,
                )
