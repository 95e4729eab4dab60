"""The read discipline reaches the export's tasks through the one read-options path (issue 58): ``keepCache``
and ``maxReadRate`` are read options, and :func:`logdoctor.spark.sources.read_slices` (every output's task
reads through it) applies them. Checked without a Spark session, on the task's own function: a segment
not cached is left not cached (util-linux ``fincore``), and with ``keepCache`` it stays cached."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from logdoctor.logdir import page_cache, read_rate
from logdoctor.sample.logdir import TopicSpec, generate_log_dir
from logdoctor.spark.planning import PlanningError, parse_read_options, plan_slices, read_plan
from logdoctor.spark.sources import read_slices

FINCORE = shutil.which("fincore")


@pytest.fixture(autouse=True)
def _discipline_reset():
    yield
    page_cache.leave_as_found(False)
    read_rate.limit(None)


def test_the_options_parse():
    opts = parse_read_options({"keepCache": "true", "maxReadRate": "10MiB"})
    assert opts.keep_cache is True and opts.max_read_rate == 10 << 20
    default = parse_read_options({})
    assert default.keep_cache is False and default.max_read_rate is None
    with pytest.raises(PlanningError, match="maxReadRate"):
        parse_read_options({"maxReadRate": "fast"})


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("export-cache")
    spec = TopicSpec(
        "exported", records_per_partition=3000, records_per_batch=10, value_size=2000, segment_bytes=64 << 20
    )
    generate_log_dir(root, [spec])
    (logs,) = root.glob("*/kafka-logs-0")
    subprocess.run(["sync"], check=True)
    return logs


def _resident(path: Path) -> int:
    out = subprocess.run(
        [FINCORE, "--bytes", "--noheadings", "--output", "RES", str(path)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return int(out.stdout.split()[0])


def _read_all(log_dir: Path, options: dict[str, str]) -> int:
    opts = parse_read_options(options)
    page_cache.leave_as_found(not opts.keep_cache)  # the driver's planning reads too: `export` sets it first
    slices = plan_slices(read_plan([str(log_dir)], options).refs, opts)
    rows = sum(rb.num_rows for rb in read_slices(slices, opts))
    import gc

    gc.collect()  # the task's mappings gone (as when a task ends): their pages can be dropped
    return rows


@pytest.mark.skipif(FINCORE is None, reason="util-linux fincore is not installed")
@pytest.mark.parametrize(("options", "stays"), [({}, False), ({"keepCache": "true"}, True)])
def test_a_task_leaves_the_cache_as_found(log_dir, options, stays):
    (log,) = log_dir.glob("exported-0/*.log")
    fd = os.open(log, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    if _resident(log) > 0:
        pytest.skip("the page cache cannot be dropped here (tmpfs?)")
    assert _read_all(log_dir, options) == 3000
    size = log.stat().st_size
    if stays:
        assert _resident(log) >= 0.99 * size
    else:
        assert _resident(log) <= 0.05 * size
