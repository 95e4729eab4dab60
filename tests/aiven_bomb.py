"""Issue 48, item 8: an Aiven chunk that declares far more than any window (the audit's: a 58 KB zstd frame of
1 GiB), built on a copy of ../shared/tiered's compressed Aiven store.

payments-0's segment 324 becomes one chunk (``originalChunkSize`` = ``originalFileSize`` = ``size``, the
chunk index re-encoded): one zstd frame, its content size declared as Aiven's
``CompressionChunkEnumeration`` writes it, of the segment's real bytes followed by ``size`` minus their
length bytes of ``fill``. Every size check passes (the manifest declares what the frame holds): the chunk
is only far larger than any window, and the object a few tens of KB.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import realworld

SEGMENT = 324
TOPIC_DIR = "payments-cGF5bWVudHMtdG9waWMwMQ"


def zstd_frame(head: bytes, size: int, fill: int) -> bytes:
    """One zstd frame of ``head`` then ``fill`` up to ``size`` bytes, its content size declared."""
    import zstandard

    out = io.BytesIO()
    with zstandard.ZstdCompressor(level=3).stream_writer(out, size=size, closefd=False) as w:
        w.write(head)
        block = bytes([fill]) * (1 << 20)
        left = size - len(head)
        while left:
            w.write(block[: min(left, len(block))])
            left -= min(left, len(block))
    return out.getvalue()


def build(tmp_path: Path, size: int, fill: int = 0) -> tuple[Path, Path, Path]:
    """(the compressed store's log dir (read in place), a copy of the store with the bomb, the bomb's
    ``.log`` object)."""
    import zstandard

    from logdoctor.formats.aiven_rsm import encode_chunk_sizes

    tiered = realworld.require_tiered()
    store = realworld.writable_copy(tiered / "aiven" / "compressed" / "storage", tmp_path / "store")
    folder = store / TOPIC_DIR / "0"
    (log,) = folder.glob(f"{SEGMENT:020d}-*.log")
    (manifest_path,) = folder.glob(f"{SEGMENT:020d}-*.rsm-manifest")
    original = tiered / "original" / "kafka-logs" / "payments-0" / f"{SEGMENT:020d}.log"
    frame = zstd_frame(original.read_bytes(), size, fill)
    log.write_bytes(frame)
    obj = json.loads(manifest_path.read_text())
    packed = zstandard.ZstdCompressor().compress(encode_chunk_sizes([len(frame)]))
    obj["chunkIndex"].update(
        originalChunkSize=size,
        originalFileSize=size,
        transformedChunks=base64.b64encode(packed).decode(),
    )
    manifest_path.write_text(json.dumps(obj))
    return tiered / "aiven" / "compressed" / "kafka-logs", store, log


_WRAPPER = """
import resource, subprocess, sys
rc = subprocess.call(sys.argv[1:], stdout=open(sys.argv[0] + ".out", "w"), stderr=subprocess.STDOUT)
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def _tree_rss_kb(pid: int) -> int:
    """The resident set of ``pid`` and every process below it (/proc), in KiB."""
    import os

    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as fh:
                total += next((int(x.split()[1]) for x in fh if x.startswith("VmRSS:")), 0)
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as fh:
                    todo.extend(int(c) for c in fh.read().split())
        except (OSError, ValueError):
            continue
    return total


def run_measured(args: list[str], out: Path, timeout: float = 900) -> tuple[int, str, float]:
    """(exit code, output, peak MiB) of ``python -m logdoctor ARGS`` in a process of its own: the peak is
    the larger of the process tree's resident set summed, polled every 20 ms, and the largest single
    process's own peak (RUSAGE_CHILDREN's ru_maxrss of a wrapper that waits for the command only)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    wrapper = subprocess.Popen(
        [sys.executable, "-c", _WRAPPER, sys.executable, "-m", "logdoctor", *args],
        stdout=subprocess.PIPE,
        text=True,
        cwd=out,
        start_new_session=True,  # its whole tree (Spark's JVM, workers) is stopped with it on a timeout
    )
    polled = 0
    deadline = time.monotonic() + timeout
    while wrapper.poll() is None:
        polled = max(polled, _tree_rss_kb(wrapper.pid))
        if time.monotonic() > deadline:
            os.killpg(wrapper.pid, signal.SIGKILL)
            wrapper.wait()
            raise TimeoutError(args)
        time.sleep(0.02)
    rc, single = map(int, wrapper.stdout.read().split())  # type: ignore[union-attr]
    wrapper.stdout.close()  # type: ignore[union-attr]
    text = (out / "-c.out").read_text()
    return rc, text, max(polled, single) / 1024


def _varint(n: int) -> bytes:
    """Kafka's zig-zag varint (DefaultRecord.java's ByteUtils.writeVarint)."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z & ~0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def big_batch(base_offset: int, count: int, value_size: int, fill: int = 0) -> tuple[bytes, Any, int]:
    """(the 61-byte header, a function giving the records section's pieces, the batch's size) of one valid
    uncompressed v2 batch of ``count`` records whose values are ``value_size`` bytes of ``fill``, never held
    whole: the CRC-32C is taken over the pieces."""
    import struct

    import crc32c

    block = bytes([fill]) * min(value_size, 1 << 20)

    def record_head(i: int) -> bytes:
        body = b"\x00" + _varint(0) + _varint(i) + _varint(-1) + _varint(value_size)
        return _varint(len(body) + value_size + 1) + body

    def pieces() -> Iterator[bytes]:
        for i in range(count):
            yield record_head(i)
            left = value_size
            while left:
                yield block[: min(left, len(block))]
                left -= min(left, len(block))
            yield b"\x00"  # no headers

    section = sum(len(record_head(i)) + value_size + 1 for i in range(count))
    size = 61 + section
    after_crc = struct.pack(
        ">hiqqqhii", 0, count - 1, 1_700_000_000_000, 1_700_000_000_000, -1, -1, -1, count
    )
    crc = crc32c.crc32c(after_crc)
    for piece in pieces():
        crc = crc32c.crc32c(piece, crc)
    head = struct.pack(">qiibI", base_offset, size - 12, 0, 2, crc) + after_crc
    return head, pieces, size


def build_batch_bomb(
    tmp_path: Path, count: int = 1024, value_size: int = 1 << 20
) -> tuple[Path, Path, Path, int]:
    """Like :func:`build`, but the chunk holds the segment's real bytes then ONE valid batch (offset 648,
    after the segment's last) of ``count`` records of ``value_size`` zero bytes: 1 GiB by default. (log dir,
    store, the ``.log`` object, the batch's size)."""
    import zstandard

    from logdoctor.formats.aiven_rsm import encode_chunk_sizes

    tiered = realworld.require_tiered()
    store = realworld.writable_copy(tiered / "aiven" / "compressed" / "storage", tmp_path / "store")
    folder = store / TOPIC_DIR / "0"
    (log,) = folder.glob(f"{SEGMENT:020d}-*.log")
    (manifest_path,) = folder.glob(f"{SEGMENT:020d}-*.rsm-manifest")
    original = (tiered / "original" / "kafka-logs" / "payments-0" / f"{SEGMENT:020d}.log").read_bytes()
    header, pieces, batch_size = big_batch(648, count, value_size)
    size = len(original) + batch_size
    out = io.BytesIO()
    with zstandard.ZstdCompressor(level=3).stream_writer(out, size=size, closefd=False) as w:
        w.write(original)
        w.write(header)
        for piece in pieces():
            w.write(piece)
    frame = out.getvalue()
    log.write_bytes(frame)
    obj = json.loads(manifest_path.read_text())
    packed = zstandard.ZstdCompressor().compress(encode_chunk_sizes([len(frame)]))
    obj["chunkIndex"].update(
        originalChunkSize=size,
        originalFileSize=size,
        transformedChunks=base64.b64encode(packed).decode(),
    )
    manifest_path.write_text(json.dumps(obj))
    return tiered / "aiven" / "compressed" / "kafka-logs", store, log, batch_size
