"""The replay plan counts a source partition from columns of whole batches
(``PartitionSource.sizes``, the C record decoder over runs of batches); ``--apply`` sends what
``PartitionSource.records`` yields, one record at a time. Both must be the same records: the same offsets,
timestamps, sizes (keys, values, header keys as UTF-8 and header values), header counts and keys, the same
bytes by codec and the same problems. Checked on every real log dir of ../shared (realworld, semantics'
transactions, forensics, tiered), under both isolation levels, and on generated segments of every shape the
record decoder knows (headers, null keys and values, LogAppendTime, magic 0 and 1, every codec, aborted and
open transactions, a CRC-bad batch)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import realworld
from logdoctor.formats.record_types import Compression, TimestampType
from logdoctor.logdir.discovery import find_log_dirs
from logdoctor.logdir.read_options import ReadOptions
from logdoctor.logdir.read_plan import plan_read
from logdoctor.replay.source import PartitionSource
from logdoctor.sample.records import RecordDataSpec, generate_segment

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
ISOLATION = ("read_committed", "read_uncommitted")


def _agree(paths: list[str], isolation: str) -> int:
    """The reads of every partition of ``paths`` compared; the records compared."""
    opts = ReadOptions(isolation_level=isolation)
    read = plan_read(paths, opts)
    seen = 0
    for ref in read.refs:
        source = PartitionSource.of(ref, opts, read.decisions)
        whole = list(source.records())
        rows = [
            (r.offset, r.timestamp, r.size, len(r.headers or ()), None if r.key is None else bytes(r.key))
            for r in whole
        ]
        by_records = (dict(source.codec_bytes), list(source.problems))
        runs = list(source.sizes(keys=True))
        assert all(len(run.offsets) for run in runs), ref.path
        cols = [np.concatenate([getattr(run, f) for run in runs]) if runs else [] for f in
                ("offsets", "timestamps", "sizes", "headers")]  # fmt: skip
        keys = [k for run in runs for k in run.keys]
        assert [(*(int(c[i]) for c in cols), keys[i]) for i in range(len(keys))] == rows, ref.path
        assert (dict(source.codec_bytes), list(source.problems)) == by_records, ref.path
        assert list(source.codec_bytes) == list(by_records[0]), ref.path  # the codec met first, first
        middle = rows[len(rows) // 2][0] if rows else None
        for start in (None, middle):  # from the start, and from an offset as a resumed replay
            if start is not None:
                whole = list(source.records(start))
                by_records = (dict(source.codec_bytes), list(source.problems))
            want = [(r.offset, r.timestamp, r.key, r.value, r.headers, r.size) for r in whole]
            runs = list(source.columns(start))
            assert all(run.offsets for run in runs), ref.path
            got = [
                (*r, None if run.headers is None else run.headers[i], size)
                for run in runs
                for i, (*r, size) in enumerate(
                    zip(run.offsets, run.timestamps, run.keys, run.values, run.sizes, strict=True)
                )
            ]
            assert got == want, ref.path
            assert (dict(source.codec_bytes), list(source.problems)) == by_records, ref.path
        seen += len(rows)
    return seen


@pytest.mark.parametrize("isolation", ISOLATION)
@pytest.mark.parametrize("names", realworld.log_dir_tiers())
def test_real_log_dirs(names: list[str], isolation: str) -> None:
    dirs = [str(realworld.REALWORLD / n) for n in names]
    assert _agree(dirs, isolation) > 0


@pytest.mark.parametrize("isolation", ISOLATION)
@pytest.mark.parametrize("folder", ["semantics/kafka-logs", "forensics", "tiered"])
def test_shared_log_dirs(folder: str, isolation: str) -> None:
    root = SHARED / folder
    if not root.is_dir():
        pytest.skip(f"{root} is not there (a clone without ../shared)")
    dirs = [str(d) for d in find_log_dirs(str(root))]
    assert _agree(dirs, isolation) > 0


SHAPES = {
    "headers-nulls": RecordDataSpec(record_count=900, headers_per_record=3, null_key_ratio=0.3,
                                    tombstone_ratio=0.2, value_size=200),
    "log-append-time-zstd": RecordDataSpec(record_count=700, timestamp_type=TimestampType.LOG_APPEND_TIME,
                                           compression=Compression.ZSTD, headers_per_record=1),
    "lz4": RecordDataSpec(record_count=800, compression=Compression.LZ4, value_size=300),
    "gzip-snappy": RecordDataSpec(record_count=500, compression=Compression.GZIP),
    "snappy": RecordDataSpec(record_count=500, compression=Compression.SNAPPY, key_cardinality=0),
    "magic-1": RecordDataSpec(record_count=300, magic=1),
    "magic-0-gzip": RecordDataSpec(record_count=300, magic=0, compression=Compression.GZIP),
    "transactions": RecordDataSpec(record_count=2000, transactional=True, producers=3, abort_ratio=0.3,
                                   value_size=100),
}  # fmt: skip


@pytest.mark.parametrize("isolation", ISOLATION)
def test_generated_shapes(tmp_path: Path, isolation: str) -> None:
    log_dir = tmp_path / "kafka-logs"
    for i, (name, spec) in enumerate(SHAPES.items()):
        data, _info = generate_segment(spec)
        folder = log_dir / f"{name}-{i}"
        folder.mkdir(parents=True)
        (folder / "00000000000000000000.log").write_bytes(data)
    # two segments whose offsets overlap (the second from 301, the first to 499, batches of ~25 records
    # across 499): each offset read once, by both reads
    overlap = log_dir / "overlap-9"
    overlap.mkdir()
    for base, count in ((0, 500), (301, 400)):
        spec = RecordDataSpec(record_count=count, base_offset=base, value_size=600, seed=base)
        (overlap / f"{base:020d}.log").write_bytes(generate_segment(spec)[0])
    # a CRC-bad batch in the middle of one partition: left out alone, named the same by both reads
    bad = log_dir / "lz4-2" / "00000000000000000000.log"
    raw = bytearray(bad.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    bad.write_bytes(bytes(raw))
    assert _agree([str(log_dir)], isolation) > 4000
