"""Issue 24, "The controller's metadata log is not a partition like the others": LOG_CORRUPT on
``__cluster_metadata-0`` names the voters (quorum-state, as Kafka wrote it), the latest snapshot and what a
truncation loses; repair refuses to truncate the last voter's log without --allow-metadata-loss, and the
command it prints for that consent works as printed. Real KRaft log dirs of ../shared/realworld, with one
batch's CRC broken."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import realworld
from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.formats.records import iter_batches
from logdoctor.spark.census_rules import BrokerInput, scan_fix

NOW = 1_800_000_000_000
SEGMENT = "__cluster_metadata-0/00000000000000000000.log"


def _broken_copy(name: str, tmp_path: Path, offset: int) -> tuple[Path, int]:
    """A copy of a real log dir whose metadata-log batch holding ``offset`` fails its CRC; returns the
    copy and the batch's byte position."""
    d = realworld.writable_copy(realworld.require() / name, tmp_path / name)
    seg = d / SEGMENT
    buf = bytearray(seg.read_bytes())
    batch = next(b for b in iter_batches(bytes(buf)) if b.last_offset >= offset)
    buf[batch.position + batch.size - 3] ^= 0xFF  # a byte of its last record: the CRC no longer matches
    seg.write_bytes(bytes(buf))
    return d, batch.position


def _manifest_last_offset(name: str) -> int:
    """The metadata log's last offset as the set's MANIFEST.json (written from the real files) says it."""
    manifest = json.loads((realworld.require() / "MANIFEST.json").read_text())
    entry = next(e for e in manifest["entries"] if e["name"] == name)
    return next(p["last_offset"] for p in entry["per_log"] if p["file"] == SEGMENT)


def _logdoctor(*args: str) -> subprocess.CompletedProcess[str]:
    env_cols = {"COLUMNS": "400"}
    import os

    return subprocess.run(
        [sys.executable, "-m", "logdoctor", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env_cols},
        timeout=300,
    )


@pytest.mark.realworld
def test_single_node_metadata_log_advice_names_voters_snapshot_and_loss(tmp_path):
    d, position = _broken_copy("kraft-3.5-greenlemont-single", tmp_path, 3136)
    last = _manifest_last_offset("kraft-3.5-greenlemont-single")
    report = scan([str(d)], ScanOptions(Depth.DEFAULT, NOW), jobs=1)
    f = next(f for f in report.findings if f.code == "LOG_CORRUPT")
    assert f.path == str(d / SEGMENT) and f.position == position
    # quorum-state (Kafka's) says voters [1], meta.properties node 1: the last voter
    assert "voters [1]; node 1 is one of them" in f.message
    assert f"removes offsets 3136-{last}" in f.message and "no readable snapshot" in f.message
    assert f.details["last_voter"] is True and f.details["lost_records"] == last + 1 - 3136
    # never the generic advice, never sync-replica as a command
    assert "re-replicate" not in f.fix and "delete the partition folder" not in f.fix
    assert "logdoctor sync-replica" not in f.fix
    assert f"`logdoctor repair {d} --only LOG_CORRUPT --allow-metadata-loss`" in f.fix
    # the census prints that command (not `sync-replica`, not a repair that refuses)
    row = {"broker": "broker-1", "code": f.code, "fix": f.fix, "path": f.path, "log_dir": str(d)}
    fix = scan_fix(row, [BrokerInput("broker-1", 1, (str(d),))])
    assert fix.command == f"logdoctor repair {d} --only LOG_CORRUPT --allow-metadata-loss"
    assert fix.argv == [["logdoctor", "repair", str(d), "--only", "LOG_CORRUPT", "--allow-metadata-loss"]]


@pytest.mark.realworld
def test_repair_refuses_the_last_voters_log_without_consent_and_the_printed_command_works(tmp_path):
    d, position = _broken_copy("kraft-3.5-greenlemont-single", tmp_path, 3136)
    seg = d / SEGMENT
    size = seg.stat().st_size
    refused = _logdoctor("repair", str(d), "--only", "LOG_CORRUPT")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "truncate-log" not in refused.stdout and "refused" in refused.stdout
    printed = f"logdoctor repair {d} --only LOG_CORRUPT --allow-metadata-loss"
    assert printed in " ".join(refused.stdout.split())
    assert seg.stat().st_size == size
    # the command exactly as printed: a dry run with the truncation, then --apply makes it
    words = printed.split()[1:]
    plan = _logdoctor(*words)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert "truncate-log" in plan.stdout and seg.stat().st_size == size
    applied = _logdoctor(*words, "--apply")
    assert applied.returncode in (0, 1, 2), applied.stdout + applied.stderr
    assert seg.stat().st_size == position  # cut before the broken batch, the rest in the backup
    backups = list(tmp_path.glob(".logdoctor-backups/*.logdoctor-backup-*"))
    assert len(backups) == 1 and list(backups[0].rglob("__cluster_metadata-0/*"))


@pytest.mark.realworld
def test_a_voter_with_other_voters_is_repaired_and_told_whom_it_fetches_from(tmp_path):
    """greenlemont-n1: voters [1, 2, 3] (its quorum-state), a snapshot ending at 28869: a cut below the
    snapshot loses only what comes after the snapshot, and the other voters give it back."""
    d, _position = _broken_copy("kraft-3.5-greenlemont-n1", tmp_path, 20000)
    report = scan([str(d)], ScanOptions(Depth.DEFAULT, NOW), jobs=1)
    f = next(f for f in report.findings if f.code == "LOG_CORRUPT")
    assert "voters [1, 2, 3]; node 1 is one of them" in f.message
    assert "the latest snapshot ends at offset 28869 (epoch 189): the node loads it" in f.message
    assert f.details["last_voter"] is False and "voters 2, 3" in f.fix
    assert "re-replicate" not in f.fix and "logdoctor sync-replica" not in f.fix
    plan = _logdoctor("repair", str(d), "--only", "LOG_CORRUPT")
    assert plan.returncode == 0 and "truncate-log" in plan.stdout, plan.stdout + plan.stderr


@pytest.mark.realworld
def test_replicas_the_cut_metadata_log_does_not_assign_are_its_consequences(tmp_path):
    """Issue 32: damage early in the metadata log, the image ends there and every replica of the topics
    created after it looks unassigned: those REPLICA_NOT_ASSIGNED are the LOG_CORRUPT's consequences
    (listed under it, not counted), not problems of their own."""
    d, _position = _broken_copy("kraft-3.5-greenlemont-single", tmp_path, 5)
    report = scan([str(d)], ScanOptions(Depth.DEFAULT, NOW), jobs=1)
    corrupt = next(f for f in report.findings if f.code == "LOG_CORRUPT")
    strays = [f for f in report.findings if f.code == "REPLICA_NOT_ASSIGNED"]
    assert strays and all(f.details["metadata_offset"] <= corrupt.details["cut_offset"] for f in strays)
    assert all(f.caused_by == corrupt.ref for f in strays)
    assert report.counts()["errors"] + report.counts()["warnings"] == 1  # the one root cause
