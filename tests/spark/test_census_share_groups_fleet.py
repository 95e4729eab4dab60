"""Issue 47: SHARE_GROUP_BEHIND_LOG_START is one rule for a broker and a fleet. A share group's state is in
one broker's ``__share_group_state`` and its partition's replicas on others: the scan of the brokers
together judges it against the log start of the replica a consumer fetches from (the newest leader epoch,
then the longest log); the census, which scans each broker alone, must give the same findings, from log
dirs and from inventories. Records written from Kafka 4.2's JSON files (tests/kafka_schemas.py).

Two brokers of one cluster: broker 1 holds ``__share_group_state-0`` (group ``late`` at start offset 5)
and a short replica of orders-0 ([0, 10)); broker 2 holds orders-0 [50, 60) (log start 50), the longer log.
By hand: 45 offsets of orders-0 were deleted before ``late`` delivered them (on broker 2's replica); a
census judging broker 1 alone saw its own replica starting at 0 and said nothing."""

from __future__ import annotations

import base64
import random
import struct
from pathlib import Path
from typing import Any

import pytest

import kafka_schemas as ks
from census_agree import census_findings, census_of_inventories, finding_keys, scan_keys
from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.formats.record_types import RecordSpec
from logdoctor.formats.writer import build_record_batch
from logdoctor.spark.census import run_census

pytestmark = [
    pytest.mark.spark,
    pytest.mark.usefixtures("small_census_confs"),
    pytest.mark.skipif(not ks.available_42(), reason=ks.SKIP_REASON_42),
]

NOW = 1_790_000_000_000
CODE = "SHARE_GROUP_BEHIND_LOG_START"
_SHARE = "share-coordinator/src/main/resources/common/message"
TOPIC_ID = base64.urlsafe_b64encode(bytes(range(16))).decode().rstrip("=")


def _snapshot(group: str, start: int, rng: random.Random) -> tuple[bytes, bytes]:
    key_spec = ks.Spec(ks.load_path(ks.SCHEMAS_42 / _SHARE / "ShareSnapshotKey.json"))
    value_spec = ks.Spec(ks.load_path(ks.SCHEMAS_42 / _SHARE / "ShareSnapshotValue.json"))
    key = struct.pack(">h", key_spec.raw["apiKey"]) + ks.write(
        key_spec, {"group_id": group, "topic_id": TOPIC_ID, "partition": 0}, 0
    )
    value: dict[str, Any] = {**ks.random_value(value_spec, 0, rng), "start_offset": start}
    return key, struct.pack(">h", 0) + ks.write(value_spec, value, 0)


def _orders(root: Path, base: int) -> None:
    orders = root / "orders-0"
    orders.mkdir()
    (orders / "partition.metadata").write_text(f"version: 0\ntopic_id: {TOPIC_ID}\n")
    data = [RecordSpec(value=b"x", timestamp=1_700_000_000_000) for _ in range(10)]
    (orders / f"{base:020d}.log").write_bytes(build_record_batch(data, base_offset=base))
    (root / "log-start-offset-checkpoint").write_text(f"0\n1\norders 0 {base}\n")


def _brokers(tmp_path: Path) -> list[str]:
    dirs = []
    for n in (1, 2):
        root = tmp_path / f"broker-{n}" / "kafka-logs"
        root.mkdir(parents=True)
        meta = f"version=0\nbroker.id={n}\ncluster.id=ShareClusterAAAAAAAAAAA\n"
        (root / "meta.properties").write_text(meta)
        dirs.append(root)
    state = dirs[0] / "__share_group_state-0"
    state.mkdir()
    key, value = _snapshot("late", 5, random.Random(3))
    specs = [RecordSpec(value=value, key=key, timestamp=1_700_000_000_000)]
    (state / "00000000000000000000.log").write_bytes(build_record_batch(specs, base_offset=0))
    _orders(dirs[0], 0)
    _orders(dirs[1], 50)
    return [str(d) for d in dirs]


def test_census_judges_share_groups_as_the_scan_of_the_brokers_together(spark, tmp_path: Path) -> None:
    dirs = _brokers(tmp_path)
    report = scan(dirs, ScanOptions(Depth.DEFAULT, NOW), jobs=1)
    found = [f for f in report.findings if f.code == CODE]
    assert [(f.path, f.details["offsets_never_delivered"]) for f in found] == [(f"{dirs[1]}/orders-0", 45)]
    scanned = scan_keys(report, [CODE])
    from_dirs = run_census(spark, dirs, tmp_path / "census", now_ms=NOW)
    assert finding_keys(census_findings(from_dirs), [CODE]) == scanned
    from_inv = census_of_inventories(spark, dirs, tmp_path, NOW)
    assert finding_keys(census_findings(from_inv), [CODE]) == scanned
