"""The retention configuration a broker applies to each topic, and where each value comes from.

One resolution for `scan`, `retention`, `census` and the report. Layers, lowest first, as the broker
builds a topic's LogConfig:

1. Kafka's defaults (K:storage/.../log/LogConfig.java CONFIG: ``log.retention.hours=168``,
   ``log.retention.bytes=-1``, ``log.cleanup.policy=delete``).
2. The broker's static config, ``--server-properties FILE`` (server.properties).
3. KRaft dynamic broker configs: ``ConfigRecord`` with resource type BROKER and an empty name (the
   cluster-wide default), then with the broker's node id as name (this broker only)
   (K:core/.../server/DynamicBrokerConfig.scala updateCurrentConfig: static, then dynamic default,
   then per-broker; ``overrideProps`` first removes the synonyms of an overriding key, so a dynamic
   ``log.retention.hours`` replaces a static ``log.retention.ms``).
   ``--retention-ms`` / ``--retention-bytes`` on the command line act as the most specific broker
   values (``log.retention.ms`` / ``log.retention.bytes``).
   Within the merged broker config ``log.retention.ms`` wins over ``log.retention.minutes`` over
   ``log.retention.hours``, and any negative result means no limit (K:core/.../server/KafkaConfig.scala
   logRetentionTimeMillis).
4. Topic configs the broker itself sets when it creates an internal topic: ``__consumer_offsets``
   (K:group-coordinator/.../group/GroupCoordinatorService.java groupMetadataTopicConfigs; before 3.7
   K:core/.../coordinator/group/GroupCoordinator.scala offsetsTopicConfigs) and ``__transaction_state``
   (K:core/.../coordinator/transaction/TransactionStateManager.scala transactionTopicConfigs) are
   created with ``cleanup.policy=compact``. In KRaft those are ConfigRecords too; in ZooKeeper mode they
   live in ZooKeeper, so without them on disk we apply what the broker wrote at creation.
5. Topic configs: ``ConfigRecord`` with resource type TOPIC in the KRaft metadata log (latest
   snapshot, then the log after it; a RemoveTopicRecord drops the topic's configs, K:metadata/.../
   image/ConfigurationsDelta.java), then ``--topic-config TOPIC:key=value``.

Topic ``retention.ms`` falls back to the broker's ``log.retention.*``, ``retention.bytes`` to
``log.retention.bytes``, ``cleanup.policy`` to ``log.cleanup.policy`` (K:storage/.../log/LogConfig.java,
ServerTopicConfigSynonyms). ``cleanup.policy`` is a list: ``delete`` enables time and size retention
(LogConfig.delete), ``compact`` the cleaner; ``compact,delete`` both. A negative ``retention.ms`` or
``retention.bytes`` means no limit (UnifiedLog deleteRetentionMsBreachedSegments /
deleteRetentionSizeBreachedSegments return at once).

Tiered storage (KIP-405): ``remote.storage.enable`` (topic, default false), ``local.retention.ms`` /
``local.retention.bytes`` (topic; broker ``log.local.retention.ms`` / ``.bytes``; -2, the default, means
"as retention.ms / retention.bytes": K:storage/.../log/LogConfig.java localRetentionMs/localRetentionBytes)
and the broker's static ``remote.log.storage.system.enable`` (K:storage/.../server/log/remote/storage/
RemoteLogManagerConfig.java, default false) are resolved with the same layers and provenance; whether a
partition is tiered is decided from them and the log dir's own evidence by :mod:`logdoctor.checks.tiered`.

``__cluster_metadata`` is not a LogConfig topic at all: the KRaft metadata log is trimmed behind
snapshots (K:raft/.../KafkaRaftClient.java maybeDeleteBeforeSnapshot, ``metadata.max.retention.*``),
so retention never applies to it here.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from logdoctor.errors import FormatError

METADATA_TOPIC = "__cluster_metadata"
REMOTE_LOG_METADATA = "__remote_log_metadata"
METADATA_DIR = "__cluster_metadata-0"

#: ConfigResource.Type ids (K:clients/.../common/config/ConfigResource.java)
RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4

DEFAULT_RETENTION_HOURS = 168
DEFAULT_RETENTION_MS = DEFAULT_RETENTION_HOURS * 3600 * 1000
KAFKA_DEFAULT = "Kafka default"
METADATA_RETENTION_SOURCE = (
    "the KRaft metadata log is trimmed behind snapshots, not by log retention (KafkaRaftClient)"
)

# broker keys (ServerLogConfigs) and the topic keys they are synonyms of (ServerTopicConfigSynonyms)
LOG_RETENTION_MS = "log.retention.ms"
LOG_RETENTION_MINUTES = "log.retention.minutes"
LOG_RETENTION_HOURS = "log.retention.hours"
LOG_RETENTION_BYTES = "log.retention.bytes"
LOG_CLEANUP_POLICY = "log.cleanup.policy"
REMOTE_LOG_STORAGE_SYSTEM_ENABLE = "remote.log.storage.system.enable"
LOG_LOCAL_RETENTION_MS = "log.local.retention.ms"
LOG_LOCAL_RETENTION_BYTES = "log.local.retention.bytes"
RETENTION_MS = "retention.ms"
RETENTION_BYTES = "retention.bytes"
CLEANUP_POLICY = "cleanup.policy"
REMOTE_STORAGE_ENABLE = "remote.storage.enable"
LOCAL_RETENTION_MS = "local.retention.ms"
LOCAL_RETENTION_BYTES = "local.retention.bytes"
#: delayed upload (KIP-1241, Kafka 4.4): RemoteLogManagerConfig / LogConfig remoteCopyLagMs/Bytes
REMOTE_COPY_LAG_MS = "remote.copy.lag.ms"
REMOTE_COPY_LAG_BYTES = "remote.copy.lag.bytes"
LOG_REMOTE_COPY_LAG_MS = "log.remote.copy.lag.ms"
LOG_REMOTE_COPY_LAG_BYTES = "log.remote.copy.lag.bytes"
#: local.retention.* = -2: "as retention.ms / retention.bytes" (LogConfig.DEFAULT_LOCAL_RETENTION_MS/BYTES)
LOCAL_RETENTION_AS_RETENTION = -2
# the log cleaner's topic keys and their broker synonyms (K:storage/.../internals/log/LogConfig.java,
# server-common/.../config/ServerTopicConfigSynonyms.java, CleanerConfig.java; defaults 0.5, 0, Long.MAX)
MIN_CLEANABLE_DIRTY_RATIO = "min.cleanable.dirty.ratio"
MIN_COMPACTION_LAG_MS = "min.compaction.lag.ms"
MAX_COMPACTION_LAG_MS = "max.compaction.lag.ms"
LOG_CLEANER_MIN_CLEANABLE_RATIO = "log.cleaner.min.cleanable.ratio"
LOG_CLEANER_MIN_COMPACTION_LAG_MS = "log.cleaner.min.compaction.lag.ms"
LOG_CLEANER_MAX_COMPACTION_LAG_MS = "log.cleaner.max.compaction.lag.ms"
DEFAULT_MIN_CLEANABLE_DIRTY_RATIO = 0.5
DEFAULT_MAX_COMPACTION_LAG_MS = 2**63 - 1
# how long the cleaner keeps a tombstone (LogConfig DEFAULT_DELETE_RETENTION_MS, one day) and the largest
# batch a topic takes (max.message.bytes; the broker's message.max.bytes, default 1048588:
# K:server-common/.../config/ServerLogConfigs.java, LogConfig.java)
DELETE_RETENTION_MS = "delete.retention.ms"
LOG_CLEANER_DELETE_RETENTION_MS = "log.cleaner.delete.retention.ms"
MAX_MESSAGE_BYTES = "max.message.bytes"
MESSAGE_MAX_BYTES = "message.max.bytes"
DEFAULT_DELETE_RETENTION_MS = 86_400_000
DEFAULT_MESSAGE_MAX_BYTES = 1024 * 1024 + 12
_DOUBLE_KEYS = (MIN_CLEANABLE_DIRTY_RATIO, LOG_CLEANER_MIN_CLEANABLE_RATIO)
#: the longest transaction timeout a producer may ask for; ProducerStateManager's late-transaction rule
#: uses it (K:transaction-coordinator/.../TransactionStateManagerConfig.java, default 900000)
TRANSACTION_MAX_TIMEOUT_MS = "transaction.max.timeout.ms"
BROKER_KEYS = (
    TRANSACTION_MAX_TIMEOUT_MS,
    LOG_RETENTION_MS,
    LOG_RETENTION_MINUTES,
    LOG_RETENTION_HOURS,
    LOG_RETENTION_BYTES,
    LOG_CLEANUP_POLICY,
    REMOTE_LOG_STORAGE_SYSTEM_ENABLE,
    LOG_LOCAL_RETENTION_MS,
    LOG_LOCAL_RETENTION_BYTES,
    LOG_CLEANER_MIN_CLEANABLE_RATIO,
    LOG_CLEANER_MIN_COMPACTION_LAG_MS,
    LOG_CLEANER_MAX_COMPACTION_LAG_MS,
    LOG_CLEANER_DELETE_RETENTION_MS,
    MESSAGE_MAX_BYTES,
)
TOPIC_KEYS = (
    RETENTION_MS,
    RETENTION_BYTES,
    CLEANUP_POLICY,
    REMOTE_STORAGE_ENABLE,
    LOCAL_RETENTION_MS,
    LOCAL_RETENTION_BYTES,
    MIN_CLEANABLE_DIRTY_RATIO,
    MIN_COMPACTION_LAG_MS,
    MAX_COMPACTION_LAG_MS,
    DELETE_RETENTION_MS,
    MAX_MESSAGE_BYTES,
)
_BOOLEAN_KEYS = (REMOTE_LOG_STORAGE_SYSTEM_ENABLE, REMOTE_STORAGE_ENABLE)
_RETENTION_TIME_SYNONYMS = (LOG_RETENTION_MS, LOG_RETENTION_MINUTES, LOG_RETENTION_HOURS)
_POLICIES = ("compact", "delete")
#: a topic key's broker synonym and Kafka's default for it (None: a remote.copy.lag.* set nowhere);
#: retention.ms's broker value is KafkaConfig.logRetentionTimeMillis (:meth:`broker_retention_ms`)
_BROKER_SYNONYMS: dict[str, tuple[str, Any]] = {
    RETENTION_BYTES: (LOG_RETENTION_BYTES, -1),
    CLEANUP_POLICY: (LOG_CLEANUP_POLICY, ("delete",)),
    LOCAL_RETENTION_MS: (LOG_LOCAL_RETENTION_MS, LOCAL_RETENTION_AS_RETENTION),
    LOCAL_RETENTION_BYTES: (LOG_LOCAL_RETENTION_BYTES, LOCAL_RETENTION_AS_RETENTION),
    REMOTE_COPY_LAG_MS: (LOG_REMOTE_COPY_LAG_MS, None),
    REMOTE_COPY_LAG_BYTES: (LOG_REMOTE_COPY_LAG_BYTES, None),
    MIN_CLEANABLE_DIRTY_RATIO: (LOG_CLEANER_MIN_CLEANABLE_RATIO, DEFAULT_MIN_CLEANABLE_DIRTY_RATIO),
    MIN_COMPACTION_LAG_MS: (LOG_CLEANER_MIN_COMPACTION_LAG_MS, 0),
    MAX_COMPACTION_LAG_MS: (LOG_CLEANER_MAX_COMPACTION_LAG_MS, DEFAULT_MAX_COMPACTION_LAG_MS),
    DELETE_RETENTION_MS: (LOG_CLEANER_DELETE_RETENTION_MS, DEFAULT_DELETE_RETENTION_MS),
    MAX_MESSAGE_BYTES: (MESSAGE_MAX_BYTES, DEFAULT_MESSAGE_MAX_BYTES),
}

#: topic configs the broker sets when it creates these internal topics (see the module docstring)
INTERNAL_TOPIC_CONFIGS: dict[str, tuple[dict[str, str], str]] = {
    # K:storage/.../remote/metadata/storage/TopicBasedRemoteLogMetadataManager.java createTopic (and its
    # Config: remote.log.metadata.topic.retention.ms, default -1); a ConfigRecord or --topic-config of
    # the topic overrides it
    "__remote_log_metadata": (
        {RETENTION_MS: "-1", CLEANUP_POLICY: "delete"},
        "Kafka default for __remote_log_metadata (TopicBasedRemoteLogMetadataManager creates it with "
        "remote.log.metadata.topic.retention.ms, default -1)",
    ),
    "__consumer_offsets": (
        {CLEANUP_POLICY: "compact"},
        "Kafka default for __consumer_offsets (GroupCoordinator offsets topic configs)",
    ),
    "__transaction_state": (
        {CLEANUP_POLICY: "compact"},
        "Kafka default for __transaction_state (TransactionStateManager.transactionTopicConfigs)",
    ),
}


@dataclass(frozen=True, slots=True)
class Setting:
    """One effective value, the config key that gave it, and where that key was set."""

    value: Any  # int for retention.ms/bytes, tuple[str, ...] for cleanup.policy
    key: str
    source: str

    def describe(self) -> str:
        v = ",".join(self.value) if isinstance(self.value, tuple) else self.value
        return f"{v} (from {self.key}, {self.source})"


@dataclass(frozen=True, slots=True)
class TopicConfig:
    """The effective retention settings of one topic (picklable: it travels to scan workers)."""

    topic: str
    retention_ms: Setting
    retention_bytes: Setting
    cleanup_policy: Setting
    #: remote.storage.enable (bool; source KAFKA_DEFAULT when set nowhere we can see)
    remote_storage_enable: Setting = Setting(False, REMOTE_STORAGE_ENABLE, KAFKA_DEFAULT)
    #: local.retention.ms / .bytes as the broker applies them to a tiered log (-2 already resolved to
    #: retention.ms / retention.bytes: LogConfig.localRetentionMs / localRetentionBytes)
    local_retention_ms: Setting | None = None
    local_retention_bytes: Setting | None = None
    #: the broker's remote.log.storage.system.enable (bool; source KAFKA_DEFAULT when not given)
    remote_storage_system_enable: Setting = Setting(False, REMOTE_LOG_STORAGE_SYSTEM_ENABLE, KAFKA_DEFAULT)
    #: the log cleaner's settings (checks.compaction)
    min_cleanable_dirty_ratio: Setting = Setting(
        DEFAULT_MIN_CLEANABLE_DIRTY_RATIO, MIN_CLEANABLE_DIRTY_RATIO, KAFKA_DEFAULT
    )
    min_compaction_lag_ms: Setting = Setting(0, MIN_COMPACTION_LAG_MS, KAFKA_DEFAULT)
    max_compaction_lag_ms: Setting = Setting(
        DEFAULT_MAX_COMPACTION_LAG_MS, MAX_COMPACTION_LAG_MS, KAFKA_DEFAULT
    )
    delete_retention_ms: Setting = Setting(DEFAULT_DELETE_RETENTION_MS, DELETE_RETENTION_MS, KAFKA_DEFAULT)
    #: the topic's max.message.bytes (or the broker's message.max.bytes it defaults to)
    max_message_bytes: Setting = Setting(DEFAULT_MESSAGE_MAX_BYTES, MAX_MESSAGE_BYTES, KAFKA_DEFAULT)
    #: the broker's own message.max.bytes (the cleaner's maxIoBufferSize: LogCleaner.CleanerThread)
    broker_message_max_bytes: Setting = Setting(DEFAULT_MESSAGE_MAX_BYTES, MESSAGE_MAX_BYTES, KAFKA_DEFAULT)
    #: remote.copy.lag.ms / .bytes as set (-1 kept: checks.retention_round resolves it); None where
    #: neither the topic nor the broker sets them (Kafka 4.4's defaults: 0 ms, -1 bytes)
    remote_copy_lag_ms: Setting | None = None
    remote_copy_lag_bytes: Setting | None = None

    @property
    def delete(self) -> bool:
        """LogConfig.delete: time and size retention run only with ``delete`` in cleanup.policy."""
        return "delete" in self.cleanup_policy.value

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy.value

    @property
    def time_retention(self) -> bool:
        """Whether time retention can delete anything: cleanup.policy has delete and retention.ms >= 0."""
        return self.delete and self.retention_ms.value >= 0

    def describe(self) -> str:
        """``cleanup.policy=compact (from ...); retention.ms=... (from ...)`` for findings and tables."""
        parts = [f"cleanup.policy={self.cleanup_policy.describe()}"]
        if self.delete:
            parts.append(f"retention.ms={self.retention_ms.describe()}")
            parts.append(f"retention.bytes={self.retention_bytes.describe()}")
        return "; ".join(parts)

    @classmethod
    def from_json(cls, topic: str, data: Mapping[str, Any]) -> TopicConfig:
        """The inverse of :meth:`to_json` (a scan's JSON output read back, e.g. by the report)."""

        def setting(name: str) -> Setting:
            d = data[name]
            v = d["value"]
            if isinstance(v, list | tuple):
                v = tuple(v)
            elif not isinstance(v, bool):
                v = float(v) if name in _DOUBLE_KEYS else int(v)
            return Setting(v, str(d["key"]), str(d["source"]))

        # retention.ms, .bytes and cleanup.policy are always there; the others where set
        names = [(a, n) for i, (a, n) in enumerate(_JSON_NAMES.items()) if i < 3 or data.get(n)]
        return cls(topic, **{attr: setting(name) for attr, name in names})

    def to_json(self) -> dict[str, Any]:
        return {
            name: {
                "value": list(s.value) if isinstance(s.value, tuple) else s.value,
                "key": s.key,
                "source": s.source,
            }
            for attr, name in _JSON_NAMES.items()
            if (s := getattr(self, attr)) is not None
        }


#: each setting of :class:`TopicConfig` and the config key that names it in its JSON, in field order
_JSON_NAMES = {
    "retention_ms": RETENTION_MS,
    "retention_bytes": RETENTION_BYTES,
    "cleanup_policy": CLEANUP_POLICY,
    "remote_storage_enable": REMOTE_STORAGE_ENABLE,
    "local_retention_ms": LOCAL_RETENTION_MS,
    "local_retention_bytes": LOCAL_RETENTION_BYTES,
    "remote_storage_system_enable": REMOTE_LOG_STORAGE_SYSTEM_ENABLE,
    "min_cleanable_dirty_ratio": MIN_CLEANABLE_DIRTY_RATIO,
    "min_compaction_lag_ms": MIN_COMPACTION_LAG_MS,
    "max_compaction_lag_ms": MAX_COMPACTION_LAG_MS,
    "delete_retention_ms": DELETE_RETENTION_MS,
    "max_message_bytes": MAX_MESSAGE_BYTES,
    "broker_message_max_bytes": MESSAGE_MAX_BYTES,
    "remote_copy_lag_ms": REMOTE_COPY_LAG_MS,
    "remote_copy_lag_bytes": REMOTE_COPY_LAG_BYTES,
}


# --- value parsing (ConfigDef LONG / INT / LIST) ---------------------------------------------------------


def _parse_long(key: str, value: str) -> int:
    text = value.strip()
    try:
        n = int(text, 10)
    except ValueError:
        raise ValueError(f"{key}={value!r} is not a number") from None
    if not -(2**63) <= n < 2**63:
        raise ValueError(f"{key}={value!r} is out of range")
    return n


def _parse_double(key: str, value: str) -> float:
    """ConfigDef.Type.DOUBLE (min.cleanable.dirty.ratio: between 0 and 1, ConfigDef.between(0, 1))."""
    try:
        x = float(value.strip())
    except ValueError:
        raise ValueError(f"{key}={value!r} is not a number") from None
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"{key}={value!r} must be between 0 and 1")
    return x


def _parse_policy(key: str, value: str) -> tuple[str, ...]:
    items = tuple(p.strip() for p in value.split(",") if p.strip())
    bad = [p for p in items if p not in _POLICIES]
    if bad:
        raise ValueError(f"{key}={value!r}: each of {', '.join(bad)} must be compact or delete")
    return items


def _parse_bool(key: str, value: str) -> bool:
    """ConfigDef.Type.BOOLEAN: ``true`` or ``false``, any case, surrounding blanks ignored."""
    text = value.strip().lower()
    if text not in ("true", "false"):
        raise ValueError(f"{key}={value!r} is not true or false")
    return text == "true"


def _parse(key: str, value: str) -> Any:
    """A config value by its key's ConfigDef type (LIST, BOOLEAN, DOUBLE, else LONG); ValueError."""
    if key in (CLEANUP_POLICY, LOG_CLEANUP_POLICY):
        return _parse_policy(key, value)
    if key in _BOOLEAN_KEYS:
        return _parse_bool(key, value)
    if key in _DOUBLE_KEYS:
        return _parse_double(key, value)
    return _parse_long(key, value)


# --- inputs ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConfigInputs:
    """What the operator gave on the command line (picklable; travels to Spark executors and scan workers).

    ``server_properties``: the retention keys of a server.properties (``server_properties_path`` names it).
    ``broker_overrides``: ``--retention-ms`` / ``--retention-bytes`` as broker keys.
    ``topic_overrides``: ``--topic-config`` as {topic: {key: value}}.
    """

    server_properties: Mapping[str, str] = field(default_factory=dict)
    server_properties_path: str | None = None
    broker_overrides: Mapping[str, str] = field(default_factory=dict)
    topic_overrides: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    #: the ``__remote_log_metadata`` partition count the server.properties gives the broker's
    #: TopicBasedRemoteLogMetadataManager (:func:`remote_log_metadata_partitions`) and the key read
    remote_log_metadata_partitions: tuple[int, str] | None = None
    #: the retention.ms the broker's TopicBasedRemoteLogMetadataManager creates ``__remote_log_metadata``
    #: with, from the server.properties (:func:`remote_log_metadata_retention_ms`), and the key read
    remote_log_metadata_retention_ms: tuple[int, str] | None = None


def parse_topic_config(items: Iterable[str]) -> dict[str, dict[str, str]]:
    """``TOPIC:key=value`` (repeatable) -> {topic: {key: value}}; ValueError on bad syntax, key or value."""
    out: dict[str, dict[str, str]] = {}
    for item in items:
        topic, sep, kv = item.rpartition(":")
        key, eq, value = kv.partition("=")
        key = key.strip()
        if not sep or not topic or not eq or not key:
            raise ValueError(f"--topic-config wants TOPIC:key=value, got {item!r}")
        if key not in TOPIC_KEYS:
            raise ValueError(
                f"--topic-config {item!r}: unsupported topic config {key!r} ({', '.join(TOPIC_KEYS)})"
            )
        _parse(key, value)
        out.setdefault(topic, {})[key] = value.strip()
    return out


#: K:storage/src/main/java/org/apache/kafka/server/log/remote/storage/RemoteLogManagerConfig.java: the
#: broker hands its RemoteLogMetadataManager only the keys under this prefix, the prefix stripped
#: (remoteLogMetadataManagerProps: originalsWithPrefix), so the metadata topic's partition count is
#: ``rlmm.config.remote.log.metadata.topic.num.partitions`` by default and the retention it creates the
#: topic with ``rlmm.config.remote.log.metadata.topic.retention.ms`` (K:storage/.../metadata/storage/
#: TopicBasedRemoteLogMetadataManagerConfig.java REMOTE_LOG_METADATA_TOPIC_PARTITIONS_PROP, default 50;
#: REMOTE_LOG_METADATA_TOPIC_RETENTION_MS_PROP, default -1: unlimited; TopicBasedRemoteLogMetadataManager
#: createRemoteLogMetadataTopicRequest sets it as the topic's retention.ms when it creates the topic).
RLMM_CONFIG_PREFIX_PROP = "remote.log.metadata.manager.impl.prefix"
DEFAULT_RLMM_CONFIG_PREFIX = "rlmm.config."
RLMM_NUM_PARTITIONS = "remote.log.metadata.topic.num.partitions"
RLMM_RETENTION_MS = "remote.log.metadata.topic.retention.ms"
#: TopicBasedRemoteLogMetadataManagerConfig.DEFAULT_REMOTE_LOG_METADATA_TOPIC_RETENTION_MS
DEFAULT_RLMM_RETENTION_MS = -1


def _rlmm_long(
    props: Mapping[str, str], name: str, ok: Callable[[int], bool], bad: str, wrong: str
) -> tuple[int, str] | None:
    """(value, full key) of an RLMM config in a broker's properties, under the configured prefix (None: not
    set there); ValueError ``bad`` for a value that is not a long, ``wrong`` for one the RLMM refuses (not
    ``ok``). A bare key does not reach the RLMM unless the prefix is set empty, so it is not read."""
    prefix = props.get(RLMM_CONFIG_PREFIX_PROP, DEFAULT_RLMM_CONFIG_PREFIX).strip()
    key = prefix + name
    value = props.get(key)
    if value is None:
        return None
    try:
        n = int(value.strip())
    except ValueError:
        raise ValueError(f"{key}={value!r}{bad}") from None
    if not ok(n):
        raise ValueError(f"{key}={value!r}{wrong}")
    return n, key


def remote_log_metadata_partitions(props: Mapping[str, str]) -> tuple[int, str] | None:
    """The ``__remote_log_metadata`` partition count a broker's properties give its RLMM and the key it
    is under (None: not set there, Kafka's default 50 applies); ValueError for a value that is not a
    positive int."""
    positive = " is not a positive number of partitions"
    return _rlmm_long(props, RLMM_NUM_PARTITIONS, lambda n: n > 0, positive, positive)


def remote_log_metadata_retention_ms(props: Mapping[str, str]) -> tuple[int, str] | None:
    """The retention.ms a broker's RLMM creates ``__remote_log_metadata`` with and the key it is under
    (None: not set there, Kafka's default -1, unlimited, applies); ValueError for what the RLMM refuses
    (not a long, or neither -1 nor positive: TopicBasedRemoteLogMetadataManagerConfig's constructor)."""
    return _rlmm_long(
        props,
        RLMM_RETENTION_MS,
        lambda ms: ms == -1 or ms > 0,
        " is not a number of milliseconds",
        ": the metadata topic's retention is -1 (unlimited) or positive",
    )


def config_inputs(
    *,
    topic_config: Iterable[str] = (),
    server_properties: str | os.PathLike[str] | None = None,
    retention_ms: int | None = None,
    retention_bytes: int | None = None,
) -> ConfigInputs:
    """ConfigInputs from command-line options; ValueError/OSError with the reason."""
    broker: dict[str, str] = {}
    if retention_ms is not None:
        broker[LOG_RETENTION_MS] = str(retention_ms)
    if retention_bytes is not None:
        broker[LOG_RETENTION_BYTES] = str(retention_bytes)
    props: dict[str, str] = {}
    rlmm = rlmm_retention = None
    if server_properties is not None:
        from logdoctor.formats.properties import parse_properties

        # a broker's server.properties (Java Properties syntax): its retention keys, then its RLMM's
        with open(server_properties, "rb") as fh:
            all_props = parse_properties(fh.read(), source=os.fspath(server_properties))
        props = {key: v for key in BROKER_KEYS if (v := all_props.get(key)) is not None}
        for key, value in props.items():
            _parse(key, value)
        rlmm = remote_log_metadata_partitions(all_props)
        rlmm_retention = remote_log_metadata_retention_ms(all_props)
    return ConfigInputs(
        props,
        os.fspath(server_properties) if server_properties else None,
        broker,
        parse_topic_config(topic_config),
        rlmm,
        rlmm_retention,
    )


# --- the KRaft metadata log --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MetadataConfigEvent:
    """A config change in the metadata log: ``key`` None with ``value`` None drops every config of the
    resource (a RemoveTopicRecord); otherwise a ConfigRecord (``value`` None deletes the key)."""

    resource_type: int
    resource_name: str
    key: str | None
    value: str | None
    where: str  # "__cluster_metadata-0 offset N" or "snapshot <file> offset N"


def _metadata_files(metadata_dir: str) -> tuple[tuple[int, str] | None, list[tuple[int, str]]]:
    from logdoctor.logdir.names import FileState, parse_kraft_snapshot, parse_segment_file

    snapshots: list[tuple[int, str]] = []
    logs: list[tuple[int, str]] = []
    for n in sorted(os.listdir(metadata_dir)):
        snap = parse_kraft_snapshot(n)
        if snap is not None:
            if snap[1] is FileState.LIVE:
                snapshots.append((snap[0].offset, n))
            continue
        seg = parse_segment_file(n)
        if seg is not None and seg.suffix == ".log":
            logs.append((seg.base_offset, n))
    return (max(snapshots) if snapshots else None), logs


#: TopicRecord (2), ConfigRecord (4), RemoveTopicRecord (9): K:metadata/src/main/resources/common/metadata
_WANTED_API_KEYS = frozenset({2, 4, 9})


def _events(buf: bytes, min_offset: int, label: str, names: dict[str, str]) -> Iterator[MetadataConfigEvent]:
    from logdoctor.formats.internal.cluster_metadata import decode_metadata_record
    from logdoctor.formats.records import iter_batches

    try:
        for batch in iter_batches(buf):
            if batch.is_control or batch.last_offset < min_offset:
                continue
            for rec in batch.records():
                if rec.offset < min_offset:
                    continue
                v = rec.value
                # uvarint frame version then uvarint api key: one byte each for the keys wanted here
                if v is None or len(v) < 3 or v[1] not in _WANTED_API_KEYS:
                    continue
                try:
                    d = decode_metadata_record(v)
                except FormatError:
                    continue
                data = d["data"]
                if d["type"] == "ConfigRecord":
                    yield MetadataConfigEvent(
                        data["resource_type"],
                        data["resource_name"],
                        data["name"],
                        data["value"],
                        f"{label} offset {rec.offset}",
                    )
                elif d["type"] == "TopicRecord":
                    names[data["topic_id"]] = data["name"]
                elif d["type"] == "RemoveTopicRecord":
                    name = names.pop(data["topic_id"], None)
                    if name is not None:
                        yield MetadataConfigEvent(
                            RESOURCE_TOPIC, name, None, None, f"{label} offset {rec.offset}"
                        )
    except FormatError:
        return  # damage of the metadata log is reported by the segment checks


def metadata_config_events(log_dir: str | os.PathLike[str]) -> Iterator[MetadataConfigEvent]:
    """Topic and broker config changes in ``LOG_DIR/__cluster_metadata-0``, in log order: the latest
    snapshot (``<end offset>-<epoch>.checkpoint``), then the log's records at or after its end offset.
    Yields nothing when the log dir holds no metadata log; unreadable parts are skipped."""
    from logdoctor.logdir.files import read_file

    metadata_dir = os.path.join(os.fspath(log_dir), METADATA_DIR)
    if os.path.islink(metadata_dir):
        return  # never followed out of the log dir (the scan reports the symlink)
    try:
        snapshot, logs = _metadata_files(metadata_dir)
    except OSError:
        return
    names: dict[str, str] = {}
    start = 0
    if snapshot is not None:
        end, name = snapshot
        try:
            buf = read_file(os.path.join(metadata_dir, name))
        except OSError:
            buf = None
        if buf is not None:
            yield from _events(buf, 0, f"{METADATA_DIR}/{name} (snapshot)", names)
            start = end
    for _base, name in logs:
        try:
            buf = read_file(os.path.join(metadata_dir, name))
        except OSError:
            continue
        yield from _events(buf, start, METADATA_DIR, names)


@dataclass(slots=True)
class MetadataConfigs:
    """Config state replayed from metadata config events: {(resource type, name): {key: (value, where)}}."""

    resources: dict[tuple[int, str], dict[str, tuple[str, str]]] = field(default_factory=dict)
    source: str | None = None  # the log dir whose metadata log was read

    def apply(self, event: MetadataConfigEvent) -> None:
        res = (event.resource_type, event.resource_name)
        if event.key is None:
            self.resources.pop(res, None)
        elif event.value is None:
            self.resources.get(res, {}).pop(event.key, None)
        else:
            self.resources.setdefault(res, {})[event.key] = (event.value, event.where)

    def get(self, resource_type: int, name: str) -> dict[str, tuple[str, str]]:
        return self.resources.get((resource_type, name), {})


def read_metadata_configs(log_dirs: Iterable[str | os.PathLike[str]]) -> MetadataConfigs | None:
    """The configs of the first of ``log_dirs`` that holds ``__cluster_metadata-0`` (None: none does)."""
    for d in log_dirs:
        if os.path.isdir(os.path.join(os.fspath(d), METADATA_DIR)):
            out = MetadataConfigs(source=os.fspath(d))
            for ev in metadata_config_events(d):
                out.apply(ev)
            return out
    return None


# --- resolution ------------------------------------------------------------------------------------------


class TopicConfigResolver:
    """Resolve every topic's retention settings for one broker (see the module docstring for the layers)."""

    def __init__(
        self,
        inputs: ConfigInputs | None = None,
        metadata: MetadataConfigs | None = None,
        node_id: int | None = None,
    ) -> None:
        self.inputs = inputs or ConfigInputs()
        self.metadata = metadata
        self.node_id = node_id
        self._broker = self._broker_config()
        self._cache: dict[str, TopicConfig] = {}

    @classmethod
    def for_log_dirs(
        cls,
        log_dirs: Iterable[str | os.PathLike[str]],
        inputs: ConfigInputs | None = None,
        node_id: int | None = None,
    ) -> TopicConfigResolver:
        """The resolver of the broker owning ``log_dirs`` (its metadata log read from whichever holds it)."""
        dirs = list(log_dirs)
        if node_id is None:
            node_id = _node_id(dirs)
        return cls(inputs, read_metadata_configs(dirs), node_id)

    def broker_config(self, key: str) -> tuple[str, str] | None:
        """One broker config of the merged layers as ``(value, where it comes from)`` (None: not set)."""
        return self._broker.get(key)

    def _broker_config(self) -> dict[str, tuple[str, str]]:
        """The merged broker config {key: (value, source)}, DynamicBrokerConfig's order and synonyms."""
        props: dict[str, tuple[str, str]] = {}

        def override(layer: Mapping[str, tuple[str, str]]) -> None:
            keys = [k for k in layer if k in BROKER_KEYS]
            if any(k in _RETENTION_TIME_SYNONYMS for k in keys):
                for syn in _RETENTION_TIME_SYNONYMS:  # a higher layer's synonym replaces the lower ones
                    props.pop(syn, None)
            for k in keys:
                props[k] = layer[k]

        path = self.inputs.server_properties_path or "server.properties"
        override({k: (v, f"--server-properties {path}") for k, v in self.inputs.server_properties.items()})
        md = self.metadata
        if md is not None:
            override(
                {
                    k: (v, f"cluster-wide broker ConfigRecord in {w}")
                    for k, (v, w) in md.get(RESOURCE_BROKER, "").items()
                }
            )
            if self.node_id is not None:
                override(
                    {
                        k: (v, f"broker {self.node_id} ConfigRecord in {w}")
                        for k, (v, w) in md.get(RESOURCE_BROKER, str(self.node_id)).items()
                    }
                )
        override({k: (v, "command line") for k, v in self.inputs.broker_overrides.items()})
        return props

    def broker_retention_ms(self) -> Setting:
        """KafkaConfig.logRetentionTimeMillis: ms, else minutes, else hours; negative -> -1."""
        b = self._broker
        for key, unit in (
            (LOG_RETENTION_MS, 1),
            (LOG_RETENTION_MINUTES, 60_000),
            (LOG_RETENTION_HOURS, 3_600_000),
        ):
            if key in b:
                value, source = b[key]
                try:
                    ms = _parse_long(key, value) * unit
                except ValueError:
                    continue  # an unparsable value on disk: the broker would not have started with it
                return Setting(-1 if ms < 0 else ms, key, source)
        return Setting(
            DEFAULT_RETENTION_MS, f"{LOG_RETENTION_HOURS}={DEFAULT_RETENTION_HOURS}", KAFKA_DEFAULT
        )

    def remote_storage_system_enable(self) -> Setting:
        """The broker's remote.log.storage.system.enable (static: server.properties; default false)."""
        return self._broker_setting(REMOTE_LOG_STORAGE_SYSTEM_ENABLE, False)

    def _broker_setting(self, key: str, default: Any) -> Setting:
        if key in self._broker:
            value, source = self._broker[key]
            try:
                return Setting(_parse(key, value), key, source)
            except ValueError:
                pass
        return Setting(default, key, KAFKA_DEFAULT)

    def resolve(self, topic: str) -> TopicConfig:
        cached = self._cache.get(topic)
        if cached is not None:
            return cached
        if topic == METADATA_TOPIC:
            # no LogConfig retention: KafkaRaftClient deletes segments only behind the latest snapshot
            none = Setting(-1, "metadata.max.retention.ms/bytes", METADATA_RETENTION_SOURCE)
            out = TopicConfig(topic, none, none, Setting((), CLEANUP_POLICY, METADATA_RETENTION_SOURCE))
            self._cache[topic] = out
            return out
        # the broker's values (its synonyms, else Kafka's defaults), then the topic's layers over them
        got: dict[str, Setting] = {
            key: self._broker_setting(*synonym) for key, synonym in _BROKER_SYNONYMS.items()
        }
        got[RETENTION_MS] = self.broker_retention_ms()
        got[REMOTE_STORAGE_ENABLE] = Setting(False, REMOTE_STORAGE_ENABLE, KAFKA_DEFAULT)
        got[MESSAGE_MAX_BYTES] = got[MAX_MESSAGE_BYTES]
        got[REMOTE_LOG_STORAGE_SYSTEM_ENABLE] = self.remote_storage_system_enable()
        layers: list[tuple[Mapping[str, str], Any]] = []
        internal = INTERNAL_TOPIC_CONFIGS.get(topic)
        if internal is not None:
            layers.append((internal[0], lambda _k, src=internal[1]: src))
            rlmm_ms = self.inputs.remote_log_metadata_retention_ms
            if topic == REMOTE_LOG_METADATA and rlmm_ms is not None:
                # what the RLMM creates the topic with; a topic ConfigRecord (the topic as it is) wins
                path = self.inputs.server_properties_path or "server.properties"
                src = (
                    f"--server-properties {path} (TopicBasedRemoteLogMetadataManager creates "
                    "__remote_log_metadata with it)"
                )
                layers.append(({RETENTION_MS: str(rlmm_ms[0])}, lambda _k, src=src: src))
        if self.metadata is not None:
            recs = self.metadata.get(RESOURCE_TOPIC, topic)
            layers.append(
                (
                    {k: v for k, (v, _w) in recs.items()},
                    lambda k, recs=recs: f"topic ConfigRecord in {recs[k][1]}",
                )
            )
        if topic in self.inputs.topic_overrides:
            layers.append((self.inputs.topic_overrides[topic], lambda _k: "--topic-config"))
        for values, source_of in layers:
            for key, value in values.items():
                if key not in _BROKER_SYNONYMS and key not in (RETENTION_MS, REMOTE_STORAGE_ENABLE):
                    continue
                try:
                    n = _parse(key, value)
                except ValueError:
                    continue
                # a negative retention.ms/.bytes is no limit (-1)
                got[key] = Setting(
                    max(n, -1) if key in (RETENTION_MS, RETENTION_BYTES) else n, key, source_of(key)
                )
        ms = got[RETENTION_MS]
        rlmm_ms = self.inputs.remote_log_metadata_retention_ms
        if topic == REMOTE_LOG_METADATA and rlmm_ms is not None and "--server-properties" in ms.source:
            # named by the key the RLMM read
            got[RETENTION_MS] = ms = Setting(ms.value, rlmm_ms[1], ms.source)
        got[LOCAL_RETENTION_MS] = _local(got[LOCAL_RETENTION_MS], ms)
        got[LOCAL_RETENTION_BYTES] = _local(got[LOCAL_RETENTION_BYTES], got[RETENTION_BYTES])
        out = TopicConfig(
            topic,
            **{attr: None if got[key].value is None else got[key] for attr, key in _JSON_NAMES.items()},
        )
        self._cache[topic] = out
        return out


def _local(local: Setting, retention: Setting) -> Setting:
    """LogConfig.localRetentionMs/Bytes: -2 means the retention.ms/.bytes value (its key kept in ours)."""
    if local.value == LOCAL_RETENTION_AS_RETENTION:
        source = local.source if local.source == retention.source else f"{local.source}; {retention.source}"
        return Setting(retention.value, f"{local.key}=-2 (as {retention.key})", source)
    return Setting(-1 if local.value < 0 else local.value, local.key, local.source)


def _node_id(log_dirs: Iterable[str | os.PathLike[str]]) -> int | None:
    from logdoctor.logdir.model import LogDir

    for d in log_dirs:
        try:
            meta = LogDir(os.fspath(d)).meta_properties
        except Exception:
            continue
        for attr in ("node_id", "broker_id"):
            value = getattr(meta, attr, None)
            if isinstance(value, int):
                return value
    return None
