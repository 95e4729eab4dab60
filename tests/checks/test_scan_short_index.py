"""An inactive .index shorter than one entry: the default scan reports it and goes on (it used to
seek to byte -8 of it for the retention check and stop with OSError EINVAL)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import realworld
from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan

DIR = "zk-3.7-nikhildighe-b0"  # Kafka 3.7.1, clean shutdown; __consumer_offsets-12 has 2 segments
PART = "__consumer_offsets-12"
SEG0 = "00000000000000000000"  # inactive, with a 15-entry time index


@pytest.mark.realworld
@pytest.mark.parametrize("depth", list(Depth))
@pytest.mark.parametrize("length", [1, 4, 7])
def test_index_shorter_than_one_entry(tmp_path: Path, depth: Depth, length: int) -> None:
    logdir = tmp_path / "kafka-logs"
    realworld.writable_copy(realworld.require() / DIR, logdir)
    for root, _dirs, files in os.walk(logdir):
        os.chmod(root, 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)
    index = logdir / PART / f"{SEG0}.index"
    index.write_bytes(index.read_bytes()[:length])
    rep = scan([logdir], ScanOptions(depth=depth, now_ms=1_800_000_000_000), jobs=1)
    hits = [f for f in rep.findings if f.path == str(index)]
    assert [(f.code, f.position) for f in hits] == [("INDEX_CORRUPT", 0)]
    assert f"is {length} bytes, not a multiple of the 8-byte entry size" in hits[0].message
