"""Issue 57, item 5: the Iceberg latest view's upsert held every changed key in Python sets and one ``In()``
expression (1,240 MiB for 1,000,000 changed keys). The keys are now matched a bounded chunk at a time
(``spark/tables/iceberg_rows.py``); the table after the upsert is checked against the latest row per key
computed here from the rows written, with chunks of two keys, and the upsert's peak memory is measured."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from logdoctor.spark.schema import records_arrow_schema
from logdoctor.spark.tables import iceberg_rows
from logdoctor.spark.tables.iceberg import IcebergTable, _arrow_schema

BENCH = Path(__file__).parents[2] / "benchmarks" / "bench_upsert_memory.py"


def _rows(items: list[tuple[str, int, bytes, int, bytes | None]]) -> pa.Table:
    schema = _arrow_schema(records_arrow_schema(False))
    given = dict(zip(("topic", "partition", "key", "offset", "value"), zip(*items, strict=True), strict=True))
    cols = [
        pa.array(list(given[f.name]), f.type) if f.name in given else pa.nulls(len(items), f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(cols, schema=schema)


def _write(table: IcebergTable, name: str, items: list) -> str:
    topic = items[0][0]
    folder = Path(table.data_uri) / f"topic={topic}"
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(_rows(items), folder / name)
    return str(folder / name)


def test_the_upsert_deletes_every_changed_key_in_chunks_and_one_commit(tmp_path, monkeypatch):
    monkeypatch.setattr(iceberg_rows, "CHUNK_KEYS", 2)
    table = IcebergTable(str(tmp_path / "t"))
    old = {
        "a0": [("a", 0, b"k1", 1, b"v1"), ("a", 0, b"k2", 2, b"v2"), ("a", 0, b"k3", 3, b"v3")],
        "a1": [("a", 1, b"k1", 4, b"w1"), ("a", 1, b"k9", 5, b"w9")],
        "b0": [("b", 0, b"k1", 6, b"x1"), ("b", 0, b"k2", 7, b"x2")],
    }
    paths = [_write(table, f"old-{name}.parquet", items) for name, items in old.items()]
    table.commit(paths, records_arrow_schema(False), "error", {}, {})
    new_live = [("a", 0, b"k2", 10, b"V2"), ("a", 0, b"k4", 11, b"V4"), ("a", 1, b"k1", 12, b"W1")]
    new_dead = [("a", 0, b"k3", 13, None), ("b", 0, b"k1", 14, None), ("b", 0, b"k7", 15, None)]
    live = [_write(table, "new-a.parquet", new_live)]
    dead = [_write(table, "dead-a.parquet", new_dead[:1]), _write(table, "dead-b.parquet", new_dead[1:])]
    table.load()
    commits = len(table._table.metadata.metadata_log)
    table.upsert(live, [*live, *dead], records_arrow_schema(False), {"p": "1"}, {})

    expected = {(t, p, k): (o, v) for items in old.values() for t, p, k, o, v in items}
    for t, p, k, o, v in [*new_live, *new_dead]:
        expected[(t, p, k)] = (o, v)
    expected = {tpk: ov for tpk, ov in expected.items() if ov[1] is not None}
    got = table._table.scan(selected_fields=("topic", "partition", "key", "offset", "value")).to_arrow()
    assert sorted(
        ((r["topic"], r["partition"], r["key"]), (r["offset"], r["value"])) for r in got.to_pylist()
    ) == sorted(expected.items())
    assert len(table._table.metadata.metadata_log) == commits + 1  # one catalog commit
    assert table.properties()["p"] == "1"


def test_the_rows_an_upsert_rewrites_keep_their_null_headers(tmp_path):
    """A row the upsert keeps is read with pyiceberg's scan and written again: its null ``headers`` (a list
    of structs) stays null in the data file, not ``[]`` (pyiceberg 0.12's scan, apache/iceberg-python#3833;
    ``iceberg.keep_null_lists``)."""
    table = IcebergTable(str(tmp_path / "t"))
    old = _write(table, "old.parquet", [("a", 0, b"k1", 1, b"v1"), ("a", 0, b"k2", 2, b"v2")])
    table.commit([old], records_arrow_schema(False), "error", {}, {})
    new = [_write(table, "new.parquet", [("a", 0, b"k2", 3, b"V2")])]
    table.upsert(new, new, records_arrow_schema(False), {}, {})
    files = [task.file.file_path for task in table._table.scan().plan_files()]
    assert old not in files and len(files) == 2  # the old file rewritten with the row it keeps
    rows = [r for f in files for r in pq.read_table(f.removeprefix("file://")).to_pylist()]
    assert sorted((r["key"], r["headers"]) for r in rows) == [(b"k1", None), (b"k2", None)]


def test_key_chunks_are_bounded_and_leave_out_null_keys(tmp_path):
    path = tmp_path / "k.parquet"
    pq.write_table(pa.table({"topic": ["t"] * 5, "partition": pa.array([0] * 5, pa.int32()),
                             "key": [b"1", None, b"2", b"3", b"4"]}), path)  # fmt: skip
    chunks = list(iceberg_rows.key_chunks([str(path), str(path)], limit=3))
    assert [c.num_rows for c in chunks] == [3, 3, 2]
    assert [k for c in chunks for k in c.column("key").to_pylist()] == [b"1", b"2", b"3", b"4"] * 2


@pytest.mark.slow
def test_the_upsert_of_2_million_changed_keys_stays_far_under_1_gib(tmp_path):
    """The upsert in a process of its own (its VmHWM): 2,000,000 changed keys over a table of 2,000,000 rows
    in eight files; before the chunks, 1,000,000 keys alone took 1,240 MiB."""
    import os

    out = subprocess.run(
        [sys.executable, str(BENCH), "2000000", str(tmp_path)],
        capture_output=True, text=True, check=True, timeout=900,
        env={**os.environ, "BENCH_FILES": "8"},
    )  # fmt: skip
    found = re.search(r"([\d,]+) rows after, peak (\d+) MiB", out.stdout)
    assert found, out.stdout + out.stderr
    assert found.group(1) == "1,800,000"  # every tenth key's new latest record is a tombstone
    assert int(found.group(2)) < 640, out.stdout


def test_an_upsert_racing_another_writer_commits_nothing(tmp_path, monkeypatch):
    """Another writer commits while the upsert matches its keys (after the upsert read the table): the one
    commit is refused (pyiceberg's requirement on the snapshot read) and the table is as the other writer
    left it."""
    from logdoctor.spark.tables import TableError

    table = IcebergTable(str(tmp_path / "t"))
    first = _write(table, "old.parquet", [("a", 0, b"k1", 1, b"v1"), ("a", 0, b"k2", 2, b"v2")])
    table.commit([first], records_arrow_schema(False), "error", {}, {})
    other = IcebergTable(str(tmp_path / "t"))
    theirs = _write(table, "theirs.parquet", [("a", 0, b"k5", 5, b"v5")])
    rewrite = iceberg_rows.rewrite

    def racing(*args, **kw):
        other.load().add_files([theirs])
        return rewrite(*args, **kw)

    monkeypatch.setattr(iceberg_rows, "rewrite", racing)
    live = [_write(table, "new.parquet", [("a", 0, b"k1", 9, b"V1")])]
    with pytest.raises(TableError, match="upsert failed"):
        table.upsert(live, live, records_arrow_schema(False), {}, {})
    got = other.load().scan(selected_fields=("key", "offset")).to_arrow().to_pylist()
    assert sorted((r["key"], r["offset"]) for r in got) == [(b"k1", 1), (b"k2", 2), (b"k5", 5)]
