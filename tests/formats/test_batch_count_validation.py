"""One batch validation (issue 48, item 1): a v2 batch whose header's record count disagrees with its offset
range or with the records behind it is named by every reader, never dropped silently.

Kafka's LogValidator.validateBatch refuses such a produced batch ("Inconsistent batch offset range and
count"); DefaultRecordBatch.iterator returns nothing for a count of 0 without reading the bytes, so a count
of 0 in front of 65 records made every reader here skip them (export without offsets 0-64, ``dump --deep``
with 130 of 195 records, ``scan --deep`` without a finding). ``RecordBatchV2.check_count`` is the one check;
every decoding path goes through it: ``records``, ``record_list``, ``record_windows``, ``decode_columns``
(the export's), ``ensure_valid(deep=True)``, and the ``--deep`` scan's C records check and its twin leave
such a batch to the Python path. What stays legal: the log cleaner's empty batch (the 61-byte header alone,
count 0) and a compacted batch whose count is below its offset range with as many records as it says.
"""

from __future__ import annotations

import array
import json
import shutil
import struct
from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from typer.testing import CliRunner

import realworld
from logdoctor.checks.undecodable import undecodable_batches
from logdoctor.cli import commands  # noqa: F401  (registers every command)
from logdoctor.cli.main import app
from logdoctor.errors import CorruptRecordError
from logdoctor.formats import batch_v2
from logdoctor.formats.columns import decode_columns
from logdoctor.formats.crc import crc32c
from logdoctor.formats.records import iter_batches
from logdoctor.formats.v2_twin import check_records_py

KAFKA_WORDS = "Inconsistent batch offset range and count"


def _batch(codec: int, n: int, count: int | None = None, delta: int | None = None) -> bytes:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=2**30)  # fmt: skip
    for i in range(n):
        b.append(i, 1_700_000_000_000 + i, b"k%d" % i, b"v" * 20, [])
    data = bytearray(b.build())
    if count is not None:
        struct.pack_into(">i", data, 57, count)
    if delta is not None:
        struct.pack_into(">i", data, 23, delta)
    data[17:21] = crc32c(bytes(data[21:])).to_bytes(4, "big")
    return bytes(data)


def _empty_batch(delta: int) -> bytes:
    """DefaultRecordBatch.writeEmptyHeader's batch: the header alone, count 0, the offset range kept."""
    data = bytearray(_batch(0, 1))[:61]
    struct.pack_into(">i", data, 8, 49)
    struct.pack_into(">i", data, 23, delta)
    struct.pack_into(">i", data, 57, 0)
    data[17:21] = crc32c(bytes(data[21:])).to_bytes(4, "big")
    return bytes(data)


READERS = {
    "records": lambda b: list(b.records()),
    "record_list": lambda b: b.record_list(),
    "record_windows": lambda b: list(b.record_windows()),
    "decode_columns": lambda b: decode_columns([b]),
    "ensure_valid_deep": lambda b: b.ensure_valid(deep=True),
}


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4], ids=["none", "gzip", "snappy", "lz4", "zstd"])
@pytest.mark.parametrize(("count", "delta"), [(0, None), (6, None), (5, 3), (1, -1)])
def test_every_reader_names_a_count_that_disagrees(
    codec: int, reader: str, count: int, delta: int | None
) -> None:
    data = _batch(codec, 5, count, delta)
    [b] = iter_batches(data, verify_crc=True)
    with pytest.raises(CorruptRecordError, match=KAFKA_WORDS):
        READERS[reader](b)


@pytest.mark.parametrize("reader", sorted(READERS))
def test_the_cleaners_batches_stay_legal(reader: str) -> None:
    [empty] = iter_batches(_empty_batch(9), verify_crc=True)
    got = READERS[reader](empty)  # nothing, and no error
    assert not got or got == [[]]
    # a compacted batch: 5 records left of an offset range of 10 (MemoryRecords.filterTo keeps lastOffset)
    [compacted] = iter_batches(_batch(0, 5, delta=9), verify_crc=True)
    assert compacted.last_offset == 9
    got = READERS[reader](compacted)
    if reader in ("records", "record_list"):
        assert [r.offset for r in got] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("codec", [0, 1, 3], ids=["none", "gzip", "lz4"])
def test_the_deep_scans_records_check_names_a_count_of_0_with_records(codec: int) -> None:
    good = _batch(codec, 5)
    bad = _batch(codec, 5, count=0)
    data = good + bad + _empty_batch(4)
    positions = array.array("q", [0, len(good), len(good) + len(bad)])
    checks = [check_records_py]
    if batch_v2.NATIVE is not None:
        checks.append(batch_v2.NATIVE.check_records)
    for check in checks:  # the C check and its twin stop at the bad batch for the Python path
        i, code, _, _ = check(memoryview(data), positions, 0, 3)
        assert (i, code) == ((1, 0) if codec == 0 else (0, 0))
    found = undecodable_batches(memoryview(data), positions, len(data), source="x.log")
    assert [(u.position, u.base_offset, u.last_offset) for u in found] == [(len(good), 0, 4)]
    assert KAFKA_WORDS in found[0].error


# --- the case: the first batch of ../shared/tiered's audit-0 says 0 records and holds 65 (lz4)


@pytest.fixture(scope="module")
def lying_count(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tiered = realworld.require_tiered()
    root = tmp_path_factory.mktemp("count") / "kafka-logs"
    shutil.copytree(tiered / "original" / "kafka-logs" / "audit-0", root / "audit-0")
    log = root / "audit-0" / f"{0:020d}.log"
    data = bytearray(log.read_bytes())
    assert struct.unpack_from(">iii", data, 57)[0] == 65
    struct.pack_into(">i", data, 57, 0)
    size = struct.unpack_from(">i", data, 8)[0] + 12
    data[17:21] = crc32c(bytes(data[21:size])).to_bytes(4, "big")
    log.write_bytes(bytes(data))
    return root


def test_dump_deep_names_the_batch(lying_count: Path) -> None:
    log = lying_count / "audit-0" / f"{0:020d}.log"
    res = CliRunner().invoke(app, ["dump", "--deep", "--json", str(log)], terminal_width=200)
    assert res.exit_code == 2, res.output
    assert KAFKA_WORDS in res.output  # the error line names it (offsets 0..64, count 0)
    assert "record count 0, offsets 0..64" in res.output


def test_scan_deep_names_the_batch(lying_count: Path) -> None:
    res = CliRunner().invoke(app, ["scan", "--deep", "--json", str(lying_count)], terminal_width=200)
    findings = json.loads(res.output)["findings"]
    [found] = [f for f in findings if f["code"] == "LOG_RECORDS_UNDECODABLE"]
    assert found["offset"] == 0 and KAFKA_WORDS in json.dumps(found), found


def test_the_exports_decoding_names_the_batch_not_exported(lying_count: Path) -> None:
    from logdoctor.spark.sources.batch_decode import _decode

    log = lying_count / "audit-0" / f"{0:020d}.log"
    data = log.read_bytes()
    batches = list(iter_batches(data, verify_crc=True))
    bad: list[dict] = []
    parts = list(_decode(batches, str(log), bad))
    exported = sum(len(cols) for _, cols in parts)
    assert exported == 130  # the two good batches
    assert [(x["base_offset"], x["last_offset"]) for x in bad] == [(0, 64)]
    assert KAFKA_WORDS in json.dumps(bad)
