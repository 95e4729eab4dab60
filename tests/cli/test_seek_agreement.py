"""``dump --offsets/--timestamps`` and the Spark planning seek alike: the same start position in every
segment, the same records, and the answers kafka-python's records give.

Both callers plan with logdoctor.logdir.seek, dump over a LogReader and the index bytes, the data
sources over SegmentRef values (logdoctor.logdir.refs) produced by the model; they must not drift apart.
Data: every real log dir of ../shared/realworld (read in place), a generated one (logdoctor.sample) and
a segment whose time index points at the *last* batch to reach each timestamp, which a lookup of the
entry at or below the target (Kafka's TimeIndex.lookup) would start after the first record at it.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest
from kafka.record import MemoryRecords
from test_dump import dump

import realworld
from logdoctor.formats.index import OffsetEntry, TimeEntry, write_offset_index, write_time_index
from logdoctor.formats.record_types import RecordSpec
from logdoctor.formats.writer import build_record_batch
from logdoctor.logdir.discovery import discover
from logdoctor.logdir.refs import PartitionRef, SegmentRef
from logdoctor.logdir.seek import offset_for_timestamp, seek_timestamp
from logdoctor.logdir.slices import parse_read_options, plan_slices, resolve_range
from logdoctor.sample.logdir import TopicSpec, generate_log_dir
from logdoctor.spark.sources.slice_reader import read_slice

SPAN = 5  # offsets read per offset probe


def _records(seg: SegmentRef) -> list[tuple[int, int, bool]]:
    """(offset, timestamp, in a control batch) of every record of the segment, by kafka-python."""
    return _records_of(seg.path)


@cache
def _records_of(path: str) -> list[tuple[int, int, bool]]:
    out = []
    mr = MemoryRecords(Path(path).read_bytes())
    while (batch := mr.next_batch()) is not None:
        control = bool(getattr(batch, "is_control_batch", False))
        out.extend((r.offset, r.timestamp, control) for r in batch)
    return out


def _dump_run(seg: SegmentRef, option: str, value: str) -> tuple[int, list[tuple[int, int, bool]]]:
    """(start position, (offset, timestamp, control) of each record event) of a deep dump."""
    run = dump("--json", "--deep", option, value, seg.path)
    assert run.exception is None, run.exception
    control = {o["position"]: o["is_control"] for o in run.of_type("batch")}
    (summary,) = run.of_type("summary")
    recs = [(o["offset"], o["timestamp"], control[o["batch_position"]]) for o in run.of_type("record")]
    return summary["start_position"], recs


def _spark_offsets(ref: PartitionRef, seg: SegmentRef, options: dict[str, str]) -> tuple[int, list[int]]:
    """(where the slice of ``seg`` starts reading, the offsets of the rows read) for these options."""
    opts = parse_read_options(options)
    slices = [sl for sl in plan_slices([ref], opts) if sl.segment == seg]
    assert slices, (seg.path, options)
    rows = [o for sl in slices for rb in read_slice(sl, opts) for o in rb.column("offset").to_pylist()]
    return slices[0].read_from, rows


def _check_offsets(ref: PartitionRef, seg: SegmentRef, recs: list[tuple[int, int, bool]]) -> int:
    offsets = [o for o, _, _ in recs]
    probes = sorted({offsets[0], offsets[len(offsets) // 3], offsets[len(offsets) // 2], offsets[-1]})
    for start in probes:
        end = start + SPAN  # exclusive, as endingOffsets
        want = [o for o, _, control in recs if start <= o < end and not control]
        position, got = _dump_run(seg, "--offsets", f"{start}:{end - 1}")
        read_from, rows = _spark_offsets(ref, seg, {"startingOffsets": str(start), "endingOffsets": str(end)})
        assert position == read_from, (seg.path, start)
        assert [o for o, _, control in got if not control] == rows == want, (seg.path, start)
    return len(probes)


def _check_timestamps(ref: PartitionRef, seg: SegmentRef, recs: list[tuple[int, int, bool]]) -> int:
    stamps = sorted({t for _, t, _ in recs if t >= 0})
    if not stamps:
        return 0
    probes = sorted({stamps[0] - 1, stamps[0], stamps[len(stamps) // 2], stamps[-1], stamps[-1] + 1})
    alone = replace(ref, segments=(seg,))  # the partition as if this segment were all of it
    for ts in probes:
        first = next(((o, t) for o, t, _ in recs if t >= ts), None)  # the first record at or after ts
        want = first[0] if first is not None else None
        # up to that record's timestamp: the dump stops at the first batch past it, not at the end
        position, got = _dump_run(seg, "--timestamps", f"{ts}:{first[1] if first is not None else ''}")
        assert position == seek_timestamp(seg, ts), (seg.path, ts)
        assert (got[0][0] if got else None) == want, (seg.path, ts)
        assert offset_for_timestamp(alone.segments, ts) == want, (seg.path, ts)
        start = resolve_range(alone, parse_read_options({"startingTimestamp": str(ts)})).start_offset
        assert start == (want if want is not None else 2**63 - 1), (seg.path, ts)
    return len(probes)


def _segments(log_dir: Path, per_dir: int = 2) -> list[tuple[PartitionRef, SegmentRef]]:
    """Every segment whose offset index is used, and the first ``per_dir`` other non-empty ones."""
    from logdoctor.logdir.seek import segment_offset_entries

    indexed, plain = [], []
    for ref in discover(str(log_dir)):
        for seg in ref.segments:
            if seg.size == 0:
                continue
            (indexed if segment_offset_entries(seg) else plain).append((ref, seg))
    return indexed + plain[:per_dir]


def _check_log_dir(log_dir: Path) -> tuple[int, int]:
    checked = probes = 0
    for ref, seg in _segments(log_dir):
        recs = _records(seg)
        if not recs:
            continue
        checked += 1
        probes += _check_offsets(ref, seg, recs) + _check_timestamps(ref, seg, recs)
    return checked, probes


@pytest.mark.parametrize("name", realworld.name_params())
def test_dump_and_spark_seek_alike_in_real_log_dirs(name):
    realworld.require()
    checked, _ = _check_log_dir(realworld.REALWORLD / name)
    assert checked > 0 or not any(
        s.size for r in discover(str(realworld.REALWORLD / name)) for s in r.segments
    )


def test_the_real_log_dirs_exercise_the_indexes():
    """The real data has segments whose offset index and time index both move the start off 0."""
    realworld.require()
    from logdoctor.logdir.seek import seek_offset

    moved_by_offset = moved_by_time = 0
    for d in realworld.log_dirs():
        for _, seg in _segments(d, per_dir=0):
            recs = _records(seg)
            if not recs:
                continue
            moved_by_offset += seek_offset(seg, recs[-1][0]) > 0
            moved_by_time += seek_timestamp(seg, max(t for _, t, _ in recs)) > 0
    assert moved_by_offset >= 5 and moved_by_time >= 3, (moved_by_offset, moved_by_time)


def test_dump_and_spark_seek_alike_in_a_generated_log_dir(tmp_path):
    log_dir, _ = generate_log_dir(
        tmp_path / "broker",
        [
            TopicSpec(
                "events",
                partitions=1,
                records_per_partition=5000,
                records_per_batch=7,
                value_size=120,
                segment_bytes=256 * 1024,
            ),
        ],
    )
    checked, probes = _check_log_dir(log_dir)
    assert checked >= 3 and probes >= 25


T0 = 1_700_000_000_000


def _tied_segment(folder: Path, pairs: int = 40) -> list[tuple[int, int]]:
    """A segment whose batches come in pairs sharing one max timestamp, with a time index whose entries
    name the *second* batch of a pair (as a tool that records the last batch to reach a maximum would;
    Kafka records the first). Every batch is in the offset index. Returns (offset, timestamp) of each
    record."""
    folder.mkdir(parents=True)
    pos, offsets, times, recs = 0, [], [], []
    with open(folder / f"{0:020d}.log", "wb") as f:
        for i in range(2 * pairs):
            base, ts = i * 4, T0 + (i // 2) * 1000
            specs = [RecordSpec(b"v" * 300, timestamp=ts - 3 + j) for j in range(4)]
            raw = build_record_batch(specs, base_offset=base)
            if i:
                offsets.append(OffsetEntry(base + 3, pos))
            if i % 2:
                times.append(TimeEntry(ts, base + 3))
            recs.extend((base + j, ts - 3 + j) for j in range(4))
            f.write(raw)
            pos += len(raw)
    (folder / f"{0:020d}.index").write_bytes(write_offset_index(offsets, 0))
    (folder / f"{0:020d}.timeindex").write_bytes(write_time_index(times, 0))
    return recs


def test_a_time_index_naming_the_last_batch_at_a_timestamp_still_finds_the_first(tmp_path):
    recs = _tied_segment(tmp_path / "logs" / "tied-0")
    (ref,) = discover(str(tmp_path / "logs" / "tied-0"))
    (seg,) = ref.segments
    for k in (1, 7, 20, 39):
        ts = T0 + k * 1000  # reached first by the last record of batch 2k, then again by batch 2k+1's
        want = next(o for o, t in recs if t >= ts)
        assert want == 2 * k * 4 + 3
        position, got = _dump_run(seg, "--timestamps", f"{ts}:")
        assert got[0][0] == want
        assert position == seek_timestamp(seg, ts) > 0
        assert offset_for_timestamp(ref.segments, ts) == want
        assert resolve_range(ref, parse_read_options({"startingTimestamp": str(ts)})).start_offset == want
