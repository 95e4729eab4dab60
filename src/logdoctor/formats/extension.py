"""The C extension (``_speedups``) as built, before :mod:`logdoctor.formats.native` configures it with the
types it builds, and the CRC-32C function it borrows from the ``crc32c`` package. Light to import (no
types, no dataclasses): :mod:`logdoctor.checks.walk_ahead` starts a ``scan --deep``'s walks with it before
the scan's modules load.

``LOGDOCTOR_PURE_PYTHON=1`` (or an extension that is not built) answers None: every caller then uses the
pure-Python twins.
"""

from __future__ import annotations

import os
from functools import cache
from types import ModuleType

__all__ = ["crc32c_address", "load"]


def load() -> ModuleType | None:
    """The ``_speedups`` module, not configured; None under ``LOGDOCTOR_PURE_PYTHON`` or when not built."""
    if os.environ.get("LOGDOCTOR_PURE_PYTHON"):
        return None
    try:
        from logdoctor.formats import _speedups
    except ImportError:  # pragma: no cover - not built
        return None
    return _speedups


@cache
def crc32c_address() -> int | None:
    """The address of the CRC-32C function inside the crc32c package's own extension (the one
    formats.crc calls: hardware when ``crc32c.hardware_based``, else its slicing-by-8), taking and
    returning the raw register (no pre/post inversion); None if not found. ``_speedups.configure_crc32c``
    checks it against the standard check value before using it."""
    try:
        import ctypes

        from logdoctor.formats.crc import CRC32C_EXTENSION as crc32c_ext

        names = ("_crc32c_hw_adler", "_crc32c_hw_arm64") if crc32c_ext.hardware_based else ()
        lib = ctypes.CDLL(crc32c_ext.__file__)
        for name in (*names, "_crc32c_sw_slicing_by_8"):
            fn = getattr(lib, name, None)
            if fn is not None:
                return ctypes.cast(fn, ctypes.c_void_p).value
    except (ImportError, OSError, AttributeError):  # pragma: no cover - another crc32c build
        pass
    return None  # pragma: no cover
