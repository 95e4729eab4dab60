"""``dump --max-batches N`` (issue 58 item 3): the first N batches from the seek position, and only the bytes
they need read (counted by the dump's own reader, ``bytes_read`` in its summary).

Kafka's DumpLogSegments bounds a dump by bytes (``--max-bytes``, KAFKA-13687, the option KIP-824 added:
``FileRecords.open(file).slice(0, maxBytes)`` in core/src/main/scala/kafka/tools/DumpLogSegments.scala, a
batch cut by the limit left out without an "invalid bytes" line); it has no batch count. ``--max-batches N``
is checked against it: the same batches as ``--max-bytes`` up to the end of the N-th batch, which are
kafka-python's first N batches of the real segment (the independent decoder)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_dump import dump, kafka_python_batches

import realworld

METADATA_LOG = "kraft-3.5-greenlemont-n1/__cluster_metadata-0/00000000000000000000.log"


@pytest.fixture(scope="module")
def metadata_log() -> Path:
    return realworld.require() / METADATA_LOG


@pytest.fixture(scope="module")
def metadata_batches(metadata_log):
    return kafka_python_batches(metadata_log.read_bytes())


@pytest.mark.parametrize("n", [1, 3, 40])
def test_max_batches_is_kafkas_max_bytes_at_the_nth_batch_end(metadata_log, metadata_batches, n):
    end = metadata_batches[n].position  # where the n-th batch ends (the next one starts)
    by_count = dump("--json", "--max-batches", str(n), metadata_log)
    by_bytes = dump("--json", "--max-bytes", str(end), metadata_log)
    assert by_count.exit_code == by_bytes.exit_code == 0, by_count.stderr
    got = [(b["position"], b["base_offset"], b["last_offset"]) for b in by_count.of_type("batch")]
    assert got == [(b["position"], b["base_offset"], b["last_offset"]) for b in by_bytes.of_type("batch")]
    assert got == [(b.position, b.base_offset, b.last_offset) for b in metadata_batches[:n]]
    assert not by_count.of_type("finding")  # the rest is not read, so nothing past it is said


@pytest.mark.parametrize("n", [1, 3, 40])
def test_max_batches_reads_only_what_the_batches_need(metadata_log, metadata_batches, n):
    """The walk reads a window at a time from 16 KiB, doubling: at most the N batches' bytes and one window
    past them (not the 2 MiB file, which a dump without it maps and walks whole)."""
    end = metadata_batches[n].position
    run = dump("--json", "--deep", "--max-batches", str(n), metadata_log)
    assert run.exit_code == 0, run.stderr
    (summary,) = run.of_type("summary")
    assert summary["batches"] == n
    assert summary["records"] == sum(len(b.records) for b in metadata_batches[:n])
    assert summary["bytes_read"] <= max(2 * end, 16 << 10)
    assert summary["bytes_read"] < summary["size"] / 10
    whole = dump("--json", metadata_log)
    (full,) = whole.of_type("summary")
    assert full["bytes_read"] == full["size"]


def test_max_batches_counts_from_the_seek_position(metadata_log, metadata_batches):
    records = [r for b in metadata_batches for r in b.records]
    a = records[len(records) // 2].offset
    run = dump("--json", "--offsets", f"{a}:", "--max-batches", "5", metadata_log)
    assert run.exit_code == 0, run.stderr
    expected = [b for b in metadata_batches if b.last_offset >= a][:5]
    assert [b["base_offset"] for b in run.of_type("batch")] == [b.base_offset for b in expected]


def test_max_batches_must_be_positive(metadata_log):
    assert dump("--max-batches", "0", metadata_log).exit_code == 64
