"""Issue 48, item 9: one lz4 batch that decompresses to far more than a window (the audit's: 4.4 MB on
disk, 1 GiB of records) took ``export`` to 2.6-3.7 GiB: the C walker decompressed the whole frame into its
scratch buffer (``decode_batch_columns``), where gzip, zstd and snappy go through ``codecs.WINDOW``-sized
windows. Now the C walker stops an lz4 frame at the window (``_speedups.configure_window``, the same 8 MiB
as codecs.WINDOW) and ``decode_v2_run`` raises SectionTooLargeError, so the export reads that batch's
records a window at a time (``record_windows``), as it reads a gzip or zstd one. The same for an lz4 frame
with block checksums, which the C walker leaves to codecs.py: a window at most, never the whole section."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import lz4.frame
import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from logdoctor.formats import codecs, native
from logdoctor.formats.batch_v2 import SectionTooLargeError
from logdoctor.formats.columns import decode_columns
from logdoctor.formats.crc import crc32c
from logdoctor.formats.records import iter_batches

needs_c = pytest.mark.skipif(not native.HAVE_SPEEDUPS, reason="the C extension is not built")


def _lz4_batch(n: int, value_size: int, *, block_checksum: bool = False) -> bytes:
    """A v2 batch of ``n`` records of ``value_size`` zero bytes, its records section one lz4 frame as
    Kafka writes it (independent 64 KB blocks, no content size)."""
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=2**31 - 1)  # fmt: skip
    value = bytes(value_size)
    for i in range(n):
        b.append(i, 1_700_000_000_000 + i, b"k%d" % i, value, [])
    plain = b.build()
    section = lz4.frame.compress(
        bytes(plain[61:]), block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False,
        content_checksum=False, block_checksum=block_checksum, store_size=False,
    )  # fmt: skip
    head = bytearray(plain[:61])
    struct.pack_into(">i", head, 8, 61 - 12 + len(section))
    struct.pack_into(">h", head, 21, 3)  # lz4
    data = head + section
    data[17:21] = crc32c(bytes(data[21:])).to_bytes(4, "big")
    return bytes(data)


def test_the_c_window_is_the_codecs_window() -> None:
    if native.speedups is not None:
        assert native.speedups.configure_window(codecs.WINDOW) == codecs.WINDOW


@pytest.mark.parametrize("block_checksum", [False, True])
def test_an_lz4_batch_larger_than_a_window_is_read_a_window_at_a_time(block_checksum: bool) -> None:
    small = _lz4_batch(3, 1000, block_checksum=block_checksum)
    big = _lz4_batch(24, 1 << 20, block_checksum=block_checksum)  # 24 MiB of records: three windows
    data = small + big
    first, second = iter_batches(data, verify_crc=True)
    assert len(decode_columns([first])) == 3
    with pytest.raises(SectionTooLargeError) as err:
        decode_columns([first, second])
    assert err.value.batch.position == len(small)
    windows = [len(w) for w in second.record_windows()]
    assert sum(windows) == 24 and len(windows) > 1

    from logdoctor.spark.sources.batch_decode import _decode  # the export's reading of a run of batches

    parts = list(_decode([first, second], "x.log", bad := []))
    assert not bad
    assert sum(len(cols) for _, cols in parts) == 27 and len(parts) > 2


_PEAK = """
import sys
from logdoctor.formats.records import iter_batches
from logdoctor.spark.sources.batch_decode import _decode
data = open(sys.argv[1], "rb").read()
rows = sum(len(cols) for _, cols in _decode(list(iter_batches(data, verify_crc=True)), "x.log", []))
hwm = next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM:"))
print(rows, hwm)
"""


def _peak(log: Path) -> tuple[int, float]:
    """(rows, peak MiB) of the export's decoding of ``log`` in a process of its own (VmHWM)."""
    proc = subprocess.run(
        [sys.executable, "-c", _PEAK, str(log)], capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows, peak_kb = map(int, proc.stdout.split())
    return rows, peak_kb / 1024


@needs_c
def test_the_exports_decoding_of_an_lz4_bomb_costs_what_a_gzip_one_does(tmp_path: Path) -> None:
    lz4_log = tmp_path / "bomb-lz4.log"
    lz4_log.write_bytes(_lz4_batch(96, 2 << 20))  # 192 MiB of records in ~0.8 MB
    assert lz4_log.stat().st_size < 2 << 20
    b = DefaultRecordBatchBuilder(magic=2, compression_type=1, is_transactional=False, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=2**31 - 1)  # fmt: skip
    for i in range(96):
        b.append(i, 1_700_000_000_000 + i, b"k%d" % i, bytes(2 << 20), [])
    gzip_log = tmp_path / "bomb-gzip.log"
    gzip_log.write_bytes(bytes(b.build()))
    rows, lz4_mb = _peak(lz4_log)
    assert rows == 96
    rows, gzip_mb = _peak(gzip_log)
    assert rows == 96
    # measured: lz4 426 MiB before (the whole section in the C scratch, its values copied), 203 after;
    # gzip 191 (the windowed path). Under ASan (make asan-check) shadow memory and quarantined frees inflate
    # both alike (723 and 734 MiB): the comparison holds there, the absolute bound does not apply.
    assert lz4_mb < 1.25 * gzip_mb + 16, (lz4_mb, gzip_mb)
    if "asan" not in os.environ.get("LD_PRELOAD", ""):
        assert lz4_mb < 300, (lz4_mb, gzip_mb)
