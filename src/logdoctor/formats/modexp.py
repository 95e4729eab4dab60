"""Modular exponentiation for the RSA private-key primitive (Aiven's wrapped data keys,
:func:`logdoctor.formats.aiven_rsm.unwrap_data_key`): OpenSSL's ``BN_mod_exp_mont_consttime`` (libcrypto,
which Python's own ``hashlib`` loads, called through ctypes), Python's ``pow`` where libcrypto cannot be
loaded or fails. The same integer either way; libcrypto takes ~0.4 ms for a 1024-bit modulus and exponent
(half a 2048-bit key's CRT), ``pow`` ~2.5 ms (a restore unwraps one data key per segment), and it does not
branch on the secret exponent."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from typing import Any

__all__ = ["mod_exp"]


@functools.cache
def _libcrypto() -> Any:
    """libcrypto with the few BIGNUM functions used here declared, or None."""
    name = ctypes.util.find_library("crypto")
    if name is None:
        return None
    try:
        lib = ctypes.CDLL(name)
        p = ctypes.c_void_p
        for fn, args, res in (
            ("BN_CTX_new", [], p),
            ("BN_CTX_free", [p], None),
            ("BN_new", [], p),
            ("BN_clear_free", [p], None),
            ("BN_bin2bn", [ctypes.c_char_p, ctypes.c_int, p], p),
            ("BN_bn2binpad", [p, ctypes.c_char_p, ctypes.c_int], ctypes.c_int),
            ("BN_mod_exp_mont_consttime", [p, p, p, p, p, p], ctypes.c_int),
        ):
            f = getattr(lib, fn)
            f.argtypes, f.restype = args, res
    except (OSError, AttributeError):
        return None
    return lib


def _bytes(x: int) -> bytes:
    return x.to_bytes(max(1, (x.bit_length() + 7) // 8), "big")


def _openssl(lib: Any, base: int, exponent: int, modulus: int) -> int | None:
    ctx = lib.BN_CTX_new()
    nums = [lib.BN_new()] + [lib.BN_bin2bn(b, len(b), None) for b in map(_bytes, (base, exponent, modulus))]
    try:
        if not ctx or not all(nums) or lib.BN_mod_exp_mont_consttime(*nums, ctx, None) != 1:
            return None
        size = len(_bytes(modulus))
        out = ctypes.create_string_buffer(size)
        if lib.BN_bn2binpad(nums[0], out, size) != size:
            return None
        return int.from_bytes(out.raw, "big")
    finally:
        for n in nums:
            if n:
                lib.BN_clear_free(n)
        if ctx:
            lib.BN_CTX_free(ctx)


def mod_exp(base: int, exponent: int, modulus: int) -> int:
    """``pow(base, exponent, modulus)`` for an odd ``modulus`` > 1 (a prime of an RSA key) and
    ``0 <= base``, ``0 <= exponent``."""
    if modulus < 3 or modulus % 2 == 0 or base < 0 or exponent < 0:
        raise ValueError("an odd modulus > 1, a base and an exponent >= 0")
    lib = _libcrypto()
    found = _openssl(lib, base % modulus, exponent, modulus) if lib is not None else None
    return found if found is not None else pow(base, exponent, modulus)
