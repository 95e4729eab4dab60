"""Issue 73: a commit of ``export --view cdc --format iceberg|delta`` whose outcome cannot be read (the
library's call landed, then failed, and the table could not be read to tell) keeps its data file, as the
typed and records tables' exports keep theirs (tests/spark/test_tables_commit_failures.py, the point
"unreadable after its entry"), and says so: the table then holds the commit and its format's own library
reads it. Before, the cdc view's commit deleted its file, leaving a table whose log names a file that is
gone. The outcome is injected as test_tables_commit_failures injects it; the topic is hand-made
(tests/debezium_logs.py), the expected rows written out by hand."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import debezium_logs as dl
from logdoctor.spark.cdc_job import run_cdc_export
from logdoctor.spark.tables import CommitUnknownError

pytestmark = [pytest.mark.spark]
FORMATS = ["iceberg", "delta"]

FIRST = [(1, "a", "n1"), (2, "b", "n2"), (3, "c", "n3")]
SECOND = [(1, "a2", "n1"), (3, "c", "n3"), (4, "d", "n4")]


class Injected(RuntimeError):
    pass


def read(fmt: str, out: Path) -> pa.Table:
    """The table as its format's own library reads it (every data file the table references)."""
    if fmt == "delta":
        from deltalake import DeltaTable

        return DeltaTable(str(out / dl.TOPIC)).to_pyarrow_table()
    from pyiceberg.catalog import load_catalog

    from logdoctor.spark.tables.iceberg import catalog_properties
    from logdoctor.spark.tables.typed_export import table_identifier

    catalog = load_catalog("logdoctor", **catalog_properties(str(out), None))
    return catalog.load_table(table_identifier(None, dl.TOPIC)).scan().to_arrow()


def rows_of(table: pa.Table) -> list[tuple]:
    return sorted(zip(*(table.column(c).to_pylist() for c in ("id", "name", "note")), strict=True))


def data_files(out: Path) -> list[Path]:
    return sorted(p for p in (out / dl.TOPIC).rglob("*.parquet") if "metadata" not in p.parts)


def export(spark, root: Path, out: Path, fmt: str, mode: str):
    return run_cdc_export(spark, [str(root)], str(out), fmt=fmt, mode=mode, options={"view": "cdc"})


def _landed_then_unknown(monkeypatch, fmt: str, call: str) -> None:
    """The library's ``call`` (the commit that creates the table, or the append's) lands, then raises; and
    the table cannot be read to tell whether it landed."""
    from logdoctor.spark.tables.delta import DeltaLakeTable
    from logdoctor.spark.tables.iceberg import IcebergTable

    if fmt == "iceberg":
        from pyiceberg.table import CreateTableTransaction, Transaction

        owner, name = (CreateTableTransaction if call == "create" else Transaction), "commit_transaction"
    elif call == "create":
        import deltalake.transaction

        owner, name = deltalake.transaction, "create_table_with_add_actions"
    else:
        from deltalake.table import TableMerger

        owner, name = TableMerger, "execute"
    original = getattr(owner, name)

    def landed_then_failed(*args, **kwargs):
        original(*args, **kwargs)
        raise Injected(f"injected in {name}, after its entry")

    def unreadable(*_args, **_kwargs):
        raise OSError("injected: the table cannot be read")

    monkeypatch.setattr(owner, name, landed_then_failed)
    monkeypatch.setattr(IcebergTable if fmt == "iceberg" else DeltaLakeTable, "landed", unreadable)


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_commit_creating_the_table_keeps_its_file_when_its_outcome_is_unknown(
    spark, tmp_path, monkeypatch, fmt
) -> None:
    root, out = tmp_path / "logs", tmp_path / "OUT"
    w = dl.TopicWriter(root)
    w.plain(*(dl.upsert("r", i, n, f"n{i}", 10 * i, i) for i, n, _ in FIRST))
    _landed_then_unknown(monkeypatch, fmt, "create")
    with pytest.raises(CommitUnknownError) as info:
        export(spark, root, out, fmt, "error")
    monkeypatch.undo()
    text = str(info.value)
    assert "\n" not in text and "injected" in text, text
    assert "is unknown" in text and "files are kept" in text, text
    # the commit landed: the table is whole, its data file there, read by the format's own library
    assert data_files(out), "the data file of the commit was deleted"
    assert rows_of(read(fmt, out)) == FIRST


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_append_whose_outcome_is_unknown_keeps_its_file(spark, tmp_path, monkeypatch, fmt) -> None:
    root, out = tmp_path / "logs", tmp_path / "OUT"
    w = dl.TopicWriter(root)
    w.plain(*(dl.upsert("r", i, n, f"n{i}", 10 * i, i) for i, n, _ in FIRST))
    export(spark, root, out, fmt, "error")
    w.plain(dl.upsert("u", 1, "a2", dl.PLACEHOLDER, 50, 5), dl.delete(2, 60, 6), dl.tombstone(2))
    w.plain(dl.upsert("c", 4, "d", "n4", 70, 7))
    files_before = data_files(out)
    _landed_then_unknown(monkeypatch, fmt, "append")
    with pytest.raises(CommitUnknownError) as info:
        export(spark, root, out, fmt, "append")
    monkeypatch.undo()
    text = str(info.value)
    assert "is unknown" in text and "files are kept" in text, text
    assert set(files_before) < set(data_files(out))  # the append's file is there
    assert rows_of(read(fmt, out)) == SECOND
