"""The plain-Python paths for small inputs (checks.index_cross_check, the producer snapshot
reader) give what their numpy paths give, on random and edge-case inputs."""

from __future__ import annotations

import random
import struct
from array import array
from types import SimpleNamespace

import numpy as np
import pytest

from logdoctor.checks import index_cross_check
from logdoctor.checks.indexes import Entries
from logdoctor.formats import producer_snapshot as ps
from logdoctor.formats.index import IndexKind


def _index(kind: IndexKind, rng: random.Random, base: int, lasts: list[int], positions: list[int]) -> bytes:
    n = rng.randrange(0, 33)
    slots = []
    for i in range(n):
        if rng.random() < 0.7 and positions:  # mostly plausible entries, sometimes off by a little
            k = rng.randrange(len(positions))
            rel = lasts[k] - base + rng.choice((0, 0, 0, 1, -1))
            pos = positions[k] + rng.choice((0, 0, 0, 3))
        else:
            rel, pos = rng.randrange(-3, 200), rng.randrange(-3, 5000)
        if rng.random() < 0.05:
            rel = pos = 0  # a zero slot
        ts = rng.choice((pos, 10**12 + i, -1, 0))
        slots.append(
            struct.pack(">ii", rel, pos) if kind is IndexKind.OFFSET else struct.pack(">qi", ts, rel)
        )
    return b"".join(slots)


def _numpy_path(kind: IndexKind, data: bytes, seg: SimpleNamespace, w: SimpleNamespace):
    batches = (np.frombuffer(w.positions, dtype=np.int64), np.frombuffer(w.last_offsets, dtype=np.int64))
    entries = Entries(kind, data, seg.base_offset, log_name=seg.log_name)
    found = index_cross_check._MISMATCH[kind](entries, *batches, w.max_timestamp)
    return None if found is None else (*found, int(entries.offsets[found[0]]))


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("kind", [IndexKind.OFFSET, IndexKind.TIME])
def test_small_index_cross_check_agrees_with_numpy(seed: int, kind: IndexKind) -> None:
    rng = random.Random(seed)
    base = rng.choice((0, 100, 12345678901))
    positions, lasts, pos, off = [], [], 0, base
    for _ in range(rng.randrange(1, 40)):
        off += rng.randrange(0, 5)
        positions.append(pos)
        lasts.append(off)
        pos += rng.randrange(61, 300)
        off += 1
    seg = SimpleNamespace(base_offset=base, log_name="00000000000000000000.log")
    w = SimpleNamespace(
        positions=array("q", positions),
        last_offsets=array("q", lasts),
        max_timestamp=rng.choice((-1, 10**12 + 5)),
    )
    for _ in range(25):
        data = _index(kind, rng, base, lasts, positions)
        small = index_cross_check._SMALL_MISMATCH[kind](index_cross_check._small_entries(kind, data), seg, w)
        assert small == _numpy_path(kind, data, seg, w), data.hex()


@pytest.mark.parametrize("count", [0, 1, 5, ps._SMALL, ps._SMALL + 1, 300])
def test_producer_snapshot_small_and_numpy_paths_agree(count: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(count)
    entries = [
        ps.ProducerSnapshotEntry(
            rng.randrange(-(2**63), 2**63),
            rng.randrange(-(2**15), 2**15),
            rng.randrange(-(2**31), 2**31),
            rng.randrange(-(2**63), 2**63),
            rng.randrange(-(2**31), 2**31),
            rng.randrange(-(2**63), 2**63),
            rng.randrange(-(2**31), 2**31),
            rng.randrange(-(2**63), 2**63),
        )
        for _ in range(count)
    ]
    data = ps.write_producer_snapshot(entries)
    first = ps.parse_producer_snapshot(data)
    monkeypatch.setattr(ps, "_SMALL", -1 if count <= ps._SMALL else 10**9)  # the other path
    second = ps.parse_producer_snapshot(data)
    assert first == second
    assert first.entries == entries
    assert all(type(getattr(e, name)) is int for e in first.entries for name in ps._FIELDS)
