"""The target cluster, through confluent-kafka (librdkafka): its id, its topics and their configs, the
partitions' offsets, and the replay's progress committed in its replay groups.

Names a replay uses on the target (each derived from the target cluster's id and the target topic, so
that two replays into the same target partition, from whatever source, share them and fence each other):

- the transactional.id of the producer of a target partition: :func:`transactional_id`;
- the replay group of a target topic, where each target partition's progress is committed in the same
  transaction as its records: :func:`replay_group`.

A replay that re-hashes the keys (``--partitioner default``) sends one source partition's records to many
target partitions, and each target partition gets records of many source partitions: its producer and its
progress are the source partition's (:func:`rehash_transactional_id`, :func:`rehash_group`, each derived
from the target cluster's id, the source topic and partition and the target topic).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "PROGRESS_KEY",
    "ClientSettingsError",
    "Progress",
    "Target",
    "TargetUnreachable",
    "carried_group",
    "describe_source",
    "rehash_group",
    "rehash_transactional_id",
    "replay_group",
    "transactional_id",
]

#: the key of the JSON object a replay commits as its offsets' metadata
PROGRESS_KEY = "logdoctor-replay"
#: how long a plan waits for a replay group's pending offsets of a commit in flight (its marker still on the
#: way to ``__consumer_offsets``) before it reports them pending (a killed run's transaction)
SETTLE_S = 5.0
#: the most of a topic name kept in a readable id (the hash keeps them apart)
_NAME_PART = 80


def _digest(*parts: object) -> str:
    return hashlib.sha256("/".join(str(p) for p in parts).encode()).hexdigest()[:16]


def transactional_id(cluster_id: str, topic: str, partition: int) -> str:
    """``logdoctor-replay-<topic>-<partition>-<hash of cluster id/topic/partition>``: readable in
    ``kafka-transactions.sh list``, unique per target partition of a cluster."""
    return f"logdoctor-replay-{topic[:_NAME_PART]}-{partition}-{_digest(cluster_id, topic, partition)}"


def replay_group(cluster_id: str, topic: str) -> str:
    """``logdoctor-replay-<topic>-<hash of cluster id/topic>``: the group of a target topic's progress."""
    return f"logdoctor-replay-{topic[:_NAME_PART]}-{_digest(cluster_id, topic)}"


def rehash_transactional_id(
    cluster_id: str, source_topic: str, source_partition: int, target_topic: str
) -> str:
    """``logdoctor-rehash-<target topic>-<source partition>-<hash of cluster id/source topic/source
    partition/target topic>``: the producer of one source partition re-hashed into ``target_topic``."""
    digest = _digest("rehash", cluster_id, source_topic, source_partition, target_topic)
    return f"logdoctor-rehash-{target_topic[:_NAME_PART]}-{source_partition}-{digest}"


def rehash_group(cluster_id: str, source_topic: str, source_partition: int, target_topic: str) -> str:
    """``logdoctor-rehash-<target topic>-<source partition>-<hash>``: the group of one source partition's
    progress when it is re-hashed into ``target_topic``. The progress is committed on ``target_topic``'s
    partition 0: the coordinator takes offsets only of partitions the target has (K:core/.../server/
    KafkaApis.scala handleTxnOffsetCommitRequest: UNKNOWN_TOPIC_OR_PARTITION for a topic or partition its
    metadata cache does not hold), and the group is the source partition's alone."""
    digest = _digest("rehash-group", cluster_id, source_topic, source_partition, target_topic)
    return f"logdoctor-rehash-{target_topic[:_NAME_PART]}-{source_partition}-{digest}"


def carried_group(cluster_id: str, group: str, topic: str) -> str:
    """``logdoctor-carried-<topic>-<hash of cluster id/group/topic>``: the ledger of the offsets a replay
    committed for consumer ``group`` on the target topic (each partition's committed offset there is the one
    the replay committed for the group), so that a rerun tells a group that moved on since the replay's
    commit from one whose offset someone else committed first."""
    return f"logdoctor-carried-{topic[:_NAME_PART]}-{_digest('carried', cluster_id, group, topic)}"


@dataclass(frozen=True, slots=True)
class Progress:
    """What a replay committed for one target partition (in the metadata of the offset it commits there,
    whose value is the next target offset): the source partition it replays, the next source offset to
    replay, the target offset of its first record and how many records it replayed."""

    source_topic: str
    source_partition: int
    next_source_offset: int
    first_target_offset: int
    records: int
    next_target_offset: int
    #: a re-hashed replay's (``--partitioner default``): the target topic's partition count the keys were
    #: hashed over (None: the source partition's number is the target's). Its progress is the source
    #: partition's, committed on the target topic's partition 0 with the next source offset as the offset:
    #: ``first_target_offset`` is -1 and ``next_target_offset`` the next source offset
    partitions: int | None = None
    #: whose partition the source is: (cluster id, topic id) as :func:`logdoctor.logdir.identity.source_of`
    #: reads them (either None where the log dir has none). None: a progress of version 1 (committed before
    #: the progress named its source), which names only the topic and partition
    source_id: tuple[str | None, str | None] | None = None

    def metadata(self) -> str:
        obj: dict[str, Any] = {
            PROGRESS_KEY: 1 if self.source_id is None else 2,
            "source": [self.source_topic, self.source_partition],
            "next": self.next_source_offset,
            "first": self.first_target_offset,
            "records": self.records,
        }
        if self.source_id is not None:
            obj["cluster"], obj["topic_id"] = self.source_id
        if self.partitions is not None:
            obj["partitioner"] = "default"
            obj["partitions"] = self.partitions
        return json.dumps(obj, separators=(",", ":"))

    @classmethod
    def parse(cls, offset: int, metadata: str | None) -> Progress | None:
        """The progress of a committed offset (None: not a replay's). Version 2 names the source's cluster
        and topic id (``cluster``, ``topic_id``: null where its log dir had none); version 1 does not."""
        try:
            obj = json.loads(metadata or "")
            topic, partition = obj["source"]
            partitions = obj.get("partitions")
            source_id = None if int(obj[PROGRESS_KEY]) < 2 else (obj["cluster"], obj["topic_id"])
            return cls(
                str(topic), int(partition), int(obj["next"]), int(obj["first"]), int(obj["records"]), offset,
                None if partitions is None else int(partitions), source_id,
            )  # fmt: skip
        except (ValueError, KeyError, TypeError):
            return None

    def of_other_source(self, topic: str, partition: int, source_id: tuple[str | None, str | None]) -> bool:
        """Whether this progress is another source partition's than ``topic``-``partition`` of the source
        ``source_id`` (cluster id, topic id): another topic or partition, or (version 2) another cluster or
        topic id. A version 1 progress names no source: it is the same topic and partition's, whichever
        cluster that was (what the replay did before the progress named its source)."""
        if (self.source_topic, self.source_partition) != (topic, partition):
            return True
        return self.source_id is not None and tuple(self.source_id) != tuple(source_id)

    def source_text(self) -> str:
        """The source partition as a message names it: ``orders-0 of cluster C (topic id T)``."""
        name = f"{self.source_topic}-{self.source_partition}"
        if self.source_id is None:
            return f"{name} (a progress that names no cluster)"
        return f"{name} of {describe_source(self.source_id)}"


def describe_source(source_id: tuple[str | None, str | None]) -> str:
    """``cluster C (topic id T)`` of a (cluster id, topic id), either possibly unknown."""
    cluster, topic_id = source_id
    return f"cluster {cluster or '(no meta.properties)'} (topic id {topic_id or 'unknown'})"


class ClientSettingsError(ValueError):
    """A setting the client library refuses when a client is made (librdkafka checks every setting then:
    an unknown key, a value out of range, one the client's kind refuses). ``client``: which client."""

    def __init__(self, client: str, message: str) -> None:
        super().__init__(f"the {client} refuses a setting: {message}")
        self.client = client


class TargetUnreachable(Exception):
    """The target cluster does not answer a client made with the replay's settings (not reachable, or
    security settings that do not fit its listener)."""


def made(client: str, make: Callable[[], Any]) -> Any:
    """``make()``, a client; the library's refusal of its settings as :class:`ClientSettingsError`."""
    from confluent_kafka import KafkaException

    try:
        return make()
    except KafkaException as exc:
        raise ClientSettingsError(client, exc.args[0].str() if exc.args else str(exc)) from None


class Target:
    """One target cluster: an AdminClient (kept while its futures pend) and the configs to make clients."""

    def __init__(self, bootstrap: str, admin_config: Mapping[str, Any] | None = None, timeout: float = 60.0):
        from confluent_kafka.admin import AdminClient

        self.bootstrap = bootstrap
        self.admin_config = {str(k): v for k, v in (admin_config or {}).items()}
        self.timeout = timeout
        self.admin = made(
            "admin client", lambda: AdminClient({"bootstrap.servers": bootstrap, **self.admin_config})
        )
        self._cluster_id: str | None = None
        self._coordinated: set[str] = set()
        self._offsets_topic = False

    def client_config(self, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The admin config (security settings) with ``extra``, for a producer or consumer."""
        return {"bootstrap.servers": self.bootstrap, **self.admin_config, **dict(extra or {})}

    @property
    def cluster_id(self) -> str:
        """The cluster's id, the admin client's first question (:class:`TargetUnreachable`: no answer)."""
        from confluent_kafka import KafkaException

        if self._cluster_id is None:
            try:
                desc = _retrying(
                    lambda: self.admin.describe_cluster(request_timeout=self.timeout).result(self.timeout),
                    self.timeout,
                )
            except KafkaException as exc:  # not retriable: security settings that do not fit, say
                raise TargetUnreachable(f"the admin client: {_why(exc, self.timeout)}") from None
            self._cluster_id = str(desc.cluster_id)
        return self._cluster_id

    def check_clients(self, producer: Callable[[], Any]) -> None:
        """The clients that write, each made with its settings, then asked for the cluster's metadata,
        before anything is written: the admin client (made with the target; its settings are the
        consumers' too) and the producer ``producer()`` makes. A setting the library refuses is a
        :class:`ClientSettingsError` (both are judged before any connection), a client the target does
        not answer a :class:`TargetUnreachable`."""
        from confluent_kafka import KafkaException

        made_producer = made("transactional producer", producer)
        self.cluster_id  # noqa: B018 - the admin client's answer
        try:
            made_producer.list_topics(timeout=self.timeout)
        except KafkaException as exc:
            raise TargetUnreachable(f"the transactional producer: {_why(exc, self.timeout)}") from None

    def partition_counts(self) -> dict[str, int]:
        """Every topic of the target and its number of partitions."""
        md = _retrying(lambda: self.admin.list_topics(timeout=self.timeout), self.timeout)
        return {name: len(t.partitions) for name, t in md.topics.items() if t.error is None}

    def topic_configs(self, topics: list[str]) -> dict[str, dict[str, str]]:
        """Each of ``topics``' configs as the target describes them (every key, defaults included)."""
        from confluent_kafka.admin import ConfigResource, ResourceType

        if not topics:
            return {}
        resources = [ConfigResource(ResourceType.TOPIC, t) for t in topics]
        got = _retrying(
            lambda: {
                res.name: fut.result(timeout=self.timeout)
                for res, fut in self.admin.describe_configs(resources, request_timeout=self.timeout).items()
            },
            self.timeout,
        )
        return {
            name: {k: e.value for k, e in entries.items() if e.value is not None}
            for name, entries in got.items()
        }

    def topic_defaults(self) -> dict[str, str]:
        """The configs a topic created now without them gets, those the plan's conflicts read
        (:func:`~logdoctor.replay.plan.check_partition`), from a broker's (the cluster's lowest node id's, as
        DescribeConfigs gives them: static, the cluster's dynamic default, the broker's own) as the broker
        maps them (K:server-common/.../ServerTopicConfigSynonyms.java): ``retention.ms``, ``cleanup.policy``
        and ``max.message.bytes`` as the project resolves them
        (:class:`~logdoctor.checks.topic_config.TopicConfigResolver`), ``message.timestamp.*`` from
        ``log.message.timestamp.*``."""
        from confluent_kafka.admin import ConfigResource, ResourceType

        from logdoctor.checks.topic_config import ConfigInputs, TopicConfigResolver

        desc = _retrying(
            lambda: self.admin.describe_cluster(request_timeout=self.timeout).result(self.timeout),
            self.timeout,
        )
        res = ConfigResource(ResourceType.BROKER, str(min(n.id for n in desc.nodes)))
        entries = _retrying(
            lambda: self.admin.describe_configs([res], request_timeout=self.timeout)[res].result(
                self.timeout
            ),
            self.timeout,
        )
        broker = {k: e.value for k, e in entries.items() if e.value is not None}
        topic = TopicConfigResolver(ConfigInputs(broker_overrides=broker)).resolve("")
        out = {
            "retention.ms": str(topic.retention_ms.value),
            "cleanup.policy": ",".join(topic.cleanup_policy.value),
            "max.message.bytes": str(topic.max_message_bytes.value),
            "compression.type": broker.get("compression.type", "producer"),
        }
        for key in (
            "message.timestamp.type",
            "message.timestamp.before.max.ms",
            "message.timestamp.after.max.ms",
        ):
            if f"log.{key}" in broker:
                out[key] = broker[f"log.{key}"]
        return out

    def watermarks(self, topic: str, partition: int) -> tuple[int, int]:
        """(log start, high watermark) of a target partition (read_uncommitted: an open transaction's
        records count)."""
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer(
            self.client_config(
                {"group.id": "logdoctor-replay-watermarks", "isolation.level": "read_uncommitted",
                 "enable.auto.commit": False}
            )
        )  # fmt: skip
        try:
            low, high = _retrying(
                lambda: consumer.get_watermark_offsets(
                    TopicPartition(topic, partition), timeout=self.timeout
                ),
                self.timeout,
            )
        finally:
            consumer.close()
        return int(low), int(high)

    def progress(self, group: str, topic: str, partitions: list[int]) -> dict[int, Progress]:
        """The progress committed in ``group`` for ``topic``'s ``partitions``. A partition whose offsets a
        transaction still holds pending is asked again until that transaction ends (KIP-447
        ``require_stable``: the coordinator answers UNSTABLE_OFFSET_COMMIT meanwhile): what a replay asks
        after its ``init_transactions`` has ended a killed run's transaction."""
        out, pending = self._stable_offsets(group, topic, partitions, self.timeout)
        if pending:
            raise RuntimeError(f"{group}: the offsets of {topic} stay pending in a transaction")
        return out

    def committed_progress(
        self, group: str, topic: str, partitions: list[int]
    ) -> tuple[dict[int, Progress], set[int]]:
        """The last committed progress of ``partitions``, at once, and the partitions whose next progress
        a transaction still holds pending (a killed run's: it ends when the next run's
        ``init_transactions`` fences it, or when the coordinator aborts it after ``transaction.timeout.ms``;
        a commit the killed run had begun completes). What a plan shows, without waiting for either; it
        waits only for a commit in flight (:data:`SETTLE_S`): ``commit_transaction`` returns once the
        coordinator has logged PrepareCommit, and the offsets become committed when its marker reaches
        ``__consumer_offsets`` afterwards (K:core/.../transaction/TransactionMarkerChannelManager.scala), so
        a plan made right after a replay would otherwise see that replay's last progress pending."""
        out, pending = self._stable_offsets(group, topic, partitions, min(self.timeout, SETTLE_S))
        if pending:
            last, _ = self._offsets(group, topic, sorted(pending), stable=False)
            out.update(last)
        return out, pending

    def _stable_offsets(
        self, group: str, topic: str, partitions: list[int], wait_s: float
    ) -> tuple[dict[int, Progress], set[int]]:
        """The committed progress of ``partitions`` and those still pending after asking the pending ones
        again for up to ``wait_s`` (KIP-447 ``require_stable``: UNSTABLE_OFFSET_COMMIT meanwhile)."""
        deadline = time.monotonic() + wait_s
        out, pending = self._offsets(group, topic, partitions, stable=True)
        while pending and time.monotonic() < deadline:
            time.sleep(0.2)
            again, pending = self._offsets(group, topic, sorted(pending), stable=True)
            out.update(again)
        return out, pending

    def _offsets(
        self, group: str, topic: str, partitions: list[int], *, stable: bool
    ) -> tuple[dict[int, Progress], set[int]]:
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

        self._coordinator_ready(group)
        request = [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in partitions])]
        got = _retrying(
            lambda: self.admin.list_consumer_group_offsets(
                request, require_stable=stable, request_timeout=self.timeout
            )[group].result(timeout=self.timeout),
            self.timeout,
        )
        out: dict[int, Progress] = {}
        pending: set[int] = set()
        for tp in got.topic_partitions or []:
            if tp.error is not None:
                if "UNSTABLE_OFFSET_COMMIT" in str(tp.error):
                    pending.add(tp.partition)
                    continue
                raise RuntimeError(f"{group}: the offset of {topic}-{tp.partition}: {tp.error}")
            if tp.offset is None or tp.offset < 0:
                continue
            parsed = Progress.parse(int(tp.offset), tp.metadata)
            if parsed is not None:
                out[tp.partition] = parsed
        return out, pending

    def last_stable(self, topic: str, partition: int) -> int:
        """The last stable offset of a target partition: where a ``read_committed`` consumer stops, the first
        offset of its earliest open transaction, else the high watermark (a ListOffsets of the latest offset
        at ``read_committed``: K:core/.../cluster/Partition.scala fetchOffsetForTimestamp)."""
        from confluent_kafka import IsolationLevel, TopicPartition
        from confluent_kafka.admin import OffsetSpec

        tp = TopicPartition(topic, partition)
        got = _retrying(
            lambda: self.admin.list_offsets(
                {tp: OffsetSpec.latest()}, isolation_level=IsolationLevel.READ_COMMITTED,
                request_timeout=self.timeout,
            )[tp].result(timeout=self.timeout),
            self.timeout,
        )  # fmt: skip
        return int(got.offset)

    def has_records(self, topic: str, partition: int, low: int, stable: int) -> bool:
        """Whether a ``read_committed`` consumer reads any record of the partition from ``low`` (its log
        start) to ``stable`` (:meth:`last_stable`; aborted and open transactions' records, and markers, are
        no records to it: what a killed replay left; an open transaction holds ``stable`` up to the high
        watermark, which the caller names). Read to the last stable offset
        and no further: librdkafka says EOF once per end offset, the last stable offset while a transaction
        is open (confluentinc/librdkafka src/rdkafka_fetcher.c ``eof_offset``), and nothing after it until
        the transaction ends. Nothing read within ``timeout``: :class:`TargetUnreachable`."""
        from confluent_kafka import Consumer, TopicPartition

        if stable <= low:
            return False
        consumer = Consumer(
            self.client_config(
                {"group.id": "logdoctor-replay-check", "isolation.level": "read_committed",
                 "enable.auto.commit": False, "enable.partition.eof": True}
            )
        )  # fmt: skip
        try:
            consumer.assign([TopicPartition(topic, partition, low)])
            deadline = time.monotonic() + self.timeout
            while time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is None:
                    continue
                if msg.error() is None:
                    return True
                if msg.error().code() != -191:  # _PARTITION_EOF, at the end offset of the fetch's answer
                    raise TargetUnreachable(f"reading {topic}-{partition}: {msg.error().str()}")
                if msg.offset() >= stable:
                    return False
            raise TargetUnreachable(
                f"reading {topic}-{partition} read_committed: nothing within {self.timeout:g} s"
            )
        finally:
            consumer.close()

    def _coordinator_ready(self, group: str) -> None:
        """Wait until ``group``'s coordinator answers (a DescribeGroups that is not refused as
        COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR), once per group, before the admin client's
        first ListConsumerGroupOffsets of it: librdkafka (2.16.1 too) crashes the process (SIGSEGV in
        ``rd_kafka_handle_OffsetFetch`` -> ``rd_kafka_cgrp_op`` with no consumer group handle) when an
        admin OffsetFetch is answered NOT_COORDINATOR (confluentinc/librdkafka#5040), which a cluster
        whose ``__consumer_offsets`` is just being created answers: the first replay into a new cluster
        died so about one time in two."""
        if group not in self._coordinated:
            self.group_state(group)
            self._coordinated.add(group)

    def _offsets_topic_led(self, group: str) -> None:
        """Wait until the target's ``__consumer_offsets`` exists, each partition with a leader (its metadata),
        once, before the first admin request of a group (``group``'s): the first FindCoordinator has the
        broker create it (K:core/.../server/KafkaApis.scala handleFindCoordinatorRequest), answered
        COORDINATOR_NOT_AVAILABLE meanwhile, and librdkafka 2.16's admin request of a group whose
        FindCoordinator is answered so three times in a row has no answer until its timeout (the first
        ``--groups`` plan into a new cluster: exit 69 while the target answered, or a traceback). A consumer
        of ``group``, made meanwhile, asks for the coordinator again and again, as consumers do. A topic
        the admin client may not describe (ACLs) is not waited for."""
        from confluent_kafka import Consumer

        topic = "__consumer_offsets"

        def waiting() -> bool:
            md = _retrying(
                lambda: self.admin.list_topics(topic, timeout=self.timeout), self.timeout
            ).topics.get(topic)
            if md is None or md.error is not None:
                return md is None or "UNKNOWN_TOPIC" in str(md.error)
            return not md.partitions or any(p.leader < 0 for p in md.partitions.values())

        if self._offsets_topic or not waiting():
            self._offsets_topic = True
            return
        consumer = Consumer(self.client_config({"group.id": group, "enable.auto.commit": False}))
        try:
            deadline = time.monotonic() + self.timeout
            while waiting():
                if time.monotonic() > deadline:
                    raise TargetUnreachable(f"{topic} not created within {self.timeout:g} s")
                consumer.poll(0.3)  # serves its coordinator query
        finally:
            consumer.close()
        self._offsets_topic = True

    def group_members(self, group: str) -> list[str]:
        """The members of ``group`` now (``member id (client id@host)``; empty: none, or no such group)."""
        return self.group_state(group)[1]

    def group_state(self, group: str) -> tuple[str, list[str]]:
        """``group``'s state on the target (``EMPTY``, ``STABLE``, ``DEAD``...; ``ABSENT``: no such group)
        and its members (as :meth:`group_members`)."""
        self._offsets_topic_led(group)
        try:
            desc = _retrying(
                lambda: self.admin.describe_consumer_groups([group], request_timeout=self.timeout)[
                    group
                ].result(timeout=self.timeout),
                self.timeout,
            )
        except Exception as exc:  # no such group: librdkafka says GROUP_ID_NOT_FOUND on 4.x brokers
            if "GROUP_ID_NOT_FOUND" in str(exc) or "not found" in str(exc).lower():
                return "ABSENT", []
            raise
        state = getattr(desc.state, "name", str(desc.state))
        members = sorted(f"{m.member_id} ({m.client_id}@{m.host})" for m in (desc.members or []))
        return str(state), members

    def group_offsets(self, group: str, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """``group``'s committed offsets of ``partitions`` on the target (those it has: 0 or more)."""
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

        if not partitions:
            return {}
        self._coordinator_ready(group)
        request = [ConsumerGroupTopicPartitions(group, [TopicPartition(t, p) for t, p in partitions])]
        got = _retrying(
            lambda: self.admin.list_consumer_group_offsets(request, request_timeout=self.timeout)[
                group
            ].result(timeout=self.timeout),
            self.timeout,
        )
        out: dict[tuple[str, int], int] = {}
        for tp in got.topic_partitions or []:
            if tp.error is not None:
                raise RuntimeError(f"{group}: the offset of {tp.topic}-{tp.partition}: {tp.error}")
            if tp.offset is not None and tp.offset >= 0:
                out[(tp.topic, tp.partition)] = int(tp.offset)
        return out

    def alter_group_offsets(self, request: Any) -> dict[tuple[str, int], str | None]:
        """Commit ``request`` (a ``ConsumerGroupTopicPartitions``) with the admin client (an OffsetCommit
        without member: the coordinator takes it only while the group is empty); each partition's error
        (None: committed)."""
        group = request.group_id
        try:
            got = _retrying(
                lambda: self.admin.alter_consumer_group_offsets([request], request_timeout=self.timeout)[
                    group
                ].result(timeout=self.timeout),
                self.timeout,
            )
        except TargetUnreachable:
            raise
        except Exception as exc:  # the whole request refused (e.g. UNKNOWN_MEMBER_ID: the group has members)
            return {(tp.topic, tp.partition): str(exc) for tp in request.topic_partitions}
        return {
            (tp.topic, tp.partition): None if tp.error is None else str(tp.error)
            for tp in got.topic_partitions or []
        }


def _why(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, TimeoutError) or not exc.args:
        return f"no answer within {timeout:g} s"
    err = exc.args[0]
    return err.str() if hasattr(err, "str") else str(err)


_RETRIABLE = (
    "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "_TRANSPORT",
    "_TIMED_OUT",
)  # fmt: skip


def _retrying(call: Any, timeout: float, what: str = "the admin client") -> Any:
    """``call()``, a request to the target and the wait for its answer, again while it times out or its
    error is retriable (a group coordinator loading or moving, a broker that does not answer), for up to
    ``timeout`` seconds (``--timeout``); then :class:`TargetUnreachable` naming ``what`` (one line, 69).
    Any other error is raised as it is."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return call()
        except Exception as exc:
            err = exc.args[0] if exc.args else None
            retriable = getattr(err, "retriable", lambda: False)() or any(r in str(exc) for r in _RETRIABLE)
            if not (retriable or isinstance(exc, TimeoutError)):
                raise
            if time.monotonic() > deadline:
                raise TargetUnreachable(f"{what}: {_why(exc, timeout)}") from None
            time.sleep(0.3)
