"""Issue 60: the census of a generated fleet big enough to take the big-fleet path (20 brokers x 400
replicas, benchmarks/bench_census.py's inventories: lagging replicas, under-replicated partitions, nearly
full disks planted) agrees with the pure-Python rules the scan's side uses (census_rules ``replica_lag``,
``partition_rows``, ``log_dir_rows``, ``fleet_findings``) run over the inventories' own rows, read here with
pyarrow: the replicas, partitions and log dirs tables row by row, and every REPLICA_LAG and
LOG_DIR_NEARLY_FULL finding."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import census_snapshot
from logdoctor.spark.census import fleet_findings, log_dir_rows, partition_rows, replica_lag, run_census
from logdoctor.spark.census_inputs import LOG_DIR_DDL, REPLICA_DDL, ddl_names

pytestmark = pytest.mark.spark

NOW = census_snapshot.NOW


def _rows(folder: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(replica rows, log dir rows) of every inventory in ``folder``, replicas with their broker's cluster."""
    replicas: list[dict[str, Any]] = []
    dirs: list[dict[str, Any]] = []
    for path in sorted(folder.glob("*.parquet")):
        rows = pq.read_table(path).to_pylist()
        cluster = next(r["cluster_id"] for r in rows if r["record"] == "log_dir") or ""
        dirs.extend({c: r.get(c) for c in ddl_names(LOG_DIR_DDL)} for r in rows if r["record"] == "log_dir")
        for r in rows:
            if r["record"] == "replica":
                replicas.append({**{c: r.get(c) for c in ddl_names(REPLICA_DDL)}, "cluster": cluster})
    return replicas, dirs


def _table(path: str) -> list[dict[str, Any]]:
    return pq.read_table(path).to_pylist()


def test_the_big_census_of_a_generated_fleet_is_the_python_rules(spark, tmp_path: Path) -> None:
    folder = census_snapshot.generated_fleet(20, 400)
    result = run_census(spark, [str(folder)], tmp_path / "out", now_ms=NOW)
    replicas, dirs = _rows(folder)
    python = replica_lag(replicas)
    assert len(python) > 7_000 and any((r["lag_offsets"] or 0) > 0 for r in python)

    got = {
        (r["broker"], r["log_dir"], r["topic"], r["partition"]): r for r in _table(result.tables["replicas"])
    }
    assert len(got) == len(python)
    for r in python:
        row = got[(r["broker"], r["log_dir"], r["topic"], r["partition"])]
        expected = {k: v for k, v in r.items() if not k.startswith("consumer_log_")}
        assert {k: row[k] for k in expected} == expected

    parts = {(p["topic"], p["partition"]): p for p in _table(result.tables["partitions"])}
    expected_parts = partition_rows(python)
    assert len(parts) == len(expected_parts)
    for p in expected_parts:
        assert {k: parts[(p["topic"], p["partition"])][k] for k in p} == p

    # log_dir_rows is a broker's (the generated brokers' log dirs have the same paths): per broker
    brokers = sorted({d["broker"] for d in dirs})
    log_dirs = [
        d
        for b in brokers
        for d in log_dir_rows([d for d in dirs if d["broker"] == b], [r for r in python if r["broker"] == b])
    ]
    got_dirs = _table(result.tables["log_dirs"])
    assert [(d["broker"], d["log_dir"], d["bytes"], d["folders"]) for d in got_dirs] == [
        (d["broker"], d["log_dir"], d["bytes"], d["folders"]) for d in log_dirs
    ]

    fleet = fleet_findings(python, log_dirs)
    assert {f["code"] for f in fleet} == {"REPLICA_LAG", "LOG_DIR_NEARLY_FULL"}
    keys = ("broker", "log_dir", "code", "severity", "path", "offset", "message", "fix", "fix_command")
    found = [
        f for f in _table(result.tables["findings"]) if f["code"] in {"REPLICA_LAG", "LOG_DIR_NEARLY_FULL"}
    ]
    assert sorted(tuple(f[k] for k in keys) for f in found) == sorted(
        tuple(f[k] for k in keys) for f in fleet
    )
