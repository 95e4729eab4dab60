"""Issue 31 item 7, from the audit: an Aiven chunk whose zstd frame declares a huge content size was
decompressed in full before its size was checked (``dump``: 1.1 GB for a 32 KB object declaring 1 GiB).
The frame's declared size is now checked against the chunk's original size (the manifest's chunk index)
before anything is decompressed: a CorruptRecordError naming both, and a peak (the resident set a
subprocess of its own reads of itself: VmHWM) far below the size declared."""

from __future__ import annotations

import os
import subprocess
import sys

_SCRIPT = """
import io, zstandard
from logdoctor.errors import CorruptRecordError
from logdoctor.formats.aiven_rsm import build_manifest, detransform_chunk, parse_manifest

out = io.BytesIO()
with zstandard.ZstdCompressor(level=1).stream_writer(out, size=1 << 30, closefd=False) as w:
    zeros = bytes(1 << 20)
    for _ in range(1024):
        w.write(zeros)
frame = out.getvalue()
manifest = parse_manifest(build_manifest(original_chunk_size=4 << 20, original_file_size=4 << 20,
    transformed_sizes=[len(frame)], indexes={}, compression=True, topic="t", topic_id="A" * 22,
    partition=0, segment_id="A" * 22, start_offset=0, end_offset=0))
try:
    detransform_chunk(frame, manifest, None, expected_size=4 << 20, source="x.log", position=0)
except CorruptRecordError as exc:
    # VmHWM: this process's peak since exec (RUSAGE_SELF's ru_maxrss keeps the test process's peak across
    # fork and exec, and RUSAGE_CHILDREN there is the max over all the test process's children)
    hwm = next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM:"))
    print(len(frame), hwm, exc)
"""


def test_a_chunk_declaring_1_gib_is_refused_before_it_is_decompressed():
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    size, peak_kb, message = proc.stdout.strip().split(" ", 2)
    assert int(size) < 100_000  # the bomb: a few tens of KB
    assert "at most 4194304 bytes" in message and "1073741824 declared" in message and "x.log" in message
    if "asan" in os.environ.get("LD_PRELOAD", ""):
        return  # peak RSS is not a measure under ASan (shadow memory, quarantined frees): make asan-check
    peak_mb = int(peak_kb) / 1024
    assert peak_mb < 300, peak_mb  # 1 GiB declared; the whole frame decompressed was 1.1 GB
