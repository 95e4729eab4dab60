"""Issue 24, from the audit: ``export`` dropped valid records silently. A segment whose batches at offsets
1 and 2 are CRC-valid but hold records that do not decode (a record length past the batch's end; garbage
where the gzip stream should be) exported only offset 0, not the valid batch at 10, printed "No corrupt
range was skipped." and exited 0. Now every record that can be read is exported, every batch that cannot
is named (file range and offsets), exit 1. kafka-python, an independent decoder, reads the same
offsets and fails on the same two batches."""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import crc32c
import pyarrow.parquet as pq
import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from logdoctor.sample.logdir import TopicSpec, generate_log_dir
from logdoctor.spark.export import run_export

pytestmark = pytest.mark.spark


def _batch(base: int, values: list[bytes], codec: int = 0) -> bytearray:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)  # fmt: skip
    for i, v in enumerate(values):
        b.append(i, timestamp=1_700_000_000_000 + base + i, key=b"k%d" % (base + i), value=v, headers=[])
    out = bytearray(b.build())
    struct.pack_into(">q", out, 0, base)  # the base offset is outside the CRC
    return out


def _fix_crc(buf: bytearray) -> bytearray:
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))  # DefaultRecordBatch: attributes..end
    return buf


def hostile_segment() -> tuple[bytes, list[tuple[int, int, int]]]:
    """Batches at offsets 0, 1, 2 and 10..12; those at 1 and 2 CRC-valid with undecodable records.
    Returns the bytes and the (position, size, offset) of each undecodable batch."""
    a = _batch(0, [b"zero"])
    bad_len = _batch(1, [b"one"])
    assert bad_len[61] < 0x80
    bad_len[61] = 0x7E  # the first record's length varint: 63, past the end of the batch
    _fix_crc(bad_len)
    gz = _batch(2, [b"two" * 50], codec=1)
    gz[61:] = bytes((i * 37 + 11) & 0xFF for i in range(len(gz) - 61))  # not a gzip stream
    _fix_crc(gz)
    d = _batch(10, [b"ten", b"eleven", b"twelve"])
    bad = [(len(a), len(bad_len), 1), (len(a) + len(bad_len), len(gz), 2)]
    return bytes(a + bad_len + gz + d), bad


@pytest.fixture
def hostile_dir(tmp_path) -> tuple[Path, Path, list[tuple[int, int, int]]]:
    root, _ = generate_log_dir(tmp_path / "logs", [TopicSpec("orders", partitions=1,
                                                               records_per_partition=20)])  # fmt: skip
    (log,) = sorted(root.glob("orders-0/*.log"))
    for index in log.parent.glob("*index"):
        index.unlink()  # they describe the generated segment, not this one
    data, bad = hostile_segment()
    log.write_bytes(data)
    return root, log, bad


def _kafka_python_records(log: Path) -> dict[int, bytes]:
    """offset -> value of every record kafka-python can read, batch by batch."""
    from kafka.record import MemoryRecords

    out = {}
    records = MemoryRecords(log.read_bytes())
    while (batch := records.next_batch()) is not None:
        try:
            out.update({r.offset: bytes(r.value) for r in batch})
        except Exception:  # the oracle cannot read this batch either
            continue
    return out


@pytest.mark.parametrize("writer", ["arrow", "spark"])
def test_export_keeps_every_readable_record_and_names_each_undecodable_batch(spark, hostile_dir, tmp_path,
                                                                            writer):  # fmt: skip
    root, log, bad = hostile_dir
    readable = _kafka_python_records(log)
    assert sorted(readable) == [0, 10, 11, 12]
    out = tmp_path / "out"
    result = run_export(spark, [str(root)], out, writer=writer)
    table = pq.read_table(out)
    assert sorted(table.column("offset").to_pylist()) == [0, 10, 11, 12]
    assert result.rows == 4
    exported = zip(table.column("offset").to_pylist(), table.column("value").to_pylist(), strict=True)
    assert dict(exported) == readable
    got = [(s.path, s.range_start, s.skipped_bytes, s.base_offset, s.last_offset) for s in result.skipped]
    assert got == [(str(log), pos, size, off, off) for pos, size, off in bad], result.skipped
    assert "length" in result.skipped[0].error and "gzip" in result.skipped[1].error
    js = result.to_json()["skipped"]
    assert [(s["start"], s["end"]) for s in js] == [(pos, pos + size) for pos, size, _ in bad]


def test_the_export_command_names_the_undecodable_batches_and_exits_1(hostile_dir, tmp_path):
    root, _log, bad = hostile_dir
    out = tmp_path / "out [b]x[/b] :thumbs_up:"  # printed as it is: a path is text, never rich markup
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "250"}
    argv = [sys.executable, "-c", "from logdoctor.cli.main import main; main()", "export", str(root), "--out",
            str(out), "--master", "local[1]"]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env, check=False)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "No corrupt range was skipped" not in proc.stdout
    assert "Exported 4 records" in proc.stdout, proc.stdout
    assert f" to {out} as parquet: " in proc.stdout, proc.stdout
    # the time printed includes Spark's start and says how much of it that was (issue 47: "in 7.1 s" of 82 s),
    # and every other part of the run, adding up to the total (issue 59)
    head = " ".join(proc.stdout.split()).split(" Skipped corrupt ranges")[0]
    took = re.search(r", in (\d+\.\d) s: (.*)$", head)
    assert took is not None, proc.stdout
    total = float(took.group(1))
    named = re.findall(r"(?:^|, )(\d+\.\d) s ([a-z][^,]*)", took.group(2))
    parts = {name: float(s) for s, name in named}
    assert parts["starting Spark"] > 0 and abs(sum(parts.values()) - total) <= 0.05 * (len(parts) + 1), head
    for pos, size, off in bad:
        assert f"bytes {pos:,}..{pos + size:,}, offsets {off}..{off}" in proc.stdout, proc.stdout
    js = subprocess.run([*argv[:-3], str(tmp_path / "out2"), "--master", "local[1]", "--json"],
                        capture_output=True, text=True, timeout=600, env=env, check=False)  # fmt: skip
    assert js.returncode == 1, js.stderr[-3000:]
    doc = json.loads(js.stdout)
    assert doc["rows"] == 4 and [s["base_offset"] for s in doc["skipped"]] == [1, 2]


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_a_table_export_keeps_every_readable_record_and_names_each_undecodable_batch(
    spark, hostile_dir, tmp_path, fmt
):
    """The table export (issue 25) reads with the same tasks' decoder: the batches whose records do not
    decode are named as the Parquet export names them, and the table holds every readable record (read back
    with the format's own reader, compared with kafka-python)."""
    from tables_util import read_table

    from logdoctor.spark.tables.export import run_table_export

    root, log, bad = hostile_dir
    readable = _kafka_python_records(log)
    out = tmp_path / fmt
    result = run_table_export(spark, [str(root)], str(out), fmt=fmt)
    table = read_table(fmt, out)  # pyiceberg's scan / deltalake's reader
    exported = zip(table.column("offset").to_pylist(), table.column("value").to_pylist(), strict=True)
    assert dict(exported) == readable and result.rows == 4
    got = [(s.path, s.range_start, s.skipped_bytes, s.base_offset, s.last_offset) for s in result.skipped]
    assert got == [(str(log), pos, size, off, off) for pos, size, off in bad], result.skipped
