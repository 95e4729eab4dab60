"""A local S3 server for the Spark tests (their ``spark`` and ``aws_env`` fixtures are in
tests/conftest.py, shared with tests/report), and the standalone cluster the cluster modules share."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(scope="session")
def s3(aws_env):
    """moto's S3 server on the reserved port, with the test bucket (s3server.BUCKET) created."""
    from s3server import REQUIRED, S3Server

    try:
        import moto.moto_server.werkzeug_app  # noqa: F401
    except ImportError:
        pytest.skip(REQUIRED)
    server = S3Server(aws_env).start()
    server.create_bucket()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def small_census_confs(spark):
    """The worker's session with a small census's SQL confs (census.SMALL_FLEET_CONFS: one task per shuffle,
    no adaptive execution, no broadcast joins, expressions interpreted) for a module whose censuses of a
    few inventories take the big path (census_agree.census_of_inventories makes them so; a few local
    inventories are a small census of their own, census.small_inputs), which runs with the session's own
    confs: half the jobs and about 0.6x the JVM's CPU (an inventory census of one log dir, 54 jobs -> 28).
    The tables are the same with any number of partitions and either execution mode; the census of a big
    fleet's inventories with the session's own confs stays tested
    (test_census_rules_fleet.py, test_census.py's census of the executors). Put back after the module."""
    from logdoctor.spark.census import SMALL_FLEET_CONFS
    from logdoctor.spark.census_inputs import session_confs

    with session_confs(spark, SMALL_FLEET_CONFS):
        yield


class _SharedCluster:
    """One standalone cluster (standalone.py: a master and 2 one-core workers, 3 JVMs) for the tests of
    every module that asks for ``standalone_master``: started by the first, stopped after the last test
    that uses it when the next test does not (the cluster modules form one serial group,
    tests/xdist_modules.py, so they run one after the other on one worker), and at the end of the run."""

    def __init__(self) -> None:
        self._stack: contextlib.ExitStack | None = None
        self.url: str | None = None

    def start(self, work: Path) -> str:
        from standalone import standalone_cluster

        import jvm_classes
        from logdoctor.spark.session import SHORT_JOB_JAVA_OPTIONS

        if self._stack is None:
            with contextlib.ExitStack() as stack:
                # C1 only (a short job's JIT), as every local JVM of the tests (tests/conftest.py's
                # SPARK_SUBMIT_OPTS): the master, the workers and the executors of the tests' short jobs;
                # and the run's archive of Spark's classes when it is there (the daemons and executors
                # have the drivers' class path)
                java_options = SHORT_JOB_JAVA_OPTIONS
                archive = jvm_classes.named_archive()
                if archive is not None and archive.exists():
                    java_options += " " + jvm_classes.USE.format(archive)
                cluster = standalone_cluster(work, java_options=java_options)
                self.url = stack.enter_context(cluster)
                self._stack = stack.pop_all()
        assert self.url is not None
        return self.url

    def stop(self) -> None:
        stack, self._stack, self.url = self._stack, None, None
        if stack is not None:
            stack.close()


_CLUSTER = _SharedCluster()


@pytest.fixture
def standalone_master(tmp_path_factory: pytest.TempPathFactory) -> str:
    """``spark://127.0.0.1:PORT`` of the shared standalone cluster (started on first use: ~10-30 s)."""
    if _CLUSTER.url is None:
        return _CLUSTER.start(tmp_path_factory.mktemp("standalone"))
    return _CLUSTER.url


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    if _CLUSTER.url is not None and (nextitem is None or "standalone_master" not in nextitem.fixturenames):
        _CLUSTER.stop()


def pytest_sessionfinish(session: pytest.Session) -> None:
    _CLUSTER.stop()
