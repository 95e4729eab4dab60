"""Issue 60: the census engine's changes leave its six tables and every finding as they were. The "before"
is the census of each fixture (tests/census_snapshot.py) made by the code before a change, in its own
checkout and interpreter:

    PYTHONPATH=tests OLD_CHECKOUT/.venv/bin/python tests/census_snapshot.py /tmp/census-before

and LOGDOCTOR_CENSUS_BEFORE=/tmp/census-before names it to this test, which makes the same census with this
checkout's code, on the same inputs, and compares every row of every table. Without it the test skips."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import census_snapshot

pytestmark = pytest.mark.spark

BEFORE = os.environ.get("LOGDOCTOR_CENSUS_BEFORE")
NAMES = ("demo", "forensics", "forensics-inventories", *census_snapshot.REALWORLD_SETS, "fleet-20x400")


@pytest.mark.parametrize("name", NAMES)
def test_the_census_tables_are_as_before(spark, tmp_path: Path, name: str) -> None:
    if BEFORE is None:
        pytest.skip("LOGDOCTOR_CENSUS_BEFORE names no census made by the code before the change")
    before_file = Path(BEFORE) / f"{name}.json"
    if not before_file.is_file():
        pytest.skip(f"{before_file}: no census of {name} before the change")
    before = json.loads(before_file.read_text())
    args = census_snapshot.fixtures(only=name)[name]
    after = census_snapshot.snapshot(spark, name, args, tmp_path)
    for table in census_snapshot.TABLES:
        assert after[table] == before[table], table
