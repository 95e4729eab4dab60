"""A scan killed from outside (kill -9, the OOM killer) leaves no worker processes behind: on a broker
host an orphaned worker per core would sit there until someone finds it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from logdoctor.sample.logdir import TopicSpec, generate_log_dir
from patience import patience

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            found |= {int(c) for c in (task / "children").read_text().split()}
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_kill_9_of_a_parallel_scan_takes_its_workers_with_it(tmp_path: Path) -> None:
    topics = [
        TopicSpec(f"t{i}", partitions=20, records_per_partition=400, segment_bytes=16 * 1024)
        for i in range(5)
    ]
    log_dir, _ = generate_log_dir(tmp_path / "fleet", topics)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from logdoctor.cli.main import main; sys.argv[0] = 'logdoctor'; main()",
            "scan",
            "--deep",
            "--jobs",
            "2",
            str(log_dir),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers: set[int] = set()
    deadline = time.monotonic() + patience(60)
    while time.monotonic() < deadline and len(workers) < 2 and proc.poll() is None:
        workers = _children(proc.pid)
        time.sleep(0.01)
    if proc.poll() is not None:
        pytest.fail("the scan ended before its workers were seen; make the generated log dir bigger")
    assert len(workers) >= 2
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + patience(60)  # a hang guard: they die as they see their parent gone
    while time.monotonic() < deadline and any(_alive(w) for w in workers):
        time.sleep(0.05)
    left = sorted(w for w in workers if _alive(w))
    for w in left:  # don't leave them to the next test either
        os.kill(w, signal.SIGKILL)
    assert left == [], f"worker processes outlived the killed scan: {left}"
