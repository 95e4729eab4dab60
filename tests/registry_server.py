"""A real schema registry for the tests: Apicurio Registry, the runnable Quarkus build that
``scripts/ensure-apicurio.sh`` installed (``make test`` runs it) into ``.tools/apicurio/VERSION``.

Test code, not product code. :class:`ApicurioRegistry` runs ``java -jar quarkus-run.jar`` on 127.0.0.1 with
free ports (:func:`kafka_cluster.free_port`: the HTTP API and Quarkus's management interface, where
``/health/ready`` is), either in memory (``apicurio.storage.kind=sql`` on its embedded H2, the default) or
with KafkaSQL storage on a real broker of :mod:`kafka_cluster` (``kafkasql=BOOTSTRAP``): every write then goes
to the journal topic (``apicurio.kafkasql.topic``, ``kafkasql-journal`` by default) and the registry is ready
once it has read its journal back (its ``Bootstrap`` record: app/.../storage/impl/kafkasql/
KafkaSqlRegistryStorage.java ``processRecord``). It starts, stops cleanly (SIGTERM) and starts again on the
same ports; a KafkaSQL registry started again replays its journal from the broker.

Confluent's clients talk to :attr:`ApicurioRegistry.ccompat` (``/apis/ccompat/v7``, Apicurio's
Confluent-compatible API); :meth:`ApicurioRegistry.get` asks it (or Apicurio's own ``/apis/registry/v3``)
directly. Apicurio needs Java 21 or newer; :func:`java21` finds one where ``ensure-apicurio.sh`` looks.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import re
import signal
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kafka_cluster import ROOT, NodeExited, free_port, spawn, wait_until

VERSION = "3.3.3"
HOME = ROOT / ".tools" / "apicurio" / VERSION
JOURNAL_TOPIC = "kafkasql-journal"  # KafkaSqlConfiguration.java: apicurio.kafkasql.topic's default
# a request's bound, seconds: a KafkaSQL write waits at most 30 s for its journal record read back
# (KafkaSqlConfiguration.java apicurio.kafkasql.coordinator.response-timeout) and then answers an error
REQUEST_TIMEOUT = 45
CLIENT_TIMEOUT = 20  # ApicurioRegistry.client's: sent again when it passes

# small and quick to start, as the test brokers' JVMs (kafka_cluster.JVM_OPTIONS): the registry lives seconds
JVM_OPTIONS = [
    "-Xms64m",
    "-Xmx384m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Djava.awt.headless=true",
]


def _java_major(java: str) -> int:
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    found = re.search(r'version "(\d+)', done.stderr)
    return int(found.group(1)) if found else 0


def java21() -> str:
    """A ``java`` of version 21 or newer, in the places ``scripts/ensure-apicurio.sh`` looks
    (``LOGDOCTOR_JAVA21``, ``JAVA_HOME``, ``PATH``, ``/usr/lib/jvm/*``, ``/opt/*``); the test skips with a
    ``required:`` reason (a failure in CI) when there is none."""
    import shutil

    candidates = [os.environ.get("LOGDOCTOR_JAVA21", "")]
    if os.environ.get("JAVA_HOME"):
        candidates.append(os.path.join(os.environ["JAVA_HOME"], "bin", "java"))
    candidates.append(shutil.which("java") or "")
    candidates += sorted(glob.glob("/usr/lib/jvm/*/bin/java")) + sorted(glob.glob("/opt/*/bin/java"))
    candidates += sorted(glob.glob("/opt/*/*/bin/java"))
    for java in candidates:
        if java and os.access(java, os.X_OK) and _java_major(java) >= 21:
            return java
    pytest.skip(
        f"required: Java 21 or newer for Apicurio Registry {VERSION} (none in JAVA_HOME, PATH, /usr/lib/jvm)"
    )


def installed() -> Path:
    """``.tools/apicurio/VERSION``; the test skips with a ``required:`` reason when it is not installed."""
    if not (HOME / ".checked").is_file() or not (HOME / "quarkus-run.jar").is_file():
        pytest.skip(
            f"required: Apicurio Registry {VERSION} in {HOME}: run bash scripts/ensure-apicurio.sh "
            "(make test does)"
        )
    return HOME


class RegistryError(AssertionError):
    """The registry answered a request with an HTTP error: ``status`` and Apicurio's error body."""

    def __init__(self, status: int, body: str, what: str) -> None:
        self.status = status
        self.body = body
        super().__init__(f"{what}: HTTP {status}: {body[:500]}")


@dataclass
class ApicurioRegistry:
    """Apicurio Registry in ``folder``: in memory, or on the journal topic ``topic`` of the broker(s)
    ``kafkasql`` (a bootstrap list). ``config``: more ``-D`` settings."""

    folder: Path
    kafkasql: str | None = None
    topic: str = JOURNAL_TOPIC
    config: dict[str, str] = field(default_factory=dict)
    port: int = 0
    management_port: int = 0
    proc: subprocess.Popen | None = None
    starts: int = 0
    _log_mark: int = 0

    def __post_init__(self) -> None:
        self.home = installed()
        self.java = java21()
        self.folder.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        self.management_port = self.management_port or free_port()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ccompat(self) -> str:
        """The Confluent-compatible API's root, for confluent-kafka's ``SchemaRegistryClient``."""
        return f"{self.url}/apis/ccompat/v7"

    @property
    def log_path(self) -> Path:
        return self.folder / "registry.log"

    def settings(self) -> dict[str, str]:
        out = {
            "quarkus.http.host": "127.0.0.1",
            "quarkus.http.port": str(self.port),
            "quarkus.management.host": "127.0.0.1",
            "quarkus.management.port": str(self.management_port),
            # the web console is another application; no usage data leaves the machine
            "apicurio.ui.enabled": "false",
            "quarkus.otel.enabled": "false",
            # no scheduled jobs: the orphaned-content reaper (storage/OrphanedContentReaper.java, first run 60
            # s after the start, hourly after) deletes content rows no version holds on each replica by
            # itself, bypassing the journal (KafkaSqlRegistryStorage.java deleteAllOrphanedContent), so that a
            # schema registered again after it ran gets another content id than a replay of the journal gives:
            # the ids would depend on when the test ran
            "quarkus.scheduler.enabled": "false",
        }
        if self.kafkasql:
            out.update(
                {
                    "apicurio.storage.kind": "kafkasql",
                    "apicurio.kafkasql.bootstrap.servers": self.kafkasql,
                    "apicurio.kafkasql.topic": self.topic,
                    # the journal and snapshots consumers wait a poll timeout at each step of the start
                    # (KafkaSqlRegistryStorage.java consumeSnapshotsTopic): 5 s by default
                    "apicurio.kafkasql.consumer.poll.timeout": "300",
                    # the snapshots and events topics are named after the journal's, so that two registries
                    # on one cluster keep apart
                    "apicurio.kafkasql.snapshots.topic": f"{self.topic}-snapshots",
                    "apicurio.events.kafka.topic": f"{self.topic}-events",
                }
            )
        out.update(self.config)
        return out

    def start(self, *, wait: bool = True, timeout: float = 120.0) -> ApicurioRegistry:
        assert not self.running, "the registry runs already"
        self._log_mark = self.log_path.stat().st_size if self.log_path.exists() else 0
        argv = [self.java, *JVM_OPTIONS, *(f"-D{k}={v}" for k, v in self.settings().items())]
        argv += ["-jar", str(self.home / "quarkus-run.jar")]
        # its working dir is its own folder: KafkaSQL's snapshots go to apicurio.storage.snapshot.location ./
        self.proc = spawn(argv, log=self.log_path, cwd=self.folder, env=dict(os.environ))
        self.starts += 1
        if wait:
            self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float = 120.0) -> None:
        """Until ``/health/ready`` on the management port says UP (KafkaSQL: its journal read back)."""

        def ready() -> bool:
            self._alive()
            with urllib.request.urlopen(
                f"http://127.0.0.1:{self.management_port}/health/ready", timeout=5
            ) as r:
                return r.status == 200 and json.loads(r.read()).get("status") == "UP"

        wait_until(f"Apicurio Registry on port {self.port} to be ready", ready, timeout, every=0.25)

    def _alive(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            raise NodeExited(f"Apicurio Registry exited with {self.proc.returncode}: {self.log()[-4000:]}")

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 60.0) -> int:
        """A clean stop (SIGTERM), waited for; the exit code."""
        if not self.running:
            return self.proc.returncode if self.proc else 0
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"Apicurio Registry did not stop within {timeout} s of SIGTERM") from None

    def kill(self) -> None:
        if self.running:
            assert self.proc is not None
            self.proc.kill()
            self.proc.wait()

    def restart(self, timeout: float = 120.0) -> ApicurioRegistry:
        self.stop()
        return self.start(timeout=timeout)

    def __enter__(self) -> ApicurioRegistry:
        return self.start() if not self.running else self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(AssertionError):
            self.stop()
        self.kill()

    def log(self) -> str:
        if not self.log_path.exists():
            return ""
        with open(self.log_path, "rb") as f:
            f.seek(self._log_mark)
            return f.read().decode("utf-8", errors="replace")

    # -- HTTP ----------

    def request(self, method: str, path: str, body: Any = None, *, base: str | None = None) -> Any:
        """``method`` on ``base`` (default :attr:`ccompat`) + ``path``; the answer's JSON (None when empty).
        An HTTP error raises :class:`RegistryError`."""
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/vnd.schemaregistry.v1+json"
        req = urllib.request.Request(
            f"{base or self.ccompat}{path}", data=data, method=method, headers=headers
        )
        try:
            with urllib.request.urlopen(req, timeout=REQUEST_TIMEOUT) as r:
                text = r.read().decode()
        except urllib.error.HTTPError as exc:
            raise RegistryError(exc.code, exc.read().decode(errors="replace"), f"{method} {path}") from None
        return json.loads(text) if text.strip() else None

    def get(self, path: str, *, base: str | None = None) -> Any:
        return self.request("GET", path, base=base)

    def client(self, **conf: Any):
        """confluent-kafka's ``SchemaRegistryClient`` on :attr:`ccompat`, each request bounded by
        :data:`CLIENT_TIMEOUT` and sent again when it passes (the client's ``max.retries``, 3). Without a
        ``timeout`` the client gives httpx none, and Apicurio 3.3.3 on a loaded machine now and then logs its
        answer (a 404 of ``/associations/resources/...``, which confluent-kafka 2.16's serializers ask before
        registering) and never sends it: the request then waits until Quarkus closes the idle connection
        (``quarkus.http.idle-timeout``, 30 minutes) and the client sends it again. One CI run's module waited
        those 30 minutes (here too, once: 1,854 s against 35-55 s). Measured here against one KafkaSQL
        registry, a request of each kind in turn for 7 minutes: 17 of 38,622 such 404s never sent, none of
        115,866 registrations, subject listings and 404s of a subject (an answer of Apicurio's own, not of its
        router). Every request the tests send this way can be sent twice: reads, and registrations (the same
        schema under the same subject: the same id and version). ``conf``: more settings."""
        from confluent_kafka.schema_registry import SchemaRegistryClient

        return SchemaRegistryClient({"url": self.ccompat, "timeout": CLIENT_TIMEOUT, **conf})
