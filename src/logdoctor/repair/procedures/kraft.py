"""What the operator procedures must know about a KRaft broker: directory ids and assignments.

What a Kafka 3.7+ broker does at startup with a replica found in another log dir than the one the
cluster metadata assigns it to (K: = path in apache/kafka, trunk of October 2024; the same code
is in the 3.7.0 and 3.8.0 tags):

1. K:core/.../server/KafkaRaftServer.scala ``initializeLogDirs``: every log dir's meta.properties is
   verified (K:metadata/.../properties/MetaPropertiesEnsemble.java ``verify``): a duplicate or
   reserved ``directory.id``, another cluster.id or node.id stops the broker; a missing
   ``directory.id`` is generated and written back.
2. K:core/.../log/LogManager.scala ``loadLogs`` loads every partition folder of every online log
   dir where it is; assignments play no part (only the stray test, ``isStrayKraftReplica``: a
   replica the metadata does not assign to this broker, or whose topic id it does not know, is
   renamed ``-stray``; two live copies of a partition stop the broker).
3. K:core/.../server/ReplicaManager.scala ``applyDelta`` (first metadata image): each local replica
   becomes leader or follower with its assigned directory (``Partition.makeLeader/makeFollower``
   -> K:core/.../cluster/Partition.scala ``createLogInAssignedDirectoryId``): when the assigned dir
   is online, or the broker has no offline dir, the existing log is used wherever it is
   (``LogManager.getOrCreateLog`` returns it); when the assigned dir is not an online dir of this
   broker AND some log dir of the broker is offline, the replica is not opened ("Skipping creation
   of log because there are potentially offline log directories").
4. ``ReplicaManager.maybeUpdateTopicAssignment``: for every replica whose actual dir differs from
   the assigned one the broker sends the actual directory id to the controller
   (K:server/.../AssignmentsManager.java, AssignReplicasToDirs), which writes a
   PartitionChangeRecord with it (K:metadata/.../controller/ReplicationControlManager.java
   ``handleAssignReplicasToDirs``). The data is never moved back.
5. The controller elects a leader only in a directory the broker's registration has online
   (ReplicationControlManager ``LeaderAcceptor``), and ``handleAssignReplicasToDirs`` judges it by
   the assignment before the change. A broker started without the dir its replicas were assigned to
   (the source of a move removed from log.dirs) is elected for them at its unfencing
   (``handleBrokerUnfenced``) only if its report of the new dir was recorded before; otherwise the new
   dir is recorded but no leader elected, until the broker's next restart. A race: a real 4.4.0 broker
   showed both outcomes (tests/brokers/test_broker_move_partition.py).

So a move between two online log dirs of a stopped broker is safe: the broker adopts the new dir,
provided the source dir stays in log.dirs for the first start after the move.
The procedures refuse what would stop the broker or make it drop the replica (duplicate or reserved
directory ids, a replica the metadata no longer assigns to the broker, a topic id the metadata does
not know) and print what the broker will do.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from logdoctor.logdir.identity import (
    LOST,
    MIGRATING,
    UNASSIGNED,
    DirIdentity,
    describe_directory_id,
    is_reserved_directory_id,
    read_identity,
)
from logdoctor.logdir.metadata_image import MetadataImage, PartitionState, find_metadata_dir, replay
from logdoctor.repair.procedures.common import ProcedureRefused, TopicPartition, tp_name

__all__ = ["KraftView", "check_directory_ids", "kraft_view"]


@dataclass
class KraftView:
    """The metadata image (when a ``__cluster_metadata-0`` was found) and the dirs' identities."""

    image: MetadataImage | None
    identities: dict[str, DirIdentity] = field(default_factory=dict)

    def directory_id(self, log_dir: str) -> str | None:
        ident = self.identities.get(log_dir)
        return ident.directory_id if ident is not None else None

    def summary(self) -> dict[str, Any]:
        im = self.image
        return {
            "metadata_dir": im.metadata_dir if im is not None else None,
            "metadata_offset": im.end_offset if im is not None else None,
            "metadata_version": im.metadata_version if im is not None else None,
            "metadata_version_name": im.metadata_version_name if im is not None else None,
            "directory_assignment": im.directory_assignment if im is not None else None,
            "directory_ids": {d: i.directory_id for d, i in self.identities.items()},
        }


def kraft_view(log_dirs: list[str], metadata_log_dir: str | os.PathLike[str] | None = None) -> KraftView:
    """Identities of ``log_dirs`` and the replay of the broker's metadata log: ``metadata_log_dir``
    (a log dir holding ``__cluster_metadata-0``, or that folder itself) or the first of
    ``log_dirs`` that holds one."""
    identities = {d: read_identity(d) for d in log_dirs}
    mdir: str | None = None
    if metadata_log_dir is not None:
        m = os.path.abspath(os.fspath(metadata_log_dir))
        mdir = m if os.path.basename(m) == "__cluster_metadata-0" else find_metadata_dir([m])
        if mdir is None:
            raise ProcedureRefused(f"{m} holds no __cluster_metadata-0 (the broker's metadata.log.dir)")
    else:
        mdir = find_metadata_dir(log_dirs)
    return KraftView(replay(mdir) if mdir is not None else None, identities)


def check_directory_ids(view: KraftView) -> None:
    """ProcedureRefused when the broker would not start with these dirs (MetaPropertiesEnsemble.verify)."""
    seen: dict[str, str] = {}
    for d, ident in view.identities.items():
        did = ident.directory_id
        if did is None:
            continue
        if is_reserved_directory_id(did):
            raise ProcedureRefused(
                f"{ident.meta_path} has the reserved directory.id {did}: the broker refuses to start with "
                "this dir ('Invalid resrved directory ID'); run `logdoctor scan` on the broker's log dirs"
            )
        if did in seen:
            raise ProcedureRefused(
                f"{seen[did]} and {d} have the same directory.id {did}: the broker refuses to start "
                "('Duplicate directory ID ... found'); give each dir its own id first (`logdoctor scan` "
                "says which one the cluster metadata knows)"
            )
        seen[did] = d


def partition_in_metadata(
    view: KraftView, tp: TopicPartition, node_id: int | None, folder_topic_id: str | None
) -> PartitionState | None:
    """The partition's state; ProcedureRefused when the broker would treat its folder as a stray."""
    im = view.image
    if im is None or node_id is None:
        return None
    tid = im.topic_id(tp[0])
    name = tp_name(tp)
    if tid is None:
        raise ProcedureRefused(
            f"the cluster metadata ({im.metadata_dir}, offset {im.end_offset}) has no topic {tp[0]}: at "
            f"startup the broker treats {name} as a stray whichever log dir holds it (a 3.7+ broker "
            "renames it -stray, older ones delete it)"
        )
    if folder_topic_id is not None and folder_topic_id != tid:
        raise ProcedureRefused(
            f"{name} has topic id {folder_topic_id} but the cluster metadata says {tp[0]} is {tid}: the "
            "folder belongs to a deleted incarnation of the topic and the broker treats it as a stray"
        )
    if folder_topic_id is None:
        raise ProcedureRefused(
            f"{name} has no partition.metadata (no topic id): at startup a Kafka 3.8+ broker treats such "
            "a log as a stray (LogManager.isStrayKraftReplica) whichever log dir holds it; restore "
            f"partition.metadata (version: 0, topic_id: {tid}) first"
        )
    st = im.partition(*tp)
    if st is None or node_id not in st.replicas:
        owners = st.replicas if st is not None else []
        raise ProcedureRefused(
            f"the cluster metadata assigns {name} to brokers {owners}, not to broker {node_id}: at "
            "startup the broker treats it as a stray whichever log dir holds it"
        )
    return st


def describe_assignment(directory_id: str | None, view: KraftView) -> str:
    if directory_id is None:
        return "no directory"
    for d, ident in view.identities.items():
        if ident.directory_id == directory_id:
            return f"{directory_id} ({d})"
    if directory_id in (MIGRATING, UNASSIGNED, LOST):
        return describe_directory_id(directory_id)
    return f"{directory_id} (a dir not given here)"
