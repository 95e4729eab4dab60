"""Kafka's ``Utils.murmur2`` and ``Utils.toPositive`` (K:clients/.../common/utils/Utils.java): the hash that
places a keyed record (K:clients/.../producer/internals/BuiltInPartitioner.java ``partitionForKey``) and a
partition's ``__remote_log_metadata`` events (K:storage/.../remote/metadata/storage/
RemoteLogMetadataTopicPartitioner.java ``metadataPartition``), both ``toPositive(murmur2(bytes)) % n``."""

from __future__ import annotations

import struct

__all__ = ["murmur2", "partition_of"]

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF
_WORDS = struct.Struct("<I")


def murmur2(data: bytes) -> int:
    """``Utils.murmur2`` of ``data``: the signed 32-bit int Java computes (MurmurHash2, seed ``0x9747b28c``),
    in unsigned arithmetic masked to 32 bits (Java's ``>>>`` is a shift of the unsigned value; its ``int``
    multiplications wrap)."""
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
    end = length - length % 4
    for (k,) in _WORDS.iter_unpack(data[:end]):
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    rest = length % 4
    if rest == 3:
        h ^= data[end + 2] << 16
    if rest >= 2:
        h ^= data[end + 1] << 8
    if rest >= 1:
        h ^= data[end]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_of(data: bytes, partitions: int) -> int:
    """``toPositive(murmur2(data)) % partitions``, ``toPositive`` being ``& 0x7fffffff`` (not ``abs``)."""
    return (murmur2(data) & 0x7FFFFFFF) % partitions
