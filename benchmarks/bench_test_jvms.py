"""What a test's local Spark JVM costs, with and without the run's archive of Spark's classes (the JVM's class
data sharing: tests/jvm_classes.py), as CPU of the whole process tree: a child-subreaper wrapper
(``prctl(PR_SET_CHILD_SUBREAPER)``, then ``RUSAGE_CHILDREN``) around each run, since PySpark leaves its JVM
to init when it exits and ``/usr/bin/time`` never counts it. The JVMs compile with C1 only, as the tests'
(tests/conftest.py).

- the archive's dump (``python tests/jvm_classes.py`` with ``-XX:ArchiveClassesAtExit``), once per test run,
  against a bare session without the archive;
- a bare session (``local[2]``, one group-by) with the archive against without;
- a CLI ``export --format delta`` of 400 records (a test's command run as printed) with against without.

The variants of a pair run at the same time, ``--repeat`` times; the figures are medians.

Usage: PYSPARK_PYTHON=$PWD/.venv/bin/python .venv/bin/python benchmarks/bench_test_jvms.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

from _common import BENCH_TMP, REPO, TableRows, machine, ratio

sys.path.insert(0, str(REPO / "tests"))

import jvm_classes
from logdoctor.spark.session import SHORT_JOB_JAVA_OPTIONS as C1  # the tests' JVMs: C1 only

PR_SET_CHILD_SUBREAPER = 36
BARE = """
from logdoctor.spark.session import get_spark
s = get_spark("local[2]", "bench-test-jvms")
s.range(1000).selectExpr("id % 7 as k").groupBy("k").count().collect()
s.stop()
"""


def tree_cpu(argv: list[str]) -> None:
    """``--tree-cpu CMD...``: run CMD as this process's child, reap every orphan of its tree, print
    ``{"cpu": s, "wall": s, "rc": n}``."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
    start = time.monotonic()
    rc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False).returncode
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"cpu": usage.ru_utime + usage.ru_stime, "wall": time.monotonic() - start, "rc": rc}))


def at_once(runs: dict[str, tuple[list[str], str]]) -> dict[str, float]:
    """Each run (argv, SPARK_SUBMIT_OPTS) in a wrapper of its own, all at once: their CPU seconds."""
    procs = {}
    for name, (argv, opts) in runs.items():
        env = {**os.environ, "SPARK_SUBMIT_OPTS": opts}
        procs[name] = subprocess.Popen(
            [sys.executable, __file__, "--tree-cpu", *argv], env=env, stdout=subprocess.PIPE, text=True
        )
    got = {}
    for name, proc in procs.items():
        out = json.loads(proc.communicate()[0].strip().splitlines()[-1])
        if out["rc"] != 0:
            raise RuntimeError(f"{name}: exit {out['rc']}")
        got[name] = out["cpu"]
    return got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(machine())
    table = TableRows()
    work = BENCH_TMP / "test-jvms"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    archive = work / "spark.jsa"
    with_archive = f"{C1} {jvm_classes.USE.format(archive)}"

    from logdoctor.sample.logdir import TopicSpec, generate_log_dir

    log_dir, _ = generate_log_dir(
        work / "kafka-logs", [TopicSpec("events", partitions=2, records_per_partition=200)]
    )
    dump = [sys.executable, str(REPO / "tests" / "jvm_classes.py")]
    bare = [sys.executable, "-c", BARE]
    made = at_once({"dump": (dump, f"{C1} -XX:ArchiveClassesAtExit={archive}"), "bare": (bare, C1)})
    print(f"dump {made['dump']:.1f} s, bare session {made['bare']:.1f} s (CPU)", flush=True)
    table.add(
        "the tests' archive of Spark's classes, made once per run (tests/jvm_classes.py), CPU",
        f"{made['dump']:.1f} s ({archive.stat().st_size / 2**20:.0f} MiB)",
        f"{made['bare']:.1f} s (a bare session without it)",
        ratio(made["dump"], made["bare"]),
    )
    figures: dict[str, list[float]] = {k: [] for k in ("bare+", "bare", "export+", "export")}
    for i in range(args.repeat):
        got = at_once({"bare+": (bare, with_archive), "bare": (bare, C1)})
        out = work / f"out-{i}"
        export = [
            sys.executable,
            "-m",
            "logdoctor",
            "export",
            str(log_dir),
            "--format",
            "delta",
            "--master",
            "local[2]",
        ]
        got |= at_once(
            {
                "export+": ([*export, "--out", f"{out}+"], with_archive),
                "export": ([*export, "--out", str(out)], C1),
            }
        )
        for k, v in got.items():
            figures[k].append(v)
        print({k: round(v, 1) for k, v in got.items()}, flush=True)
    med = {k: statistics.median(v) for k, v in figures.items()}
    table.add(
        "a test's bare local Spark JVM (session, one group-by) with the run's class archive, CPU",
        f"{med['bare+']:.1f} s",
        f"{med['bare']:.1f} s (without)",
        ratio(med["bare+"], med["bare"]),
    )
    table.add(
        "a test's CLI `export --format delta` of 400 records with the run's class archive, CPU",
        f"{med['export+']:.1f} s",
        f"{med['export']:.1f} s (without)",
        ratio(med["export+"], med["export"]),
    )
    table.print()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--tree-cpu"]:
        tree_cpu(sys.argv[2:])
    else:
        main()
