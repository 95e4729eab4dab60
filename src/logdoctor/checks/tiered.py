"""Is a partition tiered (KIP-405 remote storage on), and what says so.

The broker's rule (K:core/src/main/scala/kafka/log/UnifiedLog.scala isRemoteLogEnabled): remote storage
applies to a log when the broker has ``remote.log.storage.system.enable=true``, the topic has
``remote.storage.enable=true``, the topic is not compacted, and it is not an internal topic
(``__consumer_offsets``, ``__transaction_state``, ``__share_group_state``: Topic.isInternal),
``__remote_log_metadata`` or ``__cluster_metadata``.

Offline, those configs are often not all on disk (a ZooKeeper-era cluster keeps topic configs in
ZooKeeper; ``server.properties`` is only known with ``--server-properties``), so the evidence is weighed
in this order, each answer naming what decided it:

1. what the broker's rule excludes whatever the configs say: an internal topic, a compacted topic;
2. ``remote.log.storage.system.enable=false`` given explicitly (``--server-properties``): not tiered;
3. ``remote.storage.enable`` set for the topic (a KRaft ``ConfigRecord`` or ``--topic-config``): as set;
4. the replay of ``__remote_log_metadata`` (:mod:`logdoctor.logdir.remote_metadata`) listing
   COPY_SEGMENT_FINISHED segments of the partition (not deleted remotely): only RemoteLogManager's copy
   task of a remote log uploads a segment (K:core/src/main/java/kafka/log/remote/RemoteLogManager.java
   RLMCopyTask), so the partition is tiered whatever its checkpoint entry says;
5. otherwise the log dir itself: a broker with remote storage on leaves ``__remote_log_metadata-N``
   partitions (TopicBasedRemoteLogMetadataManager) or a ``remote-log-index-cache/`` folder
   (RemoteIndexCache) in its log dirs, and writes a log-start-offset-checkpoint entry for every remote
   log, where it keeps the log start below the first local segment
   (K:core/src/main/scala/kafka/log/LogManager.scala checkpointLogStartOffsetsInDir writes an entry
   when ``log.remoteLogEnabled() || log.logStartOffset > first segment's base offset``: without remote
   storage an entry is never below the first segment). A partition whose entry is below its first
   local segment in a broker showing remote storage on disk (or with the system flag given true) is
   tiered.

A partition whose entry is below its first local segment with no other evidence is not called tiered,
but nothing ever raises that entry either (:mod:`logdoctor.repair.planner`): without remote storage the
broker takes ``max(entry, first segment)`` itself, so leaving the entry is always safe.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from logdoctor.checks.topic_config import KAFKA_DEFAULT, TopicConfig
from logdoctor.logdir.names import REMOTE_LOG_INDEX_CACHE_DIR, parse_partition_dir

if TYPE_CHECKING:  # the replay is imported where a log dir has remote log metadata (issue 35)
    from logdoctor.logdir.model import CheckpointRead
    from logdoctor.logdir.remote_metadata import RemoteLogMetadata

__all__ = [
    "REMOTE_LOG_METADATA_TOPIC",
    "REMOTE_TIER_RULE",
    "BrokerRemoteEvidence",
    "PartitionTiering",
    "Tiering",
    "broker_remote_evidence",
    "could_be_tiered",
    "partition_tiering",
    "remote_metadata_evidence",
    "tiering",
    "topic_tiering",
    "usable_offsets",
]

REMOTE_LOG_METADATA_TOPIC = "__remote_log_metadata"
#: topics remote storage never applies to (UnifiedLog.isRemoteLogEnabled; Topic.isInternal)
NEVER_TIERED = frozenset(
    {
        "__consumer_offsets",
        "__transaction_state",
        "__share_group_state",
        REMOTE_LOG_METADATA_TOPIC,
        "__cluster_metadata",
    }
)

#: what the broker does with the remote tier, said in every write plan that touches a tiered partition
REMOTE_TIER_RULE = (
    "the broker's RemoteLogManager deletes every remote segment whose end offset is below the log start "
    "offset (RemoteLogManager.RLMExpirationTask isSegmentBreachByLogStartOffset), and applies "
    "retention.ms/retention.bytes to the remote tier"
)


@dataclass(frozen=True, slots=True)
class BrokerRemoteEvidence:
    """What one broker's log dirs show of remote storage (picklable: it travels to scan workers)."""

    #: paths of ``__remote_log_metadata-N`` folders and ``remote-log-index-cache/`` in the log dirs
    on_disk: tuple[str, ...] = ()

    @property
    def any(self) -> bool:
        return bool(self.on_disk)

    def describe(self) -> str:
        shown = ", ".join(os.path.basename(p.rstrip(os.sep)) for p in self.on_disk[:3])
        more = f" and {len(self.on_disk) - 3} more" if len(self.on_disk) > 3 else ""
        return f"the log dirs hold {shown}{more} (a broker with remote storage on)"


def broker_remote_evidence(log_dirs: Iterable[str | os.PathLike[str]]) -> BrokerRemoteEvidence:
    """``__remote_log_metadata-N`` partition folders and ``remote-log-index-cache/`` in ``log_dirs``
    (one listing of each root; an unreadable root shows nothing)."""
    found: list[str] = []
    for d in log_dirs:
        try:
            with os.scandir(os.fspath(d)) as it:
                for e in it:
                    # every folder of that topic (-N, and -delete/-future/-stray) starts with its name
                    pd = parse_partition_dir(e.name) if e.name.startswith(REMOTE_LOG_METADATA_TOPIC) else None
                    ours = e.name == REMOTE_LOG_INDEX_CACHE_DIR or (
                        pd and pd.topic == REMOTE_LOG_METADATA_TOPIC
                    )
                    if ours and e.is_dir(follow_symlinks=False):
                        found.append(e.path)
        except OSError:
            continue
    return BrokerRemoteEvidence(tuple(sorted(found)))


@dataclass(frozen=True, slots=True)
class Tiering:
    """Whether remote storage applies to one partition (UnifiedLog.isRemoteLogEnabled as far as the
    evidence shows), and the evidence, in words."""

    remote_log_enabled: bool
    evidence: str

    def to_json(self) -> dict[str, object]:
        return {"tiered": self.remote_log_enabled, "evidence": self.evidence}


def remote_metadata_evidence(
    metadata: RemoteLogMetadata | None, topic_id: str | None, topic: str, partition: int
) -> str | None:
    """What the replay of ``__remote_log_metadata`` shows of one partition's remote tier, in words: its
    COPY_SEGMENT_FINISHED segments (None: no replay, no such segment, or the partition deleted remotely)."""
    if metadata is None:
        return None
    rp = metadata.partition(topic_id, topic, partition)
    if rp is None or rp.deleted or not rp.copied:
        return None
    n = len(rp.copied)
    last = (rp.remote_log_end_offset or 1) - 1
    return (
        f"{REMOTE_LOG_METADATA_TOPIC}-{rp.metadata_partition} lists {n} remote segment{'s' if n != 1 else ''}"
        f" of it in COPY_SEGMENT_FINISHED (offsets {rp.remote_log_start_offset}-{last}, "
        f"{rp.remote_bytes} bytes): only a remote log's segments are "
        "uploaded (RemoteLogManager RLMCopyTask)"
    )


def tiering(
    topic: str,
    config: TopicConfig | None,
    broker: BrokerRemoteEvidence | None,
    checkpoint: int | None,
    first_base_offset: int | None,
    remote_segments: str | None = None,
) -> Tiering:
    """Decide for one partition (see the module docstring for the order of the evidence).

    ``checkpoint``: its log-start-offset-checkpoint entry (None: none or unreadable);
    ``first_base_offset``: its first local segment (None: no segment); ``remote_segments``: what the
    remote log metadata lists of it (:func:`remote_metadata_evidence`; None: nothing or not replayed)."""
    if topic in NEVER_TIERED:
        return Tiering(False, f"{topic} is an internal topic: remote storage never applies to it")
    if config is not None and config.compact:
        return Tiering(
            False,
            f"cleanup.policy={config.cleanup_policy.describe()}: remote storage never applies to a "
            "compacted topic",
        )
    system = config.remote_storage_system_enable if config is not None else None
    if system is not None and system.source != KAFKA_DEFAULT and not system.value:
        return Tiering(False, f"remote.log.storage.system.enable={system.describe()}")
    remote = config.remote_storage_enable if config is not None else None
    if remote is not None and remote.source != KAFKA_DEFAULT:
        if not remote.value:
            return Tiering(False, f"remote.storage.enable={remote.describe()}")
        why = f"remote.storage.enable={remote.describe()}"
        if system is not None and system.source != KAFKA_DEFAULT:
            why += f"; remote.log.storage.system.enable={system.describe()}"
        return Tiering(True, why)
    if remote_segments is not None:
        return Tiering(True, remote_segments)
    below = checkpoint is not None and first_base_offset is not None and checkpoint < first_base_offset
    system_on = system is not None and system.source != KAFKA_DEFAULT and bool(system.value)
    if below and (system_on or (broker is not None and broker.any)):
        where = (
            f"remote.log.storage.system.enable={system.describe()}"  # type: ignore[union-attr]
            if system_on
            else broker.describe()  # type: ignore[union-attr]
        )
        return Tiering(
            True,
            f"log-start-offset-checkpoint keeps {checkpoint}, below the first local segment "
            f"{first_base_offset}, as a broker does for a remote log "
            f"(LogManager.checkpointLogStartOffsetsInDir), and {where}",
        )
    if below:
        return Tiering(
            False,
            f"log-start-offset-checkpoint keeps {checkpoint}, below the first local segment "
            f"{first_base_offset}, but nothing else shows remote storage (no remote.storage.enable, no "
            "__remote_log_metadata or remote-log-index-cache in the log dirs): without it the broker "
            "uses the first segment; the entry is left as it is",
        )
    return Tiering(False, "no remote.storage.enable for the topic and no log start below its local segments")


def could_be_tiered(topic: str, config: TopicConfig | None, broker: BrokerRemoteEvidence | None) -> bool:
    """Whether remote storage may apply to ``topic`` as far as anything shows: nothing excludes it (the
    broker's rule, an explicit ``false``) and something shows remote storage in the broker or the topic."""
    if topic in NEVER_TIERED or (config is not None and config.compact):
        return False
    system = config.remote_storage_system_enable if config is not None else None
    remote = config.remote_storage_enable if config is not None else None
    known = [s for s in (system, remote) if s is not None and s.source != KAFKA_DEFAULT]
    if any(not s.value for s in known):
        return False
    return bool(known) or (broker is not None and broker.any)


def usable_offsets(cp: CheckpointRead) -> dict[tuple[str, int], int]:
    """A checkpoint's offsets as the broker uses them: none from a file it cannot read (LogManager
    loadLogs)."""
    return {} if cp.error is not None or cp.problems else cp.offsets


def topic_tiering(other: str, evidence: str) -> Tiering:
    """A partition of a topic another partition of which is tiered (remote.storage.enable is a topic
    config: every partition of the topic has it)."""
    return Tiering(True, f"{other} of the same topic is tiered ({evidence})")


@dataclass(frozen=True, slots=True)
class PartitionTiering:
    """One partition folder's tiering and offsets (for the operator procedures, which plan without a scan)."""

    tiering: Tiering
    log_start_offset: int | None
    local_log_start_offset: int | None

    @property
    def tiered(self) -> bool:
        return self.tiering.remote_log_enabled

    def to_json(self) -> dict[str, object]:
        return {
            "tiered": self.tiered,
            "tiered_evidence": self.tiering.evidence,
            "log_start_offset": self.log_start_offset,
            "local_log_start_offset": self.local_log_start_offset,
        }


def partition_tiering(log_dir: str | os.PathLike[str], topic: str, partition: int) -> PartitionTiering:
    """Tiering and offsets of ``LOG_DIR/<topic>-<partition>`` from what the log dir itself holds: its
    log-start-offset-checkpoint entry, first segment, KRaft topic configs (if its metadata log is there)
    and the remote storage it shows, with the replay of its ``__remote_log_metadata`` partitions (no
    --server-properties / --topic-config here)."""
    from logdoctor.checks.topic_config import TopicConfigResolver
    from logdoctor.logdir.model import LogDir
    from logdoctor.logdir.offsets import log_start_offsets

    ld = LogDir(log_dir)
    try:
        part = ld.partition(topic, partition)
        segs = part.segments
    except (KeyError, OSError):
        return PartitionTiering(Tiering(False, "no such partition folder"), None, None)
    starts = usable_offsets(ld.log_start_offsets)
    cp = starts.get((topic, partition))
    first = segs[0].base_offset if segs else None
    config = TopicConfigResolver.for_log_dirs([log_dir]).resolve(topic)
    broker = broker_remote_evidence([log_dir])
    metadata = None
    if any(os.path.basename(p).startswith(REMOTE_LOG_METADATA_TOPIC + "-") for p in broker.on_disk):
        from logdoctor.logdir.remote_metadata import replay_remote_log_metadata

        metadata = replay_remote_log_metadata([log_dir])

    def replayed(p: Any) -> str | None:
        return remote_metadata_evidence(metadata, p.topic_id, topic, p.partition)

    tier = tiering(topic, config, broker, cp, first, replayed(part))
    if not tier.remote_log_enabled and could_be_tiered(topic, config, broker):
        for other in ld.partitions:
            if other.topic != topic or other.partition == partition:
                continue
            try:
                o_segs = other.segments
            except OSError:
                continue
            o_first = o_segs[0].base_offset if o_segs else None
            o_tier = tiering(
                topic, config, broker, starts.get((topic, other.partition)), o_first, replayed(other)
            )
            if o_tier.remote_log_enabled:
                tier = topic_tiering(other.name, o_tier.evidence)
                break
    start, local = log_start_offsets(cp, first, tier.remote_log_enabled)
    return PartitionTiering(tier, start, local)
