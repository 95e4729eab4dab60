"""Ctrl-C while a Spark command (census, export) runs a task (issue 24): one line on stderr, exit 130, no
py4j traceback, and no process of the command left behind (PySpark starts its gateway JVM ignoring SIGINT)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import realworld
from logdoctor.cli.common import ExitCode
from patience import exit_after_ctrl_c

pytestmark = pytest.mark.spark

ENTRY = "import sys; from logdoctor.cli.main import main; sys.argv[0] = 'logdoctor'; main()"


def _group(pgid: int) -> list[tuple[int, str]]:
    """(pid, command line) of every live process of process group ``pgid``."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_bytes()
            cmdline = Path(f"/proc/{entry.name}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2 :].split()  # state, ppid, pgrp, ...
        if int(fields[2]) == pgid and fields[0] != b"Z":
            found.append((int(entry.name), cmdline))
    return found


def _status(pid: int, field: str) -> int:
    """A number of /proc/PID/status: SigIgn (hex mask), PPid."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            value = line.split()[1]
            return int(value, 16) if field.startswith("Sig") else int(value)
    raise AssertionError(f"{field} not in /proc/{pid}/status")


def _spark_jvm(cmd: str) -> bool:
    """A JVM of Spark's (the gateway, SparkSubmit, Spark's launcher), not a ``java -version`` probe."""
    return cmd.split(" ", 1)[0].endswith("java") and "org.apache.spark." in cmd


def _sigint_not_ignored(group: list[tuple[int, str]]) -> list[str]:
    """The command's JVMs and the Python worker daemons they started that do not ignore SIGINT (PySpark
    starts its gateway JVM ignoring it, and whatever the JVM starts inherits that; the daemon's forked
    workers set their own handler)."""
    java = {pid for pid, cmd in group if _spark_jvm(cmd)}
    found = []
    for pid, cmd in group:
        with contextlib.suppress(OSError):  # ended meanwhile
            ours = pid in java or (".daemon" in cmd and _status(pid, "PPid") in java)
            if ours and not _status(pid, "SigIgn") & (1 << (signal.SIGINT - 1)):
                found.append(cmd)
    return found


@pytest.mark.parametrize("command", ["census", "export"])
def test_ctrl_c_during_a_spark_command_is_one_line_and_130(tmp_path: Path, command: str) -> None:
    rw = realworld.require()
    brokers = [rw / f"zk-3.0-tuyen-nnt-b{i}" for i in range(3)]
    out_dir = tmp_path / command
    proc = subprocess.Popen(
        [sys.executable, "-c", ENTRY, command, *map(str, brokers), "--out", str(out_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: the Ctrl-C goes to all of it, as in a terminal
    )
    try:
        deadline = time.monotonic() + 600

        # Spark runs: a Python worker of a Spark task exists in the group (export); the census of three
        # brokers scans them on the driver and starts no Python worker (census.SMALL_FLEET_BROKERS): its
        # Spark JVM
        def running(cmd: str) -> bool:
            if command == "census":
                return _spark_jvm(cmd)
            return " -m " in cmd and ".daemon" in cmd

        while not any(running(cmd) for _pid, cmd in _group(proc.pid)):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        not_ignoring = _sigint_not_ignored(_group(proc.pid))
        os.killpg(proc.pid, signal.SIGINT)
        _out, err = exit_after_ctrl_c(proc)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert not_ignoring == []  # the terminal's Ctrl-C is the command's own to handle, nobody else's
    assert proc.returncode == ExitCode.INTERRUPTED, err
    assert "Traceback" not in err and "py4j" not in err, err
    said = [ln for ln in err.splitlines() if ln.startswith("interrupted:")]
    assert said == [f"interrupted: logdoctor {command} was stopped; its output {out_dir} is incomplete"], err
    assert said[0] == err.splitlines()[-1]  # the last word
    deadline = time.monotonic() + 30
    while _group(proc.pid) and time.monotonic() < deadline:  # its JVM and workers end with it
        time.sleep(0.2)
    assert _group(proc.pid) == []
