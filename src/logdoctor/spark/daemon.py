"""Spark's Python worker daemon (``pyspark.daemon``) with a cheap ``importlib.invalidate_caches()``.

Every Python task (each ``kafka-log`` input partition, each planning step of a Python Data Source)
starts with ``pyspark.worker_util.setup_spark_files``, which ends in ``importlib.invalidate_caches()``.
The JVM puts ``$SPARK_HOME/python/lib/pyspark.zip`` and the py4j zip first on the workers'
``PYTHONPATH`` (PythonUtils.sparkPythonPath), so pyspark is imported from the zip and
``sys.path_importer_cache`` holds a ``zipimporter`` for the zip and for every package folder in it
(15 in a worker that has read ``kafka-log``). On Python 3.11 ``zipimporter.invalidate_caches()``
re-reads the archive's whole central directory in pure Python, once per instance: 1,328 entries of
pyspark.zip, 15 times, ~0.27 s of CPU per task on the benchmark machine, more than reading a
34 MB slice of records. Python 3.12 made it lazy (CPython gh-103200: the directory is read again
only when next used, once per archive).

This module is what ``spark.python.daemon.module`` names in the sessions logdoctor builds
(:mod:`logdoctor.spark.session`). Before it runs ``pyspark.daemon``'s manager (which forks the
workers, so they inherit this), on Python < 3.12 it makes ``zipimporter.invalidate_caches`` re-read
an archive only when the file changed (its size or mtime differ from when it was last read); a zip
that did change, or a new one, is read as before. Nothing else of the daemon or workers changes.
"""

from __future__ import annotations

import os
import signal
import sys
import zipimport
from typing import Any

_stamps: dict[str, tuple[tuple[int, int], Any]] = {}  # archive -> ((size, mtime_ns), files as read)


def _stamp(archive: str) -> tuple[int, int] | None:
    try:
        st = os.stat(archive)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def install() -> bool:
    """Patch ``zipimporter.invalidate_caches`` (Python < 3.12 only); True when patched."""
    if sys.version_info >= (3, 12) or getattr(zipimport.zipimporter, "_logdoctor_lazy", False):
        return False
    reread = zipimport.zipimporter.invalidate_caches

    def invalidate_caches(self: Any) -> None:
        archive = self.archive
        stamp = _stamp(archive)
        known = _stamps.get(archive)
        if stamp is not None and known is not None and known[0] == stamp:
            self._files = known[1]  # the archive is as it was when last read: same directory
            return
        reread(self)
        if stamp is not None:
            _stamps[archive] = (stamp, self._files)

    zipimport.zipimporter.invalidate_caches = invalidate_caches  # type: ignore[method-assign]
    zipimport.zipimporter._logdoctor_lazy = True  # type: ignore[attr-defined]
    return True


def install_in_worker() -> bool:
    """:func:`install` when this process is a Python worker forked by ``pyspark.daemon``.

    The planning workers of a Python Data Source (``create_data_source``, ``plan_data_source_read``)
    are started by a daemon the JVM names itself, not ``spark.python.daemon.module``; a reused one
    has imported :mod:`logdoctor.spark.sources` (which calls this) by its second query, and from then
    on skips the re-reads too. A driver or any other process is left alone."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if getattr(spec, "name", None) not in ("pyspark.daemon", __name__, "logdoctor.spark.daemon"):
        return False
    return install()


def main() -> None:
    # A Ctrl-C in the terminal goes to the whole process group, and the JVM starts this daemon in the
    # driver's group: until ``pyspark.daemon.manager`` moves it to a group of its own, a SIGINT would
    # stop it mid-import with a KeyboardInterrupt traceback that the JVM prints under the command's one
    # "interrupted:" line. The gateway JVM PySpark starts ignores SIGINT, and this daemon inherits that
    # from its first instruction (logdoctor.cli.interrupts lets PySpark's preexec_fn do so); a JVM
    # started otherwise (spark-submit from a terminal) may not. The daemon needs no SIGINT (Spark ends it
    # by closing its stdin, or SIGTERM); its forked workers set their own handler (``pyspark.daemon.worker``:
    # ``default_int_handler``).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    install()
    import pyspark.daemon  # reads the worker module from sys.argv[1], as under ``python -m pyspark.daemon``

    pyspark.daemon.manager()


if __name__ == "__main__":
    main()
