"""Checksums of the log formats.

CRC-32C (Castagnoli) protects v2 record batches (DefaultRecordBatch) and producer snapshots;
plain CRC-32 (zlib's polynomial) protects v0/v1 messages (LegacyRecord). Both run in C:
``crc32c`` uses the SSE4.2 / ARMv8 instruction when the CPU has it.
"""

from __future__ import annotations

import sys
import zlib
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
