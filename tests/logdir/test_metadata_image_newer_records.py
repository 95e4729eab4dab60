"""The metadata image and the KRaft records of Kafka 4.0 to 4.3: ClearElrRecord (28),
UnregisterControllerRecord (29), RegisterBrokerRecord v4 and BrokerRegistrationChangeRecord v3.

Records are written from Kafka's JSON files (tests/kafka_schemas.py's generic writer, ../shared) and
appended to a generated broker's ``__cluster_metadata-0``. Expected states follow Kafka's replay:
ClearElrRecord clears ELR and last known ELR of every partition of its topic (every topic when the name
is empty) that has any, merged as a PartitionChangeRecord, so the partition epoch goes up
(K: metadata/src/main/java/org/apache/kafka/image/TopicsDelta.java, TopicDelta.java ``maybeClearElr``,
PartitionRegistration.java ``merge``, tag 4.2.0).
"""

from __future__ import annotations

import base64
import struct
from pathlib import Path
from typing import Any

import pytest

import kafka_schemas as ks
from logdoctor.formats.record_types import RecordSpec
from logdoctor.formats.writer import build_record_batch
from logdoctor.logdir.metadata_image import replay
from logdoctor.sample.kraft import metadata_records, write_metadata_log
from logdoctor.sample.logdir import BrokerSpec, FleetSpec, TopicSpec, generate_fleet

pytestmark = pytest.mark.skipif(not ks.available_42(), reason=ks.SKIP_REASON_42)

_METADATA = "metadata/src/main/resources/common/metadata"


def _uvarint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _spec(name: str) -> ks.Spec:
    for root in (ks.SCHEMAS_42 / _METADATA, ks.SCHEMAS_42 / "_stored-apache-kafka-trunk" / _METADATA):
        if (root / f"{name}.json").is_file():
            return ks.Spec(ks.load_path(root / f"{name}.json"))
    raise FileNotFoundError(name)


def _record(name: str, version: int, **fields: Any) -> bytes:
    """A metadata record value: frame 1, api key, version, the struct with ``fields`` over the defaults."""
    spec = _spec(name)
    value = {ks.snake(f["name"]): ks._default(f, spec, version) for f in spec.raw["fields"]
             if ks._in(version, ks.fversions(f))}
    value.update(fields)
    return _uvarint(1) + _uvarint(spec.raw["apiKey"]) + _uvarint(version) + ks.write(spec, value, version)


def _node(tmp_path: Path) -> tuple[Path, int]:
    spec = FleetSpec(
        topics=[TopicSpec("orders", partitions=2, records_per_partition=5),
                TopicSpec("audit", partitions=1, records_per_partition=5)],
        brokers=(BrokerSpec(1, kraft=True),),
        seed=3,
    )
    fleet = generate_fleet(tmp_path / "fleet", spec)
    recs = metadata_records(fleet, metadata_version=21)
    return write_metadata_log(fleet, 1, records=recs, epoch=3), len(recs)


def _append(mdir: Path, end: int, values: list[bytes]) -> None:
    log = mdir / "00000000000000000000.log"
    batch = build_record_batch([RecordSpec(v) for v in values], base_offset=end, partition_leader_epoch=3)
    log.write_bytes(log.read_bytes() + batch)


def _uuid(n: int) -> str:
    return base64.urlsafe_b64encode(bytes([n % 256]) * 16).decode().rstrip("=")


def test_clear_elr_clears_the_named_topic_and_bumps_its_partition_epochs(tmp_path: Path) -> None:
    mdir, end = _node(tmp_path)
    before = replay(mdir)
    orders, audit = before.topics["orders"], before.topics["audit"]
    elr = [_record("PartitionChangeRecord", 2, topic_id=t, partition_id=p, eligible_leader_replicas=[1],
                   last_known_elr=[1]) for t, p in ((orders, 0), (audit, 0))]
    _append(mdir, end, [*elr, _record("ClearElrRecord", 0, topic_name="orders")])
    image = replay(mdir)
    assert image.skipped == {} and image.errors == []
    o0, o1, a0 = (image.partitions[(orders, 0)], image.partitions[(orders, 1)], image.partitions[(audit, 0)])
    epochs = {k: before.partitions[k].partition_epoch for k in ((orders, 0), (orders, 1), (audit, 0))}
    assert (o0.elr, o0.last_known_elr, o0.partition_epoch) == ([], [], epochs[(orders, 0)] + 2)
    assert o0.offset == end + 2
    assert o1.partition_epoch == epochs[(orders, 1)]  # no ELR: untouched
    assert (a0.elr, a0.last_known_elr, a0.partition_epoch) == ([1], [1], epochs[(audit, 0)] + 1)
    assert image.record_types["ClearElrRecord"] == 1


def test_clear_elr_without_a_name_clears_every_topic(tmp_path: Path) -> None:
    mdir, end = _node(tmp_path)
    before = replay(mdir)
    orders, audit = before.topics["orders"], before.topics["audit"]
    elr = [_record("PartitionChangeRecord", 2, topic_id=t, partition_id=0, eligible_leader_replicas=[1])
           for t in (orders, audit)]
    _append(mdir, end, [*elr, _record("ClearElrRecord", 0, topic_name="")])
    image = replay(mdir)
    for t in (orders, audit):
        st = image.partitions[(t, 0)]
        assert (st.elr, st.partition_epoch) == ([], before.partitions[(t, 0)].partition_epoch + 2)


def test_unregister_controller(tmp_path: Path) -> None:
    mdir, end = _node(tmp_path)
    register = [_record("RegisterControllerRecord", 0, controller_id=c, incarnation_id=_uuid(c))
                for c in (3000, 3001)]
    _append(mdir, end, [*register, _record("UnregisterControllerRecord", 0, controller_id=3000)])
    image = replay(mdir)
    assert image.controllers == {3001: _uuid(3001)} and image.skipped == {}


def _record_43(name: str, version: int, **fields: Any) -> bytes:
    """A record written from Kafka 4.3's definition: the project's statement of the delta
    (tests/kafka_schemas.metadata_record_43: the definition inside the installed 4.3.1 jars)."""
    return ks.metadata_record_43(name, version, **fields)


def test_register_broker_v4_and_change_v3_of_kafka_4_3(tmp_path: Path) -> None:
    """KIP-1066: RegisterBrokerRecord v4 and BrokerRegistrationChangeRecord v3 carry CordonedLogDirs
    (nullable; null in a change = no change); the log dirs are kept, nothing is read as an older version."""
    mdir, end = _node(tmp_path)
    reg = _record_43("RegisterBrokerRecord", 4, broker_id=7, broker_epoch=55, incarnation_id=_uuid(9),
                     fenced=False, log_dirs=[_uuid(1), _uuid(2)], cordoned_log_dirs=[_uuid(2)])
    keep = _record_43("BrokerRegistrationChangeRecord", 3, broker_id=7, broker_epoch=55, log_dirs=[_uuid(3)])
    cordon = _record_43("BrokerRegistrationChangeRecord", 3, broker_id=7, broker_epoch=55,
                        cordoned_log_dirs=[_uuid(3)])
    _append(mdir, end, [reg])
    image = replay(mdir)
    assert image.skipped == {} and image.errors == [] and image.read_as_older == {}
    b = image.brokers[7]
    assert (b.log_dirs, b.cordoned_log_dirs, b.broker_epoch) == ([_uuid(1), _uuid(2)], [_uuid(2)], 55)
    _append(mdir, end + 1, [keep, cordon])
    image = replay(mdir)
    b = image.brokers[7]
    assert (b.log_dirs, b.cordoned_log_dirs) == ([_uuid(3)], [_uuid(3)])
    assert image.record_types["BrokerRegistrationChangeRecord"] == 2 and image.unread_registrations == {}


def _as_version(record: bytes, api_key: int, old: int, new: int) -> bytes:
    head = _uvarint(1) + _uvarint(api_key) + _uvarint(old)
    assert record.startswith(head)
    return _uvarint(1) + _uvarint(api_key) + _uvarint(new) + record[len(head):]


def test_a_registration_newer_than_every_definition_read_as_v4_when_exact(tmp_path: Path) -> None:
    """A v5 whose bytes v4's layout reads exactly (a tagged addition, kept raw) is read as v4."""
    mdir, end = _node(tmp_path)
    v4 = _record_43("RegisterBrokerRecord", 4, broker_id=7, broker_epoch=55, incarnation_id=_uuid(9),
                    fenced=False, log_dirs=[_uuid(1)])
    assert v4.endswith(b"\x01" + _uvarint(0) + _uvarint(17) + _uvarint(2) + bytes([1]) * 16)
    tagged = _uvarint(2) + v4[-19:] + _uvarint(5) + _uvarint(1) + b"\x2a"  # LogDirs, then tag 5: 1 byte
    v5 = _as_version(v4[:-20] + tagged, 0, 4, 5)
    _append(mdir, end, [v5])
    image = replay(mdir)
    assert image.read_as_older == {"RegisterBrokerRecord v5 as v4": 1} and image.errors == []
    assert image.brokers[7].log_dirs == [_uuid(1)] and image.unread_registrations == {}


def test_an_unreadable_newer_registration_keeps_the_brokers_last_one(tmp_path: Path) -> None:
    """A v5 that v4's layout cannot read exactly (an untagged addition) is skipped, not an error: the
    broker keeps its v4 registration and its log dirs (the JBOD and stray-replica checks' input), and
    the image names the registration it could not read."""
    mdir, end = _node(tmp_path)
    v4 = _record_43("RegisterBrokerRecord", 4, broker_id=7, broker_epoch=55, incarnation_id=_uuid(9),
                    fenced=False, log_dirs=[_uuid(1)])
    head_len = len(_uvarint(1) + _uvarint(0) + _uvarint(4))
    bad = _as_version(v4[:head_len + 4] + struct.pack(">i", 12345) + v4[head_len + 4:], 0, 4, 5)
    _append(mdir, end, [v4, bad])
    image = replay(mdir)
    assert image.errors == [] and image.skipped == {"unknown type 0, version 5": 1}
    assert image.brokers[7].log_dirs == [_uuid(1)] and image.brokers[7].broker_epoch == 55
    unread = image.unread_registrations[7]
    assert (unread.record, unread.version, unread.offset) == ("RegisterBrokerRecord", 5, end + 1)
    assert unread.path == str(mdir / "00000000000000000000.log") and set(image.unread_registrations) == {7}
    assert image.summary()["unread_registrations"] == {"7": f"RegisterBrokerRecord v5 at offset {end + 1}"}


def test_a_registered_controllers_endpoint_names_it_in_the_scans_rebuild(tmp_path: Path) -> None:
    """RegisterControllerRecord's end_points are kept (UnregisterControllerRecord drops them), and the scan's
    CONTROLLER_METADATA_LOST (issue 88 item 4) gives the lost controller by them: controller 3000 formatted
    again beside broker 1, which holds the metadata log; the plan command runs as printed."""
    import json
    import re
    import shlex

    import cli_runs

    mdir, end = _node(tmp_path)
    ends = [{"name": "CONTROLLER", "host": "ctl0.example", "port": 9093, "security_protocol": 0}]
    register = [_record("RegisterControllerRecord", 0, controller_id=c, incarnation_id=_uuid(c),
                        end_points=ends if c == 3000 else []) for c in (3000, 3001)]
    _append(mdir, end, [*register, _record("UnregisterControllerRecord", 0, controller_id=3001)])
    image = replay(mdir)
    assert image.controller_endpoints == {3000: (("CONTROLLER", "ctl0.example", 9093),)}
    broker = mdir.parent
    meta = (broker / "meta.properties").read_text()
    controller = tmp_path / "kraft-3000"
    controller.mkdir()
    (controller / "meta.properties").write_text(re.sub(r"node\.id=\d+", "node.id=3000", meta))
    scan = json.loads(cli_runs.logdoctor("scan", "--json", broker, controller).stdout)
    lost = [f for f in scan["findings"] if f["code"] == "CONTROLLER_METADATA_LOST"]
    assert [f["path"] for f in lost] == [str(controller)], scan["findings"]
    words = shlex.split(re.search(r"`(logdoctor rebuild-quorum [^`]*)`", lost[0]["fix"]).group(1))
    assert words == ["logdoctor", "rebuild-quorum", str(broker), "--controller",
                     f"3000@ctl0.example:9093={controller}-rebuilt"]
    done = cli_runs.logdoctor(*words[1:])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "controller.quorum.voters=3000@ctl0.example:9093" in done.stdout
    assert not (tmp_path / "kraft-3000-rebuilt").exists()
