"""One rule for which of two overlapping finished remote segments is read: the export's read plan
(logdoctor.logdir.remote_attach.attach_remote) and scan --remote-storage's audit choose as the broker does
(logdoctor.logdir.remote_lineage: the segment within the leader-epoch lineage, RemoteLogMetadataCache),
on a copy of ../shared/tiered (kafka-local: payments-0 remote [0, 1296) in 4 segments of 324 offsets,
local from 1296, leader-epoch-checkpoint 0@0) with a duplicate segment planted in the store AND in
``__remote_log_metadata``: the same offsets [648, 971] under another id, uploaded by a leader of epoch 1
(not in this replica's lineage), finished after the original, its object larger."""

from __future__ import annotations

import os
from pathlib import Path

import realworld
from logdoctor.checks.context import ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.logdir.read_options import ReadOptions
from logdoctor.logdir.read_plan import plan_read
from logdoctor.logdir.remote_metadata import SegmentState, TopicIdPartition
from logdoctor.sample.remote_tier import (
    append_metadata_events,
    segment_metadata,
    segment_update,
)

P0 = TopicIdPartition("cGF5bWVudHMtdG9waWMwMQ", "payments", 0)
#: sorts before any other segment id ('-' is the lowest of the base64url characters): an order by id
#: would put it first
TWIN = "-HR3aW4tb3V0c2lkZS1saQ"


def _append(path: Path, *records: dict, ts: int = 1795454800000) -> None:
    append_metadata_events(path, *records, ts=ts)


def _planted(tmp_path: Path) -> tuple[Path, Path, Path, str]:
    """(log dir, store root, payments-0's folder in the store, the original segment id of 648)."""
    tiered = realworld.require_tiered()
    logs = realworld.writable_copy(tiered / "kafka-local" / "kafka-logs", tmp_path / "kafka-logs")
    store = realworld.writable_copy(tiered / "kafka-local" / "remote", tmp_path / "remote")
    folder = store / "kafka-tiered-storage" / f"payments-0-{P0.topic_id}"
    [log] = folder.glob(f"{648:020d}-*.log")
    original = log.name[21:43]
    assert original > TWIN
    for f in folder.glob(f"{648:020d}-{original}.*"):
        data = f.read_bytes()
        if f.suffix == ".log":
            data += data  # larger: the batches again (offsets that go back, were it read)
        (folder / f.name.replace(original, TWIN)).write_bytes(data)
    size = (folder / f"{648:020d}-{TWIN}.log").stat().st_size
    assert size > log.stat().st_size
    kw = dict(broker_id=2, event_timestamp_ms=1795454800000)
    _append(
        logs / "__remote_log_metadata-21" / f"{0:020d}.log",
        segment_metadata(
            P0, TWIN, 648, 971, max_timestamp_ms=1710000000971, leader_epochs=[(1, 648)], size=size, **kw
        ),
        segment_update(P0, TWIN, SegmentState.COPY_SEGMENT_FINISHED, **kw),
    )
    return logs, store, folder, original


def _read_offsets(plan) -> tuple[list[int], list[str]]:
    from logdoctor.logdir.slices import parse_read_options, plan_slices
    from logdoctor.spark.sources.slice_reader import read_slice

    opts = parse_read_options({})
    problems: list[dict] = []
    got = [
        o
        for sl in plan_slices(plan.refs, opts)
        for rb in read_slice(sl, opts, problems=problems)
        for p, o in zip(rb.column("partition").to_pylist(), rb.column("offset").to_pylist(), strict=True)
        if p == 0
    ]
    return got, [p["error"] for p in problems]


def test_the_duplicate_outside_the_lineage_is_not_read_though_larger_and_both_name_it(
    tmp_path: Path,
) -> None:
    logs, store, folder, original = _planted(tmp_path)
    plan = plan_read(
        [str(logs)], ReadOptions.from_options({"remoteStorage": str(store), "topics": "payments"})
    )
    [ref] = [r for r in plan.refs if r.partition == 0]
    remote = {s.base_offset: s.remote.segment_id for s in ref.segments if s.remote is not None}
    assert remote[648] == original  # the one within the lineage, not the larger object
    [named] = plan.not_read
    assert named.path == str(folder / f"{648:020d}-{TWIN}.log") and not named.lost
    assert (named.first_offset, named.last_offset) == (648, 971)
    assert original in named.error
    # what the export reads: every offset of payments-0 once, none from the duplicate's object
    offsets, problems = _read_offsets(plan)
    assert sorted(offsets) == list(range(2000))
    assert not any(TWIN in e for e in problems), problems
    # scan --remote-storage names the same segment as the second copy (and as outside the lineage)
    report = scan([logs], ScanOptions(remote_storage=str(store), now_ms=1710000100000), jobs=1)
    [overlap] = [f for f in report.findings if f.code == "REMOTE_SEGMENTS_OVERLAP"]
    assert overlap.details["duplicate"] is True
    assert overlap.details["segment_ids"] == [original, TWIN]
    assert f"remote segment {TWIN} holds the same offsets 648-971 as {original}" in overlap.message
    assert os.path.basename(named.path)[21:43] == overlap.details["segment_ids"][1]
    [lineage] = [f for f in report.findings if f.code == "REMOTE_EPOCH_LINEAGE_BROKEN"]
    assert lineage.details["segment_id"] == TWIN
