"""How the census names brokers and which cluster each is compared within (issue 24: clusters are not
brokers). Plain Python: the names are made on the driver before any Spark job."""

from __future__ import annotations

from logdoctor.spark.census_rules import BrokerInput, clusters_finding, name_brokers

A, B, DOCKER = "ZkClusterAAAAAAAAAAAAA", "KRaftClusterBBBBBBBBBB", "MkU3OEVBNTcwNTJENDM2Qk"


def _brokers(cluster: str | None, ids: list[int]) -> list[BrokerInput]:
    return [BrokerInput(f"broker-{i}", i, (f"/{cluster}/{i}",), cluster) for i in ids]


def test_one_cluster_keeps_its_labels_and_is_not_said():
    named = name_brokers(_brokers(A, [0, 1, 2]))
    assert [(b.broker, b.cluster) for b in named] == [("broker-0", A), ("broker-1", A), ("broker-2", A)]
    assert clusters_finding(named) is None
    # brokers of before cluster.id (ZooKeeper 0.10): one cluster too
    old = name_brokers(_brokers(None, [0, 1, 2]))
    assert {b.cluster for b in old} == {""} and [b.broker for b in old] == [
        "broker-0",
        "broker-1",
        "broker-2",
    ]


def test_two_clusters_with_overlapping_ids_are_six_brokers_in_two_clusters():
    named = name_brokers(_brokers(A, [0, 1, 2]) + _brokers(B, [1, 2, 3]))
    assert len({b.broker for b in named}) == 6
    assert [b.broker for b in named] == [
        "broker-0", f"broker-1@{A}", f"broker-2@{A}", f"broker-1@{B}", f"broker-2@{B}", "broker-3",
    ]  # fmt: skip
    assert [b.cluster for b in named] == [A, A, A, B, B, B]
    note = clusters_finding(named)
    assert note is not None and note["code"] == "SEVERAL_CLUSTERS" and note["severity"] == "info"
    assert "2 clusters" in note["message"] and "is shared" not in note["message"]


def test_one_cluster_id_with_node_1_twice_is_two_clusters():
    named = name_brokers(_brokers(DOCKER, [1]) + _brokers(DOCKER, [1]) + _brokers(A, [1]))
    assert [b.broker for b in named] == [f"broker-1@{DOCKER}#1", f"broker-1@{DOCKER}#2", f"broker-1@{A}"]
    assert len({b.cluster for b in named}) == 3
    note = clusters_finding(named)
    assert note is not None and f"Cluster id {DOCKER} is shared" in note["message"]


def test_census_tells_two_jbod_brokers_of_one_cluster_id_and_node_id_apart(tmp_path):
    """Log dirs as inputs: two docker-compose clusters (one cluster id, node 1), each broker with two log
    dirs and its metadata log in the first; each broker keeps both its dirs (its metadata registers their
    directory ids), and each is a cluster of its own."""
    from logdoctor.sample.kraft import write_metadata_log
    from logdoctor.sample.logdir import BrokerSpec, FleetSpec, TopicSpec, generate_fleet
    from logdoctor.spark.census_rules import discover_brokers

    expected = []
    for name, seed in (("a", 1), ("b", 2)):
        spec = FleetSpec(
            topics=(TopicSpec("orders", partitions=4, records_per_partition=20),),
            brokers=(BrokerSpec(1, kraft=True, log_dirs=2),),
            seed=seed,
            cluster_id=DOCKER,
        )
        fleet = generate_fleet(tmp_path / name, spec)
        write_metadata_log(fleet, 1, metadata_version=21)
        expected.append(tuple(sorted(str(d) for d in fleet.log_dirs[1])))
    brokers = discover_brokers([str(tmp_path / "a"), str(tmp_path / "b")])
    assert sorted(b.log_dirs for b in brokers) == sorted(expected)
    assert len({b.cluster for b in brokers}) == 2 and len({b.broker for b in brokers}) == 2
