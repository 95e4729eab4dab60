"""sync-replica on generated fleets (LaggingReplica) and on real log dirs turned into a leader and a
lagging follower: byte-identical result, checkpoint entries, what lay beyond the leader's log end,
refusals, and crashes at every step."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import helpers

from logdoctor.errors import BrokerRunningError
from logdoctor.formats.records import iter_batches
from logdoctor.repair.apply import PHASES, CrashHook
from logdoctor.repair.procedures import apply, plan_sync, resume_journal, rollback_journal, verify
from logdoctor.repair.procedures.common import ProcedureRefused
from logdoctor.sample.logdir import BrokerSpec, FleetSpec, LaggingReplica, TopicSpec, generate_fleet

SYNCED = ("replication-offset-checkpoint", "recovery-point-offset-checkpoint", "log-start-offset-checkpoint")


def _fleet(root: Path, lag: int = 70) -> tuple[Path, Path]:
    fleet = generate_fleet(
        root,
        FleetSpec(
            topics=[
                TopicSpec(
                    "orders",
                    partitions=2,
                    replication_factor=2,
                    records_per_partition=240,
                    segment_bytes=5000,
                    records_per_batch=2,
                    leader_epochs=3,
                )
            ],
            brokers=(BrokerSpec(0), BrokerSpec(1)),
            faults=[LaggingReplica(1, "orders", 0, lag)],
        ),
    )
    return fleet.log_dirs[0][0], fleet.log_dirs[1][0]


def _check_synced(leader: Path, follower: Path, name: str) -> None:
    tp = (name.rpartition("-")[0], int(name.rpartition("-")[2]))
    assert helpers.tree(follower / name) == helpers.tree(leader / name)
    assert helpers.read_records(follower / name) == helpers.read_records(leader / name)
    for cp_name in SYNCED:
        assert helpers.checkpoint(follower, cp_name).get(tp) == helpers.checkpoint(leader, cp_name).get(tp)
    assert not helpers.other_dirs(follower)


def test_sync_generated_lagging_replica(tmp_path):
    leader, follower = _fleet(tmp_path)
    old = helpers.tree(follower / "orders-0")
    other = helpers.tree(follower / "orders-1")
    pp = plan_sync(("orders", 0), leader, follower, backup_dir=tmp_path / "backup")
    assert pp.summary["behind_by"] == 70 and pp.summary["records_the_leader_lacks"] is None
    result = apply(pp.plan)
    assert result.status == "applied", result.error
    assert verify(pp.plan) == []
    _check_synced(leader, follower, "orders-0")
    assert helpers.tree(follower / "orders-1") == other
    kept = [p for p in (tmp_path / "backup" / "files").rglob("orders-0") if p.is_dir()]
    assert len(kept) == 1 and helpers.tree(kept[0]) == old  # the follower's old copy is in the backup


def _batch_cut(log: Path, keep_offsets_below: int) -> int:
    """Byte position of the first batch whose last offset >= ``keep_offsets_below``."""
    for b in iter_batches(log.read_bytes()):
        if b.last_offset >= keep_offsets_below:
            return b.position
    return log.stat().st_size


def _make_follower(leader: Path, follower: Path, name: str, broker_id: int, keep: int) -> None:
    """The leader's log dir copied as another broker's, with ``name`` cut back to offsets < ``keep``."""
    helpers.copy_log_dir(leader, follower)
    meta = follower / "meta.properties"
    text = meta.read_text()
    key = "node.id=" if "node.id=" in text else "broker.id="
    old = next(line for line in text.splitlines() if line.startswith(key))
    meta.write_text(text.replace(old, f"{key}{broker_id}"))
    for log in sorted((follower / name).glob("*.log")):
        base = int(log.name[:20])
        if base >= keep and base > 0:
            for f in (follower / name).glob(f"{log.name[:20]}.*"):
                f.unlink()
        else:
            os.truncate(log, _batch_cut(log, keep))


@pytest.mark.parametrize("direction", ["follower-behind", "follower-ahead"])
def test_sync_realworld(direction, tmp_path, realworld_dir):
    """A real partition (zk 0.10.1, 21211 records, magic v1): leader and follower made from it."""
    name = "TEST-TOPIC-0"
    full = tmp_path / "full"
    helpers.copy_log_dir(realworld_dir / "zk-0.10.1-xpxwo100", full)
    short = tmp_path / "short"
    _make_follower(full, short, name, 1, keep=15000)
    leader, follower = (full, short) if direction == "follower-behind" else (short, full)
    if direction == "follower-ahead":  # the short one is broker 0 (the leader) now
        text = (full / "meta.properties").read_text()
        (full / "meta.properties").write_text(text.replace("broker.id=0", "broker.id=2"))
    leader_records = helpers.read_records(leader / name)
    follower_records = helpers.read_records(follower / name)
    if direction == "follower-ahead":  # records the leader lacks: refused without consent
        with pytest.raises(ProcedureRefused, match="--allow-record-loss"):
            plan_sync(("TEST-TOPIC", 0), leader, follower, backup_dir=tmp_path / "backup")
    pp = plan_sync(
        ("TEST-TOPIC", 0), leader, follower, backup_dir=tmp_path / "backup", allow_record_loss=True
    )
    beyond = pp.summary["records_the_leader_lacks"]
    if direction == "follower-behind":
        assert beyond is None and pp.summary["behind_by"] == (max(leader_records) - max(follower_records))
    else:  # magic v1, no leader epoch: what lies beyond the leader's log end
        leo = max(leader_records) + 1
        extra = sorted(o for o in follower_records if o >= leo)
        assert beyond["from_offset"] == extra[0] and beyond["to_offset"] == extra[-1]
        assert beyond["records"] == len(extra)
        logs = sorted((follower / name).glob("*.log"))
        assert beyond["bytes"] == sum(p.stat().st_size - _batch_cut(p, leo) for p in logs)
        assert f"[{extra[0]}, {extra[-1]}]" in " ".join(pp.notes)
    result = apply(pp.plan)
    assert result.status == "applied", result.error
    assert verify(pp.plan) == []
    _check_synced(leader, follower, name)


def test_sync_realworld_kraft_brokers(tmp_path, realworld_dir):
    """Two real brokers of one KRaft cluster (3.5, nodes 3 and 1): __consumer_offsets-14, a replica of
    both in the cluster metadata, copied from node 3 to node 1 after node 1's copy lost its last batch."""
    leader = helpers.copy_log_dir(realworld_dir / "kraft-3.5-greenlemont-n3", tmp_path / "n3")
    follower = helpers.copy_log_dir(realworld_dir / "kraft-3.5-greenlemont-n1", tmp_path / "n1")
    name = "__consumer_offsets-14"
    log = follower / name / "00000000000000000000.log"
    last = list(iter_batches(log.read_bytes()))[-1]
    with open(log, "r+b") as f:
        f.truncate(last.position)  # node 1 lags by its last batch
    pp = plan_sync(("__consumer_offsets", 14), leader, follower, backup_dir=tmp_path / "backup")
    assert pp.summary["behind_by"] == last.record_count
    assert 1 in pp.summary["metadata"]["replicas"] and 3 in pp.summary["metadata"]["replicas"]
    assert apply(pp.plan).status == "applied"
    assert verify(pp.plan) == []
    _check_synced(leader, follower, name)


def test_sync_realworld_kraft_refuses_a_partition_the_follower_does_not_replicate(tmp_path, realworld_dir):
    """payment-create-request-0 has one replica, on node 3: a copy on node 1 would be a stray there."""
    leader = helpers.copy_log_dir(realworld_dir / "kraft-3.5-greenlemont-n3", tmp_path / "n3")
    follower = helpers.copy_log_dir(realworld_dir / "kraft-3.5-greenlemont-n1", tmp_path / "n1")
    name = "payment-create-request-0"
    (follower / name).mkdir()
    shutil.copy2(leader / name / "partition.metadata", follower / name / "partition.metadata")
    (follower / name / "00000000000000000000.log").write_bytes(b"")
    with pytest.raises(ProcedureRefused, match=r"brokers \[3\], not to broker 1"):
        plan_sync(("payment-create-request", 0), leader, follower, backup_dir=tmp_path / "backup")


def _refused(tmp_path, leader, follower, exc, match):
    before = helpers.tree(tmp_path)
    with pytest.raises(exc, match=match):
        plan_sync(("orders", 0), leader, follower, backup_dir=tmp_path / "backup")
    assert helpers.tree(tmp_path) == before


def test_refusals(tmp_path):
    leader, follower = _fleet(tmp_path)
    for locked in (leader, follower):
        with helpers.broker_holding_lock(locked) as pid:
            _refused(tmp_path, leader, follower, BrokerRunningError, str(pid))
    pm = follower / "orders-0" / "partition.metadata"
    original = pm.read_bytes()
    pm.write_bytes(b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ")
    _refused(tmp_path, leader, follower, ProcedureRefused, "topic id differs")
    pm.write_bytes(original)
    meta = follower / "meta.properties"
    text = meta.read_text()
    cluster = next(line for line in text.splitlines() if line.startswith("cluster.id="))
    meta.write_text(text.replace(cluster, "cluster.id=AAAAAAAAAAAAAAAAAAAAAA"))
    _refused(tmp_path, leader, follower, ProcedureRefused, "cluster")
    meta.write_text(text.replace("broker.id=1", "broker.id=0"))
    _refused(tmp_path, leader, follower, ProcedureRefused, "both dirs belong to broker 0")


@pytest.mark.slow  # a crash matrix (docs/install.md: make test runs it, make test-fast does not)
@pytest.mark.parametrize("finish", ["resume", "rollback"])
def test_kill_at_every_step(tmp_path, finish):
    leader0, follower0 = _fleet(tmp_path / "base")
    n_steps = len(plan_sync(("orders", 0), leader0, follower0, backup_dir=tmp_path / "x").plan.steps)
    fired = 0
    for step in range(1, n_steps + 1):
        for phase in PHASES:
            work = tmp_path / f"w{step}-{phase}"
            leader, follower = _fleet(work)
            original = helpers.tree(work)
            pp = plan_sync(("orders", 0), leader, follower, backup_dir=work / "backup")
            status = helpers.run_forked(lambda p=pp, at=(step, phase): apply(p.plan, crash=CrashHook(at=at)))
            killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
            assert killed or os.WEXITSTATUS(status) == 0, (step, phase)
            fired += killed
            journal = work / "backup" / "journal.jsonl"
            if finish == "resume":
                res, plan = resume_journal(journal)
                assert res.status == "applied", (step, phase, res.error)
                assert verify(plan) == []
                _check_synced(leader, follower, "orders-0")
            else:
                res, _ = rollback_journal(journal)
                assert res.status == "rolled-back", (step, phase, res.error)
                now = helpers.tree(work)
                assert {k: v for k, v in now.items() if not k.startswith("backup")} == original, (step, phase)
            assert "orders-0" in helpers.live_partitions(follower) and not helpers.other_dirs(follower)
    assert fired >= n_steps


def test_cli_sync_json(tmp_path):
    leader, follower = _fleet(tmp_path)
    run = lambda *a: subprocess.run(  # noqa: E731
        [sys.executable, "-c", "from logdoctor.cli.main import main; main()", "sync-replica", *a],
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = run("orders-0", "--leader", str(leader), "--follower", str(follower), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["summary"]["behind_by"] == 70
    out = run(
        "orders-0",
        "--leader",
        str(leader),
        "--follower",
        str(follower),
        "--apply",
        "--json",
        "--backup-dir",
        str(tmp_path / "b"),
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["result"]["status"] == "applied" and doc["verification"] == {"ok": True, "problems": []}
    _check_synced(leader, follower, "orders-0")
    # without --apply the rollback prints the steps it would undo and writes nothing
    synced = helpers.tree(tmp_path)
    dry = run("--rollback", str(tmp_path / "b" / "journal.jsonl"), "--json")
    assert dry.returncode == 0, dry.stderr
    preview = json.loads(dry.stdout)
    assert preview["applied"] is False and preview["preview"]["mode"] == "rollback"
    assert len(preview["preview"]["steps"]) == preview["preview"]["steps_total"] > 0
    assert helpers.tree(tmp_path) == synced
    out = run("--rollback", str(tmp_path / "b" / "journal.jsonl"), "--apply")
    assert out.returncode == 0, out.stdout + out.stderr
    assert helpers.read_records(follower / "orders-0") != helpers.read_records(leader / "orders-0")


def test_swapped_leader_and_follower_of_the_demo_fleet_is_refused(tmp_path):
    """Issue 32 item 2, the demo fleet's case: broker-3's orders-1 lags 600 records (below the high
    watermark); synced the wrong way round (broker-3 as the leader), broker-1 would lose them: refused,
    even with --allow-record-loss, with the sync the right way round (broker-1's copy is the reference:
    the same leader epoch and the longer log)."""
    from logdoctor.logdir.model import LogDir
    from logdoctor.sample.fleet import generate_demo_fleet

    generate_demo_fleet(tmp_path / "fleet", now_ms=1_790_000_000_000)
    good = next((tmp_path / "fleet" / "broker-1").glob("kafka-logs-*/orders-1")).parent
    lagging = next((tmp_path / "fleet" / "broker-3").glob("kafka-logs-*/orders-1")).parent
    g_end = LogDir(good).partition("orders", 1).log_end_offset
    l_end = LogDir(lagging).partition("orders", 1).log_end_offset
    assert g_end - l_end == 600
    plan_sync(("orders", 1), good, lagging)  # the right way round: planned
    with pytest.raises(ProcedureRefused) as refused:
        plan_sync(("orders", 1), lagging, good)
    said = str(refused.value)
    # broker-1's copy is the reference (the same leader epoch, 600 records longer): the refusal names the
    # sync the right way round, never --allow-record-loss, which would delete acknowledged records
    assert f"logdoctor sync-replica orders-1 --leader {good} --follower {lagging}" in said
    assert "swapped" in said and "--allow-record-loss" not in said
    with pytest.raises(ProcedureRefused) as still:
        plan_sync(("orders", 1), lagging, good, allow_record_loss=True)
    assert "--allow-record-loss" not in str(still.value)
