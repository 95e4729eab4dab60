"""Checksums of the log formats.

CRC-32C (Castagnoli) protects v2 record batches (DefaultRecordBatch) and producer snapshots;
plain CRC-32 (zlib's polynomial) protects v0/v1 messages (LegacyRecord). Both run in C:
``crc32c`` uses the SSE4.2 / ARMv8 instruction when the CPU has it.
"""

from __future__ import annotations

import zlib

from crc32c import crc32c as _crc32c

Buffer = bytes | bytearray | memoryview


def crc32c(data: Buffer, value: int = 0) -> int:
    """CRC-32C of ``data`` (unsigned 32-bit), continuing from ``value``."""
    return _crc32c(data, value)


def crc32(data: Buffer, value: int = 0) -> int:
    """CRC-32 (IEEE, as java.util.zip.CRC32) of ``data`` (unsigned 32-bit), continuing from ``value``."""
    return zlib.crc32(data, value)
