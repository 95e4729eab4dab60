"""An empty meta.properties: what the broker does depends on its version (issue 24: the finding said that a
ZooKeeper-mode broker rewrites it itself, which Kafka 0.9-2.7 never do). The text is checked against Kafka's
own source at each release tag (../.mirror of apache/kafka, read with git), not against itself."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from logdoctor.checks.catalog.checkpoint_files import META_PROPERTIES_EMPTY_BY_VERSION
from logdoctor.cli import commands  # noqa: F401  (registers every command)
from logdoctor.cli.main import app
from logdoctor.sample.logdir import TopicSpec, generate_log_dir

KAFKA = Path("/work/.mirror/apache+kafka/repo")


def _empty_meta(tmp_path: Path) -> Path:
    topics = [TopicSpec("orders", partitions=1, records_per_partition=20)]
    log_dir, _ = generate_log_dir(tmp_path / "gen", topics)
    (log_dir / "meta.properties").write_bytes(b"")
    return log_dir


def test_an_empty_meta_properties_says_what_each_kafka_version_does(tmp_path: Path) -> None:
    log_dir = _empty_meta(tmp_path)
    doc = json.loads(CliRunner().invoke(app, ["scan", str(log_dir), "--json"]).stdout)
    found = [f for f in doc["findings"] if f["code"] == "META_PROPERTIES_INVALID"]
    assert len(found) == 1
    text = " ".join(found[0]["message"].split())
    assert "Kafka 0.9 to 2.7 fail to start ('Missing required property 'version'')" in text
    assert "in ZooKeeper mode 2.8 to 3.6 read it as version 0" in text
    assert "refuse to start when another log dir holds a full one" in text
    assert "in ZooKeeper mode 3.7 to 3.9 rewrite it at startup" in text
    assert "a KRaft broker (any version) refuses to start" in text
    # repair leaves it, and says the same per version (never "rewrites it itself" for every version)
    r = CliRunner().invoke(app, ["repair", str(log_dir), "--only", "INDEX_CORRUPT"])
    out = " ".join(r.output.split())
    assert "still found: WARNING META_PROPERTIES_INVALID" in out
    assert "Kafka 0.9 to 2.7 fail to start" in out and "rewrites it itself" not in out


def _kafka(tag: str, path: str) -> str:
    done = subprocess.run(["git", "-C", str(KAFKA), "show", f"{tag}:{path}"], capture_output=True, text=True)
    assert done.returncode == 0, (tag, path, done.stderr)
    return done.stdout


@pytest.mark.skipif(not (KAFKA / "HEAD").exists() and not (KAFKA / ".git").exists(), reason="no Kafka mirror")
def test_the_per_version_text_holds_in_kafkas_source() -> None:
    ckpt = "core/src/main/scala/kafka/server/BrokerMetadataCheckpoint.scala"
    # 0.9-2.7: "version" is required; a missing key is an IllegalArgumentException (require), which the
    # offline-dir handling (IOException only) does not catch: startup fails
    for tag in ("0.9.0.0", "0.10.1.0", "1.0.0", "2.7.0"):
        assert 'getIntInRange("version", (0, Int.MaxValue))' in _kafka(tag, ckpt), tag
    verifiable = _kafka("2.7.0", "core/src/main/scala/kafka/utils/VerifiableProperties.scala")
    assert "require(containsKey(name), \"Missing required property '\" + name + \"'\")" in verifiable
    assert "case e: IOException =>" in _kafka("2.7.0", "core/src/main/scala/kafka/server/KafkaServer.scala")
    # 2.8-3.6: version defaults to 0; dirs whose Properties differ stop the broker
    for tag in ("2.8.0", "3.0.0", "3.6.0"):
        src = _kafka(tag, ckpt)
        assert "intValue(VersionKey).getOrElse(0)" in src, tag
        assert "BrokerMetadata is not consistent across log.dirs" in src, tag
    # 3.7-3.9: MetaProperties.Builder defaults to V0 and KafkaServer rewrites every dir with a Copier
    for tag in ("3.7.0", "3.8.0"):
        props = _kafka(tag, "metadata/src/main/java/org/apache/kafka/metadata/properties/MetaProperties.java")
        assert "MetaPropertiesVersion.V0.numberString()" in props, tag
        server = _kafka(tag, "core/src/main/scala/kafka/server/KafkaServer.scala")
        assert "new MetaPropertiesEnsemble.Copier(initialMetaPropsEnsemble)" in server, tag
        assert "setClusterId(_clusterId)" in server, tag
    # KRaft: no node id in an empty file
    assert "node ID not found in" in _kafka("HEAD", "core/src/main/scala/kafka/server/KafkaRaftServer.scala")
    assert "Kafka 0.9 to 2.7" in META_PROPERTIES_EMPTY_BY_VERSION
