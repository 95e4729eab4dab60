"""The offset map of a replay (source offset -> target offset of every replayed record), read back from
the target and checked against the source: :func:`offset_map`. The rows of a run are also handed out by
:func:`logdoctor.replay.apply.apply_replay` as its transactions commit; after a kill, the rows of the
killed run's last transaction were never handed out, so the whole map is rebuilt from the target.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from logdoctor.replay.plan import PartitionPlan, ReplayPlan
from logdoctor.replay.source import PartitionSource, SourceRecord
from logdoctor.replay.target import Target

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
    refs = {
        (r.topic, r.partition): r for r in plan_read(plan.paths, plan.opts).refs if r.kind not in _NOT_LIVE
    }
    chosen = None if only is None else set(only)
    for pp in plan.partitions:
        if chosen is not None and pp.name not in chosen:
            continue
        topic, partition = pp.target_topic, pp.target_partition
        prog = target.progress(pp.group, topic, [partition]).get(partition)
        if prog is None:
            continue
        source = PartitionSource.of(refs[(pp.source_topic, pp.source_partition)], plan.opts)
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
            tgt_off: list[int] = []
            paired = 0
            last_source = -1
            deadline = time.monotonic() + timeout
            while paired < prog.records:
                msg = consumer.poll(1.0)
                if msg is None:
                    if time.monotonic() > deadline:
                        raise ReplayMismatch(
                            f"{topic}-{partition}: {paired} of {prog.records} records read back"
                        )
                    continue
                if msg.error() is not None:
                    if msg.error().code() == -191:  # _PARTITION_EOF
                        if time.monotonic() > deadline:
                            raise ReplayMismatch(
                                f"{topic}-{partition}: ends after {paired} of {prog.records} replayed records"
                            )
                        continue
                    raise ReplayMismatch(f"{topic}-{partition}: {msg.error()}")
                deadline = time.monotonic() + timeout
                rec = next(src, None)
                if rec is None:
                    raise ReplayMismatch(f"{topic}-{partition}@{msg.offset()}: no source record left for it")
                _same(rec, msg, pp)
                src_off.append(rec.offset)
                tgt_off.append(msg.offset())
                last_source = rec.offset
                paired += 1
                if len(src_off) >= 65536 or paired == prog.records:
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
            if last_source + 1 != prog.next_source_offset:
                raise ReplayMismatch(
                    f"{pp.name}: its {prog.records} replayed records end at source offset {last_source}, the "
                    f"progress says the next is {prog.next_source_offset}"
                )
        finally:
            consumer.close()


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
