"""The remote log metadata as tiered evidence (checks.tiered, step 4 of its order), on copies of
../shared/tiered written by Kafka's classes and LocalTieredStorage (offsets from its README: payments-0 keeps
[1296, 2000) locally, [0, 1296) is remote; audit-0 is never tiered).

One rule for the log start: a partition whose COPY_SEGMENT_FINISHED segments the replay lists is a remote
log, its log start offset the checkpoint entry (0 without one: LogManager.loadLog getOrDefault) and its
local log start offset its first local segment (LogLoader / UnifiedLog), whatever else is on disk.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import realworld
from logdoctor.checks.context import ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.checks.tiered import partition_tiering
from logdoctor.checks.topic_config import ConfigInputs
from logdoctor.formats.checkpoint import new_offset_checkpoint, write_offset_checkpoint


def _copy(tmp_path: Path, variant: str = "kafka-local") -> Path:
    src = realworld.require_tiered() / variant / "kafka-logs"
    dst = tmp_path / "kafka-logs"
    shutil.copytree(src, dst)
    for root, dirs, files in os.walk(dst):
        for n in dirs + files:
            p = os.path.join(root, n)
            os.chmod(p, os.stat(p).st_mode | stat.S_IWUSR)
    os.chmod(dst, os.stat(dst).st_mode | stat.S_IWUSR)
    return dst


def _checkpoint(log_dir: Path, entries: list[tuple[str, int, int]]) -> None:
    data = write_offset_checkpoint(new_offset_checkpoint(entries))
    (log_dir / "log-start-offset-checkpoint").write_bytes(data)


def _part(report, name: str):
    return next(p for p in report.partitions if f"{p.topic}-{p.partition}" == name)


def test_real_tiered_partition_keeps_checkpoint_log_start() -> None:
    report = scan([realworld.require_tiered() / "kafka-local" / "kafka-logs"], ScanOptions(), jobs=1)
    p0 = _part(report, "payments-0")
    assert (p0.remote_log_enabled, p0.log_start_offset, p0.local_log_start_offset) == (True, 0, 1296)
    # the replay (step 4) comes before what the log dir shows (step 5): the evidence named is the replay's
    assert "__remote_log_metadata-21 lists 4 remote segments" in p0.tiering_evidence, p0.tiering_evidence
    audit = _part(report, "audit-0")
    assert audit.remote_log_enabled is False
    assert audit.log_start_offset == audit.local_log_start_offset == audit.first_base_offset


def test_replay_makes_a_partition_without_checkpoint_entry_tiered(tmp_path: Path) -> None:
    """No log-start entry for payments (the broker then loads 0): nothing on disk shows the log start below
    the first segment, only the replay shows payments-0 and -1 uploaded. Before the replay was evidence the
    scan called them untiered with log start 1296 (max(0, first segment)), the rule without remote storage."""
    log_dir = _copy(tmp_path)
    _checkpoint(log_dir, [])
    report = scan([log_dir], ScanOptions(), jobs=1)
    p0 = _part(report, "payments-0")
    assert p0.remote_log_enabled is True
    assert "__remote_log_metadata-21" in p0.tiering_evidence
    assert "COPY_SEGMENT_FINISHED" in p0.tiering_evidence
    assert (p0.log_start_offset, p0.local_log_start_offset) == (0, 1296)
    p1 = _part(report, "payments-1")
    assert p1.remote_log_enabled is True and p1.log_start_offset == 0
    assert p1.local_log_start_offset == p1.first_base_offset == 2289
    assert _part(report, "audit-0").remote_log_enabled is False


def test_replay_makes_a_partition_whose_uploads_are_still_local_tiered(tmp_path: Path) -> None:
    """A checkpoint entry at the first local segment looks like any untiered log; the replay says it is a
    remote log (local.retention applies to it, not retention.ms)."""
    log_dir = _copy(tmp_path)
    _checkpoint(log_dir, [("payments", 0, 1296), ("payments", 1, 2289)])
    report = scan([log_dir], ScanOptions(), jobs=1)
    for name, first in (("payments-0", 1296), ("payments-1", 2289)):
        p = _part(report, name)
        assert p.remote_log_enabled is True and "COPY_SEGMENT_FINISHED" in p.tiering_evidence, name
        assert (p.log_start_offset, p.local_log_start_offset) == (first, first)


def test_explicit_remote_storage_disable_beats_the_replay(tmp_path: Path) -> None:
    """Evidence order: an explicit remote.storage.enable=false (step 3) decides before the replay (step 4)."""
    log_dir = _copy(tmp_path)
    _checkpoint(log_dir, [])
    inputs = ConfigInputs(topic_overrides={"payments": {"remote.storage.enable": "false"}})
    report = scan([log_dir], ScanOptions(config_inputs=inputs), jobs=1)
    p0 = _part(report, "payments-0")
    assert p0.remote_log_enabled is False
    assert (p0.log_start_offset, p0.local_log_start_offset) == (1296, 1296)


def test_partition_tiering_of_the_procedures_reads_the_replay(tmp_path: Path) -> None:
    """move-partition / sync-replica plan without a scan: they see the replay's evidence too."""
    log_dir = _copy(tmp_path)
    _checkpoint(log_dir, [])
    pt = partition_tiering(log_dir, "payments", 0)
    assert pt.tiered is True and "COPY_SEGMENT_FINISHED" in pt.tiering.evidence
    assert (pt.log_start_offset, pt.local_log_start_offset) == (0, 1296)
    assert partition_tiering(log_dir, "audit", 0).tiered is False
