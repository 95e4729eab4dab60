"""``--max-read-rate BYTES/s`` (issue 58 item 3): the average rate of a command's reads stays at or under the
rate. Measured from outside the reader: the bytes of the files the command reads whole (a ``scan --deep``
reads every .log whole, the dump of a segment too) over the command's wall time, which is at least those
bytes at the rate less the one burst the pacer allows (``read_rate.BURST``)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import realworld
from live_reads import discipline_reset, small_log_dir
from logdoctor.checks import walk_ahead
from logdoctor.cli import commands  # noqa: F401  (registers every command)
from logdoctor.cli.main import app
from logdoctor.logdir import read_rate

METADATA_LOG = "kraft-3.5-greenlemont-n1/__cluster_metadata-0/00000000000000000000.log"

pytestmark = pytest.mark.usefixtures(discipline_reset.__name__)


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory) -> Path:
    """Two partitions of ~3 MiB each: a scan's two workers read them at once."""
    return small_log_dir(tmp_path_factory.mktemp("read-rate"), "paced.topic", 2, 1500)


def _timed(*args: str | Path) -> tuple[int, float]:
    t0 = time.monotonic()
    r = CliRunner().invoke(app, [*map(str, args)])
    elapsed = time.monotonic() - t0
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r.exit_code, elapsed


def test_scan_deep_paced_across_its_workers(log_dir):
    """Two worker processes read at once: the rate is theirs together (one pacer shared with the forked
    workers), not each one's."""
    logs = sorted(log_dir.glob("paced.topic-*/*.log"))
    total = sum(p.stat().st_size for p in logs)
    assert len(logs) == 2 and total > 5 << 20
    rate = 2 << 20
    code, elapsed = _timed("scan", "--deep", "--json", "--jobs", "2", "--max-read-rate", "2MiB", log_dir)
    assert code in (0, 1)
    assert elapsed >= (total - read_rate.BURST) / rate * 0.98
    assert total / elapsed <= rate * total / (total - read_rate.BURST)


def test_dump_paced():
    log = realworld.require() / METADATA_LOG
    size = log.stat().st_size
    code, elapsed = _timed("dump", "--json", "--max-read-rate", "1m", log)
    assert code == 0
    assert elapsed >= (size - read_rate.BURST) / (1 << 20) * 0.98


def test_the_chunked_walk_is_paced(log_dir):
    """The C walk of a big .log (scan --deep's) is paced a chunk at a time, without leaving C but for the
    pace."""
    if walk_ahead.walker() is None:
        pytest.skip("without the C extension the walk is the mapped one")
    log = sorted(log_dir.glob("paced.topic-*/*.log"))[0]
    size = log.stat().st_size
    read_rate.limit(1 << 20)
    t0 = time.monotonic()
    got = walk_ahead.read_walk(str(log), True, True, walk_ahead.new_chunk(256 << 10), 0)
    elapsed = time.monotonic() - t0
    assert isinstance(got, walk_ahead.RawWalk) and got.size == size
    assert elapsed >= (size - read_rate.BURST) / (1 << 20) * 0.98


@pytest.mark.parametrize(
    ("text", "rate"),
    [("50MiB", 50 << 20), ("50m", 50 << 20), ("20MB/s", 20 << 20), ("1048576", 1 << 20), ("1.5g", 3 << 29)],
)
def test_sizes_read_as_spark_reads_byte_strings(text, rate):
    assert read_rate.parse_size(text) == rate


@pytest.mark.parametrize("text", ["0", "fast", "-1MiB", "10 parsecs"])
def test_a_rate_that_is_not_a_size_is_a_usage_error(log_dir, text):
    code, _ = _timed("scan", "--max-read-rate", text, log_dir)
    assert code == 64
