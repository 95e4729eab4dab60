"""Issue 31 item 10: every export left about 41 Spark scratch paths (``spark-*``, ``blockmgr-*``) and
``liblz4-java*.so`` files under /tmp. A local Spark now keeps them in one folder of the command's own
(``spark.local.dir`` and the JVM's ``java.io.tmpdir``), removed when the command exits. The export runs
as a user runs it (a subprocess, its TMPDIR a folder of this test); the JVM's command line is read from
/proc while it runs, and the native library it extracts is seen in that folder."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from logdoctor.sample.logdir import TopicSpec, generate_log_dir

pytestmark = pytest.mark.spark


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            kids = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        out += [int(k) for k in kids]
        todo += [int(k) for k in kids]
    return out


def test_an_export_leaves_no_spark_scratch_files(tmp_path):
    root, _ = generate_log_dir(tmp_path / "logs", [TopicSpec("t", partitions=1, records_per_partition=200)])
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    argv = [sys.executable, "-c", "from logdoctor.cli.main import main; main()", "export", str(root),
            "--out", str(tmp_path / "out"), "--master", "local[1]"]  # fmt: skip
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    tmpdirs: set[str] = set()
    seen: set[str] = set()
    deadline = time.monotonic() + 900
    while proc.poll() is None and time.monotonic() < deadline:
        for pid in _descendants(proc.pid):
            try:
                args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            tmpdirs |= {a.decode().split("=", 1)[1] for a in args if a.startswith(b"-Djava.io.tmpdir=")}
        for d in tmpdirs:
            seen |= {p.name for p in Path(d).glob("*")} if os.path.isdir(d) else set()
        time.sleep(0.2)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, out[-2000:] + err[-2000:]
    (scratch,) = tmpdirs  # the JVM's temporary folder: the command's own, under its TMPDIR
    assert Path(scratch).parent == tmp and Path(scratch).name.startswith("logdoctor-spark-")
    assert any(n.startswith(("spark-", "blockmgr-")) for n in seen), seen  # Spark's scratch went there
    assert not os.path.exists(scratch)
    left = [p.name for p in tmp.iterdir() if not p.name.startswith("logdoctor-log4j2-")]
    assert left == []


SCRATCH_THEN = """
import os, signal, sys
from logdoctor.spark.session import scratch_dir
print(scratch_dir(), flush=True)
if sys.argv[1] == "killed":
    os.kill(os.getpid(), signal.SIGKILL)  # no exit handler runs
sys.stdin.read()  # alive until the test closes its stdin
"""


def test_a_killed_commands_scratch_folder_goes_at_the_next_start_a_live_ones_stays(tmp_path):
    """A command killed by a signal leaves its scratch folder (its exit handler never runs; the test suite
    left hundreds under /tmp). The next command to start a local Spark removes it, and never the folder of
    a command still running, nor a folder without the lock file (not made by this scheme)."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}

    def start(how: str) -> tuple[subprocess.Popen[str], Path]:
        proc = subprocess.Popen([sys.executable, "-c", SCRATCH_THEN, how], env=env, text=True,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)  # fmt: skip
        assert proc.stdout is not None
        return proc, Path(proc.stdout.readline().strip())

    killed, killed_dir = start("killed")
    assert killed.wait(timeout=60) == -9
    (killed_dir / "blockmgr-1").mkdir()  # what a JVM had left there
    foreign = tmp_path / "logdoctor-spark-made-otherwise"
    foreign.mkdir()
    live, live_dir = start("live")
    try:
        assert killed_dir.parent == tmp_path and not killed_dir.exists()  # swept by the live one's start
        assert live_dir.is_dir() and foreign.is_dir()
        third, third_dir = start("live")
        third.communicate("", timeout=60)
        assert live_dir.is_dir() and not third_dir.exists()  # the running one's kept; the third's own exit
    finally:
        live.communicate("", timeout=60)
    assert sorted(p.name for p in tmp_path.iterdir()) == [foreign.name]
