"""Issue 73: a commit that fails at any step leaves a table its format's own reader opens, holding what it
held before or the commit whole, and the export says which. The failure is injected at each step of an
append into an existing table (and of the commit that creates one): before the commit call (the data files
written), in the library's commit call before its log entry / catalog swap, right before Iceberg's catalog
swap (its new metadata file written), in the library's call after the entry landed (delta-rs writes the
entry, then reads the table again: a failure there is the issue's case, where the export said "the table is
unchanged" and deleted the files the entry references), after the call returned, and after the entry landed
with the table unreadable to tell (the files are kept). Expected rows: kafka-python's (tables_util)."""

from __future__ import annotations

from pathlib import Path

import pytest
import tables_util as tu

from logdoctor.sample.logdir import TopicSpec, generate_log_dir
from logdoctor.spark.tables import CommitUnknownError, TableError
from logdoctor.spark.tables.export import run_table_export

pytestmark = pytest.mark.spark


class Injected(RuntimeError):
    pass


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    path, _ = generate_log_dir(
        tmp_path_factory.mktemp("commit-failures") / "kafka-logs",
        [TopicSpec("clicks", partitions=2, records_per_partition=150, records_per_batch=5)],
    )
    return path


def _job_files(out: str) -> list[str]:
    return sorted(str(p) for p in Path(out).rglob("ld*.parquet"))


def _library_call(fmt: str, new_table: bool) -> tuple[object, str]:
    """(object, attribute) of the library's commit call the export makes."""
    if fmt == "iceberg":
        from pyiceberg.table import CreateTableTransaction, Transaction

        return (CreateTableTransaction if new_table else Transaction), "commit_transaction"
    if new_table:
        import deltalake.transaction

        return deltalake.transaction, "create_table_with_add_actions"
    from deltalake import DeltaTable

    return DeltaTable, "create_write_transaction"


def _inject(monkeypatch, fmt: str, point: str, new_table: bool) -> None:
    import logdoctor.spark.tables.export as table_export

    if point in ("before", "commit", "after"):

        def pause(stage: str) -> None:
            if stage == point:
                raise Injected(f"injected {point} the commit")

        monkeypatch.setattr(table_export, "_pause", pause)
        return
    owner, name = _library_call(fmt, new_table)
    original = getattr(owner, name)
    landed = point in ("library after its entry", "unreadable after its entry")

    def failing(*args, **kwargs):
        if landed:
            original(*args, **kwargs)
        raise Injected(f"injected in {name}, {'after' if landed else 'before'} its entry")

    monkeypatch.setattr(owner, name, failing)
    if point == "unreadable after its entry":
        from logdoctor.spark.tables.delta import DeltaLakeTable
        from logdoctor.spark.tables.iceberg import IcebergTable

        def unreadable(*_args, **_kwargs):
            raise OSError("injected: the table cannot be read")

        monkeypatch.setattr(IcebergTable if fmt == "iceberg" else DeltaLakeTable, "landed", unreadable)


POINTS = [
    ("before", "unchanged"),  # the data files written, the commit not called
    ("library before its entry", "unchanged"),
    ("commit", "unchanged"),  # Iceberg: the new metadata file written, right before the catalog swap
    ("library after its entry", "committed"),
    ("after", "committed"),  # the call returned
    ("unreadable after its entry", "unknown"),
]


@pytest.mark.parametrize("fmt", tu.FORMATS)
@pytest.mark.parametrize(("point", "outcome"), POINTS, ids=[p for p, _ in POINTS])
def test_a_failure_at_each_step_of_an_append(spark, logdir, tmp_path, monkeypatch, fmt, point, outcome):
    if point == "commit" and fmt == "delta":
        pytest.skip("Delta's commit is the log entry's put: no step between")
    out = str(tmp_path / "table")
    run_table_export(spark, [str(logdir)], out, fmt=fmt, options={"endingOffsets": "100"})
    old = tu.digest(tu.read_table(fmt, out))
    old_version = tu.version(fmt, out)
    files_before = _job_files(out)
    _inject(monkeypatch, fmt, point, new_table=False)
    if outcome == "committed":
        result = run_table_export(spark, [str(logdir)], out, fmt=fmt, mode="append")
        assert result.rows == 100
    else:
        error = CommitUnknownError if outcome == "unknown" else TableError
        with pytest.raises(error) as info:
            run_table_export(spark, [str(logdir)], out, fmt=fmt, mode="append")
        text = str(info.value)
        assert "\n" not in text and "injected" in text
        assert ("is unknown" in text) if outcome == "unknown" else ("the table is unchanged" in text), text
    monkeypatch.undo()
    # read back by the format's own reader: the old rows, or the commit whole (every file it references)
    got = tu.read_table(fmt, out)
    if outcome == "unchanged":
        assert tu.digest(got) == old and tu.version(fmt, out) == old_version
        assert _job_files(out) == files_before  # this export's files removed
    else:
        assert tu.digest(got) == tu.expected(logdir)[0]
        assert tu.version(fmt, out) != old_version
        assert all(Path(f).exists() for f in tu.data_files(fmt, out))
    if outcome != "committed":  # and the next export continues it: every record once
        run_table_export(spark, [str(logdir)], out, fmt=fmt, mode="append")
        assert tu.digest(tu.read_table(fmt, out)) == tu.expected(logdir)[0]


@pytest.mark.parametrize("fmt", tu.FORMATS)
def test_the_commit_creating_the_table_fails_after_its_entry(spark, logdir, tmp_path, monkeypatch, fmt):
    """The issue's case: the first log entry landed and the call failed after it. The table holds the
    commit, readable, its data files kept."""
    out = str(tmp_path / "table")
    _inject(monkeypatch, fmt, "library after its entry", new_table=True)
    result = run_table_export(spark, [str(logdir)], out, fmt=fmt)
    monkeypatch.undo()
    assert result.rows == 300
    assert tu.digest(tu.read_table(fmt, out)) == tu.expected(logdir)[0]
    assert all(Path(f).exists() for f in tu.data_files(fmt, out))
