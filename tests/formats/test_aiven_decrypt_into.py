"""formats.aiven_rsm.detransform_chunk_into decrypts an encrypted chunk into the caller's buffers (``out``
for a chunk that is not compressed, ``scratch`` for one that is): the same bytes as
:func:`detransform_chunk`, and the same error for a bad tag, a chunk of another size, a scratch buffer too
small (a new buffer then) and a chunk too short to hold an IV and a tag."""

from __future__ import annotations

import base64
import json
import os

import pytest
import zstandard
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from logdoctor.errors import CorruptRecordError
from logdoctor.formats.aiven_rsm import (
    IV_SIZE,
    build_manifest,
    detransform_chunk,
    detransform_chunk_into,
    parse_manifest,
)

KEY, AAD, SIZE = os.urandom(32), os.urandom(32), 100_000


def _manifest(compression: bool):
    obj = json.loads(
        build_manifest(
            original_chunk_size=SIZE,
            original_file_size=SIZE,
            transformed_sizes=[1] if compression else None,
            indexes={},
            compression=compression,
            topic="t",
            topic_id="AAAAAAAAAAAAAAAAAAAAAA",
            partition=0,
            segment_id="AAAAAAAAAAAAAAAAAAAAAA",
            start_offset=0,
            end_offset=0,
        )
    )
    obj["encryption"] = {
        "dataKey": "key1:" + base64.b64encode(b"w" * 256).decode(),
        "aad": base64.b64encode(AAD).decode(),
    }
    return parse_manifest(json.dumps(obj).encode())


def _encrypt(plain: bytes) -> bytes:
    iv = os.urandom(IV_SIZE)
    return iv + AESGCM(KEY).encrypt(iv, plain, AAD)


def _outcome(fn):
    try:
        return fn()
    except CorruptRecordError as exc:
        return f"error: {exc}"


@pytest.mark.parametrize("compression", [False, True], ids=["encrypted", "encrypted-compressed"])
@pytest.mark.parametrize("damage", ["none", "bad-tag", "other-size", "too-short"])
@pytest.mark.parametrize("scratch_size", [None, 8, 1 << 20])
def test_into_buffers_as_into_new_bytes(compression, damage, scratch_size) -> None:
    manifest = _manifest(compression)
    original = os.urandom(SIZE // 2) * 2
    plain = original if damage != "other-size" else original[:-10]
    chunk = bytearray(_encrypt(zstandard.ZstdCompressor().compress(plain) if compression else plain))
    if damage == "bad-tag":
        chunk[-1] ^= 1
    elif damage == "too-short":
        chunk = chunk[: IV_SIZE + 3]
    expected = _outcome(
        lambda: detransform_chunk(bytes(chunk), manifest, KEY, expected_size=SIZE, source="s", position=7)
    )
    out = memoryview(bytearray(SIZE))
    scratch = memoryview(bytearray(scratch_size)) if scratch_size else None
    found = _outcome(
        lambda: detransform_chunk_into(
            memoryview(chunk), manifest, KEY, out, source="s", position=7, scratch=scratch
        )
    )
    if damage == "none":
        assert found is None and expected == original and bytes(out) == original
    else:
        assert found == expected and str(found).startswith("error: "), (found, expected)
