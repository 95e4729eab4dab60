"""`export --format iceberg|delta` of every real log dir (../shared/realworld): the table, read with the
format's own reader, holds exactly the records kafka-python finds."""

from __future__ import annotations

import oracle
import pytest
import tables_util as tu

import realworld
from logdoctor.spark.tables.export import run_table_export

pytestmark = [pytest.mark.spark, pytest.mark.realworld, pytest.mark.slow]


@pytest.mark.parametrize("fmt", tu.FORMATS)
def test_real_log_dirs_into_a_table_match_kafka_python(spark, realworld_dir, tmp_path, fmt):
    expected = oracle.digest(
        (t, p, o, k, v)
        for log in realworld.files(suffix=".log")
        for t, p, o, _ts, k, v in oracle.records_of(log)
    )
    assert expected[0] > 100_000  # the whole realworld set, not a subset
    out = str(tmp_path / "table")
    # every record: the internal topics too (left out by default, as Kafka's consumers do)
    result = run_table_export(spark, [str(realworld_dir)], out, fmt=fmt, options={"includeInternal": "true"})
    assert result.rows == expected[0]
    assert tu.digest(tu.read_table(fmt, out)) == expected
    assert all(tu.files_sorted(f) for f in tu.data_files(fmt, out))
