"""The read discipline reaches the export's tasks through the one read-options path (issue 58): ``keepCache``
and ``maxReadRate`` are read options, and :func:`logdoctor.spark.sources.slice_reader.read_slices` (every
output's task reads through it) applies them. Checked without a Spark session, on the task's own function: a
segment not cached is left not cached (util-linux ``fincore``), and with ``keepCache`` it stays cached."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from live_reads import FINCORE, discipline_reset, resident, small_log_dir, uncache
from logdoctor.logdir import page_cache
from logdoctor.logdir.slices import PlanningError, parse_read_options, plan_slices, read_plan
from logdoctor.spark.sources.slice_reader import read_slices

pytestmark = pytest.mark.usefixtures(discipline_reset.__name__)


def test_the_options_parse():
    opts = parse_read_options({"keepCache": "true", "maxReadRate": "10MiB"})
    assert opts.keep_cache is True and opts.max_read_rate == 10 << 20
    default = parse_read_options({})
    assert default.keep_cache is False and default.max_read_rate is None
    with pytest.raises(PlanningError, match="maxReadRate"):
        parse_read_options({"maxReadRate": "fast"})


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory) -> Path:
    return small_log_dir(tmp_path_factory.mktemp("export-cache"), "exported", 1, 3000)


def _read_all(log_dir: Path, options: dict[str, str]) -> int:
    opts = parse_read_options(options)
    page_cache.leave_as_found(not opts.keep_cache)  # the driver's planning reads too: `export` sets it first
    slices = plan_slices(read_plan([str(log_dir)], opts).refs, opts)
    rows = sum(rb.num_rows for rb in read_slices(slices, opts))
    gc.collect()  # the task's mappings gone (as when a task ends): their pages can be dropped
    return rows


@pytest.mark.skipif(FINCORE is None, reason="util-linux fincore is not installed")
@pytest.mark.parametrize(("options", "stays"), [({}, False), ({"keepCache": "true"}, True)])
def test_a_task_leaves_the_cache_as_found(log_dir, options, stays):
    (log,) = log_dir.glob("exported-0/*.log")
    uncache(log)
    assert _read_all(log_dir, options) == 3000
    size = log.stat().st_size
    if stays:
        assert resident(log) >= 0.99 * size
    else:
        assert resident(log) <= 0.05 * size
