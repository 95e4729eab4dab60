"""Issue 57 item 5: the latest view's keys and winning offsets spilled to disk past a fixed budget
(spark/latest_spill.py) give the same table. The budgets are made tiny here so that every path runs
(several key runs, several offset runs, blocks and windows smaller than a run); the oracles are a plain
Python dict of each key's highest offset, and kv-0's table from kafka-python (../shared/semantics)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import realworld
from logdoctor.logdir.discovery import discover
from logdoctor.logdir.slices import parse_read_options, plan_slices
from logdoctor.spark import latest_spill
from logdoctor.spark.latest import LatestStats, latest_rows
from logdoctor.spark.sources.slice_reader import read_slice


@pytest.fixture
def tiny(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(latest_spill, "RUN_ENTRIES", 40)
    monkeypatch.setattr(latest_spill, "OFFSET_RUN", 64)
    monkeypatch.setattr(latest_spill, "_MERGE_ENTRIES", 24)
    monkeypatch.setattr(latest_spill, "_MERGE_EVERY", 16)
    monkeypatch.setattr(latest_spill, "_WINDOW", 7)


def test_runs_merge_to_each_keys_highest_offset(tiny: None) -> None:
    rng = np.random.default_rng(57)
    ids = rng.integers(0, 900, 5000)
    keys = [b"k%d" % i for i in ids.tolist()]
    want: dict[bytes, int] = {}
    for offset, key in enumerate(keys):
        want[key] = offset
    held = latest_spill.KeyOffsets()
    try:
        for start in range(0, len(keys), 97):
            part = keys[start : start + 97]
            held.add(
                pa.table({"key": pa.array(part, pa.binary()), "offset": np.arange(start, start + len(part))})
            )
        assert len(held._runs) > 3  # spilled
        winners = held.winners()
        assert winners.count == len(want)
        blocks = list(winners.ascending())
        assert len(blocks) > 1 and len(winners._runs) > 1
        got = np.concatenate(blocks)
        assert got.tolist() == sorted(want.values())
        folder = held._folder.path
        assert folder is not None and Path(folder).is_dir()
    finally:
        held.close()
    assert not Path(folder).exists()  # removed


def test_ascending_match_walks_the_winners_once() -> None:
    winners = [np.array([2, 5, 9]), np.array([10, 11, 40])]
    match = latest_spill.AscendingMatch(iter(winners))
    assert match.keep(np.array([0, 1, 2, 3, 4, 5])).tolist() == [False, False, True, False, False, True]
    assert match.keep(np.array([6, 9, 10])).tolist() == [False, True, True]
    assert match.keep(np.array([12, 39, 40, 41])).tolist() == [False, False, True, False]
    assert match.keep(np.array([50])).tolist() == [False]


@pytest.mark.realworld
def test_kv_latest_spilled_is_the_readmes_table(tiny: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from test_latest import KV_STATE_SHA256, digest, kafka_python_latest

    spilled = []
    spill = latest_spill.KeyOffsets._spill
    monkeypatch.setattr(latest_spill.KeyOffsets, "_spill", lambda self: spilled.append(spill(self)))

    kv = realworld.require_semantics() / "kafka-logs" / "kv-0"
    want = kafka_python_latest(kv)
    opts = parse_read_options({"view": "latest"})
    stats = LatestStats()
    table = pa.Table.from_batches(
        list(latest_rows(plan_slices(discover(str(kv)), opts), opts, read_slice, stats=stats))
    )
    keys, values = table.column("key").to_pylist(), table.column("value").to_pylist()
    assert len(keys) == len(set(keys)) == 434
    assert dict(zip(keys, values, strict=True)) == want and digest(want) == KV_STATE_SHA256
    assert (stats.keys, stats.tombstones, stats.rows) == (450, 16, 434)
    assert len(spilled) > 3
