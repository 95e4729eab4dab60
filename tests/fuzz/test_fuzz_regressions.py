"""The inputs the hostile-input audit (issue 15) and our own fuzz runs found, kept as explicit cases.

Each failed on the code before its fix: an ``OverflowError`` out of the segment walk on a batch whose
base offset is near 2^63 (38 mutated ``.log`` files), ``ValueError`` out of the text parsers on numbers
longer than Python's 4,300-digit limit for ``int(str)``, and an offset checkpoint that took seconds.
Batches are built by kafka-python (an independent encoder), then given the audit's field values.
"""

from __future__ import annotations

import contextlib
import os
import struct
import time

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from logdoctor.checks.state.segment_walk import walk
from logdoctor.errors import LogDoctorError
from logdoctor.formats import checkpoint as cp
from logdoctor.formats.partition_metadata import parse_partition_metadata
from logdoctor.formats.properties import parse_meta_properties
from logdoctor.formats.quorum_state import parse_quorum_state
from logdoctor.formats.records import scan_batches

LONG_MAX = 2**63 - 1


def _kp_batch(n: int, base_offset: int) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=2**20)  # fmt: skip
    for i in range(n):
        builder.append(i, 1_700_000_000_000 + i, b"k%d" % i, b"v%d" % i, [])
    data = bytearray(builder.build())
    # the base offset (bytes 0-8) is outside the CRC (which covers attributes onwards), as in the audit
    data[0:8] = struct.pack(">q", base_offset)
    return bytes(data)


@pytest.mark.parametrize("base", [LONG_MAX, LONG_MAX - 1, LONG_MAX - 3])
def test_walk_of_a_batch_whose_last_offset_passes_long_max_wraps_like_java(base: int) -> None:
    seg = _kp_batch(3, 0) + _kp_batch(5, base)
    res = walk(seg, 0, verify_crc=True, with_positions=True)
    assert res.batches == 2 and res.crc_errors == 0
    # Java: baseOffset + lastOffsetDelta in long arithmetic (DefaultRecordBatch.lastOffset) wraps
    wrapped = (base + 4 + 2**63) % 2**64 - 2**63
    assert list(res.positions) == [0, len(_kp_batch(3, 0))]
    assert list(res.last_offsets) == [2, wrapped]
    assert res.last_offset == wrapped


def test_scan_batches_reads_the_batch_at_long_max() -> None:
    result = scan_batches(_kp_batch(2, LONG_MAX), source="x.log", verify_crc=True)
    assert [b.base_offset for b in result.batches] == [LONG_MAX]


HUGE = "9" * 5000  # past Python's default limit of 4,300 digits for int(str)
QUORUM_STATE_HUGE = (
    '{"leaderId": '
    + HUGE
    + ', "leaderEpoch": 1, "votedId": -1, "appliedOffset": 0, "currentVoters": [], "data_version": 0}'
)


@pytest.mark.parametrize(
    "parse, text",
    [
        (cp.parse_offset_checkpoint, f"0\n1\ntopic 0 {HUGE}\n"),
        (cp.parse_offset_checkpoint, f"0\n{HUGE}\ntopic 0 5\n"),
        (cp.parse_offset_checkpoint, f"{HUGE}\n1\ntopic 0 5\n"),
        (cp.parse_offset_checkpoint, f"0\n1\ntopic {HUGE} 5\n"),
        (cp.parse_leader_epoch_checkpoint, f"0\n1\n{HUGE} 0\n"),
        (cp.parse_leader_epoch_checkpoint, f"0\n1\n0 {HUGE}\n"),
        (parse_partition_metadata, f"version: {HUGE}\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n"),
        (parse_meta_properties, f"version=0\nbroker.id={HUGE}\n"),
        (parse_meta_properties, f"version={HUGE}\nnode.id=1\ncluster.id=x\n"),
        (parse_quorum_state, QUORUM_STATE_HUGE),
        (parse_quorum_state, "[" * 100_000 + "]" * 100_000),
    ],
)
def test_numbers_past_pythons_digit_limit_are_typed_errors_or_out_of_range(parse, text: str) -> None:
    # a typed error naming the file is what we want; returning with the value refused is fine too
    with contextlib.suppress(LogDoctorError):
        parse(text.encode(), source="f")


def test_checkpoint_with_many_long_lines_parses_quickly() -> None:
    """The audit's 5.6 s checkpoint: lines copied dozens of times and digits grown to thousands."""
    line = f"topic-{'x' * 200} 0 {'9' * 400}\n"
    text = "0\n100000\n" + line * 100_000
    start = time.process_time()
    with pytest.raises(LogDoctorError):
        cp.parse_offset_checkpoint(text.encode(), source="f")
    # a bound on pathological (quadratic) slowness, not a benchmark: linear work is ~1-3 s of this
    # process's CPU; quadratic work on 100,000 lines would take minutes. CPU time, not wall time: on a
    # machine loaded by two suites at once the wall clock of the same work took 21 s. Not under
    # scripts/asan-check.sh, where every allocation goes through ASan's slower malloc.
    if not os.environ.get("LOGDOCTOR_SANITIZED"):
        assert time.process_time() - start < 15.0
