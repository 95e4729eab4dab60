"""`export` and `census` on a real Spark standalone cluster (master + 2 one-core workers on 127.0.0.1).

Bounded: the cluster starts in ~10 s, each job is a small generated log dir or the demo fleet;
the whole module takes about 2-3 minutes on 2 shared cores.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import oracle
import pyarrow.parquet as pq
import pytest
from standalone import cluster_env, spark_home

import logdoctor
from logdoctor.sample.logdir import TopicSpec, generate_log_dir
from logdoctor.spark.census import run_census
from logdoctor.spark.export import run_export

pytestmark = [pytest.mark.spark, pytest.mark.slow]
NOW_MS = 1_767_225_600_000  # 2026-01-01, fixed so both census runs judge timestamps alike
JOB_TIMEOUT_S = 420


@pytest.fixture
def master(standalone_master):
    """The standalone cluster every cluster module shares (tests/spark/conftest.py)."""
    return standalone_master


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    path, _ = generate_log_dir(
        tmp_path_factory.mktemp("cluster-export") / "kafka-logs",
        [
            TopicSpec(
                "events",
                partitions=3,
                records_per_partition=900,
                records_per_batch=9,
                segment_bytes=24 * 1024,
            ),
            TopicSpec("audit", partitions=1, records_per_partition=400, records_per_batch=1),
        ],
    )
    return path


def _cli(args, env_extra=None, submit_master=None):
    if submit_master is None:
        cmd = [sys.executable, "-m", "logdoctor", *args]
    else:
        entry = os.path.join(os.path.dirname(logdoctor.__file__), "__main__.py")
        cmd = [
            os.path.join(spark_home(), "bin", "spark-submit"),
            "--master",
            submit_master,
            "--conf",
            "spark.executor.memory=512m",
            entry,
            *args,
        ]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=JOB_TIMEOUT_S, env=cluster_env(env_extra), check=False
    )
    return proc


def _digest_table(out):
    table = pq.read_table(out)
    cols = ("topic", "partition", "offset", "key", "value")
    return oracle.digest(zip(*(table.column(c).to_pylist() for c in cols), strict=True))


def _oracle(logdir):
    return oracle.digest(
        (t, p, o, k, v) for log in logdir.glob("*/*.log") for t, p, o, _, k, v in oracle.records_of(log)
    )


def test_export_on_the_cluster_goes_through_sparks_writer(spark, master, logdir, tmp_path):
    out = tmp_path / "cluster-out"
    proc = _cli(
        [
            "export",
            str(logdir),
            "--out",
            str(out),
            "--master",
            master,
            "--json",
            "--conf",
            "spark.executor.memory=512m",
        ]
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    summary = json.loads(proc.stdout)
    assert summary["writer"] == "spark" and summary["rows"] == 3100
    assert (out / "_SUCCESS").is_file() and not (out / "_temporary").exists()
    local = run_export(spark, [str(logdir)], tmp_path / "local-out", writer="arrow")
    assert local.rows == 3100
    assert _digest_table(out) == _digest_table(tmp_path / "local-out") == _oracle(logdir)


def test_arrow_writer_is_refused_on_a_cluster(master, logdir, tmp_path):
    proc = _cli(
        [
            "export",
            str(logdir),
            "--out",
            str(tmp_path / "o"),
            "--master",
            master,
            "--writer",
            "arrow",
            "--conf",
            "spark.executor.memory=512m",
        ]
    )
    assert proc.returncode == 64, proc.stderr[-3000:]
    assert "--writer spark" in proc.stdout + proc.stderr
    assert not (tmp_path / "o").exists()


def test_export_with_spark_submit(master, logdir, tmp_path):
    out = tmp_path / "submitted"
    proc = _cli(["export", str(logdir), "--out", str(out), "--json"], submit_master=master)
    assert proc.returncode == 0, proc.stderr[-4000:]
    summary = json.loads(proc.stdout[proc.stdout.index("{") :])
    assert summary["writer"] == "spark" and summary["rows"] == 3100  # the submitted master, not local[*]
    assert _digest_table(out) == _oracle(logdir)


def test_census_on_the_cluster_matches_local(spark, master, demo_fleet, tmp_path):
    demo_root = demo_fleet.root  # read only (tests/conftest.py)
    proc = _cli(
        [
            "census",
            str(demo_root),
            "--out",
            str(tmp_path / "cluster-census"),
            "--master",
            master,
            "--json",
            "--now",
            str(NOW_MS),
            "--conf",
            "spark.executor.memory=512m",
        ]
    )
    assert proc.returncode in (0, 1, 2), proc.stderr[-4000:]
    remote = json.loads(proc.stdout)
    local = json.loads(
        json.dumps(
            run_census(spark, [str(demo_root)], tmp_path / "local-census", now_ms=NOW_MS).to_json(),
            default=str,
        )
    )
    for key in ("replicas", "partitions"):
        assert remote[key] == local[key], key
    assert sorted(json.dumps(f, sort_keys=True) for f in remote["findings"]) == sorted(
        json.dumps(f, sort_keys=True) for f in local["findings"]
    )
    assert remote["findings"], "the demo fleet has planted faults"
