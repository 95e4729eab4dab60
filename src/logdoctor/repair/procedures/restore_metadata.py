"""Rebuild the ``__remote_log_metadata`` partitions of a log dir from the remote tier's objects.

The topic-based RemoteLogMetadataManager keeps which remote segments exist in ``__remote_log_metadata``
(KIP-405). When it is lost (its partitions' replicas gone) or expired (its retention below a tiered topic's,
KAFKA-15632) no broker knows the objects any more. For each remote segment of the store (every partition
folder; ``--topics``) the plan writes what RemoteLogManager.copyLogSegment sent for it
(K:core/src/main/java/kafka/log/remote/RemoteLogManager.java): a ``RemoteLogSegmentMetadataRecord`` in
state COPY_SEGMENT_STARTED, then a ``RemoteLogSegmentMetadataUpdateRecord`` COPY_SEGMENT_FINISHED, as
RemoteLogMetadataSerde encodes them (:mod:`logdoctor.formats.remote_log_metadata_events`), one record per
batch, in the partition RemoteLogMetadataTopicPartitioner picks for the segment's topic id and partition
(:func:`logdoctor.logdir.remote_metadata.metadata_partition_for`; the partition count from the KRaft
metadata log in the log dir, else ``--server-properties``'s
``rlmm.config.remote.log.metadata.topic.num.partitions``, else 50).

Each event's facts come from the objects (:func:`logdoctor.logdir.remote_partitions.segment_facts`): the
segment id and start offset from the object's name, the end offset, max timestamp and size from a walk of
the segment's batches, the leader epochs from its leader-epoch checkpoint (what copyLogSegment records).
Broker id: the log dir's ``meta.properties`` node id (0 without one). Event and record timestamps: the
segment's max timestamp, so that every broker rebuilding from the same store writes the same bytes. The
records are not idempotent-producer batches (producer id -1), so no producer snapshot is needed.

Each new partition is what a broker loads: ``00000000000000000000.log``, its ``.index``/``.timeindex``
(rebuilt as LogSegment.recover does), ``leader-epoch-checkpoint`` (epoch 0 from offset 0), and the log
dir's recovery-point and replication-offset entries at the log end. ``partition.metadata`` is left to the
broker (it writes it with the topic id of the KRaft metadata when it creates the log). A metadata
partition that exists in the log dir is never replaced (a finding).
"""

from __future__ import annotations

import os
from collections.abc import Collection
from typing import Any

from logdoctor.errors import FormatError
from logdoctor.formats.checkpoint import new_leader_epoch_checkpoint, write_leader_epoch_checkpoint
from logdoctor.formats.properties import parse_meta_properties, parse_properties
from logdoctor.formats.recovery import rebuild_indexes
from logdoctor.formats.remote_log_metadata_events import (
    COPY_SEGMENT_FINISHED,
    MetadataEvent,
    metadata_batches,
    segment_metadata,
    segment_update,
)
from logdoctor.logdir.names import (
    LEADER_EPOCH_CHECKPOINT_FILE,
    META_PROPERTIES_FILE,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
)
from logdoctor.logdir.remote_metadata import (
    DEFAULT_METADATA_PARTITIONS,
    TopicIdPartition,
    metadata_partition_for,
)
from logdoctor.logdir.remote_partitions import (
    segment_facts,
    stored_segments,
)
from logdoctor.logdir.remote_store import RemoteOptions, RemoteTierError
from logdoctor.repair.plan import Action, Unrepaired
from logdoctor.repair.procedures.common import (
    ProcedurePlan,
    ProcedureUsageError,
    add_checkpoint_edit,
    file_writes,
    new_plan,
    read_checkpoint,
)
from logdoctor.repair.procedures.restore import store_partitions, target_log_dir
from logdoctor.repair.steps.mkdir import make_dir

__all__ = ["METADATA_TOPIC", "NUM_PARTITIONS_KEY", "metadata_partition_count", "plan_restore_metadata"]

METADATA_TOPIC = "__remote_log_metadata"
#: RemoteLogMetadataManager's configs carry the broker's ``rlmm.config.`` prefix (remote.log.metadata.manager.
#: impl.prefix default) before TopicBasedRemoteLogMetadataManagerConfig's own key
NUM_PARTITIONS_KEY = "rlmm.config.remote.log.metadata.topic.num.partitions"


def metadata_partition_count(
    log_dir: str, server_properties: str | os.PathLike[str] | None
) -> tuple[int, str]:
    """The metadata topic's partition count and where it came from: the KRaft metadata log in ``log_dir``
    (its ``__remote_log_metadata`` partitions), else ``server_properties`` (the key under the broker's
    RLMM prefix, checks.topic_config), else Kafka's default 50."""
    from logdoctor.checks.remote_tier import metadata_partition_count as from_image
    from logdoctor.checks.topic_config import remote_log_metadata_partitions
    from logdoctor.logdir.metadata_image import find_metadata_dir, replay

    mdir = find_metadata_dir([log_dir]) if os.path.isdir(log_dir) else None
    if mdir is not None:
        try:
            n, source = from_image(replay(mdir))
        except (OSError, FormatError):
            n, source = None, None
        if n is not None:
            return n, f"{source} ({mdir})"
    if server_properties is not None:
        path = os.fspath(server_properties)
        try:
            with open(path, "rb") as fh:
                props = parse_properties(fh.read(), source=path)
            names = props.keys()  # a PropertiesFile: its keys in file order
            found = remote_log_metadata_partitions({k: props.get(k) or "" for k in names})
        except (OSError, FormatError, ValueError) as e:
            raise ProcedureUsageError(f"--server-properties {path}: {e}") from None
        if found is not None:
            return found[0], f"{found[1]} in {path}"
    return DEFAULT_METADATA_PARTITIONS, "Kafka's default"


def _broker_id(log_dir: str) -> int:
    path = os.path.join(log_dir, META_PROPERTIES_FILE)
    try:
        with open(path, "rb") as fh:
            node = parse_meta_properties(fh.read(), source=path).node_id
    except (OSError, FormatError):
        return 0
    return int(node) if node is not None else 0


def plan_restore_metadata(
    log_dir: str | os.PathLike[str],
    opts: RemoteOptions,
    *,
    topics: Collection[str] | None = None,
    backup_dir: str | os.PathLike[str] | None = None,
    server_properties: str | os.PathLike[str] | None = None,
) -> ProcedurePlan:
    """The plan writing the ``__remote_log_metadata`` partitions of the store's segments (module doc)."""
    log_dir = target_log_dir(log_dir)
    count, count_source = metadata_partition_count(log_dir, server_properties)  # a usage error first
    storage, partitions, illegal = store_partitions(opts, topics)
    if not partitions and not illegal:
        raise RemoteTierError(f"remote storage {opts.storage}: no tiered partition there")
    plan, names = new_plan([log_dir], backup_dir, log_dir)
    for folder, why in illegal:
        plan.unrepaired.append(
            Unrepaired("restore-topic-name", folder, f"{why}: no event written for it", "error")
        )
    broker = _broker_id(log_dir)
    events: dict[int, list[MetadataEvent]] = {}
    rows: list[dict[str, Any]] = []
    for sp in partitions:
        mp = metadata_partition_for(sp.topic_id, sp.partition, count)
        tip = TopicIdPartition(sp.topic_id, sp.topic, sp.partition)
        n = 0
        for seg in stored_segments(storage, sp, opts, log_dir):
            assert seg.remote is not None
            try:
                facts = segment_facts(seg)
            except (FormatError, OSError) as e:
                plan.unrepaired.append(
                    Unrepaired(
                        "restore-remote-object",
                        seg.path,
                        f"remote segment {seg.remote.segment_id} (offsets from {seg.base_offset}): {e}; "
                        "no event written for it",
                        "error",
                    )
                )
                continue
            ts = facts.max_timestamp_ms
            started = segment_metadata(
                tip,
                seg.remote.segment_id,
                facts.start_offset,
                facts.end_offset,
                broker_id=broker,
                event_timestamp_ms=ts,
                max_timestamp_ms=facts.max_timestamp_ms,
                leader_epochs=list(facts.leader_epochs),
                size=facts.size,
            )
            finished = segment_update(
                tip,
                seg.remote.segment_id,
                COPY_SEGMENT_FINISHED,
                broker_id=broker,
                event_timestamp_ms=ts,
            )
            events.setdefault(mp, []).extend([MetadataEvent(started, ts), MetadataEvent(finished, ts)])
            n += 1
        rows.append({"partition": sp.name, "topic_id": sp.topic_id, "metadata_partition": mp, "segments": n})
    ends: list[tuple[str, int, int]] = []
    for mp in sorted(events):
        folder = os.path.join(log_dir, f"{METADATA_TOPIC}-{mp}")
        if os.path.lexists(folder):
            plan.unrepaired.append(
                Unrepaired(
                    "restore-metadata-exists",
                    folder,
                    f"exists: not replaced (move it away to rebuild it; {len(events[mp]) // 2} segments "
                    "would go in)",
                    "warning",
                )
            )
            continue
        log = metadata_batches(events[mp], base_offset=0, producer_id=-1)
        built = rebuild_indexes(log, 0, source=folder)
        files = {
            "00000000000000000000.log": log,
            "00000000000000000000.index": built.offset_index,
            "00000000000000000000.timeindex": built.time_index,
            LEADER_EPOCH_CHECKPOINT_FILE: write_leader_epoch_checkpoint(
                new_leader_epoch_checkpoint([(0, 0)])
            ),
        }
        steps, changes = file_writes(folder, files, names)
        steps.insert(0, make_dir(folder))
        plan.actions.append(
            Action(
                "restore-remote-log-metadata",
                folder,
                f"{len(events[mp])} events (COPY_SEGMENT_STARTED and _FINISHED of "
                f"{len(events[mp]) // 2} segments)",
                steps=steps,
                changes=changes,
            )
        )
        ends.append((METADATA_TOPIC, mp, len(events[mp])))
    if ends and os.path.isdir(log_dir):
        for name in (RECOVERY_POINT_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT):
            checkpoint = read_checkpoint(log_dir, name)
            have = checkpoint[0].offsets() if checkpoint[0] is not None else {}
            put = [e for e in ends if have.get((e[0], e[1])) != e[2]]  # a stale equal entry stays as is
            if not put:
                continue
            add_checkpoint_edit(
                plan,
                names,
                log_dir,
                name,
                checkpoint,
                set(),
                put,
                "restore-checkpoint",
                "the rebuilt metadata partitions' log end",
            )
    summary = {
        "log_dir": log_dir,
        "remote_storage": opts.storage,
        "metadata_partitions": count,
        "metadata_partitions_source": count_source,
        "partitions": rows,
        "bytes": sum(c.size_after or 0 for a in plan.actions for c in a.changes),
        "findings": len(plan.unrepaired),
    }
    notes = [f"{METADATA_TOPIC} has {count} partitions ({count_source})"]
    return ProcedurePlan("restore", plan, summary, notes)
