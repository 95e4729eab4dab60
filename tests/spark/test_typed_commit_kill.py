"""Issue 75 item 0: ``export --typed --format delta|iceberg`` commits one table per topic and ``_undecoded``;
a real ``logdoctor export`` process is SIGKILLed at each commit point (the test seam PAUSE_ENV holds it
before or after one table's commit), then the rerun a user makes (``--mode append``) runs. Every record of
../shared/typed's ``mixed`` and ``clicks`` (mixed has 15 undecodable records) must then be in its topic's
table or in ``_undecoded``, once, with the facts' values and reasons (facts/records.jsonl, decoded by
independent decoders); each table is read by its format's own library."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from test_tables_commit import _run_until
from test_typed_export import SIDE, check_topic_table

import typed_facts as tf
from logdoctor.spark.tables import PAUSE_ENV
from logdoctor.spark.tables.typed_export import run_typed_table_export

pytestmark = [pytest.mark.realworld, pytest.mark.spark]

TOPICS = ("mixed", "clicks")
# the commit points: before the first commit (_undecoded's, commit_order), after it, after each topic's:
# each leaves another set of committed tables (none, _undecoded, _undecoded + mixed, all three)
POINTS = [("before", SIDE), ("after", SIDE), *(("after", t) for t in TOPICS)]
# Every point with Iceberg; with Delta the one whose rerun takes every format-specific step (the rest of
# the protocol, commit_order, merged_offsets, the _undecoded rows kept above what it holds, is the same
# code for both formats: run_typed_table_export): after mixed's commit, the rerun reads the offsets
# property of an existing _undecoded and an existing topic table, appends to both, and creates clicks's
# table in --mode append. The Delta table's own commit under a SIGKILL (before, during, after it):
# test_tables_commit.py's kill tests.
CASES = [
    *(pytest.param("iceberg", s, t, id=f"{s}-{t}-iceberg") for s, t in POINTS),
    pytest.param("delta", "after", "mixed", id="after-mixed-delta"),
]


def _read(fmt: str, out: Path, name: str) -> pa.Table | None:
    if fmt == "delta":
        from deltalake import DeltaTable, QueryBuilder
        from deltalake.exceptions import TableNotFoundError

        try:
            table = DeltaTable(str(out / name))
        except TableNotFoundError:
            return None
        return pa.table(QueryBuilder().register("t", table).execute("SELECT * FROM t").read_all())
    from pyiceberg.catalog import load_catalog
    from pyiceberg.exceptions import NoSuchTableError

    from logdoctor.spark.tables.iceberg import catalog_properties
    from logdoctor.spark.tables.typed_export import table_identifier

    catalog = load_catalog("logdoctor", **catalog_properties(str(out), None))
    try:
        return catalog.load_table(table_identifier(None, name)).scan().to_arrow()
    except NoSuchTableError:
        return None


def _killed_export(out: Path, fmt: str, stage: str, table: str) -> list[str]:
    """A real ``logdoctor export --typed`` SIGKILLed while paused ``stage`` the commit of ``table``."""
    args = [sys.executable, "-m", "logdoctor", "export", str(tf.logs()), "--out", str(out), "--typed",
            "--format", fmt, "--topics", ",".join(TOPICS), "--master", "local[1]"]  # fmt: skip
    env = {**os.environ, PAUSE_ENV: f"{stage}@{table}:600", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        seen = _run_until(proc, f"pausing {stage} the commit of {table}", timeout=600)
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=60) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return seen


@pytest.mark.parametrize(("fmt", "stage", "table"), CASES)
def test_every_record_is_in_a_table_after_a_kill_and_the_rerun(spark, tmp_path, fmt, stage, table):
    out = tmp_path / "OUT"
    _killed_export(out, fmt, stage, table)
    # what the killed run left: each table whole or not there (never a table the reader cannot open)
    before = {n: _read(fmt, out, n) for n in (*TOPICS, SIDE)}
    if stage == "before":
        assert all(t is None for t in before.values()), before
    else:
        assert before[table] is not None
    result = run_typed_table_export(
        spark, [str(tf.logs())], str(out), fmt=fmt, mode="append",
        options={"typed": "true", "topics": ",".join(TOPICS)},
    )  # fmt: skip
    side_rows = _read(fmt, out, SIDE)
    assert side_rows is not None, "no _undecoded table: mixed's undecodable records are lost"
    side = {(r["topic"], r["partition"], r["offset"]): r for r in side_rows.to_pylist()}
    assert len(side) == side_rows.num_rows, "an undecodable record twice in _undecoded"
    assert sum(1 for k in side if k[0] == "mixed") == 15
    for topic in TOPICS:
        rows = _read(fmt, out, topic)
        assert rows is not None
        assert (
            len({(r["kafka"]["partition"], r["kafka"]["offset"]) for r in rows.to_pylist()}) == rows.num_rows
        )
        check_topic_table(topic, rows, side, committed=True)
    assert not side, f"_undecoded rows the facts do not have: {sorted(side)[:5]}"
    if stage == "after" and table == SIDE:  # the rerun read each topic whole and kept no undecodable row
        assert sum(result.typed.to_json()["topics"]["mixed"]["undecoded"].values()) == 15
