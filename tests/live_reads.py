"""Helpers of the tests of a read-only command's discipline on a live broker (issue 58): the page cache as
util-linux ``fincore`` reports it (an independent tool: its own mincore), a file dropped from the cache,
a small generated log dir on disk, and the process's read discipline reset after each test."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from logdoctor.logdir import page_cache, read_rate
from logdoctor.sample.logdir import TopicSpec, generate_log_dir

FINCORE = shutil.which("fincore")


@pytest.fixture(autouse=True)
def discipline_reset():
    """The page cache's guard and the read rate a command set (in this process) undone after the test."""
    yield
    page_cache.leave_as_found(False)
    read_rate.limit(None)


def resident(path: Path) -> int:
    """Resident bytes of ``path`` as ``fincore`` reports them."""
    assert FINCORE is not None
    out = subprocess.run(
        [FINCORE, "--bytes", "--noheadings", "--output", "RES", str(path)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return int(out.stdout.split()[0])


def uncache(path: Path) -> None:
    """``path``'s pages dropped from the page cache (after an fsync); the test skipped where they cannot."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    if resident(path) > 0:
        pytest.skip(f"the page cache of {path} cannot be dropped here (tmpfs?)")


def small_log_dir(root: Path, topic: str, partitions: int, records: int) -> Path:
    """A log dir of ``partitions`` partitions of one segment of ``records`` ~2 KiB records each (with its
    indexes and checkpoints), written to disk."""
    spec = TopicSpec(
        topic, partitions=partitions, records_per_partition=records, records_per_batch=10, value_size=2000,
        segment_bytes=64 << 20,
    )  # fmt: skip
    generate_log_dir(root, [spec])
    (logs,) = root.glob("*/kafka-logs-0")
    subprocess.run(["sync"], check=True)
    return logs
