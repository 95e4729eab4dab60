"""The target partition of a record: the source partition's number (``same``, the default), or the key
re-hashed as the Java producer's default partitioner does (``default``).

``default``: a record with a key goes to ``toPositive(murmur2(key)) % partitions``
(K:clients/.../clients/producer/internals/BuiltInPartitioner.java ``partitionForKey``, with
K:clients/.../common/utils/Utils.java ``murmur2`` and ``toPositive``; KafkaProducer ``partition`` calls it
for every record with a non-null serialized key, an empty one included, over all the topic's partitions).
A record with a null key has no such partition: the Java producer gives it a *sticky* partition, the one it
fills a batch of at the moment, chosen by its load (BuiltInPartitioner ``nextPartition``), which no replay
can reproduce. A replay keeps such a record in its source partition's number modulo the target's partition
count: deterministic (a resumed run sends it where the killed one did), and the null-key records of one
source partition stay together and in their order.
"""

from __future__ import annotations

import struct

__all__ = ["DEFAULT", "PARTITIONERS", "SAME", "murmur2", "partition_for"]

#: the target partition is the source partition's number
SAME = "same"
#: the key re-hashed as the Java producer's default partitioner does
DEFAULT = "default"
PARTITIONERS = (SAME, DEFAULT)

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF
_WORDS = struct.Struct("<I")


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` of ``data``: the signed 32-bit int Java computes (MurmurHash2, seed
    ``0x9747b28c``), in unsigned arithmetic masked to 32 bits (Java's ``>>>`` is a shift of the unsigned
    value; its ``int`` multiplications wrap)."""
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


def partition_for(key: bytes | None, source_partition: int, partitions: int) -> int:
    """The target partition of a record under ``default`` (see the module doc): the Java producer's for a
    key, the source partition modulo ``partitions`` for a null key."""
    if key is None:
        return source_partition % partitions
    return (murmur2(key) & 0x7FFFFFFF) % partitions
