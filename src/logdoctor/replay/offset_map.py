"""The offset map of a replay (source offset -> target offset of every replayed record), read back from
the target and checked against the source: :func:`offset_map`. The rows of a run are also handed out by
:func:`logdoctor.replay.apply.apply_replay` as its transactions commit; after a kill, the rows of the
killed run's last transaction were never handed out, so the whole map is rebuilt from the target. A record
a compacted target topic's cleaner removed since keeps its row, its target offset null (:class:`_Cleaned`).

A re-hashed replay (``--partitioner default``) is mapped per target partition: its records are read back
from the start, and each is paired with the next record, for that partition, of whichever of the topic's
source partitions it equals (key, value, headers, timestamp): a merge that holds whatever order the source
partitions' transactions were committed in. Two source partitions' records alike in all of that are
interchangeable in the map. Each source partition is read once per target partition.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from logdoctor.replay.plan import PartitionPlan, ReplayPlan
from logdoctor.replay.source import PartitionSource, SourceRecord
from logdoctor.replay.target import Progress, Target

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["OFFSET_MAP_COLUMNS", "ReplayMismatch", "offset_map", "offset_map_schema"]

OFFSET_MAP_COLUMNS = (
    "source_topic",
    "source_partition",
    "source_offset",
    "target_topic",
    "target_partition",
    "target_offset",
)


class ReplayMismatch(Exception):
    """The target does not hold what the source's records are (:func:`offset_map`)."""


def offset_map_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            ("source_topic", pa.string()),
            ("source_partition", pa.int32()),
            ("source_offset", pa.int64()),
            ("target_topic", pa.string()),
            ("target_partition", pa.int32()),
            ("target_offset", pa.int64()),
        ]
    )


def offset_map(
    plan: ReplayPlan,
    *,
    consumer_config: Mapping[str, Any] | None = None,
    only: Iterable[str] | None = None,
    timeout: float = 60.0,
) -> Iterator[pa.RecordBatch]:
    """The offset map of every record a replay committed so far (its progress in the replay groups), one
    record batch per partition chunk, read back from the target (``read_committed``) and paired with the
    source's records in order: each pair is checked (key, value, headers, CreateTime timestamp), a
    difference raises :class:`ReplayMismatch`. ``only``: the source partitions (``topic-N``) to map (None:
    every one). Memory: one chunk of rows."""
    import pyarrow as pa
    from confluent_kafka import Consumer, TopicPartition

    from logdoctor.logdir.read_plan import plan_read

    target = Target(plan.bootstrap, plan.admin_config, timeout)
    read = plan_read(plan.paths, plan.opts)
    refs = {  # by log dir too: of several copies (SEVERAL_REPLICAS accepted), the plan's
        (r.log_dir, r.topic, r.partition): r for r in read.refs if r.kind not in _NOT_LIVE
    }
    chosen = None if only is None else set(only)
    rehashed: dict[str, list[PartitionPlan]] = {}
    for pp in plan.partitions:
        if pp.rehashed:
            rehashed.setdefault(pp.target_topic, []).append(pp)
    for topic, pps in rehashed.items():
        if chosen is None or any(pp.name in chosen for pp in pps):
            yield from _rehashed_map(
                plan, topic, pps, target, refs, chosen, consumer_config, timeout, read.decisions
            )
    compacted: dict[str, bool] = {}
    for pp in plan.partitions:
        if pp.rehashed or (chosen is not None and pp.name not in chosen):
            continue
        topic, partition = pp.target_topic, pp.target_partition
        prog = target.progress(pp.group, topic, [partition]).get(partition)
        if prog is None:
            continue
        if topic not in compacted:
            configs = target.topic_configs([topic]).get(topic, {})
            compacted[topic] = "compact" in configs.get("cleanup.policy", "")
        ref = refs[(pp.log_dir, pp.source_topic, pp.source_partition)]
        source = PartitionSource.of(ref, plan.opts, read.decisions)
        consumer = Consumer(
            target.client_config(
                {
                    "group.id": f"{pp.group}-check",
                    "enable.auto.commit": False,
                    "isolation.level": "read_committed",
                    "enable.partition.eof": True,
                    **dict(consumer_config or {}),
                }
            )
        )
        try:
            consumer.assign([TopicPartition(topic, partition, prog.first_target_offset)])
            src = source.records()
            src_off: list[int] = []
            tgt_off: list[int | None] = []
            paired = 0
            last_source = -1
            cleaned = _Cleaned(pp) if compacted[topic] else None
            deadline = time.monotonic() + timeout
            while paired < prog.records:
                msg = consumer.poll(1.0)
                if (
                    msg is not None and msg.error() is not None and msg.error().code() == -191
                ):  # _PARTITION_EOF
                    if cleaned is not None and msg.offset() >= prog.next_target_offset:
                        msg = None  # every replayed offset read: the source's records left were cleaned away
                    elif time.monotonic() > deadline:
                        raise ReplayMismatch(
                            f"{topic}-{partition}: ends after {paired} of {prog.records} replayed records"
                        )
                    else:
                        continue
                elif msg is None:
                    if time.monotonic() > deadline:
                        raise ReplayMismatch(
                            f"{topic}-{partition}: {paired} of {prog.records} records read back"
                        )
                    continue
                elif msg.error() is not None:
                    raise ReplayMismatch(f"{topic}-{partition}: {msg.error()}")
                deadline = time.monotonic() + timeout
                rec = next(src, None)
                while cleaned is not None and rec is not None and (msg is None or not _equal(rec, msg)):
                    cleaned.removed(rec)  # not on the target: its cleaner removed it
                    src_off.append(rec.offset)
                    tgt_off.append(None)
                    last_source = rec.offset
                    paired += 1
                    rec = next(src, None) if paired < prog.records else None
                if msg is not None:
                    if rec is None:
                        raise ReplayMismatch(
                            f"{topic}-{partition}@{msg.offset()}: no source record left for it"
                        )
                    _same(rec, msg, pp)
                    if cleaned is not None:
                        cleaned.kept(rec)
                    src_off.append(rec.offset)
                    tgt_off.append(msg.offset())
                    last_source = rec.offset
                    paired += 1
                if src_off and (len(src_off) >= 65536 or paired >= prog.records):
                    n = len(src_off)
                    yield pa.RecordBatch.from_arrays(
                        [
                            pa.array([pp.source_topic] * n, pa.string()),
                            pa.array([pp.source_partition] * n, pa.int32()),
                            pa.array(src_off, pa.int64()),
                            pa.array([topic] * n, pa.string()),
                            pa.array([partition] * n, pa.int32()),
                            pa.array(tgt_off, pa.int64()),
                        ],
                        schema=offset_map_schema(),
                    )
                    src_off, tgt_off = [], []
            if cleaned is not None:
                cleaned.check()
            if last_source + 1 != prog.next_source_offset:
                raise ReplayMismatch(
                    f"{pp.name}: its {prog.records} replayed records end at source offset {last_source}, the "
                    f"progress says the next is {prog.next_source_offset}"
                )
        finally:
            consumer.close()


class _Cleaned:
    """The records of a replayed partition that the compacted target topic no longer holds: each is one the
    target's cleaner may remove, a record whose key a later replayed record has (K:storage/.../internals/
    log/LogCleaner.java: the cleaner keeps a key's last record) or a tombstone (removed once
    ``delete.retention.ms`` has passed); any other missing record is a :class:`ReplayMismatch`."""

    def __init__(self, pp: PartitionPlan) -> None:
        self.pp = pp
        #: key -> the source offset of a removed record of it that no later record has superseded yet
        self.waiting: dict[bytes | None, int] = {}

    def kept(self, rec: SourceRecord) -> None:
        self.waiting.pop(rec.key, None)

    def removed(self, rec: SourceRecord) -> None:
        self.waiting.pop(rec.key, None)
        if rec.value is not None:
            self.waiting[rec.key] = rec.offset

    def check(self) -> None:
        if self.waiting:
            key, offset = next(iter(self.waiting.items()))
            where = f"{self.pp.target_topic}-{self.pp.target_partition}"
            raise ReplayMismatch(
                f"{self.pp.name}@{offset}: not on {where}, and no later replayed record has its key {key!r} "
                "(not one the target's cleaner removes)"
            )


def _same(rec: SourceRecord, msg: Any, pp: PartitionPlan) -> None:
    where = f"{pp.name}@{rec.offset} -> {pp.target_topic}-{pp.target_partition}@{msg.offset()}"
    if msg.key() != rec.key or msg.value() != rec.value:
        raise ReplayMismatch(f"{where}: key or value differ")
    headers = [(k, v) for k, v in (msg.headers() or [])]
    if headers != (rec.headers or []):
        raise ReplayMismatch(f"{where}: headers differ: {headers!r} != {rec.headers!r}")
    ts_type, ts = msg.timestamp()
    if rec.timestamp > 0 and ts != rec.timestamp:
        raise ReplayMismatch(f"{where}: timestamp {ts} (type {ts_type}) != {rec.timestamp}")


_NOT_LIVE = ("delete", "future", "stray")


def _rehashed_map(
    plan: ReplayPlan,
    topic: str,
    pps: list[PartitionPlan],
    target: Target,
    refs: Mapping[tuple[str, str, int], Any],
    chosen: set[str] | None,
    consumer_config: Mapping[str, Any] | None,
    timeout: float,
    decisions: Any,
) -> Iterator[pa.RecordBatch]:
    """The map of one re-hashed target topic (the module doc)."""
    import pyarrow as pa
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    from logdoctor.replay.partitioner import partition_for

    done: list[tuple[PartitionPlan, Progress]] = []
    for pp in pps:
        prog = target.progress(pp.group, topic, [0]).get(0)
        if prog is not None:
            done.append((pp, prog))
    if not done:
        return
    counts = {prog.partitions for _pp, prog in done}
    if len(counts) != 1 or None in counts:
        raise ReplayMismatch(
            f"{topic}: its source partitions were hashed over {sorted(map(str, counts))} partitions"
        )
    partitions = int(next(iter(counts)))  # type: ignore[arg-type]

    def for_partition(pp: PartitionPlan, prog: Progress, at: int) -> Iterator[SourceRecord]:
        ref = refs[(pp.log_dir, pp.source_topic, pp.source_partition)]
        source = PartitionSource.of(ref, plan.opts, decisions)
        for rec in source.records():
            if rec.offset >= prog.next_source_offset:
                return
            if partition_for(rec.key, pp.source_partition, partitions) == at:
                yield rec

    for at in range(partitions):
        heads = [(pp, for_partition(pp, prog, at)) for pp, prog in done]
        nexts: list[SourceRecord | None] = [next(gen, None) for _pp, gen in heads]
        rows: list[list[tuple[int, int]]] = [[] for _ in heads]
        consumer = Consumer(
            target.client_config(
                {
                    "group.id": f"logdoctor-rehash-{topic}-check",
                    "enable.auto.commit": False,
                    "isolation.level": "read_committed",
                    "enable.partition.eof": True,
                    **dict(consumer_config or {}),
                }
            )
        )
        try:
            consumer.assign([TopicPartition(topic, at, OFFSET_BEGINNING)])
            deadline = time.monotonic() + timeout
            while any(n is not None for n in nexts):
                msg = consumer.poll(1.0)
                if msg is None or (msg.error() is not None and msg.error().code() == -191):  # _PARTITION_EOF
                    if time.monotonic() > deadline:
                        left = sum(n is not None for n in nexts)
                        raise ReplayMismatch(
                            f"{topic}-{at}: ends with {left} source partitions' records unread"
                        )
                    continue
                if msg.error() is not None:
                    raise ReplayMismatch(f"{topic}-{at}: {msg.error()}")
                deadline = time.monotonic() + timeout
                for i, rec in enumerate(nexts):
                    if rec is not None and _equal(rec, msg):
                        rows[i].append((rec.offset, msg.offset()))
                        nexts[i] = next(heads[i][1], None)
                        break
                else:
                    raise ReplayMismatch(
                        f"{topic}-{at}@{msg.offset()}: not the next record of any re-hashed source partition"
                    )
        finally:
            consumer.close()
        for (pp, _gen), pairs in zip(heads, rows, strict=True):
            if not pairs or (chosen is not None and pp.name not in chosen):
                continue
            n = len(pairs)
            yield pa.RecordBatch.from_arrays(
                [
                    pa.array([pp.source_topic] * n, pa.string()),
                    pa.array([pp.source_partition] * n, pa.int32()),
                    pa.array([o for o, _t in pairs], pa.int64()),
                    pa.array([topic] * n, pa.string()),
                    pa.array([at] * n, pa.int32()),
                    pa.array([t for _o, t in pairs], pa.int64()),
                ],
                schema=offset_map_schema(),
            )


def _equal(rec: SourceRecord, msg: Any) -> bool:
    if msg.key() != rec.key or msg.value() != rec.value:
        return False
    if [(k, v) for k, v in (msg.headers() or [])] != (rec.headers or []):
        return False
    return rec.timestamp <= 0 or msg.timestamp()[1] == rec.timestamp
