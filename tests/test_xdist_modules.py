"""How ``make test`` hands out the suite (tests/xdist_modules.py), the standalone cluster the cluster
modules share (tests/spark/conftest.py): the order and the fixture's life, without running Spark; and
``make asan-check`` in the same workers (a sanitized run keeps no run-time bound)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tiers
from xdist_modules import LONGEST, _LongestFirst

TESTS = Path(__file__).resolve().parent


def test_an_unnamed_spark_module_is_handed_out_before_unnamed_modules_of_more_tests() -> None:
    """A Spark module of one test not in LONGEST (seconds to a minute a test) went after every unnamed
    module of more tests: last, alone, while the other worker had nothing left to do."""
    queue = _LongestFirst()
    queue["tests/cli/test_many_small.py"] = dict.fromkeys(range(50), False)
    queue["tests/spark/test_one_new_job.py"] = {0: False}
    queue["tests/spark/test_two_new_jobs.py"] = {0: False, 1: False}
    queue[LONGEST[1]] = {0: False}
    queue[LONGEST[0]] = {0: False}
    order = [queue.popitem(last=False)[0] for _ in range(len(queue))]
    assert order == [
        LONGEST[0],
        LONGEST[1],
        "tests/spark/test_two_new_jobs.py",
        "tests/spark/test_one_new_job.py",
        "tests/cli/test_many_small.py",
    ]


FAKE_CLUSTER = '''
import contextlib
import os


@contextlib.contextmanager
def standalone_cluster(work, java_options=""):
    with open(os.environ["CLUSTER_LOG"], "a") as log:
        log.write(f"start:{java_options}\\n")
    try:
        yield "spark://127.0.0.1:1"
    finally:
        with open(os.environ["CLUSTER_LOG"], "a") as log:
            log.write("stop\\n")
'''

USES = '''
import os


def test_{name}_1(standalone_master):
    assert standalone_master == "spark://127.0.0.1:1"
    with open(os.environ["CLUSTER_LOG"], "a") as log:
        log.write("{name}\\n")


def test_{name}_2(standalone_master):
    with open(os.environ["CLUSTER_LOG"], "a") as log:
        log.write("{name}\\n")
'''

NEEDS_NOTHING = '''
import os


def test_other():
    with open(os.environ["CLUSTER_LOG"], "a") as log:
        log.write("other\\n")
'''


def test_the_cluster_modules_share_one_cluster_stopped_after_the_last_that_uses_it(tmp_path: Path) -> None:
    """Two cluster modules in a row (tests/xdist_modules.py's serial group) start one cluster (3 JVMs); it
    is stopped before the next test that does not use it, and a later module that does starts another."""
    suite = tmp_path / "suite"
    suite.mkdir()
    shutil.copy(TESTS / "spark" / "conftest.py", suite / "conftest.py")
    shutil.copy(TESTS / "jvm_classes.py", suite / "jvm_classes.py")
    (suite / "standalone.py").write_text(FAKE_CLUSTER)
    (suite / "test_a.py").write_text(USES.format(name="a"))
    (suite / "test_b.py").write_text(USES.format(name="b"))
    (suite / "test_c.py").write_text(NEEDS_NOTHING)
    (suite / "test_d.py").write_text(USES.format(name="d"))
    (suite / "pytest.ini").write_text("[pytest]\n")
    log = tmp_path / "cluster.log"
    # (no archive of Spark's classes named: tests/jvm_classes.py)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_") and k != "SPARK_SUBMIT_OPTS"}
    env["CLUSTER_LOG"] = str(log)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "--basetemp", str(tmp_path / "base"), str(suite)],
        capture_output=True, text=True, cwd=suite, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # the cluster's JVMs compile with C1 only, as every local JVM of the tests
    start = "start:-XX:TieredStopAtLevel=1"
    expected = [start, "a", "a", "b", "b", "stop", "other", start, "d", "d", "stop"]
    assert log.read_text().split() == expected


SLOW_EXAMPLES = """
import time

from hypothesis import given, settings, strategies as st


@settings(max_examples=2)
@given(st.just(0))
def test_slow_examples(n):
    time.sleep(0.3)
"""


# make-test: hypothesis keeps its deadline (one example, st.just: nothing to shrink, no 100 slow shrinks):
# make test runs it; test-fast the asan-check case, the sanitized profile of tests/conftest.py
@pytest.mark.parametrize(
    "sanitized",
    [pytest.param(False, id="make-test", marks=tiers.marks(False)), pytest.param(True, id="asan-check")],
)
def test_a_sanitized_run_has_no_deadline_per_example(tmp_path: Path, sanitized: bool) -> None:
    """make asan-check runs tests/formats and tests/fuzz under ASan + UBSan in make test's two workers: an
    example several times slower than in make test, beside the other worker's, is no failure there
    (hypothesis's 200 ms deadline failed property tests of tests/formats/test_index.py so, on a loaded
    machine); make test keeps the deadline. Outside CI: with ``CI`` set hypothesis loads its own ``ci``
    profile, which has no deadline."""
    probe = TESTS / f"test_zz_sanitized_probe_{os.getpid()}_{sanitized}.py"
    probe.write_text(SLOW_EXAMPLES)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "LOGDOCTOR_")) and k != "CI"}
    env.update(LOGDOCTOR_REALWORLD=str(tmp_path))
    if sanitized:
        env["LOGDOCTOR_SANITIZED"] = "1"
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
             "--basetemp", str(tmp_path / "base"), str(probe.relative_to(TESTS.parent))],
            cwd=TESTS.parent, env=env, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
    finally:
        probe.unlink()
    if sanitized:
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    else:
        assert done.returncode == 1 and "DeadlineExceeded" in done.stdout, done.stdout[-3000:]


def test_the_modules_asan_check_leaves_out_are_there_and_start_no_process() -> None:
    """make asan-check leaves out the modules of tests/asan_pure_python.txt, measured never to call the C
    extension (scripts/c_reach.py). A module named there must exist under tests/formats or tests/fuzz (the
    script refuses a missing one), and must neither import the extension nor start a process, where a call
    into it would not be seen."""
    listed = [
        line.split()[0]
        for line in (TESTS / "asan_pure_python.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert listed and len(listed) == len(set(listed))
    for name in listed:
        path = TESTS.parent / name
        assert path.is_file() and path.parent.name in ("formats", "fuzz"), name
        source = path.read_text()
        for word in ("_speedups", "formats.native", "subprocess", "Popen", "multiprocessing", "spark"):
            assert word not in source, f"{name} names {word}: keep it in make asan-check"
