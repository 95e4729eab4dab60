"""Topic retention settings as the broker resolves them (checks.topic_config), used by scan and retention.

Expectations come from Kafka's rules (cited in checks/topic_config.py), the real KRaft metadata logs of
../shared/realworld, and metadata logs written here with record values encoded from Kafka's own JSON
schemas (../shared/kafka-schemas/metadata/*.json) by a small encoder of this file, not the project's.
"""

from __future__ import annotations

import base64
import json
import os
import re
from pathlib import Path

import pytest

import realworld
from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.retention import retention
from logdoctor.checks.retention_round import RETENTION_MS_BREACH
from logdoctor.checks.scanner import scan
from logdoctor.checks.topic_config import (
    ConfigInputs,
    MetadataConfigs,
    TopicConfigResolver,
    config_inputs,
    metadata_config_events,
    parse_topic_config,
    read_metadata_configs,
)
from logdoctor.formats.record_types import RecordSpec
from logdoctor.formats.writer import build_record_batch
from logdoctor.sample.logdir import BrokerSpec, TopicSpec, ZeroedTimeIndex, generate_log_dir

HOUR = 3_600_000
DAY = 24 * HOUR
TOPIC, BROKER = 2, 4  # ConfigResource.Type


def resolver(
    server: dict[str, str] | None = None,
    topics: dict[str, dict[str, str]] | None = None,
    metadata: MetadataConfigs | None = None,
    node_id: int | None = 1,
    **cli: str,
):
    return TopicConfigResolver(
        ConfigInputs(server or {}, "server.properties", cli, topics or {}), metadata, node_id
    )


def md(*entries: tuple[int, str, str, str]) -> MetadataConfigs:
    m = MetadataConfigs()
    for i, (rtype, rname, key, value) in enumerate(entries):
        m.resources.setdefault((rtype, rname), {})[key] = (value, f"__cluster_metadata-0 offset {i}")
    return m


# --- precedence --------------------------------------------------------------------------------------


def test_kafka_defaults() -> None:
    c = resolver().resolve("orders")
    assert c.retention_ms.value == 7 * DAY and c.retention_ms.source == "Kafka default"
    assert c.retention_bytes.value == -1 and c.cleanup_policy.value == ("delete",)
    assert c.delete and not c.compact and c.time_retention


def test_internal_topics_are_compacted_by_default() -> None:
    r = resolver(server={"log.cleanup.policy": "delete"})
    for topic in ("__consumer_offsets", "__transaction_state"):
        c = r.resolve(topic)
        assert c.cleanup_policy.value == ("compact",) and not c.delete and not c.time_retention
        assert topic in c.cleanup_policy.source
    # an explicit topic config still wins (kafka-configs --alter on the internal topic)
    c = resolver(topics={"__consumer_offsets": {"cleanup.policy": "compact,delete"}}).resolve(
        "__consumer_offsets"
    )
    assert c.compact and c.delete and c.cleanup_policy.source == "--topic-config"


def test_broker_retention_ms_over_minutes_over_hours() -> None:
    # KafkaConfig.logRetentionTimeMillis
    assert resolver({"log.retention.hours": "24"}).resolve("t").retention_ms.value == DAY
    c = resolver({"log.retention.hours": "24", "log.retention.minutes": "30"}).resolve("t")
    assert (c.retention_ms.value, c.retention_ms.key) == (30 * 60_000, "log.retention.minutes")
    c = resolver(
        {"log.retention.hours": "24", "log.retention.minutes": "30", "log.retention.ms": "5"}
    ).resolve("t")
    assert (c.retention_ms.value, c.retention_ms.key) == (5, "log.retention.ms")
    assert "server.properties" in c.retention_ms.source
    assert resolver({"log.retention.ms": "-7"}).resolve("t").retention_ms.value == -1
    assert not resolver({"log.retention.hours": "-1"}).resolve("t").time_retention


def test_dynamic_broker_configs_replace_their_synonyms() -> None:
    # DynamicBrokerConfig.overrideProps: a dynamic log.retention.hours removes a static log.retention.ms
    m = md((BROKER, "", "log.retention.hours", "2"))
    c = resolver({"log.retention.ms": "5"}, metadata=m).resolve("t")
    assert c.retention_ms.value == 2 * HOUR and c.retention_ms.key == "log.retention.hours"
    assert "cluster-wide broker ConfigRecord" in c.retention_ms.source
    # per-broker (resource name = node id) over the cluster default; another broker's is ignored
    m = md(
        (BROKER, "", "log.retention.hours", "2"),
        (BROKER, "1", "log.retention.minutes", "3"),
        (BROKER, "2", "log.retention.ms", "9"),
    )
    c = resolver(metadata=m, node_id=1).resolve("t")
    assert c.retention_ms.value == 3 * 60_000 and "broker 1 ConfigRecord" in c.retention_ms.source
    # --retention-ms on the command line: the most specific broker value
    c = resolver(metadata=m, node_id=1, **{"log.retention.ms": "11"}).resolve("t")
    assert c.retention_ms.value == 11 and c.retention_ms.source == "command line"


def test_topic_configs_win_over_broker_defaults() -> None:
    m = md(
        (TOPIC, "orders", "retention.ms", "1000"),
        (TOPIC, "orders", "cleanup.policy", "compact,delete"),
        (BROKER, "", "log.retention.bytes", "500"),
    )
    r = resolver({"log.retention.hours": "1"}, metadata=m)
    c = r.resolve("orders")
    assert (
        c.retention_ms.value == 1000
        and c.retention_ms.source == "topic ConfigRecord in __cluster_metadata-0 offset 0"
    )
    assert c.retention_bytes.value == 500 and c.compact and c.delete
    other = r.resolve("clicks")
    assert other.retention_ms.value == HOUR and other.cleanup_policy.value == ("delete",)
    # --topic-config over the ConfigRecord
    c = resolver(metadata=m, topics={"orders": {"retention.ms": "-1"}}).resolve("orders")
    assert c.retention_ms.value == -1 and c.retention_ms.source == "--topic-config" and not c.time_retention


def test_describe_names_every_value_and_its_source() -> None:
    c = resolver({"log.retention.hours": "48"}).resolve("orders")
    text = c.describe()
    assert "retention.ms=172800000 (from log.retention.hours, --server-properties server.properties)" in text
    assert "cleanup.policy=delete (from log.cleanup.policy, Kafka default)" in text
    assert "retention.ms" not in resolver().resolve("__consumer_offsets").describe()  # compact: no time limit


def test_bad_inputs(tmp_path: Path) -> None:
    for bad in ("nocolon", "t:segment.bytes=1", "t:retention.ms=soon", "t:cleanup.policy=shred"):
        with pytest.raises(ValueError):
            parse_topic_config([bad])
    props = tmp_path / "server.properties"
    props.write_text("broker.id=1\nlog.retention.hours = 12\nlog.dirs=/data/kafka\n# log.retention.ms=1\n")
    inputs = config_inputs(server_properties=props)
    assert dict(inputs.server_properties) == {"log.retention.hours": "12"}
    props.write_text("log.retention.hours=a day\n")
    with pytest.raises(ValueError):
        config_inputs(server_properties=props)


# --- the KRaft metadata log ------------------------------------------------------------------------------

SCHEMAS = realworld.REPO_ROOT.parent / "shared" / "kafka-schemas" / "metadata"


def _schema(name: str) -> dict:
    path = SCHEMAS / f"{name}.json"
    if not path.is_file():
        pytest.skip(f"realworld: {path} is not here (../shared/kafka-schemas)")
    text = "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("//"))
    return json.loads(text)


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def encode(record: str, /, **values: object) -> bytes:
    """A metadata record value from Kafka's JSON schema: frame version 1, api key, version 0, fields in
    schema order (flexible version 0+: compact strings, an empty tagged-field section)."""
    schema = _schema(record)
    out = bytearray(_uvarint(1) + _uvarint(schema["apiKey"]) + _uvarint(0))
    for f in schema["fields"]:
        key = re.sub(r"(?<!^)(?=[A-Z])", "_", f["name"]).lower()
        v = values[key]
        if f["type"] == "int8":
            out += int(v).to_bytes(1, "big", signed=True)
        elif f["type"] == "string":
            if v is None:
                assert "nullableVersions" in f
                out += _uvarint(0)
            else:
                raw = str(v).encode()
                out += _uvarint(len(raw) + 1) + raw
        elif f["type"] == "uuid":
            out += base64.urlsafe_b64decode(str(v) + "==")
        else:
            raise AssertionError(f["type"])
    out += _uvarint(0)  # no tagged fields
    return bytes(out)


def write_metadata_log(
    log_dir: Path, records: list[bytes], *, base_offset: int = 0, name: str | None = None
) -> Path:
    folder = log_dir / "__cluster_metadata-0"
    folder.mkdir(parents=True, exist_ok=True)
    data = b"".join(
        build_record_batch(
            [RecordSpec(value, timestamp=1_700_000_000_000)],
            base_offset=base_offset + i,
            partition_leader_epoch=1,
        )
        for i, value in enumerate(records)
    )
    path = folder / (name or f"{base_offset:020d}.log")
    path.write_bytes(data)
    return path


ORDERS_ID = "AAAAAAAAAAAAAAAAAAAAAQ"


def test_generated_metadata_log_replays_configs(tmp_path: Path) -> None:
    recs = [
        encode("TopicRecord", name="orders", topic_id=ORDERS_ID),
        encode(
            "ConfigRecord", resource_type=TOPIC, resource_name="orders", name="retention.ms", value="60000"
        ),
        encode(
            "ConfigRecord",
            resource_type=TOPIC,
            resource_name="orders",
            name="cleanup.policy",
            value="compact",
        ),
        encode("ConfigRecord", resource_type=BROKER, resource_name="", name="log.retention.hours", value="5"),
        encode(
            "ConfigRecord", resource_type=TOPIC, resource_name="orders", name="cleanup.policy", value=None
        ),
        encode("ConfigRecord", resource_type=TOPIC, resource_name="gone", name="retention.ms", value="1"),
        encode("TopicRecord", name="gone", topic_id="AAAAAAAAAAAAAAAAAAAAAg"),
        encode("RemoveTopicRecord", topic_id="AAAAAAAAAAAAAAAAAAAAAg"),
    ]
    write_metadata_log(tmp_path, recs)
    events = list(metadata_config_events(tmp_path))
    assert [(e.resource_name, e.key, e.value) for e in events] == [
        ("orders", "retention.ms", "60000"),
        ("orders", "cleanup.policy", "compact"),
        ("", "log.retention.hours", "5"),
        ("orders", "cleanup.policy", None),
        ("gone", "retention.ms", "1"),
        ("gone", None, None),
    ]
    r = TopicConfigResolver.for_log_dirs([tmp_path])
    orders = r.resolve("orders")
    assert orders.retention_ms.value == 60000
    assert orders.retention_ms.source == "topic ConfigRecord in __cluster_metadata-0 offset 1"
    assert orders.cleanup_policy.value == ("delete",)  # the compact override was deleted at offset 4
    gone = r.resolve("gone")  # configs of a removed topic go with it (ConfigurationsDelta)
    assert gone.retention_ms.value == 5 * HOUR and "offset 3" in gone.retention_ms.source


def test_snapshot_then_the_log_after_it(tmp_path: Path) -> None:
    folder = tmp_path / "__cluster_metadata-0"
    snap = [
        encode("ConfigRecord", resource_type=TOPIC, resource_name="orders", name="retention.ms", value="111")
    ]
    write_metadata_log(tmp_path, snap, name="00000000000000000010-0000000001.checkpoint")
    log = [
        encode("ConfigRecord", resource_type=TOPIC, resource_name="orders", name="retention.ms", value=str(v))
        for v in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)
    ]
    write_metadata_log(tmp_path, log)  # offsets 0..11; the snapshot covers 0..9
    assert sorted(os.listdir(folder))[0].endswith(".log")
    c = TopicConfigResolver.for_log_dirs([tmp_path]).resolve("orders")
    assert c.retention_ms.value == 12 and c.retention_ms.source.endswith("offset 11")
    (folder / "00000000000000000000.log").unlink()
    c = TopicConfigResolver.for_log_dirs([tmp_path]).resolve("orders")
    assert c.retention_ms.value == 111
    assert "00000000000000000010-0000000001.checkpoint (snapshot) offset 0" in c.retention_ms.source


@pytest.mark.realworld
def test_real_kraft_metadata_logs() -> None:
    root = realworld.require()
    # n1: the ConfigRecords of __consumer_offsets are in the latest snapshot (and, older, in the log)
    c = TopicConfigResolver.for_log_dirs([root / "kraft-3.5-greenlemont-n1"]).resolve("__consumer_offsets")
    assert c.cleanup_policy.value == ("compact",)
    assert c.cleanup_policy.source == (
        "topic ConfigRecord in __cluster_metadata-0/00000000000000028869-0000000189.checkpoint (snapshot) "
        "offset 68"
    )
    # single: no snapshot, the records of the log itself
    c = TopicConfigResolver.for_log_dirs([root / "kraft-3.5-greenlemont-single"]).resolve(
        "__consumer_offsets"
    )
    assert c.cleanup_policy.source == "topic ConfigRecord in __cluster_metadata-0 offset 11"
    # 4.2: a cluster-wide broker ConfigRecord that is not a retention key changes nothing
    m = read_metadata_configs([root / "kraft-4.2-nomanazeem"])
    assert m is not None and m.get(BROKER, "") and "min.insync.replicas" in m.get(BROKER, "")
    c = TopicConfigResolver(None, m, 1).resolve("demo-topic")
    assert c.retention_ms.value == 7 * DAY and c.retention_ms.source == "Kafka default"
    assert read_metadata_configs([root / "zk-3.7-nikhildighe-b0"]) is None


# --- scan and retention apply them -------------------------------------------------------------------------

NOW_OLD = 1_700_000_000_000 + 30 * DAY  # a month after the generated records


def _kraft_dir(tmp_path: Path, policy: str | None) -> tuple[Path, Path]:
    topics = [
        TopicSpec(
            "events",
            records_per_partition=400,
            records_per_batch=4,
            segment_bytes=8 * 1024,
            topic_id=ORDERS_ID,
        )
    ]
    log_dir, fleet = generate_log_dir(
        tmp_path / "b1", topics, broker=BrokerSpec(1, kraft=True), faults=[ZeroedTimeIndex(1, "events", 0, 0)]
    )
    recs = [
        encode("TopicRecord", name="events", topic_id=ORDERS_ID),
        encode(
            "ConfigRecord",
            resource_type=BROKER,
            resource_name="",
            name="log.retention.hours",
            value=str(24 * 365 * 10),
        ),
    ]
    if policy is not None:
        recs.append(
            encode(
                "ConfigRecord",
                resource_type=TOPIC,
                resource_name="events",
                name="cleanup.policy",
                value=policy,
            )
        )
    write_metadata_log(log_dir, recs)
    tindex = fleet.replica(1, "events", 0).segments[0].path.with_suffix(".timeindex")
    return log_dir, tindex


def test_compacted_topic_never_gets_time_retention(tmp_path: Path) -> None:
    log_dir, _tindex = _kraft_dir(tmp_path, "compact")
    report = scan([log_dir], ScanOptions(Depth.DEFAULT, NOW_OLD), jobs=1)
    assert [f for f in report.findings if f.code in ("RETENTION_RISK", "RETENTION_BLOCKED")] == []
    rep = retention([log_dir], now_ms=NOW_OLD, jobs=1)
    part = next(p for p in rep.partitions if p.topic == "events")
    assert not part.deleted and rep.findings == []
    assert "ConfigRecord in __cluster_metadata-0 offset 2" in part.topic_config.cleanup_policy.source
    # even with a 1 ms retention on the command line: compact deletes nothing by time
    rep = retention([log_dir], now_ms=NOW_OLD, jobs=1, config_inputs=config_inputs(retention_ms=1))
    assert not next(p for p in rep.partitions if p.topic == "events").deleted


@pytest.mark.parametrize("policy", [None, "compact,delete"])
def test_delete_topic_retention_risk_names_its_config(tmp_path: Path, policy: str | None) -> None:
    log_dir, tindex = _kraft_dir(tmp_path, policy)
    report = scan([log_dir], ScanOptions(Depth.DEFAULT, NOW_OLD), jobs=1)
    risk = [f for f in report.findings if f.code == "RETENTION_RISK"]
    assert [f.path for f in risk] == [str(tindex)]
    msg = risk[0].message
    assert "retention.ms=315360000000" in msg  # 10 years, from the cluster-wide broker ConfigRecord
    assert "log.retention.hours, cluster-wide broker ConfigRecord in __cluster_metadata-0 offset 1" in msg
    rep = retention([log_dir], now_ms=NOW_OLD, jobs=1)
    part = next(p for p in rep.partitions if p.topic == "events")
    assert [s.reason for s in part.segments][:1] == [RETENTION_MS_BREACH] and part.segments[0].at_risk
    assert [f.path for f in rep.findings] == [str(tindex)]
    assert "cluster-wide broker ConfigRecord" in rep.findings[0].message


def test_server_properties_on_the_cli(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from logdoctor.cli import commands  # noqa: F401
    from logdoctor.cli.main import app

    log_dir, _ = generate_log_dir(tmp_path / "b0", [TopicSpec("t", records_per_partition=50)])
    props = tmp_path / "server.properties"
    props.write_text("log.retention.minutes=90\nlog.retention.hours=1\n")
    r = CliRunner().invoke(
        app,
        [
            "retention",
            "--json",
            "--jobs",
            "1",
            "--server-properties",
            str(props),
            "--now",
            str(NOW_OLD),
            str(log_dir),
        ],
    )
    assert r.exit_code in (0, 1), r.output
    part = json.loads(r.stdout)["partitions"][0]
    assert part["retention_ms"] == 90 * 60_000
    assert part["topic_config"]["retention.ms"] == {
        "value": 90 * 60_000,
        "key": "log.retention.minutes",
        "source": f"--server-properties {props}",
    }
    r = CliRunner().invoke(app, ["scan", "--server-properties", str(tmp_path / "nope"), str(log_dir)])
    assert r.exit_code == 66 and "nope" in r.output  # issue 24: a missing file is no input (66)


@pytest.mark.realworld
def test_real_zookeeper_consumer_offsets_is_compact_in_scan_and_retention(tmp_path: Path) -> None:
    src = realworld.require() / "zk-3.7-nikhildighe-b0"
    d = tmp_path / "kafka-logs"
    realworld.writable_copy(src, d)
    for root, _dirs, files in os.walk(d):
        os.chmod(root, 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)
    tindex = d / "__consumer_offsets-12" / "00000000000000000000.timeindex"
    tindex.write_bytes(bytes(tindex.stat().st_size))
    now = 1_800_000_000_000
    report = scan([d], ScanOptions(Depth.DEFAULT, now), jobs=1)
    assert "RETENTION_RISK" not in {f.code for f in report.findings}
    rep = retention([d], now_ms=now, jobs=1)
    assert rep.findings == [] and not any(
        p.deleted for p in rep.partitions if p.topic == "__consumer_offsets"
    )


def test_the_metadata_log_has_no_log_retention() -> None:
    c = resolver({"log.retention.ms": "1", "log.cleanup.policy": "delete"}).resolve("__cluster_metadata")
    assert not c.delete and not c.compact and not c.time_retention
    assert "snapshots" in c.cleanup_policy.source


def test_zeroed_time_index_of_the_metadata_log_is_no_retention_risk(tmp_path: Path) -> None:
    folder = tmp_path / "__cluster_metadata-0"
    recs = [
        encode("ConfigRecord", resource_type=BROKER, resource_name="", name="log.retention.ms", value="1")
    ]
    write_metadata_log(tmp_path, recs)
    write_metadata_log(tmp_path, recs, base_offset=1)  # a second segment: the first one is inactive
    ti = folder / "00000000000000000000.timeindex"
    ti.write_bytes(bytes(12))  # a zeroed last entry: largestTimestamp 0
    report = scan([tmp_path], ScanOptions(Depth.DEFAULT, NOW_OLD), jobs=1)
    assert [f for f in report.findings if f.code == "RETENTION_RISK"] == []


@pytest.mark.realworld
def test_census_executor_applies_the_same_configs(tmp_path: Path) -> None:
    """spark.census.scan_broker (what each census task runs) resolves topic configs like scan does."""
    from logdoctor.spark.census import BrokerInput, scan_broker

    src = realworld.require() / "zk-3.7-nikhildighe-b0"
    d = tmp_path / "kafka-logs"
    realworld.writable_copy(src, d)
    tindex = d / "__consumer_offsets-12" / "00000000000000000000.timeindex"
    tindex.write_bytes(bytes(tindex.stat().st_size))
    broker = BrokerInput("broker-0", 0, (str(d),))
    now = 1_800_000_000_000

    def codes(inputs: ConfigInputs | None) -> list[str]:
        return [f["code"] for f in scan_broker(broker, now, inputs)["findings"] if f["path"] == str(tindex)]

    assert codes(None) == ["INDEX_CORRUPT"]  # compacted: no time retention
    assert codes(config_inputs(topic_config=["__consumer_offsets:cleanup.policy=delete"])) == [
        "RETENTION_RISK"
    ]
    assert codes(config_inputs(topic_config=["__consumer_offsets:cleanup.policy=compact,delete"])) == [
        "RETENTION_RISK"
    ]
