"""Issue 59 item 8: an export that meets a partition folder or a .log this user cannot read names each
(with its path and why) before Spark starts, exports every partition it can read, and exits 77
(NO_PERMISSION): it exited 64 (usage) for an unreadable folder, aborting the whole export, and 1 with
Python's text ("last stable offset None", "[Errno 13] ...") for an unreadable .log. Run as the user
'nobody' (setpriv): root reads every file."""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import site
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest
import tables_util as tu

import realworld
from logdoctor.cli.exit_codes import ExitCode

pytestmark = [pytest.mark.spark, pytest.mark.needs_root]

AS_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


@functools.cache
def _python_for_nobody() -> tuple[str, dict[str, str]]:
    """An interpreter the user 'nobody' can start from its own processes (Spark starts the Python
    workers with the driver's), and the environment that gives it this checkout: ``sys.executable``
    itself, else (a venv whose interpreter is under root's 0700 home) the system's Python of the same
    version with the venv's packages on PYTHONPATH."""
    import logdoctor

    src = str(Path(logdoctor.__file__).parents[1])
    paths = [*site.getsitepackages(), sysconfig.get_paths()["purelib"], src]
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    for python, env in (
        (sys.executable, {}),
        (f"/usr/bin/python{version}", {"PYTHONPATH": os.pathsep.join(dict.fromkeys(paths))}),
    ):
        probe = f"{shlex.quote(python)} -c 'import logdoctor.cli.main, pyspark, pyiceberg'"
        done = subprocess.run([*AS_NOBODY, "sh", "-c", probe], capture_output=True, env={**os.environ, **env})
        if done.returncode == 0:
            return python, env
    pytest.skip("required: a Python the user 'nobody' can start with this checkout's packages")


def test_an_export_goes_on_past_what_it_cannot_read_and_names_it() -> None:
    top = Path(tempfile.mkdtemp(prefix="logdoctor-noperm-"))  # not under root's 0700 pytest folders
    try:
        top.chmod(0o755)
        log_dir = realworld.writable_copy(realworld.require() / "zk-3.6-saikrupa82-a", top / "kafka-logs")
        folder = log_dir / "data-stream-0"
        folder.chmod(0o700)  # root's: nobody cannot list it
        log = log_dir / "test-0" / "00000000000000000000.log"
        log.chmod(0o600)  # nobody cannot read it
        work = top / "work"
        work.mkdir(mode=0o777)
        work.chmod(0o777)
        out = work / "table"
        python, env = _python_for_nobody()
        done = subprocess.run(
            [*AS_NOBODY, python, "-m", "logdoctor", "export", str(log_dir), "--out", str(out),
             "--format", "iceberg", "--master", "local[1]"],
            capture_output=True, text=True, cwd=work, timeout=1200,
            env={**os.environ, **env, "HOME": str(work)},
        )  # fmt: skip
        said = done.stdout + done.stderr
        assert done.returncode == ExitCode.NO_PERMISSION, said
        assert (
            f"warning: data-stream-0: not read: {folder}: permission denied: this user cannot list the "
            "folder (run as the broker's user or as root)"
        ) in done.stderr, said
        assert (
            f"warning: test-0: offsets 0 and after not read: {log}: permission denied: this user cannot "
            "read the file (run as the broker's user or as root)"
        ) in done.stderr, said
        for text in ("Errno", "Traceback", "last stable offset None"):
            assert text not in said, said
        for path in (folder, log):  # among the skipped ranges, once each
            assert done.stdout.count(f"skipped: {path} ") == 1, said
        # the partition it could read is in the table, as the format's own library reads it back
        rows = tu.iceberg_table(out).scan().to_arrow()
        assert rows.num_rows > 0 and set(rows.column("topic").to_pylist()) == {"twitter"}
    finally:
        shutil.rmtree(top, ignore_errors=True)
