"""Realistic record data: the `.log` content a producer + broker would leave, deterministic by seed.

Models what matters for reading and checking segments:

* record values of a chosen size distribution (fixed, uniform, lognormal) and kind
  (JSON-like text, plain text, random bytes, zeros), tombstones, keys drawn from a key
  space of a chosen cardinality (with null keys), record headers;
* batching like the Java producer's RecordAccumulator: a batch closes when the next
  record would not fit in ``batch_size`` (16384, counted on the estimated compressed size
  with CompressionRatioEstimator's steps) or when ``linger_ms`` has passed since its
  first record; a record larger than the batch size gets a batch of its own;
* timestamps: Poisson arrivals (monotonic, jittered intervals), CreateTime or
  LogAppendTime (the broker's append time, a little after the batch's last record);
* idempotent / transactional producers (several of them interleaved), with COMMIT/ABORT
  control batches and the aborted transactions a `.txnindex` would list;
* magic 0/1 message sets (no headers or transactions there).

Everything streams: ``iter_segment`` yields one batch at a time, ``write_segment`` writes
a file of any size without holding it in memory.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Literal

from logdoctor.formats.record_types import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    Compression,
    Header,
    RecordSpec,
    TimestampType,
)

__all__ = [
    "AbortedTransaction",
    "BatchInfo",
    "RecordDataSpec",
    "SegmentInfo",
    "generate_segment",
    "iter_segment",
    "write_segment",
]

SizeDistribution = Literal["fixed", "uniform", "lognormal"]
ValueKind = Literal["json", "text", "random", "zeros"]

_RECORD_BATCH_OVERHEAD = 61  # v2 batch header incl. the 12-byte log overhead
_ESTIMATION_FACTOR = 1.05  # RecordAccumulator's COMPRESSION_RATE_ESTIMATION_FACTOR
_RATIO_IMPROVING_STEP = 0.005  # CompressionRatioEstimator
_RATIO_DETERIORATE_STEP = 0.05

_WORD_TEXT = (
    "order shipped payment declined user login logout session cart item added removed price discount "
    "warehouse region north south east west status pending complete failed retry timeout latency "
    "service request response error warning info debug trace span parent child metric counter gauge "
    "histogram kafka topic partition offset consumer producer broker leader replica segment index "
    "customer account balance transfer invoice refund subscription renewal trial premium basic"
)
_WORDS = _WORD_TEXT.split()
_EVENTS = ("view", "click", "purchase", "signup", "search", "add_to_cart", "checkout", "refund")
_COUNTRIES = ("US", "DE", "FR", "BR", "IN", "JP", "GB", "CA", "AU", "NL", "SE", "PL")
_HEADER_KEYS = ("trace-id", "content-type", "source", "schema-version", "retry-count", "tenant")


@dataclass(frozen=True, slots=True)
class RecordDataSpec:
    """What to generate. Stop after ``record_count`` records or ``target_bytes`` of segment."""

    seed: int = 0
    record_count: int | None = 10_000
    target_bytes: int | None = None
    # values
    value_size: int = 1024
    value_size_distribution: SizeDistribution = "fixed"
    value_size_spread: float = 0.5  # uniform: +-spread * size; lognormal: sigma
    value_kind: ValueKind = "json"
    tombstone_ratio: float = 0.0  # null values
    # keys and headers
    key_cardinality: int = 10_000  # 0: every key null
    null_key_ratio: float = 0.0
    headers_per_record: int = 0
    # format
    magic: int = 2
    compression: Compression = Compression.NONE
    timestamp_type: TimestampType = TimestampType.CREATE_TIME
    base_offset: int = 0
    partition_leader_epoch: int = 0
    # producer
    batch_size: int = 16_384
    linger_ms: float = 5.0
    start_timestamp_ms: int = 1_700_000_000_000
    mean_interval_ms: float = 0.01  # mean gap between records (Poisson arrivals)
    log_append_delay_ms: int = 3  # LogAppendTime: broker time after the batch's last record
    producers: int = 1
    idempotent: bool = False
    transactional: bool = False
    batches_per_transaction: int = 3  # mean, per transaction
    abort_ratio: float = 0.2
    coordinator_epoch: int = 0
    first_producer_id: int = 1000

    def __post_init__(self) -> None:
        if self.record_count is None and self.target_bytes is None:
            raise ValueError("give record_count or target_bytes")
        if self.magic not in (0, 1, 2):
            raise ValueError(f"magic {self.magic}")
        if self.magic < 2:
            if self.transactional or self.idempotent or self.headers_per_record:
                raise ValueError("magic 0/1 has no producer ids, transactions or headers")
            if self.compression == Compression.ZSTD:
                raise ValueError("zstd needs magic 2")
        if self.producers < 1 or self.value_size < 0 or self.batch_size < 1:
            raise ValueError("producers >= 1, value_size >= 0, batch_size >= 1")


@dataclass(slots=True)
class BatchInfo:
    """What was written for one log entry (a v2 batch, or a v0/v1 message or wrapper)."""

    position: int
    size: int
    base_offset: int
    last_offset: int
    record_count: int
    first_timestamp: int
    max_timestamp: int
    offset_of_max_timestamp: int
    magic: int
    compression: Compression
    timestamp_type: TimestampType
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    base_sequence: int = NO_SEQUENCE
    is_transactional: bool = False
    is_control: bool = False
    control_committed: bool | None = None  # the marker's kind, for control batches
    uncompressed_records_bytes: int = 0


@dataclass(frozen=True, slots=True)
class AbortedTransaction:
    """An aborted transaction as the `.txnindex` records it (AbortedTxn, without the LSO)."""

    producer_id: int
    first_offset: int
    last_offset: int  # the offset of the ABORT marker


@dataclass(slots=True)
class SegmentInfo:
    size: int = 0
    batch_count: int = 0
    record_count: int = 0  # data records (control records excluded)
    next_offset: int = 0  # the log end offset after this segment
    max_timestamp: int = -1
    batches: list[BatchInfo] = field(default_factory=list)
    aborted_transactions: list[AbortedTransaction] = field(default_factory=list)


# --- values, keys, headers ----------------------------------------------------------------


class _Values:
    def __init__(self, spec: RecordDataSpec, rng: random.Random) -> None:
        self.spec = spec
        self.rng = rng
        words = [rng.choice(_WORDS) for _ in range(64 * 1024)]
        self.filler = " ".join(words)
        self.filler_bytes = self.filler.encode()
        self.seq = 0

    def size(self) -> int:
        s = self.spec
        if s.value_size_distribution == "fixed":
            return s.value_size
        if s.value_size_distribution == "uniform":
            spread = int(s.value_size * s.value_size_spread)
            return max(0, s.value_size + self.rng.randint(-spread, spread))
        # lognormal with median value_size
        return min(max(0, int(self.rng.lognormvariate(math.log(max(s.value_size, 1)), s.value_size_spread))),
                   64 * s.value_size + 1024)

    def value(self, ts: int) -> bytes | None:
        s, rng = self.spec, self.rng
        if s.tombstone_ratio and rng.random() < s.tombstone_ratio:
            return None
        n = self.size()
        self.seq += 1
        if s.value_kind == "random":
            return rng.randbytes(n)
        if s.value_kind == "zeros":
            return bytes(n)
        start = rng.randrange(0, len(self.filler) - n - 1) if n < len(self.filler) - 1 else 0
        if s.value_kind == "text":
            return self.filler_bytes[start : start + n].ljust(n, b".")
        head = (
            f'{{"id":{self.seq},"ts":{ts},"user":"user-{rng.randrange(100_000)}",'
            f'"event":"{rng.choice(_EVENTS)}","country":"{rng.choice(_COUNTRIES)}",'
            f'"amount":{rng.randrange(1_000_000) / 100},"note":"'
        )
        room = n - len(head) - 2
        if room < 0:
            return (head + '"}').encode()[:n]
        return (head + self.filler[start : start + room] + '"}').encode()

    def key(self) -> bytes | None:
        s, rng = self.spec, self.rng
        if s.key_cardinality <= 0 or (s.null_key_ratio and rng.random() < s.null_key_ratio):
            return None
        return b"key-%08d" % rng.randrange(s.key_cardinality)

    def headers(self) -> tuple[Header, ...]:
        n = self.spec.headers_per_record
        if not n:
            return ()
        rng = self.rng
        return tuple(
            Header(_HEADER_KEYS[i % len(_HEADER_KEYS)], b"%016x" % rng.getrandbits(64)) for i in range(n)
        )


def _record_size_estimate(key: bytes | None, value: bytes | None, headers: tuple[Header, ...]) -> int:
    """About DefaultRecord.sizeInBytes: varint lengths and deltas take ~10 bytes."""
    size = 10 + (len(key) if key else 0) + (len(value) if value else 0)
    for h in headers:
        size += 2 + len(h.key) + (len(h.value) if h.value else 0)
    return size


# --- producers and transactions -----------------------------------------------------------


@dataclass(slots=True)
class _Producer:
    producer_id: int
    epoch: int = 0
    sequence: int = 0
    txn_first_offset: int | None = None  # open transaction
    txn_batches_left: int = 0


# --- the generator ------------------------------------------------------------------------


def iter_segment(spec: RecordDataSpec) -> Iterator[tuple[bytes, BatchInfo]]:
    """Yield (entry bytes, BatchInfo) in log order; the bytes concatenated are the `.log` file.

    Transactions still open when the data ends are closed with their markers, so every
    transaction of the segment is decided.
    """
    from logdoctor.formats import control, writer
    from logdoctor.formats.legacy import build_message_set

    rng = random.Random(spec.seed)
    values = _Values(spec, rng)
    compressed = spec.compression != Compression.NONE
    lat = spec.timestamp_type == TimestampType.LOG_APPEND_TIME and spec.magic > 0
    ts_type = TimestampType.NO_TIMESTAMP if spec.magic == 0 else spec.timestamp_type
    producers = [_Producer(spec.first_producer_id + i) for i in range(spec.producers)]
    use_pid = spec.magic == 2 and (spec.idempotent or spec.transactional)

    clock = float(spec.start_timestamp_ms)
    offset = spec.base_offset
    position = 0
    records_done = 0
    ratio = 1.0  # CompressionRatioEstimator's estimate, starts at 1.0
    pending: tuple[bytes | None, bytes | None, tuple[Header, ...], int] | None = None

    def done() -> bool:
        if spec.record_count is not None and records_done >= spec.record_count:
            return True
        return spec.target_bytes is not None and position >= spec.target_bytes

    def next_record() -> tuple[bytes | None, bytes | None, tuple[Header, ...], int]:
        nonlocal clock
        clock += rng.expovariate(1.0 / spec.mean_interval_ms) if spec.mean_interval_ms > 0 else 0.0
        ts = int(clock)
        return values.key(), values.value(ts), values.headers(), ts

    def emit(data: bytes, info: BatchInfo) -> tuple[bytes, BatchInfo]:
        nonlocal position
        info.position = position
        position += len(data)
        return data, info

    def marker(p: _Producer, committed: bool) -> tuple[bytes, BatchInfo]:
        nonlocal offset
        key, value = control.build_end_txn_marker(committed, spec.coordinator_epoch)
        ts = int(clock) + 1
        data = writer.build_record_batch(
            [RecordSpec(value=value, key=key, timestamp=ts)],
            base_offset=offset,
            timestamp_type=spec.timestamp_type,
            producer_id=p.producer_id,
            producer_epoch=p.epoch,
            base_sequence=NO_SEQUENCE,
            partition_leader_epoch=spec.partition_leader_epoch,
            is_transactional=True,
            is_control=True,
        )
        info = BatchInfo(
            0, len(data), offset, offset, 1, ts, ts, offset, 2, Compression.NONE, spec.timestamp_type,
            p.producer_id, p.epoch, NO_SEQUENCE, True, True, committed,
        )
        p.txn_first_offset = None
        offset += 1
        return emit(data, info)

    while not done():
        # -- accumulate one producer batch -------------------------------------------------
        batch: list[tuple[bytes | None, bytes | None, tuple[Header, ...], int]] = []
        est_records = 0
        while True:
            rec = pending if pending is not None else next_record()
            pending = None
            rsize = _record_size_estimate(rec[0], rec[1], rec[2])
            if batch:
                est = _RECORD_BATCH_OVERHEAD + (est_records + rsize) * (
                    ratio * _ESTIMATION_FACTOR if compressed else 1.0
                )
                if est > spec.batch_size or rec[3] - batch[0][3] >= spec.linger_ms:
                    pending = rec
                    break
            batch.append(rec)
            est_records += rsize
            if spec.record_count is not None and records_done + len(batch) >= spec.record_count:
                break
        records_done += len(batch)
        last_ts = batch[-1][3]
        append_time = last_ts + spec.log_append_delay_ms
        # -- write it ----------------------------------------------------------------------
        if spec.magic < 2:
            specs = [RecordSpec(value=v, key=k, timestamp=ts) for (k, v, _h, ts) in batch]
            groups = [specs] if compressed else [[s] for s in specs]
            for group in groups:
                data = build_message_set(
                    group, magic=spec.magic, base_offset=offset, compression=spec.compression,
                    timestamp_type=spec.timestamp_type, log_append_time=append_time,
                )
                n = len(group)
                if spec.magic == 0:
                    first_ts = max_ts = -1
                    max_off = offset
                elif lat:
                    first_ts = max_ts = append_time
                    max_off = offset + n - 1
                else:
                    first_ts = group[0].timestamp
                    max_ts = max(s.timestamp for s in group)
                    max_off = offset + max(range(n), key=lambda i: (group[i].timestamp, -i))
                info = BatchInfo(0, len(data), offset, offset + n - 1, n, first_ts, max_ts, max_off,
                                 spec.magic, spec.compression, ts_type)
                offset += n
                yield emit(data, info)
            continue
        p = producers[rng.randrange(len(producers))]
        if spec.transactional and p.txn_first_offset is None:
            p.txn_first_offset = offset
            p.txn_batches_left = max(1, int(rng.expovariate(1.0 / spec.batches_per_transaction)) + 1)
        specs = [RecordSpec(value=v, key=k, timestamp=ts, headers=h) for (k, v, h, ts) in batch]
        data = writer.build_record_batch(
            specs,
            base_offset=offset,
            compression=spec.compression,
            timestamp_type=spec.timestamp_type,
            producer_id=p.producer_id if use_pid else NO_PRODUCER_ID,
            producer_epoch=p.epoch if use_pid else NO_PRODUCER_EPOCH,
            base_sequence=p.sequence if use_pid else NO_SEQUENCE,
            partition_leader_epoch=spec.partition_leader_epoch,
            is_transactional=spec.transactional,
            log_append_time=append_time if lat else None,
        )
        n = len(batch)
        max_ts = append_time if lat else max(r[3] for r in batch)
        max_off = offset + max(range(n), key=lambda i: (batch[i][3], -i)) if not lat else offset + n - 1
        info = BatchInfo(
            0, len(data), offset, offset + n - 1, n, batch[0][3], max_ts, max_off, 2, spec.compression,
            spec.timestamp_type,
            p.producer_id if use_pid else NO_PRODUCER_ID,
            p.epoch if use_pid else NO_PRODUCER_EPOCH,
            p.sequence if use_pid else NO_SEQUENCE,
            spec.transactional, False, None, est_records,
        )
        if compressed and est_records:
            observed = (len(data) - _RECORD_BATCH_OVERHEAD) / est_records
            if observed > ratio:
                ratio = max(ratio + _RATIO_DETERIORATE_STEP, observed)
            elif observed < ratio:
                ratio = max(ratio - _RATIO_IMPROVING_STEP, observed)
        if use_pid:
            p.sequence = (p.sequence + n) & 0x7FFFFFFF  # DefaultRecordBatch.incrementSequence
        offset += n
        yield emit(data, info)
        if spec.transactional:
            p.txn_batches_left -= 1
            if p.txn_batches_left <= 0:
                yield marker(p, rng.random() >= spec.abort_ratio)
    for p in producers:
        if p.txn_first_offset is not None:
            yield marker(p, rng.random() >= spec.abort_ratio)


def _collect(spec: RecordDataSpec, sink, keep_batches: bool) -> SegmentInfo:
    info = SegmentInfo(next_offset=spec.base_offset)
    open_txn: dict[int, int] = {}
    for data, b in iter_segment(spec):
        sink(data)
        info.size += len(data)
        info.batch_count += 1
        if not b.is_control:
            info.record_count += b.record_count
        info.next_offset = b.last_offset + 1
        info.max_timestamp = max(info.max_timestamp, b.max_timestamp)
        if keep_batches:
            info.batches.append(b)
        if b.is_transactional and not b.is_control:
            open_txn.setdefault(b.producer_id, b.base_offset)
        elif b.is_control:
            first = open_txn.pop(b.producer_id)
            if b.control_committed is False:
                info.aborted_transactions.append(AbortedTransaction(b.producer_id, first, b.last_offset))
    return info


def write_segment(
    out: BinaryIO | str | Path, spec: RecordDataSpec, *, keep_batches: bool = True
) -> SegmentInfo:
    """Write the segment to a binary file object or a path (streaming); return what was written."""
    if isinstance(out, (str, Path)):
        with open(out, "wb", buffering=1 << 20) as f:
            return _collect(spec, f.write, keep_batches)
    return _collect(spec, out.write, keep_batches)


def generate_segment(spec: RecordDataSpec) -> tuple[bytes, SegmentInfo]:
    """The whole segment in memory (for tests and small samples)."""
    parts: list[bytes] = []
    info = _collect(spec, parts.append, True)
    return b"".join(parts), info
