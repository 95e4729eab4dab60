"""The offset map of a replay (source offset -> target offset of every replayed record), read back from
the target and checked against the source: :func:`offset_map`. The rows of a run are also handed out by
:func:`logdoctor.replay.apply.apply_replay` as its transactions commit; after a kill, the rows of the
killed run's last transaction were never handed out, so the whole map is rebuilt from the target. A record
a compacted target topic's cleaner removed since keeps its row, its target offset null (:class:`_Cleaned`).

A re-hashed replay (``--partitioner default``) is mapped per target partition: its records are read back
from the start, and each is paired with the next record, for that partition, of whichever of the topic's
source partitions it equals (key, value, headers, timestamp): a merge that holds whatever order the source
partitions' transactions were committed in. Two source partitions' records alike in all of that are
interchangeable in the map. Each source partition is read once per target partition. On a compacted target
the merge passes over the source records its cleaner removed (a bounded look ahead), by the same rule.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from logdoctor.replay.plan import PartitionPlan, ReplayPlan, live_refs
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

    types = (pa.string(), pa.int32(), pa.int64()) * 2
    return pa.schema(list(zip(OFFSET_MAP_COLUMNS, types, strict=True)))


def offset_map_rows(
    pp: PartitionPlan,
    source_offsets: list[int],
    target_partitions: list[int],
    target_offsets: list[int] | list[int | None],
) -> pa.RecordBatch:
    """Offset map rows of ``pp``'s records: each one's source offset, target partition and target offset
    (None: the target's cleaner removed it)."""
    import pyarrow as pa

    n, schema = len(source_offsets), offset_map_schema()
    columns = (
        [pp.source_topic] * n, [pp.source_partition] * n, source_offsets,
        [pp.target_topic] * n, target_partitions, target_offsets,
    )  # fmt: skip
    return pa.RecordBatch.from_arrays(
        [pa.array(c, f.type) for c, f in zip(columns, schema, strict=True)], schema=schema
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
    from confluent_kafka import TopicPartition

    from logdoctor.logdir.read_plan import plan_read

    target = Target(plan.bootstrap, plan.admin_config, timeout)
    read = plan_read(plan.paths, plan.opts)
    refs = live_refs(read.refs)
    chosen = None if only is None else set(only)
    rehashed: dict[str, list[PartitionPlan]] = {}
    for pp in plan.partitions:
        if pp.rehashed:
            rehashed.setdefault(pp.target_topic, []).append(pp)
    compacted: dict[str, bool] = {}

    def is_compacted(topic: str) -> bool:
        if topic not in compacted:
            configs = target.topic_configs([topic]).get(topic, {})
            compacted[topic] = "compact" in configs.get("cleanup.policy", "")
        return compacted[topic]

    for topic, pps in rehashed.items():
        if chosen is None or any(pp.name in chosen for pp in pps):
            yield from _rehashed_map(
                plan, topic, pps, target, refs, chosen, consumer_config, timeout, read.decisions,
                is_compacted(topic),
            )  # fmt: skip
    for pp in plan.partitions:
        if pp.rehashed or (chosen is not None and pp.name not in chosen):
            continue
        topic, partition = pp.target_topic, pp.target_partition
        prog = target.progress(pp.group, topic, [partition]).get(partition)
        if prog is None:
            continue
        ref = refs[(pp.log_dir, pp.source_topic, pp.source_partition)]
        source = PartitionSource.of(ref, plan.opts, read.decisions)
        consumer = _check_consumer(target, f"{pp.group}-check", consumer_config)
        try:
            consumer.assign([TopicPartition(topic, partition, prog.first_target_offset)])
            src = source.records()
            src_off: list[int] = []
            tgt_off: list[int | None] = []
            paired = 0
            last_source = -1
            cleaned = _Cleaned(f"{topic}-{partition}") if is_compacted(topic) else None
            after = prog.first_target_offset - 1  # the target offset of the last record kept
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
                    cleaned.removed(rec, pp.name, after)  # not on the target: its cleaner removed it
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
                        cleaned.kept(rec, msg.offset())
                    after = msg.offset()
                    src_off.append(rec.offset)
                    tgt_off.append(msg.offset())
                    last_source = rec.offset
                    paired += 1
                if src_off and (len(src_off) >= 65536 or paired >= prog.records):
                    yield offset_map_rows(pp, src_off, [partition] * len(src_off), tgt_off)
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
    """The replayed records a compacted target partition no longer holds: each must be one the target's
    cleaner may remove, a record a later record of its key supersedes (K:storage/.../internals/log/
    LogCleaner.java: the cleaner keeps a key's last record) or a tombstone (removed once
    ``delete.retention.ms`` has passed); any other missing record is a :class:`ReplayMismatch`.

    A removed record's place is known up to its gap: after ``after``, the target offset of the last record
    of its source partition the target kept before it, and after the records removed in the same gap before
    it. Within one source partition that is its order on the target; across the source partitions of a
    re-hashed topic, two records of one key in the same gap of different source partitions are taken in
    the order they were read."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.seq = 0
        #: key -> the place of its last record kept or tombstone removed
        self.latest: dict[bytes | None, tuple[int, int, int]] = {}
        #: key -> (place, source partition, source offset) of its last other record removed
        self.pending: dict[bytes | None, tuple[tuple[int, int, int], str, int]] = {}

    def _place(self, offset: int, removed: int) -> tuple[int, int, int]:
        self.seq += 1
        return (offset, removed, self.seq)

    def kept(self, rec: SourceRecord, target_offset: int) -> None:
        self.latest[rec.key] = max(self.latest.get(rec.key, (-2, 0, 0)), self._place(target_offset, 0))

    def removed(self, rec: SourceRecord, name: str, after: int) -> None:
        place = self._place(after, 1)
        if rec.value is None:
            self.latest[rec.key] = max(self.latest.get(rec.key, (-2, 0, 0)), place)
        elif rec.key not in self.pending or self.pending[rec.key][0] < place:
            self.pending[rec.key] = (place, name, rec.offset)

    def check(self) -> None:
        for key, (place, name, offset) in self.pending.items():
            if self.latest.get(key, (-2, 0, 0)) < place:
                raise ReplayMismatch(
                    f"{name}@{offset}: not on {self.where}, and no later replayed record has its key {key!r} "
                    "(not one the target's cleaner removes)"
                )


def _same(rec: SourceRecord, msg: Any, pp: PartitionPlan) -> None:
    differ = _difference(rec, msg)
    if differ is not None:
        where = f"{pp.name}@{rec.offset} -> {pp.target_topic}-{pp.target_partition}@{msg.offset()}"
        raise ReplayMismatch(f"{where}: {differ}")


def _equal(rec: SourceRecord, msg: Any) -> bool:
    return _difference(rec, msg) is None


def _difference(rec: SourceRecord, msg: Any) -> str | None:
    """How the record read back ``msg`` differs from the source's ``rec`` (None: it does not: key, value,
    headers and, where the source has one, the timestamp)."""
    if msg.key() != rec.key or msg.value() != rec.value:
        return "key or value differ"
    headers = [(k, v) for k, v in (msg.headers() or [])]
    if headers != (rec.headers or []):
        return f"headers differ: {headers!r} != {rec.headers!r}"
    ts_type, ts = msg.timestamp()
    if rec.timestamp > 0 and ts != rec.timestamp:
        return f"timestamp {ts} (type {ts_type}) != {rec.timestamp}"
    return None


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
    compacted: bool,
) -> Iterator[pa.RecordBatch]:
    """The map of one re-hashed target topic (the module doc). ``compacted``: records the target's cleaner
    removed are passed over, each source partition looked ahead of at most :data:`_AHEAD` records."""
    from confluent_kafka import OFFSET_BEGINNING, TopicPartition

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
        heads = [(pp, _Ahead(for_partition(pp, prog, at))) for pp, prog in done]
        rows: list[list[tuple[int, int | None]]] = [[] for _ in heads]
        cleaned = _Cleaned(f"{topic}-{at}") if compacted else None
        after = [-1] * len(heads)  # per source partition, the target offset of its last record kept
        consumer = _check_consumer(target, f"logdoctor-rehash-{topic}-check", consumer_config)
        try:
            consumer.assign([TopicPartition(topic, at, OFFSET_BEGINNING)])
            deadline = time.monotonic() + timeout
            while any(ahead.left() for _pp, ahead in heads):
                msg = consumer.poll(1.0)
                err = None if msg is None else msg.error()
                eof = err is not None and err.code() == -191  # _PARTITION_EOF
                if (
                    eof
                    and cleaned is not None
                    and msg.offset() >= _high_watermark(consumer, topic, at, timeout)
                ):
                    break  # every record the target holds read: the source's records left were cleaned away
                if msg is None or eof:
                    if time.monotonic() > deadline:
                        left = sum(ahead.left() for _pp, ahead in heads)
                        raise ReplayMismatch(
                            f"{topic}-{at}: ends with {left} source partitions' records unread"
                        )
                    continue
                if msg.error() is not None:
                    raise ReplayMismatch(f"{topic}-{at}: {msg.error()}")
                deadline = time.monotonic() + timeout
                # the next record of a source partition; on a compacted target, a later one
                hit = next(
                    (
                        (i, taken)
                        for depth in ((1, _AHEAD) if compacted else (1,))
                        for i, (_pp, ahead) in enumerate(heads)
                        if (taken := ahead.take(msg, depth))
                    ),
                    None,
                )
                if hit is None:
                    raise ReplayMismatch(
                        f"{topic}-{at}@{msg.offset()}: not the next record of any re-hashed source partition"
                    )
                i, taken = hit
                for rec in taken[:-1]:
                    assert cleaned is not None
                    cleaned.removed(rec, heads[i][0].name, after[i])
                    rows[i].append((rec.offset, None))
                if cleaned is not None:
                    cleaned.kept(taken[-1], msg.offset())
                rows[i].append((taken[-1].offset, msg.offset()))
                after[i] = msg.offset()
        finally:
            consumer.close()
        if cleaned is not None:
            for i, (pp, ahead) in enumerate(heads):
                for rec in ahead.rest():
                    cleaned.removed(rec, pp.name, after[i])
                    rows[i].append((rec.offset, None))
            cleaned.check()
        for (pp, _ahead), pairs in zip(heads, rows, strict=True):
            if not pairs or (chosen is not None and pp.name not in chosen):
                continue
            yield offset_map_rows(pp, [o for o, _t in pairs], [at] * len(pairs), [t for _o, t in pairs])


def _check_consumer(target: Target, group: str, consumer_config: Mapping[str, Any] | None) -> Any:
    """A consumer that reads the replayed records back as ``read_committed`` consumers read them."""
    from confluent_kafka import Consumer

    return Consumer(
        target.client_config(
            {
                "group.id": group,
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "enable.partition.eof": True,
                **dict(consumer_config or {}),
            }
        )
    )


def _high_watermark(consumer: Any, topic: str, partition: int, timeout: float) -> int:
    """The partition's high watermark as the broker has it now (librdkafka also says EOF after a fetch of
    aborted batches alone, short of it)."""
    from confluent_kafka import TopicPartition

    return int(consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout, cached=False)[1])


#: how many records of a source partition a re-hashed map looks ahead of for the next one a compacted target
#: kept (those passed over: removed by its cleaner)
_AHEAD = 65536


class _Ahead:
    """A source partition's records for one target partition, read ahead of on demand."""

    def __init__(self, records: Iterator[SourceRecord]) -> None:
        self.records = records
        self.buf: deque[SourceRecord] = deque()

    def left(self) -> bool:
        if not self.buf:
            rec = next(self.records, None)
            if rec is None:
                return False
            self.buf.append(rec)
        return True

    def take(self, msg: Any, depth: int) -> list[SourceRecord]:
        """The records up to the first of the next ``depth`` equal to ``msg``, that one last; none: no
        such record."""
        for n in range(depth):
            if n == len(self.buf):
                rec = next(self.records, None)
                if rec is None:
                    return []
                self.buf.append(rec)
            if _equal(self.buf[n], msg):
                return [self.buf.popleft() for _ in range(n + 1)]
        return []

    def rest(self) -> Iterator[SourceRecord]:
        yield from self.buf
        self.buf.clear()
        yield from self.records
