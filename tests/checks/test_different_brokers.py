"""Log dirs of different brokers scanned together: no error per partition copy; for a command that works on
one broker (repair: ``ScanOptions.one_broker``) one LOG_DIRS_OF_DIFFERENT_BROKERS says so, for ``scan`` (and
the census) nothing does: several brokers' dirs are how their replicas are compared (issue 47)."""

from __future__ import annotations

from collections import Counter

import pytest

import realworld
from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan

NOW = 1_800_000_000_000


def _scan(*dirs, one_broker: bool = True):
    return scan([str(d) for d in dirs], ScanOptions(Depth.DEFAULT, NOW, one_broker=one_broker), jobs=1)


@pytest.mark.realworld
@pytest.mark.parametrize(
    "names",
    [
        ("zk-3.0-tuyen-nnt-b0", "zk-3.0-tuyen-nnt-b1", "zk-3.0-tuyen-nnt-b2"),  # one ZooKeeper cluster
        ("kraft-3.5-greenlemont-n1", "kraft-3.5-greenlemont-n2", "kraft-3.5-greenlemont-n3"),  # one KRaft
        ("zk-3.7-nikhildighe-b0", "zk-2.8-seanorth"),  # two clusters
        # issue 24: two KRaft clusters, both node 1: another cluster's metadata judged nothing here
        ("kraft-3.5-greenlemont-n1", "kraft-4.2-nomanazeem"),
        # issue 24: one cluster id and node id 1 (a docker-compose default), each its own metadata log:
        # two brokers, not one with 104 duplicate partitions and 52 topic ids against the other's metadata
        ("kraft-3.5-greenlemont-n1", "kraft-3.5-greenlemont-single"),
        ("kraft-3.9-duongnvt2110", "kraft-4.2-nomanazeem"),
    ],
)
def test_brokers_scanned_together_get_one_finding(names: tuple[str, ...]) -> None:
    rw = realworld.require()
    dirs = [rw / n for n in names]
    together = _scan(*dirs)
    codes = Counter(f.code for f in together.findings)
    assert codes["LOG_DIRS_OF_DIFFERENT_BROKERS"] == 1
    assert codes["DUPLICATE_PARTITION"] == 0 and codes["META_PROPERTIES_MISMATCH"] == 0
    one = next(f for f in together.findings if f.code == "LOG_DIRS_OF_DIFFERENT_BROKERS")
    assert all(str(d) in one.message for d in dirs)
    assert len(one.details["brokers"]) == len(names)
    # everything else is exactly what each broker's own scan finds
    alone = Counter()
    for d in dirs:
        alone.update((f.code, f.path, f.message) for f in _scan(d).findings)
    rest = Counter((f.code, f.path, f.message) for f in together.findings if f is not one)
    assert rest == alone
    # scan (not one broker): the same findings, without the error
    scanned = _scan(*dirs, one_broker=False)
    assert Counter((f.code, f.path, f.message) for f in scanned.findings) == alone


@pytest.mark.realworld
def test_the_log_dirs_of_one_broker_are_not_flagged() -> None:
    rw = realworld.require()
    report = _scan(rw / "zk-3.7-nikhildighe-b0")
    assert "LOG_DIRS_OF_DIFFERENT_BROKERS" not in {f.code for f in report.findings}


@pytest.mark.realworld
def test_one_cluster_id_and_node_id_with_two_metadata_logs_are_two_brokers() -> None:
    """The two dirs share cluster id and node id 1: the finding says why they are two brokers, and each
    broker's KRaft checks use its own metadata log only (no REPLICA_NOT_ASSIGNED from the other's)."""
    rw = realworld.require()
    a, b = rw / "kraft-3.9-duongnvt2110", rw / "kraft-4.2-nomanazeem"
    report = _scan(a, b)
    one = next(f for f in report.findings if f.code == "LOG_DIRS_OF_DIFFERENT_BROKERS")
    assert "each with its own metadata log" in one.message and "5L6g3nShT-eMCtK--X86sw" in one.message
    assert sorted(one.details["brokers"].values()) == [[str(a)], [str(b)]]
    assert not {"REPLICA_NOT_ASSIGNED", "DUPLICATE_PARTITION", "TOPIC_ID_MISMATCH"} & {
        f.code for f in report.findings
    }


def _copy_without_metadata(src, dst):
    import shutil

    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__cluster_metadata-0", ".lock"))
    return dst


@pytest.mark.realworld
def test_a_kraft_dir_without_its_metadata_log_gets_one_note(tmp_path) -> None:
    """A KRaft dir whose metadata log is not given: one KRAFT_METADATA_NOT_SCANNED note (it was silence),
    and another broker's metadata log given beside it is not applied to it."""
    rw = realworld.require()
    bare = _copy_without_metadata(rw / "kraft-4.2-nomanazeem", tmp_path / "broker-b")
    alone = _scan(bare)
    notes = [f for f in alone.findings if f.code == "KRAFT_METADATA_NOT_SCANNED"]
    assert len(notes) == 1 and str(bare) in notes[0].message and notes[0].severity.label == "info"
    assert "metadata.log.dir" in notes[0].fix and str(bare) in notes[0].fix
    other = rw / "kraft-3.5-greenlemont-n1"  # another cluster, node 1 too, with its metadata log
    together = _scan(other, bare)
    codes = Counter(f.code for f in together.findings)
    assert codes["KRAFT_METADATA_NOT_SCANNED"] == 1 and codes["TOPIC_ID_MISMATCH"] == 0
    assert codes["REPLICA_NOT_ASSIGNED"] == 0
    # a ZooKeeper-era dir is never told about a metadata log
    assert "KRAFT_METADATA_NOT_SCANNED" not in {f.code for f in _scan(rw / "zk-3.7-nikhildighe-b0").findings}


def test_two_jbod_brokers_of_one_cluster_id_and_node_id_are_told_apart_by_their_metadata(tmp_path) -> None:
    """Two single-node KRaft clusters formatted with docker-compose's cluster id, node 1, each with two log
    dirs (JBOD) and its metadata log in the first: the second dir of each goes with the broker whose
    metadata registers its directory.id (RegisterBrokerRecord logDirs), not with the other."""
    from logdoctor.sample.kraft import write_metadata_log
    from logdoctor.sample.logdir import BrokerSpec, FleetSpec, TopicSpec, generate_fleet

    dirs = []
    for name, seed in (("a", 1), ("b", 2)):
        spec = FleetSpec(
            topics=(TopicSpec("orders", partitions=4, records_per_partition=20),),
            brokers=(BrokerSpec(1, kraft=True, log_dirs=2),),
            seed=seed,
            cluster_id="MkU3OEVBNTcwNTJENDM2Qk",
        )
        fleet = generate_fleet(tmp_path / name, spec)
        write_metadata_log(fleet, 1, metadata_version=21)
        dirs.append([str(d) for d in fleet.log_dirs[1]])
    report = _scan(*dirs[0], *dirs[1])
    one = [f for f in report.findings if f.code == "LOG_DIRS_OF_DIFFERENT_BROKERS"]
    assert len(one) == 1
    assert sorted(one[0].details["brokers"].values()) == sorted(dirs)
    codes = {f.code for f in report.findings}
    assert not {"DUPLICATE_PARTITION", "REPLICA_NOT_ASSIGNED", "TOPIC_ID_MISMATCH", "REPLICA_MISSING"} & codes
    alone = Counter()
    for broker in dirs:
        alone.update((f.code, f.path) for f in _scan(*broker).findings)
    assert Counter((f.code, f.path) for f in report.findings if f is not one[0]) == alone
