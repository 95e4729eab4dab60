"""Issue 47: TRANSACTION_STATE_MISMATCH and the two-phase-commit advice are one rule for a broker and a
fleet. In a real cluster the coordinator's ``__transaction_state`` partitions sit on other brokers than the
partitions their transactions write to; the scan of the brokers together compares the two, and the census,
which scans each broker alone on the executors, must give the same findings (code, path, offset, message,
fix), from log dirs and from inventories.

Data: ../shared/forensics (written by Kafka's classes; its README: billing-0 on broker-1 only, producer
7002 (epoch 5) holds a transaction open since 341, producer 7001 (epoch 0) committed twice, its last write
the marker at 881, timestamps 1710000000000 + offset) with ``__transaction_state`` partitions written from
Kafka's JSON schemas (tests/kafka_schemas.py) by kafka-python's builder:

- broker-2's ``__transaction_state-0``: ``billing-app`` (producer 7002, epoch 5) Ongoing with a
  two-phase-commit timeout (Integer.MAX_VALUE, KIP-939), and ``payments`` (7001, epoch 0) Ongoing since
  before 7001's last commit in billing-0 (its marker is already there: closed-in-log);
- broker-1's ``__transaction_state-1``: ``other`` (producer 9999), CompleteCommit.

What the scan of the three together says, worked out by hand: billing-0's hanging transaction of 7002 is
open for its coordinator too (no mismatch) and is a two-phase-commit transaction (the KIP-939 advice, not
an abort); 7001's transaction is closed-in-log. A census judging each broker alone said instead that
7002's open transaction is unknown to the coordinator (broker-1 sees only ``other``), missed the
closed-in-log case, and advised the abort.
"""

from __future__ import annotations

import struct
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

import kafka_schemas as ks
import realworld
from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.inventory import build_inventory, write_inventory
from logdoctor.checks.scanner import scan
from logdoctor.spark.census import run_census

pytestmark = pytest.mark.spark

NOW = 1_790_000_000_000
CODES = ("TRANSACTION_STATE_MISMATCH", "TRANSACTION_HANGING")
ONGOING, COMPLETE_COMMIT = 1, 4
TWO_PC = 2**31 - 1


def _txn(tid: str, pid: int, epoch: int, status: int, start_ms: int, timeout_ms: int = 60000):
    key_spec = ks.Spec(ks.load("transaction-coordinator/TransactionLogKey.json"))
    value_spec = ks.Spec(ks.load("transaction-coordinator/TransactionLogValue.json"))
    key = struct.pack(">h", 0) + ks.write(key_spec, {"transactional_id": tid}, 0)
    value = {
        "producer_id": pid,
        "producer_epoch": epoch,
        "transaction_timeout_ms": timeout_ms,
        "transaction_status": status,
        "transaction_partitions": [{"topic": "billing", "partition_ids": [0]}],
        "transaction_last_update_timestamp_ms": start_ms,
        "transaction_start_timestamp_ms": start_ms,
    }
    return key, struct.pack(">h", 0) + ks.write(value_spec, value, 0)


def _write(folder: Path, records) -> None:
    folder.mkdir()
    b = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 20)
    for i, (k, v) in enumerate(records):
        b.append(i, 1710000001000 + i, k, v, [])
    (folder / "00000000000000000000.log").write_bytes(bytes(b.build()))


def _brokers(tmp_path: Path) -> list[str]:
    ks.require()
    root = realworld.require_forensics()
    dirs = [
        realworld.writable_copy(root / f"broker-{n}" / "kafka-logs", tmp_path / f"broker-{n}" / "kafka-logs")
        for n in (1, 2, 3)
    ]
    _write(
        dirs[1] / "__transaction_state-0",
        [
            _txn("billing-app", 7002, 5, ONGOING, 1709989200000, TWO_PC),
            _txn("payments", 7001, 0, ONGOING, 1710000000860),
        ],
    )
    _write(dirs[0] / "__transaction_state-1", [_txn("other", 9999, 0, COMPLETE_COMMIT, 1710000000860)])
    return [str(d) for d in dirs]


def _keys(findings) -> Counter:
    keys = ((f["code"], f["path"], f["offset"], f["message"], f["fix"]) for f in findings)
    return Counter(k for k in keys if k[0] in CODES)


def test_census_judges_the_coordinators_state_as_the_scan_of_the_brokers_together(spark, tmp_path: Path):
    dirs = _brokers(tmp_path)
    report = scan(dirs, ScanOptions(Depth.DEFAULT, NOW), jobs=1)
    found = [f for f in report.findings if f.code in CODES]
    billing = str(Path(dirs[0]) / "billing-0")
    # the facts above, independently of the census
    assert sorted((f.code, f.path, (f.details or {}).get("case")) for f in found) == [
        ("TRANSACTION_HANGING", f"{billing}/{341:020d}.log", None),
        ("TRANSACTION_STATE_MISMATCH", billing, "closed-in-log"),
    ]
    (hanging,) = [f for f in found if f.code == "TRANSACTION_HANGING"]
    assert "two-phase-commit" in hanging.fix and "billing-app" in hanging.fix
    scanned = _keys(
        {"code": f.code, "path": f.path, "offset": f.offset, "message": f.message, "fix": f.fix}
        for f in found
    )
    from_dirs = run_census(spark, dirs, tmp_path / "census", now_ms=NOW)
    rows = pq.read_table(from_dirs.tables["findings"]).to_pylist()
    assert _keys(rows) == scanned
    # the census's command for the hanging transaction is no abort: the advice is the application's
    (row,) = [r for r in rows if r["code"] == "TRANSACTION_HANGING"]
    assert "kafka-transactions.sh" not in (row["fix_command"] or "")
    # the same from each broker's inventory
    inv = tmp_path / "inventories"
    inv.mkdir()
    for i, d in enumerate(dirs):
        write_inventory(build_inventory([d], Depth.DEFAULT, now_ms=NOW), str(inv / f"b{i}.parquet"))
    from_inv = run_census(spark, [str(inv)], tmp_path / "census-inv", now_ms=NOW)
    assert _keys(pq.read_table(from_inv.tables["findings"]).to_pylist()) == scanned
