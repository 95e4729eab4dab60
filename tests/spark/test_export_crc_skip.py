"""Issue 31 item 3, from the audit: after one byte flipped inside a batch (CRC mismatch, framing intact),
``export`` skipped the rest of the segment (1,700 of 2,000 rows, the 290 intact records after the bad
batch lost). Now every writer and table format skips that batch alone and names it (file, byte range,
offsets, stored and computed CRC); the records after it are exported. kafka-python, an independent
decoder, gives the records expected: those of every batch whose CRC it finds valid."""

from __future__ import annotations

import struct
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from kafka.record import MemoryRecords

from logdoctor.sample.logdir import TopicSpec, generate_log_dir
from logdoctor.spark.export import run_export

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def damaged(tmp_path_factory) -> tuple[Path, Path, int, dict[int, bytes], tuple[int, int, int]]:
    root, _ = generate_log_dir(
        tmp_path_factory.mktemp("crcskip") / "logs",
        [TopicSpec("orders", partitions=1, records_per_partition=2000, records_per_batch=10, value_size=40)],
    )
    (log,) = sorted(root.glob("orders-0/*.log"))
    data = bytearray(log.read_bytes())
    pos, starts = 0, []
    while pos < len(data):
        starts.append(pos)
        pos += 12 + struct.unpack_from(">i", data, pos + 8)[0]
    bad = starts[170]  # offsets 1700..1709: 290 records after it
    data[bad + 70] ^= 0x01
    log.write_bytes(bytes(data))
    readable, lost, records = {}, [], MemoryRecords(bytes(data))
    while (batch := records.next_batch()) is not None:
        if batch.validate_crc():
            readable.update({r.offset: bytes(r.value) for r in batch})
        else:
            lost.extend(r.offset for r in batch)
    assert len(readable) == 1990 and lost == list(range(1700, 1710))
    return root, log, bad, readable, (starts[171] - bad, 1700, 1709)


def _check_skipped(result, log, bad, batch) -> None:
    size, first, last = batch
    got = [(s.path, s.range_start, s.skipped_bytes, s.base_offset, s.last_offset) for s in result.skipped]
    assert got == [(str(log), bad, size, first, last)], result.skipped
    assert "CRC mismatch: stored 0x" in result.skipped[0].error and "computed 0x" in result.skipped[0].error


@pytest.mark.parametrize("writer", ["arrow", "spark"])
def test_export_skips_the_bad_batch_alone(spark, damaged, tmp_path, writer):
    root, log, bad, readable, batch = damaged
    out = tmp_path / "out"
    result = run_export(spark, [str(root)], out, writer=writer)
    table = pq.read_table(out)
    exported = dict(zip(table.column("offset").to_pylist(), table.column("value").to_pylist(), strict=True))
    assert exported == readable and result.rows == 1990
    _check_skipped(result, log, bad, batch)


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_a_table_export_skips_the_bad_batch_alone(spark, damaged, tmp_path, fmt):
    from tables_util import read_table

    from logdoctor.spark.tables.export import run_table_export

    root, log, bad, readable, batch = damaged
    out = tmp_path / fmt
    result = run_table_export(spark, [str(root)], str(out), fmt=fmt)
    table = read_table(fmt, out)
    exported = dict(zip(table.column("offset").to_pylist(), table.column("value").to_pylist(), strict=True))
    assert exported == readable and result.rows == 1990
    _check_skipped(result, log, bad, batch)
