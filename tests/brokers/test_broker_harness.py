"""The real brokers the tests start: installed as pinned (scripts/ensure-kafka.sh checks every jar against
brokers/jars.lock, and says what is missing in one line where Maven Central cannot be reached), and run by
tests/kafka_cluster.py in each installed version: a KRaft node and a ZooKeeper-era broker start, take
records with acks=all, survive a SIGKILL and a restart on the same dirs, and serve every acknowledged record.

The lock is checked here by hashing the installed jars again in Python, not by the script's own check.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import kafka_cluster

pytestmark = pytest.mark.kafka

ROOT = kafka_cluster.ROOT
LOCK = ROOT / "brokers" / "jars.lock"


def _lock_entries() -> dict[str, dict[str, str]]:
    entries: dict[str, dict[str, str]] = {}
    for line in LOCK.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        version, digest, name = line.split()
        entries.setdefault(version, {})[name] = digest
    return entries


def test_every_pinned_version_has_a_pom_and_locked_jars() -> None:
    poms = {p.parent.name for p in (ROOT / "brokers").glob("*/pom.xml")}
    assert set(kafka_cluster.VERSIONS) <= poms
    assert set(_lock_entries()) == poms
    for version, jars in _lock_entries().items():
        assert f"kafka-clients-{version}.jar" in jars
        # 1.0.2 and 2.2.2 (the index checks of their era) were built for Scala 2.12 only
        scala = "2.12" if version in kafka_cluster.INDEX_CHECK_ERAS else "2.13"
        assert f"kafka_{scala}-{version}.jar" in jars
    # ZooKeeper comes with the ZooKeeper era's broker, LocalTieredStorage with 4.3.1's storage test jar
    assert any(n.startswith("zookeeper-3.") for n in _lock_entries()[kafka_cluster.ZOOKEEPER_ERA])
    assert f"kafka-storage-{kafka_cluster.EARLIER_4X}-test.jar" in _lock_entries()[kafka_cluster.EARLIER_4X]


@pytest.mark.parametrize("version", kafka_cluster.VERSIONS)
def test_the_installed_jars_are_the_locked_ones(version: str) -> None:
    if os.environ.get("LOGDOCTOR_KAFKA_LIBS"):
        pytest.skip("LOGDOCTOR_KAFKA_LIBS points the harness at other jars")
    libs = kafka_cluster.kafka_libs(version)
    installed = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in libs.glob("*.jar")}
    assert installed == _lock_entries()[version]


def _scratch_install(tmp_path: Path, *, m2: Path | None) -> Path:
    """A copy of the install's inputs (one version's pom, the lock, the script) in ``tmp_path``, with
    Maven's cache ``m2`` (empty when None) and nothing installed."""
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "ensure-kafka.sh", root / "scripts")
    (root / "brokers" / kafka_cluster.NEWEST).mkdir(parents=True)
    shutil.copy(ROOT / "brokers" / kafka_cluster.NEWEST / "pom.xml", root / "brokers" / kafka_cluster.NEWEST)
    (root / ".tools").mkdir()
    if m2 is not None:
        (root / ".tools" / "m2").symlink_to(m2)
    return root


def _ensure(root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "ENSURE_KAFKA_MVN_FLAGS": "-o"}  # offline: no machine reaches Maven Central here
    return subprocess.run(
        ["bash", str(root / "scripts" / "ensure-kafka.sh")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_without_maven_central_the_install_names_what_is_missing(tmp_path: Path) -> None:
    root = _scratch_install(tmp_path, m2=None)
    lines = [
        ln
        for ln in LOCK.read_text().splitlines()
        if ln.startswith("#") or ln.startswith(kafka_cluster.NEWEST)
    ]
    (root / "brokers" / "jars.lock").write_text("\n".join(lines) + "\n")
    done = _ensure(root)
    assert done.returncode == 1
    assert f"could not resolve Kafka {kafka_cluster.NEWEST}'s jars" in done.stderr
    assert "maven-dependency-plugin" in done.stderr  # what could not be had
    assert "\tat " not in done.stderr and "Exception" not in done.stderr  # no Java stack
    assert not (root / ".tools" / "kafka" / kafka_cluster.NEWEST).exists()


def test_a_jar_that_differs_from_the_lock_is_refused(tmp_path: Path) -> None:
    m2 = ROOT / ".tools" / "m2"
    if not m2.is_dir():
        pytest.skip("required: Maven's project-local cache .tools/m2 (bash scripts/ensure-kafka.sh makes it)")
    root = _scratch_install(tmp_path, m2=m2)
    lines = [ln for ln in LOCK.read_text().splitlines() if ln.startswith(kafka_cluster.NEWEST)]
    version, digest, name = lines[0].split()
    lines[0] = f"{version} {'0' * len(digest)} {name}"  # the lock names another jar than Maven serves
    (root / "brokers" / "jars.lock").write_text("\n".join(lines) + "\n")
    done = _ensure(root)
    assert done.returncode == 1, done.stderr
    assert f"Kafka {kafka_cluster.NEWEST}'s jars differ from brokers/jars.lock" in done.stderr
    assert name in done.stderr
    assert not (root / ".tools" / "kafka" / kafka_cluster.NEWEST).exists()
    # with the true lock the same offline install succeeds and is checked
    (root / "brokers" / "jars.lock").write_text(
        "\n".join(ln for ln in LOCK.read_text().splitlines() if ln.startswith(kafka_cluster.NEWEST)) + "\n"
    )
    done = _ensure(root)
    assert done.returncode == 0, done.stderr
    assert (root / ".tools" / "kafka" / kafka_cluster.NEWEST / ".checked").is_file()


@pytest.mark.parametrize("version", kafka_cluster.VERSIONS)
def test_a_broker_survives_sigkill_and_serves_every_acknowledged_record(tmp_path: Path, version: str) -> None:
    with kafka_cluster.KafkaCluster(tmp_path / "cluster", version=version) as cluster:
        assert cluster.kraft == (version != kafka_cluster.ZOOKEEPER_ERA)
        cluster.create_topic("harness", 1)
        records = [(f"k{i}".encode(), f"v{i}".encode() * 20) for i in range(2000)]
        acked = cluster.produce("harness", records)
        assert acked == list(range(2000))
        node = cluster.broker(1)
        node.kill()
        assert not (node.log_dirs[0] / ".kafka_cleanshutdown").exists()
        node.start()
        cluster.wait_brokers_registered([node])
        # the broker says it found an unclean shutdown and recovered from it (its own words, per era)
        assert "unclean" in node.log().lower() or "recover" in node.log().lower()
        got = cluster.consume("harness", 0)
        assert [(o, k, v) for o, k, v in got] == [(o, k, v) for o, (k, v) in zip(acked, records, strict=True)]
        described = cluster.tool("kafka-log-dirs.sh", "--bootstrap-server", cluster.bootstrap, "--describe")
        assert '"partition":"harness-0"' in described.stdout
    # a clean stop leaves the clean-shutdown marker (the ZooKeeper era and KRaft alike)
    assert (cluster.broker(1).log_dirs[0] / ".kafka_cleanshutdown").exists()
