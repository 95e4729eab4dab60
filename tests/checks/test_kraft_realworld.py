"""The KRaft dirs of ../shared/realworld (3.5 to 4.2, single and multi-node): the replayed metadata
image of each broker agrees with what is on disk and with MANIFEST.json (written from the files by
the data's collector, not by this project), and the scan finds no directory or assignment problem.
"""

from __future__ import annotations

import pytest

import realworld
from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.kraft import check_kraft
from logdoctor.checks.scanner import scan
from logdoctor.formats.checkpoint import parse_leader_epoch_checkpoint
from logdoctor.formats.partition_metadata import parse_partition_metadata
from logdoctor.formats.properties import parse_meta_properties
from logdoctor.logdir.identity import MIGRATING, read_identity
from logdoctor.logdir.metadata_image import find_metadata_dir, replay

KRAFT_CODES = {
    "DIRECTORY_ID_DUPLICATE",
    "DIRECTORY_ID_INVALID",
    "DIRECTORY_ID_MISSING",
    "JBOD_METADATA_VERSION",
    "REPLICA_MISPLACED",
    "REPLICA_MISSING",
    "REPLICA_NOT_ASSIGNED",
    "STRAY_REPLICA_LEFT",
    "TOPIC_ID_MISMATCH",
}


def _kraft_entries() -> list:
    if not realworld.available():
        return realworld.params([])
    return [
        pytest.param(e, id=e["name"])
        for e in realworld.manifest()["entries"]
        if e["mode"] == "kraft" and e["has"]["__cluster_metadata"]
    ]


@pytest.mark.parametrize("entry", _kraft_entries())
def test_replay_agrees_with_disk_and_manifest(entry, realworld_dir):
    log_dir = realworld_dir / entry["name"]
    node = int(entry["meta_properties"]["node.id"])
    image = replay(find_metadata_dir([str(log_dir)]))
    assert image.errors == [] and not image.skipped
    # metadata.version and the other feature levels the collector read from the records
    assert image.features == entry["feature_levels"]
    # the partitions this broker holds on disk are exactly the ones the metadata assigns to it
    on_disk = {(t, p) for t, ps in entry["topics"].items() for p in ps if t != "__cluster_metadata"}
    assert set(image.replicas_of(node)) == on_disk
    # ... with the topic ids of their partition.metadata files, and no leader epoch the metadata never had
    for t, p in on_disk:
        pm = parse_partition_metadata((log_dir / f"{t}-{p}" / "partition.metadata").read_bytes())
        assert image.topic_id(t) == pm.topic_id
        lec = log_dir / f"{t}-{p}" / "leader-epoch-checkpoint"
        epochs = parse_leader_epoch_checkpoint(lec.read_bytes())
        if epochs.entries:
            assert epochs.entries[-1][0] <= image.partition(t, p).leader_epoch
    # a KRaft broker registers the directory id of its log dir from 3.7-IV2 on
    reg = image.brokers[node]
    ident = read_identity(log_dir)
    if image.directory_assignment:
        assert reg.log_dirs == [ident.directory_id]
        for st in image.replicas_of(node).values():
            assert st.directory(node) == ident.directory_id
    else:
        assert reg.log_dirs == []
        assert all(st.directory(node) == MIGRATING for st in image.replicas_of(node).values())


@pytest.mark.parametrize("entry", _kraft_entries())
def test_scan_finds_no_directory_or_assignment_problem(entry, realworld_dir):
    report = scan([str(realworld_dir / entry["name"])], ScanOptions(Depth.QUICK), jobs=1)
    assert [f for f in report.findings if f.code in KRAFT_CODES] == []
    assert report.to_json()["metadata"]["metadata_version"] == entry["feature_levels"]["metadata.version"]


def test_three_node_cluster_replicas_partition_the_topics(realworld_dir):
    """n1, n2, n3 are one cluster: each node's replay assigns it exactly the partitions on its disk, and
    the three replays agree on topic ids."""
    images = {}
    for n in ("n1", "n2", "n3"):
        d = realworld_dir / f"kraft-3.5-greenlemont-{n}"
        node = parse_meta_properties((d / "meta.properties").read_bytes()).node_id
        images[node] = replay(d / "__cluster_metadata-0")
        ctx, findings = check_kraft([str(d)], [], images[node])
        assert ctx.node_id == node and findings == []
    topic_ids = [im.topics for im in images.values()]
    assert topic_ids[0] == topic_ids[1] == topic_ids[2]


def test_meta_only_dir_has_a_directory_id(realworld_dir):
    ident = read_identity(realworld_dir / "kraft-meta-only-surjith-07")
    assert ident.is_kraft and ident.directory_id == "nw6U-zVce9rRQcZYDK0Kpw" and ident.node_id == 3


@pytest.mark.realworld
def test_the_logs_leader_change_voters_match_the_quorum_state_kafka_wrote() -> None:
    """The voters of the last LeaderChangeMessage we decode equal the currentVoters of the quorum-state
    file the same node wrote (an independent record of the same set)."""
    import json

    compared = 0
    for mdir in sorted(realworld.require().glob("*/__cluster_metadata-0")):
        qs = json.loads((mdir / "quorum-state").read_text())
        image = replay(mdir)
        if image.leader_change is None or not qs.get("currentVoters"):
            continue
        assert list(image.leader_change[1]) == sorted(v["voterId"] for v in qs["currentVoters"]), mdir
        compared += 1
    assert compared >= 3
