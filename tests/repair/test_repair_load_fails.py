"""A segment whose producer state Kafka's load refuses before the first invalid batch: the repair cuts
nothing there.

Kafka 4.4.0's ``LogSegment.recover`` truncates only at a batch failing ``ensureValid`` or whose records
throw ``CorruptRecordException``/``InvalidRecordException``; a control record of an unknown type with a
producer id (IllegalArgumentException from ``EndTransactionMarker.deserialize``) or a non-transactional
batch inside an open transaction (InvalidTxnStateException) is not caught there, and the broker's load of
the partition fails (tests/formats/test_producer_state_kafka.py has Kafka's own classes say so). Here the
segment holds such a batch, valid batches after it, and a batch with a bad CRC after those: ``scan
--deep`` finds LOG_CORRUPT at the CRC. The broker would never truncate at the refused batch, so the plan
must not either: the finding is left unrepaired with Kafka's exception named, and every byte stays.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.formats.control import build_control_key
from logdoctor.formats.record_types import RecordSpec
from logdoctor.formats.writer import build_record_batch
from logdoctor.repair import plan_repair

T0 = 1_700_000_000_000


def _data(offset: int, pid: int, *, txn: bool) -> bytes:
    return build_record_batch(
        [RecordSpec(key=b"k%d" % offset, value=b"v" * 40, timestamp=T0 + offset)], base_offset=offset,
        producer_id=pid, producer_epoch=0, base_sequence=offset, is_transactional=txn,
    )  # fmt: skip


def _log_dir(tmp_path: Path, refused: str) -> tuple[Path, Path, bytes]:
    log_dir = tmp_path / "kafka-logs"
    folder = log_dir / "t-0"
    folder.mkdir(parents=True)
    if refused == "unknown-control-type":
        key = build_control_key(5)  # KRAFT_VERSION: a type no transaction marker has
        bad = build_record_batch(
            [RecordSpec(key=key, value=b"\0" * 6, timestamp=T0 + 1)], base_offset=1, producer_id=7,
            producer_epoch=0, is_transactional=True, is_control=True,
        )  # fmt: skip
    else:  # a non-transactional batch of producer 7 while its transaction is open
        bad = _data(1, 7, txn=False)
    crc_bad = bytearray(_data(4, 9, txn=False))
    crc_bad[-1] ^= 0xFF
    log = _data(0, 7, txn=True) + bad + _data(2, 8, txn=False) + _data(3, 8, txn=False) + bytes(crc_bad)
    path = folder / "00000000000000000000.log"
    path.write_bytes(log)
    return log_dir, path, log


@pytest.mark.parametrize("refused", ["unknown-control-type", "non-transactional-in-transaction"])
def test_no_cut_where_the_brokers_load_fails(tmp_path: Path, refused: str) -> None:
    log_dir, path, log = _log_dir(tmp_path, refused)
    report = scan([log_dir], ScanOptions(depth=Depth.DEEP), jobs=1)
    assert any(f.code == "LOG_CORRUPT" and f.path == str(path) for f in report.findings), report.findings
    plan, _ = plan_repair([log_dir], backup_dir=str(tmp_path / "backup"), report=report, jobs=1, deep=True)
    assert not [a for a in plan.actions if a.target == str(path) and "truncat" in a.kind], plan.actions
    why = [u.why for u in plan.unrepaired if u.code == "LOG_CORRUPT" and u.path == str(path)]
    exception = {"unknown-control-type": "IllegalArgumentException"}.get(refused, "InvalidTxnStateException")
    assert why and exception in why[0], plan.unrepaired
    assert path.read_bytes() == log
