"""`restore`'s check of a stored ``.index`` / ``.timeindex`` against its segment (``_index_problem``):
the check over all entries at once (``_entries_fit``, numpy) says "fits" exactly when the entry-by-entry
walk (``_first_bad_entry``, the oracle: the check as it was) finds no entry to name, so the plan's
findings and their wording are the same; indexes of every shape near the bounds (offsets at the base and
the end, positions at 0 and the size, equal and decreasing neighbours, int32 and int64 extremes)."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

import tiers
from logdoctor.formats.index import IndexKind
from logdoctor.repair.procedures.restore import _entries_fit, _first_bad_entry, _index_problem

_I32 = st.one_of(st.integers(-5, 40), st.sampled_from([-(1 << 31), (1 << 31) - 1, 0, 1]))
_I64 = st.one_of(st.integers(-5, 40), st.sampled_from([-(1 << 63), (1 << 63) - 1, 0]))
_BASE = st.one_of(st.integers(0, 30), st.sampled_from([(1 << 62), (1 << 63) - 50]))


def _grow(rels: list[int], steps: list[int]) -> list[int]:
    """Mostly increasing values (what an index holds), with the steps given: 0 and negative ones too."""
    out, v = [], rels[0]
    for s in steps:
        out.append(max(-(1 << 31), min((1 << 31) - 1, v)))
        v += s
    return out


@settings(max_examples=tiers.examples(400), deadline=None)  # the first call imports the index arrays (numpy)
@given(
    base=_BASE,
    span=st.one_of(st.integers(-3, 60), st.just(1 << 40)),
    size=st.one_of(st.integers(0, 60), st.just(1 << 33)),
    start=st.lists(_I32, min_size=2, max_size=2),
    steps=st.lists(st.integers(-2, 6), min_size=1, max_size=12),
    pos_steps=st.lists(st.integers(-2, 9), min_size=12, max_size=12),
)
def test_offset_index_fits_exactly_when_the_walk_finds_nothing(base, span, size, start, steps, pos_steps):
    rels = _grow(start, steps)
    positions = _grow(start[1:], pos_steps[: len(rels)])
    data = b"".join(struct.pack(">ii", r, p) for r, p in zip(rels, positions, strict=True))
    end = base + span
    for n in range(len(rels) + 1):
        want = _first_bad_entry(IndexKind.OFFSET, data, n, base, end, size) is None
        assert _entries_fit(IndexKind.OFFSET, data, n, base, end, size) == want, (n, rels, positions)


@settings(max_examples=tiers.examples(400), deadline=None)  # the first call imports the index arrays (numpy)
@given(
    base=_BASE,
    span=st.one_of(st.integers(-3, 60), st.just(1 << 40)),
    start=_I32,
    steps=st.lists(st.integers(-2, 6), min_size=1, max_size=12),
    stamps=st.lists(_I64, min_size=12, max_size=12),
    sort=st.booleans(),
)
def test_time_index_fits_exactly_when_the_walk_finds_nothing(base, span, start, steps, stamps, sort):
    rels = _grow([start], steps)
    ts = sorted(stamps) if sort else stamps
    data = b"".join(struct.pack(">qi", t, r) for t, r in zip(ts, rels, strict=False))
    end = base + span
    for n in range(len(rels) + 1):
        want = _first_bad_entry(IndexKind.TIME, data, n, base, end, 100) is None
        assert _entries_fit(IndexKind.TIME, data, n, base, end, 100) == want, (n, rels, ts)


def test_a_bad_entry_is_still_named():
    """What the plan's finding says (issue 48's wording), through the fast check's "no"."""
    data = struct.pack(">ii", 5, 0) + struct.pack(">ii", 9, 4096) + struct.pack(">ii", 9, 8192)
    why = _index_problem("index", data, 100, 200, 10_000, "x.index")
    assert why == "entry 2: offset 109 is not in 100..200 after the entry before (109)"
    assert _index_problem("index", data[:16], 100, 200, 10_000, "x.index") is None
    assert _index_problem("index", data[:16], 100, 200, 4096, "x.index") == (
        "entry 1: position 4096 is not in 0..4095 after the entry before (0)"
    )
    ts = struct.pack(">qi", 50, 1) + struct.pack(">qi", 49, 2) + struct.pack(">qi", 60, 3)
    assert _index_problem("timeindex", ts, 100, 200, 10_000, "x.timeindex") == (
        "entry 1: timestamp 49 is below the entry before (50)"
    )
