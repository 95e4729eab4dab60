"""The demo fleet's tiered partition (orders-2): its remote tier in LocalTieredStorage's layout beside the
brokers, the ``__remote_log_metadata`` events describing it, and its local segments, checked with
kafka-python (an independent decoder) for every record: remote + local = every offset of the partition
once, the metadata's offsets and sizes = the objects', and the scan and inventory report it as tiered."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kafka.record import MemoryRecords

from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.inventory import build_inventory
from logdoctor.checks.scanner import scan
from logdoctor.logdir.remote_metadata import replay_remote_log_metadata
from logdoctor.sample.fleet import generate_demo_fleet
from logdoctor.sample.remote_tier import REMOTE_STORE_DIR, TieredPartition

NOW = 1_790_000_000_000
_OBJ = re.compile(r"^(\d{20})-([A-Za-z0-9_-]{22})\.(log|index|timeindex|snapshot|leader_epoch_checkpoint)$")


def offsets(data: bytes) -> list[int]:
    out: list[int] = []
    records = MemoryRecords(data)
    while records.has_next():
        batch = records.next_batch()
        if batch is None:
            break
        assert batch.validate_crc()
        out.extend(r.offset for r in batch)
    return out


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("demo-tiered") / "fleet"
    return generate_demo_fleet(root, now_ms=NOW)


def test_remote_objects_and_local_segments_hold_every_record_once(demo) -> None:
    fault = next(f for f in demo.fleet.spec.faults if isinstance(f, TieredPartition))
    reps = [r for r in demo.fleet.replicas if (r.topic, r.partition) == (fault.topic, fault.partition)]
    assert len(reps) == 3
    store = demo.root / REMOTE_STORE_DIR / "kafka-tiered-storage" / f"orders-2-{reps[0].topic_id}"
    objects: dict[str, dict[str, Path]] = {}
    for p in store.iterdir():
        m = _OBJ.match(p.name)
        assert m, p.name
        objects.setdefault(m.group(2), {})[m.group(3)] = p
    assert set(objects) == set(fault.segment_ids) and len(objects) >= 2
    assert all(
        set(v) == {"log", "index", "timeindex", "snapshot", "leader_epoch_checkpoint"}
        for v in objects.values()
    )
    remote = sorted(o for v in objects.values() for o in offsets(v["log"].read_bytes()))
    assert remote == list(range(fault.remote_end))
    for rep in reps:
        local = sorted(o for seg in sorted(rep.path.glob("*.log")) for o in offsets(seg.read_bytes()))
        assert local[0] == fault.remote_end > 0
        assert sorted(remote + local) == list(range(rep.log_end_offset))  # every record once
        assert (rep.log_dir / f"__remote_log_metadata-{fault.metadata_partition}").is_dir()
        assert (
            f"orders 2 {rep.log_start_offset}\n" in (rep.log_dir / "log-start-offset-checkpoint").read_text()
        )
        assert rep.log_start_offset == 0


def test_the_metadata_describes_the_objects(demo) -> None:
    fault = next(f for f in demo.fleet.spec.faults if isinstance(f, TieredPartition))
    rep = next(r for r in demo.fleet.replicas if (r.topic, r.partition) == ("orders", 2))
    md = replay_remote_log_metadata([rep.log_dir])
    assert md.problems == []
    rp = md.partition(rep.topic_id, "orders", 2)
    assert rp is not None and rp.metadata_partition == fault.metadata_partition
    store = demo.root / REMOTE_STORE_DIR / "kafka-tiered-storage" / f"orders-2-{rep.topic_id}"
    for s in rp.copied:
        log = store / f"{s.start_offset:020d}-{s.segment_id}.log"
        got = offsets(log.read_bytes())
        assert (s.start_offset, s.end_offset, s.size) == (got[0], got[-1], log.stat().st_size)
    assert rp.remote_log_end_offset == fault.remote_end


def test_scan_and_inventory_show_the_remote_part(demo) -> None:
    rep = next(r for r in demo.fleet.replicas if (r.topic, r.partition) == ("orders", 2))
    dirs = [str(d) for d in demo.fleet.log_dirs[rep.broker_id]]
    report = scan(dirs, ScanOptions(now_ms=NOW), jobs=1)
    assert [f for f in report.findings if f.code.startswith("REMOTE_")] == []
    part = next(p for p in report.partitions if (p.topic, p.partition) == ("orders", 2))
    assert (part.log_start_offset, part.first_base_offset) == (0, rep.segments[0].base_offset)
    inv = build_inventory(dirs, Depth.DEFAULT, now_ms=NOW)
    row = next(
        r for r in inv.rows if r["record"] == "replica" and (r["topic"], r["partition"]) == ("orders", 2)
    )
    fault = next(f for f in demo.fleet.spec.faults if isinstance(f, TieredPartition))
    assert row["remote_segments"] == len(fault.segment_ids)
    assert row["remote_log_start_offset"] == 0 and row["remote_log_end_offset"] == fault.remote_end
    assert row["log_start_offset"] == 0
