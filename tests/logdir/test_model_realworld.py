"""The lazy model on every real log dir of ../shared/realworld.

Oracles: MANIFEST.json (written by whoever collected the dirs), kafka-python's decoder
(kafka.record.MemoryRecords) for the log end offsets, and a plain text split of the checkpoint
files for recovery points and high watermarks.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatch
from kafka.record.memory_records import MemoryRecords

import realworld
from logdoctor.logdir import LogDir

pytestmark = pytest.mark.realworld


def _kafka_python_next_offset(log_file: Path, base_offset: int) -> int:
    """Next offset after the last complete batch, decoded by kafka-python (independent of ours)."""
    last = None
    for batch in MemoryRecords(log_file.read_bytes()):
        if isinstance(batch, DefaultRecordBatch):
            last = batch.last_offset
        else:  # v0/v1 entry: walk its (inner) messages for their absolute offsets
            for rec in batch:
                last = rec.offset
    return base_offset if last is None else last + 1


def _plain_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    if not path.exists():
        return {}
    lines = path.read_text().splitlines()
    out = {}
    for line in lines[2:]:
        t, p, o = line.split(" ")
        out[(t, int(p))] = int(o)
    return out


@pytest.mark.parametrize("path", realworld.params(realworld.log_dirs()))
def test_every_partition_listed(path):
    entry = next(e for e in realworld.manifest()["entries"] if e["name"] == path.name)
    ld = LogDir(path)
    listed = {(p.topic, p.partition) for p in ld.partitions}
    expected = {(t, p) for t, ps in entry["topics"].items() for p in ps}
    assert listed == expected
    assert len(ld.partitions) == entry["n_partitions"]
    assert [(p.topic, p.partition) for p in ld.partitions] == sorted(listed)
    # no -delete/-future folders nor strange files here; one broker left a checkpoint's .tmp behind
    tmp_files = {n for n in entry["root_files"] if n.endswith(".tmp")}
    assert {(o.path.name, o.kind) for o in ld.orphans} == {(n, "tmp-file") for n in tmp_files}
    assert ld.has_clean_shutdown_marker == entry["has"]["clean_shutdown_marker"]
    assert ld.is_locked is False  # nobody runs a broker on the shared copies


@pytest.mark.parametrize("path", realworld.params(realworld.log_dirs()))
def test_log_end_offsets_match_kafka_python(path):
    ld = LogDir(path)
    checked = 0
    for p in ld.partitions:
        active = p.active_segment
        if active is None:
            assert p.log_end_offset is None
            continue
        assert p.log_end_offset == _kafka_python_next_offset(active.log_path, active.base_offset), p
        checked += 1
        assert p.log_start_offset is not None and p.log_start_offset <= p.log_end_offset
    entry = next(e for e in realworld.manifest()["entries"] if e["name"] == path.name)
    # every partition whose .log files were in the snapshot was checked
    with_logs = {Path(f["file"]).parent.name for f in entry["per_log"] if f["file"].endswith(".log")}
    assert checked >= len(with_logs)


@pytest.mark.parametrize("path", realworld.params(realworld.log_dirs()))
def test_checkpoints_read(path):
    ld = LogDir(path)
    rp = _plain_checkpoint(path / "recovery-point-offset-checkpoint")
    hw = _plain_checkpoint(path / "replication-offset-checkpoint")
    ls = _plain_checkpoint(path / "log-start-offset-checkpoint")
    for p in ld.partitions:
        tp = (p.topic, p.partition)
        assert p.recovery_point == rp.get(tp)
        assert p.high_watermark == hw.get(tp)
        assert p.log_start_offset_checkpoint == ls.get(tp)
    assert ld.recovery_points.offsets == rp
    assert ld.high_watermarks.offsets == hw


def test_manifest_cross_checks(realworld_dir):
    """Spot checks against MANIFEST per_log data: last offsets and segment sizes."""
    compared = 0
    for entry in realworld.manifest()["entries"]:
        ld = LogDir(realworld_dir / entry["name"])
        for f in entry["per_log"]:
            if not f["file"].endswith(".log") or f["batches"] == 0:
                continue
            folder, name = f["file"].split("/")
            part = next(p for p in ld.partitions if p.name == folder)
            seg = part.segment(int(name[:20]))
            assert seg.size == f["bytes"]
            assert seg.last_offset() == f["last_offset"]
            compared += 1
    assert compared > 20


def test_orphan_index_files_of_missing_logs(realworld_dir):
    """kraft-3.9's snapshot lacks two .log files: their index files are orphans, not segments."""
    entry = next(e for e in realworld.manifest()["entries"] if e["name"] == "kraft-3.9-duongnvt2110")
    ld = LogDir(realworld_dir / entry["name"])
    meta = ld.partition("__cluster_metadata", 0)
    missing = {Path(m["path"]).name for m in entry["files_missing_from_snapshot"]}
    orphan_bases = {o.path.name[:20] for o in meta.orphan_files if o.kind == "index-without-log"}
    assert orphan_bases == {n[:20] for n in missing}
    assert all(o.path.suffix in (".index", ".timeindex") for o in meta.orphan_files)
    assert meta.kraft_snapshots and all(epoch == 2 for _, epoch, _ in meta.kraft_snapshots)


def test_empty_small_files_are_problems_not_crashes(realworld_dir):
    """zk-corrupt-znsio: 0-byte meta.properties, partition.metadata and leader-epoch-checkpoint."""
    ld = LogDir(realworld_dir / "zk-corrupt-znsio")
    # Kafka's MetaProperties.Builder reads an empty file as version 0 with no broker id
    assert ld.meta_properties.version == 0 and ld.meta_properties.node_id is None
    for p in ld.partitions:
        assert p.topic_id is None and p.partition_metadata_read.error is not None
        assert p.leader_epochs == []
    assert len(ld.partitions) == 51
