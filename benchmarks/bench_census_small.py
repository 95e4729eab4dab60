"""`logdoctor census` of three small brokers against Spark's floor, and where the seconds above it go.

    PYSPARK_PYTHON=$PWD/.venv/bin/python .venv/bin/python benchmarks/bench_census_small.py --repeat 3

Fleet (issue 35's row): three brokers, one topic of 8 partitions with three replicas (8 partitions on each
broker, 100 records each), written by logdoctor.sample (cached in /tmp/logdoctor-bench). The census's row of
BENCHMARKS.md's "Census" table is printed after the round's table (``benchmarks/update_table.py``).

Measured, interleaved in each round (the machine is shared: best of ``--repeat``, and the ratios):

- the floor: a Python process that starts a bare ``SparkSession`` (``local[2]``), runs ``range(1).count()``
  and stops it;
- with ``--c1-floor`` also that floor with the small census's JVM option (C1 JIT only), in each round;
- the census: the ``logdoctor census FLEET --out OUT --master local[2] --json`` process, start to exit;
  with ``--before SRC`` also the census of the logdoctor in SRC (the commit before a change), in each round.

Then one more census, traced, prints the timeline of the whole process: the Python side's phases (the
functions of the census wrapped with timestamps: imports, Spark's start, the inputs, each table, the report)
and Spark's jobs from its event log (``spark.eventLog.enabled`` into a temp folder), on one clock (seconds
since the process was started).
"""

from __future__ import annotations

import argparse
import functools
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

from _common import BENCH_TMP, TableRows, machine

PY = Path(sys.executable)
LOGDOCTOR = PY.parent / "logdoctor"
MASTER = "local[2]"
FLOOR = (
    "from pyspark.sql import SparkSession\n"
    f"s = SparkSession.builder.master({MASTER!r}).getOrCreate()\n"
    "s.range(1).count()\n"
    "s.stop()\n"
)

#: (module, function): the census's phases, timed in the traced run
TRACED = (
    ("logdoctor.spark.session", "get_spark"),
    ("logdoctor.spark.census_inputs", "classify"),
    ("logdoctor.spark.census_inputs", "load_inputs"),
    ("logdoctor.spark.census_sql", "divergence_candidates"),
    ("logdoctor.spark.census", "diverged_findings"),
    ("logdoctor.spark.census_sql", "census_frames"),
    ("logdoctor.spark.census_sql", "log_dir_table"),
    ("logdoctor.spark.census_sql", "full_disk_findings"),
    ("logdoctor.spark.census_sql", "consumer_group_table"),
    ("logdoctor.spark.census_sql", "first_rows"),
    ("logdoctor.spark.census_sql", "severity_counts"),
    ("logdoctor.spark.census", "render_summary"),
    ("logdoctor.cli.census", "render_census"),
    ("pyspark.sql.readwriter", "DataFrameWriter.parquet"),
)


def small_fleet() -> Path:
    from logdoctor.sample.logdir import BrokerSpec, FleetSpec, TopicSpec, generate_fleet

    root = BENCH_TMP / "census-small-fleet-3b-8p"
    if not (root / "DONE").exists():
        shutil.rmtree(root, ignore_errors=True)
        spec = FleetSpec(
            topics=[TopicSpec("orders", partitions=8, replication_factor=3, records_per_partition=100)],
            brokers=[BrokerSpec(i) for i in range(3)],
        )
        generate_fleet(root / "fleet", spec)
        (root / "DONE").write_text("")
    return root / "fleet"


def _env() -> dict[str, str]:
    return dict(os.environ, PYSPARK_PYTHON=str(PY))


def floor(java_options: str | None = None) -> float:
    """The floor's process; ``java_options``: its JVM's (``spark.driver.extraJavaOptions``)."""
    code = FLOOR
    if java_options is not None:
        code = code.replace(
            ".getOrCreate()", f".config('spark.driver.extraJavaOptions', {java_options!r}).getOrCreate()"
        )
    t0 = time.perf_counter()
    subprocess.run([str(PY), "-c", code], check=True, capture_output=True, env=_env())
    return time.perf_counter() - t0


def census_args(fleet: Path, out: Path) -> list[str]:
    return ["census", str(fleet), "--out", str(out), "--master", MASTER, "--json"]


def census(fleet: Path, out: Path, src: str | None = None) -> float:
    """Wall time of the census process; ``src``: a ``src`` folder whose logdoctor runs (another commit's)."""
    shutil.rmtree(out, ignore_errors=True)
    env = _env() if src is None else dict(_env(), PYTHONPATH=src)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [str(LOGDOCTOR), *census_args(fleet, out)], capture_output=True, env=env, check=False
    )
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1, 2):
        raise SystemExit(f"census failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}")
    return wall


# --- the traced run ------------------------------------------------------------------------------------


def _child(marks_file: str, argv: list[str]) -> None:
    """Run the CLI in this process with the census's phases wrapped (a mark at each start and end)."""
    import atexit
    import importlib

    marks: list[tuple[float, str]] = [(time.time(), "python started, importing logdoctor's CLI")]
    atexit.register(lambda: Path(marks_file).write_text(json.dumps([*marks, (time.time(), "atexit")])))
    from logdoctor.cli.main import main

    marks.append((time.time(), "CLI imported"))
    for module, name in TRACED:
        mod = importlib.import_module(module)
        owner, attr = (getattr(mod, name.split(".")[0]), name.split(".")[1]) if "." in name else (mod, name)
        fn = getattr(owner, attr)

        def wrapped(*a: object, __fn=fn, __name=name, **k: object) -> object:
            marks.append((time.time(), f"> {__name}"))
            try:
                return __fn(*a, **k)
            finally:
                marks.append((time.time(), f"< {__name}"))

        setattr(owner, attr, functools.wraps(fn)(wrapped))
    sys.argv = ["logdoctor", *argv]
    main()


def _spark_events(folder: str) -> list[tuple[float, str]]:
    out: list[tuple[float, str]] = []
    for path in sorted(glob.glob(os.path.join(folder, "*", "events_*"))):
        data = Path(path).read_bytes()  # spark.eventLog.compress=false
        for line in data.decode().splitlines():
            e = json.loads(line)
            kind = e["Event"]
            if kind == "SparkListenerApplicationStart":
                out.append((e["Timestamp"] / 1000, "spark: application start"))
            elif kind == "SparkListenerJobStart":
                tasks = sum(s["Number of Tasks"] for s in e["Stage Infos"])
                site = e.get("Properties", {}).get("callSite.short") or e["Stage Infos"][-1]["Stage Name"]
                out.append((e["Submission Time"] / 1000, f"spark: job {e['Job ID']} ({tasks} tasks) {site}"))
            elif kind == "SparkListenerJobEnd":
                out.append((e["Completion Time"] / 1000, f"spark: job {e['Job ID']} end"))
            elif kind == "SparkListenerApplicationEnd":
                out.append((e["Timestamp"] / 1000, "spark: application end"))
    return out


def timeline(fleet: Path, out: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="logdoctor-census-timeline-") as tmp:
        events = os.path.join(tmp, "events")
        os.mkdir(events)
        marks_file = os.path.join(tmp, "marks.json")
        argv = [
            *census_args(fleet, out),
            "--conf", "spark.eventLog.enabled=true",
            "--conf", f"spark.eventLog.dir=file://{events}",
            "--conf", "spark.eventLog.compress=false",
        ]  # fmt: skip
        shutil.rmtree(out, ignore_errors=True)
        started = time.time()
        proc = subprocess.run(
            [str(PY), __file__, "--child", marks_file, "--", *argv],
            capture_output=True,
            env=_env(),
            check=False,
        )
        ended = time.time()
        if proc.returncode not in (0, 1, 2):
            raise SystemExit(f"traced census failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}")
        rows = [(started, "process started"), *json.loads(Path(marks_file).read_text())]
        rows += [*_spark_events(events), (ended, "process exited")]
    jobs = sum(1 for _t, what in rows if what.startswith("spark: job") and not what.endswith("end"))
    print(f"\nTimeline of one census (seconds since the process started; {jobs} Spark jobs):\n")
    print("| t (s) | event |")
    print("|---|---|")
    for t, what in sorted(rows, key=lambda r: r[0]):
        print(f"| {t - started:6.2f} | {what} |")


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        _child(sys.argv[2], sys.argv[4:])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-timeline", action="store_true")
    ap.add_argument(
        "--before",
        metavar="SRC",
        help="also time the census of the logdoctor in SRC (another commit's src/, e.g. of "
        "`git archive main src`, with its built C extension) in each round: before and after in one run",
    )
    ap.add_argument(
        "--c1-floor",
        action="store_true",
        help="also time the floor with the JVM option of a small census (session.SHORT_JOB_JAVA_OPTIONS: C1 "
        "JIT only) in each round: how much of the census's gain that option alone gives the floor",
    )
    args = ap.parse_args()
    print(machine())
    table = TableRows()
    fleet = small_fleet()
    out = BENCH_TMP / "census-small-out"
    runs: dict[str, list[float]] = {"floor": [], "census": [], **({"before": []} if args.before else {})}
    if args.c1_floor:
        runs["floor C1"] = []
    for i in range(args.repeat):
        runs["floor"].append(floor())
        if args.c1_floor:
            from logdoctor.spark.session import SHORT_JOB_JAVA_OPTIONS

            runs["floor C1"].append(floor(SHORT_JOB_JAVA_OPTIONS))
        if args.before:
            runs["before"].append(census(fleet, out, args.before))
        runs["census"].append(census(fleet, out))
        took = ", ".join(f"{k} {v[-1]:.2f} s" for k, v in runs.items())
        print(f"  round {i + 1}: {took}, load {os.getloadavg()[0]:.1f}", flush=True)
    f = min(runs["floor"])
    print("\n| best of | floor | census | census / floor | census - floor |")
    print("|---|---|---|---|---|")
    for name in ("before", "census"):
        if name in runs:
            c = min(runs[name])
            label = f"{args.repeat} ({name})" if args.before else str(args.repeat)
            print(f"| {label} | {f:.2f} s | {c:.2f} s | {c / f:.2f} | {c - f:.2f} s |")
    if args.c1_floor:
        c1, c = min(runs["floor C1"]), min(runs["census"])
        print(
            f"\nfloor with C1 only (the small census's JVM option): {c1:.2f} s; "
            f"census - that floor: {c - c1:.2f} s"
        )
    c = min(runs["census"])
    c1_note = ""
    if args.c1_floor:
        c1_note = f" (with the census's C1-only JVM option: {min(runs['floor C1']):.2f} s)"
    table.add(
        "census of 3 small brokers (8 partitions each)",
        f"{c:.2f} s best of {args.repeat}",
        f"Spark's floor: a bare `SparkSession`, `range(1).count()`, stop: {f:.2f} s{c1_note}",
        f"{c / f:.2f}x (floor + {c - f:.2f} s)",
    )
    table.print()
    if not args.no_timeline:
        timeline(fleet, out)


if __name__ == "__main__":
    main()
