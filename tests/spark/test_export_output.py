"""Where and how `export` writes: --mode, refusing --out at, inside or above an input, commit protocol."""

from __future__ import annotations

import os
import shutil

import oracle
import pyarrow.parquet as pq
import pytest

from logdoctor.errors import OutputOverlapsInputError
from logdoctor.sample.logdir import TopicSpec, generate_log_dir
from logdoctor.spark.export import (
    TEMPORARY,
    ExportError,
    OutputExistsError,
    commit_attempts,
    run_export,
    write_slices,
)

pytestmark = pytest.mark.spark
WRITERS = ("arrow", "spark")


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    path, _ = generate_log_dir(
        tmp_path_factory.mktemp("export-output") / "kafka-logs",
        [
            TopicSpec(
                "orders",
                partitions=2,
                records_per_partition=300,
                records_per_batch=5,
                segment_bytes=16 * 1024,
            )
        ],
    )
    return path


def _expected(logdir):
    return oracle.digest(
        (t, p, o, k, v) for log in logdir.glob("*/*.log") for t, p, o, _, k, v in oracle.records_of(log)
    )


def _digest(out):
    table = pq.read_table(out)
    cols = ("topic", "partition", "offset", "key", "value")
    return oracle.digest(zip(*(table.column(c).to_pylist() for c in cols), strict=True))


def _tree(root):
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


@pytest.mark.parametrize("writer", WRITERS)
def test_modes_error_overwrite_append(spark, logdir, tmp_path, writer):
    out = tmp_path / "out"
    first = run_export(spark, [str(logdir)], out, writer=writer)
    assert first.writer == writer and first.rows == 600 and (out / "_SUCCESS").is_file()
    assert _digest(out) == _expected(logdir)
    before = _tree(out)

    with pytest.raises(OutputExistsError, match="exists and is not empty"):
        run_export(spark, [str(logdir)], out, writer=writer)  # mode error is the default
    assert _tree(out) == before  # nothing written or deleted

    # a partition an earlier export wrote and this one does not: replaced all the same
    stale = out / "topic=stale" / "partition=9"
    stale.mkdir(parents=True)
    shutil.copyfile(next(out.rglob("part-*.parquet")), stale / "part-00000-old-0000-0.parquet")
    again = run_export(spark, [str(logdir)], out, writer=writer, mode="overwrite")
    assert again.rows == 600 and not (out / "topic=stale").exists()
    assert _digest(out) == _expected(logdir)

    appended = run_export(spark, [str(logdir)], out, writer=writer, mode="append")
    assert appended.rows == 600 and appended.files >= 2  # the files of this run only
    count, _ = _digest(out)
    assert count == 1200
    assert not (out / TEMPORARY).exists() or not any((out / TEMPORARY).iterdir())


FOREIGN = {
    "thesis.txt": b"keep\n",  # the case
    "topic=orders/notes.parquet": b"PAR1 not ours",  # in a partition folder, not a part-* name
    "topic=orders/partition=0/part-99999-x.parquet": b"not Parquet at all",  # a part name, no footer
    "elsewhere/part-00000-y.parquet": None,  # a folder that is no column=value folder
}


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("foreign", sorted(FOREIGN))
def test_overwrite_refuses_what_no_export_wrote_and_deletes_nothing(spark, logdir, tmp_path, writer, foreign):
    out = tmp_path / "out"
    run_export(spark, [str(logdir)], out, writer=writer)
    path = out / foreign
    path.parent.mkdir(parents=True, exist_ok=True)
    data = FOREIGN[foreign]
    if data is None:  # a real export part, but where no export puts one
        shutil.copyfile(next(out.rglob("part-*.parquet")), path)
    else:
        path.write_bytes(data)
    before = {p: (out / p).read_bytes() for p in _tree(out)}
    named = f"holds what no logdoctor export wrote: {out / foreign.split('/')[0]}"
    with pytest.raises(OutputExistsError, match=named):
        run_export(spark, [str(logdir)], out, writer=writer, mode="overwrite")
    assert {p: (out / p).read_bytes() for p in _tree(out)} == before


def test_cli_overwrite_refuses_a_folder_of_other_files_before_spark(logdir, tmp_path):
    """The issue's steps: mkdir imp; echo keep > imp/thesis.txt; export ... --out imp --mode overwrite."""
    from typer.testing import CliRunner

    from logdoctor.cli import commands  # noqa: F401  (registers every command)
    from logdoctor.cli.common import ExitCode
    from logdoctor.cli.main import app

    imp = tmp_path / "imp"
    imp.mkdir()
    (imp / "thesis.txt").write_text("keep\n")
    for extra in ([], ["--writer", "spark"]):
        res = CliRunner().invoke(
            app,
            ["export", str(logdir), "--topics", "orders", "--out", str(imp), "--mode", "overwrite", *extra],
            terminal_width=300,
        )
        assert res.exit_code == ExitCode.CANT_CREATE, res.output
        named = f"refused: output {imp} holds what no logdoctor export wrote: {imp / 'thesis.txt'}"
        assert named in res.output
        assert (imp / "thesis.txt").read_text() == "keep\n" and os.listdir(imp) == ["thesis.txt"]


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("where", ["is", "inside", "above", "inside-partition"])
def test_out_at_inside_or_above_an_input_is_refused(spark, logdir, tmp_path, writer, where):
    copy = tmp_path / "brokers" / "kafka-logs"
    shutil.copytree(logdir, copy)
    out = {
        "is": copy,
        "inside": copy / "export",
        "above": tmp_path / "brokers",
        "inside-partition": copy / "orders-0" / "x",
    }[where]
    before = _tree(tmp_path)
    for mode in ("error", "overwrite", "append"):
        with pytest.raises(OutputOverlapsInputError, match="nothing was written or deleted"):
            run_export(
                spark,
                [str(copy / "orders-0") if where == "above" else str(copy)],
                out,
                writer=writer,
                mode=mode,
            )
    assert _tree(tmp_path) == before


def test_cli_refusal_exit_code(logdir, tmp_path):
    from typer.testing import CliRunner

    from logdoctor.cli import commands  # noqa: F401  (registers every command)
    from logdoctor.cli.common import ExitCode
    from logdoctor.cli.main import app

    copy = tmp_path / "kafka-logs"
    shutil.copytree(logdir, copy)
    before = _tree(tmp_path)
    for extra in ([], ["--mode", "overwrite"], ["--writer", "spark", "--mode", "overwrite"]):
        res = CliRunner().invoke(
            app, ["export", str(copy), "--out", str(tmp_path), *extra], terminal_width=200
        )
        assert res.exit_code == ExitCode.CANT_CREATE, res.output
        assert "refused" in res.output
    assert _tree(tmp_path) == before


def test_arrow_writer_is_refused_off_local(spark, logdir, tmp_path):
    with pytest.raises(ExportError, match="--writer spark"):
        run_export(spark, [str(logdir)], "s3://bucket/out", writer="arrow")
    with pytest.raises(ExportError, match="--writer spark"):
        run_export(spark, [str(logdir)], tmp_path / "o", writer="arrow", fmt="orc")


def test_failed_task_attempt_leaves_no_files(spark, logdir, tmp_path):
    """local[2] does not retry a task: the job fails, and neither data files nor _temporary remain."""
    out = tmp_path / "out"
    with pytest.raises(Exception, match="first task attempt fails"):
        run_export(spark, [str(logdir)], out, writer="arrow", fail_first_attempt=True)
    assert not out.exists()  # it did not exist before: not even an empty folder remains


def test_commit_takes_only_the_reported_attempt(logdir, tmp_path):
    """A failed first attempt and a speculative duplicate wrote files; only the reported attempts commit."""
    from logdoctor.logdir.discovery import discover
    from logdoctor.logdir.slices import pack_slices, parse_read_options, plan_slices

    opts = parse_read_options({})
    groups = pack_slices(plan_slices(discover([str(logdir)]), opts), 64 * 1024, 2)
    assert len(groups) >= 2
    out = str(tmp_path / "out")
    job = "job1"
    cols = ("topic", "partition")
    done = []
    for task, group in enumerate(groups):
        write_slices(task, group, opts, out, cols, job, attempt=0)  # the attempt that failed
        done.append(write_slices(task, group, opts, out, cols, job, attempt=1))
        write_slices(task, group, opts, out, cols, job, attempt=2)  # a speculative copy, killed
    assert len(_tree(out)) >= 3 * len(groups)  # every attempt wrote at least one file
    committed = commit_attempts(out, job, done)
    assert sorted(committed) == _tree(out)
    assert not os.path.exists(os.path.join(out, TEMPORARY))
    assert _digest(out) == _expected(logdir)


def test_retried_task_attempts_commit_every_row_once(logdir, tmp_path):
    """local[2,2] retries a failed task once: every task's first attempt writes its files and fails,
    the second succeeds; the output holds every row exactly once and no attempt folder remains."""
    import json
    import subprocess
    import sys

    out = tmp_path / "out"
    script = (
        "import json, sys\n"
        "from logdoctor.spark.session import get_spark\n"
        "from logdoctor.spark.export import run_export\n"
        "spark = get_spark('local[2,2]', 'retry-test')\n"
        "r = run_export(spark, [sys.argv[1]], sys.argv[2], writer='arrow', fail_first_attempt=True)\n"
        "print(json.dumps({'rows': r.rows, 'files': r.files}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(logdir), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["rows"] == 600 and summary["files"] == len(_tree(out)) - 1  # all but _SUCCESS
    assert "first task attempt fails" in proc.stderr  # the first attempts did fail
    assert not (out / TEMPORARY).exists()
    assert _digest(out) == _expected(logdir)


def test_overwrite_of_a_uri_refuses_objects_no_export_wrote(s3, tmp_path):
    """--mode overwrite of an s3:// output (Spark's writer replaces the whole prefix): its objects are
    listed first, and one no export wrote is refused, named, before Spark starts (no Spark here)."""

    from logdoctor.spark.export import overwrite_refusal
    from logdoctor.spark.schema import records_arrow_schema

    earlier = tmp_path / "earlier"
    part = earlier / "topic=orders" / "partition=0"
    part.mkdir(parents=True)
    pq.write_table(records_arrow_schema(False).empty_table(), part / "part-00000-a.parquet")
    (earlier / "_SUCCESS").write_bytes(b"")
    ours = s3.upload(earlier, "exports/ours")
    assert overwrite_refusal(ours, "parquet") is None
    (earlier / "thesis.txt").write_text("keep\n")
    theirs = s3.upload(earlier, "exports/theirs")
    said = overwrite_refusal(theirs, "parquet")
    assert said is not None and f"{theirs.rstrip('/')}/thesis.txt" in said
