"""TRANSACTION_STATE_MISMATCH closed-in-log under transactions V2 (KIP-890): the coordinator bumps the
producer epoch when it ends a transaction and the markers carry the bumped epoch
(K: transaction-coordinator/src/main/java/org/apache/kafka/coordinator/transaction/TransactionMetadata.java
``prepareAbortOrCommit``, server-common/.../TransactionVersion.java ``supportsEpochBump``: level >= 2,
tag 4.2.0). So a coordinator still Ongoing at epoch e whose partition already holds the marker at e + 1 is
the closed-in-log case; under V0/V1 a producer at e + 1 is another session, not this transaction's marker.

``__transaction_state`` values are written from Kafka's JSON (tests/kafka_schemas.py); the data partition is
a transactional batch at epoch e and a COMMIT marker at e + 1.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

import kafka_schemas as ks
from logdoctor.checks.context import ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.formats.control import build_end_txn_marker
from logdoctor.formats.record_types import RecordSpec
from logdoctor.formats.writer import build_record_batch

ONGOING = 1
PID, EPOCH, START_MS = 8001, 4, 1_710_000_000_000


def _txn_state(tv: int) -> tuple[bytes, bytes]:
    key_spec = ks.Spec(ks.load("transaction-coordinator/TransactionLogKey.json"))
    value_spec = ks.Spec(ks.load("transaction-coordinator/TransactionLogValue.json"))
    key = struct.pack(">h", 0) + ks.write(key_spec, {"transactional_id": "orders-app"}, 0)
    value = {
        "producer_id": PID,
        "previous_producer_id": -1,
        "next_producer_id": -1,
        "producer_epoch": EPOCH,
        "transaction_timeout_ms": 60000,
        "transaction_status": ONGOING,
        "transaction_partitions": [{"topic": "orders", "partition_ids": [0]}],
        "transaction_last_update_timestamp_ms": START_MS,
        "transaction_start_timestamp_ms": START_MS,
        "client_transaction_version": tv,
    }
    return key, struct.pack(">h", 1) + ks.write(value_spec, value, 1)


def _log_dir(tmp_path: Path, tv: int) -> Path:
    root = tmp_path / "kafka-logs"
    state = root / "__transaction_state-0"
    state.mkdir(parents=True)
    k, v = _txn_state(tv)
    state.joinpath("00000000000000000000.log").write_bytes(
        build_record_batch([RecordSpec(value=v, key=k, timestamp=START_MS)], base_offset=0)
    )
    orders = root / "orders-0"
    orders.mkdir()
    data = build_record_batch(
        [RecordSpec(value=b"x", timestamp=START_MS + 10)], base_offset=0, producer_id=PID,
        producer_epoch=EPOCH, base_sequence=0, is_transactional=True,
    )
    mk, mv = build_end_txn_marker(True, 0)
    marker = build_record_batch(
        [RecordSpec(value=mv, key=mk, timestamp=START_MS + 20)], base_offset=1, producer_id=PID,
        producer_epoch=EPOCH + 1, is_transactional=True, is_control=True,
    )
    orders.joinpath("00000000000000000000.log").write_bytes(data + marker)
    return root


def _mismatches(root: Path) -> list:
    rep = scan([root], ScanOptions(), jobs=1)
    return [f for f in rep.findings if f.code == "TRANSACTION_STATE_MISMATCH"]


def test_tv2_marker_at_the_bumped_epoch_is_closed_in_log(tmp_path: Path) -> None:
    ks.require()
    (f,) = _mismatches(_log_dir(tmp_path, tv=2))
    d = f.details
    assert (d["case"], d["producer_id"], d["producer_epoch"], d["coordinator_state"]) == (
        "closed-in-log", PID, EPOCH, "Ongoing"
    )


@pytest.mark.parametrize("tv", [0, 1])
def test_before_tv2_a_later_epoch_is_not_this_transactions_marker(tmp_path: Path, tv: int) -> None:
    ks.require()
    assert [f.details["case"] for f in _mismatches(_log_dir(tmp_path, tv=tv))] == []
