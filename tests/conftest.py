from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hypothesis import settings

import jvm_classes
import realworld
import tiers

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

# make test-fast: a property test that names no max_examples tries 25 (hypothesis's default: 100); those
# that name one ask tiers.examples
settings.register_profile("test-fast", max_examples=tiers.examples(100))
if tiers.TEST_FAST:
    if IN_CI:
        raise RuntimeError("LOGDOCTOR_TEST_TIER=fast is make test-fast's: CI (make test) tries every example")
    settings.load_profile("test-fast")
if os.environ.get("LOGDOCTOR_SANITIZED"):
    # make asan-check (scripts/asan-check.sh): every example runs under ASan + UBSan, several times slower,
    # beside the other worker's; hypothesis's deadline (200 ms an example) is a run-time bound, and a
    # sanitized run keeps only the result checks
    settings.register_profile("sanitized", parent=settings.default, deadline=None)
    settings.load_profile("sanitized")

# Every `logdoctor --help` a test starts renders its help with typer, as the tests compare it, and writes
# nothing to the user's cache folder (cli/helpcache.py; tests/cli/test_help_cache.py turns it on in a
# temporary folder of its own)
os.environ["LOGDOCTOR_HELP_CACHE"] = "0"

# Every local Spark JVM the tests start (each worker's session, and each CLI a test runs in a process of its
# own: a kill, a command run as printed) compiles with C1 only, as a short job's does
# (logdoctor.spark.session.SHORT_JOB_JAVA_OPTIONS): a test's Spark job is seconds of small queries, where
# C2's compilations cost more CPU than they save; a CLI export of 400 records took 25 s of CPU against 38 s
# with both tiers (BENCHMARKS.md, "Test suite and demo"). spark-submit, which starts a local driver's JVM,
# adds SPARK_SUBMIT_OPTS to its command line. The JIT tier changes how fast the JVM runs, not what it does.
os.environ["SPARK_SUBMIT_OPTS"] = f"{os.environ.get('SPARK_SUBMIT_OPTS', '')} -XX:TieredStopAtLevel=1".strip()

_realworld_skips: list[str] = []


def pytest_configure(config):
    """The S3 tests' environment (fake credentials, ``AWS_ENDPOINT_URL`` on a reserved port) is set
    here, before any test can start a JVM: Spark's Python workers, where the data sources plan and
    read, get the environment the JVM was started with, and a JVM started earlier by another test
    module (tests/report starts its own session) would never see variables set later."""
    _terminal_as_the_controllers(config)
    sys.path.insert(0, str(Path(__file__).resolve().parent / "spark"))
    from s3server import apply_env, aws_test_env, free_port

    port = free_port()
    config._s3_env_saved = apply_env(aws_test_env(port))  # restored in pytest_unconfigure
    config._s3_port = port
    if not hasattr(config, "workerinput"):  # the controller (or the one process): before any worker starts
        # the run's archive of Spark's classes (tests/jvm_classes.py), named for every JVM of the run
        config._jvm_classes = jvm_classes.name_archive()


_TERMINAL_VARS = ("COLUMNS", "LINES")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist's controller: each worker is told the controller's own ``COLUMNS``/``LINES``."""
    node.workerinput["terminal_env"] = {k: os.environ.get(k) for k in _TERMINAL_VARS}


def _terminal_as_the_controllers(config) -> None:
    """A pytest-xdist worker starts with ``COLUMNS=80 LINES=24`` in its environment, which a one-process
    run does not have in ``os.environ`` (readline, which pytest imports with pdb, exports both to the
    controller's process environment behind ``os.environ``'s back, and a child inherits that; a test that
    starts a process and wants neither passes an ``env`` made of ``os.environ``): logdoctor's text output
    (cli/output.py) then wraps at 80 columns where it would print full lines, and tests reading printed
    commands and table cells see other text. A worker takes
    the controller's values instead (unset where they were unset), so a test sees the same environment
    in a parallel run as in one process."""
    given = getattr(config, "workerinput", {}).get("terminal_env")
    if given is None:
        return
    for key, value in given.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def pytest_unconfigure(config):
    archive = getattr(config, "_jvm_classes", None)
    if archive is not None:
        shutil.rmtree(archive.parent, ignore_errors=True)
    saved = getattr(config, "_s3_env_saved", None)
    if saved is not None:
        from s3server import restore_env

        restore_env(saved)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.skipped and call.excinfo is not None:
        reason = str(call.excinfo.value)
        if reason.startswith("required:") and IN_CI:
            # a stated requirement (Java 17, ...) missing: a skip would hide a test CI must run
            report.outcome = "failed"
            report.longrepr = f"CI must have what this test requires, but it skipped: {reason}"
        if reason.startswith("realworld:"):
            _realworld_skips.append(item.nodeid)
            if IN_CI:
                report.outcome = "failed"
                report.longrepr = f"CI must read ../shared/realworld, but this test skipped: {reason}"


def pytest_sessionfinish(session, exitstatus):
    if IN_CI and not (realworld.available() and realworld.tiered_available()):
        session.exitstatus = 1
        print(f"\nCI: {realworld.SKIP_REASON}; the realworld tests cannot be skipped in CI", file=sys.stderr)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` (make test's): whole modules per worker, the longest first, the modules that
    must not run at the same time on one worker (tests/xdist_modules.py)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist_modules import ModuleScheduling

    return ModuleScheduling(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """In test-fast, the tests over the tier's time budget (tests/tiers.py, ``tests/fast_tier_budget.txt``)
    are marked ``slow`` before ``-m`` deselects; `make test` (CI) never reads the list.

    ``@pytest.mark.needs_root``: a test that gives files to other users (chown) or runs a command
    as another user (setpriv) skips with its reason when not run as root (CI runs as root)."""
    if tiers.TEST_FAST and tiers.BUDGET_ON:
        tiers.apply_budget(items, tiers.over_budget())
    if os.geteuid() == 0:
        return
    reason = "needs root: it gives files to another user or runs as one (chown, setpriv)"
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if item.get_closest_marker("needs_root") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def realworld_dir() -> Path:
    return realworld.require()


@pytest.fixture(scope="session")
def aws_env(pytestconfig):
    """The port reserved for the S3 server: ``pytest_configure`` has put fake AWS credentials and
    ``AWS_ENDPOINT_URL`` on that port in the environment before any JVM started."""
    return pytestconfig._s3_port


@pytest.fixture(scope="session")
def spark(aws_env):
    """One local[2] SparkSession for every test of this pytest process (of each worker in a parallel
    run) that asks for it, tests/spark's and tests/report's: starting one costs ~15 s. Stopped when the
    process's tests end.

    The session's JVM, and so every Python worker it starts, gets the environment of the moment it
    starts: ``pytest_configure`` puts the S3 tests' credentials and endpoint there before any test runs
    (see tests/spark/s3server.py), and this checks that the JVM has them."""
    from logdoctor.spark.session import SparkUnavailableError, get_spark

    # the first session of the run makes the JVMs' archive of Spark's classes beside its own start
    dump = jvm_classes.start_dump()
    try:
        session = get_spark("local[2]", "logdoctor-tests")
    except SparkUnavailableError as exc:  # no Java 17+: say so (CI has one)
        pytest.fail(f"spark: cannot start a local session: {exc}")
    session.conf.set("spark.sql.shuffle.partitions", "2")
    # the JVM (and so every Python worker, where the sources plan and read) must have the S3 endpoint
    jvm_endpoint = session.sparkContext._jvm.java.lang.System.getenv("AWS_ENDPOINT_URL")
    assert jvm_endpoint == f"http://127.0.0.1:{aws_env}", (
        f"the JVM was started without the S3 tests' environment (AWS_ENDPOINT_URL={jvm_endpoint!r})"
    )
    yield session
    session.stop()
    if dump is not None:
        dump.stop()


@pytest.fixture(scope="session")
def demo_fleet(tmp_path_factory: pytest.TempPathFactory):
    """The demo fleet (:func:`logdoctor.sample.fleet.generate_demo_fleet`, dated at the current time),
    generated once per pytest process (per worker in a parallel run) for every test that reads it: the
    census tests, the cluster's census, the report tests. Read only: a test that changes the fleet's files
    works on a copy of them (``shutil.copytree(demo_fleet.root, ...)``)."""
    from logdoctor.sample.fleet import generate_demo_fleet

    return generate_demo_fleet(tmp_path_factory.mktemp("demo-fleet") / "fleet")
