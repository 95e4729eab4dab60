"""One archive of the Spark classes a test's JVM loads (the JVM's class data sharing, CDS), made once per
run and mapped by every local Spark JVM the tests start after it is there: a JVM then reads those classes
already parsed and verified instead of loading each from Spark's jars (a bare session's JVM took 8.4 s of
CPU with the archive against 15.5 s without, a CLI `export --format delta` 15.3 s against 20.9 s; making
the archive 46.5 s, once: benchmarks/bench_test_jvms.py).

tests/conftest.py names the archive in ``SPARK_SUBMIT_OPTS`` before any JVM starts (every process of the
run inherits it: the workers, the CLIs a test runs, a pytest a test runs); the first ``spark`` fixture of
the run makes it (:func:`start_dump`), in the background, beside its own session's start. A JVM started
before the archive is there, or one whose class path is not the archive's (a cluster's, one given extra
jars on its class path), runs as without it: the JVM then says nothing (``-Xlog:cds*=off``; it would print
a warning to stdout, where a CLI's JSON goes). The archive changes how fast a JVM loads its classes,
never which classes or what they do.

``python tests/jvm_classes.py``: the job whose JVM writes the archive (:func:`main`).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

#: the JVM options that map the archive ``{}`` and keep the JVM silent when it cannot
USE = "-XX:SharedArchiveFile={} -Xlog:cds*=off"
_NAMED = "-XX:SharedArchiveFile="


def name_archive() -> Path | None:
    """Put a new archive's path (in a new temporary folder) in ``SPARK_SUBMIT_OPTS``; ``None`` when the
    environment names one already (a pytest a test runs uses its parent's)."""
    opts = os.environ.get("SPARK_SUBMIT_OPTS", "")
    if _NAMED in opts:
        return None
    archive = Path(tempfile.mkdtemp(prefix="logdoctor-test-jvm-classes-")) / "spark.jsa"
    os.environ["SPARK_SUBMIT_OPTS"] = f"{opts} {USE.format(archive)}".strip()
    return archive


def named_archive() -> Path | None:
    """The archive ``SPARK_SUBMIT_OPTS`` names, if any."""
    for opt in os.environ.get("SPARK_SUBMIT_OPTS", "").split():
        if opt.startswith(_NAMED):
            return Path(opt[len(_NAMED) :])
    return None


class Dump:
    """The job writing the archive, in a process of its own; the archive is renamed into place whole."""

    def __init__(self, archive: Path) -> None:
        self.archive = archive
        partial = archive.with_name(archive.name + ".partial")
        opts = [o for o in os.environ.get("SPARK_SUBMIT_OPTS", "").split() if not o.startswith(_NAMED)]
        env = {**os.environ, "SPARK_SUBMIT_OPTS": " ".join([*opts, f"-XX:ArchiveClassesAtExit={partial}"])}
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve())],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        self._thread = threading.Thread(target=self._finish, args=(partial,), daemon=True)
        self._thread.start()

    def _finish(self, partial: Path) -> None:
        if self.proc.wait() == 0 and partial.exists():
            partial.rename(self.archive)

    def stop(self) -> None:
        """Ends the job if it is still running (its JVM too: a process group of its own)."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, 9)
            self.proc.wait()
        self._thread.join(timeout=10)


def start_dump() -> Dump | None:
    """Start the job that writes the named archive, unless another process of the run has started it
    (the first to create its lock file does)."""
    archive = named_archive()
    if archive is None or not archive.parent.is_dir():
        return None
    try:
        fd = os.open(archive.with_name(archive.name + ".lock"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except OSError:
        return None
    os.close(fd)
    return Dump(archive)


def main() -> None:
    """A short job of what the tests' JVMs do: a local session with logdoctor's confs and data sources,
    a log dir read, a group-by, a Parquet write and read. Waits for its JVM, which writes the archive as
    it exits."""
    from logdoctor.sample.logdir import TopicSpec, generate_log_dir
    from logdoctor.spark.session import get_spark

    with tempfile.TemporaryDirectory() as tmp:
        log_dir, _ = generate_log_dir(Path(tmp) / "kafka-logs", [TopicSpec("t", partitions=2)])
        spark = get_spark("local[2]", "logdoctor-tests-class-archive")
        frame = spark.read.format("kafka-log").load(str(log_dir))
        frame.groupBy("partition").count().write.parquet(str(Path(tmp) / "out"))
        spark.read.parquet(str(Path(tmp) / "out")).collect()
        jvm = spark.sparkContext._gateway.proc
        spark.stop()
        jvm.stdin.close()  # the JVM exits when its stdin closes, and writes the archive
        jvm.wait()


if __name__ == "__main__":
    main()
