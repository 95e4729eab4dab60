"""The census of a tiered partition's replicas (KIP-405): two brokers' log dirs of ../shared/tiered (Kafka's
LocalTieredStorage broker: payments-1 local from 2289; Aiven's plugin: local from 1962; both keep log start
0 in log-start-offset-checkpoint, its README.md). The log start offsets agree (the partition's, 0), the
local log starts differ, and the Spark SQL tables agree with the Python rules (census_rules)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

import realworld
from logdoctor.checks.context import Depth
from logdoctor.checks.inventory import build_inventory, write_inventory
from logdoctor.spark.census import partition_rows, replica_lag, run_census

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("small_census_confs")]

NOW = 1_710_000_000_000 + 30 * 24 * 3_600_000


def _broker(variant: str, dst: Path, broker_id: int) -> Path:
    d = realworld.writable_copy(realworld.require_tiered() / variant / "kafka-logs", dst)
    meta = f"version=0\nbroker.id={broker_id}\ncluster.id=dGllcmVkLWNsdXN0ZXIwMQ\n"
    (d / "meta.properties").write_text(meta)
    return d


def test_census_compares_log_starts_and_local_log_starts_of_tiered_replicas(spark, tmp_path):
    dirs = [
        _broker("kafka-local", tmp_path / "b1" / "kafka-logs", 1),
        _broker("aiven/plain", tmp_path / "b2" / "kafka-logs", 2),
    ]
    inv_dir = tmp_path / "inventories"
    inv_dir.mkdir()
    rows = []
    for d in dirs:
        inv = build_inventory([str(d)], Depth.DEFAULT, now_ms=NOW)
        write_inventory(inv, str(inv_dir / f"{inv.broker}.parquet"))
        # the census keys an inventory's rows by its broker's cluster (census_inputs, since the clusters
        # branch): the Python rules below get the same key
        cluster = next(r["cluster_id"] for r in inv.rows if r.get("record") == "broker") or ""
        rows.extend(dict(r, cluster=cluster) for r in inv.rows if r.get("record") == "replica")
    run_census(spark, [str(inv_dir)], tmp_path / "census", now_ms=NOW)
    table = pq.read_table(tmp_path / "census" / "partitions").to_pylist()
    parts = {(p["topic"], p["partition"]): p for p in table}
    p1 = parts[("payments", 1)]
    assert (p1["min_log_start_offset"], p1["max_log_start_offset"]) == (0, 0)
    assert (p1["min_local_log_start_offset"], p1["max_local_log_start_offset"]) == (1962, 2289)
    assert p1["tiered_replicas"] == 2 and p1["max_lag_offsets"] == 0
    p0 = parts[("payments", 0)]
    assert (p0["min_local_log_start_offset"], p0["max_local_log_start_offset"], p0["tiered_replicas"]) == (
        1296,
        1296,
        2,
    )
    assert parts[("audit", 0)]["tiered_replicas"] == 0
    replicas = pq.read_table(tmp_path / "census" / "replicas").to_pylist()
    r = next(
        r for r in replicas if (r["broker"], r["topic"], r["partition"]) == ("broker-2", "payments", 1)
    )
    got = (r["log_start_offset"], r["local_log_start_offset"], r["remote_storage_enabled"])
    assert got == (0, 1962, True)
    # the Python rules give the same partition rows
    python = partition_rows(replica_lag([dict(r, kind=r.get("kind", "log")) for r in rows]))
    for p in python:
        got = parts[(p["topic"], p["partition"])]
        assert {k: got[k] for k in p} == p
