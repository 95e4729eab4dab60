"""Issue 73: ``export --view cdc --mode append`` skips an event redelivered after the run that folded it
(Kafka Connect killed after the first export: it writes again, at later offsets, every event since its last
offset commit), by source position, as the fold of the whole log skips it. The real connectors' case is in
tests/cdc_real (``test_an_append_after_an_export_amid_the_redelivery_equals_select``); here the case those
workloads do not reach: a truncate folded by the earlier run, redelivered with the events around it. The
topic is hand-made (tests/debezium_logs.py, PostgreSQL's positions), each table written out by hand from what
the database held."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_cdc_append import read, rows_of

import debezium_logs as dl
from logdoctor.spark.cdc_job import run_cdc_export

pytestmark = [pytest.mark.spark]


def export(spark, root: Path, out: Path, fmt: str, mode: str):
    return run_cdc_export(spark, [str(root)], str(out), fmt=fmt, mode=mode, options={"view": "cdc"})


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_a_redelivered_truncate_and_the_events_around_it_change_nothing(spark, tmp_path, fmt) -> None:
    root, out = tmp_path / "logs", tmp_path / "OUT"
    w = dl.TopicWriter(root)
    w.plain(dl.upsert("r", 1, "a", "n1", 10, 10), dl.upsert("r", 2, "b", "n2", 10, 10))  # the snapshot
    # streamed after the connector's last offset commit: an insert, a truncate, an insert
    streamed = [
        dl.upsert("c", 3, "c", "n3", 30, 30),
        dl.truncate(40, 40),
        dl.upsert("c", 4, "d", "n4", 50, 50),
    ]
    w.plain(*streamed)
    export(spark, root, out, fmt, "error")
    assert rows_of(read(fmt, out)) == [(4, "d", "n4")]
    # Connect killed: every event since its last commit written again, then a new one
    w.plain(*streamed)
    w.plain(dl.upsert("u", 4, "d2", dl.PLACEHOLDER, 60, 60), dl.upsert("c", 5, "e", "n5", 70, 70))
    result = export(spark, root, out, fmt, "append")
    assert rows_of(read(fmt, out)) == [(4, "d2", "n4"), (5, "e", "n5")]
    stats = result.typed.stats[dl.TOPIC]
    assert stats.events_redelivered == 3 and stats.events_folded == 2
    assert result.typed.appended[dl.TOPIC] == {"upserted": 2, "deleted": 0, "truncated": False}
