"""Issue 57 items 1-3: damaged transactional data read as Kafka reads it, against the facts of
../shared/semantics/README.md (hostile_semantics rebuilds each damaged copy): the transaction walk goes on
after damage as the rows do, any control batch ends its producer's transaction (ProducerAppendInfo.append),
and a marker Kafka's validation refuses is named. Read with the code each Spark task runs (plan_slices,
read_slice): no Spark."""

from __future__ import annotations

from pathlib import Path

import pytest

import hostile_semantics as hs
from logdoctor.logdir.consumer_view import summary_lines, transaction_summary
from logdoctor.logdir.discovery import discover
from logdoctor.logdir.slices import parse_read_options, plan_slices, plan_transactions
from logdoctor.logdir.transactions import partition_transactions
from logdoctor.spark.export import invalid_marker_ranges
from logdoctor.spark.sources.slice_reader import read_slice

pytestmark = [pytest.mark.realworld]


def rows(path: Path, **options: str) -> dict[int, str | None]:
    """{offset: transaction_result} of the rows the readers give."""
    opts = parse_read_options(options)
    out: dict[int, str | None] = {}
    for sl in plan_slices(discover(str(path)), opts):
        for rb in read_slice(sl, opts):
            for r in rb.select(["offset", "transaction_result"]).to_pylist():
                assert r["offset"] not in out
                out[r["offset"]] = r["transaction_result"]
    return out


UNCOMMITTED = {"kafka.isolation.level": "read_uncommitted"}


def test_a_torn_segment_leaves_every_intact_marker_deciding(tmp_path: Path) -> None:
    """Segment 0 cut mid-batch (item 1): its rows stop at offset 50, segment 202 is read whole, and its
    markers decide its transactions: the aborted 318-322 and the open 364-375 are not in read_committed
    (they were, with transaction_result null), and the LSO is 364 (it was 50)."""
    ptx = hs.torn(tmp_path) / "ptx-0"
    kept = [o for o in hs.READ_COMMITTED if o < 50 or o >= 202]
    assert sorted(rows(ptx)) == kept
    labels = rows(ptx, **UNCOMMITTED)
    assert sorted(labels) == [o for o in [*range(0, 50), *range(202, 376)] if o not in (317, 323)]  # markers
    assert {o for o, r in labels.items() if r == "aborted"} == {o for o in hs.ABORTED if o >= 202}
    assert {o for o, r in labels.items() if r == "open"} == set(hs.OPEN)
    assert {o for o, r in labels.items() if r == "committed"} == {o for o in hs.COMMITTED if o >= 202}
    (ref,) = discover(str(ptx))
    t = partition_transactions(ref)
    assert (t.first_unstable_offset, t.log_end_offset) == (hs.LSO, 376)
    assert t.error is not None and "truncated" in t.error and hs.SEGMENT_0 in t.error
    (entry,) = transaction_summary(
        [ref], plan_transactions([ref], parse_read_options({})), parse_read_options({})
    )
    assert entry["last_stable_offset"] == hs.LSO
    assert "damage at" in summary_lines([entry])[0]


def test_a_marker_kafka_refuses_decides_its_transaction_and_is_named(tmp_path: Path) -> None:
    """The ABORT marker at 201 with lastOffsetDelta -1 (item 2): Kafka's producer state ends producer 8102's
    transaction at the marker's base offset (ProducerAppendInfo.append), so read_committed is the README's
    230 records (it was offsets 0-74 only, exit 0); the marker is named wherever the transactions are
    said: the walk's invalid markers, the export's skipped ranges and its summary."""
    ptx = hs.lying_marker(tmp_path) / "ptx-0"
    assert sorted(rows(ptx)) == hs.READ_COMMITTED
    labels = rows(ptx, **UNCOMMITTED)
    assert {o for o, r in labels.items() if r == "aborted"} == set(hs.ABORTED)
    assert {o for o, r in labels.items() if r == "open"} == set(hs.OPEN)
    refs = discover(str(ptx))
    opts = parse_read_options({})
    txns = plan_transactions(refs, opts)
    (t,) = txns.values()
    assert t.first_unstable_offset == hs.LSO
    (marker,) = t.invalid_markers
    assert (marker.base_offset, marker.last_offset, marker.position) == (201, 200, hs.ABORT_201_POSITION)
    assert Path(marker.path).name == hs.SEGMENT_0 and "Inconsistent batch offset range" in marker.error
    (skipped,) = invalid_marker_ranges(txns)
    assert (skipped.range_start, skipped.base_offset, skipped.last_offset) == (
        hs.ABORT_201_POSITION,
        201,
        200,
    )
    (entry,) = transaction_summary(refs, txns, opts)
    assert [m["base_offset"] for m in entry["invalid_markers"]] == [201]
    assert entry["last_stable_offset"] == hs.LSO and entry["left_out"]["aborted"] == len(hs.ABORTED)
    assert "the marker at offset 201" in summary_lines([entry])[0]


def test_a_control_batch_without_its_transactional_bit_ends_its_transaction(tmp_path: Path) -> None:
    """The ABORT marker at 323 with its transactional bit cleared (item 3): ProducerAppendInfo.append ends
    the producer's transaction on any control batch, so producer 8103's transaction is aborted, the LSO
    stays 364 and the 40 plain records 324-363 are read (they were left out, LSO 318, exit 0)."""
    ptx = hs.marker_without_txn_bit(tmp_path) / "ptx-0"
    assert sorted(rows(ptx)) == hs.READ_COMMITTED
    labels = rows(ptx, **UNCOMMITTED)
    assert {o for o, r in labels.items() if r == "aborted"} == set(hs.ABORTED)
    (ref,) = discover(str(ptx))
    t = partition_transactions(ref)
    assert [(x.producer_id, x.first_offset, x.marker_offset, x.result) for x in t.transactions][3] == (
        8103,
        318,
        323,
        "aborted",
    )
    assert t.first_unstable_offset == hs.LSO and not t.invalid_markers
