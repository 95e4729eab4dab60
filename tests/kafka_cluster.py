"""Real Kafka brokers for the tests: a cluster on 127.0.0.1, started from the jars that
``scripts/ensure-kafka.sh`` installed (``make test`` runs it) into ``.tools/kafka/VERSION/lib``.

Test code, not product code. What it gives a test:

- :class:`KafkaCluster`: N brokers, each with one or more log dirs (JBOD), any configs.
  - KRaft (Kafka 4.x, or 3.x with ``kraft=True``): one node with both roles when ``combined`` (a one-broker
    cluster by default), else a controller of its own (node id 3000) beside the brokers 1..N, so that every
    broker can be stopped while the quorum lives on. Every node's dirs are formatted with Kafka's own
    ``StorageTool`` (static voters).
  - ZooKeeper (1.x-3.x): a ZooKeeper server (the ``zookeeper`` jar Kafka brings) and brokers with
    ``zookeeper.connect``.
- Each :class:`Node` starts, stops cleanly (SIGTERM, as ``kafka-server-stop.sh``), is killed (SIGKILL), is
  started again on the same dirs and ports, and has its own log (``server.log``, INFO) to read and wait on.
- Clients: confluent-kafka (librdkafka) for produce, consume and admin; Kafka's own command-line tools as
  ``kafka-*.sh`` wrappers in ``.tools/kafka/VERSION/bin`` (:func:`kafka_bin`), so that a command logdoctor
  prints runs exactly as printed (:func:`run_printed`).

Every process is started in a session of its own and dies with the test process (``PR_SET_PDEATHSIG``); a
cluster is a context manager, and :func:`stop_all` (atexit) ends what a failed test left running.

Another Kafka: ``LOGDOCTOR_KAFKA_LIBS=/path/to/kafka_2.13-X.Y.Z/libs`` runs every broker test against that
distribution's jars instead of the pinned ones (docs/tests.md).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import os
import pwd
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import uuid
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / ".tools" / "kafka"

NEWEST = "4.4.0"  # the newest 4.x Maven Central serves
EARLIER_4X = "4.3.1"  # an earlier 4.x; its kafka-storage test jar has LocalTieredStorage
ZOOKEEPER_ERA = "3.9.1"  # the field reports' era: ZooKeeper mode
#: brokers that check every index when they load a log (up to 2.2): field report 000's era (1.0.2, the last
#: "no larger than") and the last of them; not in VERSIONS: tests/brokers/test_broker_era_index.py runs them
INDEX_CHECK_ERAS = ("1.0.2", "2.2.2")
VERSIONS = (NEWEST, EARLIER_4X, ZOOKEEPER_ERA)

CONTROLLER_ID = 3000
# every JVM the harness starts: small and quick to start; C1 only (a test's broker lives seconds)
JVM_OPTIONS = [
    "-Xms64m",
    "-Xmx512m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Djava.awt.headless=true",
]
LOG_PATTERN = "[%d] %p %m (%c)%n"

# Kafka's tools by the script name of its distribution's bin/ (the class moved between versions)
TOOL_CLASSES: dict[str, tuple[str, ...]] = {
    "kafka-topics.sh": ("org.apache.kafka.tools.TopicCommand", "kafka.admin.TopicCommand"),
    "kafka-consumer-groups.sh": (
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        "kafka.admin.ConsumerGroupCommand",
    ),
    "kafka-transactions.sh": ("org.apache.kafka.tools.TransactionsCommand",),
    "kafka-log-dirs.sh": ("org.apache.kafka.tools.LogDirsCommand", "kafka.admin.LogDirsCommand"),
    "kafka-dump-log.sh": ("org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments"),
    "kafka-storage.sh": ("kafka.tools.StorageTool",),
    "kafka-configs.sh": ("org.apache.kafka.tools.ConfigCommand", "kafka.admin.ConfigCommand"),
    "kafka-get-offsets.sh": ("org.apache.kafka.tools.GetOffsetShell", "kafka.tools.GetOffsetShell"),
    "kafka-leader-election.sh": ("org.apache.kafka.tools.LeaderElectionCommand",),
    "kafka-producer-perf-test.sh": ("org.apache.kafka.tools.ProducerPerformance",),
    "kafka-reassign-partitions.sh": ("org.apache.kafka.tools.reassign.ReassignPartitionsCommand",),
}


# -- the installed jars ----------


#: a broker config whose transaction coordinator looks for timed-out transactions every second (Kafka's
#: default: 10 s), so that a test waits for its abort a few seconds past the producer's timeout
ABORT_TIMED_OUT_EVERY_SECOND = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": 1000}
#: a small JVM for one of Kafka's own tools run by a test (a producer, a command)
TOOL_JVM = ["java", "-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]


def java_tool(version: str, main: str, *args: str) -> list[str]:
    """The argv of Kafka ``version``'s class ``main`` (``org.apache.kafka.tools.ProducerPerformance``...)
    with ``args``, in :data:`TOOL_JVM`."""
    return [*TOOL_JVM, "-cp", f"{kafka_libs(version)}/*", main, *args]


def kafka_libs(version: str = NEWEST) -> Path:
    """The folder of Kafka ``version``'s jars; the test skips with a ``required:`` reason (a failure in CI)
    when they are not installed."""
    other = os.environ.get("LOGDOCTOR_KAFKA_LIBS")
    if other:
        return Path(other)
    libs = TOOLS / version / "lib"
    if not (TOOLS / version / ".checked").is_file() or not any(libs.glob("kafka-clients-*.jar")):
        pytest.skip(
            f"required: Kafka {version}'s jars in {libs}: run bash scripts/ensure-kafka.sh (make test does)"
        )
    if _java_major() < 17:
        pytest.skip("required: Java 17 or newer on PATH for the test brokers")
    return libs


def libs_version(libs: Path) -> str:
    """The Kafka version of a folder of jars, from its ``kafka-clients`` jar's name."""
    for jar in libs.glob("kafka-clients-*.jar"):
        found = re.fullmatch(r"kafka-clients-(\d+\.\d+\.\d+)\.jar", jar.name)
        if found:
            return found.group(1)
    raise RuntimeError(f"{libs}: no kafka-clients-X.Y.Z.jar")


@functools.cache
def _java_version() -> str:
    """What ``java -version`` of the ``java`` on PATH says (asked once a process: every cluster asks)."""
    try:
        return subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=60).stderr
    except (OSError, subprocess.TimeoutExpired):
        return ""


def _java_major() -> int:
    found = re.search(r'version "(\d+)', _java_version())
    return int(found.group(1)) if found else 0


def _classes(libs: Path) -> set[str]:
    names: set[str] = set()
    for jar in sorted(libs.glob("kafka*.jar")):
        with zipfile.ZipFile(jar) as archive:
            names.update(n[:-6].replace("/", ".") for n in archive.namelist() if n.endswith(".class"))
    return names


def kafka_bin(version: str = NEWEST) -> Path:
    """``.tools/kafka/VERSION/bin``: a ``kafka-*.sh`` for each of :data:`TOOL_CLASSES`, as a Kafka
    distribution's bin/ has them (each runs its class from the installed jars, logging warnings to stderr).
    Written once, atomically, and again when the jars' folder they name moved (a moved or linked checkout);
    put it on ``PATH`` to run a printed ``kafka-transactions.sh ...`` as printed."""
    libs = kafka_libs(version)
    home = (
        libs.parent if not os.environ.get("LOGDOCTOR_KAFKA_LIBS") else TOOLS / f"other-{libs_version(libs)}"
    )
    bin_dir = home / "bin"
    stamp = bin_dir / ".written"
    with contextlib.suppress(OSError):
        if stamp.read_text() == str(libs):
            return bin_dir
    bin_dir.mkdir(parents=True, exist_ok=True)
    classes = _classes(libs)
    log_config = _tools_log_config(home, libs)
    for script, candidates in TOOL_CLASSES.items():
        main = next((c for c in candidates if c in classes), None)
        if main is None:
            continue
        text = (
            "#!/usr/bin/env bash\n"
            f"# Kafka's {script}, as its distribution's bin/ has it: {main} from {libs}\n"
            f"exec java -Xmx512m -XX:TieredStopAtLevel=1 {log_config} -cp '{libs}/*' {main} \"$@\"\n"
        )
        tmp = bin_dir / f".{script}.tmp"
        tmp.write_text(text)
        tmp.chmod(0o755)
        tmp.rename(bin_dir / script)
    stamp.write_text(str(libs))
    return bin_dir


def _is_log4j2(libs: Path) -> bool:
    return any(libs.glob("log4j-core-2*.jar"))


def _log_config(folder: Path, libs: Path, *, level: str, to_file: Path | None) -> str:
    """A logging config for a JVM of ``libs`` (log4j2 from Kafka 4.0, log4j 1 / reload4j before): ``level``
    and up, to ``to_file`` (appended) or stderr; returns the JVM option that names it."""
    folder.mkdir(parents=True, exist_ok=True)
    if _is_log4j2(libs):
        path = folder / ("log4j2-file.properties" if to_file else "log4j2-stderr.properties")
        if to_file:
            appender = f"appender.a.type=File\nappender.a.fileName={to_file}\nappender.a.append=true\n"
        else:
            appender = "appender.a.type=Console\nappender.a.target=SYSTEM_ERR\n"
        path.write_text(
            f"rootLogger.level={level}\nrootLogger.appenderRef.a.ref=A\n{appender}appender.a.name=A\n"
            f"appender.a.layout.type=PatternLayout\nappender.a.layout.pattern={LOG_PATTERN}\n"
        )
        return f"-Dlog4j2.configurationFile={path}"
    path = folder / ("log4j-file.properties" if to_file else "log4j-stderr.properties")
    if to_file:
        appender = (
            "log4j.appender.A=org.apache.log4j.FileAppender\n"
            f"log4j.appender.A.File={to_file}\nlog4j.appender.A.Append=true\n"
        )
    else:
        appender = "log4j.appender.A=org.apache.log4j.ConsoleAppender\nlog4j.appender.A.Target=System.err\n"
    path.write_text(
        f"log4j.rootLogger={level}, A\n{appender}log4j.appender.A.layout=org.apache.log4j.PatternLayout\n"
        f"log4j.appender.A.layout.ConversionPattern={LOG_PATTERN.replace('%n', '%n')}\n"
    )
    return f"-Dlog4j.configuration=file:{path}"


def _tools_log_config(home: Path, libs: Path) -> str:
    return _log_config(home / "config", libs, level="WARN", to_file=None)


# -- class-data sharing ----------

# Most of a Kafka JVM's start is loading and verifying its classes from the jars: a broker at load 23 started
# in 18-24 s, in 8 s with the classes it loaded before mapped from an archive (JDK's AppCDS, JEP 350:
# dynamic archives). One JVM of a kind (main class, jars, options, java) dumps the classes it loaded
# when it exits cleanly (-XX:ArchiveClassesAtExit: a broker's clean stop takes the seconds of the dump);
# the next ones map them (-XX:SharedArchiveFile). An archive the JVM finds stale (other jars) is ignored,
# silently: the JVM loads from the jars as without one (-Xlog:cds*=off: no warning in a tool's output).
# The dump is dear (a tool's run 3-10x its time, a broker's stop 10-26 s at load 18-23): a kind is dumped
# from its third JVM in a process on, so that one a test process runs once or twice never pays for it.
_CDS_DIR = Path(os.environ.get("TMPDIR", "/tmp")) / "logdoctor-test-cds"
_CDS_QUIET = "-Xlog:cds*=off"
_CDS_DUMP_FROM = 3
_cds_runs: dict[Path, int] = {}  # the JVMs of each kind this process started without its archive


@dataclass
class _ClassArchive:
    """The class archive of one kind of JVM; :meth:`options` for a JVM about to start, then
    :meth:`settle` once it exited."""

    path: Path
    dump_to: Path | None = None

    @classmethod
    def of(cls, libs: Path, main: str, options: list[str]) -> _ClassArchive:
        import hashlib

        digest = hashlib.sha256(f"{_java_version()}\0{libs.resolve()}\0{main}\0{options}".encode())
        for jar in sorted(libs.glob("*.jar")):
            st = jar.stat()
            digest.update(f"{jar.name}:{st.st_size}:{st.st_mtime_ns}".encode())
        return cls(_CDS_DIR / f"{main.rsplit('.', 1)[-1]}-{digest.hexdigest()[:20]}.jsa")

    @property
    def _lock(self) -> Path:
        return self.path.with_suffix(".dumping")

    def options(self) -> list[str]:
        """The JVM options: map the archive; or dump it (the kind's third JVM in this process or later, and
        the one of this run's processes that does: a lock file made with O_EXCL, stale after 10 minutes);
        or neither."""
        if self.path.is_file():
            return [f"-XX:SharedArchiveFile={self.path}", _CDS_QUIET]
        _cds_runs[self.path] = _cds_runs.get(self.path, 0) + 1
        if _cds_runs[self.path] < _CDS_DUMP_FROM:
            return []
        _CDS_DIR.mkdir(exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            if time.time() - self._lock.stat().st_mtime > 600:
                self._lock.unlink(missing_ok=True)
        try:
            os.close(os.open(self._lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return []
        self.dump_to = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        return [f"-XX:ArchiveClassesAtExit={self.dump_to}", _CDS_QUIET]

    def settle(self, proc: subprocess.Popen) -> None:
        """After ``proc`` (started with :meth:`options`) exited: the archive it dumped in place (not one a
        kill cut short), the lock released."""
        if self.dump_to is None or proc.poll() is None:
            return
        try:
            if proc.returncode >= 0 and self.dump_to.is_file() and self.dump_to.stat().st_size > 0:
                os.replace(self.dump_to, self.path)
        finally:
            self.dump_to.unlink(missing_ok=True)
            self._lock.unlink(missing_ok=True)
            self.dump_to = None


# -- processes ----------

_started: list[subprocess.Popen] = []


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    os.setsid()
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def spawn(
    argv: list[str],
    *,
    log: Path,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    user: pwd.struct_passwd | None = None,
) -> subprocess.Popen:
    """``argv`` in a session of its own, killed when this process dies, stdout and stderr appended to
    ``log``; as ``user`` (a ``pwd.struct_passwd``) when given: Popen switches user before the death signal is
    set (the switch clears it)."""
    ids = {} if user is None else {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
            preexec_fn=_die_with_parent,
            **ids,
        )
    _started.append(proc)
    return proc


@atexit.register
def stop_all() -> None:
    """Kill every process the harness started that still runs (a failed test's, at the test process's end)."""
    for proc in _started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for proc, archive in _dumping:
        archive.settle(proc)


_dumping: list[tuple[subprocess.Popen, _ClassArchive]] = []  # the JVMs started to dump a class archive


def _settle_dumps() -> None:
    """Each class archive whose dumping JVM exited put in place (or its lock released)."""
    for proc, archive in list(_dumping):
        if proc.poll() is not None:
            archive.settle(proc)
            _dumping.remove((proc, archive))


def _jvm(libs: Path, options: list[str], main: str) -> tuple[list[str], _ClassArchive]:
    """``java OPTIONS <class archive options> -cp LIBS/*`` for ``main``, and its class archive."""
    _settle_dumps()
    archive = _ClassArchive.of(libs, main, options)
    return ["java", *options, *archive.options(), "-cp", f"{libs}/*"], archive


def _track(proc: subprocess.Popen, archive: _ClassArchive) -> None:
    if archive.dump_to is not None:
        _dumping.append((proc, archive))


def run_java(argv: list[str], *, timeout: float = 180.0) -> subprocess.CompletedProcess:
    """``argv`` (``java OPTIONS -cp LIBS/* MAIN ARGS``: :func:`java_tool`'s, a ``kafka-*.sh``'s command)
    run to its end with the class archive of its kind (main class, jars, options), its output captured as
    text."""
    at = argv.index("-cp")
    libs, main = Path(argv[at + 1].removesuffix("/*")), argv[at + 2]
    _settle_dumps()
    archive = _ClassArchive.of(libs, main, argv[1:at])
    with subprocess.Popen(
        [*argv[:at], *archive.options(), *argv[at:]],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    ) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            raise subprocess.TimeoutExpired(argv, timeout, out, err) from None
        finally:
            archive.settle(proc)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


@functools.cache
def _script_java(script: Path) -> tuple[str, ...]:
    """The ``java ... MAIN`` a :func:`kafka_bin` script execs (its arguments after it)."""
    line = next(x for x in script.read_text().splitlines() if x.startswith("exec java "))
    words = shlex.split(line)
    assert words[-1] == "$@", line
    return tuple(words[1:-1])


# Ports for the brokers' listeners: below Linux's ephemeral range (ip_local_port_range, 32768-60999 by
# default), where a port the kernel handed out for a bind to 0 and released may be taken by any client's
# outgoing connection before the broker binds it; each port taken is reserved across the run's processes
# (both pytest-xdist workers start clusters at once) by a file created with O_EXCL.
PORT_RANGE = (20000, 32000)
_PORT_DIR = Path(os.environ.get("TMPDIR", "/tmp")) / "logdoctor-test-ports"


def free_port() -> int:
    """A port on 127.0.0.1 no process listens on, in :data:`PORT_RANGE`, reserved for this process (a
    reservation older than an hour is stale: its test run has ended)."""
    import random

    _PORT_DIR.mkdir(exist_ok=True)
    for _ in range(1000):
        port = random.randrange(*PORT_RANGE)
        mark = _PORT_DIR / str(port)
        with contextlib.suppress(FileNotFoundError):
            if time.time() - mark.stat().st_mtime > 3600:
                mark.unlink(missing_ok=True)
        try:
            os.close(os.open(mark, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue  # in use by another program: left reserved, tried by no one for an hour
        _reserved.append(mark)
        return port
    raise RuntimeError(f"no free port in {PORT_RANGE} after 1000 tries")


_reserved: list[Path] = []


@atexit.register
def _release_ports() -> None:
    for mark in _reserved:
        mark.unlink(missing_ok=True)


class NodeExited(AssertionError):
    """A Kafka process the harness waits on has exited: no use waiting longer."""


def wait_until(what: str, check: Callable[[], object], timeout: float = 60.0, every: float = 0.2) -> object:
    """``check()`` until it returns something true (returned), failing with ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while True:
        try:
            got = check()
            if got:
                return got
        except NodeExited:
            raise  # a process that exited will not start by waiting
        except Exception as exc:
            last_error = exc
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout:.0f} s waiting for {what}"
                + (f" (last error: {last_error!r})" if last_error else "")
            )
        time.sleep(every)


# -- a node ----------


@dataclass
class Node:
    """One Kafka process: a broker, a controller, or both (KRaft's combined mode)."""

    node_id: int
    roles: str  # "broker", "controller", "broker,controller" or "zk-broker"
    folder: Path
    log_dirs: list[Path]
    config: dict[str, str]
    libs: Path
    port: int = 0  # PLAINTEXT (brokers)
    controller_port: int = 0
    proc: subprocess.Popen | None = None
    _log_mark: int = 0
    starts: int = 0

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles

    @property
    def server_log(self) -> Path:
        return self.folder / "server.log"

    @property
    def properties(self) -> Path:
        return self.folder / "server.properties"

    def write_properties(self) -> None:
        lines = [f"{k}={v}" for k, v in self.config.items()]
        self.properties.write_text("\n".join(lines) + "\n")

    def start(self, *, wait: bool = True, timeout: float = 120.0) -> None:
        """Start the process on its dirs and ports (as ``kafka-server-start.sh``); with ``wait``, until its
        log says it started."""
        assert self.proc is None or self.proc.poll() is not None, f"node {self.node_id} runs already"
        self.write_properties()
        self._log_mark = self.server_log.stat().st_size if self.server_log.exists() else 0
        log_option = _log_config(self.folder, self.libs, level="INFO", to_file=self.server_log)
        java, archive = _jvm(self.libs, JVM_OPTIONS, "kafka.Kafka")
        self.proc = spawn(
            [*java, log_option, "kafka.Kafka", str(self.properties)], log=self.folder / "stdout.log"
        )
        _track(self.proc, archive)
        self.starts += 1
        if wait:
            self.wait_started(timeout)

    def wait_started(self, timeout: float = 120.0) -> None:
        """Until the node's log says it started. A ZooKeeper-era broker killed with SIGKILL and started
        again at once finds its old registration (an ephemeral ``/brokers/ids/N``) until ZooKeeper expires
        the dead session (``zookeeper.session.timeout.ms``) and exits with ``NodeExistsException``, as it
        would for an operator: it is started again until the old session is gone."""
        started = re.compile(r"Kafka Server started|\[KafkaServer id=\d+\] started")
        deadline = time.monotonic() + timeout
        while True:
            try:
                wait_until(
                    f"node {self.node_id} to start",
                    lambda: self._alive() and started.search(self.log()),
                    max(1.0, deadline - time.monotonic()),
                )
                return
            except NodeExited:
                log = self.log()  # 1.x says it in words, 2.x+ by the exception
                stale = self.roles == "zk-broker" and (
                    "NodeExistsException" in log or "A broker is already registered" in log
                )
                if not stale or time.monotonic() > deadline:
                    raise
            time.sleep(1.0)
            self.start(wait=False)

    def _alive(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise NodeExited(
                f"node {self.node_id} exited with {self.proc.returncode}; "
                f"the end of its log:\n{self.log()[-4000:]}"
                f"\n{(self.folder / 'stdout.log').read_text(errors='replace')[-2000:]}"
            )
        return True

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 120.0) -> int:
        """A clean stop (SIGTERM, as ``kafka-server-stop.sh``), waited for; the exit code."""
        if not self.running:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"node {self.node_id} did not stop within {timeout} s of SIGTERM") from None
        finally:
            _settle_dumps()

    def kill(self) -> None:
        """SIGKILL: the power cut, the OOM killer (no clean-shutdown marker, nothing flushed)."""
        if self.running:
            self.proc.kill()
            self.proc.wait()
            _settle_dumps()

    def log(self, *, since_start: bool = True) -> str:
        """The node's log since its last start (all of it with ``since_start=False``)."""
        if not self.server_log.exists():
            return ""
        with open(self.server_log, "rb") as f:
            f.seek(self._log_mark if since_start else 0)
            return f.read().decode("utf-8", errors="replace")

    def wait_for_log(self, pattern: str, timeout: float = 120.0) -> re.Match:
        regex = re.compile(pattern)
        return wait_until(  # type: ignore[return-value]
            f"node {self.node_id}'s log to match {pattern!r}",
            lambda: self._alive() and regex.search(self.log()),
            timeout,
        )


# -- a cluster ----------


def _kraft_by_default(version: str) -> bool:
    return int(version.split(".")[0]) >= 4


@dataclass
class KafkaCluster:
    """A Kafka cluster on 127.0.0.1 in ``root``: ``brokers`` brokers with ``log_dirs`` log dirs each."""

    root: Path
    version: str = NEWEST
    brokers: int = 1
    log_dirs: int = 1
    kraft: bool | None = None  # None: KRaft from 4.0, ZooKeeper before
    combined: bool | None = None  # KRaft: one node with both roles (default for one broker)
    # KRaft: a dynamic quorum (KIP-853): the controller formatted ``--standalone`` (a VotersRecord in its
    # bootstrap snapshot), every node given controller.quorum.bootstrap.servers, not controller.quorum.voters;
    # the other controllers formatted ``--no-initial-controllers``: observers until ``add-controller``
    dynamic: bool = False
    # KRaft, not combined: the controllers, node ids CONTROLLER_ID, CONTROLLER_ID + 1, ...
    controllers: int = 1
    broker_config: dict[str, object] = field(default_factory=dict)
    nodes: list[Node] = field(default_factory=list)
    zookeeper: subprocess.Popen | None = None
    zookeeper_port: int = 0
    cluster_id: str = ""

    def __post_init__(self) -> None:
        self.libs = kafka_libs(self.version)
        self.version = libs_version(self.libs)
        if self.kraft is None:
            self.kraft = _kraft_by_default(self.version)
        if self.combined is None:
            self.combined = self.kraft and self.brokers == 1
        self.root.mkdir(parents=True, exist_ok=True)
        self.cluster_id = _kafka_uuid()
        self._plan()

    # the layout and configs

    def _plan(self) -> None:
        replication = min(self.brokers, 3)
        common = {
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "offsets.topic.replication.factor": replication,
            "offsets.topic.num.partitions": 4,
            "transaction.state.log.replication.factor": replication,
            "transaction.state.log.num.partitions": 4,
            "transaction.state.log.min.isr": 1,
            "share.coordinator.state.topic.replication.factor": replication,
            "share.coordinator.state.topic.min.isr": 1,
            "share.coordinator.state.topic.num.partitions": 2,
            "group.initial.rebalance.delay.ms": 0,
            "auto.create.topics.enable": "false",
            "num.partitions": 1,
            "default.replication.factor": replication,
            "num.network.threads": 2,
            "num.io.threads": 2,
            "log.cleaner.threads": 1,
            "num.recovery.threads.per.data.dir": 1,
        }
        controller_port = free_port()
        if self.kraft:
            if self.combined:
                assert self.brokers == 1, "a combined KRaft cluster here has one node"
                voters = f"1@127.0.0.1:{controller_port}"
            else:
                ports = [controller_port, *(free_port() for _ in range(self.controllers - 1))]
                ids = [CONTROLLER_ID + i for i in range(self.controllers)]
                voters = ",".join(f"{n}@127.0.0.1:{p}" for n, p in zip(ids, ports, strict=True))
                for node_id, port in zip(ids, ports, strict=True):
                    name = "controller" if node_id == CONTROLLER_ID else f"controller-{node_id}"
                    folder = self.root / name
                    meta = folder / "metadata"
                    config = {
                        **common,
                        "process.roles": "controller",
                        "node.id": node_id,
                        **self._quorum(voters, controller_port),
                        "listeners": f"CONTROLLER://127.0.0.1:{port}",
                        "controller.listener.names": "CONTROLLER",
                        "log.dirs": meta,
                    }
                    node = Node(node_id, "controller", folder, [meta], _strs(config), self.libs)
                    node.controller_port = port
                    self.nodes.append(node)
        else:
            self.zookeeper_port = free_port()
        for broker_id in range(1, self.brokers + 1):
            folder = self.root / f"broker-{broker_id}"
            dirs = (
                [folder / f"kafka-logs-{i}" for i in range(self.log_dirs)]
                if self.log_dirs > 1
                else [folder / "kafka-logs"]
            )
            port = free_port()
            config: dict[str, object] = {**common, "broker.id" if not self.kraft else "node.id": broker_id}
            config["log.dirs"] = ",".join(str(d) for d in dirs)
            if self.kraft:
                roles = "broker,controller" if self.combined else "broker"
                listeners = f"PLAINTEXT://127.0.0.1:{port}"
                if self.combined:
                    listeners += f",CONTROLLER://127.0.0.1:{controller_port}"
                config.update(
                    {
                        # a broker that leads partitions stops cleanly when a heartbeat's answer says its
                        # controlled shutdown is done: the next heartbeat, 2 s later by default
                        # (BrokerLifecycleManager's PENDING_CONTROLLED_SHUTDOWN); the session timeout stays
                        "broker.heartbeat.interval.ms": 500,
                        "process.roles": roles,
                        **self._quorum(voters, controller_port),
                        "listeners": listeners,
                        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
                        "controller.listener.names": "CONTROLLER",
                        "inter.broker.listener.name": "PLAINTEXT",
                    }
                )
            else:
                roles = "zk-broker"
                config.update(
                    {
                        "zookeeper.connect": f"127.0.0.1:{self.zookeeper_port}",
                        "listeners": f"PLAINTEXT://127.0.0.1:{port}",
                        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
                        "zookeeper.session.timeout.ms": 6000,
                    }
                )
            config.update(self.broker_config)
            self.nodes.append(
                Node(
                    broker_id,
                    roles,
                    folder,
                    dirs,
                    _strs(config),
                    self.libs,
                    port=port,
                    controller_port=controller_port if self.combined else 0,
                )
            )

    def _quorum(self, voters: str, controller_port: int) -> dict[str, str]:
        """How a KRaft node finds the quorum: the voters (static), or where to ask (dynamic, KIP-853)."""
        if self.dynamic:
            return {"controller.quorum.bootstrap.servers": f"127.0.0.1:{controller_port}"}
        return {"controller.quorum.voters": voters}

    @property
    def broker_nodes(self) -> list[Node]:
        return [n for n in self.nodes if n.is_broker]

    def broker(self, broker_id: int) -> Node:
        return next(n for n in self.nodes if n.is_broker and n.node_id == broker_id)

    @property
    def controller(self) -> Node | None:
        return next((n for n in self.nodes if n.roles == "controller"), None)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{n.port}" for n in self.broker_nodes)

    def bootstrap_of(self, nodes: Iterable[Node]) -> str:
        return ",".join(f"127.0.0.1:{n.port}" for n in nodes)

    # start and stop

    def format(self, nodes: Iterable[Node] | None = None, *, initial: bool = True) -> None:
        """Every node's dirs (or ``nodes``') formatted as ``kafka-storage.sh format`` does (KRaft);
        ZooKeeper's data dir. ``initial=False``: a dynamic quorum's controllers formatted as new ones are
        (``--no-initial-controllers``), the first one too. The nodes' StorageTool JVMs run at once (each
        writes its own node's dirs), then each is waited for."""
        running: list[tuple[Node, subprocess.Popen]] = []
        for node in self.nodes if nodes is None else nodes:
            node.folder.mkdir(parents=True, exist_ok=True)
            node.write_properties()
            if not self.kraft:
                continue
            java, archive = _jvm(
                self.libs, ["-Xmx256m", "-XX:TieredStopAtLevel=1"], "kafka.tools.StorageTool"
            )
            proc = subprocess.Popen(
                [
                    *java,
                    _tools_log_config(node.folder, self.libs),
                    "kafka.tools.StorageTool",
                    "format",
                    "-t",
                    self.cluster_id,
                    "-c",
                    str(node.properties),
                    "--ignore-formatted",
                    *(
                        []
                        if not self.dynamic or node.roles != "controller"
                        else ["--standalone"]
                        if initial and node.node_id == CONTROLLER_ID
                        else ["--no-initial-controllers"]
                    ),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                text=True,
                preexec_fn=_die_with_parent,
            )
            _track(proc, archive)
            running.append((node, proc))
        for node, proc in running:
            try:
                out, _ = proc.communicate(timeout=180)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
            _settle_dumps()
            assert proc.returncode == 0, f"StorageTool format of node {node.node_id}: {out}"

    def start(self, timeout: float = 180.0, *, wait: bool = True) -> KafkaCluster:
        """Format (first time), start ZooKeeper or the controller, then every broker at once; wait until
        every broker is registered and unfenced (``wait=False``: the caller does other work, then calls
        :meth:`wait_started`)."""
        if not any(n.starts for n in self.nodes):
            self.format()
        if not self.kraft:
            self.start_zookeeper()
        for node in self.nodes:
            if node.roles == "controller":
                node.start(wait=False)
        for node in self.broker_nodes:
            node.start(wait=False)
        if wait:
            self.wait_started(timeout)
        return self

    def wait_started(self, timeout: float = 180.0) -> None:
        """Until every node's log says it started and every broker is registered and unfenced."""
        for node in self.nodes:
            node.wait_started(timeout)
        self.wait_brokers_registered(self.broker_nodes, timeout)

    def start_zookeeper(self) -> None:
        if self.zookeeper is not None and self.zookeeper.poll() is None:
            return
        folder = self.root / "zookeeper"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "zoo.cfg").write_text(
            f"dataDir={folder / 'data'}\nclientPort={self.zookeeper_port}\nclientPortAddress=127.0.0.1\n"
            "tickTime=2000\nmaxClientCnxns=0\nadmin.enableServer=false\n4lw.commands.whitelist=ruok,stat\n"
        )
        log_option = _log_config(folder, self.libs, level="INFO", to_file=folder / "zookeeper.log")
        self.zookeeper = spawn(
            [
                "java",
                *JVM_OPTIONS,
                log_option,
                "-cp",
                f"{self.libs}/*",
                "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                str(folder / "zoo.cfg"),
            ],
            log=folder / "stdout.log",
        )

        def ruok() -> bool:
            if self.zookeeper.poll() is not None:
                raise AssertionError(f"ZooKeeper exited: {(folder / 'zookeeper.log').read_text()[-3000:]}")
            with socket.create_connection(("127.0.0.1", self.zookeeper_port), timeout=2) as s:
                s.sendall(b"ruok")
                return s.recv(4) == b"imok"

        wait_until("ZooKeeper to answer", ruok, 60)

    def wait_brokers_registered(self, nodes: Iterable[Node], timeout: float = 120.0) -> None:
        """Until the cluster's metadata (from each of ``nodes``) lists every one of ``nodes``."""
        want = {n.node_id for n in nodes}
        if not want:
            return
        for node in nodes:
            admin = self.admin(bootstrap=f"127.0.0.1:{node.port}")

            def listed(admin=admin) -> bool:
                md = admin.list_topics(timeout=5)
                return want <= set(md.brokers)

            wait_until(f"brokers {sorted(want)} registered (asking {node.node_id})", listed, timeout)

    def stop(self, *, kill_controllers: bool = False) -> None:
        """Every broker stopped cleanly, then the controller and ZooKeeper. ``kill_controllers``: the
        controllers killed instead (their dirs lost next, or the test over): of a quorum of several voters
        stopped cleanly, the last one waits out the 5 s graceful-shutdown timeout of its Raft client
        (K:raft/.../raft/KafkaRaftClientDriver.java ``shutdown(5000)``; KafkaRaftClient.maybeCompleteShutdown
        ends it early only for an observer, the only voter, or a voter with a remote leader)."""
        for node in self.broker_nodes:
            if node.running:
                node.proc.send_signal(signal.SIGTERM)
        for node in self.broker_nodes:
            node.stop()
        for node in self.nodes:
            node.kill() if kill_controllers else node.stop()
        if self.zookeeper is not None and self.zookeeper.poll() is None:
            self.zookeeper.terminate()
            self.zookeeper.wait(60)

    def kill(self) -> None:
        for node in self.nodes:
            node.kill()
        if self.zookeeper is not None and self.zookeeper.poll() is None:
            self.zookeeper.kill()
            self.zookeeper.wait()

    def __enter__(self) -> KafkaCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.kill() if exc[0] is not None else self.stop()

    # clients

    def admin(self, bootstrap: str | None = None):
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": bootstrap or self.bootstrap, "socket.timeout.ms": 10000})

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication: int | None = None,
        config: dict[str, object] | None = None,
        *,
        assignment: list[list[int]] | None = None,
    ) -> None:
        from confluent_kafka.admin import NewTopic

        if assignment is not None:
            # confluent-kafka 2.16 takes the partition count with the assignment (not the default -1)
            topic = NewTopic(name, len(assignment), replica_assignment=assignment, config=_strs(config or {}))
        else:
            topic = NewTopic(
                name, partitions, replication or min(len(self.broker_nodes), 3), config=_strs(config or {})
            )
        admin = self.admin()  # kept while its futures are pending: a collected client cancels them
        futures = admin.create_topics([topic], operation_timeout=60)
        futures[name].result(timeout=90)
        wait_until(
            f"topic {name} to have leaders",
            lambda: all(
                p.leader >= 0
                for p in self.admin().list_topics(name, timeout=5).topics[name].partitions.values()
            ),
            60,
        )

    def describe(self, topic: str, bootstrap: str | None = None) -> dict[int, dict[str, object]]:
        """Each partition's leader, replicas and ISR as the cluster's metadata says."""
        md = self.admin(bootstrap).list_topics(topic, timeout=10).topics[topic]
        if md.error is not None:
            raise AssertionError(f"{topic}: {md.error}")
        return {
            p.id: {"leader": p.leader, "replicas": list(p.replicas), "isr": list(p.isrs)}
            for p in md.partitions.values()
        }

    def producer(self, **config: object):
        from confluent_kafka import Producer

        conf = {
            "bootstrap.servers": self.bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
        }
        conf.update({k.replace("_", "."): v for k, v in config.items()})
        return Producer(conf)

    def produce(
        self,
        topic: str,
        records: Iterable[tuple[bytes | None, bytes | None]],
        *,
        partition: int = 0,
        producer=None,
        headers: list | None = None,
        timestamp: int | None = None,
        timestamps: Iterable[int] | None = None,
        **config: object,
    ) -> list[int]:
        """``records`` (key, value) to ``topic``/``partition`` with acks=all; the offsets the broker
        acknowledged, in order (a record that was not acknowledged fails the call). ``timestamp`` is every
        record's CreateTime, ``timestamps`` one per record (else the producer's clock)."""
        assert timestamp is None or timestamps is None
        own = producer is None
        producer = producer or self.producer(**config)
        acked: list[int] = []
        errors: list[str] = []

        def report(err, msg) -> None:
            if err is not None:
                errors.append(str(err))
            else:
                acked.append(msg.offset())

        extra: dict[str, object] = {}
        if headers is not None:
            extra["headers"] = headers
        if timestamp is not None:
            extra["timestamp"] = timestamp
        count = 0
        times = iter(timestamps) if timestamps is not None else None
        for key, value in records:
            if times is not None:
                extra["timestamp"] = next(times)
            while True:
                try:
                    producer.produce(
                        topic, value=value, key=key, partition=partition, on_delivery=report, **extra
                    )
                    break
                except BufferError:
                    producer.poll(0.1)
            count += 1
            producer.poll(0)
        left = producer.flush(120)
        assert not errors and left == 0, (
            f"produce to {topic}-{partition}: {errors[:3]} ({left} not delivered)"
        )
        assert len(acked) == count
        if own:
            del producer
        return acked

    def consume(
        self,
        topic: str,
        partition: int = 0,
        *,
        start: int = 0,
        end: int | None = None,
        isolation: str = "read_committed",
        bootstrap: str | None = None,
        timeout: float = 60.0,
    ) -> list[tuple[int, bytes | None, bytes | None]]:
        """Every record of ``topic``/``partition`` from ``start`` up to ``end`` (exclusive; default the
        partition's end as the consumer sees it), as (offset, key, value)."""
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap or self.bootstrap,
                "group.id": f"logdoctor-test-{uuid.uuid4()}",
                "enable.auto.commit": False,
                "isolation.level": isolation,
                "auto.offset.reset": "earliest",
                "enable.partition.eof": True,
            }
        )
        try:
            if end is None:  # the partition's end once it has a leader (a restarted broker may lead it later)
                end = wait_until(
                    f"{topic}-{partition}'s end offset",
                    lambda: 1 + consumer.get_watermark_offsets(TopicPartition(topic, partition), 10)[1],
                    timeout,
                )
                end -= 1
            consumer.assign([TopicPartition(topic, partition, start)])
            out: list[tuple[int, bytes | None, bytes | None]] = []
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                msg = consumer.poll(1.0)
                if msg is None:
                    continue
                if msg.error() is not None:
                    if msg.error().code() == -191:  # _PARTITION_EOF
                        if msg.offset() >= end:
                            break
                        continue
                    raise AssertionError(f"consume {topic}-{partition}: {msg.error()}")
                if msg.offset() >= end:
                    break
                out.append((msg.offset(), msg.key(), msg.value()))
                if msg.offset() + 1 >= end:
                    break
            return out
        finally:
            consumer.close()

    def tool(
        self, script: str, *args: str, check: bool = True, timeout: float = 180.0
    ) -> subprocess.CompletedProcess:
        """One of Kafka's own tools (``kafka-consumer-groups.sh``, ...) with ``args``: the command its
        script in :func:`kafka_bin` execs, run with a class archive (:func:`run_java`)."""
        done = run_java([*_script_java(kafka_bin(self.version) / script), *args], timeout=timeout)
        if check and done.returncode != 0:
            raise AssertionError(
                f"{script} {shlex.join(args)} exited {done.returncode}: {done.stdout}{done.stderr}"
            )
        return done


def _strs(config: dict[str, object]) -> dict[str, str]:
    return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in config.items()}


def _kafka_uuid() -> str:
    """A random Kafka ``Uuid`` in its base64 form, as ``kafka-storage.sh random-uuid`` prints it: never one
    that starts with ``-`` (K:clients/.../common/Uuid.java randomUuid draws again, since a command line
    would take it for an option)."""
    import base64

    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


@contextlib.contextmanager
def arrivals(bootstrap: str, partitions: Iterable[tuple[str, int]], total: int) -> Iterator[list[float]]:
    """The monotonic times at which the records of ``partitions`` (topic, partition) reach a consumer while
    the body runs: a thread reads them ``read_uncommitted`` (a record is there once its producer sent it,
    before its transaction commits) from offset 0, until ``total`` came (waited for up to 30 s after the
    body)."""
    import threading

    from confluent_kafka import Consumer, TopicPartition

    times: list[float] = []
    stop = threading.Event()
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "arrivals", "isolation.level": "read_uncommitted",
         "enable.auto.commit": False, "fetch.wait.max.ms": 10}
    )  # fmt: skip
    consumer.assign([TopicPartition(t, p, 0) for t, p in partitions])

    def read() -> None:
        while not stop.is_set() and len(times) < total:
            msg = consumer.poll(0.05)
            if msg is not None and msg.error() is None:
                times.append(time.monotonic())

    reader = threading.Thread(target=read)
    reader.start()
    try:
        yield times
        reader.join(30)
    finally:
        stop.set()
        reader.join(5)
        consumer.close()


def read_all(
    bootstrap: str, topic: str, partition: int, isolation: str = "read_committed", *, to_end: bool = False
) -> list[tuple]:
    """Every record of ``topic``/``partition`` a consumer of ``isolation`` reads from offset 0, up to the
    end it sees (the LSO for read_committed; ``to_end``: the high watermark, for librdkafka says EOF after a
    fetch of aborted batches alone too): (offset, key, value, headers, timestamp)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"oracle-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "enable.partition.eof": True,
            "auto.offset.reset": "error",  # never an empty read by a silent reset
        }
    )
    out: list[tuple] = []
    try:
        consumer.assign([TopicPartition(topic, partition, 0)])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            if msg.error() is not None:
                if msg.error().code() == -191:  # _PARTITION_EOF
                    high = consumer.get_watermark_offsets(TopicPartition(topic, partition), 10, cached=False)[
                        1
                    ]
                    if not to_end or msg.offset() >= high:
                        break
                    continue
                raise AssertionError(str(msg.error()))
            out.append((msg.offset(), msg.key(), msg.value(), tuple(msg.headers() or ()), msg.timestamp()[1]))
    finally:
        consumer.close()
    return out


# -- printed commands ----------


def run_printed(
    command: str,
    *,
    version: str = NEWEST,
    cwd: Path | None = None,
    timeout: float = 600.0,
) -> subprocess.CompletedProcess:
    """A command logdoctor printed, run exactly as printed by bash, with ``logdoctor`` (this environment's)
    and Kafka's ``kafka-*.sh`` tools (:func:`kafka_bin`) on ``PATH``, as an operator's shell has them."""
    path = os.pathsep.join(
        [str(Path(sys.executable).parent), str(kafka_bin(version)), os.environ.get("PATH", "")]
    )
    return subprocess.run(
        ["bash", "-c", command],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        env={**os.environ, "PATH": path},
        stdin=subprocess.DEVNULL,
    )


def logdoctor(*args: str, timeout: float = 600.0) -> subprocess.CompletedProcess:
    """``logdoctor ARGS`` in a process of its own (this environment's), with ``os.environ`` as it is: not
    the process environment behind it, where readline may have put ``COLUMNS=80`` (tests/conftest.py) and
    the text output would wrap a printed command over lines."""
    return subprocess.run(
        [sys.executable, "-m", "logdoctor", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ),
        stdin=subprocess.DEVNULL,
    )


def logdoctor_json(*args: str) -> dict:
    import json

    done = logdoctor(*args, "--json")
    assert done.stdout.strip(), (
        f"logdoctor {shlex.join(args)} --json printed nothing (exit {done.returncode}): {done.stderr}"
    )
    return json.loads(done.stdout)


def segments(partition_dir: Path, suffix: str = ".log") -> list[Path]:
    return sorted(partition_dir.glob(f"*{suffix}"))


def iter_files(log_dir: Path) -> Iterator[Path]:
    for path in sorted(log_dir.rglob("*")):
        if path.is_file():
            yield path
