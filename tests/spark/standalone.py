"""A real Spark standalone cluster on 127.0.0.1 from the pinned PySpark: a master and workers.

``spark-class org.apache.spark.deploy.master.Master`` and ``...deploy.worker.Worker`` (one core
each, their own work dirs) run as child processes; :func:`standalone_cluster` yields the master
URL once every worker has registered, and stops them all at the end.

Every daemon binds port 0 and the master's ports are read from its log: a port picked free
beforehand can be taken by another test's server before the daemon binds it (Spark then moves
to the next port, and the cluster would be polled on a stranger's). The master's REST
submission server (a fixed port, 6066) is off.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def spark_home() -> str:
    import pyspark

    return os.path.dirname(pyspark.__file__)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cluster_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for the daemons and for drivers that use the cluster (same Python everywhere)."""
    env = {
        **os.environ,
        "SPARK_HOME": spark_home(),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_NO_DAEMONIZE": "1",
    }
    env.update(extra or {})
    return env


# whole lines only (a port's digits are followed by the line's end): the log may be read mid-write
_MASTER_URL = re.compile(rb"Starting Spark master at (spark://[0-9.]+:[0-9]+)\s")
_MASTER_UI = re.compile(rb"Successfully started service 'MasterUI' on port ([0-9]+)\.")


def _master_ports(log: Path) -> tuple[str, int] | None:
    """The master's URL and web UI port as its log states them, once both are there."""
    text = log.read_bytes()
    url, ui = _MASTER_URL.search(text), _MASTER_UI.search(text)
    if url is None or ui is None:
        return None
    return url.group(1).decode(), int(ui.group(1))


def _alive_workers(ui_port: int) -> int:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never through a proxy
    with opener.open(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as resp:
        return int(json.load(resp).get("aliveworkers", 0))


@contextlib.contextmanager
def standalone_cluster(
    work: Path, workers: int = 2, timeout_s: float = 120, java_options: str = ""
) -> Iterator[str]:
    """Start a master and ``workers`` workers (1 core, 1 GiB each); yield ``spark://127.0.0.1:PORT``.

    ``java_options``: options of every JVM of the cluster, the daemons' and the executors' they start (the
    JVM reads ``JAVA_TOOL_OPTIONS`` from its environment, and a worker starts its executors with its own);
    none by default, as a user's cluster would run."""
    spark_class = os.path.join(spark_home(), "bin", "spark-class")
    extra = {"SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false"}
    if java_options:
        extra["JAVA_TOOL_OPTIONS"] = f"{os.environ.get('JAVA_TOOL_OPTIONS', '')} {java_options}".strip()
    env = cluster_env(extra)
    procs: list[subprocess.Popen[bytes]] = []
    logs = []

    def start(name: str, args: list[str]) -> None:
        log = open(work / f"{name}.log", "wb")  # noqa: SIM115 - closed at the end
        logs.append(log)
        procs.append(
            subprocess.Popen(
                [spark_class, *args], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        )

    def wait_for(what: str, ready: Callable[[], T | None]) -> T:
        while True:
            if any(p.poll() is not None for p in procs):
                raise RuntimeError(f"a Spark daemon exited early; see the logs in {work}")
            with contextlib.suppress(OSError, ValueError, http.client.HTTPException):
                got = ready()
                if got is not None:
                    return got
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not come up in {timeout_s} s; logs in {work}")
            time.sleep(0.5)

    work.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout_s
    try:
        master_class = "org.apache.spark.deploy.master.Master"
        start("master", [master_class, "--host", "127.0.0.1", "--port", "0", "--webui-port", "0"])
        master, ui = wait_for("the standalone master", lambda: _master_ports(work / "master.log"))
        for i in range(workers):
            wdir = work / f"worker-{i}"
            wdir.mkdir(exist_ok=True)
            start(
                f"worker-{i}",
                [
                    "org.apache.spark.deploy.worker.Worker",
                    master,
                    "--host",
                    "127.0.0.1",
                    "--cores",
                    "1",
                    "--memory",
                    "1g",
                    "--work-dir",
                    str(wdir),
                    "--webui-port",
                    "0",
                ],
            )
        wait_for(f"{workers} workers", lambda: True if _alive_workers(ui) >= workers else None)
        yield master
    finally:
        for p in reversed(procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
        for p in reversed(procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=10)
        for log in logs:
            log.close()
