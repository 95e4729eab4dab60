"""Checksums of the log formats.

CRC-32C (Castagnoli) protects v2 record batches (DefaultRecordBatch) and producer snapshots;
plain CRC-32 (zlib's polynomial) protects v0/v1 messages (LegacyRecord). Both run in C:
``crc32c`` uses the SSE4.2 / ARMv8 instruction when the CPU has it.
"""

from __future__ import annotations

import sys
import zlib
from functools import lru_cache
from types import ModuleType

Buffer = bytes | bytearray | memoryview


def _crc32c_extension() -> ModuleType:
    """The ``crc32c`` package's C extension (``crc32c._crc32c``: ``crc32c``, ``hardware_based``), loaded
    without the package's ``__init__``, which imports importlib.metadata (email, zipfile, csv, ...) only
    to set ``__version__``: ~10 ms of CPU at every command's start (issue 35). Registered under its own
    name, so that a later ``import crc32c`` takes this one; the plain import when the package is laid
    out otherwise."""
    from importlib.machinery import PathFinder
    from importlib.util import find_spec, module_from_spec

    name = "crc32c._crc32c"
    loaded = sys.modules.get(name)
    if loaded is not None:
        return loaded
    package = find_spec("crc32c")  # a top-level name: found, not imported
    where = package.submodule_search_locations if package is not None else None
    spec = PathFinder.find_spec(name, list(where)) if where else None
    if spec is None or spec.loader is None:  # pragma: no cover - another layout of the package
        import crc32c._crc32c as ext

        return ext
    ext = module_from_spec(spec)
    spec.loader.exec_module(ext)
    sys.modules[name] = ext
    return ext


CRC32C_EXTENSION = _crc32c_extension()
_crc32c = CRC32C_EXTENSION.crc32c


def crc32c(data: Buffer, value: int = 0) -> int:
    """CRC-32C of ``data`` (unsigned 32-bit), continuing from ``value``."""
    return _crc32c(data, value)


def crc32(data: Buffer, value: int = 0) -> int:
    """CRC-32 (IEEE, as java.util.zip.CRC32) of ``data`` (unsigned 32-bit), continuing from ``value``."""
    return zlib.crc32(data, value)


# --- joining CRC-32Cs of consecutive pieces ----------------------------------------------------------
# The CRC is linear over GF(2): crc(A + B) = crc(A) * x^(8 * len(B)) mod P xor crc(B), the register's
# pre- and post-inversions cancelling. Values are bit-reflected (x^0 is the top bit), as the CRC's are.

_CASTAGNOLI = 0x82F63B78  # the CRC-32C polynomial, reflected
_X0 = 1 << 31  # x^0, reflected


def _multiply(a: int, b: int) -> int:
    """a * b mod P, both reflected."""
    product = 0
    bit = _X0
    while a:
        if a & bit:
            product ^= b
            a ^= bit
        bit >>= 1
        b = (b >> 1) ^ _CASTAGNOLI if b & 1 else b >> 1
    return product


def _powers() -> list[int]:
    """x^(2^k) mod P for k in 0..63."""
    out = [_X0 >> 1]  # x^1
    for _ in range(63):
        out.append(_multiply(out[-1], out[-1]))
    return out


_X_2K = _powers()


@lru_cache(maxsize=64)
def _shift(length: int) -> int:
    """x^(8 * length) mod P: the operator that appends ``length`` zero bytes to a CRC register."""
    power, k, n = _X0, 3, length
    while n:
        if n & 1:
            power = _multiply(_X_2K[k & 63], power)
        n >>= 1
        k += 1
    return power


def crc32c_combine(first: int, second: int, second_length: int) -> int:
    """The CRC-32C of ``A + B`` from ``crc32c(A)``, ``crc32c(B)`` and ``len(B)`` (zlib's
    ``crc32_combine`` for the Castagnoli polynomial): pieces checked apart, on threads, joined in order."""
    return _multiply(_shift(second_length), first) ^ second
