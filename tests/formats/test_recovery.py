from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import realworld
from logdoctor.errors import CorruptRecordError, TruncatedError
from logdoctor.formats import index as ix
from logdoctor.formats.control import build_end_txn_marker
from logdoctor.formats.index import AbortedTxn, OffsetEntry, TimeEntry
from logdoctor.formats.record_types import RecordSpec
from logdoctor.formats.records import scan_batches
from logdoctor.formats.recovery import rebuild_indexes
from logdoctor.formats.writer import build_message_set, build_record_batch


def _value_len_for_batch_size(size: int) -> int:
    for n in range(size):
        if len(build_record_batch([RecordSpec(value=b"v" * n, timestamp=1)], base_offset=0)) == size:
            return n
    raise AssertionError(size)


def _batch(offset: int, ts: int, n: int) -> bytes:
    return build_record_batch([RecordSpec(value=b"v" * n, timestamp=ts)], base_offset=offset)


def test_index_interval_is_strictly_greater_and_first_batch_never_indexed():
    """1024-byte batches: at batch 4, validBytes - lastIndexEntry == 4096, not > 4096: no entry."""
    n = _value_len_for_batch_size(1024)
    timestamps = [100, 105, 103, 110, 108, 120, 119, 118, 117, 116, 130, 90]
    log = b"".join(_batch(base, ts, n) for base, ts in zip(range(50, 62), timestamps, strict=True))
    r = rebuild_indexes(log, 50)
    assert r.error is None and r.valid_bytes == len(log) == 12 * 1024
    assert r.offset_entries == [OffsetEntry(55, 5 * 1024), OffsetEntry(60, 10 * 1024)]
    # time entries: (max timestamp so far, the last offset of the batch carrying it) at each index
    # entry when it grows, then the final append of recover
    assert r.time_entries == [TimeEntry(120, 55), TimeEntry(130, 60)]
    assert r.offset_index == bytes.fromhex("00000005 00001400 0000000a 00002800".replace(" ", ""))
    assert len(r.time_index) == 24  # trimmed, not preallocated
    assert r.max_timestamp == 130 and r.offset_of_max_timestamp == 60 and r.next_offset == 62


def test_final_time_append_when_no_index_entry():
    log = _batch(0, 500, 10) + _batch(1, 700, 10) + _batch(2, 600, 10)
    r = rebuild_indexes(log, 0)
    assert r.offset_entries == []
    assert r.time_entries == [TimeEntry(700, 1)]


def test_small_interval_indexes_every_batch_but_the_first():
    batches = [_batch(i * 3, 1000 + i, 5) for i in range(6)]
    log = b"".join(batches)
    r = rebuild_indexes(log, 0, index_interval_bytes=0)
    positions = np.cumsum([0] + [len(b) for b in batches[:-1]])
    assert r.offset_entries == [OffsetEntry(i * 3, int(positions[i])) for i in range(1, 6)]


def test_v0_messages_give_an_empty_time_index_and_v1_a_full_one():
    v0 = build_message_set([RecordSpec(value=b"x" * 300) for _ in range(40)], magic=0, base_offset=0)
    r0 = rebuild_indexes(v0, 0)
    assert r0.error is None and r0.time_index == b"" and r0.offset_entries
    specs = [RecordSpec(value=b"x" * 300, timestamp=10 + i) for i in range(40)]
    v1 = build_message_set(specs, magic=1, base_offset=0)
    r1 = rebuild_indexes(v1, 0)
    assert r1.time_entries[-1] == TimeEntry(49, 39)


def _txn(offset, pid, n=1, ts=1000):
    return build_record_batch(
        [RecordSpec(value=b"t", timestamp=ts) for _ in range(n)],
        base_offset=offset,
        producer_id=pid,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )


def _marker(offset, pid, committed):
    key, value = build_end_txn_marker(committed, 3)
    return build_record_batch(
        [RecordSpec(key=key, value=value, timestamp=2000)],
        base_offset=offset,
        producer_id=pid,
        producer_epoch=0,
        is_transactional=True,
        is_control=True,
    )


def test_txn_index_and_last_stable_offset():
    log = b"".join(
        [
            _txn(100, 1, n=2),  # pid 1: 100-101
            _txn(102, 2),  # pid 2 opens at 102
            _marker(103, 1, committed=False),  # abort pid 1: LSO = 102 (pid 2 still open)
            _marker(104, 2, committed=True),  # commit: nothing in the txn index
            _txn(105, 3),
            _marker(106, 3, committed=False),  # abort, nothing else open: LSO = 107
            _marker(107, 4, committed=False),  # empty transaction: no entry
            _txn(108, 5),  # left open
        ]
    )
    r = rebuild_indexes(log, 100)
    assert r.error is None
    assert r.aborted_txns == [AbortedTxn(1, 100, 103, 102), AbortedTxn(3, 105, 106, 107)]
    assert ix.parse_txn_index(r.txn_index) == r.aborted_txns
    assert r.open_transactions == {5: 108}


def test_transactions_open_before_the_segment():
    log = _txn(200, 2) + _marker(201, 9, committed=False) + _marker(202, 2, committed=False)
    r = rebuild_indexes(log, 200, open_transactions={9: 150})
    # pid 9 started at 150 (earlier segment); pid 2 is open at 200 when pid 9 aborts
    assert r.aborted_txns == [AbortedTxn(9, 150, 201, 200), AbortedTxn(2, 200, 202, 203)]
    # without the seed the marker of pid 9 completes nothing
    assert rebuild_indexes(log, 200).aborted_txns == [AbortedTxn(2, 200, 202, 203)]


def test_leader_epochs_assigned_as_the_cache():
    log = b"".join(
        build_record_batch([RecordSpec(value=b"a", timestamp=1)], base_offset=o, partition_leader_epoch=e)
        for o, e in [(0, 3), (1, 3), (2, 5), (3, 4), (4, 7)]
    )
    assert rebuild_indexes(log, 0).leader_epochs == [(3, 0), (5, 2), (7, 4)]
    assert rebuild_indexes(log, 0, latest_leader_epoch=5).leader_epochs == [(7, 4)]


def _log_of(k: int) -> list[bytes]:
    return [_batch(i, 1000 + i, 1500) for i in range(k)]


def test_crc_error_stops_recovery_at_that_batch():
    batches = _log_of(8)
    bad = bytearray(batches[5])
    bad[-1] ^= 0xFF
    log = b"".join(batches[:5]) + bytes(bad) + b"".join(batches[6:])
    r = rebuild_indexes(log, 0, source="seg.log")
    assert isinstance(r.error, CorruptRecordError)
    assert r.error.source == "seg.log" and r.error.position == 5 * len(batches[0])
    assert r.valid_bytes == 5 * len(batches[0]) and r.batch_count == 5
    assert rebuild_indexes(b"".join(batches[:5]), 0).offset_index == r.offset_index


def test_torn_and_zero_tails():
    batches = _log_of(4)
    whole = b"".join(batches)
    torn = rebuild_indexes(whole[:-7], 0)
    assert isinstance(torn.error, TruncatedError) and torn.valid_bytes == 3 * len(batches[0])
    zero = rebuild_indexes(whole + bytes(5000), 0)
    assert isinstance(zero.error, CorruptRecordError) and zero.valid_bytes == len(whole)
    assert zero.offset_index == rebuild_indexes(whole, 0).offset_index
    assert rebuild_indexes(b"", 0).offset_index == b"" and rebuild_indexes(b"", 0).time_index == b""


def test_offset_outside_int32_of_base_is_an_error():
    log = _batch(0, 1, 5) + _batch(2**31 + 5, 2, 5)
    r = rebuild_indexes(log, 0)
    assert isinstance(r.error, CorruptRecordError) and r.valid_bytes == len(_batch(0, 1, 5))


# --- real log dirs -------------------------------------------------------------------------------


def _segments_with_indexes() -> list[Path]:
    return [p for p in realworld.files(suffix=".log") if p.with_suffix(".index").exists()]


def _check_consistent(log: bytes, base: int, index: bytes, timeindex: bytes) -> list[str]:
    """Every real entry is consistent with the log (independent of how it was produced):
    an offset entry (O, P): P starts a batch, and a batch at or after it ends exactly at O;
    a time entry (T, O): O lies in a batch B whose max timestamp is T and T is the running
    max timestamp up to B."""
    batches = scan_batches(log, verify_crc=False).batches
    by_position = {b.position: i for i, b in enumerate(batches)}
    by_last = {b.last_offset: i for i, b in enumerate(batches)}
    running = np.maximum.accumulate(np.array([b.max_timestamp for b in batches] or [0], dtype=np.int64))
    firsts = np.array([b.base_offset for b in batches] or [0], dtype=np.int64)
    problems = []
    for e in ix.parse_offset_index(index, base)[: ix.real_entry_count(index, 8)]:
        i, j = by_position.get(e.position), by_last.get(e.offset)
        if i is None or j is None or j < i:
            problems.append(f"offset entry {e}")
    for e in ix.parse_time_index(timeindex, base)[: ix.real_entry_count(timeindex, 12)]:
        k = int(np.searchsorted(firsts, e.offset, side="right")) - 1
        if k < 0 or not batches[k].base_offset <= e.offset <= batches[k].last_offset:
            problems.append(f"time entry {e}: offset not in the log")
        elif batches[k].max_timestamp != e.timestamp or running[k] != e.timestamp:
            problems.append(f"time entry {e}: timestamp mismatch")
    return problems


@pytest.mark.realworld
@pytest.mark.parametrize("log_path", realworld.params(_segments_with_indexes()))
def test_broker_and_rebuilt_indexes_are_consistent_with_the_log(log_path):
    base = int(log_path.stem)
    log = log_path.read_bytes()
    index = log_path.with_suffix(".index").read_bytes()
    tix = log_path.with_suffix(".timeindex")
    timeindex = tix.read_bytes() if tix.exists() else b""
    assert _check_consistent(log, base, index, timeindex) == []
    rebuilt = rebuild_indexes(log, base, source=str(log_path))
    assert rebuilt.error is None and rebuilt.valid_bytes == len(log)
    assert _check_consistent(log, base, rebuilt.offset_index, rebuilt.time_index) == []
    # a broker index never has more entries than ... the log has batches
    assert ix.real_entry_count(index, 8) <= rebuilt.batch_count


# Broker-written indexes that recovery reproduces byte for byte, and why they qualify:
EQUAL = {
    # Kafka 4.2: KAFKA-806 is fixed, live appends index batch by batch like recovery.
    "kraft-4.2-nomanazeem/__cluster_metadata-0/00000000000000000000": (".index", ".timeindex"),
    "kraft-4.2-nomanazeem/__consumer_offsets-15/00000000000000000000": (".index", ".timeindex"),
    # The group coordinator appends one batch per offset commit: one batch per append call.
    "zk-3.7-nikhildighe-b0/__consumer_offsets-12/00000000000000000000": (".index", ".timeindex"),
    # Same for the offset index on 2.x; its time index keeps the exact record offset of the max
    # timestamp (live-append offsetOfMaxTimestamp), not the batch's last offset, so only the
    # offset index is equal.
    "zk-pre2.8-volodymyrzee/__consumer_offsets-12/00000000000000000000": (".index",),
    "zk-pre2.8-volodymyrzee/__consumer_offsets-18/00000000000000000000": (".index",),
    "zk-pre2.8-volodymyrzee/__consumer_offsets-32/00000000000000000000": (".index",),
}


@pytest.mark.realworld
@pytest.mark.parametrize("stem", sorted(EQUAL))
def test_rebuilt_indexes_equal_broker_written_ones(stem, realworld_dir):
    log_path = realworld_dir / f"{stem}.log"
    rebuilt = rebuild_indexes(log_path.read_bytes(), int(log_path.stem), source=str(log_path))
    produced = {".index": rebuilt.offset_index, ".timeindex": rebuilt.time_index}
    for suffix in EQUAL[stem]:
        broker = log_path.with_suffix(suffix).read_bytes()
        assert broker, "a qualifying index must have entries"
        assert produced[suffix] == broker, suffix


@pytest.mark.realworld
def test_restarts_explain_extra_time_entries(realworld_dir):
    """A broker restart resets the in-memory bytesSinceLastIndexEntry and each clean close appends
    the max timestamp: the 3.5 cluster's __consumer_offsets-14 has no offset entry but 9 time
    entries, recovery makes one offset entry and two time entries; all are consistent."""
    log_path = realworld_dir / "kraft-3.5-greenlemont-n1/__consumer_offsets-14/00000000000000000000.log"
    rebuilt = rebuild_indexes(log_path.read_bytes(), 0)
    broker_time = ix.parse_time_index(log_path.with_suffix(".timeindex").read_bytes(), 0)
    assert log_path.with_suffix(".index").read_bytes() == b""
    assert len(broker_time) == 9 and len(rebuilt.time_entries) == 2
    assert broker_time[-1] == rebuilt.time_entries[-1]  # both end at the segment's max timestamp
