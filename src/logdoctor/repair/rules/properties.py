"""The properties files of a log dir and its partitions: PARTITION_METADATA_INVALID (planned) and
META_PROPERTIES_INVALID (never changed: why is :data:`META_PROPERTIES_WHY`).

``partition.metadata`` empty or unparsable: the broker cannot read it
(K:storage/src/main/java/org/apache/kafka/storage/internals/checkpoint/PartitionMetadataReadBuffer.java:
no ``version: 0`` line; an empty file gives readLine() == null) and fails to load the log. When the
file is absent, K:core/src/main/scala/kafka/log/UnifiedLog.scala initializeTopicId reads no id and the
broker writes the file again once it learns the topic id (assignTopicId ->
K:.../checkpoint/PartitionMetadataFile.java maybeFlush: ``version: 0\\ntopic_id: <id>``). So: when the
topic id is known from another partition of the same topic in the log dirs given (or the KRaft
metadata log there), write exactly what maybeFlush writes; else, in ZooKeeper mode, remove the file (to
the backup) and let the broker write it. In KRaft mode a log without a topic id is a stray log
(K:core/src/main/scala/kafka/log/LogManager.scala isStrayKraftReplica), so removing the file is never
planned there: the id must come from the cluster (a person).

``meta.properties`` (K:metadata/src/main/java/org/apache/kafka/metadata/properties/MetaProperties.java):
what a broker does with an empty one depends on its version, and only a person can restore node.id,
cluster.id and directory.id.
"""

from __future__ import annotations

import os

from logdoctor.checks.catalog.checkpoint_files import META_PROPERTIES_EMPTY_BY_VERSION
from logdoctor.checks.findings import Finding
from logdoctor.checks.scanner import ScanReport
from logdoctor.formats.partition_metadata import (
    PARTITION_METADATA_VERSION,
    PartitionMetadata,
    write_partition_metadata,
)
from logdoctor.logdir.model import LogDir
from logdoctor.repair.plan import Action
from logdoctor.repair.rules.context import PartitionPlan, PlanContext

CODES = ("PARTITION_METADATA_INVALID",)
_NEVER_WRITTEN = (
    "meta.properties holds the broker's identity, which only a person can confirm, so repair never writes it"
)
_RESTORE = (
    "restore it from another log dir of the same broker (version, broker.id or node.id, cluster.id; a KRaft "
    "dir keeps its own directory.id)"
)
META_PROPERTIES_WHY = (
    _NEVER_WRITTEN + "; for an empty one: " + META_PROPERTIES_EMPTY_BY_VERSION
    + ". Where the broker would not rewrite it, " + _RESTORE
)
#: a missing file is not an empty one (K:metadata/.../properties/MetaPropertiesEnsemble.java Loader: a dir
#: without meta.properties is an empty dir to a ZooKeeper-mode broker, which writes one; KRaft refuses)
META_PROPERTIES_MISSING_WHY = (
    _NEVER_WRITTEN + "; it is missing: a ZooKeeper-mode broker writes a new one at startup (its broker.id "
    "from server.properties, the cluster.id from ZooKeeper), a KRaft broker refuses to start ('No "
    "meta.properties found'). For a KRaft dir, " + _RESTORE + ", or format a new, empty dir with "
    "`kafka-storage format`"
)
META_PROPERTIES_UNPARSABLE_WHY = _NEVER_WRITTEN + "; it cannot be parsed: " + _RESTORE


def meta_properties_why(f: Finding) -> str:
    """Why repair leaves this META_PROPERTIES_INVALID finding to a person: missing, empty or unparsable."""
    try:
        size: int | None = os.path.getsize(f.path)
    except OSError:
        size = None
    if size is None and not os.path.lexists(f.path):
        return META_PROPERTIES_MISSING_WHY
    if size == 0:
        return META_PROPERTIES_WHY
    return META_PROPERTIES_UNPARSABLE_WHY


def plan(ctx: PlanContext, pp: PartitionPlan) -> None:
    """Each unreadable partition.metadata of the partition."""
    for f in pp.findings:
        if f.code == "PARTITION_METADATA_INVALID":
            partition_metadata(ctx, pp, f)


def kraft_evidence(ctx: PlanContext, report: ScanReport) -> str | None:
    """Why these log dirs look like a KRaft broker's (None: nothing says KRaft)."""
    for r in report.log_dirs:
        if r.mode == "kraft":
            return f"{r.path}/meta.properties is version 1 (KRaft)"
    for d in ctx.log_dirs:
        if os.path.exists(os.path.join(d, "__cluster_metadata-0")):
            return f"{d} holds __cluster_metadata-0 (KRaft)"
        try:
            meta = LogDir(d).meta_properties
        except OSError:
            meta = None
        if meta is not None and getattr(meta, "is_kraft", False):
            return f"{d}/meta.properties is version 1 (KRaft)"
    return None


def partition_metadata(ctx: PlanContext, pp: PartitionPlan, f: Finding) -> None:
    topic = pp.part.topic
    ids = ctx.topic_ids.get(topic, {})
    action = Action("fix-partition-metadata", f.path, f"{f.code}: {f.message}", [f.code], [f.path])
    image_id = ctx.image_topic_ids.get(topic)
    if not ids and image_id is not None:  # KRaft: the id the broker's own metadata log holds
        ids = {image_id: "the cluster metadata log (__cluster_metadata-0 of these log dirs)"}
    if len(ids) == 1:
        ((topic_id, source),) = ids.items()
        data = write_partition_metadata(PartitionMetadata(PARTITION_METADATA_VERSION, topic_id, b""))
        ctx.write_step(
            action,
            f.path,
            data,
            f"topic id {topic_id} of {topic} from {source}: the bytes the broker writes "
            "(PartitionMetadataFile.maybeFlush)",
            text=True,
        )
        ctx.add(action)
        return
    if len(ids) > 1:
        ctx.unrepaired(
            f,
            f"partitions of {topic} disagree on its topic id ({', '.join(sorted(ids))}): which one is "
            "the cluster's needs a person (`kafka-topics --describe --topic " + topic + "`)",
        )
        return
    if ctx.kraft is not None:
        ctx.unrepaired(
            f,
            f"KRaft ({ctx.kraft}): without partition.metadata the broker treats the log as stray "
            "(LogManager.isStrayKraftReplica) and the topic id is in no file given; a person writes "
            f"'version: 0\\ntopic_id: <id>' with the id from `kafka-topics --describe --topic {topic}`",
        )
        return
    ctx.move_step(
        action,
        f.path,
        "ZooKeeper mode: with no partition.metadata the broker loads the log and writes the file again "
        "once the controller sends the topic id (UnifiedLog.initializeTopicId / assignTopicId -> "
        "maybeFlushMetadataFile); the unreadable file fails the log's load (PartitionMetadataReadBuffer)",
    )
    ctx.add(action)
