"""The producer-state table: named logs (and snapshots) whose outcome Kafka 4.4.0's own
``ProducerStateManager`` decides (tests/producer_state_oracle.py; tests/formats/test_producer_state_kafka.py
runs every case through it and through logdoctor's producer state and its callers).

Every log is one segment of v2 batches built with logdoctor's writer; a case with a snapshot has it at the
segment's base offset (where the broker's rebuild loads it from), and Kafka loads it only when it is above
the partition's log start offset (``log_start_offset``, 0 unless given: the log-start-offset-checkpoint).
T0 is the batches' time; a case's ``now_ms`` (None: none) is the moment the snapshot is loaded at
(``producer.id.expiration.ms`` applies)."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from logdoctor.formats.control import EndTxnMarker, build_control_key, control_record_spec
from logdoctor.formats.crc import crc32c
from logdoctor.formats.producer_snapshot import ProducerSnapshotEntry, write_producer_snapshot
from logdoctor.formats.record_types import Compression, RecordSpec, TimestampType
from logdoctor.formats.writer import build_record_batch

T0 = 1_700_000_000_000
HOUR = 3_600_000
DAY = 24 * HOUR
EXPIRATION_MS = DAY  # producer.id.expiration.ms's default


@dataclass(frozen=True)
class Case:
    name: str
    log: bytes
    why: str
    base_offset: int = 0
    snapshot: bytes | None = None  # at base_offset
    now_ms: int | None = None
    expiration_ms: int = EXPIRATION_MS
    log_start_offset: int = 0  # the partition's (log-start-offset-checkpoint)

    @property
    def loaded_snapshot(self) -> bytes | None:
        """The snapshot Kafka loads: only one above the log start offset (ProducerStateManager
        .truncateAndReload deletes the others)."""
        return self.snapshot if self.base_offset > self.log_start_offset else None

    def oracle_input(self) -> tuple[str, bytes, int, bytes | None, int | None, int, int]:
        return (
            self.name, self.log, self.base_offset, self.snapshot, self.now_ms, self.expiration_ms,
            self.log_start_offset,
        )  # fmt: skip


def data(offset: int, pid: int, epoch: int, seq: int, *, n: int = 1, txn: bool = True, ts: int = T0) -> bytes:
    """A data batch of ``n`` records from ``offset`` (sequence ``seq`` on), each at ``ts``."""
    records = [RecordSpec(key=b"k%d" % i, value=b"v%d" % i, timestamp=ts) for i in range(n)]
    return build_record_batch(
        records, base_offset=offset, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
        is_transactional=txn,
    )  # fmt: skip


def marker(
    offset: int, pid: int, epoch: int, *, commit: bool = True, coordinator_epoch: int = 0, ts: int = T0 + 1
) -> bytes:
    value = EndTxnMarker(committed=commit, coordinator_epoch=coordinator_epoch)
    return control(offset, pid, epoch, [control_record_spec(value, timestamp=ts)])


def control(offset: int, pid: int, epoch: int, records: list[RecordSpec], **kwargs) -> bytes:
    kwargs = {"is_transactional": True, "last_offset_delta": 0, **kwargs}
    return build_record_batch(
        records, base_offset=offset, producer_id=pid, producer_epoch=epoch, is_control=True, **kwargs
    )  # fmt: skip


def control_record(key: bytes | None, value: bytes | None) -> RecordSpec:
    return RecordSpec(key=key, value=value, timestamp=T0 + 1)


def control_of_type(offset: int, pid: int, epoch: int, type_id: int) -> bytes:
    """A control batch whose one record's key has ``type_id``, its value a marker's (version 0,
    coordinator epoch 0)."""
    spec = RecordSpec(key=build_control_key(type_id), value=struct.pack(">hi", 0, 0), timestamp=T0 + 1)
    return control(offset, pid, epoch, [spec])


def with_max_timestamp(batch: bytes, max_timestamp: int) -> bytes:
    """``batch`` with another header max timestamp (its CRC made again)."""
    out = bytearray(batch)
    # baseOffset 8, length 4, epoch 4, magic 1, crc 4, attributes 2, lastOffsetDelta 4, baseTimestamp 8
    struct.pack_into(">q", out, 35, max_timestamp)
    out[17:21] = crc32c(memoryview(out)[21:]).to_bytes(4, "big")
    return bytes(out)


def bad_crc(batch: bytes) -> bytes:
    """``batch`` with its last byte (in its records) flipped: the header intact, the CRC no longer matches."""
    return batch[:-1] + bytes([batch[-1] ^ 0xFF])


def entry(pid: int, epoch: int, seq: int, last_offset: int, ts: int, *, txn_first: int = -1, coord: int = 0):
    return ProducerSnapshotEntry(pid, epoch, seq, last_offset, 0, ts, coord, txn_first)


def _cases() -> list[Case]:
    c = []

    def add(name: str, why: str, *batches: bytes, **kw) -> None:
        c.append(Case(name, b"".join(batches), why, **kw))

    add("commit", "a transaction of two batches and its COMMIT marker",
        data(0, 1, 0, 0, n=2), data(2, 1, 0, 2), marker(3, 1, 0))  # fmt: skip
    add("abort", "a transaction and its ABORT marker", data(0, 1, 0, 0, n=2), marker(2, 1, 0, commit=False))
    add(
        "interleaved",
        "two producers' transactions interleaved: each completion's LSO is the other's open first offset",
        data(0, 1, 0, 0), data(1, 2, 0, 0), data(2, 1, 0, 1), marker(3, 1, 0, commit=False),
        marker(4, 2, 0), data(5, 1, 0, 2), data(6, 2, 0, 1), marker(7, 2, 0, commit=False),
        marker(8, 1, 0, commit=False),
    )  # fmt: skip
    add("empty_control_batch", "a control batch with no record inside a transaction ends nothing",
        data(0, 1, 0, 0), control(1, 1, 0, []), data(2, 1, 0, 1), marker(3, 1, 0))  # fmt: skip
    add("bad_crc_in_txn", "a batch whose CRC fails inside a transaction (its header intact)",
        data(0, 1, 0, 0), bad_crc(data(1, 1, 0, 1)), marker(2, 1, 0),
        data(3, 2, 0, 0, txn=False))  # fmt: skip
    add("control_type_5", "a control batch of a producer whose key has type 5 (KRAFT_VERSION)",
        data(0, 1, 0, 0), control_of_type(1, 1, 0, 5), marker(2, 1, 0))  # fmt: skip
    add("control_type_7", "a control batch of a producer whose key has type 7 (unknown to 4.4.0)",
        data(0, 1, 0, 0), control_of_type(1, 1, 0, 7), marker(2, 1, 0))  # fmt: skip
    add("non_txn_in_open_txn", "a non-transactional batch of a producer whose transaction is open",
        data(0, 1, 0, 0), data(1, 1, 0, 1, txn=False), marker(2, 1, 0))  # fmt: skip
    add("marker_unknown_producer", "a marker of a producer never seen, then another producer's batch",
        marker(0, 9, 3, coordinator_epoch=4), data(1, 1, 0, 0, txn=False))  # fmt: skip
    add(
        "tv2_epoch_bump",
        "transaction version 2: the marker's epoch is the data's + 1, the next transaction at that epoch",
        data(0, 1, 5, 0, n=2), marker(2, 1, 6), data(3, 1, 6, 0), marker(4, 1, 7, commit=False),
    )  # fmt: skip
    add(
        "fencing",
        "a batch at a lower epoch after a higher one, then a marker at the lower epoch",
        data(0, 1, 3, 0), data(1, 1, 2, 0), marker(2, 1, 3), data(3, 1, 3, 1), marker(4, 1, 1, commit=False),
    )  # fmt: skip
    add("sequence_gap", "an idempotent producer's sequences 0, then 5",
        data(0, 1, 0, 0, txn=False), data(1, 1, 0, 5, txn=False))  # fmt: skip
    add("duplicate_sequence", "an idempotent producer's sequence 0 twice",
        data(0, 1, 0, 0, n=2, txn=False), data(2, 1, 0, 0, n=2, txn=False))  # fmt: skip
    add(
        "coordinator_epoch_backwards",
        "a marker of coordinator epoch 5, then one of 3",
        data(0, 1, 0, 0), marker(1, 1, 0, coordinator_epoch=5), data(2, 1, 0, 1),
        marker(3, 1, 0, commit=False, coordinator_epoch=3),
    )  # fmt: skip
    snap = write_producer_snapshot([
        entry(1, 0, 4, 9, T0 - HOUR, txn_first=5, coord=2),
        entry(2, 1, 7, 8, T0 - HOUR),
    ])  # fmt: skip
    add(
        "snapshot_open_txn",
        "a snapshot at 10 holding producer 1's transaction open since 5; its data and marker in the log",
        data(10, 1, 0, 5), marker(11, 1, 0, commit=False, coordinator_epoch=2), data(12, 2, 1, 8, txn=False),
        base_offset=10, snapshot=snap, now_ms=T0,
    )  # fmt: skip
    add(
        "snapshot_at_first_segment",
        "snapshot_open_txn's snapshot at the first segment's base (10), no log start checkpoint; only "
        "producer 3's batch in the log",
        data(10, 3, 0, 0, txn=False),
        base_offset=10, snapshot=snap, now_ms=T0,
    )  # fmt: skip
    add(
        "snapshot_at_log_start",
        "snapshot_open_txn's snapshot at the log start offset (10); producer 1's data at 10, no marker",
        data(10, 1, 0, 5), data(11, 3, 0, 0, txn=False),
        base_offset=10, snapshot=snap, now_ms=T0, log_start_offset=10,
    )  # fmt: skip
    snap = write_producer_snapshot([
        entry(1, 0, 3, 6, T0 - 2 * DAY),  # past the expiration
        entry(2, 0, 2, 7, T0 - HOUR),  # within it
        entry(3, 0, 0, 8, T0 - 2 * DAY, txn_first=8),  # an open transaction: never expired
        entry(4, 0, 0, 9, T0 - DAY),  # exactly the expiration ago (>= expires)
    ])  # fmt: skip
    add(
        "snapshot_expiry",
        "a snapshot loaded at T0: producers idle 2 days, 1 hour, 2 days with an open transaction, 1 day",
        marker(10, 3, 0), data(11, 5, 0, 0, txn=False),
        base_offset=10, snapshot=snap, now_ms=T0,
    )  # fmt: skip
    add(
        "marker_timestamp_create_time",
        "a marker whose record timestamp (T0+5) is below its header's max timestamp (T0+100)",
        data(0, 1, 0, 0), with_max_timestamp(marker(1, 1, 0, ts=T0 + 5), T0 + 100),
    )  # fmt: skip
    add(
        "marker_timestamp_log_append_time",
        "a LogAppendTime marker: record timestamp T0+7, header max timestamp T0+200",
        data(0, 1, 0, 0),
        control(1, 1, 0, [control_record_spec(EndTxnMarker(True, 0), timestamp=T0 + 7)],
                timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=T0 + 200),
    )  # fmt: skip
    add("data_max_timestamp", "an idempotent batch whose record has T0, its header max timestamp T0+90",
        with_max_timestamp(data(0, 1, 0, 0, txn=False), T0 + 90))  # fmt: skip
    short_key = RecordSpec(key=b"\x00\x00", value=struct.pack(">hi", 0, 0), timestamp=T0 + 1)
    add("control_short_key", "a control batch whose record's key is 2 bytes (a control key has 4)",
        data(0, 1, 0, 0), control(1, 1, 0, [short_key]), marker(2, 1, 0))  # fmt: skip
    commit_key, abort_key = build_control_key(1), build_control_key(0)
    add("control_not_transactional", "a COMMIT marker in a control batch whose transactional bit is unset",
        data(0, 1, 0, 0), control(1, 1, 0, [control_record(commit_key, struct.pack(">hi", 0, 1))],
                                  is_transactional=False))  # fmt: skip
    add("marker_two_records", "a control batch of a COMMIT record then an ABORT record",
        data(0, 1, 0, 0),
        control(1, 1, 0, [control_record(commit_key, struct.pack(">hi", 0, 1)),
                          control_record(abort_key, struct.pack(">hi", 0, 2))], last_offset_delta=1),
        data(3, 1, 0, 1))  # fmt: skip
    add("marker_compressed", "a gzip-compressed control batch holding a COMMIT marker",
        data(0, 1, 0, 0), control(1, 1, 0, [control_record(commit_key, struct.pack(">hi", 0, 3))],
                                  compression=Compression.GZIP))  # fmt: skip
    add("marker_value_version_5", "a COMMIT marker whose value has version 5 (4.4.0 knows 0)",
        data(0, 1, 0, 0), control(1, 1, 0, [control_record(commit_key, struct.pack(">hi", 5, 4))]),
        )  # fmt: skip
    add("marker_value_version_negative", "a COMMIT marker whose value has version -1",
        data(0, 1, 0, 0), control(1, 1, 0, [control_record(commit_key, struct.pack(">hi", -1, 4))]),
        data(2, 2, 0, 0, txn=False))  # fmt: skip
    add("marker_value_short", "a COMMIT marker whose value is 2 bytes (a version, no coordinator epoch)",
        data(0, 1, 0, 0), control(1, 1, 0, [control_record(commit_key, struct.pack(">h", 0))]),
        data(2, 2, 0, 0, txn=False))  # fmt: skip
    add("marker_value_null", "a COMMIT marker record whose value is null",
        data(0, 1, 0, 0), control(1, 1, 0, [control_record(commit_key, None)]),
        data(2, 2, 0, 0, txn=False))  # fmt: skip
    value = struct.pack(">hi", 0, 4)
    key_v1, key_v_negative = struct.pack(">hh", 1, 1), struct.pack(">hh", -1, 1)
    add("control_key_version_1", "a COMMIT marker whose key has version 1 (4.4.0 knows 0)",
        data(0, 1, 0, 0), control(1, 1, 0, [control_record(key_v1, value)]))  # fmt: skip
    add("control_key_version_negative", "a COMMIT marker whose key has version -1",
        data(0, 1, 0, 0), control(1, 1, 0, [control_record(key_v_negative, value)]),
        data(2, 2, 0, 0, txn=False))  # fmt: skip
    add("control_key_null", "a control batch whose record's key is null",
        data(0, 1, 0, 0), control(1, 1, 0, [control_record(None, struct.pack(">hi", 0, 4))]),
        data(2, 2, 0, 0, txn=False))  # fmt: skip
    add("sequence_wrap", "an idempotent batch of 2 records from sequence 2**31 - 1 (the last wraps to 0)",
        data(0, 1, 0, 2**31 - 1, n=2, txn=False))  # fmt: skip
    return c


CASES: list[Case] = _cases()
