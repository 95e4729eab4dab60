"""METADATA_RECORD_UNREAD: a broker registration newer than every known definition that no known layout reads.

A generated KRaft broker (two log dirs, ids A and B) with its ``__cluster_metadata-0``; appended to its
log: a RegisterBrokerRecord v4 written from Kafka 4.3's definition (tests/kafka_schemas.py) registering A
and B, then a "v5" with an untagged int32 added after BrokerId and other log dirs, which v4's layout cannot
read to its last byte. The scan names the record (file, offset, type, version, the versions and releases
whose definitions are known, taken here from ../shared's JSON files) and keeps the v4 registration: the
JBOD check that compares the dirs' ids with the registered ones (DIRECTORY_ID_DUPLICATE's fix) still
proposes B. The fix's dump command is run as printed and shows the record's bytes.
"""

from __future__ import annotations

import base64
import json
import re
import shlex
import struct
from pathlib import Path

import pytest
from typer.testing import CliRunner

import kafka_schemas as ks
from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.cli.commands import app
from logdoctor.formats.record_types import RecordSpec
from logdoctor.formats.writer import build_record_batch
from logdoctor.sample.kraft import SharedDirectoryId, directory_id_of, metadata_records, write_metadata_log
from logdoctor.sample.logdir import BrokerSpec, FleetSpec, TopicSpec, generate_fleet

pytestmark = pytest.mark.skipif(not ks.available_42(), reason=ks.SKIP_REASON_42)

_HEAD_V4 = bytes([1, 0, 4])  # frame version 1, api key 0 (RegisterBrokerRecord), version 4 (uvarints)


def _uuid(n: int) -> str:
    return base64.urlsafe_b64encode(bytes([n]) * 16).decode().rstrip("=")


def _unreadable_v5(log_dirs: list[str]) -> bytes:
    """A RegisterBrokerRecord "v5" of broker 1: v4's bytes with an untagged int32 after BrokerId."""
    v4 = ks.metadata_record_43("RegisterBrokerRecord", 4, broker_id=1, broker_epoch=99,
                               incarnation_id=_uuid(8), fenced=False, log_dirs=log_dirs)
    assert v4.startswith(_HEAD_V4)
    body = v4[len(_HEAD_V4):]
    return bytes([1, 0, 5]) + body[:4] + struct.pack(">i", 12345) + body[4:]


@pytest.fixture()
def broker(tmp_path: Path):
    spec = FleetSpec(
        topics=[TopicSpec("orders", partitions=4, records_per_partition=20)],
        brokers=(BrokerSpec(1, kraft=True, log_dirs=2),),
        seed=11,
    )
    fleet = generate_fleet(tmp_path / "fleet", spec)
    recs = metadata_records(fleet, metadata_version=21)
    mdir = write_metadata_log(fleet, 1, records=recs)
    ids = [directory_id_of(d) for d in fleet.log_dirs[1]]
    v4 = ks.metadata_record_43("RegisterBrokerRecord", 4, broker_id=1, broker_epoch=55,
                               incarnation_id=_uuid(9), fenced=False, log_dirs=ids)
    log = mdir / "00000000000000000000.log"
    batch = build_record_batch([RecordSpec(v4), RecordSpec(_unreadable_v5([_uuid(3)]))],
                               base_offset=len(recs), partition_leader_epoch=1)
    log.write_bytes(log.read_bytes() + batch)
    return fleet, log, len(recs) + 1, ids


def _known() -> tuple[str, set[str]]:
    """RegisterBrokerRecord's versions and releases, from the JSON files of ../shared (and 4.3's delta)."""
    files = [p for p in ks.every_spec_file() if ks.load_path(p)["name"] == "RegisterBrokerRecord"]
    highest = max(ks.versions(ks.load_path(p)["validVersions"])[1] for p in files)
    return f"0-{highest}", {ks.release_of(p) for p in files}


def test_scan_names_the_unread_registration_and_keeps_the_v4_log_dirs(broker) -> None:
    fleet, log, offset, (a, b) = broker
    SharedDirectoryId(1, log_dir_index=1).apply(fleet)  # the second dir now carries A too
    report = scan([str(d) for d in fleet.log_dirs[1]], ScanOptions(Depth.QUICK), jobs=1)
    unread = [f for f in report.findings if f.code == "METADATA_RECORD_UNREAD"]
    assert len(unread) == 1
    f = unread[0]
    versions, releases = _known()
    assert (f.severity.label, f.path, f.offset) == ("warning", str(log), offset)
    assert f"the RegisterBrokerRecord v5 at offset {offset} (broker 1)" in f.message
    assert f"RegisterBrokerRecord versions {versions}, from Kafka " in f.message
    assert versions == "0-4" and all(r in f.details["known_in"] for r in releases)
    assert f"registration (metadata offset {offset - 1}, log dirs {a}, {b})" in f.message
    assert f.details["kept_log_dirs"] == [a, b]
    assert f"`logdoctor dump {log} --print-data --offsets {offset}`" in f.fix
    # the JBOD check used the kept v4 registration: B is registered and no dir carries it any more
    dup = [x for x in report.findings if x.code == "DIRECTORY_ID_DUPLICATE"]
    assert [x.path for x in dup] == [str(fleet.log_dirs[1][1] / "meta.properties")]
    # (its "assigned-id" or "registered-id" case: either needs B among the registered ids no dir carries;
    # with v5's log dirs it would propose the other id, with no registration none)
    assert f"directory.id={b}`" in dup[0].fix and "broker 1 registered" in dup[0].fix
    assert report.metadata is not None and report.metadata.brokers[1].log_dirs == [a, b]


def test_no_earlier_registration(tmp_path: Path) -> None:
    spec = FleetSpec(topics=[TopicSpec("orders", partitions=1, records_per_partition=5)],
                     brokers=(BrokerSpec(1, kraft=True),), seed=2)
    fleet = generate_fleet(tmp_path / "fleet", spec)
    recs = [r for r in metadata_records(fleet, metadata_version=21) if r["type"] != "RegisterBrokerRecord"]
    mdir = write_metadata_log(fleet, 1, records=recs)
    log = mdir / "00000000000000000000.log"
    batch = build_record_batch([RecordSpec(_unreadable_v5([_uuid(3)]))], base_offset=len(recs))
    log.write_bytes(log.read_bytes() + batch)
    report = scan([str(d) for d in fleet.log_dirs[1]], ScanOptions(Depth.QUICK), jobs=1)
    [f] = [f for f in report.findings if f.code == "METADATA_RECORD_UNREAD"]
    assert f.offset == len(recs) and "Broker 1 has no earlier registration in this metadata log" in f.message
    assert f.details["kept_log_dirs"] is None


def test_the_fixs_dump_command_shows_the_record(broker) -> None:
    fleet, log, offset, _ids = broker
    report = scan([str(d) for d in fleet.log_dirs[1]], ScanOptions(Depth.QUICK), jobs=1)
    [f] = [f for f in report.findings if f.code == "METADATA_RECORD_UNREAD"]
    [command] = re.findall(r"`(logdoctor [^`]*)`", f.fix)
    args = shlex.split(command)[1:]
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    records = [r for r in map(json.loads, result.output.splitlines()) if r["type"] == "record"]
    assert [(r["file"], r["offset"]) for r in records] == [(str(log), offset)]
    raw = base64.b64decode(records[0]["value"])
    assert raw == _unreadable_v5([_uuid(3)])
    assert records[0]["decoded"]["unknown"] is True and records[0]["decoded"]["version"] == 5
