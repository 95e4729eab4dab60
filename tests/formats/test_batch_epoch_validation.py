"""One batch validation, the leader epoch (issue 48, "leader epoch and timestamps in range"): a v2 batch
whose partition leader epoch is below -1 is named by every reader, as a record count that disagrees is
(``RecordBatchV2.check_count``), and restore's check of a remote segment refuses it.

Kafka stamps every batch it appends with the leader's epoch, >= 0 (LogValidator: setPartitionLeaderEpoch),
and writes -1 (RecordBatch.NO_PARTITION_LEADER_EPOCH) for none; the field is outside the batch's CRC, so a
damaged one passes ``ensureValid``. The case: the second batch of ../shared/tiered's payments-0 segment 324,
its epoch set to -5, its CRC still valid. Timestamps stay unchecked: LogValidator.validateTimestamp compares
them with the append time, which a log at rest does not have, and accepts negative ones by default.
"""

from __future__ import annotations

import array
import json
import shutil
import struct
from pathlib import Path

import pytest
from typer.testing import CliRunner

import realworld
from logdoctor.checks.undecodable import undecodable_batches
from logdoctor.cli import commands  # noqa: F401  (registers every command)
from logdoctor.cli.main import app
from logdoctor.errors import CorruptRecordError
from logdoctor.formats import batch_v2
from logdoctor.formats.records import consecutive_offsets_error, iter_batches
from logdoctor.formats.v2_twin import check_records_py

WORDS = "a partition leader epoch >= 0, or -1 (RecordBatch.NO_PARTITION_LEADER_EPOCH)"
BASE = 324

READERS = {
    "records": lambda b: list(b.records()),
    "record_list": lambda b: b.record_list(),
    "record_windows": lambda b: list(b.record_windows()),
    "decode_columns": lambda b: __import__("logdoctor.formats.columns").formats.columns.decode_columns([b]),
    "ensure_valid_deep": lambda b: b.ensure_valid(deep=True),
}


def _segment(epoch: int) -> tuple[bytes, int]:
    """payments-0's segment 324 with its second batch's epoch set; (bytes, the batch's position)."""
    tiered = realworld.require_tiered()
    data = bytearray((tiered / "original/kafka-logs/payments-0" / f"{BASE:020d}.log").read_bytes())
    second = struct.unpack_from(">i", data, 8)[0] + 12
    assert struct.unpack_from(">i", data, second + 12)[0] >= 0  # a real epoch
    struct.pack_into(">i", data, second + 12, epoch)
    return bytes(data), second


@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_reader_names_an_epoch_below_minus_1(reader: str) -> None:
    data, second = _segment(-5)
    batches = list(iter_batches(data, verify_crc=True))  # the CRC does not cover the epoch
    bad = next(b for b in batches if b.position == second)
    with pytest.raises(CorruptRecordError, match=r"found -5 \(offsets") as err:
        READERS[reader](bad)
    assert WORDS in str(err.value)
    READERS[reader](batches[0])  # the batch before it reads as ever


@pytest.mark.parametrize("reader", sorted(READERS))
def test_no_partition_leader_epoch_stays_legal(reader: str) -> None:
    data, second = _segment(-1)
    bad = next(b for b in iter_batches(data, verify_crc=True) if b.position == second)
    READERS[reader](bad)  # no error


def test_the_deep_scans_records_check_leaves_it_to_the_python_path() -> None:
    data, second = _segment(-5)
    batches = list(iter_batches(data, verify_crc=True))
    positions = array.array("q", [b.position for b in batches])
    checks = [check_records_py]
    if batch_v2.NATIVE is not None:
        checks.append(batch_v2.NATIVE.check_records)
    for check in checks:  # gzip batches: both leave them all to the Python path; never pass it
        i, code, _, _ = check(memoryview(data), positions, 0, len(positions))
        assert i <= 1 and code == 0
    found = undecodable_batches(memoryview(data), positions, len(data), source="x.log")
    assert [u.position for u in found] == [second] and WORDS in found[0].error


def test_restores_check_of_a_remote_segment_refuses_it() -> None:
    data, second = _segment(-5)
    err = consecutive_offsets_error(data, BASE, source="x.log")
    assert err is not None and err.position == second + 12 and WORDS in str(err)
    assert consecutive_offsets_error(_segment(-1)[0], BASE, source="x.log") is None


@pytest.fixture(scope="module")
def bad_epoch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tiered = realworld.require_tiered()
    root = tmp_path_factory.mktemp("epoch") / "kafka-logs"
    shutil.copytree(tiered / "original" / "kafka-logs" / "payments-0", root / "payments-0")
    (root / "payments-0" / f"{BASE:020d}.log").write_bytes(_segment(-5)[0])
    return root


def test_dump_deep_names_the_batch(bad_epoch: Path) -> None:
    log = bad_epoch / "payments-0" / f"{BASE:020d}.log"
    res = CliRunner().invoke(app, ["dump", "--deep", "--json", str(log)], terminal_width=200)
    assert res.exit_code == 2, res.output
    assert WORDS in res.output and "found -5 (offsets" in res.output


def test_scan_deep_names_the_batch(bad_epoch: Path) -> None:
    res = CliRunner().invoke(app, ["scan", "--deep", "--json", str(bad_epoch)], terminal_width=200)
    findings = json.loads(res.output)["findings"]
    [found] = [f for f in findings if f["code"] == "LOG_RECORDS_UNDECODABLE"]
    assert WORDS in json.dumps(found), found
