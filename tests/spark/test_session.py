"""Session building: which masters are local, --conf parsing, no loopback pinning off local[...]."""

from __future__ import annotations

import pytest

from logdoctor.cli.spark_options import parse_conf
from logdoctor.spark.session import _defaults, is_local_master


@pytest.mark.parametrize(
    ("master", "local"),
    [
        ("local", True),
        ("local[2]", True),
        ("local[*]", True),
        ("local[2,3]", True),
        (None, True),  # the default, local[*]
        ("spark://10.0.0.1:7077", False),
        ("yarn", False),
        ("k8s://https://api:6443", False),
        ("local-cluster[2,1,1024]", False),  # separate executor JVMs, as on a cluster
    ],
)
def test_is_local_master(master, local):
    assert is_local_master(master) is local


def test_parse_conf():
    assert parse_conf(["spark.a=1", "spark.b=x=y", "spark.c="]) == {
        "spark.a": "1",
        "spark.b": "x=y",
        "spark.c": "",
    }
    with pytest.raises(ValueError, match="key=value"):
        parse_conf(["spark.a"])


def test_driver_is_pinned_to_loopback_only_for_local_masters():
    local, cluster = _defaults(True), _defaults(False)
    assert local["spark.driver.host"] == local["spark.driver.bindAddress"] == "127.0.0.1"
    assert not any(k.startswith("spark.driver.") for k in cluster)


@pytest.mark.spark  # starts Spark: left out of make test-fast
def test_a_session_without_its_sql_side_builds_it_on_first_use_with_the_confs_given(tmp_path):
    """get_spark(sql=False) (export's arrow writer, issue 35) starts a SparkContext only; the first
    DataFrame builds the SparkSession on it, with the confs given (spark.sql.* included) and the sources."""
    import json
    import subprocess
    import sys

    from logdoctor.sample.logdir import TopicSpec, generate_log_dir

    log_dir, _ = generate_log_dir(
        tmp_path / "fleet", [TopicSpec("orders", partitions=2, records_per_partition=150)]
    )
    script = f"""
import json
from pyspark.sql import SparkSession
from logdoctor.spark.session import get_spark
from logdoctor.spark.sources import register
spark = get_spark("local[1]", "t", conf={{"spark.sql.shuffle.partitions": "3"}}, sql=False)
before = SparkSession.getActiveSession() is not None
jobs = spark.sparkContext.parallelize([1, 2, 3], 3).count()
register(spark)
rows = spark.read.format("kafka-log").load({str(log_dir)!r}).count()
print(json.dumps({{"before": before, "jobs": jobs, "rows": rows,
    "shuffle": spark.conf.get("spark.sql.shuffle.partitions"),
    "after": SparkSession.getActiveSession() is not None}}))
"""
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got == {"before": False, "jobs": 3, "rows": 300, "shuffle": "3", "after": True}


@pytest.mark.spark  # starts Spark: left out of make test-fast
def test_a_short_jobs_jvm_compiles_with_c1_only():
    """get_spark(short_job=True) (a small census, issue 35): the local JVM this process starts runs with
    SHORT_JOB_JAVA_OPTIONS, as the JVM itself reports its arguments; without it, it does not."""
    import json
    import os
    import subprocess
    import sys

    script = """
import json, sys
from logdoctor.spark.session import get_spark
spark = get_spark("local[1]", "t", short_job=sys.argv[1] == "short", sql=False)
args = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()
print(json.dumps(list(args)))
"""
    # what logdoctor adds, without the C1-only SPARK_SUBMIT_OPTS tests/conftest.py gives every JVM
    env = {k: v for k, v in os.environ.items() if k != "SPARK_SUBMIT_OPTS"}
    got = {}
    for kind in ("short", "long"):
        proc = subprocess.run(
            [sys.executable, "-c", script, kind],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
            env=env,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        got[kind] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "-XX:TieredStopAtLevel=1" in got["short"]
    assert not any(a.startswith("-XX:TieredStopAtLevel") for a in got["long"])
