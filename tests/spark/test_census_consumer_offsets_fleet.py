"""Issue 47: CONSUMER_OFFSET_OUT_OF_RANGE is one rule for a broker and a fleet. A group's commit is in one
broker's ``__consumer_offsets`` and its partition's replicas on others; the scan of the brokers together
judges it against the replica a consumer would fetch from (the newest leader epoch, then the longest log)
and takes the commits of the ``__consumer_offsets`` replica chosen the same way. The census, which scans
each broker alone on the executors, must give the same findings (code, path, offset, message, fix) and a
consumer-group table that agrees with them, from log dirs and from inventories.

Data: ../shared/forensics (written by Kafka's classes: wallet-0 diverged, broker-3 the leader in epoch 2
with [0, 1200), broker-1 [0, 1050), broker-2 [0, 920); billing-0 [0, 882) on broker-1 only; stable-0
[0, 600) on all three) with ``__consumer_offsets-0`` replicas written from Kafka's JSON schemas
(tests/consumer_offsets_oracle.py). What each commit is, worked out by hand from those facts:

- ``at-leader-end`` wallet-0 @ 1200 (in broker-1's log): in range of the leader's replica, beyond broker-1's
  own [0, 1050]: a census judging each broker alone called it out of range;
- ``beyond`` wallet-0 @ 1300: beyond every replica: one finding, on broker-3's wallet-0;
- ``elsewhere`` billing-0 @ 5000 (its commit on broker-1, written to broker-2's replica too): beyond
  [0, 882];
- ``rewound`` stable-0: 9999 in the first batch (both replicas), 600 in the second (broker-1's only, the
  longer log the consumer's coordinator loads): in range.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

import kafka_schemas as ks
from census_agree import census_findings, census_of_inventories, finding_keys, forensics_copies, scan_keys
from consumer_offsets_oracle import batch, offset_commit_record
from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.spark.census import run_census

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("small_census_confs")]

NOW = 1_790_000_000_000
CODE = "CONSUMER_OFFSET_OUT_OF_RANGE"


def _brokers(tmp_path: Path) -> list[str]:
    ks.require()
    dirs = forensics_copies(tmp_path)
    first = [
        offset_commit_record("at-leader-end", "wallet", 0, 1200),
        offset_commit_record("beyond", "wallet", 0, 1300),
        offset_commit_record("elsewhere", "billing", 0, 5000),
        offset_commit_record("rewound", "stable", 0, 9999),
    ]
    second = [offset_commit_record("rewound", "stable", 0, 600)]
    for d, batches in ((dirs[0], [batch(0, first), batch(4, second)]), (dirs[1], [batch(0, first)])):
        folder = d / "__consumer_offsets-0"
        folder.mkdir()
        (folder / "00000000000000000000.log").write_bytes(b"".join(batches))
    return [str(d) for d in dirs]


def test_census_judges_commits_as_the_scan_of_the_brokers_together(spark, tmp_path: Path) -> None:
    dirs = _brokers(tmp_path)
    report = scan(dirs, ScanOptions(Depth.DEFAULT, NOW), jobs=1)
    scanned = scan_keys(report, [CODE])
    # the facts above, independently of both: two commits out of range, on the replica a consumer fetches
    wallet3 = str(Path(dirs[2]) / "wallet-0")
    billing1 = str(Path(dirs[0]) / "billing-0")
    assert sorted((k[1], k[2]) for k in scanned) == sorted([(wallet3, 1300), (billing1, 5000)])
    from_dirs = run_census(spark, dirs, tmp_path / "census", now_ms=NOW)
    assert finding_keys(census_findings(from_dirs), [CODE]) == scanned
    groups = {
        r["group"]: r for r in pq.read_table(from_dirs.tables["consumer_groups"]).to_pylist()
    }
    assert {g: (r["log_start_offset"], r["log_end_offset"], r["out_of_range"], r["lag_records"])
            for g, r in groups.items()} == {
        "at-leader-end": (0, 1200, False, 0),
        "beyond": (0, 1200, True, None),
        "elsewhere": (0, 882, True, None),
        "rewound": (0, 600, False, 0),
    }  # fmt: skip
    assert groups["rewound"]["committed_offset"] == 600 and groups["rewound"]["broker"] == "broker-11"
    # the same from each broker's inventory
    from_inv = census_of_inventories(spark, dirs, tmp_path, NOW)
    assert finding_keys(census_findings(from_inv), [CODE]) == scanned
    inv_groups = pq.read_table(from_inv.tables["consumer_groups"]).to_pylist()
    expected = {g: r["out_of_range"] for g, r in groups.items()}
    assert {r["group"]: r["out_of_range"] for r in inv_groups} == expected
