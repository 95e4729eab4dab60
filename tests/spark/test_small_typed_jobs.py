"""Small typed and CDC jobs at Spark's floor (issue 76 item 3): on ../shared/typed (1.2 MB of real
registry-framed data) with one segment given a zero-filled tail, ``export --typed`` to a table and
``export --view cdc`` run their write job and no other Spark job (the survey of the writers and the
``kafka-log-segments`` pass naming the damage are made on the driver for inputs this small), and the
skipped range they name is the one Spark's own ``kafka-log-segments`` frame names for the same bytes."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import typed_facts as tf

pytestmark = [pytest.mark.realworld, pytest.mark.spark]


@pytest.fixture(scope="module")
def damaged(tmp_path_factory) -> tuple[Path, Path, int]:
    """A copy of the typed log dir whose orders-1 first segment (not the last) has 64 zero bytes after
    its batches; (the log dir, that segment, its valid bytes)."""
    copy = tmp_path_factory.mktemp("small-typed") / "kafka-logs"
    shutil.copytree(tf.logs(), copy)
    log = copy / "orders-1" / "00000000000000000000.log"
    data = log.read_bytes()
    log.write_bytes(data + b"\x00" * 64)
    return copy, log, len(data)


def jobs_of(spark: Any, run: Any) -> tuple[Any, int]:
    import uuid

    group = f"issue-76-small-job-{uuid.uuid4().hex}"  # a group's jobs are kept after it: one per run
    sc = spark.sparkContext
    sc.setJobGroup(group, "a small job")
    try:
        result = run()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return result, len(sc.statusTracker().getJobIdsForGroup(group))


def segments_pass(spark: Any, log_dir: Path) -> list[tuple[str, int, int]]:
    """Spark's own kafka-log-segments frame over the same log dir: the damaged segments it names."""
    from logdoctor.spark.sources import register

    register(spark)
    rows = spark.read.format("kafka-log-segments").load(str(log_dir)).where("error is not null").collect()
    return sorted((r["path"], int(r["valid_bytes"]), int(r["size_bytes"])) for r in rows)


def named(result: Any) -> list[tuple[str, int, int]]:
    return sorted((s.path, s.valid_bytes, s.size_bytes) for s in result.skipped)


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_typed_table_export_runs_one_spark_job(spark, damaged, tmp_path, fmt) -> None:
    from logdoctor.spark.tables.typed_export import run_typed_table_export

    log_dir, log, valid = damaged
    result, jobs = jobs_of(
        spark,
        lambda: run_typed_table_export(
            spark, [str(log_dir)], str(tmp_path / "out"), fmt=fmt, options={"typed": "true"}
        ),
    )
    assert named(result) == segments_pass(spark, log_dir) == [(str(log), valid, valid + 64)]
    assert result.typed.undecoded == 15  # the facts' side table (tests/spark/test_typed_export.py)
    assert jobs == 1, f"{jobs} Spark jobs: the write, and a survey or segments pass this small input skips"


def test_cdc_export_runs_one_spark_job(spark, damaged, tmp_path) -> None:
    from logdoctor.spark.cdc_job import run_cdc_export

    log_dir, log, valid = damaged
    result, jobs = jobs_of(
        spark,
        lambda: run_cdc_export(
            spark, [str(log_dir)], str(tmp_path / "out"), fmt="delta", options={"view": "cdc"}
        ),
    )
    assert named(result) == [(str(log), valid, valid + 64)]
    assert result.typed.stats["dbserver1.inventory.customers"].rows_written == 117
    assert jobs == 1, f"{jobs} Spark jobs: the fold, and a survey or segments pass this small input skips"
