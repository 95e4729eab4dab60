"""sync-replica between two KRaft brokers: the copy must be a replica the cluster metadata assigns to
both brokers with the same topic id (otherwise the follower's broker drops it as a stray at startup:
LogManager.isStrayKraftReplica), and the leader copy's leader epoch is compared with the metadata's."""

from __future__ import annotations

from pathlib import Path

import pytest

from logdoctor.repair.procedures import plan_sync
from logdoctor.repair.procedures.common import ProcedureRefused
from logdoctor.sample.kraft import metadata_records, write_metadata_log
from logdoctor.sample.logdir import BrokerSpec, FleetSpec, LaggingReplica, TopicSpec, generate_fleet


def _pair(
    tmp_path: Path, *, edit=None, leader_epoch: int = 2, metadata_in=(0, 1), metadata_version: int = 21
):
    spec = FleetSpec(
        topics=[
            TopicSpec(
                "orders", partitions=2, replication_factor=2, records_per_partition=120, leader_epochs=3
            )
        ],
        brokers=(BrokerSpec(0, kraft=True), BrokerSpec(1, kraft=True)),
        faults=[LaggingReplica(1, "orders", 0, 30)],
        seed=4,
    )
    fleet = generate_fleet(tmp_path / "fleet", spec)
    recs = metadata_records(fleet, metadata_version=metadata_version, leader_epoch=leader_epoch)
    if edit:
        edit(recs)
    for b in metadata_in:
        write_metadata_log(fleet, b, records=recs)
    return fleet, fleet.log_dirs[0][0], fleet.log_dirs[1][0]


def _partition_record(recs, p):
    return next(r for r in recs if r["type"] == "PartitionRecord" and r["data"]["partition_id"] == p)


def test_sync_reports_the_metadata_state(tmp_path):
    fleet, leader, follower = _pair(tmp_path)
    replicas = [r.broker_id for r in fleet.replicas if (r.topic, r.partition) == ("orders", 0)]
    pp = plan_sync(("orders", 0), leader, follower, backup_dir=tmp_path / "b")
    m = pp.summary["metadata"]
    assert m["replicas"] == replicas and m["leader_epoch"] == 2 and m["leader_copy_epoch"] == 2
    assert m["leader"] == replicas[0]
    if replicas[0] != 0:
        assert any("names broker" in n for n in pp.notes)
    assert not any("older than the copy" in n for n in pp.notes)


def test_leader_epoch_beyond_the_metadata_is_noted(tmp_path):
    _fleet, leader, follower = _pair(tmp_path, leader_epoch=1)
    pp = plan_sync(("orders", 0), leader, follower, backup_dir=tmp_path / "b")
    assert any("leader epoch 2" in n and "latest leader epoch for orders-0 is 1" in n for n in pp.notes)


def test_refuses_when_the_follower_is_not_a_replica(tmp_path):
    def edit(recs):
        _partition_record(recs, 0)["data"].update(replicas=[0, 5], isr=[0, 5], leader=0)

    _fleet, leader, follower = _pair(tmp_path, edit=edit)
    with pytest.raises(ProcedureRefused, match="stray"):
        plan_sync(("orders", 0), leader, follower, backup_dir=tmp_path / "b")


def test_refuses_a_topic_id_the_metadata_does_not_know(tmp_path):
    def edit(recs):
        for r in recs:
            if r["type"] in ("TopicRecord", "PartitionRecord"):
                r["data"]["topic_id"] = "ZZZZZZZZZZZZZZZZZZZZZQ"

    _fleet, leader, follower = _pair(tmp_path, edit=edit)
    with pytest.raises(ProcedureRefused, match="deleted incarnation"):
        plan_sync(("orders", 0), leader, follower, backup_dir=tmp_path / "b")


def test_without_metadata_log_says_so(tmp_path):
    _fleet, leader, follower = _pair(tmp_path, metadata_in=())
    pp = plan_sync(("orders", 0), leader, follower, backup_dir=tmp_path / "b")
    assert pp.summary["metadata"] is None
    assert any("__cluster_metadata-0" in n for n in pp.notes)


@pytest.mark.parametrize("elr", [[0], [1]])
def test_a_leader_dir_in_the_elr_is_noted_as_holding_every_committed_record(tmp_path, elr):
    """Every broker of a min.insync.replicas=2 partition stopped cleanly (Kafka 4.1+, KIP-966): the
    controller leaves leader -1, ISR [] and the ELR holding the last ISR members; an ELR member's copy has
    every committed record (tests/brokers/test_broker_sync_replica.py shows a 4.4 controller doing it)."""

    def edit(recs):
        _partition_record(recs, 0)["data"].update(isr=[], leader=-1, eligible_leader_replicas=elr)

    # PartitionRecord v2 (metadata.version 22+, 4.0-IV1) carries the ELR
    _fleet, leader, follower = _pair(tmp_path, edit=edit, metadata_version=22)
    pp = plan_sync(("orders", 0), leader, follower, backup_dir=tmp_path / "b")
    assert pp.summary["metadata"]["elr"] == elr and pp.summary["metadata"]["isr"] == []
    note = next(n for n in pp.notes if "names broker -1" in n)
    assert f"ISR [], ELR {elr}" in note
    if 0 in elr:  # the leader dir is broker 0's
        assert "broker 0 is in the ELR" in note and "NOT in the ISR" not in note
    else:
        assert "broker 0 is NOT in the ISR: its copy may miss committed records" in note
