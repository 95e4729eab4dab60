"""TRANSACTION_HANGING and the batches that end a transaction: a control batch ends its producer's
transaction only when it holds a marker (K:storage/.../internals/log/ProducerAppendInfo.java ``append``: "An
empty control batch means the entire transaction has been cleaned from the log, so no need to append"),
the rule of the readers' walk too (:mod:`logdoctor.logdir.transactions`). The log is built here: one
transactional batch of producer 42, then a control batch of that producer with no record (as the cleaner
leaves a marker's header), then, two hours later, another producer's batch."""

from __future__ import annotations

from pathlib import Path

import pytest

from logdoctor.checks.context import ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.formats.control import EndTxnMarker, control_record_spec
from logdoctor.formats.record_types import RecordSpec
from logdoctor.formats.writer import build_record_batch
from logdoctor.logdir.discovery import discover
from logdoctor.logdir.transactions import OPEN, partition_transactions

T0 = 1_700_000_000_000
HOURS_2 = 2 * 3600 * 1000


def _log_dir(tmp_path: Path, marker: bool) -> Path:
    """A log dir of one partition ``t-0``: producer 42's transaction from offset 0, a control batch of 42 at
    offset 1 (``marker``: a COMMIT marker; else no record), producer 43's plain batch at offset 2."""
    log_dir = tmp_path / "kafka-logs"
    folder = log_dir / "t-0"
    folder.mkdir(parents=True)
    data = build_record_batch(
        [RecordSpec(key=b"k", value=b"v", timestamp=T0)], base_offset=0, producer_id=42, producer_epoch=0,
        base_sequence=0, is_transactional=True,
    )  # fmt: skip
    records = [control_record_spec(EndTxnMarker(committed=True, coordinator_epoch=1), timestamp=T0 + 1)]
    control = build_record_batch(
        records if marker else [], base_offset=1, producer_id=42, producer_epoch=0, is_transactional=True,
        is_control=True, last_offset_delta=0,
    )  # fmt: skip
    later = build_record_batch(
        [RecordSpec(key=b"k2", value=b"v2", timestamp=T0 + HOURS_2)], base_offset=2, producer_id=43,
        producer_epoch=0, base_sequence=0,
    )  # fmt: skip
    (folder / "00000000000000000000.log").write_bytes(data + control + later)
    return log_dir


def _hanging(log_dir: Path) -> list:
    rep = scan([log_dir], ScanOptions(), jobs=1)
    return [f for f in rep.findings if f.code == "TRANSACTION_HANGING"]


@pytest.mark.parametrize("marker", [False, True], ids=["empty-control-batch", "commit-marker"])
def test_only_a_marker_ends_the_transaction_for_the_check_and_readers(tmp_path: Path, marker: bool) -> None:
    log_dir = _log_dir(tmp_path, marker)
    (ref,) = discover(str(log_dir))
    (txn,) = partition_transactions(ref, high_watermark=False).transactions
    found = _hanging(log_dir)
    if marker:
        assert txn.result != OPEN and found == []
    else:
        assert txn.result == OPEN  # the readers' walk: the empty batch ends nothing
        (f,) = found  # the check, as the broker loads the log: still open two hours on
        assert f.details["producer_id"] == 42 and f.details["first_offset"] == 0
        assert f.details["last_stable_offset"] == 0 and f.details["log_end_offset"] == 3
