"""Issue 77 item 4: the report's headline counts torn data among the records lost against the operator's
intent. A byte flipped inside a batch of ../shared/forensics broker-2's wallet-0 (a copy): the records from
that batch to the log end leave the log when it is repaired or recovered (LOG_CORRUPT), counted here from the
segment files' batch headers read with ``struct`` (Kafka's v2 RecordBatch layout: baseOffset int64,
batchLength int32, ..., lastOffsetDelta int32 at byte 23), not from the scan's words."""

from __future__ import annotations

import re
import shutil
import struct
from pathlib import Path

import realworld
from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.report.html import render_scan_report

WITHIN_RETENTION = 1_710_028_800_000  # 2024-03-10: nothing of the data is due for retention


def _batches(log: Path) -> list[tuple[int, int, int, int]]:
    """(position, size, base offset, last offset) of each batch of a segment."""
    data, pos, out = log.read_bytes(), 0, []
    while pos + 27 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        (delta,) = struct.unpack_from(">i", data, pos + 23)
        out.append((pos, 12 + length, base, base + delta))
        pos += 12 + length
    return out


def test_torn_data_is_counted_in_the_headline(tmp_path: Path) -> None:
    d = tmp_path / "kafka-logs"
    shutil.copytree(realworld.require_forensics() / "broker-2" / "kafka-logs", d)
    folder = d / "wallet-0"
    logs = sorted(folder.glob("*.log"))
    damaged = logs[1]
    pos, size, base, _last = _batches(damaged)[1]
    raw = bytearray(damaged.read_bytes())
    raw[pos + size // 2] ^= 0xFF  # inside the records: the batch's CRC fails
    damaged.write_bytes(bytes(raw))
    log_end = _batches(logs[-1])[-1][3] + 1
    lost = log_end - base
    assert lost > 0

    result = scan([d], ScanOptions(depth=Depth.DEEP, now_ms=WITHIN_RETENTION), jobs=1)
    assert [f.code for f in result.findings] == ["LOG_CORRUPT"]
    page = render_scan_report(result)
    verdict = re.search(r'<div class="verdict[^>]*>(.*?)</ul></div>', page, re.S)
    assert verdict is not None
    assert f"{lost:,} record(s) at risk" in verdict.group(1)
    assert f"{lost:,} truncated from 1 torn log(s) (LOG_CORRUPT)" in verdict.group(1)
    assert re.search(rf'id="card-at-risk"><div class="n">{lost:,}</div>', page)
    assert 'id="routine-retention"' not in page and "RETENTION_DUE" not in verdict.group(1)
