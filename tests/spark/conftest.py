"""A local S3 server for the Spark tests (their ``spark`` and ``aws_env`` fixtures are in
tests/conftest.py, shared with tests/report)."""

from __future__ import annotations

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
