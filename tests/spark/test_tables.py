"""`export --format iceberg|delta`: every table read back with the format's own reader and compared with
kafka-python record by record; layout, properties, incremental re-runs, overwrite, schema refusal and
evolution, failed task attempts (local[2]; the cluster, S3 and the driver kill: test_tables_commit.py)."""

from __future__ import annotations

import json
import os
from urllib.parse import unquote

import pyarrow as pa
import pytest
import tables_util as tu

from logdoctor.sample.logdir import TopicSpec, generate_log_dir
from logdoctor.spark.schema import KAFKA_SOURCE_COLUMNS, RECORDS_FIELDS
from logdoctor.spark.tables import TableError, TableExistsError, TableSchemaError
from logdoctor.spark.tables.export import run_table_export
from logdoctor.spark.tables.files import FileLayout, job_files, remove_uncommitted, write_task

pytestmark = pytest.mark.spark
LONG_TOPIC = "payments.settled-v2-eu-west"  # longer than Iceberg's default 16-character string bounds


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    path, _ = generate_log_dir(
        tmp_path_factory.mktemp("tables") / "kafka-logs",
        [
            TopicSpec(
                "orders", partitions=2, records_per_partition=300, records_per_batch=5, segment_bytes=16384
            ),
            TopicSpec(LONG_TOPIC, partitions=1, records_per_partition=120, records_per_batch=4),
        ],
    )
    return path


@pytest.mark.parametrize("fmt", tu.FORMATS)
def test_table_holds_every_record_as_kafka_python_reads_it(spark, logdir, tmp_path, fmt):
    out = tmp_path / "table"
    result = run_table_export(spark, [str(logdir)], str(out), fmt=fmt)
    want, rows = tu.expected(logdir)
    assert result.rows == len(rows) == 720
    table = tu.read_table(fmt, out)
    assert tu.digest(table) == want
    # Spark's Kafka source columns first, then logdoctor's, in the order of the kafka-log source
    assert table.column_names == [name for name, _, _ in RECORDS_FIELDS]
    assert tuple(table.column_names[: len(KAFKA_SOURCE_COLUMNS)]) == KAFKA_SOURCE_COLUMNS
    assert table.schema.field("timestamp").type.tz in ("UTC", "+00:00")
    # partitioned by topic; each file one topic, rows sorted by partition and offset
    files = tu.data_files(fmt, out)
    assert len(files) == result.files >= 2
    assert {os.path.basename(os.path.dirname(f)) for f in files} == {"topic=orders", f"topic={LONG_TOPIC}"}
    assert all(tu.files_sorted(f) for f in files)
    if fmt == "iceberg":
        spec = tu.iceberg_table(out).spec()
        assert [(f.name, str(f.transform)) for f in spec.fields] == [("topic", "identity")]
    else:
        from deltalake import DeltaTable

        assert DeltaTable(str(out)).metadata().partition_columns == ["topic"]
    # properties: the sources, the version, the last offset exported per partition (kafka-python's)
    props = tu.properties(fmt, out)
    last: dict[str, dict[str, int]] = {}
    for t, p, o, _, _ in rows:
        last.setdefault(t, {})[str(p)] = max(o, last.get(t, {}).get(str(p), -1))
    assert json.loads(props["logdoctor.offsets"]) == last
    assert json.loads(props["logdoctor.sources"]) == [str(logdir)]
    import logdoctor

    assert props["logdoctor.version"] == logdoctor.__version__


@pytest.mark.parametrize("fmt", tu.FORMATS)
def test_append_adds_only_the_offsets_above_the_table(spark, logdir, tmp_path, fmt):
    """The first run stops at offset 100 of every partition (as if the broker had written no more);
    append adds exactly the rest; a second append adds nothing and commits nothing."""
    out = str(tmp_path / "table")
    first = run_table_export(spark, [str(logdir)], out, fmt=fmt, options={"endingOffsets": "100"})
    below = {("orders", 0): 100, ("orders", 1): 100, (LONG_TOPIC, 0): 100}
    want_first, rows_first = tu.expected(logdir, below=below)
    assert first.rows == len(rows_first) == 300
    assert tu.digest(tu.read_table(fmt, out)) == want_first
    files_before = set(tu.data_files(fmt, out))

    second = run_table_export(spark, [str(logdir)], out, fmt=fmt, mode="append")
    want, rows = tu.expected(logdir)
    assert second.rows == len(rows) - len(rows_first) == 420
    assert tu.digest(tu.read_table(fmt, out)) == want  # every record once, none twice
    assert files_before <= set(tu.data_files(fmt, out))  # the old files untouched

    snapshot = tu.version(fmt, out)
    third = run_table_export(spark, [str(logdir)], out, fmt=fmt, mode="append")
    assert third.rows == 0 and third.files == 0
    assert tu.version(fmt, out) == snapshot
    assert tu.digest(tu.read_table(fmt, out)) == want


@pytest.mark.parametrize("fmt", tu.FORMATS)
def test_overwrite_replaces_the_snapshot_and_keeps_the_old_for_time_travel(spark, logdir, tmp_path, fmt):
    out = str(tmp_path / "table")
    run_table_export(spark, [str(logdir)], out, fmt=fmt, options={"topics": "orders"})
    old = tu.version(fmt, out)
    with pytest.raises(TableExistsError, match="nothing was written"):
        run_table_export(spark, [str(logdir)], out, fmt=fmt)  # --mode error is the default
    assert tu.version(fmt, out) == old
    with open(os.path.join(out, "thesis.txt"), "w") as f:  # not the table's: an overwrite keeps it
        f.write("keep\n")
    run_table_export(spark, [str(logdir)], out, fmt=fmt, mode="overwrite", options={"topics": LONG_TOPIC})
    with open(os.path.join(out, "thesis.txt")) as f:
        assert f.read() == "keep\n"
    table = tu.read_table(fmt, out)
    assert set(table.column("topic").to_pylist()) == {LONG_TOPIC} and table.num_rows == 120
    if fmt == "iceberg":
        before = tu.iceberg_table(out).scan(snapshot_id=old).to_arrow()
    else:
        before = tu.read_table(fmt, out, version=old)
    assert set(before.column("topic").to_pylist()) == {"orders"} and before.num_rows == 600


def _foreign_table(fmt: str, out: str) -> None:
    """A table written by the format's library alone, whose `offset` is a string."""
    schema = pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.string())])
    data = pa.table({"topic": ["x"], "partition": [0], "offset": ["7"]}, schema=schema)
    if fmt == "iceberg":
        from pyiceberg.catalog import load_catalog

        uri = f"sqlite:///{out}.catalog.db"
        cat = load_catalog("logdoctor", type="sql", uri=uri, init_catalog_tables="true")
        cat.create_namespace_if_not_exists("logdoctor")
        cat.create_table("logdoctor.records", schema=schema, location=out).append(data)
    else:
        from deltalake import write_deltalake

        write_deltalake(out, data, partition_by=["topic"])


@pytest.mark.parametrize("fmt", tu.FORMATS)
def test_a_table_of_another_schema_is_refused_before_anything_is_written(spark, logdir, tmp_path, fmt):
    out = str(tmp_path / "table")
    _foreign_table(fmt, out)
    old, files = tu.version(fmt, out), sorted(str(p) for p in tmp_path.rglob("*"))
    for mode in ("append", "overwrite"):
        with pytest.raises(TableSchemaError, match=r"column offset is (long|string) in the table"):
            run_table_export(spark, [str(logdir)], out, fmt=fmt, mode=mode)
    assert tu.version(fmt, out) == old
    assert sorted(str(p) for p in tmp_path.rglob("*")) == files  # not a file written


@pytest.mark.parametrize("fmt", tu.FORMATS)
def test_a_newer_column_is_added_by_schema_evolution_without_rewriting(spark, logdir, tmp_path, fmt):
    """A table written without `decoded` gets it by the format's schema evolution when an export with
    --decoder appends; the old files stay as they are and read back with nulls there."""
    out = str(tmp_path / "table")
    run_table_export(spark, [str(logdir)], out, fmt=fmt, options={"endingOffsets": "50"})
    old_files = set(tu.data_files(fmt, out))
    mtimes = {f: os.stat(f).st_mtime_ns for f in old_files}
    run_table_export(spark, [str(logdir)], out, fmt=fmt, mode="append", options={"decoder": "auto"})
    table = tu.read_table(fmt, out)
    assert table.column_names[-1] == "decoded"
    assert old_files <= set(tu.data_files(fmt, out))
    assert {f: os.stat(f).st_mtime_ns for f in old_files} == mtimes
    want, _ = tu.expected(logdir)
    assert tu.digest(table) == want
    assert table.filter(pa.compute.less(table.column("offset"), 50)).column("decoded").null_count == 150


def test_delta_schema_evolution_is_in_the_same_commit_as_the_data(spark, logdir, tmp_path):
    """The append that adds `decoded` is ONE Delta version whose log entry (as written, read as JSON
    lines) holds the metaData with the new schema and every add, and no remove: a driver killed at any
    moment leaves the old or the new version, never one with the column and none of the rows."""
    from deltalake import DeltaTable, QueryBuilder

    out = tmp_path / "table"
    run_table_export(spark, [str(logdir)], str(out), fmt="delta", options={"endingOffsets": "50"})
    before = DeltaTable(str(out))
    old_version, old_fields = before.version(), [(f.name, f.type) for f in before.schema().fields]
    old_files = set(before.file_uris())
    result = run_table_export(
        spark, [str(logdir)], str(out), fmt="delta", mode="append", options={"decoder": "auto"}
    )
    table = DeltaTable(str(out))
    assert table.version() == old_version + 1
    assert len(table.history()) == old_version + 2
    entry = out / "_delta_log" / f"{old_version + 1:020d}.json"
    actions = [json.loads(line) for line in entry.read_text().splitlines() if line.strip()]
    kinds = [next(iter(a)) for a in actions]
    assert kinds.count("metaData") == 1 and "remove" not in kinds and "protocol" not in kinds
    adds = [a["add"] for a in actions if "add" in a]
    assert len(adds) == result.files >= 2 and all(a["dataChange"] for a in adds)
    assert old_files | {str(out / unquote(a["path"])) for a in adds} == set(table.file_uris())
    meta = next(a["metaData"] for a in actions if "metaData" in a)
    assert meta["id"] == before.metadata().id and meta["partitionColumns"] == ["topic"]
    fields = json.loads(meta["schemaString"])["fields"]
    # the table's fields in their order, then the new one, nullable (what alter.add_columns gives)
    assert [f["name"] for f in fields] == [n for n, _ in old_fields] + ["decoded"]
    assert fields[-1]["nullable"] is True
    assert [(f.name, f.type) for f in table.schema().fields][:-1] == old_fields
    commit = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert json.loads(commit["logdoctor.offsets"])["orders"] == {"0": 299, "1": 299}
    # the rows read back as kafka-python reads them, with the column; the first run's rows have it null
    # (so have the second's: the decoder decodes only Kafka's internal topics, none here)
    want, _ = tu.expected(logdir)
    whole = table.to_pyarrow_table()
    assert tu.digest(whole) == want and whole.column_names[-1] == "decoded"
    sql = "SELECT \"offset\" < 50 AS old, count(*) AS n, count(decoded) AS d FROM records GROUP BY 1"
    counts = pa.table(QueryBuilder().register("records", table).execute(sql).read_all()).to_pylist()
    assert sorted((c["old"], c["n"], c["d"]) for c in counts) == [(False, 570, 0), (True, 150, 0)]


@pytest.mark.parametrize("fmt", tu.FORMATS)
def test_failed_job_leaves_the_table_and_no_file(spark, logdir, tmp_path, fmt):
    """local[2] does not retry: the job fails after tasks wrote files; the table stays at its snapshot
    and no file of the job remains."""
    out = str(tmp_path / "table")
    run_table_export(spark, [str(logdir)], out, fmt=fmt, options={"endingOffsets": "10"})
    old, before = tu.version(fmt, out), sorted(str(p) for p in tmp_path.rglob("*.parquet"))
    with pytest.raises(Exception, match="first task attempt fails"):
        run_table_export(spark, [str(logdir)], out, fmt=fmt, mode="append", fail_first_attempt=True)
    assert tu.version(fmt, out) == old
    assert sorted(str(p) for p in tmp_path.rglob("*.parquet")) == before


def test_only_the_reported_attempts_are_committed_the_others_removed(logdir, tmp_path):
    """A failed first attempt and a speculative duplicate wrote files: the commit takes the reported
    attempt of each task and the rest of the job's files are deleted."""
    from logdoctor.logdir.discovery import discover
    from logdoctor.logdir.slices import pack_slices, parse_read_options, plan_slices
    from logdoctor.spark.tables.iceberg import IcebergTable

    opts = parse_read_options({})
    groups = pack_slices(plan_slices(discover([str(logdir)]), opts), 32 * 1024, 2)
    assert len(groups) >= 2
    table = IcebergTable(str(tmp_path / "table"))
    layout = FileLayout(data_uri=table.data_uri, job="ldtestjob", int16_as_int32=True)
    done = []
    for task, group in enumerate(groups):
        write_task(task, group, opts, layout, {}, attempt=0)
        done.append(write_task(task, group, opts, layout, {}, attempt=1))
        write_task(task, group, opts, layout, {}, attempt=2)
    files = [f for d in done for f in d["files"]]
    assert len(job_files(layout)) == 3 * len(files)
    from logdoctor.spark.schema import records_arrow_schema

    table.commit([f.path for f in files], records_arrow_schema(), "error", {}, {})
    removed = remove_uncommitted(layout, [f.path for f in files])
    assert len(removed) == 2 * len(files) and sorted(job_files(layout)) == sorted(f.path for f in files)
    assert tu.digest(tu.read_table("iceberg", tmp_path / "table")) == tu.expected(logdir)[0]


def test_unreachable_catalog_is_one_line_and_writes_nothing(spark, logdir, tmp_path):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(TableError, match=r"unreachable|cannot be read") as info:
        run_table_export(
            spark,
            [str(logdir)],
            str(tmp_path / "table"),
            fmt="iceberg",
            catalog={"type": "rest", "uri": f"http://127.0.0.1:{port}"},
        )
    assert "\n" not in str(info.value)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("fmt", tu.FORMATS)
def test_partition_by_day(spark, logdir, tmp_path, fmt):
    """--partition-by-day: topic and the UTC day of the record timestamp (kafka-python's timestamps)."""
    import datetime as dt

    import oracle

    out = str(tmp_path / "table")
    run_table_export(spark, [str(logdir)], out, fmt=fmt, by_day=True)
    table = tu.read_table(fmt, out)
    assert tu.digest(table) == tu.expected(logdir)[0]
    days = {
        (t, dt.datetime.fromtimestamp(ts / 1000, dt.UTC).date().isoformat())
        for log in logdir.glob("*/*.log")
        for t, _, _, ts, _, _ in oracle.records_of(log)
    }
    folders = {
        tuple(part.split("=", 1)[1] for part in f.split("/")[-3:-1]) for f in tu.data_files(fmt, out)
    }
    if fmt == "iceberg":
        spec = tu.iceberg_table(out).spec()
        assert [str(f.transform) for f in spec.fields] == ["identity", "day"]
        assert {t for t, _ in folders} == {t for t, _ in days}  # pyiceberg names no day folder itself
    else:
        assert folders == days
        assert table.column_names[-1] == "timestamp_day"


def test_a_concurrent_iceberg_commit_is_retried_on_the_new_snapshot(spark, logdir, tmp_path, caplog):
    """Another writer commits between our transaction's start and its commit: the commit fails, is
    retried on the other writer's snapshot (pyiceberg 0.12 retries inside commit_transaction, logdoctor
    around it), and the table holds both writers' rows."""
    from logdoctor.spark.schema import records_arrow_schema
    from logdoctor.spark.tables.iceberg import IcebergTable

    out = str(tmp_path / "table")
    run_table_export(spark, [str(logdir)], out, fmt="iceberg", options={"topics": "orders"})
    other = tu.read_table("iceberg", out).slice(0, 10)  # another writer appends 10 rows again
    table = IcebergTable(out)
    table.load()
    from logdoctor.spark.tables.files import FileLayout, write_table_files

    layout = FileLayout(data_uri=table.data_uri, job="ldconcurrent", int16_as_int32=True)
    from logdoctor.logdir.discovery import discover
    from logdoctor.logdir.slices import parse_read_options, plan_slices
    from logdoctor.spark.sources.slice_reader import read_slice

    opts = parse_read_options({"topics": LONG_TOPIC})
    batches = [rb for sl in plan_slices(discover([str(logdir)]), opts) for rb in read_slice(sl, opts)]
    files = write_table_files(pa.Table.from_batches(batches), layout, 0, 0)
    tries = []

    def pause(stage: str) -> None:
        if stage == "commit":  # right before commit_transaction, after the transaction was built
            tries.append(stage)
            if len(tries) == 1:
                tu.iceberg_table(out).append(other)

    import logging

    with caplog.at_level(logging.WARNING):
        table.commit([f.path for f in files], records_arrow_schema(), "append", {}, {}, pause=pause)
    assert tries and "concurrent update" in caplog.text  # the first commit lost, a retry won
    rows = tu.read_table("iceberg", out)
    assert rows.num_rows == 600 + 10 + 120
    assert set(rows.column("topic").to_pylist()) == {"orders", LONG_TOPIC}


def test_arrow_writer_off_local_points_to_the_table_formats(spark, logdir):
    from logdoctor.spark.export import ExportError, run_export

    with pytest.raises(ExportError, match=r"--writer spark, or --format iceberg\|delta"):
        run_export(spark, [str(logdir)], "s3://bucket/out", writer="arrow")
