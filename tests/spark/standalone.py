"""A real Spark standalone cluster on 127.0.0.1 from the pinned PySpark: a master and workers.

``spark-class org.apache.spark.deploy.master.Master`` and ``...deploy.worker.Worker`` (one core
each, their own work dirs) run as child processes; :func:`standalone_cluster` yields the master
URL once every worker has registered, and stops them all at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path


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


def _alive_workers(ui_port: int) -> int:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never through a proxy
    with opener.open(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as resp:
        return int(json.load(resp).get("aliveworkers", 0))


@contextlib.contextmanager
def standalone_cluster(work: Path, workers: int = 2, timeout_s: float = 120) -> Iterator[str]:
    """Start a master and ``workers`` workers (1 core, 1 GiB each); yield ``spark://127.0.0.1:PORT``."""
    spark_class = os.path.join(spark_home(), "bin", "spark-class")
    port, ui = free_port(), free_port()
    env = cluster_env()
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

    work.mkdir(parents=True, exist_ok=True)
    master = f"spark://127.0.0.1:{port}"
    try:
        start(
            "master",
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(ui),
            ],
        )
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
                    str(free_port()),
                ],
            )
        deadline = time.monotonic() + timeout_s
        while True:
            dead = [p for p in procs if p.poll() is not None]
            if dead:
                raise RuntimeError(f"a Spark daemon exited early; see the logs in {work}")
            with contextlib.suppress(OSError, ValueError):
                if _alive_workers(ui) >= workers:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the standalone cluster did not come up in {timeout_s} s; logs in {work}")
            time.sleep(0.5)
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
