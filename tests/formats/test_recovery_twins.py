"""rebuild_indexes' C lane (``_speedups.recover_v2``) against its Python walk (``twins.pure``).

The Python walk is the reference (tests/formats/test_recovery.py checks it against Kafka's rules and
real broker-written indexes); the C lane must give the same result to the byte and the same error
(type, message, position) on every input: every real segment, generated segments of every codec
and magic with transactions and leader epochs, and damaged segments (truncated, CRC-corrupted,
zero-filled tails, and random mutations, with CRCs recomputed so the semantic checks are reached).
Each comparison also asserts that the C lane really took batches, so none compares the Python walk
with itself.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import realworld
import tiers
import twins
from logdoctor.errors import CrcMismatchError, TruncatedError
from logdoctor.formats import recovery
from logdoctor.formats.batch_v2 import recover_v2
from logdoctor.formats.crc import crc32c
from logdoctor.formats.record_types import Compression, TimestampType
from logdoctor.formats.recovery import RebuiltIndexes, rebuild_indexes
from logdoctor.sample.records import BatchInfo, RecordDataSpec, generate_segment

pytestmark = pytest.mark.skipif(
    recover_v2 is None,
    reason="the C lane is off (LOGDOCTOR_PURE_PYTHON=1 or no C extension): no twin to compare",
)

_FIELDS = [f.name for f in dataclasses.fields(RebuiltIndexes) if f.name != "error"]


@contextmanager
def _counting() -> Iterator[list[int]]:
    """Count the batches the C lane accepts while rebuild_indexes runs."""
    taken = [0]

    def counted(*args):
        out = recover_v2(*args)
        taken[0] += out[6]
        return out

    with mock.patch.object(recovery, "FAST_LANE", counted):
        yield taken


def _assert_same(fast: RebuiltIndexes, pure: RebuiltIndexes) -> None:
    for name in _FIELDS:
        assert getattr(fast, name) == getattr(pure, name), name
    assert list(fast.open_transactions.items()) == list(pure.open_transactions.items())
    assert type(fast.error) is type(pure.error)
    if pure.error is not None:
        assert str(fast.error) == str(pure.error)
        assert vars(fast.error) == vars(pure.error)


def _twins(log, base_offset: int, **kw) -> tuple[RebuiltIndexes, int]:
    """Both results compared; returns the fast one and the batches the C lane took."""
    with _counting() as taken:
        fast = rebuild_indexes(log, base_offset, **kw)
    pure = twins.pure(rebuild_indexes, log, base_offset, **kw)
    _assert_same(fast, pure)
    return fast, taken[0]


# --- real segments --------------------------------------------------------------------------------


def _real_logs(dirs: list[str] | None = None) -> list[Path]:
    return [p for p in realworld.files(suffix=".log", dirs=dirs) if p.stem.isdigit()]


@pytest.mark.parametrize("names", realworld.log_dir_tiers())
def test_every_real_segment(realworld_dir, names):
    taken = compared = 0
    for log in _real_logs(names):
        data = log.read_bytes()
        base = int(log.stem)
        for interval in (4096, 0, 200):
            _, n = _twins(data, base, index_interval_bytes=interval, source=str(log))
            taken += n
        compared += 1
    # test-fast's log dirs: 373 segments and 24,372 entries; the others: 680 and 256,932
    assert compared > 350 and taken > 20_000


@pytest.mark.slow
def test_every_real_segment_damaged(realworld_dir):
    """Truncated inside the last batch, a byte flipped in the middle batch, a zero-filled tail."""
    from logdoctor.formats.records import scan_batches

    damaged = 0
    for log in _real_logs():
        data = log.read_bytes()
        batches = scan_batches(data).batches
        if not batches:
            continue
        base = int(log.stem)
        last, mid = batches[-1], batches[len(batches) // 2]
        torn = data[: last.position + last.size // 2]
        r, _ = _twins(torn, base, index_interval_bytes=0)
        assert r.valid_bytes == last.position and isinstance(r.error, TruncatedError)
        flipped = bytearray(data)
        flipped[mid.position + mid.size - 1] ^= 0x40
        r, _ = _twins(bytes(flipped), base, index_interval_bytes=0)
        assert r.valid_bytes == mid.position and r.error is not None
        zero_tail = data[: mid.position] + bytes(len(data) - mid.position)
        r, _ = _twins(zero_tail, base, index_interval_bytes=0)
        assert r.valid_bytes == mid.position and r.error is not None
        damaged += 1
    assert damaged > 50


# --- generated segments ---------------------------------------------------------------------------

_CODECS = [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD]


def _spec(**kw) -> RecordDataSpec:
    base = {
        "seed": 3,
        "record_count": 400,
        "value_size": 60,
        "value_size_distribution": "uniform",
        "key_cardinality": 50,
        "batch_size": 700,
        "linger_ms": 2.0,
        "mean_interval_ms": 1.0,
    }
    return RecordDataSpec(**{**base, **kw})


@cache
def _generated(kind: str, codec: Compression) -> tuple[bytes, tuple[BatchInfo, ...]]:
    kw: dict = {"compression": codec, "base_offset": 1000}
    if kind == "transactional":
        kw.update(transactional=True, producers=3, abort_ratio=0.4, batches_per_transaction=3)
    elif kind == "idempotent":
        kw.update(idempotent=True, producers=2)
    elif kind == "log-append-time":
        kw.update(timestamp_type=TimestampType.LOG_APPEND_TIME, idempotent=True)
    elif kind in ("magic0", "magic1"):
        kw.update(magic=int(kind[-1]))
    data, info = generate_segment(_spec(**kw))
    return data, tuple(info.batches)


_KINDS = ["plain", "idempotent", "transactional", "log-append-time", "magic0", "magic1"]
_GENERATED = [
    pytest.param(kind, codec, id=f"{kind}-{codec.name.lower()}")
    for kind in _KINDS
    for codec in _CODECS
    if not (kind.startswith("magic") and codec is Compression.ZSTD)
]


@pytest.mark.parametrize(("kind", "codec"), _GENERATED)
@pytest.mark.parametrize("interval", [4096, 0, 1, 700, -5, 2**70])
def test_generated_segment(kind, codec, interval):
    data, batches = _generated(kind, codec)
    r, taken = _twins(data, 1000, index_interval_bytes=interval)
    assert r.error is None and r.valid_bytes == len(data) and r.batch_count == len(batches)
    assert (taken > 0) is (not kind.startswith("magic"))
    if kind == "transactional":
        assert r.aborted_txns and taken < len(batches)  # markers go through the Python walk


@pytest.mark.parametrize("codec", _CODECS)
def test_transactions_across_segments_and_leader_epochs(codec):
    """A transactional segment cut in two at every 7th boundary: the second half seeded with the
    first half's open transactions (as LogLoader does), then epochs changing inside a segment."""
    data, batches = _generated("transactional", codec)
    for b in batches[1::7]:
        first, _ = _twins(data[: b.position], 1000, index_interval_bytes=300)
        _twins(data[b.position :], b.base_offset, open_transactions=first.open_transactions)
    parts = []
    offset = 0
    for epoch in (0, 0, 3, 2, 5, -1, 7):
        spec = _spec(compression=codec, base_offset=offset, partition_leader_epoch=epoch)
        spec = dataclasses.replace(spec, record_count=60, idempotent=True)
        part, info = generate_segment(spec)
        parts.append(part)
        offset = info.next_offset
    log = b"".join(parts)
    for latest in (None, -3, 0, 4, 6, 2**40):
        r, taken = _twins(log, 0, latest_leader_epoch=latest)
        assert taken == r.batch_count
    assert [e for e, _ in rebuild_indexes(log, 0).leader_epochs] == [0, 3, 5, 7]


def test_many_open_transactions():
    """Hundreds of producers with transactions open at once, and hundreds more seeded as open at the
    segment's base offset (the C lane keeps their producer ids in a hash set that grows and collides):
    its decisions (a transaction started, a batch refused) are the Python walk's, and so is what
    stays open at the end."""
    spec = _spec(
        transactional=True,
        producers=300,
        abort_ratio=0.3,
        batches_per_transaction=4,
        record_count=6000,
        base_offset=1000,
        batch_size=200,
    )
    data, info = generate_segment(spec)
    seeded = {pid: 900 - i for i, pid in enumerate(range(5000, 5000 + 16 * 37, 16))}
    seeded |= {2**63 - 1: 10, 0: 11, 1 << 40: 12}
    cut = info.batches[len(info.batches) // 2]
    for seeds in ({}, seeded):
        r, taken = _twins(data, 1000, open_transactions=seeds, index_interval_bytes=0)
        assert r.error is None and 0 < taken < r.batch_count
        first, taken = _twins(data[: cut.position], 1000, open_transactions=seeds)
        assert taken > 0 and len(first.open_transactions) > len(seeds) + 100  # many open at the cut
        _twins(data[cut.position :], cut.base_offset, open_transactions=first.open_transactions)
    # a seeded producer that appears in the segment with a non-transactional batch stops the walk
    data2, info2 = generate_segment(_spec(idempotent=True, producers=40, base_offset=1000, batch_size=200))
    pids = sorted({b.producer_id for b in info2.batches})
    late = next(b for b in info2.batches if b.producer_id == pids[-1])
    r, _ = _twins(data2, 1000, open_transactions={**seeded, pids[-1]: 950})
    assert r.error is not None and r.valid_bytes == late.position + late.size


def test_mixed_magic_segment():
    """An upgraded topic: v0, v1 then v2 entries in one segment."""
    parts = []
    offset = 0
    entries = ((0, Compression.GZIP), (1, Compression.NONE), (2, Compression.LZ4), (1, Compression.SNAPPY))
    for magic, codec in entries:
        spec = _spec(magic=magic, compression=codec, base_offset=offset, record_count=80)
        part, info = generate_segment(spec)
        parts.append(part)
        offset = info.next_offset
    log = b"".join(parts)
    for interval in (0, 4096, 333):
        r, taken = _twins(log, 0, index_interval_bytes=interval)
        assert r.error is None and 0 < taken < r.batch_count


def test_semantic_stops():
    """Where recover stops on valid CRCs: offsets going back, offsets outside int32 of the base,
    a non-transactional batch of a producer with an open transaction."""
    data, batches = _generated("idempotent", Compression.NONE)
    again = data + data  # the same offsets twice: the offset index would not grow
    r, taken = _twins(again, 1000, index_interval_bytes=0)
    assert r.valid_bytes == len(data) and r.error is not None and taken == len(batches)
    raw = [data[x.position : x.position + x.size] for x in batches[:4]]
    doubled = raw[0] + raw[1] + raw[1] + raw[2]  # an entry's offset equal to the last entry's
    r, taken = _twins(doubled, 1000, index_interval_bytes=0)
    assert r.valid_bytes == len(raw[0] + raw[1]) and r.error is not None and taken == 2
    for base in (1001, 1000 - 2**31 + 50, 2**63 - 1, -(2**63), 2**64):
        _twins(data, base)
    pid = batches[0].producer_id
    r, _ = _twins(data, 1000, open_transactions={pid: 900})
    # LogSegment.recover counts the batch in validBytes before updating the producer state
    assert r.valid_bytes == batches[1].position and r.batch_count == 1 and r.error is not None


def test_truncated_corrupted_and_zero_tails():
    for kind, codec in (("plain", Compression.NONE), ("transactional", Compression.LZ4)):
        data, batches = _generated(kind, codec)
        for b in batches[::5]:
            for cut in (b.position + k for k in (1, 11, 12, 60, b.size - 1)):
                r, _ = _twins(data[:cut], 1000, index_interval_bytes=0)
                assert r.valid_bytes == b.position and isinstance(r.error, TruncatedError)
            for where in (17, 21, 40, b.size - 1):  # stored CRC, attributes, timestamps, last byte
                bad = bytearray(data)
                bad[b.position + where] ^= 0x01
                r, _ = _twins(bytes(bad), 1000, index_interval_bytes=0)
                assert r.valid_bytes == b.position and isinstance(r.error, CrcMismatchError)
            for tail in (1, 11, 12, 100, len(data) - b.position):
                zeroed = data[: b.position] + bytes(tail)
                r, _ = _twins(zeroed, 1000, index_interval_bytes=0)
                assert r.valid_bytes == b.position and r.error is not None
            for size in (0, 13, 14, 48, 2**31 - 1, -1):  # size field
                bad = bytearray(data)
                struct.pack_into(">i", bad, b.position + 8, size)
                r, _ = _twins(bytes(bad), 1000)
                assert r.valid_bytes == b.position and r.error is not None
            for magic in (0, 1, 3, 255):
                bad = bytearray(data)
                bad[b.position + 16] = magic
                r, _ = _twins(bytes(bad), 1000)
                assert r.valid_bytes == b.position and r.error is not None


# --- random damage --------------------------------------------------------------------------------


def _refix_crcs(buf: bytearray, batches: tuple[BatchInfo, ...]) -> None:
    """Recompute the CRC of every v2 batch whose frame still fits, so mutations reach the checks
    after ensureValid (offsets, attributes, producer ids, timestamps)."""
    for b in batches:
        p = b.position
        if b.magic != 2 or p + 61 > len(buf):
            continue
        (length,) = struct.unpack_from(">i", buf, p + 8)
        if 49 <= length <= len(buf) - p - 12:
            struct.pack_into(">I", buf, p + 17, crc32c(bytes(buf[p + 21 : p + 12 + length])))


_MUTABLE = [
    ("plain", Compression.NONE),
    ("transactional", Compression.NONE),
    ("transactional", Compression.LZ4),
    ("idempotent", Compression.ZSTD),
    ("magic1", Compression.NONE),
]


@pytest.mark.slow
@settings(max_examples=tiers.examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    which=st.sampled_from(_MUTABLE),
    flips=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), max_size=4),
    header_flips=st.lists(
        st.tuples(st.integers(0, 10_000), st.sampled_from([0, 7, 11, 15, 22, 26, 34, 42, 50, 52, 60]),
                  st.integers(0, 255)),
        max_size=3,
    ),
    refix=st.booleans(),
    cut=st.none() | st.floats(0, 1),
    zero_tail=st.integers(0, 300),
    interval=st.sampled_from([0, 100, 4096]),
    base=st.sampled_from([1000, 999, 1500]),
)
def test_random_damage(which, flips, header_flips, refix, cut, zero_tail, interval, base):
    data, batches = _generated(*which)
    buf = bytearray(data)
    for frac, value in flips:
        buf[int(frac * len(buf))] = value
    for k, field, value in header_flips:  # a byte of a header field of the k-th batch
        b = batches[k % len(batches)]
        if b.position + field < len(buf):
            buf[b.position + field] = value
    if refix:
        _refix_crcs(buf, batches)
    if cut is not None:
        del buf[int(cut * len(buf)) :]
    buf += bytes(zero_tail)
    _twins(bytes(buf), base, index_interval_bytes=interval)
