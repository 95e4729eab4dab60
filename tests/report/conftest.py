"""The report tests' Spark is tests/conftest.py's ``spark``, the session tests/spark use too (the
demo fleet's census is the real Spark job's, :func:`logdoctor.spark.census.run_census`). Every test
that uses the session, directly or through the ``demo`` fixture, is marked ``spark``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.path)).parents and "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)
