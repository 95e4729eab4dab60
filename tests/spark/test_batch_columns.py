"""kafka-log's batch columns (batch_position, producer_id, producer_epoch, base_sequence, is_transactional,
is_control, partition_leader_epoch, compression) against kafka-python's batch headers, record by record,
over every real segment (read_slice, the code each Spark task runs; no Spark session needed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka.record import MemoryRecords

import kp_oracle
import realworld
from logdoctor.formats.record_types import Compression
from logdoctor.logdir.discovery import discover
from logdoctor.logdir.slices import parse_read_options, plan_slices
from logdoctor.spark.sources.slice_reader import read_slice

pytestmark = [pytest.mark.realworld]

COLUMNS = (
    "batch_position",
    "producer_id",
    "producer_epoch",
    "base_sequence",
    "is_transactional",
    "is_control",
    "partition_leader_epoch",
    "compression",
)


def kafka_python_batch_columns(log: Path) -> dict[int, tuple]:
    """offset -> the COLUMNS of its batch, as kafka-python reads the headers (v0/v1: no producer, flags)."""
    out: dict[int, tuple] = {}
    records = MemoryRecords(log.read_bytes())
    position = 0
    while records.has_next():
        try:
            batch = records.next_batch()
        except Exception:  # damage: both readers stop there
            break
        if batch is None:
            break
        label = Compression(batch.compression_type).label
        if batch.magic >= 2:
            flags = (bool(batch.is_transactional), bool(batch.is_control_batch))
            head = (position, batch.producer_id, batch.producer_epoch, batch.base_sequence, *flags,
                    batch.leader_epoch, label)  # fmt: skip
        else:
            head = (position, -1, -1, -1, False, False, -1, label)
        try:
            for rec in batch:
                out[rec.offset] = head
        except Exception:
            break
        position += batch.size_in_bytes
    return out


@pytest.mark.parametrize("names", realworld.log_dir_tiers())
def test_batch_columns_match_kafka_python(realworld_dir: Path, names: list[str]) -> None:
    opts = parse_read_options({"includeControl": "true"})
    compared = 0
    for log_dir in (realworld_dir / n for n in names):
        slices = plan_slices(discover(str(log_dir)), opts)
        for sl in slices:
            expected = kafka_python_batch_columns(Path(sl.segment.path))
            for rb in read_slice(sl, opts):
                table = rb.to_pydict()
                for i, offset in enumerate(table["offset"]):
                    if offset not in expected:
                        continue  # kafka-python stopped earlier at damage
                    assert tuple(table[c][i] for c in COLUMNS) == expected[offset], (sl.segment.path, offset)
                    compared += 1
    # records compared: 31,833 in test-fast's log dirs, 99,401 in the others
    assert compared > (30_000 if set(names) <= realworld.FAST_LOG_DIRS else 95_000)


def test_transactions_control_batches_and_mixed_codecs(tmp_path: Path) -> None:
    """Generated: transactional lz4 batches of 3 producers with (uncompressed) commit/abort markers, then
    idempotent gzip batches in the same segment (three codecs in one Arrow batch)."""
    from logdoctor.sample.records import RecordDataSpec, generate_segment

    first, info = generate_segment(
        RecordDataSpec(record_count=3000, value_size=64, compression=Compression.LZ4, transactional=True,
                       producers=3, abort_ratio=0.4, batches_per_transaction=3, batch_size=2048)
    )  # fmt: skip
    second, _ = generate_segment(
        RecordDataSpec(record_count=500, value_size=64, compression=Compression.GZIP, batch_size=2048,
                       base_offset=info.next_offset, idempotent=True)
    )  # fmt: skip
    log = tmp_path / "kafka-logs" / "orders-0" / "00000000000000000000.log"
    log.parent.mkdir(parents=True)
    log.write_bytes(first + second)
    expected = kafka_python_batch_columns(log)
    assert {h[4] for h in expected.values()} == {True, False}  # transactional and not
    assert {h[5] for h in expected.values()} == {True, False}  # markers and data
    opts = parse_read_options({"includeControl": "true", "kafka.isolation.level": "read_uncommitted"})
    (sl,) = plan_slices(discover(str(log.parent.parent)), opts)
    rows = [row for rb in read_slice(sl, opts) for row in rb.to_pylist()]
    assert {r["compression"] for r in rows} == {"lz4", "gzip", "none"}  # markers are uncompressed
    assert len(rows) == len(expected)
    for r in rows:
        assert tuple(r[c] for c in COLUMNS) == expected[r["offset"]], r["offset"]
    # each data record's transaction outcome, and what read_committed returns, as Kafka's consumer computes
    # them from kafka-python's decoding (kp_oracle.consumer_view), never through logdoctor's code
    labels, committed_offsets, _lso = kp_oracle.consumer_view([log])
    assert {r["offset"]: r["transaction_result"] for r in rows if not r["is_control"]} == labels
    assert {"committed", "aborted", None} <= set(labels.values())
    opts = parse_read_options({})  # the default: read_committed
    (sl,) = plan_slices(discover(str(log.parent.parent)), opts)
    got = [row["offset"] for rb in read_slice(sl, opts) for row in rb.to_pylist()]
    assert got == committed_offsets
    assert len(got) < len(labels)
