"""Issue 57's damaged copies of ../shared/semantics (its README.md gives the facts), rebuilt in a temporary
folder of the test's own: the original is read in place, never changed.

Batch fields are patched at the byte offsets of Kafka's v2 batch header (K:clients/.../common/record/
DefaultRecordBatch.java: CRC at 17, attributes at 21, lastOffsetDelta at 23) and the CRC-32C recomputed
with kafka-python's, never logdoctor's."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

from kafka.record.util import calc_crc32c

import realworld

# ../shared/semantics/README.md, ptx-0: what a read_committed consumer gets, and the transactions
PLAIN = [*range(0, 60), *range(202, 282), *range(324, 364)]
COMMITTED = [*range(60, 75), *range(282, 317)]
ABORTED = [*range(76, 201), *range(318, 323)]
OPEN = list(range(364, 376))
READ_COMMITTED = sorted(PLAIN + COMMITTED)  # 230 records
LSO = 364

# the batches patched (positions as Kafka's writer laid them out: `logdoctor dump` of the segments)
SEGMENT_0 = "00000000000000000000.log"
SEGMENT_202 = "00000000000000000202.log"
ABORT_201_POSITION = 13963  # producer 8102's ABORT marker, segment 0
ABORT_323_POSITION = 8448  # producer 8103's ABORT marker, segment 202
TORN_AT = 4073  # inside the batch of offsets 50..59 (bytes 3425..4187 of segment 0)


def copy_log_dir(dst: Path) -> Path:
    """A writable copy of ../shared/semantics/kafka-logs under ``dst``; its path."""
    out = dst / "kafka-logs"
    shutil.copytree(realworld.require_semantics() / "kafka-logs", out)
    for p in [out, *out.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return out


def patch_batch(
    log: Path, position: int, *, last_offset_delta: int | None = None, clear_txn: bool = False
) -> None:
    """Change one v2 batch header field and recompute the batch's CRC-32C."""
    data = bytearray(log.read_bytes())
    (length,) = struct.unpack_from(">i", data, position + 8)
    end = position + 12 + length
    if last_offset_delta is not None:
        struct.pack_into(">i", data, position + 23, last_offset_delta)
    if clear_txn:
        (attrs,) = struct.unpack_from(">h", data, position + 21)
        struct.pack_into(">h", data, position + 21, attrs & ~0x10)
    struct.pack_into(">I", data, position + 17, calc_crc32c(bytes(data[position + 21 : end])))
    log.write_bytes(bytes(data))


def torn(dst: Path) -> Path:
    """Item 1: segment 0 of ptx-0 cut mid-batch at 4,073 bytes. The log dir's path."""
    logs = copy_log_dir(dst)
    seg = logs / "ptx-0" / SEGMENT_0
    seg.write_bytes(seg.read_bytes()[:TORN_AT])
    return logs


def lying_marker(dst: Path) -> Path:
    """Item 2: the ABORT marker at 201 with a lastOffsetDelta of -1 (CRC recomputed)."""
    logs = copy_log_dir(dst)
    patch_batch(logs / "ptx-0" / SEGMENT_0, ABORT_201_POSITION, last_offset_delta=-1)
    return logs


def marker_without_txn_bit(dst: Path) -> Path:
    """Item 3: the ABORT marker at 323 with its transactional bit cleared (CRC recomputed)."""
    logs = copy_log_dir(dst)
    patch_batch(logs / "ptx-0" / SEGMENT_202, ABORT_323_POSITION, clear_txn=True)
    return logs
