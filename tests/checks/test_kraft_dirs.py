"""KRaft log dirs with distinct, duplicate, missing and reserved directory ids, and a metadata log that
assigns replicas to them: each finding fires exactly where it should and nowhere else.

The broker (one node, two log dirs) and its ``__cluster_metadata-0`` are generated with the
project's writer (logdoctor.sample.kraft); what each case expects is derived from the planted
change (which folder moved, which id was copied), not from a scan.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.formats.partition_metadata import PartitionMetadata, write_partition_metadata
from logdoctor.logdir.identity import LOST, UNASSIGNED, is_reserved_directory_id, read_identity
from logdoctor.logdir.metadata_image import replay
from logdoctor.sample.kraft import (
    MisplacedReplica,
    SharedDirectoryId,
    directory_id_of,
    metadata_records,
    write_metadata_log,
)
from logdoctor.sample.logdir import BrokerSpec, FleetSpec, TopicSpec, generate_fleet

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
    "META_PROPERTIES_MISMATCH",
}


def _broker(tmp_path: Path, *, metadata_version: int = 21, records=None, brokers=1):
    spec = FleetSpec(
        topics=[TopicSpec("orders", partitions=4, records_per_partition=40, replication_factor=brokers)],
        brokers=tuple(BrokerSpec(b, kraft=True, log_dirs=2) for b in range(1, brokers + 1)),
        seed=11,
    )
    fleet = generate_fleet(tmp_path / "fleet", spec)
    recs = records(fleet) if records else None
    write_metadata_log(fleet, 1, metadata_version=metadata_version, records=recs)
    return fleet


def _kraft_findings(fleet, broker_id: int = 1):
    report = scan([str(d) for d in fleet.log_dirs[broker_id]], ScanOptions(Depth.QUICK), jobs=1)
    return [f for f in report.findings if f.code in KRAFT_CODES], report


def _codes(findings):
    return sorted((f.code, f.path) for f in findings)


def test_generated_dirs_have_distinct_ids_and_scan_clean(tmp_path):
    fleet = _broker(tmp_path)
    ids = [directory_id_of(d) for d in fleet.log_dirs[1]]
    assert None not in ids and len(set(ids)) == 2
    found, report = _kraft_findings(fleet)
    assert found == []
    # the replay holds every replica where it was written
    image = report.metadata
    assert image is not None and image.directory_assignment
    for r in fleet.replicas:
        assert image.partition(r.topic, r.partition).directory(1) == directory_id_of(r.log_dir)


def test_misplaced_replica(tmp_path):
    fleet = _broker(tmp_path)
    before = fleet.replica(1, "orders", 0).log_dir
    MisplacedReplica(1, "orders", 0, to_log_dir_index=1 if before == fleet.log_dirs[1][0] else 0).apply(fleet)
    moved = fleet.replica(1, "orders", 0)
    found, _ = _kraft_findings(fleet)
    assert _codes(found) == [("REPLICA_MISPLACED", str(moved.path))]
    f = found[0]
    assert f.severity.label == "warning"
    assert f.details["assigned_directory_id"] == directory_id_of(before)
    assert f.details["directory_id"] == directory_id_of(moved.log_dir)
    assert f.details["assigned_log_dir"] == str(before)
    assert "AssignReplicasToDirs" in f.message
    assert f"logdoctor move-partition orders-0 --from {moved.log_dir} --to {before}" in f.fix


def test_duplicate_directory_id(tmp_path):
    fleet = _broker(tmp_path)
    second = fleet.log_dirs[1][1]
    own_id = directory_id_of(second)
    SharedDirectoryId(1, log_dir_index=1).apply(fleet)
    found, _ = _kraft_findings(fleet)
    assert _codes(found) == [("DIRECTORY_ID_DUPLICATE", str(second / "meta.properties"))]
    assert found[0].severity.label == "error"
    assert f"directory.id={own_id}" in found[0].fix  # the id the metadata assigns its replicas to


def test_missing_directory_id(tmp_path):
    fleet = _broker(tmp_path)
    second = fleet.log_dirs[1][1]
    own_id = directory_id_of(second)
    meta = second / "meta.properties"
    meta.write_bytes(
        b"".join(ln for ln in meta.read_bytes().splitlines(True) if not ln.startswith(b"directory.id"))
    )
    assert read_identity(second).directory_id is None
    found, _ = _kraft_findings(fleet)
    assert _codes(found) == [("DIRECTORY_ID_MISSING", str(meta))]
    assert f"directory.id={own_id}" in found[0].fix
    assert "3.9-IV0" in found[0].message


def test_reserved_directory_id(tmp_path):
    fleet = _broker(tmp_path)
    second = fleet.log_dirs[1][1]
    meta = second / "meta.properties"
    text = meta.read_bytes().decode("latin-1")
    old = directory_id_of(second)
    meta.write_bytes(text.replace(old, LOST).encode("latin-1"))
    assert is_reserved_directory_id(LOST) and is_reserved_directory_id(UNASSIGNED)
    assert not is_reserved_directory_id(old)
    found, _ = _kraft_findings(fleet)
    assert ("DIRECTORY_ID_INVALID", str(meta)) in _codes(found)
    assert {c for c, _ in _codes(found)} <= {"DIRECTORY_ID_INVALID", "REPLICA_MISPLACED"}
    # the replicas of that dir are assigned to its former id: info only, the broker reports the new one
    assert all(f.severity.label == "info" for f in found if f.code == "REPLICA_MISPLACED")


def test_replica_not_assigned_and_stray_folder(tmp_path):
    def records(fleet):
        recs = metadata_records(fleet, metadata_version=21)
        for r in recs:
            if r["type"] == "PartitionRecord" and r["data"]["partition_id"] in (1, 2):
                r["data"].update(replicas=[9], isr=[9], leader=9, directories=[UNASSIGNED])
        return recs

    fleet = _broker(tmp_path, records=records)
    p1, p2 = fleet.replica(1, "orders", 1), fleet.replica(1, "orders", 2)
    stray = p2.log_dir / "orders-2.0123456789abcdef0123456789abcdef-stray"
    os.rename(p2.path, stray)
    found, _ = _kraft_findings(fleet)
    assert _codes(found) == sorted(
        [("REPLICA_NOT_ASSIGNED", str(p1.path)), ("STRAY_REPLICA_LEFT", str(stray))]
    )
    by_code = {f.code: f for f in found}
    assert "[9]" in by_code["REPLICA_NOT_ASSIGNED"].message
    assert "-stray" in by_code["REPLICA_NOT_ASSIGNED"].message
    assert f"rm -r {stray}" in by_code["STRAY_REPLICA_LEFT"].fix


def test_topic_id_differs_from_metadata(tmp_path):
    fleet = _broker(tmp_path)
    r = fleet.replica(1, "orders", 3)
    (r.path / "partition.metadata").write_bytes(
        write_partition_metadata(PartitionMetadata(0, "ZZZZZZZZZZZZZZZZZZZZZQ"))
    )
    found, _ = _kraft_findings(fleet)
    assert _codes(found) == [("TOPIC_ID_MISMATCH", str(r.path / "partition.metadata"))]


def test_missing_replica(tmp_path):
    fleet = _broker(tmp_path)
    r = fleet.replica(1, "orders", 2)
    shutil.rmtree(r.path)
    found, _ = _kraft_findings(fleet)
    assert _codes(found) == [("REPLICA_MISSING", str(r.path))]
    assert found[0].severity.label == "error"  # the only replica


def test_jbod_before_3_7_iv2_and_no_assignment_checks(tmp_path):
    fleet = _broker(tmp_path, metadata_version=14)  # 3.6-IV2: replicas are MIGRATING, no directories
    MisplacedReplica(
        1,
        "orders",
        0,
        to_log_dir_index=1 if fleet.replica(1, "orders", 0).log_dir == fleet.log_dirs[1][0] else 0,
    ).apply(fleet)
    found, report = _kraft_findings(fleet)
    assert _codes(found) == [("JBOD_METADATA_VERSION", str(fleet.log_dirs[1][0] / "meta.properties"))]
    assert report.metadata.metadata_version_name == "3.6-IV2"


def test_meta_properties_version_disagrees(tmp_path):
    fleet = _broker(tmp_path)
    meta = fleet.log_dirs[1][1] / "meta.properties"
    text = (
        meta.read_bytes()
        .decode("latin-1")
        .replace("version=1", "version=0")
        .replace("node.id=", "broker.id=")
    )
    meta.write_bytes(text.encode("latin-1"))
    found, _ = _kraft_findings(fleet)
    assert ("META_PROPERTIES_MISMATCH", str(meta)) in _codes(found)


@pytest.mark.parametrize("broker_id", [1, 2])
def test_two_brokers_each_replays_its_own_replicas(tmp_path, broker_id):
    fleet = _broker(tmp_path, brokers=2)
    write_metadata_log(fleet, 2)
    image = replay(fleet.log_dirs[broker_id][0] / "__cluster_metadata-0")
    mine = {(r.topic, r.partition) for r in fleet.replicas if r.broker_id == broker_id}
    assert set(image.replicas_of(broker_id)) == mine
    found, _ = _kraft_findings(fleet, broker_id)
    assert found == []


def test_generated_metadata_log_has_kafkas_record_layouts(tmp_path):
    """Every record of the generated metadata log reads the same with a reader driven by Kafka's own
    JSON definitions (../shared/kafka-schemas) as with ours, at the version written."""
    import kafka_schemas as ks
    from logdoctor.formats.internal import decode_metadata_record
    from logdoctor.formats.records import iter_batches

    ks.require()
    specs = {
        ks.load(f"metadata/{p.name}")["apiKey"]: ks.Spec(ks.load(f"metadata/{p.name}"))
        for p in (ks.SCHEMAS / "metadata").glob("*.json")
    }
    fleet = _broker(tmp_path)
    log = fleet.log_dirs[1][0] / "__cluster_metadata-0" / "00000000000000000000.log"
    seen = set()
    for b in iter_batches(log.read_bytes()):
        for r in b.records():
            value = bytes(r.value)
            rd = ks._In(value)
            frame, api_key, version = rd.uvarint(), rd.uvarint(), rd.uvarint()
            theirs, end = ks.read(specs[api_key], value, version, pos=rd.pos)
            assert frame == 1 and end == len(value)
            assert decode_metadata_record(value)["data"] == theirs
            seen.add(specs[api_key].name)
    assert {"FeatureLevelRecord", "RegisterBrokerRecord", "TopicRecord", "PartitionRecord"} <= seen
