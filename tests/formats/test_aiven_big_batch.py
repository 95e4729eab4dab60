"""Issue 57, item 6: an Aiven chunk whose one chunk declares 1 GiB and holds one valid uncompressed batch of
1 GiB (tests/aiven_bomb.build_batch_bomb) took ``dump --deep --remote-storage`` to 4,150 MiB over its process
tree: the chunk's stream was read into a piece, appended to what was held, sliced and copied to bytes (four
copies of the batch), and the batch's records were then decoded into one list, every value copied out. The
stream is now read into one buffer, shared with what is held; an uncompressed batch of more than a window
is decoded a window at a time (``RecordBatchV2.records`` / ``record_windows``), as Kafka's
uncompressedIterator reads it; and a batch larger than any window of a reader by byte ranges (a remote
segment's) is made over ``formats.ranged_bytes.RangedBytes`` (``logdir.reader.iter_batches_from``): its
CRC-32C is taken and its records decoded a window at a time, never the batch whole."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

import aiven_bomb
from logdoctor.errors import CorruptRecordError
from logdoctor.formats.codecs import WINDOW
from logdoctor.formats.records import iter_batches
from logdoctor.logdir.reader import MAX_WINDOW, RangedLogReader, iter_batches_from


@pytest.fixture(params=["native", "pure"])
def decoders(request, monkeypatch):
    """Each test with the C decoders and with their pure-Python twin."""
    from logdoctor.formats import batch_v2

    if request.param == "native":
        if batch_v2.NATIVE is None:
            pytest.skip("the C extension is not built")
        monkeypatch.setattr(batch_v2, "DECODERS", batch_v2.NATIVE)
    else:
        monkeypatch.setattr(batch_v2, "DECODERS", batch_v2.PURE_PYTHON)
    return request.param


def _batch(count: int, value_size: int, fill: int = 0) -> bytes:
    header, pieces, size = aiven_bomb.big_batch(1000, count, value_size, fill)
    data = header + b"".join(pieces())
    assert len(data) == size
    return data


def test_an_uncompressed_batch_over_a_window_is_decoded_a_window_at_a_time(decoders) -> None:
    data = _batch(20, 1 << 20, 0x41)  # 20 MiB: more than codecs.WINDOW (8 MiB)
    assert len(data) > 2 * WINDOW
    (batch,) = iter_batches(data, verify_crc=True)
    windows = list(batch.record_windows())
    assert len(windows) >= 3  # never one list of every value
    records = [r for w in windows for r in w]
    assert [r.offset for r in records] == list(range(1000, 1020))
    assert all(r.key is None and r.value == b"A" * (1 << 20) for r in records)
    assert [r.offset for r in batch.records()] == list(range(1000, 1020))


def test_a_bad_record_in_a_large_uncompressed_batch_is_named_as_the_whole_batch_names_it(decoders) -> None:
    """The record after the tenth cut short by a length that runs past the section: the windowed decoder
    names the same position and record as the one-call decoder (``record_list``) of the whole batch."""
    import crc32c

    data = bytearray(_batch(20, 1 << 20))
    at = 61
    for _ in range(10):  # the eleventh record's length varint
        n, shift, i = 0, 0, at
        while True:
            b = data[i]
            n |= (b & 0x7F) << shift
            i += 1
            if not b & 0x80:
                break
            shift += 7
        at = i + ((n >> 1) ^ -(n & 1))
    data[at + 3 : at + 8] = b"\xff\xff\xff\xff\x7f"  # the offset delta: a varint of five bytes, out of range
    data[17:21] = crc32c.crc32c(bytes(data[21:])).to_bytes(4, "big")
    (batch,) = iter_batches(bytes(data), verify_crc=True)
    with pytest.raises(CorruptRecordError) as whole:
        batch.record_list()
    with pytest.raises(CorruptRecordError) as windowed:
        list(batch.records())
    assert str(windowed.value) == str(whole.value)
    assert "record 10" in str(whole.value)


class _Ranges:
    """A reader by byte ranges over ``data``; the longest read asked for."""

    def __init__(self, data: bytes) -> None:
        self.data, self.size, self.longest = data, len(data), 0

    def read_at(self, offset: int, length: int) -> bytes:
        self.longest = max(self.longest, length)
        return self.data[offset : offset + length]


def _segment(batch: bytes) -> bytes:
    small = _batch(2, 10, 0x42)  # a batch of 2 records before and after the large one
    return small + batch + small


def test_a_batch_over_any_window_of_a_ranged_reader_is_read_a_window_at_a_time(decoders) -> None:
    data = _batch(24, 1 << 20, 0x43)  # 24 MiB: more than logdir.reader.MAX_WINDOW (16 MiB)
    assert len(data) > MAX_WINDOW
    ranges = _Ranges(_segment(data))
    reader = RangedLogReader(ranges, source="x.log")
    batches = list(iter_batches_from(reader, 0, window=None, verify_crc=True))
    n = len(_batch(2, 10, 0x42))
    assert [(b.position, b.size, b.record_count) for b in batches] == [
        (0, n, 2), (n, len(data), 24), (n + len(data), n, 2)
    ]  # fmt: skip
    big = batches[1]
    assert big.crc_valid() and big.compute_crc() == int.from_bytes(data[17:21], "big")
    records = list(big.records())
    assert [r.offset for r in records] == list(range(1000, 1024))
    assert all(r.value == b"C" * (1 << 20) for r in records)
    assert ranges.longest <= MAX_WINDOW  # never the batch whole


def test_a_damaged_byte_in_a_batch_over_any_window_fails_its_crc() -> None:
    from logdoctor.errors import CrcMismatchError

    data = bytearray(_batch(24, 1 << 20))
    data[20 << 20] ^= 1  # a byte of a value, 20 MiB in: the CRC no longer matches
    reader = RangedLogReader(_Ranges(_segment(bytes(data))), source="x.log")
    (_, big, _) = iter_batches_from(reader, 0, window=None)
    assert not big.crc_valid()
    with pytest.raises(CrcMismatchError):
        list(iter_batches_from(RangedLogReader(_Ranges(_segment(bytes(data)))), 0, verify_crc=True))


@pytest.mark.slow
@pytest.mark.skipif(
    "asan" in os.environ.get("LD_PRELOAD", ""),
    reason="peak RSS is not a measure under ASan (shadow memory, quarantined frees): make asan-check",
)
def test_dump_of_a_chunk_holding_a_1_gib_batch_holds_a_window(tmp_path: Path) -> None:
    """Measured over the process tree (tests/aiven_bomb.run_measured): 4,150 MiB before, 114 after (1,112
    with the stream read once but the batch still whole)."""
    _, store, log, size = aiven_bomb.build_batch_bomb(tmp_path)
    assert log.stat().st_size < 200_000 and size > 1 << 30
    rc, out, peak = aiven_bomb.run_measured(
        ["dump", "--deep", "--remote-storage", str(store), str(log)], tmp_path
    )
    assert rc == 0, out[-3000:]
    lines = out.splitlines()
    (row,) = [line.split() for line in lines if line.split()[:3] == ["63727", "648", "1671"]]
    assert row[3:7] == ["1024", "2", "none", "ok"]
    values = [line for line in lines if re.match(r"\s+\| offset \d+ ", line) and "value 1048576 B" in line]
    assert [int(line.split()[2]) for line in values] == list(range(648, 1672))
    assert "7 batches, 1348 records, offsets 324..1671" in out and "0 findings" in out
    assert peak < 300, peak
