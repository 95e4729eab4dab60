"""A real S3-compatible server for the tests: moto's server on 127.0.0.1, counting what it serves.

:class:`S3Server` runs moto's WSGI application (``moto[server]``, the app its ``moto_server`` command
serves) in a thread of the test process, behind a middleware that records every request: method,
path, ``Range`` header, status and the bytes of the body sent. A test can so check that a planned
slice fetched only its byte ranges.

Credentials and the endpoint reach logdoctor the way they reach any AWS client: ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_DEFAULT_REGION`` and ``AWS_ENDPOINT_URL`` in the environment. Spark's
Python workers get the environment the JVM was started with, and the tests share one JVM per pytest
process (another test module may start it first), so tests/conftest.py sets :func:`aws_test_env`
(fake credentials, the endpoint on a port reserved for the server, the instance-metadata lookup off)
when pytest starts, before any JVM; the server itself starts when a test first asks for it.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

BUCKET = "logdoctor-test"
REQUIRED = "required: moto[server] (requirements-lock.txt; make env installs it) for the S3 tests"

AWS_TEST_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",  # never ask 169.254.169.254 for credentials
}
_AWS_UNSET = ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def aws_test_env(port: int) -> dict[str, str]:
    """The environment every S3 client of the tests uses: fake credentials, the local endpoint."""
    return {**AWS_TEST_ENV, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"}


def apply_env(env: dict[str, str]) -> dict[str, str | None]:
    """Set ``env`` (and unset AWS profile/session variables) in os.environ; returns what to restore."""
    saved: dict[str, str | None] = {k: os.environ.get(k) for k in (*env, *_AWS_UNSET)}
    for k in _AWS_UNSET:
        os.environ.pop(k, None)
    os.environ.update(env)
    return saved


def restore_env(saved: dict[str, str | None]) -> None:
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@dataclass(frozen=True, slots=True)
class Served:
    method: str
    path: str  # /bucket/key (path-style), unquoted
    range: str | None
    status: int
    body_bytes: int


class _Counting:
    """WSGI middleware: records each request with the body bytes of its response (its Content-Length),
    when the response starts: before the client can have any of it, so a test reads a complete log."""

    def __init__(self, app, log: list[Served], lock: threading.Lock) -> None:
        self.app = app
        self.log = log
        self.lock = lock

    def __call__(self, environ, start_response):
        from urllib.parse import unquote

        method = environ.get("REQUEST_METHOD", "")

        def recording_start(status, headers, exc_info=None):
            length = next((int(v) for k, v in headers if k.lower() == "content-length"), 0)
            with self.lock:
                self.log.append(
                    Served(
                        method,
                        unquote(environ.get("PATH_INFO", "")),
                        environ.get("HTTP_RANGE"),
                        int(str(status).split(" ", 1)[0]),
                        0 if method == "HEAD" else length,
                    )
                )
            return start_response(status, headers, exc_info)

        return self.app(environ, recording_start)


class S3Server:
    """moto's S3 on ``127.0.0.1:port`` in a thread; :attr:`served` lists what it sent."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.endpoint = f"http://127.0.0.1:{port}"
        self._served: list[Served] = []
        self._lock = threading.Lock()
        self._server = None
        self._thread: threading.Thread | None = None

    def start(self) -> S3Server:
        from moto.moto_server.werkzeug_app import (
            DomainDispatcherApplication,
            MotoRequestHandler,
            create_backend_app,
        )
        from werkzeug.serving import make_server

        app = _Counting(DomainDispatcherApplication(create_backend_app), self._served, self._lock)
        self._server = make_server(
            "127.0.0.1", self.port, app, threaded=True, request_handler=MotoRequestHandler
        )
        self._thread = threading.Thread(target=self._server.serve_forever, name="moto-s3", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)

    # --- what was served ----------------------------------------------------------------------------

    def reset(self) -> None:
        with self._lock:
            self._served.clear()

    @property
    def served(self) -> list[Served]:
        with self._lock:
            return list(self._served)

    def gets(self, key_suffix: str = "") -> list[Served]:
        """The GETs of object bodies (not bucket listings) whose key ends with ``key_suffix``."""
        return [
            s
            for s in self.served
            if s.method == "GET" and s.path.count("/") >= 2 and s.path.endswith(key_suffix)
        ]

    # --- data ---------------------------------------------------------------------------------------

    def filesystem(self):
        """A pyarrow S3 file system on this server that may create buckets (for the tests' setup)."""
        from pyarrow import fs

        return fs.S3FileSystem(
            access_key=AWS_TEST_ENV["AWS_ACCESS_KEY_ID"],
            secret_key=AWS_TEST_ENV["AWS_SECRET_ACCESS_KEY"],
            region=AWS_TEST_ENV["AWS_DEFAULT_REGION"],
            endpoint_override=self.endpoint,
            allow_bucket_creation=True,
        )

    def create_bucket(self, bucket: str = BUCKET) -> None:
        self.filesystem().create_dir(bucket)

    def upload(self, local: Path, key: str, bucket: str = BUCKET) -> str:
        """Copy the folder ``local`` to ``s3://bucket/key`` (every file, byte for byte); returns the URI."""
        from pyarrow import fs

        fs.copy_files(
            str(local),
            f"{bucket}/{key}",
            source_filesystem=fs.LocalFileSystem(),
            destination_filesystem=self.filesystem(),
        )
        return f"s3://{bucket}/{key}"


def served_ranges(gets: list[Served]) -> Iterator[tuple[int, int]]:
    """(start, end) byte ranges of GETs with a ``Range: bytes=a-b`` header (end exclusive)."""
    for g in gets:
        if g.range and g.range.startswith("bytes="):
            a = g.range[len("bytes=") :].partition("-")[0]
            start = int(a)
            yield start, start + g.body_bytes
