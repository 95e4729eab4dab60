"""Bring a follower that fell out of the ISR back from the leader's copy (both brokers stopped).

The manual procedure of field report 001: move the follower's partition folder aside, copy the
leader's folder (segments, indexes, producer snapshots, leader-epoch-checkpoint,
partition.metadata), and set the follower dir's replication-offset-checkpoint (high watermark),
recovery-point-offset-checkpoint and log-start-offset-checkpoint entries for the partition to the
leader's (no leader entry: the follower's entry goes too). The copy is byte for byte, so the
leader's recovery point holds for it.

A tiered partition (KIP-405, :mod:`logdoctor.checks.tiered`): the leader's folder holds only its local
segments, which is all the follower needs locally (the remote tier is shared by the replicas); its log
start offset is the leader's checkpoint entry, copied as it is and never raised to the first local
segment (K:core/.../log/remote/RemoteLogManager.java deletes remote segments below the log start).

Plan order (journaled, reversible):
1. ``copy-partition`` leader folder -> ``<follower>/<tp>.logdoctor-incoming`` (verified checksums);
2. ``move`` the follower's folder into the backup dir (kept: what it held beyond the leader's log
   end offset stays there);
3. ``rename`` the incoming copy to ``<tp>``;
4. the follower dir's checkpoints take the leader's entries.
Before step 4 the follower has the leader's data with its own older (lower) checkpoints, which the
broker treats as "recover more", never as data it lacks.

KRaft brokers: the cluster metadata (the most recent ``__cluster_metadata-0`` of the two dirs,
replayed by :mod:`logdoctor.logdir.metadata_image`) must list both brokers as replicas of the
partition with the folders' topic id (otherwise the follower's broker treats the copy as a stray at
startup: K:core/.../log/LogManager.scala ``isStrayKraftReplica``), and the leader copy's latest
leader epoch (leader-epoch-checkpoint) is compared with the partition's leader epoch in the metadata.
When the metadata names another leader, a note says whether the leader dir's broker is in the ISR or
in the ELR (KIP-966: every broker of a min.insync.replicas=2 partition stopped cleanly leaves ISR []
and its last members in the ELR, whose copies hold every committed record), or in neither.
"""

from __future__ import annotations

import os
import shlex
from typing import Any

from logdoctor.checks.tiered import REMOTE_TIER_RULE, PartitionTiering, partition_tiering
from logdoctor.formats.checkpoint import latest_epoch
from logdoctor.logdir.disk import disk_usage
from logdoctor.logdir.divergence import (
    FollowerTruncation,
    RecordsFrom,
    follower_truncation,
    records_from,
    reference_key,
    replica_log,
)
from logdoctor.logdir.metadata_image import PartitionState
from logdoctor.logdir.model import LogDir, Partition
from logdoctor.logdir.names import (
    CLEANER_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    METADATA_TOPIC,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    DirKind,
)
from logdoctor.repair import copies as cp
from logdoctor.repair.plan import Action, Change, Plan
from logdoctor.repair.procedures import kraft
from logdoctor.repair.procedures.common import (
    ProcedurePlan,
    ProcedureRefused,
    ProcedureUsageError,
    TopicPartition,
    add_checkpoint_edit,
    check_free_space,
    check_same_cluster,
    describe_meta,
    new_plan,
    open_log_dirs,
    read_checkpoint,
    tp_name,
)
from logdoctor.repair.steps.base import BackupNames
from logdoctor.repair.steps.move import delete_with_backup
from logdoctor.repair.steps.rename import rename_path
from logdoctor.repair.steps.verified_copy import copy_partition

PROCEDURE = "sync-replica"
INCOMING_SUFFIX = ".logdoctor-incoming"
SYNCED_CHECKPOINTS = (REPLICATION_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT)


def _live(d: LogDir, tp: TopicPartition, role: str) -> Partition:
    try:
        return d.partition(*tp)
    except KeyError:
        extra = (
            " (if the broker has several log dirs, give the one that holds it)" if role == "follower" else ""
        )
        raise ProcedureUsageError(
            f"the {role} dir {d.path} holds no partition folder {tp_name(tp)}{extra}"
        ) from None


def plan_sync(
    topic_partition: TopicPartition,
    leader: str | os.PathLike[str],
    follower: str | os.PathLike[str],
    *,
    backup_dir: str | os.PathLike[str] | None = None,
    allow_record_loss: bool = False,
) -> ProcedurePlan:
    """Plan replacing the follower's copy of ``topic_partition`` with the leader's. Writes nothing;
    raises ProcedureUsageError, ProcedureRefused or BrokerRunningError.

    Refused when the follower holds records the leader lacks (where its broker would truncate it when
    fetching from this leader: :func:`logdoctor.logdir.divergence.follower_truncation`), unless
    ``allow_record_loss`` (the records then stay in the backup dir with the follower's old copy)."""
    tp = topic_partition
    if tp[0] == METADATA_TOPIC:
        raise ProcedureRefused("the KRaft metadata log is replicated by the quorum, not by this procedure")
    l_dir, f_dir, l_meta, f_meta = open_log_dirs(leader, follower)
    check_same_cluster("the leader dir", l_meta, "the follower dir", f_meta)
    if l_meta.node_id == f_meta.node_id:
        raise ProcedureRefused(
            f"both dirs belong to broker {l_meta.node_id}: a replica's leader and follower are "
            "different brokers (to move a partition within a broker use move-partition)"
        )
    ld, fd = LogDir(l_dir), LogDir(f_dir)
    lp, fp = _live(ld, tp, "leader"), _live(fd, tp, "follower")
    _refuse_other_copies(fd, tp, lp, fp)
    truncation = follower_truncation(replica_log(fp), replica_log(lp))
    _refuse_syncing_the_reference(tp, lp, fp, l_dir, f_dir)
    lost = _records_the_leader_lacks(tp, fp, l_dir, f_dir, truncation, allow_record_loss)
    l_id, f_id = lp.topic_id, fp.topic_id
    notes: list[str] = []
    metadata = _check_metadata(tp, l_dir, f_dir, l_meta, f_meta, lp, fp, notes) if f_meta.is_kraft else None
    if (l_id is None) != (f_id is None):
        notes.append(
            f"only the {'leader' if l_id else 'follower'} has partition.metadata; the topic ids "
            "could not be compared"
        )

    staging = str(fp.path) + INCOMING_SUFFIX
    if os.path.lexists(staging):
        raise ProcedureRefused(f"{staging} exists: left by an earlier run; resume or roll that back first")
    size = cp.tree_size(lp.path)
    space = check_free_space(f_dir, size, f"copying {lp.name} from the leader")

    plan, names = new_plan([f_dir, l_dir], backup_dir, f_dir)
    manifest = os.path.join("manifests", f"{lp.name}.json")
    f_size = cp.tree_size(fp.path)
    _replace_copy(plan, names, tp, lp, fp, staging, manifest, size, f_size)

    entries = _sync_checkpoints(plan, names, tp, l_dir, f_dir)
    plan.number_steps()

    l_tier, f_tier = partition_tiering(l_dir, *tp), partition_tiering(f_dir, *tp)
    notes.extend(_tiered_note(tp, l_tier, f_tier, lp, entries))
    l_end, f_end = lp.log_end_offset, fp.log_end_offset
    if lost is not None:
        notes.append(
            f"--allow-record-loss: the follower's {_lost_text(lost)} stay in the backup dir with its old copy"
        )
    summary: dict[str, Any] = {
        "partition": tp_name(tp),
        "leader": l_dir,
        "follower": f_dir,
        "leader_broker": describe_meta(l_meta),
        "follower_broker": describe_meta(f_meta),
        "topic_id": {"leader": l_id, "follower": f_id},
        "leader_log": _log_summary(l_tier, lp, size),
        "follower_log": _log_summary(f_tier, fp, f_size),
        "behind_by": (l_end - f_end) if l_end is not None and f_end is not None and l_end > f_end else 0,
        "truncation": truncation.to_json(),
        "records_the_leader_lacks": lost.to_json() if lost is not None else None,
        "checkpoints": entries,
        "metadata": metadata,
        "space": space,
        "disk_usage_before": [disk_usage(f_dir).to_json(), disk_usage(l_dir).to_json()],
    }
    return ProcedurePlan(PROCEDURE, plan, summary, notes)


def _log_summary(tier: PartitionTiering, p: Partition, size: int) -> dict[str, Any]:
    return {**tier.to_json(), "log_end_offset": p.log_end_offset, "segments": len(p.segments), "bytes": size}


def _refuse_other_copies(fd: LogDir, tp: TopicPartition, lp: Partition, fp: Partition) -> None:
    """Refuse a follower moving the partition between its log dirs, or copies of two different topics."""
    for p in fd.orphan_partitions:
        if (p.topic, p.partition) == tp and p.kind is DirKind.FUTURE:
            raise ProcedureRefused(
                f"{p.path} exists: the follower was moving this partition between its log "
                "dirs; finish or cancel that first"
            )
    l_id, f_id = lp.topic_id, fp.topic_id
    if l_id is not None and f_id is not None and l_id != f_id:
        raise ProcedureRefused(
            f"topic id differs: leader {l_id} ({lp.path}/partition.metadata), follower {f_id} "
            f"({fp.path}/partition.metadata): not the same topic (deleted and re-created?)"
        )


def _replace_copy(
    plan: Plan,
    names: BackupNames,
    tp: TopicPartition,
    lp: Partition,
    fp: Partition,
    staging: str,
    manifest: str,
    size: int,
    f_size: int,
) -> None:
    """The leader's copy is copied next to the follower's (checksummed), then takes its place; the
    follower's goes to the backup dir."""
    plan.actions.append(
        Action(
            "copy-leader-partition",
            tp_name(tp),
            f"copy the leader's {lp.name} next to the follower's, checksummed",
            steps=[copy_partition(str(lp.path), staging, manifest)],
            changes=[Change(staging, None, size, note=f"from {lp.path}")],
        )
    )
    old = delete_with_backup(str(fp.path), names)
    plan.actions.append(
        Action(
            PROCEDURE,
            tp_name(tp),
            "the follower's copy goes to the backup dir; the leader's takes its place",
            steps=[old, rename_path(staging, str(fp.path))],
            changes=[
                Change(
                    str(fp.path),
                    f_size,
                    size,
                    note=f"old copy kept in {os.path.join(plan.backup_dir, old.params['backup'])}",
                )
            ],
        )
    )


def _sync_checkpoints(
    plan: Plan, names: BackupNames, tp: TopicPartition, l_dir: str, f_dir: str
) -> dict[str, dict[str, int | None]]:
    """The follower's checkpoint entries for ``tp`` become the leader's; returns both per file."""
    entries: dict[str, dict[str, int | None]] = {}
    names_to_sync = list(SYNCED_CHECKPOINTS)
    if os.path.exists(os.path.join(f_dir, CLEANER_OFFSET_CHECKPOINT)):
        names_to_sync.append(CLEANER_OFFSET_CHECKPOINT)
    for name in names_to_sync:
        l_cp, _ = read_checkpoint(l_dir, name)
        f_checkpoint = read_checkpoint(f_dir, name)
        f_cp = f_checkpoint[0]
        value = l_cp.offsets().get(tp) if l_cp is not None else None
        entries[name] = {"leader": value, "follower": f_cp.offsets().get(tp) if f_cp is not None else None}
        if f_cp is None and value is None:
            continue
        add_checkpoint_edit(
            plan,
            names,
            f_dir,
            name,
            f_checkpoint,
            {tp},
            [(tp[0], tp[1], value)] if value is not None else [],
            "checkpoint-entry",
            f"{name}: the follower's entry for {tp_name(tp)} becomes the leader's "
            f"({'removed' if value is None else value})",
        )
    return entries


def _tiered_note(
    tp: TopicPartition,
    l_tier: PartitionTiering,
    f_tier: PartitionTiering,
    lp: Partition,
    entries: dict[str, dict[str, int | None]],
) -> list[str]:
    """What a tiered partition's sync copies (the local segments only) and keeps (its log start entry)."""
    if not (l_tier.tiered or f_tier.tiered):
        return []
    who = l_tier if l_tier.tiered else f_tier
    leader_entry = entries[LOG_START_OFFSET_CHECKPOINT]["leader"]
    return [
        f"{tp_name(tp)} is tiered ({who.tiering.evidence}): the follower gets only what it needs "
        f"locally, the leader's local segments [{l_tier.local_log_start_offset}, {lp.log_end_offset}); "
        f"offsets [{l_tier.log_start_offset}, {l_tier.local_log_start_offset}) stay in the remote tier, "
        "shared by every replica and read by the follower's broker through its RemoteLogManager. The "
        "follower's log-start-offset-checkpoint entry becomes the leader's "
        f"({'none: log start 0' if leader_entry is None else leader_entry}), never raised to the first "
        f"local segment: {REMOTE_TIER_RULE}, so a raised entry would delete remote segments below it"
    ]


def _lost_text(lost: RecordsFrom) -> str:
    hw = (
        f", {lost.below_high_watermark} of them below its high watermark {lost.high_watermark} (committed)"
        if lost.high_watermark is not None
        else ""
    )
    return (
        f"{lost.records} record(s) at offsets [{lost.first_offset}, {lost.last_offset}] "
        f"({lost.bytes:,} bytes{hw})"
    )


def export_command(partition_path: str, first: int, last: int, out: str) -> str:
    """The `logdoctor export` that saves offsets [first, last] of one partition folder to Parquet, control
    records (transaction markers) included, as the scan's REPLICA_DIVERGED salvage does: exactly the
    offsets the copy removes, aborted and open transactions included (each labelled in transaction_result)."""
    return (
        f"logdoctor export {shlex.quote(partition_path)} --starting-offsets {first} "
        f"--ending-offsets {last + 1} --isolation-level read_uncommitted --out {shlex.quote(out)} "
        "--include-control"
    )


def _refuse_syncing_the_reference(
    tp: TopicPartition, lp: Partition, fp: Partition, l_dir: str, f_dir: str
) -> None:
    """Refused, whatever ``--allow-record-loss`` says, when the follower is the partition's reference
    replica of the two (:func:`logdoctor.logdir.divergence.reference_key`: a newer leader epoch, or the same
    epoch and a longer log): its broker led last, so its records are the acknowledged ones, and syncing it
    from the other copy would replace them with a copy that lags or diverged. The refusal names the sync the
    right way round, the one to run (after an unclean election the old leader holds a longer log of an
    older epoch: the new leader is never synced from it). A follower without leader epochs is left to
    :func:`_records_the_leader_lacks`."""
    f_end, l_end = fp.log_end_offset or 0, lp.log_end_offset or 0
    # the epochs each broker keeps at its next start: LogLoader drops the entries that start at or after
    # the log end (K:storage/.../log/LogLoader.java load, LeaderEpochFileCache.truncateFromEndAsyncFlush),
    # such as a leader's epoch in which it appended nothing, or one past a torn tail
    f_epoch = latest_epoch([e for e in fp.leader_epochs if e[1] < f_end])
    l_epoch = latest_epoch([e for e in lp.leader_epochs if e[1] < l_end])
    if f_epoch is None or reference_key(f_epoch, f_end) >= reference_key(l_epoch, l_end):
        # without leader epochs (message format v0/v1) a longer follower proves nothing: a broker of that
        # era truncated to the high watermark when it became a follower, whichever was longer
        return
    why = (
        f"its latest leader epoch {f_epoch} is newer than the leader copy's {l_epoch}: its broker led last"
        if f_epoch != l_epoch
        else f"both copies end in leader epoch {f_epoch} and it is longer ({f_end} against {l_end})"
    )
    swapped = shlex.join(["logdoctor", "sync-replica", tp_name(tp), "--leader", f_dir, "--follower", l_dir])
    raise ProcedureRefused(
        f"the follower {f_dir} is {tp_name(tp)}'s reference copy of the two: {why}, so its records are the "
        f"acknowledged ones and syncing it from {l_dir} would replace them. --leader and --follower are "
        f"swapped; the sync the right way round:\n  {swapped}"
    )


def _records_the_leader_lacks(
    tp: TopicPartition,
    fp: Partition,
    l_dir: str,
    f_dir: str,
    truncation: FollowerTruncation,
    allow_record_loss: bool,
) -> RecordsFrom | None:
    """The follower's records the leader lacks (None: none); refused without ``allow_record_loss``."""
    if truncation.lacks_from >= truncation.follower_log_end_offset:
        return None
    lost = records_from(fp, truncation.lacks_from, fp.high_watermark)
    if lost.records == 0 or lost.first_offset is None or lost.last_offset is None:
        return None
    if allow_record_loss:
        return lost
    how = (
        f"its broker would truncate them when it fetches from this leader (leader epochs: the two logs "
        f"agree up to offset {truncation.offset}, leader epoch {truncation.epoch})"
        if truncation.rule == "leader-epoch"
        else f"they lie beyond the leader's log end offset {truncation.leader_log_end_offset}"
    )
    out = os.path.join(
        os.path.dirname(os.path.abspath(f_dir)), f"{fp.name}.offsets-{lost.first_offset}-{lost.last_offset}"
    )
    raise ProcedureRefused(
        f"the follower {f_dir} holds {_lost_text(lost)} of {tp_name(tp)} that the leader {l_dir} lacks: "
        f"{how}; syncing would delete them. If --leader and --follower are swapped, swap them back. "
        "To keep them, save them first:\n"
        f"  {export_command(str(fp.path), lost.first_offset, lost.last_offset, out)}\n"
        "then run again with --allow-record-loss (they also stay in the backup dir with the follower's "
        "old copy)."
    )


def _check_metadata(
    tp: TopicPartition,
    l_dir: str,
    f_dir: str,
    l_meta: Any,
    f_meta: Any,
    lp: Partition,
    fp: Partition,
    notes: list[str],
) -> dict[str, Any] | None:
    """Refuse what the follower's broker would drop as a stray; compare leader epochs; add notes."""
    views = [kraft.kraft_view([d]) for d in (f_dir, l_dir)]
    found = [v for v in views if v.image is not None]
    if not found:
        notes.append(
            "KRaft brokers, but neither dir holds __cluster_metadata-0: assignments, topic ids and leader "
            "epochs could not be checked against the cluster metadata"
        )
        return None
    view = max(found, key=lambda v: v.image.end_offset)  # type: ignore[union-attr]
    im = view.image
    assert im is not None
    # the follower's copy is replaced by the leader's: its partition.metadata is what the broker will read
    st = kraft.partition_in_metadata(view, tp, f_meta.node_id, fp.topic_id or lp.topic_id)
    assert st is not None
    if lp.topic_id is not None and lp.topic_id != st.topic_id:
        raise ProcedureRefused(
            f"the leader's copy has topic id {lp.topic_id} but the cluster metadata says {tp[0]} is "
            f"{st.topic_id}: copying it would give the follower a stray"
        )
    if l_meta.node_id not in st.replicas:
        raise ProcedureRefused(
            f"the cluster metadata assigns {tp_name(tp)} to brokers {st.replicas}: the leader dir's broker "
            f"{l_meta.node_id} is not one of them (its copy is a stray)"
        )
    copy_epoch = latest_epoch(lp.leader_epochs)
    if st.leader != l_meta.node_id:
        elr = f", ELR {st.elr}" if st.elr else ""
        notes.append(
            f"the cluster metadata ({im.metadata_dir}, offset {im.end_offset}) names broker {st.leader} as "
            f"the leader of {tp_name(tp)} (leader epoch {st.leader_epoch}, ISR {st.isr}{elr}); the leader "
            f"dir's broker {l_meta.node_id} is {_membership(st, l_meta.node_id)}"
        )
    if copy_epoch is not None and copy_epoch > st.leader_epoch:
        notes.append(
            f"the leader's copy has leader epoch {copy_epoch} (leader-epoch-checkpoint) but the cluster "
            f"metadata's latest leader epoch for {tp_name(tp)} is {st.leader_epoch}: this metadata log "
            f"({im.metadata_dir}) is older than the copy; check the epoch on a running controller"
        )
    return {
        "metadata_dir": im.metadata_dir,
        "metadata_offset": im.end_offset,
        "topic_id": st.topic_id,
        "replicas": st.replicas,
        "isr": st.isr,
        "elr": st.elr,
        "leader": st.leader,
        "leader_epoch": st.leader_epoch,
        "leader_copy_epoch": copy_epoch,
        "follower_directory": st.directory(f_meta.node_id),
    }


def _membership(st: PartitionState, node_id: int) -> str:
    """Whether broker ``node_id``'s copy holds every committed record, as the partition's ISR and ELR say.

    An ELR member (KIP-966 eligible leader replicas, Kafka 4.0+, on by default for clusters made from 4.1)
    was in the ISR when the ISR shrank below min.insync.replicas (and did not shut down uncleanly); the
    high watermark does not advance while the ISR is below min.insync.replicas, so an ELR member holds
    every committed record, and the controller elects a leader from the ELR when the ISR is empty: all
    the brokers of a min.insync.replicas=2 partition stopped cleanly leave ISR [] and the ELR holding its
    last two ISR members (K:metadata/.../controller/PartitionChangeBuilder.java, maybePopulateTargetElr
    and isValidNewLeader; a real 4.4 controller does it in tests/brokers/test_broker_sync_replica.py)."""
    if node_id in st.isr:
        return "in the ISR"
    if node_id in st.elr:
        return (
            "in the ELR (eligible leader replicas, KIP-966: it was in the ISR when the ISR shrank below "
            "min.insync.replicas, and the high watermark does not advance while it is below, so its copy "
            "holds every committed record)"
        )
    return "NOT in the ISR: its copy may miss committed records"


def verify_sync(plan: Plan) -> list[str]:
    """After apply/resume: the follower's folder is byte-identical to the leader's (checksums of both,
    and of the copy as it was made), and the follower's checkpoints hold the leader's entries."""
    from logdoctor.repair.procedures.verify import check_checkpoints, manifest_of

    problems: list[str] = []
    copy = next((s for s in plan.steps if s.op == "copy-partition"), None)
    rename = next((s for s in plan.steps if s.op == "rename"), None)
    if copy is None or rename is None:
        return ["not a sync-replica plan"]
    leader_path, follower_path = copy.path, rename.params["dst"]
    manifest = manifest_of(plan, copy)
    if manifest is None:
        problems.append("the checksums of the copy are missing from the backup dir")
    else:
        problems.extend(cp.verify_tree(follower_path, manifest))
        problems.extend(cp.verify_tree(leader_path, manifest))  # the leader's folder too: byte-identical
    problems.extend(check_checkpoints(plan))
    return problems


__all__ = ["INCOMING_SUFFIX", "PROCEDURE", "SYNCED_CHECKPOINTS", "export_command", "plan_sync", "verify_sync"]
