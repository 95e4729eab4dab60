"""The report tests' Spark: one local[2] session per test module that asks for it (the demo fleet's
census is the real Spark job's, :func:`logdoctor.spark.census.run_census`).

A session that is already running (tests/spark's, when those ran first in this process) is used and
left running; one started here is stopped when its module ends. Every test that uses the session,
directly or through the ``demo`` fixture, is marked ``spark``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from pyspark.sql import SparkSession

    from logdoctor.spark.session import SparkUnavailableError, get_spark

    running = SparkSession.getActiveSession()
    try:
        session = get_spark("local[2]", "logdoctor-report-tests")
    except SparkUnavailableError as exc:  # no Java 17+: say so (CI has one)
        pytest.fail(f"spark: cannot start a local session: {exc}")
    session.conf.set("spark.sql.shuffle.partitions", "2")
    yield session
    if running is None:
        session.stop()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.path)).parents and "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)
