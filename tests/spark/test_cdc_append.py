"""``export --view cdc --format iceberg|delta --mode append`` (issue 56, item 4): only the events above the
table's offsets are folded, from the table's rows, and committed as upserts and deletes in one commit; a
run with no newer event commits nothing; a driver killed at the commit leaves the previous table or the new
one whole. The topics are hand-made (tests/debezium_logs.py); the oracle is each step's table written out
by hand from Debezium's rules."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import debezium_logs as dl
from logdoctor.spark.cdc_job import run_cdc_export
from logdoctor.spark.tables import PAUSE_ENV

pytestmark = [pytest.mark.spark]
FORMATS = ["iceberg", "delta"]


def read(fmt: str, out: Path) -> pa.Table:
    if fmt == "delta":
        from deltalake import DeltaTable

        return DeltaTable(str(out / dl.TOPIC)).to_pyarrow_table()
    from pyiceberg.catalog import load_catalog

    from logdoctor.spark.tables.iceberg import catalog_properties
    from logdoctor.spark.tables.typed_export import table_identifier

    catalog = load_catalog("logdoctor", **catalog_properties(str(out), None))
    return catalog.load_table(table_identifier(None, dl.TOPIC)).scan().to_arrow()


def version(fmt: str, out: Path) -> object:
    """The table's current Delta version, or the Iceberg metadata file the catalog points at."""
    if fmt == "delta":
        from deltalake import DeltaTable

        return DeltaTable(str(out / dl.TOPIC)).version()
    from pyiceberg.catalog import load_catalog

    from logdoctor.spark.tables.iceberg import catalog_properties
    from logdoctor.spark.tables.typed_export import table_identifier

    catalog = load_catalog("logdoctor", **catalog_properties(str(out), None))
    return catalog.load_table(table_identifier(None, dl.TOPIC)).metadata_location


def rows_of(table: pa.Table) -> list[tuple]:
    return sorted(zip(*(table.column(c).to_pylist() for c in ("id", "name", "note")), strict=True))


def provenance(table: pa.Table) -> dict[int, int]:
    """{id: the offset of the event that wrote the row}."""
    return dict(
        zip(
            table.column("id").to_pylist(),
            table.column("kafka").combine_chunks().field("offset").to_pylist(),
            strict=True,
        )
    )


def export(spark, root: Path, out: Path, fmt: str, mode: str):
    return run_cdc_export(spark, [str(root)], str(out), fmt=fmt, mode=mode, options={"view": "cdc"})


def first_events(w: dl.TopicWriter) -> None:
    w.plain(*(dl.upsert("r", i, n, f"n{i}", 10 * i, i) for i, n in ((1, "a"), (2, "b"), (3, "c"), (4, "d"))))


FIRST = [(1, "a", "n1"), (2, "b", "n2"), (3, "c", "n3"), (4, "d", "n4")]


@pytest.mark.parametrize("fmt", FORMATS)
def test_append_applies_only_the_newer_events(spark, tmp_path, fmt) -> None:
    root, out = tmp_path / "logs", tmp_path / "OUT"
    w = dl.TopicWriter(root)
    first_events(w)  # offsets 0-3
    export(spark, root, out, fmt, "error")
    assert rows_of(read(fmt, out)) == FIRST
    before = version(fmt, out)

    # an update whose placeholder's earlier value is only in the table, a delete and its tombstone, an
    # update, an insert
    w.plain(dl.upsert("u", 1, "a2", dl.PLACEHOLDER, 50, 5))  # 4
    w.plain(dl.delete(2, 60, 6), dl.tombstone(2))  # 5, 6
    w.plain(dl.upsert("u", 3, "c2", "n3b", 70, 7), dl.upsert("c", 5, "e", "n5", 80, 8))  # 7, 8
    result = export(spark, root, out, fmt, "append")
    table = read(fmt, out)
    assert rows_of(table) == [(1, "a2", "n1"), (3, "c2", "n3b"), (4, "d", "n4"), (5, "e", "n5")]
    # row 4 was not rewritten: it keeps the event of the first run
    assert provenance(table) == {1: 4, 3: 7, 4: 3, 5: 8}
    stats = result.typed.stats[dl.TOPIC]
    assert stats.events_folded == 5  # the newer events only
    assert stats.placeholder_cells_resolved == 1 and stats.placeholder_cells_null == 0
    assert result.typed.appended[dl.TOPIC] == {"upserted": 3, "deleted": 1, "truncated": False}
    after = version(fmt, out)
    assert after != before
    if fmt == "delta":
        assert after == before + 1  # one commit

    # nothing newer: no commit
    again = export(spark, root, out, fmt, "append")
    assert again.typed.unchanged == [dl.TOPIC]
    assert version(fmt, out) == after
    assert rows_of(read(fmt, out)) == [(1, "a2", "n1"), (3, "c2", "n3b"), (4, "d", "n4"), (5, "e", "n5")]

    # a truncate among the newer events empties the table in the same commit; a placeholder after it has
    # no earlier value (the table's is gone with the truncate)
    w.plain(dl.truncate(90, 9), dl.upsert("c", 6, "f", "n6", 100, 10))  # 9, 10
    w.plain(dl.upsert("u", 4, "d2", dl.PLACEHOLDER, 110, 11))  # 11
    result = export(spark, root, out, fmt, "append")
    assert rows_of(read(fmt, out)) == [(4, "d2", None), (6, "f", "n6")]
    assert result.typed.appended[dl.TOPIC]["truncated"] is True
    assert result.typed.stats[dl.TOPIC].placeholder_cells_null == 1
    if fmt == "delta":
        assert version(fmt, out) == after + 1


def _killed_append(root: Path, out: Path, fmt: str, pause: str, delay: float) -> int | None:
    """A CLI append whose driver is SIGKILLed ``delay`` s after it pauses at the test seam ``pause``."""
    env = {**os.environ, PAUSE_ENV: pause, "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.Popen(
        [sys.executable, "-m", "logdoctor", "export", str(root), "--out", str(out), "--format", fmt,
         "--mode", "append", "--view", "cdc", "--master", "local[2]"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
    )  # fmt: skip
    marker = f"pausing {pause.split(':')[0]} the commit"
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if marker in line:
                break
        else:
            raise AssertionError(f"the driver ended without pausing (exit {proc.wait()})")
        if delay:
            import time

            time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("stage", ["before", "during"])
def test_a_kill_9_during_the_append_leaves_the_old_table_or_the_new_whole(
    spark, tmp_path, fmt, stage
) -> None:
    root, out = tmp_path / "logs", tmp_path / "OUT"
    w = dl.TopicWriter(root)
    first_events(w)
    export(spark, root, out, fmt, "error")
    w.plain(dl.upsert("u", 1, "a2", dl.PLACEHOLDER, 50, 5), dl.delete(2, 60, 6), dl.truncate(70, 7))
    w.plain(dl.upsert("c", 7, "g", "n7", 80, 8))
    new = [(7, "g", "n7")]
    pause, delay = {"before": ("before:600", 0.0), "during": ("before:0", 0.05)}[stage]
    assert _killed_append(root, out, fmt, pause, delay) == -signal.SIGKILL
    got = rows_of(read(fmt, out))
    if stage == "before":
        assert got == FIRST
    else:
        assert got in (FIRST, new)
    # the next append completes it
    export(spark, root, out, fmt, "append")
    assert rows_of(read(fmt, out)) == new
