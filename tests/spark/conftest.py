"""One local[2] SparkSession for every Spark test (starting one costs ~15 s), and a local S3 server.

The session's JVM, and so every Python worker it starts, gets the environment of the moment it starts:
tests/conftest.py's ``pytest_configure`` puts the S3 tests' credentials and endpoint there before any
test runs (see s3server.py), and ``spark`` checks that the JVM has them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(scope="session")
def aws_env(pytestconfig):
    """The port reserved for the S3 server: tests/conftest.py's ``pytest_configure`` has put fake AWS
    credentials and ``AWS_ENDPOINT_URL`` on that port in the environment before any JVM started."""
    return pytestconfig._s3_port


@pytest.fixture(scope="session")
def spark(aws_env):
    from logdoctor.spark.session import SparkUnavailableError, get_spark

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
