"""The read plan every output consumes (logdoctor.logdir.read_plan), without Spark: internal topics left
out by default and said (issue 31 item 6), the remote tier's listing checked against the remote log
metadata (item 2), on real log dirs: the folder names on disk are the truth for which topics exist, the
remote log metadata's segment ids those of the objects Kafka's classes wrote."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import realworld
from logdoctor.logdir.read_options import ReadOptions
from logdoctor.logdir.read_plan import plan_read

KRAFT = "kraft-3.5-greenlemont-n1"  # __cluster_metadata-0 and __consumer_offsets beside user topics


def _topics_on_disk(log_dir: Path) -> set[str]:
    return {p.name.rpartition("-")[0] for p in log_dir.iterdir() if p.is_dir() and p.name[-1].isdigit()}


def test_internal_topics_are_left_out_and_said() -> None:
    realworld.require()
    log_dir = realworld.REALWORLD / KRAFT
    on_disk = _topics_on_disk(log_dir)
    internal = {t for t in on_disk if t.startswith("__")}
    assert internal >= {"__consumer_offsets", "__cluster_metadata"} and on_disk - internal
    plan = plan_read([str(log_dir)])
    assert {r.topic for r in plan.refs} == on_disk - internal
    assert set(plan.left_out) == internal
    assert "__consumer_offsets" in (plan.left_out_text() or "")
    # named in topics (a list, or a regex starting with __), asked for, or given as a folder: exported
    named = plan_read([str(log_dir)], ReadOptions.from_options({"topics": "__consumer_offsets"}))
    assert {r.topic for r in named.refs} == {"__consumer_offsets"} and named.left_out == ()
    regex = plan_read([str(log_dir)], ReadOptions.from_options({"topics": "__.*"}))
    assert {r.topic for r in regex.refs} == internal
    everything = plan_read([str(log_dir)], ReadOptions.from_options({"includeInternal": "true"}))
    assert {r.topic for r in everything.refs} == on_disk and everything.left_out == ()
    folder = plan_read([str(log_dir / "__cluster_metadata-0")])
    assert [r.topic for r in folder.refs] == ["__cluster_metadata"]
    # a regex that does not start with __ matches them but does not name them
    dotall = plan_read([str(log_dir)], ReadOptions.from_options({"topics": ".*"}))
    assert {r.topic for r in dotall.refs} == on_disk - internal and set(dotall.left_out) == internal


def _store(tmp_path: Path) -> tuple[Path, Path]:
    tiered = realworld.require_tiered()
    store = realworld.writable_copy(tiered / "kafka-local" / "remote", tmp_path / "remote")
    return tiered / "kafka-local" / "kafka-logs", store / "kafka-tiered-storage" / (
        "payments-0-cGF5bWVudHMtdG9waWMwMQ"
    )


def _remote_segments(plan, partition: int = 0) -> list[tuple[int, str, int | None]]:
    [ref] = [r for r in plan.refs if (r.topic, r.partition) == ("payments", partition)]
    return [(s.base_offset, s.remote.segment_id, s.remote.end_offset) for s in ref.segments if s.remote]


def test_a_segment_stored_twice_is_read_once_and_named(tmp_path: Path) -> None:
    logs, folder = _store(tmp_path)
    original = _remote_segments(
        plan_read([str(logs)], ReadOptions.from_options({"remoteStorage": str(folder.parent.parent)}))
    )
    [seg_id] = [s[1] for s in original if s[0] == 648]
    for f in folder.glob(f"{648:020d}-{seg_id}.*"):
        f.with_name(f.name.replace(seg_id, "BBBBBBBBBBBBBBBBBBBBBB")).write_bytes(f.read_bytes())
    opts = {"remoteStorage": str(folder.parent.parent), "topics": "payments"}
    plan = plan_read([str(logs)], ReadOptions.from_options(opts))
    assert _remote_segments(plan) == original  # the metadata's segment, once
    [named] = plan.not_read
    assert not named.lost and named.path == str(folder / f"{648:020d}-BBBBBBBBBBBBBBBBBBBBBB.log")
    assert (named.first_offset, named.last_offset) == (648, 971)
    # without the remote log metadata among the inputs: one object per start offset, the other named
    bare = realworld.writable_copy(logs, tmp_path / "kafka-logs")
    for d in bare.glob("__remote_log_metadata-*"):
        import shutil

        shutil.rmtree(d)
    plan = plan_read([str(bare)], ReadOptions.from_options(opts))
    assert [s[0] for s in _remote_segments(plan)] == [0, 324, 648, 972]
    [named] = plan.not_read
    assert not named.lost and (named.first_offset, named.last_offset) == (648, 971)
    assert named.path.endswith(".log") and os.path.basename(named.path).startswith(f"{648:020d}-")


def test_a_copied_segment_with_no_object_is_a_named_gap(tmp_path: Path) -> None:
    logs, folder = _store(tmp_path)
    [log] = folder.glob(f"{0:020d}-*.log")
    for f in folder.glob(log.name[:-4] + ".*"):
        f.unlink()  # the first segment: no later segment shows the gap by where it starts
    plan = plan_read(
        [str(logs)],
        ReadOptions.from_options({"remoteStorage": str(folder.parent.parent), "topics": "payments"}),
    )
    [gap] = plan.not_read
    assert gap.lost and (gap.first_offset, gap.last_offset) == (0, 323) and gap.path == str(log)
    assert "offsets 0-323 not read" in gap.error
    # without the metadata: the log start offset checkpoint (0) says where the partition starts
    import shutil

    bare = realworld.writable_copy(logs, tmp_path / "kafka-logs")
    for d in bare.glob("__remote_log_metadata-*"):
        shutil.rmtree(d)
    plan = plan_read(
        [str(bare)],
        ReadOptions.from_options({"remoteStorage": str(folder.parent.parent), "topics": "payments"}),
    )
    [gap] = plan.not_read
    assert gap.lost and (gap.first_offset, gap.last_offset) == (0, 323)
    assert "log-start-offset-checkpoint" in gap.error


@pytest.mark.parametrize("variant", ["kafka-local", "aiven/encrypted"])
def test_the_real_stores_have_nothing_to_name(variant: str) -> None:
    tiered = realworld.require_tiered()
    store = "kafka-local/remote" if variant == "kafka-local" else "aiven/encrypted/storage"
    plan = plan_read(
        [str(tiered / variant / "kafka-logs")],
        ReadOptions.from_options({"remoteStorage": str(tiered / store)}),
    )
    assert plan.not_read == () and plan.left_out == ("__remote_log_metadata",)


def _move_batch(log: Path, index: int, delta: int) -> tuple[int, int, int]:
    """Change the base offset of batch ``index`` (negative: from the end) of ``log`` by ``delta`` (the
    base offset is outside the CRC: the batch stays valid); returns its (position, first, last) offsets
    as kafka-python reads them before the change."""
    from kafka.record import MemoryRecords

    data = bytearray(log.read_bytes())
    spans = []
    records = MemoryRecords(bytes(data))
    pos = 0
    while records.has_next():
        batch = records.next_batch()
        if batch is None:
            break
        offsets = [r.offset for r in batch]
        spans.append((pos, offsets[0], offsets[-1]))
        pos += 12 + int.from_bytes(data[pos + 8 : pos + 12], "big")
    position, first, last = spans[index]
    data[position : position + 8] = (first + delta).to_bytes(8, "big", signed=True)
    log.write_bytes(bytes(data))
    return position, first, last


def _read_offsets(plan) -> tuple[list[tuple[int, int]], list[str]]:
    from logdoctor.logdir.slices import parse_read_options, plan_slices
    from logdoctor.spark.sources.slice_reader import read_slice

    opts = parse_read_options({})
    problems: list[dict] = []
    got = [
        (p, o)
        for sl in plan_slices(plan.refs, opts)
        for rb in read_slice(sl, opts, problems=problems)
        for p, o in zip(rb.column("partition").to_pylist(), rb.column("offset").to_pylist(), strict=True)
    ]
    return got, [p["error"] for p in problems]


def test_a_remote_batch_moved_past_its_segment_is_read_once_and_named(tmp_path: Path) -> None:
    """Issue 31 item 2: the last batch of payments-0's remote segment [648, 971] moved forward by its
    record count (outside the CRC): its offsets would overlap the next segment's (54 twice, 54 missing);
    now each offset is read once and both are named."""
    logs, folder = _store(tmp_path)
    [log] = folder.glob(f"{648:020d}-*.log")
    position, first, last = _move_batch(log, -1, 54)
    assert (first, last) == (918, 971)  # kafka-python: the segment's last batch
    plan = plan_read(
        [str(logs)],
        ReadOptions.from_options({"remoteStorage": str(folder.parent.parent), "topics": "payments"}),
    )
    got, problems = _read_offsets(plan)
    p0 = sorted(o for p, o in got if p == 0)
    assert len(p0) == len(set(p0))  # never twice
    assert set(range(2000)) - set(p0) == set(range(first, last + 1))
    assert any(f"{log}@{position}" in e and f"offsets {first}-{last}" in e for e in problems), problems


def test_a_local_batch_whose_base_offset_goes_back_is_not_read_twice(tmp_path: Path) -> None:
    tiered = realworld.require_tiered()
    logs = realworld.writable_copy(tiered / "original" / "kafka-logs", tmp_path / "kafka-logs")
    log = logs / "audit-0" / f"{0:020d}.log"
    position, first, last = _move_batch(log, 1, -5)  # its base offset 5 below where it starts
    plan = plan_read([str(logs)], ReadOptions.from_options({"topics": "audit"}))
    got, problems = _read_offsets(plan)
    offsets = sorted(o for _p, o in got)
    assert len(offsets) == len(set(offsets))
    assert set(range(900)) - set(offsets) == set(range(first, last + 1))
    assert any(f"{log}@{position}" in e and "goes back" in e for e in problems), problems


def test_a_segment_finished_twice_in_the_metadata_is_read_once_and_named(tmp_path: Path) -> None:
    """The same segment uploaded twice and both COPY_SEGMENT_FINISHED (a leader change, KAFKA-15168):
    its offsets are read from one of the two, the other named."""
    from logdoctor.logdir.discovery import discover
    from logdoctor.logdir.remote_attach import attach_remote
    from logdoctor.logdir.remote_metadata import replay_remote_log_metadata
    from logdoctor.logdir.remote_store import RemoteOptions

    logs, folder = _store(tmp_path)
    metadata = replay_remote_log_metadata([str(logs)])
    [rp] = [rp for tip, rp in metadata.partitions.items() if tip.partition == 0]
    [seg] = [s for s in rp.copied if s.start_offset == 324]
    twin = "CCCCCCCCCCCCCCCCCCCCCC"
    import dataclasses

    rp.segments[twin] = dataclasses.replace(seg, segment_id=twin)
    for f in folder.glob(f"{324:020d}-{seg.segment_id}.*"):
        f.with_name(f.name.replace(seg.segment_id, twin)).write_bytes(f.read_bytes())
    problems: list = []
    refs = attach_remote(
        [r for r in discover([str(logs)]) if r.topic == "payments"],
        RemoteOptions(str(folder.parent.parent)),
        metadata=metadata,
        problems=problems,
    )
    [ref] = [r for r in refs if r.partition == 0]
    starts = [s.base_offset for s in ref.segments if s.remote is not None]
    assert starts == [0, 324, 648, 972]
    [named] = problems
    assert not named.lost and (named.first_offset, named.last_offset) == (324, 647)
