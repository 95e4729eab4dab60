"""The C extension (``_speedups``) and what it borrows from other libraries, chosen once at import.

``LOGDOCTOR_PURE_PYTHON=1`` (or an extension that is not built: :func:`logdoctor.formats.extension.load`)
leaves :data:`speedups` None: every caller then uses the pure-Python twins (:mod:`logdoctor.formats.v2_twin`,
the Python index rebuild walk in :mod:`logdoctor.formats.recovery`), which give identical results and
errors.

When it is there, the extension is configured here with the types it builds (Record, Header, the
timestamp types, the v2 batch class, the index entries) and with two C functions it calls through
pointers, found with ctypes in the libraries the Python code uses too: LZ4_decompress_safe of the
``lz4`` package's extension (so lz4 blocks are decoded by exactly the code ``codecs.py`` calls) and
the CRC-32C function of the ``crc32c`` package's extension (hardware when it has it,
:func:`logdoctor.formats.extension.crc32c_address`), which ``_speedups`` checks against the standard check
value before using it.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from logdoctor.formats import extension
from logdoctor.formats.record_types import Header, Record, TimestampType

__all__ = [
    "HAVE_C_LZ4",
    "HAVE_SPEEDUPS",
    "configure_batch_class",
    "crc_check_v2",
    "populate_read",
    "recover_v2",
    "scan_v2",
    "speedups",
]


def _load() -> ModuleType | None:
    ext = extension.load()
    if ext is None:
        return None
    try:
        ext.configure(Record, Header, TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME)
    except TypeError:  # pragma: no cover - Record/Header changed their slots
        return None
    return ext


speedups: Any = _load()
HAVE_SPEEDUPS = speedups is not None


def _lz4_decompress_safe_address() -> int | None:
    """The address of LZ4_decompress_safe in the lz4 package's own extension; None if not found."""
    try:
        import ctypes

        import lz4.block._block as lz4_block

        return ctypes.cast(ctypes.CDLL(lz4_block.__file__).LZ4_decompress_safe, ctypes.c_void_p).value
    except (ImportError, OSError, AttributeError):  # pragma: no cover - another lz4 build
        return None


# lz4 batches are decompressed inside the C walker when it has the lz4 library's decoder.
HAVE_C_LZ4 = False
if speedups is not None:
    _lz4_address = _lz4_decompress_safe_address()
    speedups.configure_lz4(_lz4_address)
    HAVE_C_LZ4 = _lz4_address is not None

recover_v2: Any = None
"""The C fast lane of recovery.rebuild_indexes (see _speedups.c ``recover_v2``); None without the C
extension or without a usable CRC-32C function from the crc32c package."""
if speedups is not None and speedups.configure_crc32c(extension.crc32c_address()):
    from logdoctor.formats.index import OffsetEntry, TimeEntry

    speedups.configure_recovery(OffsetEntry, TimeEntry)
    recover_v2 = speedups.recover_v2

scan_v2: Any = speedups.scan_v2 if recover_v2 is not None else None  # type: ignore[union-attr]
"""The C fast lane of checks.state.segment_walk.walk (see _speedups.c ``scan_v2``; it releases the GIL), under
the same conditions as ``recover_v2``; None: the Python walk alone."""
crc_check_v2: Any = speedups.crc_check_v2 if recover_v2 is not None else None  # type: ignore[union-attr]
"""The CRC-32C check of v2 batches at given positions, without the GIL (see _speedups.c
``crc_check_v2``): checks.state.fast_lane splits a big segment's CRCs over the walk threads with it."""

populate_read: Any = speedups.populate_read if speedups is not None else None
"""The pages of a buffer (a big .log mapped without MAP_POPULATE) faulted in without the GIL (see
_speedups.c ``populate_read``: madvise(MADV_POPULATE_READ), else one byte read per page): checks.state
maps `repair`'s segments with it on a thread while the command's modules load. None without the
extension."""


def configure_batch_class(cls: type) -> Any:
    """Hand the v2 batch class to the extension (its walker builds them); returns ``walk_v2``, the C
    fast lane of records.iter_batches, or None without the extension."""
    if speedups is None:
        return None
    speedups.configure_batch(cls)
    return speedups.walk_v2
