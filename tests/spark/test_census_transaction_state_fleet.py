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

from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

import kafka_schemas as ks
from census_agree import census_findings, census_of_inventories, finding_keys, forensics_copies, scan_keys
from kafka_schemas import txn_record
from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.spark.census import run_census

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("small_census_confs")]

NOW = 1_790_000_000_000
CODES = ("TRANSACTION_STATE_MISMATCH", "TRANSACTION_HANGING")
ONGOING, COMPLETE_COMMIT = 1, 4
TWO_PC = 2**31 - 1


def _write(folder: Path, records) -> None:
    folder.mkdir()
    b = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 20)
    for i, (k, v) in enumerate(records):
        b.append(i, 1710000001000 + i, k, v, [])
    (folder / "00000000000000000000.log").write_bytes(bytes(b.build()))


def _brokers(tmp_path: Path) -> list[str]:
    ks.require()
    dirs = forensics_copies(tmp_path)
    _write(
        dirs[1] / "__transaction_state-0",
        [
            txn_record("billing-app", 7002, 5, ONGOING, 1709989200000, TWO_PC),
            txn_record("payments", 7001, 0, ONGOING, 1710000000860),
        ],
    )
    _write(dirs[0] / "__transaction_state-1", [txn_record("other", 9999, 0, COMPLETE_COMMIT, 1710000000860)])
    return [str(d) for d in dirs]


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
    scanned = scan_keys(report, CODES)
    from_dirs = run_census(spark, dirs, tmp_path / "census", now_ms=NOW)
    rows = census_findings(from_dirs)
    assert finding_keys(rows, CODES) == scanned
    # the census's command for the hanging transaction is no abort: the advice is the application's
    (row,) = [r for r in rows if r["code"] == "TRANSACTION_HANGING"]
    assert "kafka-transactions.sh" not in (row["fix_command"] or "")
    # the same from each broker's inventory
    from_inv = census_of_inventories(spark, dirs, tmp_path, NOW)
    assert finding_keys(census_findings(from_inv), CODES) == scanned
