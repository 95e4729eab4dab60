"""logdoctor.spark.daemon: importlib.invalidate_caches() re-reads a zip on sys.path only when it changed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    sys.version_info >= (3, 12), reason="Python 3.12+ re-reads zips lazily itself"
)

SCRIPT = textwrap.dedent(
    """
    import importlib, os, sys, zipfile, zipimport
    from logdoctor.spark import daemon

    archive = sys.argv[1]
    def write(version):
        with zipfile.ZipFile(archive, "w") as z:
            z.writestr("pkg/__init__.py", "")
            z.writestr("pkg/mod.py", f"VERSION = {version}\\n")
            z.writestr("pkg/padding.txt", "x" * version)  # another size: a changed archive
    write(1)
    sys.path.insert(0, archive)
    import pkg.mod
    reads = []
    real = zipimport._read_directory
    zipimport._read_directory = lambda path: reads.append(path) or real(path)
    assert daemon.install() is True
    assert daemon.install() is False  # once
    importlib.invalidate_caches()
    first = len(reads)
    importlib.invalidate_caches()
    importlib.invalidate_caches()
    unchanged = len(reads) - first
    write(2)
    importlib.invalidate_caches()
    sys.modules.pop("pkg.mod")
    import pkg.mod as again
    print(first, unchanged, again.VERSION)
    """
)


def test_unchanged_zip_is_not_read_again_and_a_changed_one_is(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "lib.zip")], capture_output=True, text=True, check=True
    ).stdout.split()
    first, unchanged, version = map(int, out)
    assert first == 1  # the zip's importers (root and pkg/) share one read
    assert unchanged == 0
    assert version == 2


def test_driver_process_is_left_alone() -> None:
    from logdoctor.spark.daemon import install_in_worker

    assert install_in_worker() is False  # pytest's __main__ is not pyspark.daemon


def test_local_sessions_name_the_daemon_module() -> None:
    from logdoctor.spark.session import _defaults

    assert _defaults(True)["spark.python.daemon.module"] == "logdoctor.spark.daemon"
    assert "spark.python.daemon.module" not in _defaults(False)


def test_the_daemon_ignores_the_terminals_ctrl_c_until_its_workers_set_their_own() -> None:
    """The JVM starts the daemon in the driver's process group: a Ctrl-C reaching it while it imports
    pyspark printed a KeyboardInterrupt traceback under the command's "interrupted:" line (seen in
    tests/spark/test_cli_interrupt.py). The daemon ignores SIGINT from its start; pyspark's forked
    workers set their own handler (``pyspark.daemon.worker``)."""
    probe = textwrap.dedent(
        """
        import signal
        import pyspark.daemon
        from logdoctor.spark import daemon

        seen = []
        pyspark.daemon.manager = lambda: seen.append(signal.getsignal(signal.SIGINT))
        daemon.main()
        print(seen[0] is signal.SIG_IGN)
        """
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True", done.stdout
