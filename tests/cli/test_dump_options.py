"""Options of ``logdoctor dump``: seek ranges, --max-bytes, decoders, --verify-index, other file kinds."""

from __future__ import annotations

import itertools
import struct
from pathlib import Path

import pytest
from test_dump import dump, kafka_python_batches

import realworld
from logdoctor.formats.index import OffsetEntry, TimeEntry, write_offset_index, write_time_index
from logdoctor.formats.record_types import RecordSpec
from logdoctor.formats.writer import build_record_batch

METADATA_LOG = "kraft-3.5-greenlemont-n1/__cluster_metadata-0/00000000000000000000.log"
OFFSETS_LOG = "zk-pre2.8-volodymyrzee/__consumer_offsets-18/00000000000000000000.log"


@pytest.fixture(scope="module")
def metadata_log() -> Path:
    return realworld.require() / METADATA_LOG


@pytest.fixture(scope="module")
def metadata_batches(metadata_log):
    return kafka_python_batches(metadata_log.read_bytes())


def test_offsets_seek_with_the_index(metadata_log, metadata_batches):
    records = [r for b in metadata_batches for r in b.records]
    a, b = records[len(records) // 2].offset, records[len(records) // 2 + 40].offset
    run = dump("--json", "--deep", "--offsets", f"{a}:{b}", metadata_log)
    assert run.exit_code == 0, run.stderr
    got = [r["offset"] for r in run.of_type("record")]
    assert got == [r.offset for r in records if a <= r.offset <= b]
    (summary,) = run.of_type("summary")
    assert summary["seek"] == "offset-index" and summary["start_position"] > 0
    assert summary["bytes_read"] < summary["size"] / 20
    # batches: exactly those holding an offset of the range
    want = [x.position for x in metadata_batches if x.last_offset >= a and x.base_offset <= b]
    assert [x["position"] for x in run.of_type("batch")] == want


def test_single_offset_and_open_ranges(metadata_log, metadata_batches):
    target = metadata_batches[100]
    run = dump("--json", "--offsets", str(target.last_offset), metadata_log)
    assert [b["position"] for b in run.of_type("batch")] == [target.position]
    last = metadata_batches[-1]
    run = dump("--json", "--offsets", f"{last.base_offset}:", metadata_log)
    assert [b["position"] for b in run.of_type("batch")] == [last.position]
    run = dump("--json", "--offsets", ":2", metadata_log)
    assert run.of_type("batch")[-1]["last_offset"] >= 2 and run.of_type("batch")[0]["position"] == 0


def test_timestamps_seek_with_the_time_index(metadata_log, metadata_batches):
    records = [r for b in metadata_batches for r in b.records]
    lo = records[len(records) // 3].timestamp
    hi = lo + 5_000
    run = dump("--json", "--deep", "--timestamps", f"{lo}:{hi}", metadata_log)
    assert run.exit_code == 0, run.stderr
    got = [r["offset"] for r in run.of_type("record")]
    # Kafka's ListOffsets semantics: from the first batch whose max timestamp >= lo ...
    start = next(
        i for i, x in enumerate(metadata_batches) if x.records and max(r.timestamp for r in x.records) >= lo
    )
    stop = next(
        (
            i
            for i in range(start, len(metadata_batches))
            if metadata_batches[i].records and max(r.timestamp for r in metadata_batches[i].records) > hi
        ),
        len(metadata_batches) - 1,
    )
    want = [
        r.offset for x in metadata_batches[start : stop + 1] for r in x.records if lo <= r.timestamp <= hi
    ]
    assert got == want and got
    (summary,) = run.of_type("summary")
    assert summary["seek"] == "time-index" and summary["bytes_read"] < summary["size"] / 4


def test_iso_timestamps(metadata_log):
    a = dump("--json", "--timestamps", "2023-01-01T00:00:00Z:", metadata_log)
    b = dump("--json", "--timestamps", "1672531200000:", metadata_log)
    assert a.exit_code == b.exit_code == 0
    assert a.of_type("batch") == b.of_type("batch")


def test_max_bytes(metadata_log, metadata_batches):
    limit = metadata_batches[10].position + 5  # batch 10 does not fit
    run = dump("--json", "--max-bytes", str(limit), metadata_log)
    assert run.exit_code == 0
    assert len(run.of_type("batch")) == 10
    assert not run.of_type("finding")  # no "invalid bytes" when the limit cut the walk (as Kafka)


def test_seek_on_a_large_generated_segment(tmp_path):
    """~64 MiB segment: an --offsets dump reads a tiny part of it (counted by the reader)."""
    base, n, value = 5000, 512, b"x" * 16384
    log = tmp_path / f"{base:020d}.log"
    entries, times, pos = [], [], 0
    with open(log, "wb") as f:
        for i in range(n):
            raw = build_record_batch(
                [RecordSpec(value, timestamp=1_600_000_000_000 + i * 10 + j) for j in range(8)],
                base_offset=base + 8 * i,
            )
            if i:
                entries.append(OffsetEntry(base + 8 * i + 7, pos))
                times.append(TimeEntry(1_600_000_000_000 + i * 10 + 7, base + 8 * i + 7))
            f.write(raw)
            pos += len(raw)
    log.with_suffix(".index").write_bytes(write_offset_index(entries, base))
    log.with_suffix(".timeindex").write_bytes(write_time_index(times, base))
    target = base + 8 * 300 + 3
    run = dump("--json", "--deep", "--offsets", f"{target}:{target + 9}", log)
    assert [r["offset"] for r in run.of_type("record")] == list(range(target, target + 10))
    (s,) = run.of_type("summary")
    assert s["size"] > 64 * 1024 * 1024 and s["bytes_read"] < s["size"] / 100
    run = dump("--json", "--timestamps", f"{1_600_000_000_000 + 4000}:{1_600_000_000_000 + 4005}", log)
    assert [b["base_offset"] for b in run.of_type("batch")] == [base + 8 * 400]
    (s,) = run.of_type("summary")
    assert s["bytes_read"] < s["size"] / 100


def test_explicit_decoder_on_a_copied_file(tmp_path, realworld_dir):
    """A __consumer_offsets segment out of its folder: auto finds nothing, the explicit decoder works."""
    p = tmp_path / "00000000000000000000.log"
    realworld.writable_copy(realworld_dir / OFFSETS_LOG, p)
    auto = dump("--json", "--deep", p)
    assert all("decoded" not in r for r in auto.of_type("record"))
    explicit = dump("--json", "--decoder", "consumer-offsets", p)  # implies --deep
    recs = explicit.of_type("record")
    assert recs and all(r["decoded"]["type"] in ("OffsetCommit", "GroupMetadata") for r in recs), recs[0]
    none = dump("--json", "--deep", "--decoder", "none", realworld_dir / OFFSETS_LOG)
    assert all("decoded" not in r for r in none.of_type("record"))


def test_legacy_v1_messages(realworld_dir):
    log = realworld_dir / "zk-0.10.1-xpxwo100/TEST-TOPIC-0/00000000000000000000.log"
    run = dump("--json", "--deep", "--max-bytes", "20000", log)
    expected = [b for b in kafka_python_batches(log.read_bytes()) if b.position + 0 < 20000]
    batches = run.of_type("batch")
    assert batches and all(b["magic"] == 1 and b["producer_id"] == -1 for b in batches)
    recs = run.of_type("record")
    flat = [r for b in expected[: len(batches)] for r in b.records]
    assert [(r["offset"], r["timestamp"]) for r in recs] == [(r.offset, r.timestamp) for r in flat]


def test_verify_index_through_the_cli(tmp_path, realworld_dir):
    src = realworld_dir / "kraft-4.2-nomanazeem/__cluster_metadata-0/00000000000000000000"
    for suffix in (".log", ".index", ".timeindex"):
        realworld.writable_copy(src.with_suffix(suffix), tmp_path / (src.name + suffix))
    idx = tmp_path / (src.name + ".index")
    healthy = dump("--json", "--verify-index", idx, idx.with_suffix(".timeindex"), idx.with_suffix(".log"))
    assert healthy.exit_code == 0 and not healthy.of_type("finding")
    assert all(e["status"] == "ok" for e in healthy.of_type("index_entry"))
    data = bytearray(idx.read_bytes())
    rel, pos = struct.unpack_from(">ii", data, 16)
    struct.pack_into(">i", data, 16, rel - 1)  # (rel + 1 could be a valid pre-KAFKA-806 chunk entry)
    idx.write_bytes(bytes(data))
    run = dump("--json", "--verify-index", idx)
    assert run.exit_code == 2
    (f,) = run.of_type("finding")
    assert f["code"] == "INDEX_OFFSET_MISMATCH" and f["entry"] == {"offset": rel - 1, "position": pos}
    assert f["log"]["last_offset"] == rel
    assert [e["status"] for e in run.of_type("index_entry")][2] == "INDEX_OFFSET_MISMATCH"
    # --verify-index on the .log checks its sibling indexes too
    via_log = dump("--json", "--verify-index", idx.with_suffix(".log"))
    assert [x["code"] for x in via_log.of_type("finding")] == ["INDEX_OFFSET_MISMATCH"]
    # and the text form lists it with the entry
    text = dump("--verify-index", idx)
    assert "INDEX_OFFSET_MISMATCH slot 2" in text.stdout


def test_index_entries_are_absolute(realworld_dir):
    idx = realworld_dir / "zk-3.7-nikhildighe-b0/__consumer_offsets-12/00000000000000000000.index"
    run = dump("--json", idx)
    entries = run.of_type("index_entry")
    data = idx.read_bytes()
    assert [(e["offset"], e["position"]) for e in entries] == [
        struct.unpack_from(">ii", data, 8 * i) for i in range(len(data) // 8)
    ]
    tix = realworld_dir / "zk-3.7-nikhildighe-b0/__consumer_offsets-12/00000000000000000862.timeindex"
    (e,) = dump("--json", tix).of_type("index_entry")
    ts, rel = struct.unpack_from(">qi", tix.read_bytes(), 0)
    assert (e["timestamp"], e["offset"]) == (ts, 862 + rel)


def test_small_file_kinds(realworld_dir):
    d = realworld_dir / "kraft-3.9-duongnvt2110"
    files = {
        "quorum_state": d / "__cluster_metadata-0/quorum-state",
        "leader_epoch_entry": d / "__cluster_metadata-0/leader-epoch-checkpoint",
        "partition_metadata": d / "__cluster_metadata-0/partition.metadata",
        "meta_properties": d / "meta.properties",
    }
    run = dump("--json", *files.values())
    assert run.exit_code == 0, run.stderr
    for t, p in files.items():
        objs = [o for o in run.of_type(t) if o["file"] == str(p)]
        assert objs, t
    (meta,) = run.of_type("meta_properties")
    text = files["meta_properties"].read_text()
    assert meta["mode"] == "kraft" and f"node.id={meta['node_id']}" in text
    (pm,) = run.of_type("partition_metadata")
    assert pm["topic_id"] in files["partition_metadata"].read_text()
    epochs = [(o["epoch"], o["start_offset"]) for o in run.of_type("leader_epoch_entry")]
    lines = (
        files["leader_epoch_checkpoint"].read_text().split("\n")
        if False
        else files["leader_epoch_entry"].read_text().splitlines()
    )
    assert epochs == [tuple(map(int, line.split())) for line in lines[2:]]


def test_producer_snapshots(realworld_dir):
    snaps = [p for p in realworld.files(suffix=".snapshot") if p.stat().st_size > 10]
    assert snaps
    run = dump("--json", *snaps)
    assert run.exit_code == 0, run.stderr
    for p in snaps:
        (header,) = [o for o in run.of_type("file") if o["file"] == str(p)]
        count = struct.unpack_from(">i", p.read_bytes(), 6)[0]
        states = [o for o in run.of_type("producer_state") if o["file"] == str(p)]
        assert header["entries"] == count == len(states)
        for i, s in enumerate(states):  # ProducerSnapshot.json field order, read independently here
            pid, epoch, last_seq, last_off = struct.unpack_from(">qhiq", p.read_bytes(), 10 + 46 * i)
            assert (s["producer_id"], s["producer_epoch"], s["last_sequence"], s["last_offset"]) == (
                pid,
                epoch,
                last_seq,
                last_off,
            )


def test_kraft_snapshot(realworld_dir):
    snap = next(realworld.files(suffix=".checkpoint"))
    while snap.name == "bootstrap.checkpoint":
        snap = next(p for p in realworld.files(suffix=".checkpoint") if p.name != "bootstrap.checkpoint")
    run = dump("--json", "--deep", snap)
    assert run.exit_code == 0, run.stderr
    (header,) = run.of_type("file")
    assert header["kind"] == "kraft-snapshot" and header["snapshot_end_offset"] == int(snap.name[:20])
    controls = [
        r["decoded"]["control_type"] for r in run.of_type("record") if r["decoded"]["type"] == "control"
    ]
    assert controls[0] == "SNAPSHOT_HEADER" and controls[-1] == "SNAPSHOT_FOOTER"
    others = [r for r in run.of_type("record") if r["decoded"]["type"] != "control"]
    assert all(r["decoder"] == "cluster-metadata" for r in others)


def test_text_output_for_people(metadata_log, metadata_batches):
    run = dump(
        "--deep",
        "--offsets",
        f"{metadata_batches[5].base_offset}:{metadata_batches[6].last_offset}",
        metadata_log,
    )
    assert run.exit_code == 0
    lines = run.stdout.splitlines()
    assert lines[0].startswith(f"Dumping {metadata_log}") and "decoder cluster-metadata" in lines[0]
    assert "position" in lines[1] and "base_offset" in lines[1]
    assert sum(1 for line in lines if line.lstrip().startswith("| offset")) == sum(
        len(b.records) for b in metadata_batches[5:7]
    )
    assert lines[-1].strip().startswith("summary: 2 batches")


def test_non_consecutive_offsets_are_reported(realworld_dir):
    """Compacted __consumer_offsets segments skip offsets: DumpLogSegments lists them; so do we (info)."""
    for log in realworld.files(suffix=".log"):
        batches = kafka_python_batches(log.read_bytes()) if log.stat().st_size else []
        offsets = [r.offset for b in batches for r in b.records]
        gaps = [(a, b) for a, b in itertools.pairwise(offsets) if b != a + 1]
        if gaps:
            break
    else:
        pytest.skip("no real log with offset gaps")
    run = dump("--json", "--deep", log)
    found = [
        (f["log"]["offset"], f["log"]["next_offset"])
        for f in run.of_type("finding")
        if f["code"] == "LOG_NON_CONSECUTIVE_OFFSETS"
    ]
    assert found == gaps
    assert run.exit_code == 0  # info, not an error

# --- --max-batches (issue 58 item 3) ---------------------------------------------------------------------
# Kafka's DumpLogSegments bounds a dump by bytes (--max-bytes, KAFKA-13687, the option KIP-824 added:
# FileRecords.open(file).slice(0, maxBytes) in core/src/main/scala/kafka/tools/DumpLogSegments.scala, a batch
# cut by the limit left out without an "invalid bytes" line); it has no batch count. --max-batches N is
# checked against it: the same batches as --max-bytes up to the end of the N-th batch, which are
# kafka-python's first N batches of the real segment (the independent decoder); and against the bytes the
# dump's own reader counts (bytes_read in its summary): only what those batches need.


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
