"""Repair copies of real broker log dirs damaged the ways the scan finds, then check with the scan,
kafka-python (records) and formats.recovery (indexes)."""

from __future__ import annotations

import os
import struct
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import damage

import kp_oracle
import realworld
from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.formats.recovery import rebuild_indexes
from logdoctor.logdir.names import (
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    parse_segment_file,
)
from logdoctor.repair import apply_plan, plan_repair, rollback

DIRS = [
    "zk-0.10.1-xpxwo100",
    "zk-2.7-donaldy",
    "zk-3.0-tuyen-nnt-b0",
    "zk-3.7-nikhildighe-b0",
    "zk-pre2.8-volodymyrzee",
    "kraft-3.5-greenlemont-single",
    "kraft-3.5-greenlemont-n1",
    "kraft-4.2-nomanazeem",
]
REPAIRED = {
    "INDEX_CORRUPT",
    "INDEX_MISSING",
    "RETENTION_RISK",
    "CHECKPOINT_MISMATCH",
    "CHECKPOINT_CORRUPT",
    "LOG_CORRUPT",
    "ORPHAN_FILE",
    "PERMISSION_DENIED",
    "LEADER_EPOCH_BEYOND_LOG_END",
    "PRODUCER_SNAPSHOT_AHEAD",
}


def _params():
    if not realworld.available():
        return realworld.params([])
    return [pytest.param(n, id=n) for n in DIRS]


def _scan(d: Path):
    return scan([d], ScanOptions(depth=Depth.DEFAULT), jobs=1)


def damage_log_dir(root: Path, variant: int) -> dict:
    """Plant every kind of damage the scan issue lists; return what was planted where."""
    p = damage.biggest_partition(root)
    assert p is not None
    logs = sorted(p.glob("*.log"))
    if len(logs) == 1:
        bases = damage.split_into_segments(p, 3 if len(damage.batch_positions(logs[0])) >= 6 else 2)
    else:
        bases = [parse_segment_file(x.name).base_offset for x in logs]
    s0, s1, active = bases[0], bases[1], bases[-1]
    seg = lambda b, sfx: p / f"{b:020d}{sfx}"  # noqa: E731
    # unclean shutdown: untrimmed (zero-padded) indexes on an inactive segment
    damage.pad_index(seg(s0, ".index"), 8)
    damage.pad_index(seg(s0, ".timeindex"), 12)
    # a zeroed / empty / unreadable .timeindex on an inactive segment
    t1 = seg(s1, ".timeindex") if len(bases) > 2 else seg(s0, ".timeindex")
    kind = ("zeroed", "empty", "unreadable")[variant % 3]
    if kind == "zeroed":
        t1.write_bytes(b"\0" * max(12, t1.stat().st_size))
    elif kind == "empty":
        t1.write_bytes(b"")
        os.utime(t1.with_suffix(".log"), (1_000_000, 1_000_000))  # an old mtime: retention would fire
    else:
        os.chown(t1, 0, 0)
        os.chmod(t1, 0o600)
    # a torn final batch in the active segment
    damage.cut_final_batch(seg(active, ".log"))
    # checkpoints: a stale count line and an entry beyond the log end
    topic, _, num = p.name.rpartition("-")
    damage.set_checkpoint(root, RECOVERY_POINT_CHECKPOINT, topic, int(num), 10**9, stale_count=True)
    damage.set_checkpoint(root, REPLICATION_OFFSET_CHECKPOINT, topic, int(num), 10**9, stale_count=False)
    # orphans: a .deleted copy, a .cleaned file and a .swap at/above it (an incomplete split)
    (p / f"{s0:020d}.log.deleted").write_bytes(seg(s0, ".log").read_bytes())
    (p / f"{active:020d}.log.cleaned").write_bytes(b"partial cleaner output")
    (p / f"{active:020d}.index.swap").write_bytes(b"")
    # a valid .swap segment in another partition: the cleaner's output of its first segment
    q = damage.biggest_partition(root, exclude={p.name}, min_batches=1)
    if q is not None:
        qlog = sorted(q.glob("*.log"))[0]
        qb = parse_segment_file(qlog.name).base_offset
        r = rebuild_indexes(qlog.read_bytes(), qb)
        (q / f"{qb:020d}.log.swap").write_bytes(qlog.read_bytes())
        (q / f"{qb:020d}.index.swap").write_bytes(r.offset_index)
        (q / f"{qb:020d}.timeindex.swap").write_bytes(r.time_index)
    # wrong owner and mode on a third partition
    others = [x for x in sorted(root.iterdir()) if x.is_dir() and x not in (p, q)] or [p]
    rperm = others[0]
    for f in sorted(rperm.iterdir())[:2]:
        os.chown(f, 0, 0)
        os.chmod(f, 0o600)
    os.chown(rperm, 0, 0)
    os.chmod(rperm, 0o700)
    return {"p": p, "q": q, "bases": bases, "timeindex": kind}


@pytest.mark.parametrize("name", _params())
def test_repair_damaged_realworld_dir(name, tmp_path, realworld_dir):
    root = damage.copy_log_dir(realworld_dir / name, tmp_path / "logs")
    damage_log_dir(root, DIRS.index(name))
    before_scan = _scan(root)
    codes = {f.code for f in before_scan.findings}
    for expected in (
        "INDEX_CORRUPT",
        "LOG_CORRUPT",
        "CHECKPOINT_MISMATCH",
        "ORPHAN_FILE",
        "PERMISSION_DENIED",
    ):
        assert expected in codes, (expected, sorted(codes))
    records_before = damage.read_records(root)
    assert sum(len(v) for v in records_before.values()) > 0

    plan, _ = plan_repair([root], backup_dir=str(tmp_path / "backup"), report=before_scan, jobs=1)
    result = apply_plan(plan)
    assert result.status == "applied", result.error

    after = _scan(root)
    left = [(f.code, f.path, f.message) for f in after.findings if f.code in REPAIRED]
    assert not left, left
    # every record readable before is still readable, same offset, key, value, timestamp
    records_after = damage.read_records(root)
    for part, recs in records_before.items():
        assert part in records_after
        for off, rec in recs.items():
            assert records_after[part].get(off) == rec, (part, off)
    # the torn batch is gone from the live log, and its bytes are in the backup
    tails = list((tmp_path / "backup" / "tails").rglob("*.tail"))
    assert len(tails) == 1 and tails[0].stat().st_size > 0
    # every index file the plan wrote is what recovery produces, and consistent with its log
    written = [s.path for s in plan.steps if s.op == "write" and s.path.endswith((".index", ".timeindex"))]
    assert written
    # (the entries LogSegment.recover writes, derived from kafka-python's batches, not from our rebuild)
    compared = 0
    for path in written:
        pth = Path(path)
        base = parse_segment_file(pth.name).base_offset
        offsets, times = kp_oracle.recovered_indexes(pth.with_suffix(".log").read_bytes())
        data = pth.read_bytes()
        if pth.suffix == ".index":
            got = [(base + r, p) for r, p in struct.iter_unpack(">ii", data)]
            assert got == offsets, path
        else:
            got = [(t, base + r) for t, r in struct.iter_unpack(">qi", data)]
            assert got == times, path
        compared += len(got)
    assert compared > 0  # real entries were compared, not only empty files
    # owners and modes fixed like the siblings
    for f in plan.steps:
        if f.op == "chmod" and os.path.exists(f.path):  # (some were orphans, moved to the backup after)
            st = os.stat(f.path)
            assert (st.st_uid, st.st_gid) == (damage.BROKER_UID, damage.BROKER_UID)


@pytest.mark.parametrize("name", _params()[:3] if realworld.available() else _params())
def test_rollback_restores_the_damaged_tree(name, tmp_path, realworld_dir):
    root = damage.copy_log_dir(realworld_dir / name, tmp_path / "logs")
    damage_log_dir(root, 0)
    original = damage.tree(root)
    plan, _ = plan_repair([root], backup_dir=str(tmp_path / "backup"), jobs=1)
    assert apply_plan(plan).status == "applied"
    assert damage.tree(root) != original
    res = rollback(tmp_path / "backup" / "journal.jsonl")
    assert res.status == "rolled-back", res.error
    assert damage.tree(root) == original
