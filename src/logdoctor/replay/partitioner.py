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

from logdoctor.formats.murmur2 import partition_of

__all__ = ["DEFAULT", "PARTITIONERS", "SAME", "partition_for"]

#: the target partition is the source partition's number
SAME = "same"
#: the key re-hashed as the Java producer's default partitioner does
DEFAULT = "default"
PARTITIONERS = (SAME, DEFAULT)


def partition_for(key: bytes | None, source_partition: int, partitions: int) -> int:
    """The target partition of a record under ``default`` (see the module doc): the Java producer's for a
    key, the source partition modulo ``partitions`` for a null key."""
    if key is None:
        return source_partition % partitions
    return partition_of(key, partitions)
