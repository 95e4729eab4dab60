"""move-partition and sync-replica of a tiered partition (KIP-405), on copies of ../shared/tiered (Kafka's
storage classes, LocalTieredStorage and Aiven's plugin wrote them; its README.md gives the offsets).

Both plans say the partition is tiered and what the broker does with its remote segments; the
log-start-offset-checkpoint entry (0, below every local segment) travels as it is and is never raised;
sync-replica copies only the leader's local segments. Records are compared with kafka-python.
"""

from __future__ import annotations

from pathlib import Path

import helpers

import realworld
from logdoctor.repair.procedures import apply, plan_move, plan_sync, verify

LSO = "log-start-offset-checkpoint"
CLUSTER = "dGllcmVkLWNsdXN0ZXIwMQ"


def _broker_copy(variant: str, dst: Path, broker_id: int) -> Path:
    """A writable copy of a tiered log dir with the meta.properties of a ZooKeeper-mode broker (the data
    was written by Kafka's storage classes, without a broker's meta.properties)."""
    src = realworld.require_tiered() / variant / "kafka-logs"
    d = realworld.writable_copy(src, dst)
    (d / "meta.properties").write_text(f"version=0\nbroker.id={broker_id}\ncluster.id={CLUSTER}\n")
    return d


def test_move_partition_of_a_tiered_partition_keeps_its_log_start(tmp_path):
    src = _broker_copy("kafka-local", tmp_path / "disk1" / "kafka-logs", 1)
    dst = helpers.second_log_dir(src, tmp_path / "disk2" / "kafka-logs")
    records = helpers.read_records(src / "payments-0")
    assert min(records) == 1296
    pp = plan_move(src, dst, [("payments", 0)], backup_dir=tmp_path / "backup")
    notes = " ".join(pp.notes)
    assert "payments-0 is tiered" in notes and "log start 0, local log start 1296" in notes
    assert "RemoteLogManager" in notes and "moves with it as it is" in notes
    (part,) = pp.summary["partitions"]
    assert (part["log_start_offset"], part["local_log_start_offset"], part["tiered"]) == (0, 1296, True)
    result = apply(pp.plan)
    assert result.status == "applied", result.error
    assert verify(pp.plan) == []
    assert helpers.checkpoint(dst, LSO) == {("payments", 0): 0}
    assert helpers.checkpoint(src, LSO) == {("payments", 1): 0}
    assert helpers.read_records(dst / "payments-0") == records


def test_sync_replica_of_a_tiered_partition_copies_the_local_segments_and_keeps_the_leaders_log_start(
    tmp_path,
):
    """Leader: the LocalTieredStorage broker (payments-1 local from 2289); follower: the Aiven one (local from
    1962), whose entry we set to 1962 as if raised by a bad hand edit: it becomes the leader's 0."""
    leader = _broker_copy("kafka-local", tmp_path / "b1" / "kafka-logs", 1)
    follower = _broker_copy("aiven/plain", tmp_path / "b2" / "kafka-logs", 2)
    (follower / LSO).write_text("0\n2\npayments 0 0\npayments 1 1962\n")
    leader_records = helpers.read_records(leader / "payments-1")
    assert min(leader_records) == 2289 and max(leader_records) == 4499
    pp = plan_sync(("payments", 1), leader, follower, backup_dir=tmp_path / "backup")
    notes = " ".join(pp.notes)
    assert "payments-1 is tiered" in notes, notes
    assert "the leader's local segments [2289, 4500)" in notes
    assert "offsets [0, 2289) stay in the remote tier" in notes
    assert "becomes the leader's (0), never raised" in notes and "RemoteLogManager" in notes
    assert pp.summary["leader_log"]["local_log_start_offset"] == 2289
    assert pp.summary["leader_log"]["log_start_offset"] == 0 and pp.summary["leader_log"]["tiered"]
    result = apply(pp.plan)
    assert result.status == "applied", result.error
    assert verify(pp.plan) == []
    assert helpers.checkpoint(follower, LSO) == {("payments", 0): 0, ("payments", 1): 0}
    assert helpers.read_records(follower / "payments-1") == leader_records  # the local segments only
