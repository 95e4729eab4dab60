"""`export --format iceberg|delta` on a real Spark standalone cluster (master + 2 one-core workers on
127.0.0.1): the pyarrow tasks run on the workers, the driver commits once; read back with the format's
reader and compared with kafka-python."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import tables_util as tu
from standalone import cluster_env

from logdoctor.sample.logdir import TopicSpec, generate_log_dir

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture
def master(standalone_master):
    """The standalone cluster every cluster module shares (tests/spark/conftest.py)."""
    return standalone_master


# One format: what the cluster changes is where the tasks run (tables/files.py write_task, the same for
# Iceberg and Delta: the executors write the data files under the table's data folder, the driver gets
# their list) and that the driver's commit takes files it did not write; the commit is the format's own,
# as locally. Delta's commit of the same tasks' files: test_tables_commit.py and test_tables.py (local[2]).
@pytest.mark.parametrize("fmt", ["iceberg"])
def test_table_export_on_the_cluster(master, tmp_path, fmt):
    logdir, _ = generate_log_dir(
        tmp_path / "kafka-logs",
        [
            TopicSpec(
                "events", partitions=3, records_per_partition=500, records_per_batch=5, segment_bytes=16384
            )
        ],
    )
    out = str(tmp_path / "table")
    args = ["export", str(logdir), "--out", out, "--format", fmt, "--master", master, "--json",
            "--conf", "spark.executor.memory=512m"]  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "logdoctor", *args], capture_output=True, text=True, timeout=420,
        env=cluster_env(), check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    summary = json.loads(proc.stdout)
    assert summary["rows"] == 1500 and summary["writer"] == "arrow"
    assert tu.digest(tu.read_table(fmt, out)) == tu.expected(logdir)[0]
