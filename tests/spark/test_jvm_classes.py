"""The run's archive of Spark's classes (tests/jvm_classes.py) is made and mapped: a local Spark JVM a test
starts after it is there (a CLI's, a command's run as printed) reads its classes from it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jvm_classes
from patience import patience

pytestmark = pytest.mark.spark

# a local session in a process of its own, as a CLI's: prints its JVM's pid and its stdout's first line,
# then waits for its stdin to close with the JVM alive
_CHILD = """
import sys
from logdoctor.spark.session import get_spark
spark = get_spark("local[1]", "logdoctor-tests-class-archive-check")
print(spark.sparkContext._gateway.proc.pid, flush=True)
sys.stdin.read()
spark.stop()
"""


def test_a_jvm_started_after_the_archive_maps_it(spark):
    """``spark`` (this run's first session makes the archive); the child JVM's memory maps are /proc's."""
    archive = jvm_classes.named_archive()
    opts = os.environ.get("SPARK_SUBMIT_OPTS")
    assert archive is not None, f"no archive of Spark's classes named in SPARK_SUBMIT_OPTS={opts!r}"
    deadline = time.monotonic() + patience(180)
    while not archive.exists():
        assert time.monotonic() < deadline, f"{archive} was not made"
        time.sleep(0.5)
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        jvm = int(line)  # the JVM printed nothing of the archive before (its warnings go to stdout)
        maps = Path(f"/proc/{jvm}/maps").read_text()
        assert str(archive) in maps
    finally:
        child.communicate(input="", timeout=patience(120))
    assert child.returncode == 0
