"""formats.modexp.mod_exp: OpenSSL's constant-time exponentiation gives Python's pow, for RSA-sized and
edge-case operands, and Aiven's data keys unwrap to the same bytes with it and without it (pow)."""

from __future__ import annotations

import random

import pytest

import realworld
from logdoctor.formats import modexp
from logdoctor.formats.aiven_rsm import parse_manifest, unwrap_data_key


def _cases() -> list[tuple[int, int, int]]:
    rng = random.Random(49)
    cases = [(0, 5, 7), (5, 0, 7), (10, 3, 7), (7, 3, 7), (2**70, 2**64 + 1, 2**61 - 1)]
    for bits in (64, 1024, 1536):
        m = rng.getrandbits(bits) | 1 | (1 << (bits - 1))
        cases.append((rng.getrandbits(2 * bits), rng.getrandbits(bits), m))
    return cases


def test_openssl_gives_pow() -> None:
    assert modexp._libcrypto() is not None  # Python's hashlib loads libcrypto: so can we
    for base, exponent, modulus in _cases():
        assert modexp.mod_exp(base, exponent, modulus) == pow(base, exponent, modulus), (base, modulus)


def test_without_libcrypto_pow(monkeypatch) -> None:
    monkeypatch.setattr(modexp, "_libcrypto", lambda: None)
    for base, exponent, modulus in _cases():
        assert modexp.mod_exp(base, exponent, modulus) == pow(base, exponent, modulus)


@pytest.mark.parametrize("operands", [(1, 1, 8), (1, 1, 1), (-1, 1, 7), (1, -1, 7)])
def test_bad_operands(operands) -> None:
    with pytest.raises(ValueError):
        modexp.mod_exp(*operands)


def test_aiven_data_keys_unwrap_the_same(monkeypatch) -> None:
    tiered = realworld.require_tiered()
    pem = (tiered / "aiven/encrypted/keys/private.pem").read_bytes()
    manifests = [
        parse_manifest(p.read_bytes())
        for p in sorted((tiered / "aiven/encrypted/storage").rglob("*.rsm-manifest"))
    ]
    assert manifests
    with_openssl = [unwrap_data_key(m, pem) for m in manifests]
    monkeypatch.setattr(modexp, "_libcrypto", lambda: None)
    assert [unwrap_data_key(m, pem) for m in manifests] == with_openssl
    assert all(len(k) in (16, 24, 32) for k in with_openssl)
