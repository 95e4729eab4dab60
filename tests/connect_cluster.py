"""A Kafka Connect worker for the CDC tests: ``ConnectDistributed`` from the installed Kafka's jars
(``.tools/kafka/4.4.0/lib`` has connect-runtime and connect-json), its plugins Debezium's connector plugins
that ``scripts/ensure-debezium.sh`` unpacked into ``.tools/debezium/<plugin>/`` (``plugin.path`` names the
folder that holds the plugin folders), on a broker of :class:`kafka_cluster.KafkaCluster`. Test code.

- :class:`ConnectWorker`: started, killed (SIGKILL, as a crash) and started again on the same group and
  internal topics; connectors are created through the REST API (:meth:`create_connector`), and the test waits
  for them to run (:meth:`wait_running`) and for a topic's first event (:meth:`wait_for_records`).
- Converters: Kafka Connect's ``JsonConverter`` with schemas, for keys and values (the worker's default).
- Plugins are found by their ServiceLoader manifests (``plugin.discovery=service_load``) in a plugin folder of
  the worker's own that links only the plugins it was given: the reflective scan of every jar (Connect's
  default ``hybrid_warn``) took 60 s of each start at load, three starts a module. A plugin whose jars name
  none of their plugin classes in ``META-INF/services`` (:data:`MANIFESTS`) gets a manifest jar beside its
  jars, as Kafka's ``connect-plugin-path.sh sync-manifests`` writes one.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import pytest

import kafka_cluster as kc

PLUGINS = kc.ROOT / ".tools" / "debezium"
POSTGRES_PLUGIN = "debezium-connector-postgres"
MARIADB_PLUGIN = "debezium-connector-mariadb"
APICURIO_CONVERTER_PLUGIN = "apicurio-registry-converter"

#: the plugin classes of a plugin whose jars have no ServiceLoader manifest for them (Debezium's have):
#: plugin folder -> Connect plugin interface -> classes
MANIFESTS: dict[str, dict[str, list[str]]] = {
    APICURIO_CONVERTER_PLUGIN: {
        "org.apache.kafka.connect.storage.Converter": ["io.apicurio.registry.utils.converter.AvroConverter"],
    },
}


def plugin_path(*plugins: str) -> Path:
    """The folder that holds the plugin folders; the test skips with a ``required:`` reason (a failure in
    CI) when a plugin is not installed."""
    if not (PLUGINS / ".checked").is_file() or any(not (PLUGINS / p).is_dir() for p in plugins):
        pytest.skip(
            f"required: Debezium's plugins {', '.join(plugins)} in {PLUGINS}: run bash "
            "scripts/ensure-debezium.sh (make test does)"
        )
    return PLUGINS


def own_plugin_path(folder: Path, *plugins: str) -> Path:
    """``folder``, made one worker's ``plugin.path``: a link to each of ``plugins`` (:func:`plugin_path`), or
    for a plugin of :data:`MANIFESTS` a folder of links to its jars and a jar of its manifests."""
    installed = plugin_path(*plugins)
    folder.mkdir(parents=True, exist_ok=True)
    for plugin in plugins:
        target = folder / plugin
        if target.exists() or target.is_symlink():
            continue
        if plugin not in MANIFESTS:
            target.symlink_to(installed / plugin, target_is_directory=True)
            continue
        target.mkdir()
        for jar in sorted((installed / plugin).glob("*.jar")):
            (target / jar.name).symlink_to(jar)
        with zipfile.ZipFile(target / "logdoctor-test-manifests.jar", "w") as manifests:
            for interface, classes in MANIFESTS[plugin].items():
                manifests.writestr(f"META-INF/services/{interface}", "".join(f"{c}\n" for c in classes))
    return folder


class ConnectWorker:
    """One distributed Kafka Connect worker on 127.0.0.1 (REST on a free port) in ``folder``, on
    ``cluster``'s broker, its plugins from :data:`PLUGINS`."""

    def __init__(
        self, cluster: kc.KafkaCluster, folder: Path, *plugins: str, config: dict[str, object] | None = None
    ):
        self.cluster = cluster
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self.port = kc.free_port()
        self.group = "logdoctor-connect"
        self.config: dict[str, object] = {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": self.group,
            "config.storage.topic": "connect-configs",
            "offset.storage.topic": "connect-offsets",
            "status.storage.topic": "connect-status",
            "config.storage.replication.factor": 1,
            "offset.storage.replication.factor": 1,
            "status.storage.replication.factor": 1,
            "offset.storage.partitions": 1,
            "status.storage.partitions": 1,
            "key.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "key.converter.schemas.enable": "true",
            "value.converter.schemas.enable": "true",
            "plugin.path": own_plugin_path(folder / "plugins", *plugins),
            "plugin.discovery": "service_load",
            "listeners": f"http://127.0.0.1:{self.port}",
            "rest.advertised.host.name": "127.0.0.1",
            "rest.advertised.port": self.port,
            "offset.flush.interval.ms": 1000,
            "scheduled.rebalance.max.delay.ms": 0,
            **(config or {}),
        }
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.folder / "connect.log"

    def start(self, timeout: float = 180.0) -> ConnectWorker:
        """Start the worker (as ``connect-distributed.sh``) and wait until its REST API answers."""
        assert self.proc is None or self.proc.poll() is not None, "the worker runs already"
        properties = self.folder / "connect-distributed.properties"
        properties.write_text("".join(f"{k}={v}\n" for k, v in kc._strs(self.config).items()))
        log_option = kc._log_config(self.folder, self.cluster.libs, level="INFO", to_file=self.log_path)
        argv = [
            "java",
            *kc.JVM_OPTIONS,
            log_option,
            "-cp",
            f"{self.cluster.libs}/*",
            "org.apache.kafka.connect.cli.ConnectDistributed",
            str(properties),
        ]
        self.proc = kc.spawn(argv, log=self.folder / "stdout.log")
        self.starts += 1

        def answers() -> bool:
            if self.proc.poll() is not None:
                raise kc.NodeExited(f"Connect exited {self.proc.returncode}: {self.log_tail()}")
            self.get("/connectors")
            return True

        kc.wait_until("the Connect worker's REST API", answers, timeout, every=0.5)
        return self

    def log_tail(self, chars: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:] if self.log_path.exists() else ""

    def kill(self) -> None:
        """SIGKILL: the worker dies between two offset commits, as in a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> ConnectWorker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.kill() if exc[0] is not None else self.stop()

    # the REST API

    def _call(self, method: str, path: str, body: object | None = None) -> object:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                text = response.read()
        except urllib.error.HTTPError as exc:
            raise AssertionError(
                f"{method} {path}: {exc.code} {exc.read().decode(errors='replace')}"
            ) from None
        return json.loads(text) if text else None

    def get(self, path: str) -> object:
        return self._call("GET", path)

    def create_connector(self, name: str, config: dict[str, object]) -> None:
        """PUT the connector's config (creates it, or changes it), retried while the worker is still joining
        its group (409: a rebalance is in progress)."""

        def put() -> bool:
            self._call("PUT", f"/connectors/{name}/config", {k: str(v) for k, v in config.items()})
            return True

        kc.wait_until(f"connector {name} created", put, 120, every=1.0)

    def status(self, name: str) -> dict:
        return self.get(f"/connectors/{name}/status")  # type: ignore[return-value]

    def wait_running(self, name: str, timeout: float = 180.0) -> None:
        """Until the connector and each of its tasks is RUNNING; a FAILED one fails at once with its trace."""

        def running() -> bool:
            if self.proc.poll() is not None:
                raise kc.NodeExited(f"Connect exited {self.proc.returncode}: {self.log_tail()}")
            status = self.status(name)
            states = [status["connector"], *status.get("tasks", [])]
            for state in states:
                if state["state"] == "FAILED":
                    raise kc.NodeExited(f"{name} FAILED: {state.get('trace', '')[:4000]}")
            return bool(status.get("tasks")) and all(s["state"] == "RUNNING" for s in states)

        kc.wait_until(f"connector {name} RUNNING", running, timeout, every=0.5)

    def wait_for_records(self, topic: str, count: int = 1, timeout: float = 180.0) -> list[tuple]:
        """Until ``topic`` (partition 0) holds at least ``count`` records (its first event, by default);
        they are returned: (offset, key, value, headers, timestamp)."""
        from confluent_kafka import Consumer, TopicPartition

        def enough() -> bool:
            if self.proc is not None and self.proc.poll() is not None:
                raise kc.NodeExited(f"Connect exited {self.proc.returncode}: {self.log_tail()}")
            consumer = Consumer({"bootstrap.servers": self.cluster.bootstrap, "group.id": "logdoctor-probe"})
            try:
                metadata = consumer.list_topics(topic, timeout=5).topics[topic]
                if metadata.error is not None:
                    return False
                high = consumer.get_watermark_offsets(TopicPartition(topic, 0), 5, cached=False)[1]
            finally:
                consumer.close()
            return high >= count

        kc.wait_until(f"{count} records in {topic}", enough, timeout, every=0.5)
        return kc.read_all(self.cluster.bootstrap, topic, 0)

    def wait_caught_up(
        self, topics: list[str], settle: float = 3.0, timeout: float = 180.0
    ) -> dict[str, int]:
        """Until the end offsets of ``topics`` stay the same for ``settle`` seconds (the connector has
        written what the database had): those end offsets."""
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer({"bootstrap.servers": self.cluster.bootstrap, "group.id": "logdoctor-probe"})
        try:
            last: dict[str, int] = {}
            since = time.monotonic()
            deadline = since + timeout
            while time.monotonic() < deadline:
                ends = {}
                for topic in topics:
                    md = consumer.list_topics(topic, timeout=5).topics[topic]
                    ends[topic] = (
                        -1
                        if md.error is not None
                        else consumer.get_watermark_offsets(TopicPartition(topic, 0), 5, cached=False)[1]
                    )
                if ends != last:
                    last, since = ends, time.monotonic()
                elif time.monotonic() - since >= settle:
                    return ends
                time.sleep(0.3)
            raise AssertionError(f"{topics} still growing after {timeout} s: {last}")
        finally:
            consumer.close()
