"""The offset-index rule of every era, in each of its implementations (issue 71, item 3).

Up to Kafka 1.1 an entry holds the FIRST offset of the batch at its position (K:core/src/main/scala/kafka/
log/LogSegment.scala at 1.1.1, ``append`` and ``recover``), since 2.0 its LAST offset (KAFKA-6264), and
before KAFKA-806 the last offset of a multi-batch append at its first batch's position. An entry is sound
when its position is a batch start and its offset lies after the previous batch's last offset (and within
the segment): a lookup through it then finds every offset from its own on. The same answer from the
plain-Python path (small indexes), the numpy path and the C twin of ``scan --deep``'s cross-check, and
from ``dump --verify-index`` (checks.verify_index). Real brokers' indexes: tests/brokers/
test_broker_era_scan.py.
"""

from __future__ import annotations

import struct
from array import array
from types import SimpleNamespace

import pytest

from logdoctor.checks import index_cross_check
from logdoctor.checks.catalog import FindingCode
from logdoctor.checks.verify_index import LogLayout, verify_offset_index
from logdoctor.formats.index import IndexKind
from logdoctor.formats.native import speedups

BASE = 1000
NB = 40  # batches of 5 records each: more entries than checks.indexes._SMALL, so the big path runs too
POSITIONS = [i * 500 for i in range(NB)]
FIRSTS = [BASE + 5 * i for i in range(NB)]
LASTS = [f + 4 for f in FIRSTS]


def _data(entries: list[tuple[int, int]]) -> bytes:
    return b"".join(struct.pack(">ii", off - BASE, pos) for off, pos in entries)


def _every_path(entries: list[tuple[int, int]]) -> dict[str, int | None]:
    """The first entry each implementation reports (None: none)."""
    data = _data(entries)
    seg = SimpleNamespace(base_offset=BASE, log_name="00000000000000001000.log")
    w = SimpleNamespace(positions=array("q", POSITIONS), last_offsets=array("q", LASTS), max_timestamp=-1)
    small = index_cross_check._SMALL_MISMATCH[IndexKind.OFFSET](
        index_cross_check._small_entries(IndexKind.OFFSET, data), seg, w
    )
    with pytest.MonkeyPatch.context() as m:
        m.setattr(index_cross_check, "speedups", None)
        numpy = index_cross_check._big_mismatch(IndexKind.OFFSET, data, seg, w)
    found = {"python": small, "numpy": numpy}
    if speedups is not None:
        found["c"] = index_cross_check._big_mismatch(IndexKind.OFFSET, data, seg, w)
    assert len({f for f in found.values()}) == 1, found  # the same entry, reason and offset
    layout = LogLayout(
        positions=POSITIONS,
        ends=[p + 500 for p in POSITIONS],
        last_offsets=LASTS,
        max_timestamps=[-1] * NB,
        batches=[
            SimpleNamespace(position=p, base_offset=f, last_offset=last, max_timestamp=-1)
            for p, f, last in zip(POSITIONS, FIRSTS, LASTS, strict=True)
        ],
        valid_bytes=NB * 500,
        size=NB * 500,
    )
    dumped = [
        f.slot for f in verify_offset_index(data, BASE, layout) if f.code is FindingCode.INDEX_OFFSET_MISMATCH
    ]
    out = {name: None if f is None else f[0] for name, f in found.items()}
    out["dump"] = dumped[0] if dumped else None
    return out


def _all(value: int | None) -> dict[str, int | None]:
    return {name: value for name in ("python", "numpy", *(("c",) if speedups is not None else ()), "dump")}


@pytest.mark.parametrize("every", [1, 2])
def test_first_offset_entries_of_kafka_1x_are_sound(every: int) -> None:
    """Entries at each batch's first offset, the rule of LogSegment up to 1.1."""
    entries = [(FIRSTS[k], POSITIONS[k]) for k in range(1, NB, every)]
    assert len(entries) > 16
    assert _every_path(entries) == _all(None)


def test_last_offset_entries_since_2_0_are_sound() -> None:
    assert _every_path([(LASTS[k], POSITIONS[k]) for k in range(1, NB)]) == _all(None)


def test_any_offset_inside_the_batch_is_sound() -> None:
    """A v0/v1 wrapper's first inner offset, or an append's first offset: anything after the previous
    batch's end up to the batch's last offset."""
    assert _every_path([(FIRSTS[k] + k % 5, POSITIONS[k]) for k in range(1, NB)]) == _all(None)


def test_an_entry_at_the_previous_batch_s_end_is_wrong() -> None:
    """(previous batch's last offset, this batch's position): a lookup of that offset starts past it."""
    entries = [(FIRSTS[k], POSITIONS[k]) for k in range(1, NB)]
    j = 25
    entries[j] = (LASTS[j], POSITIONS[j + 1])  # inside the order of the entries: only the cross-check sees it
    assert _every_path(entries) == _all(j)
    found = index_cross_check._small_offset_mismatch(
        [(o - BASE, p) for o, p in entries],
        SimpleNamespace(base_offset=BASE, log_name="x.log"),
        SimpleNamespace(positions=array("q", POSITIONS), last_offsets=array("q", LASTS)),
    )
    assert found is not None
    assert f"holds offsets {FIRSTS[j + 1]} to {LASTS[j + 1]}, after the entry's offset {LASTS[j]}" in found[1]


def test_an_entry_below_the_base_offset_at_the_first_batch_is_wrong() -> None:
    """A negative relative offset at the first batch (dump calls it INDEX_OFFSET_NOT_IN_LOG)."""
    entries = [(BASE - 1, 0)] + [(FIRSTS[k], POSITIONS[k]) for k in range(1, NB)]
    assert _every_path(entries) == _all(0) | {"dump": None}


def test_the_last_entry_of_a_multi_batch_append_stays_sound() -> None:
    """Before KAFKA-806 (2.0 to 3.x), one entry for an append of several batches: its last offset at the
    position of its first batch. Past the batch's own end, a lookup through it still starts early enough."""
    entries = [(LASTS[k + 2], POSITIONS[k]) for k in range(1, NB - 2, 3)]
    assert _every_path(entries) == _all(None)


def test_past_the_segment_is_wrong() -> None:
    entries = [(FIRSTS[k], POSITIONS[k]) for k in range(1, NB)] + [(LASTS[-1] + 1, POSITIONS[-1] + 500)]
    assert _every_path(entries)["python"] == NB - 1
