"""The SparkSession for logdoctor's jobs: local (quiet, UI off, loopback), a cluster, or spark-submit's.

The Python Data Sources run their readers in Python worker processes started by the JVM;
they must run the interpreter that has logdoctor installed, hence PYSPARK_PYTHON and
PYSPARK_DRIVER_PYTHON are set to ``sys.executable`` before the JVM starts.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

MIN_JAVA_MAJOR = 17  # Spark 4.x needs Java 17 or 21
DEFAULT_MASTER = "local[*]"


class SparkUnavailableError(RuntimeError):
    """Spark cannot start here (no Java, a Java that is too old, or no pyspark)."""


_VERSION = re.compile(r'version "([^"]+)"')


def parse_java_major(version_output: str) -> int | None:
    """The major version from ``java -version`` output (``1.8.0_392`` -> 8, ``17.0.15`` -> 17)."""
    m = _VERSION.search(version_output)
    if m is None:
        m = re.search(r"\b(?:openjdk|java)\s+(\d+(?:\.\d+)*)", version_output)
        if m is None:
            return None
    text = m.group(1)
    parts = re.split(r"[._+-]", text)
    try:
        first = int(parts[0])
        if first == 1 and len(parts) > 1:  # "1.8.0" style
            return int(parts[1])
        return first
    except ValueError:
        return None


def java_executable() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = os.path.join(home, "bin", "java")
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("java")


def check_java() -> int:
    """Return the Java major version, or raise SparkUnavailableError saying what is wrong."""
    java = java_executable()
    if java is None:
        raise SparkUnavailableError(
            f"Spark needs Java {MIN_JAVA_MAJOR} or newer, but no `java` was found on PATH or in JAVA_HOME "
            "(install e.g. Debian's openjdk-17-jre-headless)"
        )
    try:
        proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SparkUnavailableError(f"could not run `{java} -version`: {exc}") from exc
    output = (proc.stderr or "") + (proc.stdout or "")
    major = parse_java_major(output)
    if major is None:
        raise SparkUnavailableError(
            f"could not read the Java version from `{java} -version`: {output.strip()!r}"
        )
    if major < MIN_JAVA_MAJOR:
        raise SparkUnavailableError(
            f"Spark 4 needs Java {MIN_JAVA_MAJOR} or newer, but `{java}` is Java {major}; "
            "set JAVA_HOME to a newer JDK"
        )
    return major


_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def _quiet_log4j_config() -> str:
    """A log4j2 config that prints errors only (written once per process to a temp file)."""
    import tempfile

    path = os.path.join(tempfile.gettempdir(), f"logdoctor-log4j2-{os.getuid()}.properties")
    try:
        with open(path, encoding="utf-8") as fh:
            if fh.read() == _LOG4J2:
                return path
    except OSError:
        pass
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(_LOG4J2)
    os.replace(tmp, path)
    return path


def is_local_master(master: str | None) -> bool:
    """True for ``local``, ``local[N]``, ``local[*]`` and ``local[N,F]`` (one JVM on this host)."""
    m = (master or DEFAULT_MASTER).strip()
    return m == "local" or m.startswith("local[")


def under_spark_submit() -> bool:
    """True when this Python was started by ``spark-submit`` / ``pyspark`` (the JVM is already up).

    PySpark's PythonRunner starts the driver's Python with the Py4J gateway's port and secret in
    the environment (``PYSPARK_GATEWAY_PORT``); ``SparkContext`` then joins that JVM, whose
    SparkConf holds everything ``spark-submit`` was given (master, deploy mode, --conf, --jars).
    """
    return bool(os.environ.get("PYSPARK_GATEWAY_PORT"))


_SCRATCH: str | None = None
_SCRATCH_LOCKS: list[int] = []  # the descriptor of the scratch folder's lock, open for the process's life


#: the scratch folder's lock file: its process holds an exclusive ``flock`` on it for its whole life
SCRATCH_OWNER = "owner.lock"
_SCRATCH_PREFIX = "logdoctor-spark-"


def scratch_dir() -> str:
    """This process's folder for a local Spark's scratch files (``spark.local.dir``: block manager and
    shuffle folders; the JVM's ``java.io.tmpdir``: lz4-java's and snappy-java's native libraries, which
    they extract there at every start): made once, removed when the process exits (every export left
    about 41 ``spark-*``/``blockmgr-*`` paths and ``liblz4-java*.so`` files under /tmp; issue 31).

    A process killed by a signal skips its exit handlers and leaves its folder; the next one to make its
    own removes every such folder (:func:`_sweep_scratch`)."""
    global _SCRATCH
    if _SCRATCH is None:
        import atexit
        import tempfile

        scratch = tempfile.mkdtemp(prefix=_SCRATCH_PREFIX)
        _hold_scratch(scratch)
        _sweep_scratch(os.path.dirname(scratch), keep=scratch)
        _SCRATCH = scratch
        # registered before the session exists, so it runs after PySpark's own exit handlers stop the JVM
        atexit.register(shutil.rmtree, _SCRATCH, True)
    return _SCRATCH


def _hold_scratch(scratch: str) -> None:
    """Lock ``scratch``'s :data:`SCRATCH_OWNER` for this process's life (the descriptor stays open; the
    kernel lets the lock go when the process ends, by any signal). It is locked before it has its name,
    so a sweep never sees it unlocked while its process lives."""
    import fcntl

    fd = os.open(os.path.join(scratch, f".{SCRATCH_OWNER}"), os.O_WRONLY | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.rename(os.path.join(scratch, f".{SCRATCH_OWNER}"), os.path.join(scratch, SCRATCH_OWNER))
    _SCRATCH_LOCKS.append(fd)


def _sweep_scratch(parent: str, keep: str) -> None:
    """Remove every ``logdoctor-spark-*`` folder in ``parent`` whose process has ended: its
    :data:`SCRATCH_OWNER` can be locked (a flock, not a pid: right across PID namespaces and pid reuse).
    A folder with no lock file (its process is making it, or it is someone else's) is left alone."""
    import fcntl

    try:
        entries = [e for e in os.scandir(parent) if e.name.startswith(_SCRATCH_PREFIX) and e.path != keep]
    except OSError:
        return
    for entry in entries:
        try:
            fd = os.open(os.path.join(entry.path, SCRATCH_OWNER), os.O_RDONLY)
        except OSError:  # no lock file (or not ours to read): not ours to judge
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: its process is alive
            os.close(fd)
            continue
        try:
            shutil.rmtree(entry.path, ignore_errors=True)
        finally:
            os.close(fd)


#: the local JVM's options for a short job (:func:`get_spark` ``short_job``): its JIT compiles with C1 only.
#: A job of a few seconds of small queries is Spark's start and Catalyst's first runs of its rules: C2's
#: compilations of that code cost more CPU than they save before the JVM exits (on 2 cores they compete
#: with the job; a small census took 24-28 s against 46-52 s with both tiers, load 12)
SHORT_JOB_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"


def user_without_passwd_entry(scratch: str | None) -> dict[str, str]:
    """The confs (and, set in this process's environment, the variables) a JVM needs when this uid has no
    ``/etc/passwd`` entry, as OpenShift and many Kubernetes setups run containers; {} when it has one.

    Java then reads ``user.home`` and ``user.name`` as ``?`` (issue 75): spark-submit's Ivy setup refuses
    the relative ``?/.ivy2.5.2`` before the driver starts (``MavenUtils.createRepoResolvers``), and Hadoop's
    ``UserGroupInformation`` finds no name for the uid. Given here: the home of ``$HOME`` when it is an
    absolute folder, else the scratch folder; the name of ``$HADOOP_USER_NAME``, ``$USER`` or ``$LOGNAME``,
    else ``uid<N>``; ``HADOOP_USER_NAME`` and ``SPARK_USER`` (which Hadoop's login and Spark's
    ``Utils.getCurrentUserName`` read before the OS); ``spark.jars.ivy`` under that home."""
    import pwd

    try:
        pwd.getpwuid(os.getuid())
        return {}
    except KeyError:
        pass
    home = os.environ.get("HOME", "")
    usable = os.path.isabs(home) and os.path.isdir(home) and os.access(home, os.W_OK)
    if not usable or " " in home:  # a Java option's value: no blanks (the options are split on them)
        import tempfile

        home = scratch or tempfile.gettempdir()
    name = next(
        (v for v in (os.environ.get(k) for k in ("HADOOP_USER_NAME", "USER", "LOGNAME")) if v),
        f"uid{os.getuid()}",
    )
    os.environ.setdefault("HADOOP_USER_NAME", name)
    os.environ.setdefault("SPARK_USER", name)
    props = f"-Duser.home={home} -Duser.name={name}"
    opts = os.environ.get("SPARK_SUBMIT_OPTS", "")
    if "-Duser.home=" not in opts:  # the launcher's own JVM (spark-submit) reads these too
        os.environ["SPARK_SUBMIT_OPTS"] = f"{opts} {props}".strip()
    return {"spark.jars.ivy": os.path.join(home, ".ivy2"), "spark.driver.extraJavaOptions": props}


@contextlib.contextmanager
def _launch_fails_unavailable() -> Iterator[None]:
    """Spark's launcher exiting before its JVM answers (PySpark's ``JAVA_GATEWAY_EXITED``; the JVM's own
    error is on stderr above) as :class:`SparkUnavailableError`: one line and exit 69, not a traceback."""
    try:
        yield
    except Exception as exc:
        condition = getattr(exc, "getCondition", None) or getattr(exc, "getErrorClass", None)
        if condition is None or condition() != "JAVA_GATEWAY_EXITED":
            raise
        raise SparkUnavailableError(
            "Spark's JVM exited before it started (its own error is above: java, its options, a home and a "
            "user name for this uid, a writable temporary folder)"
        ) from None


def _defaults(local: bool, scratch: str | None = None, short_job: bool = False) -> dict[str, str]:
    """logdoctor's conf defaults; loopback pinning only for a ``local[...]`` master; ``scratch``: the
    folder of the local JVM's scratch files (:func:`scratch_dir`), when this process starts the JVM;
    ``short_job``: that JVM's :data:`SHORT_JOB_JAVA_OPTIONS`."""
    conf = {
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "8",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
        "spark.python.worker.reuse": "true",
    }
    if local:
        conf.update(
            {
                # This interpreter runs the workers: its logdoctor has the daemon module, which makes
                # each task's importlib.invalidate_caches() cheap on Python 3.11 (logdoctor.spark.daemon).
                "spark.python.daemon.module": "logdoctor.spark.daemon",
                "spark.ui.enabled": "false",
                # One JVM on this host: keep the driver off the network. On a cluster the
                # executors on other hosts must reach the driver, so nothing is pinned there.
                "spark.driver.bindAddress": "127.0.0.1",
                "spark.driver.host": "127.0.0.1",
                "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{_quiet_log4j_config()}",
            }
        )
        if scratch is not None:
            conf["spark.local.dir"] = scratch
            conf["spark.driver.extraJavaOptions"] += f" -Djava.io.tmpdir={scratch}"
        if short_job:
            conf["spark.driver.extraJavaOptions"] += f" {SHORT_JOB_JAVA_OPTIONS}"
    return conf


def get_spark(
    master: str | None = None,
    app_name: str = "logdoctor",
    *,
    jars: list[str] | None = None,
    conf: Mapping[str, str] | None = None,
    remote: str | None = None,
    sql: bool = True,
    short_job: bool = False,
) -> SparkSession:
    """The SparkSession for logdoctor's jobs, with its data sources registered.

    ``sql=False``, for a job that may need only the SparkContext (``export``'s arrow writer: one RDD job):
    the session this process builds is a :class:`ContextOnly` whose SQL side (the JVM's SparkSession, about
    a third of Spark's start-up here, and the sources) is built on first use; a session given (active,
    spark-submit's, Spark Connect) is returned without the sources registered. Either way
    :func:`logdoctor.spark.sources.register` before a DataFrame reads them.

    ``short_job`` (a job of a few seconds: a small census): a local JVM this process starts gets
    :data:`SHORT_JOB_JAVA_OPTIONS` (no effect on a session given, a cluster's executors, spark-submit's).

    - A session that is already running is returned as is (Spark allows one per process).
    - Under ``spark-submit`` (see :func:`under_spark_submit`) the submitted session is used: its
      master and confs win; logdoctor only fills in defaults the submit did not set, plus ``conf``.
    - Otherwise a session is built with ``master`` (default ``local[*]``). The driver is pinned
      to 127.0.0.1 only for a ``local[...]`` master.
    - ``remote`` (``sc://host:port``) connects to a Spark Connect server instead (the server
      needs logdoctor installed; see docs/cluster.md for what works there).

    ``conf``: Spark confs (``--conf key=value``), applied last so they override the defaults.
    """
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:  # pragma: no cover - pyspark is a pinned dependency of the spark extra
        raise SparkUnavailableError(
            "pyspark is not installed (pip install 'kafka-logdoctor[spark]')"
        ) from exc
    from logdoctor.spark.sources import register as register_sources

    def register(spark: SparkSession) -> None:
        if sql:
            register_sources(spark)

    extra = dict(conf or {})
    if jars:
        extra["spark.jars"] = ",".join([*jars, *filter(None, extra.get("spark.jars", "").split(","))])

    if remote:
        builder = SparkSession.builder.remote(remote).appName(app_name)
        for key, value in extra.items():
            builder = builder.config(key, value)
        try:
            spark = builder.getOrCreate()
        except Exception as exc:  # ImportError of grpc, or the server cannot be reached
            raise SparkUnavailableError(f"cannot connect to Spark Connect at {remote}: {exc}") from exc
        register(spark)
        return spark

    active = SparkSession.getActiveSession()
    if active is not None:
        register(active)
        return active

    if under_spark_submit():
        from pyspark import SparkConf, SparkContext

        # Join the JVM spark-submit started first, so that SparkConf() loads the submitted confs
        # (without a gateway it would be an empty Python-side conf).
        SparkContext._ensure_initialized()
        submitted = SparkConf()
        local = is_local_master(submitted.get("spark.master", master or DEFAULT_MASTER))
        for key, value in _defaults(local).items():
            if not submitted.contains(key):
                submitted.set(key, value)
        for key, value in extra.items():
            submitted.set(key, value)
        if master and not submitted.contains("spark.master"):
            submitted.setMaster(master)
        if not submitted.contains("spark.app.name"):
            submitted.setAppName(app_name)
        spark = SparkSession.builder.config(conf=submitted).getOrCreate()
        register(spark)
        return spark

    check_java()
    master = master or DEFAULT_MASTER
    local = is_local_master(master)
    if local:
        # Local workers are forked by this JVM: they must run this interpreter (logdoctor installed).
        os.environ["PYSPARK_PYTHON"] = sys.executable
        os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    else:
        # On a cluster the workers' Python is theirs to say (PYSPARK_PYTHON, spark.pyspark.python);
        # this interpreter's path is the best guess when nothing says otherwise.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    confs = {**_defaults(local, scratch_dir() if local else None, short_job), **extra}
    for key, value in user_without_passwd_entry(scratch_dir() if local else None).items():
        if key == "spark.driver.extraJavaOptions":
            confs[key] = f"{confs.get(key, '')} {value}".strip()
        else:
            confs.setdefault(key, value)
    if not sql:
        from pyspark import SparkConf, SparkContext

        spark_conf = SparkConf().setMaster(master).setAppName(app_name).setAll(list(confs.items()))
        with _launch_fails_unavailable():
            sc = SparkContext.getOrCreate(spark_conf)
        if local:
            sc.setLogLevel("ERROR")
        return ContextOnly(sc)  # type: ignore[return-value]
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in confs.items():
        builder = builder.config(key, value)
    with _launch_fails_unavailable():
        spark = builder.getOrCreate()
    if local:
        spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


class ContextOnly:
    """A SparkSession whose SQL side is built on first use (:func:`get_spark` with ``sql=False``):
    ``sparkContext`` is there from the start; any other attribute builds the SparkSession on that context
    (once: the confs are the context's, ``spark.sql.*`` included) and is the session's."""

    def __init__(self, sc: Any) -> None:
        self.sparkContext = sc
        self._session: SparkSession | None = None

    def session(self) -> SparkSession:
        if self._session is None:
            from pyspark.sql import SparkSession

            self._session = SparkSession.builder.getOrCreate()
        return self._session

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session(), name)
