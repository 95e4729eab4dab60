"""The C index checks (``_speedups.index_real_entries``, ``index_entry_checks``, ``index_cross_check``:
formats.index.real_entry_count, checks.indexes.first_bad_entry and
checks.index_cross_check._big_mismatch, which a `scan --deep` runs without importing numpy) give what
their numpy twins give (formats.index.real_entry_count_numpy, the masks of checks.indexes._OFFSET_CHECKS /
_TIME_CHECKS, checks.index_cross_check._MISMATCH), on generated indexes (hypothesis) and on every real
index of ../shared/realworld, as found and with bytes flipped."""

from __future__ import annotations

import random
import struct
import sys
from array import array
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import realworld

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
import tiers
from logdoctor.checks import index_cross_check, indexes
from logdoctor.checks.state.file_records import walk_file
from logdoctor.formats.index import IndexKind, real_entry_count, real_entry_count_numpy
from logdoctor.formats.native import speedups

pytestmark = pytest.mark.skipif(speedups is None, reason="no C extension (LOGDOCTOR_PURE_PYTHON)")

SIZE = {IndexKind.OFFSET: 8, IndexKind.TIME: 12}


def _pack(kind: IndexKind, entries: list[tuple[int, int]]) -> bytes:
    """(relative offset, position or timestamp) pairs as the index's bytes."""
    if kind is IndexKind.OFFSET:
        return b"".join(struct.pack(">ii", rel, v) for rel, v in entries)
    return b"".join(struct.pack(">qi", v, rel) for rel, v in entries)


@st.composite
def _indexes(draw: st.DrawFn) -> tuple[IndexKind, bytes, int, int, int | None, list[int], list[int], int]:
    """An index mostly as the broker writes it (growing offsets and positions or timestamps over a
    walk's batches), with some entries changed, zero slots, a zero tail; and the walk's columns."""
    kind = draw(st.sampled_from([IndexKind.OFFSET, IndexKind.TIME]))
    base = draw(st.sampled_from([0, 1, 1000, 12345678901, 1 << 62]))
    nb = draw(st.integers(1, 80))
    steps = draw(st.lists(st.integers(0, 4), min_size=nb, max_size=nb))
    positions, lasts, pos, off = [], [], 0, base
    for s in steps:
        off += s
        positions.append(pos)
        lasts.append(off)
        pos += draw(st.sampled_from([61, 100, 4096]))
        off += 1
    ts0 = draw(st.sampled_from([0, 10**12, -5]))
    # each batch's last offset (Kafka 2.0 on) or its first (up to 1.1: issue 71, KAFKA-6264)
    first_offsets = draw(st.booleans())
    ents = []
    for k in sorted(draw(st.sets(st.integers(0, nb - 1), max_size=nb))):
        v = positions[k] if kind is IndexKind.OFFSET else ts0 + 10 * k
        ents.append((lasts[k] - (steps[k] if first_offsets else 0) - base, v))
    for _ in range(draw(st.integers(0, 3))):  # damage
        if not ents:
            break
        i = draw(st.integers(0, len(ents) - 1))
        rel0, v0 = ents[i]
        rel = draw(st.one_of(st.integers(-(2**31), 2**31 - 1), st.integers(rel0 - 2, rel0 + 2)))
        wide = 2**31 if kind is IndexKind.OFFSET else 2**63
        v = draw(st.one_of(st.integers(-wide, wide - 1), st.integers(v0 - 5, v0 + 5)))
        ents[i] = (max(-(2**31), min(2**31 - 1, rel)), max(-wide, min(wide - 1, v)))
    if draw(st.booleans()):
        ents += [(0, 0)] * draw(st.integers(1, 5))  # preallocated slots
        if draw(st.booleans()):
            ents.append((draw(st.integers(1, 9)), 7))  # a real-looking entry after a zero slot
    data = _pack(kind, ents)
    log_size = draw(st.sampled_from([0, pos, pos + 1, max(pos - 61, 0)]))
    next_base = draw(st.sampled_from([None, lasts[-1] + 1, lasts[-1], base + 1]))
    max_ts = draw(st.sampled_from([-1, ts0 + 10 * nb, ts0, 10**13]))
    return kind, data, base, log_size, next_base, positions, lasts, max_ts


def _numpy(fn, *args):  # type: ignore[no-untyped-def]
    """``fn(*args)`` with the numpy twins (as without the C extension)."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(indexes, "speedups", None)
        m.setattr(index_cross_check, "speedups", None)
        return fn(*args)


def _agree(
    kind: IndexKind, data: bytes, base: int, log_size: int, next_base: int | None, w: SimpleNamespace
) -> None:
    size = SIZE[kind]
    real = real_entry_count(data, size)
    assert real == real_entry_count_numpy(data, size)
    if real:
        args = (kind, data, real, base, log_size, next_base)
        assert indexes.first_bad_entry(*args) == _numpy(indexes.first_bad_entry, *args)
    if w.positions:
        seg = SimpleNamespace(base_offset=base, log_name="00000000000000000000.log")
        args2 = (kind, data, seg, w)
        assert index_cross_check._big_mismatch(*args2) == _numpy(index_cross_check._big_mismatch, *args2)


@settings(max_examples=tiers.examples(400), deadline=None)
@given(_indexes())
def test_c_index_checks_agree_with_numpy(case) -> None:  # type: ignore[no-untyped-def]
    kind, data, base, log_size, next_base, positions, lasts, max_ts = case
    w = SimpleNamespace(positions=array("q", positions), last_offsets=array("q", lasts), max_timestamp=max_ts)
    _agree(kind, data, base, log_size, next_base, w)


@settings(max_examples=tiers.examples(200), deadline=None)
@given(st.sampled_from([8, 12]), st.binary(max_size=400), st.integers(0, 1 << 62), st.integers(0, 1 << 40))
def test_c_index_checks_agree_with_numpy_on_any_bytes(
    size: int, raw: bytes, base: int, log_size: int
) -> None:
    kind = IndexKind.OFFSET if size == 8 else IndexKind.TIME
    data = raw[: len(raw) - len(raw) % size]
    w = SimpleNamespace(
        positions=array("q", [0, 100]), last_offsets=array("q", [base + 3, base + 9]), max_timestamp=10**12
    )
    _agree(kind, data, base, log_size, base + 50, w)


@pytest.mark.parametrize(
    ("timestamps", "bad"),
    [
        ([-(2**63) + 1, 2**62, 2**63 - 1], None),  # rising across the whole range: no step is down
        ([2**63 - 1, -(2**63)], (1, 1)),  # down by 2**64 - 1, which wraps to +1 when subtracted
        ([2**62, -(2**62)], (1, 1)),
    ],
    ids=["rising", "falling-wraps", "falling"],
)
def test_time_index_timestamps_are_compared_not_subtracted(timestamps: list[int], bad: object) -> None:
    """A .timeindex whose timestamps step across the int64 range: the C checks, their numpy twins and the
    plain-Python whole-index check say the same, and what the order is (a subtraction wrapped: both
    twins called a rise from -2**63 + 1 to 2**62 "backwards" and a fall from 2**63 - 1 to -2**63 fine)."""
    data = _pack(IndexKind.TIME, [(k + 1, ts) for k, ts in enumerate(timestamps)])
    args = (IndexKind.TIME, data, len(timestamps), 0, 10**6, None)
    assert indexes.first_bad_entry(*args) == _numpy(indexes.first_bad_entry, *args) == bad
    assert indexes.whole_index_ok(IndexKind.TIME, data, 0, 10**6, None) is (bad is None)


def _real_indexes() -> list[Path]:
    return [p for p in realworld.files() if p.suffix in (".index", ".timeindex")]


@pytest.mark.parametrize("flips", [0, 3])
def test_c_index_checks_agree_with_numpy_on_real_indexes(flips: int) -> None:
    realworld.require()
    rng = random.Random(flips)
    checked = 0
    for path in _real_indexes():
        log = path.with_suffix(".log")
        if not log.exists():
            continue
        kind = IndexKind.OFFSET if path.suffix == ".index" else IndexKind.TIME
        data = bytearray(path.read_bytes())
        data = data[: len(data) - len(data) % SIZE[kind]]
        for _ in range(flips if data else 0):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        w = walk_file(str(log), True, True)
        if isinstance(w, OSError) or w.positions is None:
            continue
        seg_base = int(path.stem)
        _agree(kind, bytes(data), seg_base, w.size, None, w)
        _agree(kind, bytes(data), seg_base, w.size, seg_base + 10, w)
        checked += 1
    assert checked > 20


def test_deep_scan_of_big_indexes_imports_no_numpy_nor_the_process_pool(tmp_path: Path) -> None:
    """Issue 35: a `scan --deep` of partitions whose indexes hold more than checks.indexes._SMALL entries
    checks them in C (numpy's import was ~0.04 s of its CPU), and a scan of a few partitions never
    imports multiprocessing (the scanner's process pool, imported when partitions first go to one)."""
    from test_startup import imported_by

    from logdoctor.sample.logdir import TopicSpec, generate_log_dir

    topic = TopicSpec("t", partitions=2, records_per_partition=3000, value_size=200, segment_bytes=256 * 1024)
    log_dir, _ = generate_log_dir(tmp_path / "fleet", [topic])
    big = [p for p in log_dir.glob("t-*/*.index") if p.stat().st_size > indexes._SMALL * 8]
    assert len(big) >= 4
    for argv in (("scan", "--deep", "--json"), ("scan", "--deep", "--json", "-j", "1")):
        modules = imported_by(*argv, str(log_dir))
        assert "logdoctor.checks.deep" in modules
        assert not {m.split(".")[0] for m in modules} & {"numpy", "multiprocessing"}, argv
