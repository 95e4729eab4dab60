"""Fuzz: mutated and truncated real (and generated lz4) segments through iter_batches / records() /
ensure_valid / decode_columns, with the C decoder and the pure-Python one. Only logdoctor.errors
types may come out, and the work stays bounded (each example runs on a few KB)."""

from __future__ import annotations

import contextlib
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import realworld
import tiers
import twins
from logdoctor.errors import FormatError
from logdoctor.formats.batch_v2 import RecordBatchV2
from logdoctor.formats.crc import crc32c
from logdoctor.formats.records import decode_columns, iter_batches, scan_batches

pytestmark = pytest.mark.realworld
LIMIT = 6000  # bytes of each real segment used as a seed


@cache
def _seeds() -> tuple[bytes, ...]:
    """A few real segments of different kinds: v2 plain, v2 snappy, v1 (legacy), KRaft snapshot."""
    if not realworld.available():
        return ()
    picks: dict[str, bytes] = {}
    for path in list(realworld.files(suffix=".log")) + list(realworld.files(suffix=".checkpoint")):
        data = path.read_bytes()
        if len(data) < 100:
            continue
        batches = list(iter_batches(data))
        first = batches[0]
        kind = f"m{first.magic}"
        if first.magic == 2:
            kind += f"c{int(first.compression)}" + ("ctl" if any(b.is_control for b in batches) else "")
        picks.setdefault(kind, data[: max(LIMIT, first.size)])
    return tuple(picks.values()) + _generated_seeds()


def _generated_seeds() -> tuple[bytes, ...]:
    """lz4 batches (no real segment has them; the C walker decompresses them itself), and batches
    with headers, null keys and tombstones, from the sample generator."""
    from logdoctor.formats.record_types import Compression
    from logdoctor.sample.records import RecordDataSpec, generate_segment

    out = []
    for codec in (Compression.LZ4, Compression.NONE):
        spec = RecordDataSpec(
            seed=7,
            record_count=60,
            value_size=120,
            value_size_distribution="uniform",
            key_cardinality=50,
            null_key_ratio=0.2,
            tombstone_ratio=0.1,
            headers_per_record=1,
            batch_size=1500,
            compression=codec,
        )
        data, _ = generate_segment(spec)
        out.append(data[:LIMIT])
    return tuple(out)


def _exercise(data: bytes) -> None:
    v2: list[RecordBatchV2] = []
    try:
        for batch in iter_batches(data, source="fuzz.log"):
            if isinstance(batch, RecordBatchV2):
                v2.append(batch)
            with contextlib.suppress(FormatError):
                batch.ensure_valid()
            try:
                for _ in batch.records():
                    pass
                if isinstance(batch, RecordBatchV2):
                    batch.ensure_valid(deep=True)
                    decode_columns([batch])
                    twins.pure(decode_columns, [batch])
            except FormatError as exc:
                assert exc.source == "fuzz.log" and exc.position is not None
    except FormatError as exc:
        assert exc.source == "fuzz.log" and exc.position is not None
    for pure in (False, True):  # all the batches in one call (one C call over the run)
        try:
            twins.run(pure, decode_columns, v2)
        except FormatError as exc:
            assert exc.source == "fuzz.log" and exc.position is not None
    result = scan_batches(data, source="fuzz.log")
    assert 0 <= result.valid_bytes <= len(data)


def _fix_crcs(data: bytearray) -> None:
    """Recompute the CRC of every v2 batch whose framing is intact, so the record decoder sees the damage."""
    pos = 0
    while pos + 61 <= len(data):
        size = int.from_bytes(data[pos + 8 : pos + 12], "big", signed=True) + 12
        if size < 61 or pos + size > len(data):
            return
        if data[pos + 16] == 2:
            data[pos + 17 : pos + 21] = crc32c(bytes(data[pos + 21 : pos + size])).to_bytes(4, "big")
        pos += size


def test_seeds_cover_kinds() -> None:
    realworld.require()
    assert len(_seeds()) >= 3


@settings(max_examples=tiers.examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(0, 100),
    st.lists(st.tuples(st.integers(0, LIMIT), st.integers(0, 255)), min_size=1, max_size=6),
    st.booleans(),
)
def test_mutated_segments_raise_only_typed_errors(seed: int, edits, fix_crc: bool) -> None:
    seeds = _seeds()
    if not seeds:
        realworld.require()
    data = bytearray(seeds[seed % len(seeds)])
    for pos, value in edits:
        data[pos % len(data)] = value
    if fix_crc:
        _fix_crcs(data)
    _exercise(bytes(data))


@settings(max_examples=tiers.examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 100), st.integers(0, LIMIT), st.integers(1, 64), st.booleans())
def test_truncated_and_spliced_segments(seed: int, cut: int, length: int, fix_crc: bool) -> None:
    seeds = _seeds()
    if not seeds:
        realworld.require()
    data = seeds[seed % len(seeds)]
    cut %= len(data)
    _exercise(data[:cut])
    spliced = bytearray(data[:cut] + data[cut + length :])  # bytes removed from the middle
    if fix_crc:
        _fix_crcs(spliced)
    _exercise(bytes(spliced))


@settings(max_examples=tiers.examples(200), deadline=None)
@given(st.binary(min_size=0, max_size=300), st.integers(0, 0x7F))
def test_random_bytes(data: bytes, attributes: int) -> None:
    _exercise(data)
    # a plausible v2 frame around random bytes: the record decoder is what gets tested
    head = bytearray(61)
    head[8:12] = (49 + len(data)).to_bytes(4, "big")
    head[16] = 2
    head[22] = attributes  # any codec, timestamp type, control, delete horizon
    head[57:61] = (len(data) // 3).to_bytes(4, "big")
    frame = bytearray(head + data)
    _fix_crcs(frame)
    _exercise(bytes(frame))
