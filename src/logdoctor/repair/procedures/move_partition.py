"""Move partitions to another log dir of the same broker (a full disk), offline, journaled.

What people do by hand (field reports 000 and 004): stop the broker, ``mv`` the folder, cut the
partition's lines out of the source dir's recovery-point-offset-checkpoint and
replication-offset-checkpoint, paste them into the destination's, fix both count lines. Kafka
itself reads each dir's checkpoints only for the logs found in that dir
(K:core/src/main/scala/kafka/log/LogManager.scala loadLogs), so the entries must travel with the
folder; log-start-offset-checkpoint and cleaner-offset-checkpoint too.

Plan order (every step journaled and reversible by the repair engine):
1. destination checkpoints gain the entries (a stale entry there for the same partition is replaced);
2. each folder moves: one rename on the same file system; across file systems a verified copy
   (``copy-partition``) then the removal of the source (``remove-copied``);
3. source checkpoints lose the entries.
A crash between steps leaves at most extra checkpoint entries for a partition a dir does not hold,
which the broker ignores; ``--resume`` or ``--rollback`` finishes or undoes the move.

KRaft brokers (:mod:`logdoctor.repair.procedures.kraft` cites what the broker does): the cluster
metadata assigns each replica to a directory id (Kafka 3.7+, metadata.version 3.7-IV2). The move
leaves the metadata as it is: at its next start the broker loads the replica from the destination
and reports the destination's directory id to the controller itself (the source dir must stay in
log.dirs for that start: see the plan's note). The plan refuses what would
stop the broker or make it drop the replica (duplicate or reserved directory ids, a replica the
metadata does not assign to this broker or a topic id it does not know) and says the rest.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import Any

from logdoctor.checks.tiered import REMOTE_TIER_RULE, partition_tiering
from logdoctor.formats.checkpoint import OffsetCheckpoint
from logdoctor.logdir.disk import DiskUsage, disk_usage
from logdoctor.logdir.metadata_image import BROKER_RESOURCE
from logdoctor.logdir.model import LogDir
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
    delete_dir_name,
    describe_meta,
    new_plan,
    open_log_dirs,
    read_checkpoint,
    tp_name,
)
from logdoctor.repair.space import fits as space_fits
from logdoctor.repair.steps.base import BackupNames
from logdoctor.repair.steps.rename import rename_path
from logdoctor.repair.steps.verified_copy import copy_partition, remove_copied

PROCEDURE = "move-partition"
CORDONED_LOG_DIRS = "cordoned.log.dirs"  # K:server-common/.../config/ServerLogConfigs.java (KIP-1066)
MOVED_CHECKPOINTS = (
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    CLEANER_OFFSET_CHECKPOINT,
)


def _select(src: LogDir, partitions: Sequence[TopicPartition], topics: Sequence[str]) -> list[TopicPartition]:
    live = {(p.topic, p.partition) for p in src.partitions}
    chosen: list[TopicPartition] = []
    for tp in partitions:
        if tp not in live:
            raise ProcedureUsageError(f"{src.path} holds no partition folder {tp_name(tp)}")
        if tp not in chosen:
            chosen.append(tp)
    for topic in topics:
        mine = sorted(tp for tp in live if tp[0] == topic)
        if not mine:
            raise ProcedureUsageError(f"{src.path} holds no partition of topic {topic!r}")
        chosen.extend(tp for tp in mine if tp not in chosen)
    if not chosen:
        raise ProcedureUsageError("name at least one TOPIC-PARTITION or --topic")
    for tp in chosen:
        if tp[0] == METADATA_TOPIC:
            raise ProcedureRefused(f"{tp_name(tp)} is the KRaft metadata log: it stays in metadata.log.dir")
    return chosen


def _conflicts(dst: LogDir, chosen: list[TopicPartition]) -> None:
    wanted = set(chosen)
    for p in dst.partitions:
        if (p.topic, p.partition) in wanted:
            raise ProcedureRefused(
                f"{dst.path} already has {p.name}: the broker would refuse to start with two "
                "copies; compare them and remove one first"
            )
    for p in dst.orphan_partitions:
        if (p.topic, p.partition) in wanted and p.kind in (DirKind.FUTURE, DirKind.STRAY):
            raise ProcedureRefused(
                f"{dst.path} already has {p.name} ({p.kind.value} copy of the partition): "
                "finish or cancel that move first"
            )


def _topic_ids(src: LogDir, dst: LogDir, chosen: list[TopicPartition]) -> None:
    ids: dict[str, set[str]] = {}
    for p in dst.partitions:
        if p.topic_id is not None:
            ids.setdefault(p.topic, set()).add(p.topic_id)
    for tp in chosen:
        tid = src.partition(*tp).topic_id
        other = ids.get(tp[0], set()) - {tid} if tid is not None else set()
        if other:
            raise ProcedureRefused(
                f"{tp_name(tp)} has topic id {tid} but {dst.path} holds partitions of "
                f"{tp[0]} with topic id {', '.join(sorted(other))}: not the same topic"
            )


_Checkpoints = dict[tuple[str, str], tuple[OffsetCheckpoint | None, bytes | None]]  # (log dir, file) -> read


def _moved(u: DiskUsage, delta: int) -> DiskUsage:
    """``u`` after ``delta`` bytes were written to (or, negative, freed on) its file system."""
    if u.used_bytes is None or u.available_bytes is None:
        return u
    return dataclasses.replace(u, used_bytes=u.used_bytes + delta, available_bytes=u.available_bytes - delta)


def plan_move(
    source: str | os.PathLike[str],
    destination: str | os.PathLike[str],
    partitions: Sequence[TopicPartition] = (),
    *,
    topics: Sequence[str] = (),
    backup_dir: str | os.PathLike[str] | None = None,
    force_copy: bool = False,
    metadata_log_dir: str | os.PathLike[str] | None = None,
) -> ProcedurePlan:
    """Plan moving ``partitions`` (and every partition of ``topics``) from ``source`` to ``destination``.

    Reads names, sizes and the small files only. Raises ProcedureUsageError, ProcedureRefused or
    BrokerRunningError (a broker holds a lock), writing nothing. ``force_copy`` copies even on one
    file system (what a move across file systems does). ``metadata_log_dir``: the broker's log dir
    holding ``__cluster_metadata-0`` when it is neither ``source`` nor ``destination``.

    The steps: the destination's checkpoints gain the moved entries, the folders move (rename, or copy
    and verify then remove), the source's checkpoints lose the entries.
    """
    src_dir, dst_dir, src_meta, dst_meta = open_log_dirs(source, destination)
    if src_meta.node_id != dst_meta.node_id:
        raise ProcedureRefused(
            f"{src_dir} belongs to broker {src_meta.node_id} but {dst_dir} to broker "
            f"{dst_meta.node_id}: a move stays within one broker"
        )
    check_same_cluster(src_dir, src_meta, dst_dir, dst_meta)
    src, dst = LogDir(src_dir), LogDir(dst_dir)
    chosen = _select(src, partitions, topics)
    _conflicts(dst, chosen)
    _topic_ids(src, dst, chosen)
    view = kraft.kraft_view([src_dir, dst_dir], metadata_log_dir) if src_meta.is_kraft else None
    if view is not None:
        _refuse_cordoned(view, src_meta.node_id, dst_dir)
    assignments, kraft_notes = _kraft_assignments(view, src, chosen, src_meta.node_id, src_dir, dst_dir)
    checkpoints = {(d, n): read_checkpoint(d, n) for d in (src_dir, dst_dir) for n in MOVED_CHECKPOINTS}

    same_fs = cp.same_file_system(src_dir, dst_dir)
    copying = force_copy or not same_fs
    sizes = {tp: cp.tree_size(src.partition(*tp).path) for tp in chosen}
    need = sum(sizes.values()) if copying else 0
    space = check_free_space(
        dst_dir, need, f"copying {len(chosen)} partition(s)" if copying else "rewriting the checkpoints"
    )

    plan, names = new_plan([src_dir, dst_dir], backup_dir, src_dir)
    wanted = set(chosen)
    moved_entries = _moved_entries(checkpoints, src_dir, wanted)
    _entries(plan, names, dst_dir, checkpoints, wanted, moved_entries, True)
    per_partition: list[dict[str, Any]] = []
    tiered_notes: list[str] = []
    for tp in chosen:
        _move_folder(
            plan, src, src_dir, dst_dir, tp, copying, sizes[tp], moved_entries, per_partition, tiered_notes
        )
    _entries(plan, names, src_dir, checkpoints, wanted, moved_entries, False)
    plan.number_steps()

    before = [disk_usage(src_dir), disk_usage(dst_dir)]
    total = sum(sizes.values())
    summary: dict[str, Any] = {
        "source": src_dir,
        "destination": dst_dir,
        "broker": describe_meta(src_meta),
        "destination_broker": describe_meta(dst_meta),
        "method": "copy" if copying else "rename",
        "same_file_system": same_fs,
        "partitions": per_partition,
        "bytes": total,
        "space": space,
        "disk_usage_before": [u.to_json() for u in before],
    }
    if copying and not same_fs:
        summary["disk_usage_expected_after"] = [
            _moved(before[0], -total).to_json(),
            _moved(before[1], total).to_json(),
        ]
    notes = [
        f"the broker's log dirs: both belong to broker {src_meta.node_id} of cluster {src_meta.cluster_id}"
    ]
    if same_fs and not copying:
        notes.append("both dirs are on one file system: the move is a rename and frees no space on it")
    elif copying and not same_fs:
        notes.append(
            f"frees {total:,} bytes on {src_dir}'s file system; {dst_dir}'s has {space['free']:,} bytes free "
            f"for the {need:,} copied (plus a margin of {space['margin']:,})"
        )
    fits = space_fits(plan)
    summary["apply_space"] = fits
    notes.append(("fits: " if fits["fits"] else "DOES NOT FIT: ") + fits["text"])
    notes.extend(tiered_notes)
    if view is not None:
        summary["kraft"] = {
            **view.summary(),
            "assignments": {tp_name(tp): d for tp, d in assignments.items()},
        }
        notes.extend(kraft_notes)
    return ProcedurePlan(PROCEDURE, plan, summary, notes)


def _refuse_cordoned(view: kraft.KraftView, node_id: Any, dst_dir: str) -> None:
    """ProcedureRefused when the metadata log says the broker cordoned ``dst_dir`` (KIP-1066, Kafka 4.3+).

    The broker sends its cordoned directory ids (``cordoned.log.dirs``, static or dynamic) in its heartbeats
    and the controller records them in a BrokerRegistrationChangeRecord v3 (a registration resets them:
    RegisterBrokerRecord v4). A cordoned dir takes no new replica (LogManager.nextLogDirs) and
    AlterReplicaLogDirs into it is refused (ReplicaManager.alterReplicaLogDirs, "Log directory ... is
    cordoned"); an offline move there would do what the broker refuses."""
    im, dst_id = view.image, view.directory_id(dst_dir)
    reg = im.brokers.get(node_id) if im is not None and isinstance(node_id, int) else None
    if im is None or reg is None or dst_id is None or dst_id not in (reg.cordoned_log_dirs or ()):
        return
    configs: list[str] = []
    for name, whose in ((str(node_id), f"broker {node_id}"), ("", "the cluster default")):
        found = im.configs.get((BROKER_RESOURCE, name), {}).get(CORDONED_LOG_DIRS)
        if found is not None:
            configs.append(
                f"{whose}'s dynamic config {CORDONED_LOG_DIRS}={found[0]} (ConfigRecord at offset {found[1]})"
            )
    if configs:
        source = "; set by " + " and ".join(configs)
    else:
        source = f"; no ConfigRecord sets {CORDONED_LOG_DIRS}: the broker's server.properties does"
    raise ProcedureRefused(
        f"{dst_dir} (directory {dst_id}) is cordoned: the cluster metadata records it for broker {node_id} "
        f"in {reg.cordoned_by or 'its registration'}{source} (KIP-1066). The broker places no new replica in "
        "a cordoned dir and refuses to move one there (AlterReplicaLogDirs: 'Log directory ... is "
        "cordoned'); moved there offline anyway, the broker loads it from there at its next start and "
        "reports that directory to the controller, which records it (Kafka 4.4.0): the replica stays in the "
        "dir the operator cordoned. Choose another dir, or uncordon this one first while the broker runs "
        f"(`kafka-configs.sh --bootstrap-server HOST:PORT --entity-type brokers --entity-name {node_id} "
        "--alter --delete-config cordoned.log.dirs`, or drop it from server.properties and restart)"
    )


def _kraft_assignments(
    view: kraft.KraftView | None,
    src: LogDir,
    chosen: Sequence[TopicPartition],
    node_id: Any,
    src_dir: str,
    dst_dir: str,
) -> tuple[dict[TopicPartition, str | None], list[str]]:
    """KRaft: the directory each chosen partition is assigned to in the metadata log, and the advice."""
    assignments: dict[TopicPartition, str | None] = {}
    if view is None:
        return assignments, []
    kraft.check_directory_ids(view)
    for tp in chosen:
        st = kraft.partition_in_metadata(view, tp, node_id, src.partition(*tp).topic_id)
        assignments[tp] = st.directory(node_id) if st is not None else None
    return assignments, _kraft_advice(view, src_dir, dst_dir, assignments)


def _moved_entries(
    checkpoints: _Checkpoints, src_dir: str, wanted: set[TopicPartition]
) -> dict[str, list[tuple[str, int, int]]]:
    """Per checkpoint file, the source's entries of the moved partitions."""
    parsed = {name: checkpoints[(src_dir, name)][0] for name in MOVED_CHECKPOINTS}
    return {
        n: [(t, p, o) for t, p, o in (c.entries if c else []) if (t, p) in wanted] for n, c in parsed.items()
    }


def _entries(
    plan: Plan,
    names: BackupNames,
    log_dir: str,
    checkpoints: _Checkpoints,
    wanted: set[TopicPartition],
    moved_entries: dict[str, list[tuple[str, int, int]]],
    into: bool,
) -> None:
    """Step 1 (``into``): the destination's checkpoints gain the entries (a stale one there for a moved
    partition replaced); step 3: the source's checkpoints lose them."""
    for name in MOVED_CHECKPOINTS:
        parsed, _ = checkpoints[(log_dir, name)]
        stale = into and any((t, p) in wanted for t, p, _ in (parsed.entries if parsed else []))
        if not moved_entries[name] and not stale:
            continue
        add_checkpoint_edit(
            plan,
            names,
            log_dir,
            name,
            checkpoints[(log_dir, name)],
            wanted,
            moved_entries[name] if into else [],
            "checkpoint-entries-in" if into else "checkpoint-entries-out",
            f"{name} of the destination takes the moved partitions' entries"
            if into
            else f"{name} of the source no longer lists the moved partitions",
        )


def _move_folder(
    plan: Plan,
    src: LogDir,
    src_dir: str,
    dst_dir: str,
    tp: TopicPartition,
    copying: bool,
    size: int,
    moved_entries: dict[str, list[tuple[str, int, int]]],
    per_partition: list[dict[str, Any]],
    tiered_notes: list[str],
) -> None:
    """Step 2: one partition's folder (rename, or copy + verify + remove), its summary and tiering note."""
    part = src.partition(*tp)
    s_path, d_path = str(part.path), os.path.join(dst_dir, part.name)
    if copying:
        manifest = os.path.join("manifests", f"{part.name}.json")
        steps = [
            copy_partition(s_path, d_path, manifest),
            remove_copied(s_path, d_path, manifest, os.path.join(src_dir, delete_dir_name(tp))),
        ]
        how = "copy to the other file system, verify checksums, then remove the source"
    else:
        step = rename_path(s_path, d_path)
        step.params["identity"] = cp.identity(s_path)  # final check: the very same files arrived
        steps = [step]
        how = "rename (same file system)"
    action = Action(
        PROCEDURE,
        tp_name(tp),
        f"move {part.name} from {src_dir} to {dst_dir}: {how}",
        steps=steps,
        changes=[
            Change(d_path, None, size, note=f"folder of {len(part.segments)} segment(s)"),
            Change(s_path, size, None, note="moved"),
        ],
    )
    plan.actions.append(action)
    tier = partition_tiering(src_dir, *tp)
    if tier.tiered:
        entry = next((o for t, p, o in moved_entries[LOG_START_OFFSET_CHECKPOINT] if (t, p) == tp), None)
        tiered_notes.append(
            f"{tp_name(tp)} is tiered ({tier.tiering.evidence}): log start "
            f"{tier.log_start_offset}, local log start {tier.local_log_start_offset}; its "
            f"log-start-offset-checkpoint entry ({'none' if entry is None else entry}) moves with it "
            f"as it is, so the broker keeps every remote segment ({REMOTE_TIER_RULE})"
        )
    per_partition.append(
        {
            "partition": tp_name(tp),
            "bytes": size,
            "segments": len(part.segments),
            **tier.to_json(),
            "log_end_offset": part.log_end_offset,
            "topic_id": part.topic_id,
            "checkpoints": {
                n: next((o for t, p, o in moved_entries[n] if (t, p) == tp), None) for n in MOVED_CHECKPOINTS
            },
        }
    )


def _kraft_advice(
    view: kraft.KraftView, src_dir: str, dst_dir: str, assignments: dict[TopicPartition, str | None]
) -> list[str]:
    """What the broker does at its next start with the moved replicas (see procedures.kraft)."""
    im = view.image
    dst_id = view.directory_id(dst_dir)
    src_id = view.directory_id(src_dir)
    if im is None:
        return [
            "KRaft broker, but neither dir holds __cluster_metadata-0: the directory assignments could not "
            "be read (give --metadata-log-dir). From Kafka 3.7 the broker reports the new directory of "
            "each moved replica to the controller at its next start"
        ]
    notes = []
    if not im.directory_assignment:
        notes.append(
            f"the cluster's metadata.version is {im.metadata_version_name}: replicas are not assigned to "
            "directories (before 3.7-IV2), and a KRaft broker with several log dirs refuses this "
            "metadata.version, so the broker must run with one log dir: after the move, list only "
            f"{dst_dir} in log.dirs (with the metadata log's dir, if that is another one)"
        )
        return notes
    if dst_id is None:
        notes.append(
            f"{dst_dir} has no directory.id yet: the broker writes a new one into its meta.properties at "
            "startup (KafkaRaftServer.initializeLogDirs) and reports the moved replicas under it"
        )
    to_report = sorted(tp_name(tp) for tp, d in assignments.items() if d != dst_id or dst_id is None)
    back = sorted(tp_name(tp) for tp, d in assignments.items() if dst_id is not None and d == dst_id)
    if back:
        notes.append(
            f"the cluster metadata already assigns {', '.join(back)} to {dst_dir} ({dst_id}): the move puts "
            "it where the metadata says"
        )
    if to_report:
        now = sorted(
            {kraft.describe_assignment(assignments[p], view) for p in assignments if tp_name(p) in to_report}
        )
        notes.append(
            f"the cluster metadata (offset {im.end_offset}) assigns {', '.join(to_report)} to directory "
            f"{' / '.join(now)}; it is not changed here. At its next start the broker loads each moved "
            f"replica from {dst_dir} (LogManager.loadLogs ignores assignments) and reports directory "
            f"{dst_id or '(its new id)'} to the controller (ReplicaManager.maybeUpdateTopicAssignment -> "
            "AssignmentsManager -> AssignReplicasToDirs), which records it: no data moves back"
        )
        notes.append(
            f"start the broker with {dst_dir} in log.dirs, and keep {src_dir} in log.dirs for the broker's "
            "first start after the move, online, until the controller has recorded the new directory (an "
            "offline `logdoctor scan` of the stopped broker then finds no REPLICA_MISPLACED): started "
            f"without it, the broker registers without directory {src_id or '(its id)'}, and the "
            "controller elects no leader for a replica assigned to a directory the broker does not have "
            "online: unfenced before its report of the new directory is recorded, the broker is not "
            "elected for the moved partitions, nor when the report arrives (ReplicationControlManager "
            "handleAssignReplicasToDirs judges the leader by the old assignment, LeaderAcceptor), and they "
            "stay offline until the broker's next restart. A broker with an offline log dir does not even "
            "open a replica whose assigned dir is offline (Partition.createLogInAssignedDirectoryId)"
        )
    if src_id is None:
        notes.append(f"{src_dir} has no directory.id: the broker writes one at startup")
    return notes


def verify_move(plan: Plan) -> list[str]:
    """After apply/resume: every moved folder is at the destination with the source's bytes, gone from
    the source, and every checkpoint the plan wrote is well formed. Returns the problems."""
    from logdoctor.repair.procedures.verify import check_checkpoints, manifest_of

    problems: list[str] = []
    for action in plan.actions:
        if action.kind != PROCEDURE:
            continue
        first = action.steps[0]
        src = first.path
        dst = first.params["dst"] if first.op != "remove-copied" else first.params["copy"]
        if os.path.lexists(src):
            problems.append(f"{src} still exists")
        if first.op == "rename":
            if not os.path.isdir(dst):
                problems.append(f"{dst} is missing")
            elif cp.identity(dst) != first.params.get("identity"):
                problems.append(f"{dst} does not hold the very files that were renamed")
        else:
            manifest = manifest_of(plan, first)
            if manifest is None:
                problems.append(f"the checksums of the copy {dst} are missing from the backup dir")
            else:
                problems.extend(cp.verify_tree(dst, manifest))
    problems.extend(check_checkpoints(plan))
    return problems


__all__ = ["MOVED_CHECKPOINTS", "PROCEDURE", "plan_move", "verify_move"]
