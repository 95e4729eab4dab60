"""Issue 24, from the audit: a decompression bomb cost ``export`` 8.1 GB across its processes for 1 GiB
of records. The kafka-log source now reads a gzip or zstd batch whose records are more than a window
(``codecs.WINDOW``) a window at a time: Arrow batches of a window each, the section never whole in
memory. The rows are kafka-python's; the end-to-end figures are in README "Reliability"
(scripts/reliability.py bombs)."""

from __future__ import annotations

import sys
import tracemalloc
from pathlib import Path

import pytest
from kafka.record import MemoryRecords

from logdoctor.formats import codecs
from logdoctor.formats.records import scan_batches
from logdoctor.spark.sources import _decode

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "formats"))

from test_decompression_windows import bomb


def _rows(parts) -> list[tuple]:
    out = []
    for batches, cols in parts:
        offsets = cols.offsets.tolist()
        assert len(offsets) == sum(b.record_count for b in batches)
        out.extend(zip(offsets, cols.values.to_pylist(), strict=True))
    return out


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_a_large_batch_is_exported_a_window_at_a_time_with_kafka_pythons_rows(codec):
    small = bomb(codec, count=3, value_size=10)
    data = small + bomb(codec, count=600, value_size=40_000) + small  # ~24 MB of records in the middle
    batches = scan_batches(data, verify_crc=True).batches
    bad: list = []
    parts = list(_decode(batches, "p", bad))
    assert bad == [] and len(parts) >= 4  # the small ones, and the large one in windows
    theirs = []
    records = MemoryRecords(data)
    while (b := records.next_batch()) is not None:
        theirs.extend((r.offset, bytes(r.value)) for r in b)
    assert _rows(parts) == theirs


def test_a_bomb_is_exported_with_flat_memory():
    data = bomb("gzip", count=4000, value_size=64 * 1024)  # 256 MB of records from ~1 MB
    batches = scan_batches(data, verify_crc=True).batches
    tracemalloc.start()
    try:
        rows = 0
        for _, cols in _decode(batches, "p", []):
            rows += len(cols)
            del cols
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert rows == 4000
    # the section whole and its columns were ~540 MB; now about two windows of records and columns
    assert peak < 14 * codecs.WINDOW, peak
