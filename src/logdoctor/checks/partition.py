"""Check one partition folder at the requested depth (runs in a worker process)."""

from __future__ import annotations

import contextlib

from logdoctor.checks import compaction, deep, default, live, quick, transactions
from logdoctor.checks.access import missing_access
from logdoctor.checks.context import Depth, PartitionReport, PartitionTask, SegmentInfo
from logdoctor.checks.retention_due import retention_due
from logdoctor.checks.state.partition import PartitionState
from logdoctor.checks.tiered import Tiering, tiering
from logdoctor.formats.folders import FolderStat, Listed
from logdoctor.logdir.model import Partition
from logdoctor.logdir.names import DirKind, PartitionDirName
from logdoctor.logdir.offsets import log_start_offsets

#: the tiering decisions of partitions without a segment already made, by topic, config and broker evidence
#: (with both kept, so that their ids stay theirs): one per topic instead of one per partition
Tiers = dict[tuple[str, int, int], tuple[Tiering, object, object]]


def check_partition(
    task: PartitionTask, listed: Listed | None = None, tiers: Tiers | None = None
) -> PartitionReport:
    """``listed``: the folder as :func:`logdoctor.formats.folders.list_folders` listed it (None: not
    listed yet): an empty folder of a quick scan is reported from it alone (:func:`_empty_quick`), its
    tiering decided once per topic in ``tiers`` (one dict for the partitions of one scan).

    A partition of a live log dir (``task.live``) is read as of one moment, its listing; when a segment
    file listed then is gone before it is read (a running broker's retention), it is read again as of a
    new moment, at most :data:`logdoctor.checks.live.READS` times (checks.live)."""
    if not task.live:
        return _check_partition(task, listed, tiers)
    for _ in range(live.READS):
        try:
            return _check_partition(task, None, tiers)
        except FileNotFoundError:
            continue
    folder = PartitionDirName(task.topic, task.partition, DirKind(task.kind))
    st = PartitionState(task, Partition(None, task.path, folder), [])
    st.make("PARTITION_CHANGED_WHILE_READ", task.path, reads=live.READS)
    with contextlib.suppress(OSError):
        quick.check_small_files(st)  # its topic id and leader epochs: the replica is still the broker's
    return st.rep


def _check_partition(task: PartitionTask, listed: Listed | None, tiers: Tiers | None) -> PartitionReport:
    if (
        listed is not None
        and not isinstance(listed, int)
        and not listed[3]
        and task.options.depth is Depth.QUICK
    ):
        rep = _empty_quick(task, listed, {} if tiers is None else tiers)
        if rep is not None:
            return rep
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
            default.check_tails(st)  # after: the tails its time-index check read, the walks it made
    quick.check_small_files(st)
    if depth is not Depth.QUICK:
        transactions.check_hanging(st)
        transactions.check_txn_index(st, every_partition=depth is Depth.DEEP)
        compaction.check_cleaner(st)
    rep = st.rep
    rep.segments = len(st.segments)
    rep.bytes = sum(i.size for i in st.infos.values())
    rep.log_end_offset = st.log_end_offset
    if st.moment is not None and st.moment.active_log is not None:
        rep.read_as_of_bytes = st.moment.log_size
    first = st.segments[0].base_offset if st.segments else None
    rep.first_base_offset = first
    cp = task.log_start_checkpoint
    tier = tiering(task.topic, task.topic_config, task.remote_evidence, cp, first)
    rep.remote_log_enabled, rep.tiering_evidence = tier.remote_log_enabled, tier.evidence
    rep.log_start_offset, rep.local_log_start_offset = log_start_offsets(cp, first, tier.remote_log_enabled)
    rep.segment_infos = [st.infos[s.base_offset] for s in st.segments]
    due = retention_due(rep, task.options.now_ms)
    if due is not None:
        rep.findings.append(due)
    rep.findings.sort(key=lambda f: f.sort_key())
    return rep


def _empty_quick(
    task: PartitionTask, listed: tuple[int, int, int, list[str]], tiers: Tiers
) -> PartitionReport | None:
    """The quick check of a partition folder listed empty (no file, no folder, no symlink) that the broker's
    user can read, write and search: what the check above gives it (no finding, no segment, no log end
    offset, the log start offsets its checkpoint's entry; tests/checks/test_scan_empty_partitions.py),
    without a Partition, a PartitionState or a Segment (a scan of 50,000 new partitions: ~5 us each
    instead of ~17). None: the folder needs the full check (a permission it lacks is a finding)."""
    if missing_access(FolderStat(listed[0], listed[1], listed[2]), task.broker_user, "rwx"):
        return None
    cp = task.log_start_checkpoint
    rep = PartitionReport(
        topic=task.topic,
        partition=task.partition,
        log_dir=task.log_dir,
        path=task.path,
        kind=task.kind,
        log_start_offset=cp,
        local_log_start_offset=cp,
        recovery_point=task.recovery_point,
        high_watermark=task.high_watermark,
        topic_config=task.topic_config,
    )
    # without a segment the checkpoint's entry never decides (checks.tiered: it is compared with the first)
    key = (task.topic, id(task.topic_config), id(task.remote_evidence))
    got = tiers.get(key)
    if got is None:
        tier = tiering(task.topic, task.topic_config, task.remote_evidence, cp, None)
        tiers[key] = (tier, task.topic_config, task.remote_evidence)
    else:
        tier = got[0]
    rep.remote_log_enabled, rep.tiering_evidence = tier.remote_log_enabled, tier.evidence
    return rep
