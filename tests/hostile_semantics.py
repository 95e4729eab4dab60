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


# ../shared/semantics/README.md, kv-0: 3,000 records, key key-<offset mod 450>, a tombstone at every offset
# whose offset % 29 == 28; 450 keys, 16 of them with a tombstone latest, 434 live
KV_SEGMENT_2200 = "00000000000000002200.log"
KV_BATCH_2300_POSITION = 7168  # offsets 2300..2349 (bytes 7168..10694 of segment 2200)
KV_BATCH_2300_END = 10694
KV_COPY_BASE = 2750


def kv_duplicated_offsets(dst: Path) -> Path:
    """Item 4: a copy of kv-0's batch at 2,300 appended to segment 2,200 under base offset 2,750 (the base
    offset is outside the CRC), so offsets 2,750-2,799 appear twice: once there, once in segment 2,750."""
    logs = copy_log_dir(dst)
    seg = logs / "kv-0" / KV_SEGMENT_2200
    data = seg.read_bytes()
    batch = bytearray(data[KV_BATCH_2300_POSITION:KV_BATCH_2300_END])
    struct.pack_into(">q", batch, 0, KV_COPY_BASE)
    seg.write_bytes(data + bytes(batch))
    return logs
