"""TRANSACTION_STATE_MISMATCH: a copy of ../shared/forensics broker-1 with a ``__transaction_state-0``
beside it whose records are written independently of logdoctor (keys and values from Kafka's JSON schemas
by tests/kafka_schemas.py, the batch by kafka-python's builder). The README's facts say which producer holds
which transaction in billing-0: 7002 (epoch 5) open since 341, 7001 (epoch 0) committed twice, its last
write the marker at 881 (timestamps 1710000000000 + offset)."""

from __future__ import annotations

from pathlib import Path

from kafka.record.default_records import DefaultRecordBatchBuilder

import kafka_schemas as ks
import realworld
from kafka_schemas import txn_record
from logdoctor.checks.context import ScanOptions
from logdoctor.checks.scanner import scan

COMPLETE_ABORT, ONGOING = 5, 1


def _with_transaction_state(tmp_path: Path, records: list[tuple[bytes, bytes]]) -> Path:
    root = realworld.require_forensics()
    copy = realworld.writable_copy(root / "broker-1" / "kafka-logs", tmp_path / "kafka-logs")
    folder = copy / "__transaction_state-0"
    folder.mkdir()
    b = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 20)
    for i, (k, v) in enumerate(records):
        b.append(i, 1710000001000 + i, k, v, [])
    (folder / "00000000000000000000.log").write_bytes(bytes(b.build()))
    return copy


def _mismatches(copy: Path) -> list:
    rep = scan([copy], ScanOptions(), jobs=1)
    return [f for f in rep.findings if f.code == "TRANSACTION_STATE_MISMATCH"]


def test_the_coordinator_done_with_a_transaction_the_log_holds_open(tmp_path: Path) -> None:
    ks.require()
    # billing-app: producer 7002 completed (aborted) for the coordinator, open in billing-0 since 341
    done = txn_record("billing-app", 7002, 5, COMPLETE_ABORT, 1709989200000)
    copy = _with_transaction_state(tmp_path, [done])
    (f,) = _mismatches(copy)
    d = f.details
    got = (d["case"], d["producer_id"], d["producer_epoch"], d["first_offset"])
    assert got == ("open-in-log", 7002, 5, 341)
    assert (d["transactional_id"], d["coordinator_state"]) == ("billing-app", "CompleteAbort")
    assert f.severity.label == "error" and "--start-offset 341" in f.fix


def test_the_coordinator_open_with_the_marker_already_written(tmp_path: Path) -> None:
    ks.require()
    records = [
        # 7002 still open for the coordinator too: agreement, nothing
        txn_record("billing-app", 7002, 5, ONGOING, 1709989200000),
        # 7001 open for the coordinator since before its last commit in billing-0: the marker is there
        txn_record("payments", 7001, 0, ONGOING, 1710000000860),
        # a producer that never wrote to billing-0: nothing to compare
        txn_record("other", 9999, 0, ONGOING, 1710000000860),
    ]
    copy = _with_transaction_state(tmp_path, records)
    (f,) = _mismatches(copy)
    d = f.details
    assert (d["case"], d["transactional_id"], d["producer_id"], d["coordinator_state"]) == (
        "closed-in-log", "payments", 7001, "Ongoing"
    )
    assert f.path.endswith("/billing-0")


def test_without_transaction_state_nothing_is_compared(tmp_path: Path) -> None:
    root = realworld.require_forensics()
    rep = scan([root / "broker-1" / "kafka-logs"], ScanOptions(), jobs=1)
    assert not [f for f in rep.findings if f.code == "TRANSACTION_STATE_MISMATCH"]
    # the producer state is kept only for this comparison
    assert all(not p.producers for p in rep.partitions)


def test_a_hanging_two_phase_commit_transaction_gets_its_own_advice(tmp_path: Path) -> None:
    """KIP-939: a transaction whose timeout is Integer.MAX_VALUE is never aborted by the coordinator
    (TransactionStateManager.timedOutTransactions); its TRANSACTION_HANGING must not advise an abort."""
    ks.require()
    copy = _with_transaction_state(tmp_path, [txn_record("billing-app", 7002, 5, ONGOING, 1709989200000)])
    plain = {f.details["producer_id"]: f for f in scan([copy], ScanOptions(), jobs=1).findings
             if f.code == "TRANSACTION_HANGING"}
    assert "kafka-transactions.sh --bootstrap-server HOST:PORT abort" in plain[7002].fix
    assert "two_phase_commit" not in plain[7002].details
    two_pc = _with_transaction_state(
        tmp_path / "2pc", [txn_record("billing-app", 7002, 5, ONGOING, 1709989200000, timeout_ms=2**31 - 1)]
    )
    hanging = {f.details["producer_id"]: f for f in scan([two_pc], ScanOptions(), jobs=1).findings
               if f.code == "TRANSACTION_HANGING"}
    f = hanging[7002]
    assert f.details["two_phase_commit"] is True and f.details["transactional_id"] == "billing-app"
    assert "Do not abort it" in f.fix and "command_for_running_cluster" not in f.details
    assert f.message == plain[7002].message.replace(str(tmp_path / "kafka-logs"),
                                                    str(tmp_path / "2pc" / "kafka-logs"))
