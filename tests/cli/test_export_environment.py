"""Issue 75 items 9 and 10: ``export`` where its environment refuses it. A uid with no /etc/passwd entry (as
OpenShift and many Kubernetes setups run containers: Java's ``user.home`` is then ``?``, and spark-submit's
Ivy setup refused ``?/.ivy2.5.2``) exports; a launcher that still exits is one line and 69. An ``--out`` on
a read-only file system (a bind mount in a private mount namespace) is one line and 73, as a full disk is
(tests/spark/test_export_full_disk.py); in a folder this uid may not write, one line and 77. Real uids
(setpriv), a real read-only mount: nothing is simulated."""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
import site
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from logdoctor.sample.logdir import TopicSpec, generate_log_dir

pytestmark = pytest.mark.spark

UID = 12345  # no /etc/passwd entry
MAIN = "import sys; from logdoctor.cli.main import main; sys.argv[0] = 'logdoctor'; main()"
RECORDS = 300


def _as_uid() -> list[str]:
    return ["setpriv", f"--reuid={UID}", f"--regid={UID}", "--clear-groups"]


def _python_for_uid() -> tuple[str, dict[str, str]]:
    """An interpreter the uid can start with this checkout's packages: ``sys.executable``, else (a venv
    whose interpreter is under root's 0700 home) the system's Python of the same version with the venv's
    packages on PYTHONPATH."""
    import logdoctor

    src = str(Path(logdoctor.__file__).parents[1])
    paths = [*site.getsitepackages(), sysconfig.get_paths()["purelib"], src]
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    for python, env in (
        (sys.executable, {}),
        (f"/usr/bin/python{version}", {"PYTHONPATH": os.pathsep.join(dict.fromkeys(paths))}),
    ):
        probe = f"{shlex.quote(python)} -c 'import logdoctor.cli.main, pyspark'"
        done = subprocess.run([*_as_uid(), "sh", "-c", probe], capture_output=True, env={**os.environ, **env})
        if done.returncode == 0:
            return python, env
    pytest.skip("required: a Python the uid 12345 can start with this checkout's packages")


@pytest.fixture(scope="module")
def top() -> Iterator[Path]:
    """A folder every uid reaches (not under pytest's root-only tmp folders) with a small log dir."""
    folder = Path(tempfile.mkdtemp(prefix="logdoctor-env-"))
    folder.chmod(0o755)
    generate_log_dir(folder / "fleet", [TopicSpec("orders", partitions=1, records_per_partition=RECORDS)])
    for dirpath, _, files in os.walk(folder):
        os.chmod(dirpath, 0o755)
        for f in files:
            os.chmod(os.path.join(dirpath, f), 0o644)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _log_dir(top: Path) -> Path:
    (found,) = (top / "fleet").glob("*/kafka-logs-0")
    return found


def _export_as_uid(top: Path, out: Path) -> subprocess.CompletedProcess[str]:
    python, env = _python_for_uid()
    env = {k: v for k, v in {**os.environ, **env}.items() if k not in ("HOME", "USER", "LOGNAME")}
    argv = [
        *_as_uid(),
        python,
        "-c",
        MAIN,
        "export",
        str(_log_dir(top)),
        "--out",
        str(out),
        "--master",
        "local[1]",
    ]
    return subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env, cwd=str(top))


needs_root = pytest.mark.needs_root


@needs_root
def test_an_export_as_a_uid_without_a_passwd_entry(top: Path) -> None:
    with pytest.raises(KeyError):
        pwd.getpwuid(UID)
    outs = top / "outs"
    outs.mkdir(mode=0o777, exist_ok=True)
    outs.chmod(0o777)
    done = _export_as_uid(top, outs / "out")
    assert done.returncode == 0, (
        done.stdout[-2000:] + done.stderr[-3000:]
    )  # was 1: "basedir must be absolute"
    assert pq.read_table(outs / "out").num_rows == RECORDS


@needs_root
def test_an_out_this_uid_may_not_write_is_one_line_77(top: Path) -> None:
    closed = top / "closed"
    closed.mkdir(mode=0o755, exist_ok=True)  # root's: the uid may not create anything there
    done = _export_as_uid(top, closed / "out")
    assert done.returncode == 77, done.stdout[-2000:] + done.stderr[-3000:]  # NO_PERMISSION
    assert f"error: {closed / 'out'}: permission denied: nothing was exported" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert list(closed.iterdir()) == []


def _can_mount() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    return (
        subprocess.run(["unshare", "-m", "mount", "--bind", "/", "/mnt"], capture_output=True).returncode == 0
    )


@pytest.mark.skipif(
    not _can_mount(), reason="needs root and mount namespaces (unshare -m) for a read-only mount"
)
def test_an_out_on_a_read_only_file_system_is_one_line_73(top: Path) -> None:
    ro = top / "ro"
    ro.mkdir(exist_ok=True)
    cmd = " ".join(
        shlex.quote(str(a))
        for a in [
            sys.executable,
            "-c",
            MAIN,
            "export",
            _log_dir(top),
            "--out",
            ro / "out",
            "--master",
            "local[1]",
        ]
    )
    q = shlex.quote(str(ro))
    script = f"mount --bind {q} {q} && mount -o remount,ro,bind {q} && exec {cmd}"
    done = subprocess.run(
        ["unshare", "-m", "bash", "-c", script], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 73, done.stdout[-2000:] + done.stderr[-3000:]  # was 1 with a traceback
    assert f"error: {ro / 'out'}: read-only file system: nothing was exported" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


def test_a_launcher_that_exits_is_one_line_69(top: Path, tmp_path: Path) -> None:
    argv = [sys.executable, "-c", MAIN, "export", str(_log_dir(top)), "--out", str(tmp_path / "out"),
            "--master", "local[1]", "--conf", "spark.driver.extraJavaOptions=-Xmx1k"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert done.returncode == 69, done.stdout[-2000:] + done.stderr[-3000:]
    assert "error: Spark's JVM exited before it started" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
