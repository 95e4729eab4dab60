"""Small Spark jobs against Spark's own floor (issue 35): ``logdoctor export`` of one 8,000-record partition
to Parquet, whole process, interleaved in one run with the floor (a bare ``SparkSession`` start,
``range(1).count()``, stop, in a fresh interpreter), best of ``--repeat``; export / floor and
export - floor. Then a timeline of one export (``--timeline``): the driver's steps, timed in the process
(wrappers around logdoctor's functions, ``time.time()``), merged with Spark's event log of the same run
(application start, SQL executions, jobs, stages, tasks: epoch milliseconds, the same clock).

    PYSPARK_PYTHON=$PWD/.venv/bin/python .venv/bin/python benchmarks/bench_small_jobs.py \
        [--repeat 5] [--records 8000] [--src PATH] [--timeline]

A second floor is what the arrow writer's export starts: logdoctor's local session (SparkContext only,
``get_spark(sql=False)``), one trivial Python task, stop (this checkout's code). The export's row of
BENCHMARKS.md's "Export" table follows (``benchmarks/update_table.py`` puts it in place).

``--src`` adds the same export run with another checkout's ``src`` (PYTHONPATH; copy the built
``_speedups*.so`` into its ``src/logdoctor/formats``), e.g. the code before a change: the "before" column.
The log dir (one partition, 10 records per batch, 8-byte keys, 100-byte values) is generated once in /tmp.

``--typed LOGDIR`` (issue 76: e.g. ``../shared/typed/kafka-logs``, registry-framed data with its ``_schemas``)
adds the small typed and CDC jobs to the same interleaved run: ``export --typed`` to Parquet, Delta and
Iceberg, and ``export --view cdc`` to Delta (its Debezium topics), each a whole process, each against the
same bare start (their "- floor" column is what the issue's goal, floor + 5 s, measures). Exit status 1
(warnings: that data's side-table records) counts as done.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import BENCH_TMP, TableRows, command, machine, ratio

FLOOR = (
    "from pyspark.sql import SparkSession\n"
    "s = SparkSession.builder.master('local[*]').getOrCreate()\n"
    "s.range(1).count()\n"
    "s.stop()\n"
)
# the same start with logdoctor's session (local confs, SparkContext only) and one trivial Python task
CONTEXT_FLOOR = (
    "from logdoctor.spark.session import get_spark\n"
    "s = get_spark(sql=False)\n"
    "s.sparkContext.parallelize([1], 1).map(lambda x: x).count()\n"
    "s.sparkContext.stop()\n"
)
ENTRY = "import sys; from logdoctor.cli.main import main; sys.argv[0] = 'logdoctor'; main()"


def small_log_dir(records: int) -> Path:
    from logdoctor.sample.logdir import TopicSpec, generate_log_dir

    root = BENCH_TMP / f"small-export-{records}"
    log_dir = root / "broker-0" / "kafka-logs-0"
    if not (root / "DONE").exists():
        shutil.rmtree(root, ignore_errors=True)
        spec = TopicSpec("orders", records_per_partition=records, records_per_batch=10, value_size=100)
        generate_log_dir(root, [spec])
        (root / "DONE").write_text("")
    return log_dir


def run(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - t0
    warned = done.returncode == 1 and ("--typed" in argv or "cdc" in argv)  # the side table's records
    if done.returncode != 0 and not warned:
        raise SystemExit(f"{argv[:3]}... exited {done.returncode}:\n{done.stderr[-3000:]}")
    return wall


# ---- the timeline of one export (a child: bench_small_jobs.py --timeline-child OUT EVDIR LOGDIR MARKS)

MARKS: list[tuple[float, str]] = []


def mark(label: str) -> None:
    MARKS.append((time.time(), label))


def wrap(module: object, name: str, label: str) -> None:
    inner = getattr(module, name)

    def wrapper(*args: object, **kwargs: object) -> object:
        mark(f"{label} start")
        try:
            return inner(*args, **kwargs)
        finally:
            mark(f"{label} end")

    setattr(module, name, wrapper)


def timeline_child(out: str, event_dir: str, log_dir: str, marks_file: str) -> None:
    mark("python: interpreter up")
    import atexit

    import logdoctor.cli.main as cli_main

    mark("python: logdoctor.cli imported")
    import logdoctor.logdir.slices as planning
    import logdoctor.spark.export as export
    import logdoctor.spark.session as session

    wrap(session, "get_spark", "get_spark")
    wrap(session, "check_java", "  check_java")
    wrap(planning, "read_plan", "read_plan")
    wrap(export, "run_export", "run_export")
    wrap(export, "_export_arrow", "  arrow job + commit")
    wrap(export, "commit_attempts", "    commit")
    wrap(export, "skipped_ranges", "  skipped ranges")

    def dump() -> None:
        mark("python: atexit (session stop follows)")
        Path(marks_file).write_text(json.dumps(MARKS))

    atexit.register(dump)  # runs after PySpark's own handlers (registered later): last before exit
    sys.argv = ["logdoctor", "export", log_dir, "--out", out, "--conf", "spark.eventLog.enabled=true"]
    sys.argv += ["--conf", f"spark.eventLog.dir={event_dir}", "--conf", "spark.eventLog.compress=false"]
    try:
        cli_main.main()
    finally:
        mark("python: CLI returned")
        Path(marks_file).write_text(json.dumps(MARKS))


def _event_row(e: dict) -> list[tuple[float, str]]:
    ev = e["Event"].rsplit(".", 1)[-1]
    if ev == "SparkListenerApplicationStart":
        return [(e["Timestamp"] / 1e3, "spark: application start (SparkContext up)")]
    if ev == "SparkListenerApplicationEnd":
        return [(e["Timestamp"] / 1e3, "spark: application end")]
    if ev == "SparkListenerSQLExecutionStart":
        return [(e["time"] / 1e3, f"spark: SQL {e['executionId']} start: {e['description'][:50]}")]
    if ev == "SparkListenerSQLExecutionEnd":
        return [(e["time"] / 1e3, f"spark: SQL {e['executionId']} end")]
    if ev == "SparkListenerJobStart":
        return [(e["Submission Time"] / 1e3, f"spark: job {e['Job ID']} submitted")]
    if ev == "SparkListenerJobEnd":
        return [(e["Completion Time"] / 1e3, f"spark: job {e['Job ID']} end")]
    if ev == "SparkListenerTaskEnd":
        ti, tm = e["Task Info"], e["Task Metrics"]
        task = f"spark:   task {ti['Task ID']} (stage {e['Stage ID']})"
        times = f"deserialize {tm['Executor Deserialize Time']} ms, run {tm['Executor Run Time']} ms"
        start, end = ti["Launch Time"] / 1e3, ti["Finish Time"] / 1e3
        return [(start, f"{task} launched"), (end, f"{task} end ({times})")]
    return []


def spark_events(event_dir: str) -> list[tuple[float, str]]:
    out: list[tuple[float, str]] = []
    for f in glob.glob(os.path.join(event_dir, "*")):
        for name in sorted(glob.glob(os.path.join(f, "events_*"))) if os.path.isdir(f) else [f]:
            with open(name, encoding="utf-8") as fh:
                for line in fh:
                    out += _event_row(json.loads(line))
    return out


def timeline(log_dir: Path, env: dict[str, str]) -> None:
    work = Path(tempfile.mkdtemp(prefix="small-jobs-timeline-", dir=BENCH_TMP))
    event_dir, marks = work / "events", work / "marks.json"
    event_dir.mkdir()
    argv = [sys.executable, __file__, "--timeline-child", str(work / "out"), str(event_dir), str(log_dir)]
    argv.append(str(marks))
    t0 = time.time()
    subprocess.run(argv, capture_output=True, env=env, check=True)
    t1 = time.time()
    rows = [(t0, "process start"), *[tuple(m) for m in json.loads(marks.read_text())], (t1, "process exit")]
    rows += spark_events(str(event_dir))
    rows.sort(key=lambda r: r[0])
    print("\n| t (s) | step |\n|---|---|")
    for t, label in rows:
        print(f"| {t - t0:6.2f} | {label} |")
    shutil.rmtree(work, ignore_errors=True)


TYPED_JOBS = {
    "export --typed --format parquet": ["--typed", "--format", "parquet"],
    "export --typed --format delta": ["--typed", "--format", "delta"],
    "export --typed --format iceberg": ["--typed", "--format", "iceberg"],
    "export --view cdc --format delta": ["--view", "cdc", "--format", "delta"],
}


def typed_cases(cases: dict, log_dir: Path, env: dict[str, str], src: Path | None, small: Path) -> None:
    """The small typed and CDC jobs of ``--typed`` (and with ``--src`` the same run by that checkout), and
    the tour's kind of table export: ``export --format delta`` of the small log dir (``small``)."""
    variants = [("", env)]
    if src is not None:
        variants.append((" (--src)", {**env, "PYTHONPATH": str(src.resolve())}))
    jobs = {name: (log_dir, flags) for name, flags in TYPED_JOBS.items()}
    jobs["export --format delta, untyped"] = (small, ["--format", "delta"])
    for name, (log_dir, flags) in jobs.items():
        for suffix, case_env in variants:
            out = BENCH_TMP / f"small-typed-out-{len(cases)}"

            def argv(out: Path = out, flags: list[str] = flags, log_dir: Path = log_dir) -> list[str]:
                shutil.rmtree(out, ignore_errors=True)
                Path(f"{out}.catalog.db").unlink(missing_ok=True)  # the Iceberg export's catalog, beside
                return [sys.executable, "-c", ENTRY, "export", str(log_dir), "--out", str(out), *flags]

            cases[name + suffix] = (argv, case_env)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--records", type=int, default=8000)
    ap.add_argument("--src", type=Path, default=None, help="another checkout's src (the 'before' row)")
    ap.add_argument("--timeline", action="store_true", help="also print the timeline of one export")
    ap.add_argument("--typed", type=Path, default=None, help="a log dir with _schemas (typed, CDC)")
    ap.add_argument("--timeline-child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.timeline_child:
        timeline_child(*args.timeline_child)
        return
    BENCH_TMP.mkdir(parents=True, exist_ok=True)
    table = TableRows()
    log_dir = small_log_dir(args.records)
    env = dict(os.environ)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    out = BENCH_TMP / "small-export-out"

    def export_argv() -> list[str]:
        shutil.rmtree(out, ignore_errors=True)
        return [sys.executable, "-c", ENTRY, "export", str(log_dir), "--out", str(out), "--json"]

    cases: dict[str, tuple[callable, dict[str, str]]] = {  # type: ignore[valid-type]
        "floor: bare SparkSession, range(1).count(), stop": (lambda: [sys.executable, "-c", FLOOR], env),
        "floor, logdoctor's session: get_spark(sql=False), one Python task, stop": (
            lambda: [sys.executable, "-c", CONTEXT_FLOOR],
            env,
        ),
        "export (this checkout)": (export_argv, env),
    }
    if args.src is not None:
        cases["export (--src)"] = (export_argv, {**env, "PYTHONPATH": str(args.src.resolve())})
    if args.typed is not None:
        typed_cases(cases, args.typed.resolve(), env, args.src, log_dir)
    walls: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(args.repeat):  # interleaved: the machine's load falls on every case alike
        for name, (argv, case_env) in cases.items():
            walls[name].append(run(argv(), case_env))
    print(f"# {command()}")
    print(f"# {machine()}; {args.records:,} records, one partition; best of {args.repeat}, interleaved")
    print(f"# load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (1/5/15 min)")
    floor = min(walls[next(iter(cases))])
    print("\n| run | best | median | / floor | - floor |\n|---|---|---|---|---|")
    for name, w in walls.items():
        best, median = min(w), sorted(w)[len(w) // 2]
        print(f"| {name} | {best:.2f} s | {median:.2f} s | {best / floor:.2f}x | {best - floor:+.2f} s |")
    w = walls["export (this checkout)"]
    table.add(
        f"`export` of one {args.records:,}-record partition to Parquet, whole process",
        f"{min(w):.2f} s best of {args.repeat} (median {sorted(w)[len(w) // 2]:.2f} s)",
        f"Spark's floor: a bare `SparkSession`, `range(1).count()`, stop: {floor:.2f} s",
        ratio(min(w), floor),
    )
    if args.typed is not None:
        for name, w in walls.items():
            if name.startswith("export --"):
                of = (
                    f"{args.records:,} records"
                    if "untyped" in name
                    else f"{args.typed.parent.name}/{args.typed.name}"
                )
                table.add(
                    f"`{name}` of {of}, whole process",
                    f"{min(w):.2f} s best of {args.repeat} (median {sorted(w)[len(w) // 2]:.2f} s)",
                    f"Spark's floor, the same run: {floor:.2f} s",
                    f"{ratio(min(w), floor)} (floor {min(w) - floor:+.2f} s)",
                )
    table.print()
    if args.timeline:
        timeline(log_dir, env)


if __name__ == "__main__":
    main()
