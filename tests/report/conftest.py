"""The report tests' Spark is tests/conftest.py's ``spark``, the session tests/spark use too (the
demo fleet's census is the real Spark job's, :func:`logdoctor.spark.census.run_census`). Every test
that uses the session, directly or through the ``demo`` fixture, is marked ``spark``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from report_demo import DemoFleet, build_demo_fleet

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.path)).parents and "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def demo(demo_fleet, spark) -> DemoFleet:
    """The demo fleet (tests/conftest.py's ``demo_fleet``) and its census (report_demo.py), built once per
    pytest process (per worker in a parallel run) for every report module that reads them: a Spark census
    job. Read only: a test that changes the fleet's files works on a copy of them."""
    return build_demo_fleet(demo_fleet.root, spark, demo_fleet)
