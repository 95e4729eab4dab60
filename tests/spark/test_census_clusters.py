"""Issue 24, "Clusters are not brokers": the census keys brokers by cluster id and node id, never compares
replicas of two clusters, and says so once; a cluster id shared by two clusters (docker-compose's
MkU3OEVBNTcwNTJENDM2Qk, node id 1) does not make their brokers one."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import realworld
from logdoctor.checks.context import Depth
from logdoctor.checks.inventory import build_inventory, write_inventory
from logdoctor.sample.kraft import write_metadata_log
from logdoctor.sample.logdir import BrokerSpec, FleetSpec, TopicSpec, generate_fleet
from logdoctor.spark.census import discover_brokers, partition_rows, replica_lag, run_census, scan_broker

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("small_census_confs")]

NOW = 1_790_000_000_000
DOCKER_CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qk"  # the cluster id of many docker-compose setups
LIVE_DISK = ("disk_used_bytes", "disk_available_bytes", "disk_used_fraction", "disk_used_percent")


def table(out: Path, name: str) -> list[dict[str, Any]]:
    rows = pq.read_table(out / name).to_pylist()
    for r in rows:
        if r.get("disk_source") == "statvfs":
            for k in LIVE_DISK:
                r.pop(k)
    return sorted(rows, key=lambda r: repr(sorted(r.items(), key=lambda kv: kv[0])))


def _fleet(
    root: Path, ids: tuple[int, ...], *, kraft: bool, cluster_id: str, records: int, seed: int
) -> Path:
    spec = FleetSpec(
        topics=(
            TopicSpec("orders", partitions=2, replication_factor=len(ids), records_per_partition=records),
        ),
        brokers=tuple(BrokerSpec(i, kraft=kraft) for i in ids),
        seed=seed,
        cluster_id=cluster_id,
        topic_ids=kraft,  # a ZooKeeper cluster of before 2.8: no partition.metadata
        base_timestamp_ms=NOW - 3_600_000,
    )
    fleet = generate_fleet(root, spec)
    if kraft:
        for i in ids:  # every KRaft broker holds the cluster's metadata log in its log dir
            write_metadata_log(fleet, i, metadata_version=21, records_per_batch=2)
    return root


def _inventories(brokers: list[Path], folder: Path) -> Path:
    folder.mkdir(parents=True)
    for n, broker in enumerate(brokers):
        dirs = sorted(str(p) for p in broker.iterdir() if p.is_dir())
        inv = build_inventory(dirs, Depth.DEFAULT, now_ms=NOW)
        write_inventory(inv, str(folder / f"{inv.broker}-{n}.parquet"))
    return folder


@pytest.fixture(scope="module")
def two_clusters(spark, small_census_confs, tmp_path_factory):
    """Three ZooKeeper brokers (ids 0-2) and three KRaft brokers (ids 1-3) of another cluster, both with
    a topic `orders` (the KRaft one's longer): census over their log dirs and over their inventories."""
    root = tmp_path_factory.mktemp("two-clusters")
    zk = _fleet(root / "zk", (0, 1, 2), kraft=False, cluster_id="ZkClusterAAAAAAAAAAAAA", records=300, seed=1)
    kr = _fleet(
        root / "kraft", (1, 2, 3), kraft=True, cluster_id="KRaftClusterBBBBBBBBBB", records=900, seed=2
    )
    brokers = sorted(zk.glob("broker-*")) + sorted(kr.glob("broker-*"))
    from_dirs = run_census(spark, [str(zk), str(kr)], root / "from-dirs", now_ms=NOW)
    inv = _inventories(brokers, root / "inventories")
    from_inv = run_census(spark, [str(inv)], root / "from-inv", now_ms=NOW)
    return root, from_dirs, from_inv


@pytest.mark.parametrize("source", ["from-dirs", "from-inv"])
def test_two_clusters_are_six_brokers_and_no_replica_is_compared_across(two_clusters, source):
    root, from_dirs, from_inv = two_clusters
    result = from_dirs if source == "from-dirs" else from_inv
    assert result.brokers == 6  # was 4: brokers 1 and 2 of both clusters merged by id
    codes = Counter(f["code"] for f in result.findings)
    assert codes["REPLICA_LAG"] == 0 and codes["TOPIC_RECREATED"] == 0  # every replica is in sync
    assert codes["SEVERAL_CLUSTERS"] == 1  # said once
    note = next(f for f in result.findings if f["code"] == "SEVERAL_CLUSTERS")
    assert "ZkClusterAAAAAAAAAAAAA" in note["message"] and "KRaftClusterBBBBBBBBBB" in note["message"]
    replicas = table(root / source, "replicas")
    orders = [r for r in replicas if r["topic"] == "orders"]
    assert len(orders) == 12 and all(r["replica_count"] == 3 and r["lag_offsets"] == 0 for r in orders)
    assert {r["cluster"] for r in orders} == {"ZkClusterAAAAAAAAAAAAA", "KRaftClusterBBBBBBBBBB"}
    parts = [p for p in table(root / source, "partitions") if p["topic"] == "orders"]
    assert sorted((p["cluster"], p["partition"], p["replicas"]) for p in parts) == [
        ("KRaftClusterBBBBBBBBBB", 0, 3),
        ("KRaftClusterBBBBBBBBBB", 1, 3),
        ("ZkClusterAAAAAAAAAAAAA", 0, 3),
        ("ZkClusterAAAAAAAAAAAAA", 1, 3),
    ]
    labels = {d["broker"] for d in table(root / source, "log_dirs")}
    assert labels == {
        "broker-0",
        "broker-1@ZkClusterAAAAAAAAAAAAA",
        "broker-2@ZkClusterAAAAAAAAAAAAA",
        "broker-1@KRaftClusterBBBBBBBBBB",
        "broker-2@KRaftClusterBBBBBBBBBB",
        "broker-3",
    }


def test_inventories_give_the_tables_of_the_log_dirs(two_clusters):
    root, _from_dirs, _from_inv = two_clusters
    for name in ("replicas", "partitions", "log_dirs"):
        assert table(root / "from-inv", name) == table(root / "from-dirs", name), name


def test_the_python_rules_agree_with_the_spark_sql(two_clusters):
    root, _from_dirs, _from_inv = two_clusters
    brokers = discover_brokers([str(root / "zk"), str(root / "kraft")])
    assert len(brokers) == 6 and len({b.cluster for b in brokers}) == 2
    python = replica_lag([r for b in brokers for r in scan_broker(b, NOW)["replicas"]])
    spark_rows = {
        (r["broker"], r["log_dir"], r["topic"], r["partition"]): r
        for r in table(root / "from-dirs", "replicas")
    }
    assert len(spark_rows) == len(python)
    for r in python:
        got = spark_rows[(r["broker"], r["log_dir"], r["topic"], r["partition"])]
        # the consumer log range is an input of the consumer-group rule, not a column of the table
        r = {k: v for k, v in r.items() if not k.startswith("consumer_log_")}
        assert {k: got[k] for k in r} == r
    spark_parts = {
        (p["cluster"], p["topic"], p["partition"]): p for p in table(root / "from-dirs", "partitions")
    }
    rows = partition_rows(python)
    assert len(rows) == len(spark_parts)
    for p in rows:
        got = spark_parts[(p["cluster"], p["topic"], p["partition"])]
        assert {k: got[k] for k in p} == p


@pytest.fixture(scope="module")
def docker_twins(spark, small_census_confs, tmp_path_factory):
    """Two single-node KRaft clusters formatted with docker-compose's cluster id, both node 1, each with
    its own metadata log and directory.id, and a topic `orders` of different lengths."""
    root = tmp_path_factory.mktemp("docker-twins")
    a = _fleet(root / "a", (1,), kraft=True, cluster_id=DOCKER_CLUSTER_ID, records=200, seed=3)
    b = _fleet(root / "b", (1,), kraft=True, cluster_id=DOCKER_CLUSTER_ID, records=700, seed=4)
    from_dirs = run_census(spark, [str(a / "broker-1"), str(b / "broker-1")], root / "from-dirs", now_ms=NOW)
    inv = _inventories([a / "broker-1", b / "broker-1"], root / "inventories")
    from_inv = run_census(spark, [str(inv)], root / "from-inv", now_ms=NOW)
    return root, from_dirs, from_inv


@pytest.mark.parametrize("source", ["from-dirs", "from-inv"])
def test_one_cluster_id_and_node_id_in_two_clusters_are_two_brokers(docker_twins, source):
    root, from_dirs, from_inv = docker_twins
    result = from_dirs if source == "from-dirs" else from_inv
    assert result.brokers == 2
    codes = Counter(f["code"] for f in result.findings)
    assert codes["REPLICA_LAG"] == 0 and codes["TOPIC_RECREATED"] == 0 and codes["SEVERAL_CLUSTERS"] == 1
    note = next(f for f in result.findings if f["code"] == "SEVERAL_CLUSTERS")
    assert f"Cluster id {DOCKER_CLUSTER_ID} is shared" in note["message"]
    # each twin's quorum-state names itself alone, its one voter (issue 88 item 4): said once per cluster
    for twin in ("a", "b"):
        (state,) = (root / twin).glob("broker-1/*/__cluster_metadata-0/quorum-state")
        assert [v["voterId"] for v in json.loads(state.read_text())["currentVoters"]] == [1]
    small = [f for f in result.findings if f["code"] == "CONTROLLER_QUORUM_TOO_SMALL"]
    assert sorted(f["broker"] for f in small) == [f"broker-1@{DOCKER_CLUSTER_ID}#{n}" for n in (1, 2)]
    assert all(
        f"cluster {DOCKER_CLUSTER_ID}'s controller quorum has 1 voter(s) [1]" in f["message"] for f in small
    )
    orders = [r for r in table(root / source, "replicas") if r["topic"] == "orders"]
    assert len(orders) == 4 and all(r["replica_count"] == 1 and r["lag_offsets"] == 0 for r in orders)
    assert len({r["cluster"] for r in orders}) == 2
    assert {r["broker"] for r in orders} == {
        f"broker-1@{DOCKER_CLUSTER_ID}#1",
        f"broker-1@{DOCKER_CLUSTER_ID}#2",
    }


def test_the_metadata_log_gets_no_replica_lag_nor_sync_replica(spark, tmp_path):
    """Voters' metadata logs of different lengths: no REPLICA_LAG, so no `sync-replica __cluster_metadata-0`
    (a command that refuses it with 78); the lag stays in the replicas table."""
    kr = _fleet(
        tmp_path / "kraft", (1, 2), kraft=True, cluster_id="KRaftClusterCCCCCCCCCC", records=100, seed=5
    )
    # broker 2's metadata log lacks the last batch: it is behind the quorum
    seg = next((kr / "broker-2").glob("kafka-logs-0/__cluster_metadata-0/*.log"))
    from logdoctor.formats.records import iter_batches

    batches = list(iter_batches(seg.read_bytes()))
    assert len(batches) >= 2
    with open(seg, "r+b") as fh:
        fh.truncate(batches[-1].position)
    for stale in seg.parent.glob("*index"):
        stale.unlink()
    result = run_census(spark, [str(kr)], tmp_path / "out", now_ms=NOW)
    meta = [r for r in table(tmp_path / "out", "replicas") if r["topic"] == "__cluster_metadata"]
    assert sorted(r["lag_offsets"] for r in meta)[-1] > 0
    assert not [f for f in result.findings if f["code"] == "REPLICA_LAG"]
    assert not [f for f in result.findings if "sync-replica __cluster_metadata" in (f["fix_command"] or "")]


@pytest.mark.realworld
def test_real_kraft_dirs_of_one_docker_cluster_id(spark, tmp_path):
    """Real log dirs: kraft-3.9-duongnvt2110 and kraft-4.2-nomanazeem share cluster id
    5L6g3nShT-eMCtK--X86sw and node id 1, each with its own metadata log: two brokers, two clusters."""
    rw = realworld.require()
    dirs = [str(rw / "kraft-3.9-duongnvt2110"), str(rw / "kraft-4.2-nomanazeem")]
    result = run_census(spark, dirs, tmp_path / "out", now_ms=NOW)
    assert result.brokers == 2
    codes = Counter(f["code"] for f in result.findings)
    assert codes["REPLICA_LAG"] == 0 and codes["TOPIC_RECREATED"] == 0 and codes["SEVERAL_CLUSTERS"] == 1
    # each a combined-mode node whose quorum-state names it the one voter (MANIFEST: node.id 1): one
    # CONTROLLER_QUORUM_TOO_SMALL per cluster (issue 88 item 4), the census's alone
    for d in dirs:
        state = json.loads((Path(d) / "__cluster_metadata-0" / "quorum-state").read_text())
        assert [v["voterId"] for v in state["currentVoters"]] == [1]
    assert codes["CONTROLLER_QUORUM_TOO_SMALL"] == 2
    alone = Counter()
    for d in dirs:
        one = run_census(spark, [d], tmp_path / f"alone-{Path(d).name}", now_ms=NOW)
        alone.update(f["code"] for f in one.findings)
    assert codes - Counter({"SEVERAL_CLUSTERS": 1}) == alone
