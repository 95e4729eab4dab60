"""A local SparkSession for logdoctor's jobs: quiet, UI off, the same Python on both sides.

The Python Data Sources run their readers in Python worker processes started by the JVM;
they must run the interpreter that has logdoctor installed, hence PYSPARK_PYTHON and
PYSPARK_DRIVER_PYTHON are set to ``sys.executable`` before the JVM starts.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from typing import TYPE_CHECKING

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


def get_spark(
    master: str | None = None,
    app_name: str = "logdoctor",
    *,
    jars: list[str] | None = None,
    delta: bool = False,
) -> SparkSession:
    """Build (or return the running) local SparkSession with logdoctor's data sources registered.

    ``master`` defaults to ``local[*]``. A session that is already running is returned as is
    (Spark allows one per process); its master is whatever it was started with.
    """
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:  # pragma: no cover - pyspark is a pinned dependency of the spark extra
        raise SparkUnavailableError(
            "pyspark is not installed (pip install 'kafka-logdoctor[spark]')"
        ) from exc

    active = SparkSession.getActiveSession()
    if active is not None:
        from logdoctor.spark.sources import register

        register(active)
        return active

    check_java()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    # The JVM prints its own log4j banner before our log level applies; keep it short.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (
        SparkSession.builder.master(master or DEFAULT_MASTER)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.sources.partitionOverwriteMode", "dynamic")
        .config("spark.python.worker.reuse", "true")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{_quiet_log4j_config()}")
    )
    if jars:
        builder = builder.config("spark.jars", ",".join(jars))
    if delta:
        builder = builder.config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension").config(
            "spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"
        )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    from logdoctor.spark.sources import register

    register(spark)
    return spark


def stop_spark() -> None:
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
