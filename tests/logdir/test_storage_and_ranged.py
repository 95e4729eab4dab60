"""logdir.storage (local paths and URIs) and logdir.ranged (a segment's batches by byte ranges), without a
server: the ranged walk is compared with iter_batches over whole files, real and generated, intact,
truncated and with zero-filled tails, and the bytes it asks for are counted. (Over a real S3 server:
tests/spark/test_object_storage.py.)"""

from __future__ import annotations

import pickle
import random
from pathlib import Path

import pytest

import realworld
from logdoctor.errors import FormatError
from logdoctor.formats.records import Compression, iter_batches
from logdoctor.logdir.ranged import iter_ranged_batches
from logdoctor.logdir.storage import LOCAL, Storage, is_uri, local_path, storage_options
from logdoctor.sample.logdir import TopicSpec, generate_log_dir


class CountingReader:
    """A RangeReader over bytes that records every read."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.size = len(data)
        self.reads: list[tuple[int, int]] = []

    def read_at(self, offset: int, length: int) -> bytes:
        chunk = self.data[offset : offset + length]
        self.reads.append((offset, len(chunk)))
        return chunk

    @property
    def bytes_read(self) -> int:
        return sum(n for _, n in self.reads)


def walk(batches) -> list[tuple]:
    """(position, size, offset) of each batch, then the error's type and text if one ended the walk."""
    out: list[tuple] = []
    try:
        for b in batches:
            out.append((b.position, b.size, b.last_offset))
    except FormatError as exc:
        out.append(("error", type(exc).__name__, str(exc)))
    return out


@pytest.fixture(scope="module")
def generated_logs(tmp_path_factory) -> list[Path]:
    log_dir, _ = generate_log_dir(
        tmp_path_factory.mktemp("ranged") / "b",
        [
            TopicSpec("plain", records_per_partition=3000, records_per_batch=7, segment_bytes=256 * 1024),
            TopicSpec("lz4", records_per_partition=2000, records_per_batch=40, compression=Compression.LZ4),
        ],
    )
    return sorted(log_dir.glob("*/*.log"))


CHUNKS = [(17, 64), (100, 1000), (4096, 16384), (1 << 20, 32 << 20), (17, 17)]


def _variants(data: bytes, rng: random.Random) -> list[bytes]:
    if len(data) < 100:
        return [data]
    return [
        data,
        data[: rng.randrange(len(data))],  # torn anywhere
        data + b"\0" * 5000,  # a zero-filled tail (longer than the small chunks)
        data + b"\0" * 5000 + b"x",  # zeros, then data
    ]


def _check_same_walk(files: list[Path]) -> int:
    rng = random.Random(12)
    checked = 0
    for f in files:
        for data in _variants(f.read_bytes(), rng):
            want = walk(iter_batches(data, source="seg", verify_crc=True))
            for first, most in CHUNKS:
                reader = CountingReader(data)
                got = walk(
                    iter_ranged_batches(
                        reader, source="seg", verify_crc=True, first_chunk=first, max_chunk=most
                    )
                )
                assert got == want, (f, len(data), first, most)
                if want and want[-1][0] != "error":
                    assert reader.bytes_read == len(data)  # an intact file: every byte read once
                checked += 1
    return checked


def test_ranged_walk_is_iter_batches_over_generated_segments(generated_logs):
    assert _check_same_walk(generated_logs) > 0


@pytest.mark.realworld
@pytest.mark.parametrize("names", realworld.log_dir_tiers())
def test_ranged_walk_is_iter_batches_over_every_real_segment(names):
    realworld.require()
    # walks checked: 2,300 in test-fast's log dirs, 4,195 in the others
    assert _check_same_walk(list(realworld.files(suffix=".log", dirs=names))) > 2000


def test_stop_and_hint_bound_the_reads(generated_logs):
    log = max(generated_logs, key=lambda p: p.stat().st_size)
    data = log.read_bytes()
    batches = walk(iter_batches(data))
    mid = batches[len(batches) // 2]
    start = batches[3][0]
    # stop: nothing at or after it is read
    reader = CountingReader(data)
    got = walk(iter_ranged_batches(reader, start=start, stop=mid[0], first_chunk=1000, max_chunk=5000))
    assert got == [b for b in batches if start <= b[0] < mid[0]]
    assert reader.reads[0][0] == start and reader.bytes_read == mid[0] - start
    # hint + hint_offset: reads stop at the hint after one look at the header there
    reader = CountingReader(data)
    first_at_mid = next(b for b in iter_batches(data) if b.position == mid[0]).base_offset
    got = walk(
        iter_ranged_batches(reader, start=start, hint=mid[0], hint_offset=first_at_mid, first_chunk=1000)
    )
    assert got == [b for b in batches if start <= b[0] < mid[0]]
    assert reader.bytes_read == mid[0] - start + 17 and reader.reads[-1] == (mid[0], 17)
    # a hint the batch there contradicts (its offsets are still wanted) is dropped: everything is read
    reader = CountingReader(data)
    got = walk(iter_ranged_batches(reader, start=start, hint=mid[0], hint_offset=first_at_mid + 1))
    assert got == [b for b in batches if b[0] >= start]


# --- storage ----------------------------------------------------------------------------------------


def test_uris_and_local_paths():
    assert is_uri("s3://bucket/a") and is_uri("hdfs://nn:8020/a") and is_uri("gs://b/x")
    assert not is_uri("/data/kafka-logs") and not is_uri("file:///data/x") and not is_uri("C://x")
    assert local_path("file:///data/kafka%20logs") == "/data/kafka logs" and local_path("/x") == "/x"
    st, path = Storage.of("file:///data/kafka-logs")
    assert st is LOCAL and st.is_local and path == "/data/kafka-logs"
    assert storage_options({"S3.Region": "eu-west-1", "s3.endpoint": " ", "topics": "x"}) == (
        ("s3.region", "eu-west-1"),
    )


def test_remote_names_need_no_connection():
    st = Storage("s3://bucket?region=us-east-1", "s3://bucket", "bucket")
    assert pickle.loads(pickle.dumps(st)) == st and not st.is_local and str(st) == "s3://bucket"
    loc = "s3://bucket/brokers/b1/kafka-logs"
    assert st.path(loc) == "bucket/brokers/b1/kafka-logs"
    assert st.join(loc, "t-0", "00000000000000000000.log") == loc + "/t-0/00000000000000000000.log"
    assert st.dirname(loc) == "s3://bucket/brokers/b1" and st.basename(loc) == "kafka-logs"
    assert st.dirname("s3://bucket/x") == "s3://bucket" and st.dirname("s3://bucket") == "s3://bucket"
    assert st.same(loc + "/", loc)
    hdfs = Storage("hdfs://nn:8020", "hdfs://nn:8020", "")
    assert hdfs.path("hdfs://nn:8020/kafka/logs") == "/kafka/logs"
    with pytest.raises(ValueError):
        st.path("s3://other/x")


def test_local_storage_lists_reads_and_globs(tmp_path):
    (tmp_path / "t-0").mkdir()
    (tmp_path / "t-0" / "a.log").write_bytes(b"0123456789")
    (tmp_path / "meta.properties").write_text("version=0\n")
    st, loc = Storage.of(str(tmp_path))
    listing = {e.name: (e.is_dir(), e.size if not e.is_dir() else None) for e in st.list(loc)}
    assert listing == {"t-0": (True, None), "meta.properties": (False, 10)}
    f = st.join(loc, "t-0", "a.log")
    assert st.read(f) == b"0123456789" and st.read_range(f, 3, 4) == b"3456"
    assert bytes(st.map(f)) == b"0123456789" and st.info(f).size == 10 and st.info(f + "x") is None
    with st.open(f) as reader:
        assert reader.size == 10 and reader.read_at(8, 10) == b"89"
    assert st.glob(str(tmp_path / "*" / "*.log")) == [f]
    assert list(st.walk_files(loc)) == [(str(tmp_path / "meta.properties"), 10), (f, 10)]
