"""One local[2] SparkSession for every Spark test (starting one costs ~15 s)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(scope="session")
def spark():
    from logdoctor.spark.session import SparkUnavailableError, get_spark

    try:
        session = get_spark("local[2]", "logdoctor-tests")
    except SparkUnavailableError as exc:  # no Java 17+: say so (CI has one)
        pytest.fail(f"spark: cannot start a local session: {exc}")
    session.conf.set("spark.sql.shuffle.partitions", "2")
    yield session
    session.stop()
