"""Issue 59 item 1: a full disk had no way out. ../shared/forensics' broker-2 on a 20 MiB tmpfs, its
wallet-0 .index files deleted, the disk filled: `repair --apply --backup-dir OTHER_DISK` was refused (73)
for 4 MiB "give --backup-dir" although it was given, and `move-partition`, the way to free space, was
refused the same way. Now the refusal names the files the repair writes in the log dir and their whole
blocks, and prints the `logdoctor move-partition` that frees them, which runs as printed on the full
disk; the repair then rebuilds the indexes with the bytes Kafka wrote (the ones deleted)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

import realworld
import tmpfs

sys.path.insert(0, str(Path(__file__).resolve().parent))

import write_runs as wr

pytestmark = pytest.mark.needs_root


def _fill(disk: Path) -> None:
    with open(disk / "filler", "wb") as f:
        while True:
            try:
                f.write(b"\0" * 65536)
                f.flush()
            except OSError:
                break
    st = os.statvfs(disk)
    assert st.f_bavail * st.f_frsize == 0


@pytest.fixture
def broker(tmp_path: Path):
    """broker-2's log dir on a full 20 MiB tmpfs, a second (empty) log dir of the broker beside it on
    another tmpfs (its own disk), wallet-0's .index files deleted; yields (log dir, the other, the deleted
    files' bytes)."""
    shared = realworld.require_forensics() / "broker-2"
    with tmpfs.mounted(tmp_path / "disk", "20m") as disk:
        root = realworld.writable_copy(shared, disk / "broker-2")
        log_dir = root / "kafka-logs"
        deleted = {p.name: p.read_bytes() for p in sorted((log_dir / "wallet-0").glob("*.index"))}
        for name in deleted:
            (log_dir / "wallet-0" / name).unlink()
        with tmpfs.mounted(root / "kafka-logs-1", "96m") as other:
            shutil.copyfile(log_dir / "meta.properties", other / "meta.properties")  # the same broker
            (other / "recovery-point-offset-checkpoint").write_bytes(b"0\n0\n")
            _fill(disk)
            yield log_dir, other, deleted


def test_a_full_disk_refusal_says_what_and_where_and_its_move_frees_the_space(tmp_path, broker):
    log_dir, other, deleted = broker
    backup = tmp_path / "backup"  # another file system, as the issue gave it
    before = wr.tree(log_dir)
    plan = wr.cli("repair", log_dir, "--backup-dir", backup)  # the dry run says so first
    assert plan.returncode == 0 and "note: DOES NOT FIT" in plan.stdout, plan.stdout[-3000:]
    assert "`logdoctor move-partition stable-0 --from" in plan.stdout, plan.stdout[-3000:]
    r = wr.cli("repair", log_dir, "--apply", "--backup-dir", backup)
    assert r.returncode == 73, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    line = r.stderr.strip()
    assert "\n" not in line, line
    assert f"{log_dir} is on a file system with 0 bytes free" in line, line
    for name in deleted:  # what needs the space, and where
        assert str(log_dir / "wallet-0" / name) in line, line
    assert "4,096-byte blocks" in line and "give --backup-dir" not in line, line  # it was given
    assert wr.tree(log_dir) == before and not backup.exists()
    (move,) = wr.printed_commands(line)
    assert move.startswith(f"logdoctor move-partition stable-0 --from {log_dir} --to {other} "), move
    # the printed command, as printed (its plan), then applied: on the full disk it fits
    dry = wr.run_printed(move)
    assert dry.returncode == 0 and "DOES NOT FIT" not in dry.stdout, (dry.stdout[-2000:], dry.stderr[-2000:])
    moved = wr.run_printed(move + " --apply")
    assert moved.returncode == 0, (moved.stdout[-2000:], moved.stderr[-2000:])
    assert (other / "stable-0").is_dir() and not (log_dir / "stable-0").exists()
    # the repair now runs, and writes exactly the bytes Kafka wrote for the deleted indexes
    r = wr.cli("repair", log_dir, "--apply", "--backup-dir", backup)
    assert r.returncode in (0, 1, 2) and "applied:" in r.stdout, (r.stdout[-2000:], r.stderr[-2000:])
    assert {n: (log_dir / "wallet-0" / n).read_bytes() for n in deleted} == deleted


def test_a_nearly_full_disk_needs_only_the_blocks_of_the_rebuilt_indexes(tmp_path, broker):
    """64 KiB free: the 3 rebuilt indexes take 3 blocks and their folder's one; the run used to ask 4 MiB
    on the log dir's file system (the backup dir's margin for its journal, counted on every one)."""
    log_dir, _other, deleted = broker
    filler = log_dir.parent.parent / "filler"
    with open(filler, "r+b") as f:
        f.truncate(os.path.getsize(filler) - (64 << 10))
    r = wr.cli("repair", log_dir, "--apply", "--backup-dir", tmp_path / "backup")
    assert r.returncode in (0, 1, 2) and "applied:" in r.stdout, (r.returncode, r.stderr[-2000:])
    assert {n: (log_dir / "wallet-0" / n).read_bytes() for n in deleted} == deleted


def test_a_full_disk_with_no_other_log_dir_says_what_to_look_for(tmp_path, broker):
    """No other log dir of the broker (the second one's meta.properties gone): no command to run as
    printed is invented; the line still says what needs how much space where."""
    log_dir, other, _deleted = broker
    (other / "meta.properties").unlink()
    r = wr.cli("repair", log_dir, "--apply", "--backup-dir", tmp_path / "backup")
    assert r.returncode == 73, r.stderr[-2000:]
    line = r.stderr.strip()
    assert "\n" not in line and "0 bytes free" in line and "logdoctor move-partition TOPIC-PARTITION" in line
    assert not [c for c in wr.printed_commands(line) if "TOPIC-PARTITION" not in c and "LOGDIR" not in c]
