"""Aiven stores of every transform the plugin (tiered-storage-for-apache-kafka v1.0.0) writes, built from a
LocalTieredStorage store of the same segments: ``aiven-plain`` (no transform, a fixed chunk index),
``aiven-encrypted`` (AES-GCM chunks: a fixed chunk index of chunk + 28 bytes) and
``aiven-encrypted-compressed`` (zstd, then AES-GCM: a variable chunk index), the segment's AES-256 key
wrapped with RSA-OAEP (SHA3-512, MGF1 SHA3-512) under a generated RSA 2048 key pair ``key1``, the indexes
encrypted one chunk each (never compressed), as ``formats.aiven_rsm`` documents. For benchmarks only."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import struct
from pathlib import Path

IV, TAG, KEY_PAIR = 12, 16, "key1"
VARIANTS = ("aiven-plain", "aiven-encrypted", "aiven-encrypted-compressed")


def _mgf1(seed: bytes, length: int) -> bytes:
    out = b"".join(hashlib.sha3_512(seed + i.to_bytes(4, "big")).digest() for i in range(-(-length // 64)))
    return out[:length]


def wrap_key(data_key: bytes, n: int, e: int) -> bytes:
    """RSA-OAEP encryption (RFC 8017 7.1.1) with SHA3-512 and MGF1(SHA3-512), empty label."""
    k = (n.bit_length() + 7) // 8
    db = hashlib.sha3_512(b"").digest() + b"\x00" * (k - len(data_key) - 130) + b"\x01" + data_key
    seed = os.urandom(64)
    masked_db = bytes(a ^ b for a, b in zip(db, _mgf1(seed, k - 65), strict=True))
    masked_seed = bytes(a ^ b for a, b in zip(seed, _mgf1(masked_db, 64), strict=True))
    em = int.from_bytes(b"\x00" + masked_seed + masked_db, "big")
    return pow(em, e, n).to_bytes(k, "big")


def _end_offset(data: bytes) -> int:
    pos, last = 0, -1
    while pos + 12 <= len(data):
        base, size = struct.unpack_from(">qi", data, pos)
        last = base + struct.unpack_from(">i", data, pos + 23)[0]
        pos += 12 + size
    return last


def _write_segment(
    store: Path,
    stem: Path,
    topic_id: str,
    partition: int,
    *,
    chunk: int,
    compress: bool,
    key: tuple[bytes, bytes, bytes] | None,
) -> None:
    """One segment's three objects; ``key``: (AES key, wrapped key, AAD) or None (not encrypted)."""
    import zstandard
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    from logdoctor.formats.aiven_rsm import build_manifest

    data = stem.with_suffix(".log").read_bytes()
    base_offset, seg_id = stem.name.split("-", 1)
    aes = AESGCM(key[0]) if key is not None else None

    def encrypt(b: bytes) -> bytes:
        if aes is None or key is None:
            return b
        iv = os.urandom(IV)
        return iv + aes.encrypt(iv, b, key[2])

    zc = zstandard.ZstdCompressor()
    chunks = [data[i : i + chunk] for i in range(0, len(data), chunk)]
    chunks = [encrypt(zc.compress(c) if compress else c) for c in chunks]
    folder = store / f"bench-{topic_id}" / str(partition)
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / stem.name
    out.with_suffix(".log").write_bytes(b"".join(chunks))
    index = encrypt(stem.with_suffix(".index").read_bytes())
    tindex = encrypt(stem.with_suffix(".timeindex").read_bytes())
    out.with_suffix(".indexes").write_bytes(index + tindex)
    manifest = json.loads(
        build_manifest(
            original_chunk_size=chunk,
            original_file_size=len(data),
            transformed_sizes=[len(c) for c in chunks] if compress else None,
            indexes={"offset": (0, len(index)), "timestamp": (len(index), len(tindex))},
            compression=compress,
            topic="bench",
            topic_id=topic_id,
            partition=partition,
            segment_id=seg_id,
            start_offset=int(base_offset),
            end_offset=_end_offset(data),
        )
    )
    if key is not None:
        if not compress:  # a fixed chunk index: every chunk grows by its IV and tag
            manifest["chunkIndex"]["transformedChunkSize"] += IV + TAG
            manifest["chunkIndex"]["finalTransformedChunkSize"] += IV + TAG
        manifest["encryption"] = {
            "dataKey": f"{KEY_PAIR}:{base64.b64encode(key[1]).decode()}",
            "aad": base64.b64encode(key[2]).decode(),
        }
    out.with_suffix(".rsm-manifest").write_bytes(json.dumps(manifest, separators=(",", ":")).encode())


def make_variants(kafka_local: Path, root: Path, chunk: int) -> tuple[dict[str, Path], Path]:
    """({variant: store root}, the private key's PEM file) built beside ``kafka_local`` under ``root``."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    stores = {v: root / f"store-{v}" for v in VARIANTS}
    pem = root / "keys" / "private.pem"
    if (root / ".variants-complete").exists():
        return stores, pem
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem.parent.mkdir(parents=True, exist_ok=True)
    pem.write_bytes(
        private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    pub = private.public_key().public_numbers()
    for folder in sorted((kafka_local / "kafka-tiered-storage").iterdir()):
        _, p, topic_id = folder.name.split("-", 2)
        for log in sorted(folder.glob("*.log")):
            stem = log.with_suffix("")
            for variant in VARIANTS:
                key = None
                if "encrypted" in variant:
                    aes_key = os.urandom(32)
                    key = (aes_key, wrap_key(aes_key, pub.n, pub.e), os.urandom(32))
                _write_segment(
                    stores[variant],
                    stem,
                    topic_id,
                    int(p),
                    chunk=chunk,
                    compress=variant.endswith("compressed"),
                    key=key,
                )
    (root / ".variants-complete").touch()
    return stores, pem
