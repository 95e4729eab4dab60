"""Issue 31 item 3: one byte flipped inside a batch (CRC mismatch, framing intact) costs that batch only.

The walk leaves out alone the batch whose CRC does not match where the next entry is where its size says
(or the buffer ends right after it), names it (position, offsets, stored and computed CRC), and goes on;
where the framing breaks right after it, the batch is where the damage starts, as before. kafka-python (an
independent decoder) gives the records expected: every batch whose CRC it finds valid."""

from __future__ import annotations

import struct

import crc32c
import pytest
from kafka.record import MemoryRecords

from logdoctor.errors import CrcMismatchError
from logdoctor.formats.records import iter_batches, skip_crc_mismatches
from logdoctor.logdir.reader import LogReader, iter_batches_from
from logdoctor.sample.logdir import TopicSpec, generate_log_dir


@pytest.fixture(scope="module")
def segment(tmp_path_factory) -> bytes:
    root, _ = generate_log_dir(
        tmp_path_factory.mktemp("crcskip") / "logs",
        [TopicSpec("t", partitions=1, records_per_partition=2000, records_per_batch=10, value_size=60)],
    )
    (log,) = sorted(root.glob("t-0/*.log"))
    return log.read_bytes()


def _starts(data: bytes) -> list[int]:
    pos, out = 0, []
    while pos + 12 <= len(data):
        out.append(pos)
        pos += 12 + struct.unpack_from(">i", data, pos + 8)[0]
    return out


def _kafka_python_offsets(data: bytes) -> list[int]:
    """Offsets of every record kafka-python reads from batches whose CRC it finds valid."""
    out, records = [], MemoryRecords(data)
    while (batch := records.next_batch()) is not None:
        if batch.validate_crc():
            out.extend(r.offset for r in batch)
    return out


def _flip(data: bytes, at: int) -> bytes:
    b = bytearray(data)
    b[at] ^= 0xFF
    return bytes(b)


@pytest.mark.parametrize("which", ["first", "middle", "last"])
def test_a_flipped_byte_costs_its_batch_only(segment, which):
    starts = _starts(segment)
    i = {"first": 0, "middle": len(starts) // 2, "last": len(starts) - 1}[which]
    bad = starts[i]
    data = _flip(segment, bad + 70)  # inside the records: the CRC no longer matches
    skipped: list = []
    got = [r.offset for b in skip_crc_mismatches(iter_batches(data), skipped) for r in b.records()]
    assert got == _kafka_python_offsets(data)
    assert len(got) == 2000 - 10
    (s,) = skipped
    stored = struct.unpack_from(">I", data, bad + 17)[0]
    assert (s.position, s.base_offset, s.last_offset) == (bad, i * 10, i * 10 + 9)
    assert s.stored_crc == stored and s.computed_crc == crc32c.crc32c(data[bad + 21 : _end(data, bad)])
    assert f"position {bad}" in s.describe() and f"{stored:#010x}" in s.describe()


def _end(data: bytes, pos: int) -> int:
    return pos + 12 + struct.unpack_from(">i", data, pos + 8)[0]


def test_windows_of_a_reader_skip_the_same_batch_once(segment):
    """A windowed walk (the one remote reads and dump use) re-reads batches cut by a window edge: the bad
    batch is still named once and every other record is read."""
    starts = _starts(segment)
    bad = starts[37]
    data = _flip(segment, bad + 80)
    skipped: list = []
    walk = iter_batches_from(LogReader(data), 0, window=4096)
    got = [r.offset for b in skip_crc_mismatches(walk, skipped) for r in b.records()]
    assert got == _kafka_python_offsets(data) and [s.position for s in skipped] == [bad]


def test_broken_framing_after_a_crc_mismatch_stops_there_as_before(segment):
    starts = _starts(segment)
    bad = starts[50]
    b = bytearray(_flip(segment, bad + 70))
    struct.pack_into(">i", b, starts[51] + 8, 3)  # the next entry's size: below the minimum
    skipped: list = []
    walk = skip_crc_mismatches(iter_batches(bytes(b)), skipped)
    got = []
    with pytest.raises(CrcMismatchError) as err:
        for batch in walk:
            got.append(batch.base_offset)
    assert err.value.position == bad and skipped == []
    assert got == list(range(0, 500, 10))


def test_two_bad_batches_in_a_row_are_each_skipped(segment):
    starts = _starts(segment)
    data = _flip(_flip(segment, starts[10] + 70), starts[11] + 70)
    skipped: list = []
    got = [r.offset for b in skip_crc_mismatches(iter_batches(data), skipped) for r in b.records()]
    assert got == _kafka_python_offsets(data) and [s.position for s in skipped] == starts[10:12]
