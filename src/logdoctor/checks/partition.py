"""Check one partition folder at the requested depth (runs in a worker process)."""

from __future__ import annotations

from logdoctor.checks import compaction, deep, default, quick, transactions
from logdoctor.checks.context import Depth, PartitionReport, PartitionTask, SegmentInfo
from logdoctor.checks.state import PartitionState
from logdoctor.checks.tiered import tiering
from logdoctor.logdir.model import Partition
from logdoctor.logdir.names import DirKind, PartitionDirName
from logdoctor.logdir.offsets import log_start_offsets


def check_partition(task: PartitionTask) -> PartitionReport:
    # one scandir and one stat per file, shared by the permission, size and mtime checks
    part = Partition(
        None,
        task.path,  # a str: no Path made unless a check needs one
        PartitionDirName(task.topic, task.partition, DirKind(task.kind)),
        stat_files=True,
    )
    try:
        segments = part.segments
    except OSError as e:
        st = PartitionState(task, part, [])
        st.denied(task.path, "rx", "the broker cannot load this partition", f"listing failed: {e.strerror}")
        return st.rep
    st = PartitionState(task, part, segments)
    for seg in st.segments:
        st.infos[seg.base_offset] = SegmentInfo(seg.base_offset, seg.size, seg.mtime_ms)
    depth = task.options.depth
    quick.check_listing(st)  # first: a .log the broker's user cannot read is never walked
    if depth is Depth.DEEP:
        deep.walk_every_log(st)
    elif depth is Depth.DEFAULT:
        default.walk_ahead(st, task.options.true_timestamps)
    quick.check_active(st)
    if depth is Depth.QUICK:
        quick.check_index_headers(st)
    else:
        default.check_all_indexes(st)
        default.check_recovery(st)
        if depth is Depth.DEEP:
            deep.check_all_logs(st)
        else:
            default.check_retention(st, walk_all=task.options.true_timestamps)
    quick.check_small_files(st)
    if depth is not Depth.QUICK:
        transactions.check_hanging(st)
        transactions.check_txn_index(st, every_partition=depth is Depth.DEEP)
        compaction.check_cleaner(st)
    rep = st.rep
    rep.segments = len(st.segments)
    rep.bytes = sum(i.size for i in st.infos.values())
    rep.log_end_offset = st.log_end_offset
    first = st.segments[0].base_offset if st.segments else None
    rep.first_base_offset = first
    cp = task.log_start_checkpoint
    tier = tiering(task.topic, task.topic_config, task.remote_evidence, cp, first)
    rep.remote_log_enabled, rep.tiering_evidence = tier.remote_log_enabled, tier.evidence
    rep.log_start_offset, rep.local_log_start_offset = log_start_offsets(cp, first, tier.remote_log_enabled)
    rep.segment_infos = [st.infos[s.base_offset] for s in st.segments]
    rep.findings.sort(key=lambda f: f.sort_key())
    return rep
