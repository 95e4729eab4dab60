"""Where the remote tier's two store layouts put a partition's segment objects (KIP-405), and what a
store's listing of a partition says it holds.

The store is written by one of two RemoteStorageManager plugins (``layout``, one of :data:`LAYOUTS`):

- ``kafka-local``: Kafka's reference ``LocalTieredStorage`` (K:storage/src/test/java/org/apache/kafka/
  server/log/remote/storage/LocalTieredStorage.java, RemoteTopicPartitionDirectory.java,
  RemoteLogSegmentFileset.java): ``<root>/<topic>-<partition>-<topicId>/<20-digit start offset>-<segment
  uuid>.{log,index,timeindex,snapshot,leader_epoch_checkpoint}``, the segment's own files unchanged
  (its root folder is ``kafka-tiered-storage`` under the configured ``dir``: either may be given).
- ``aiven``: Aiven's tiered-storage-for-apache-kafka (v1.0.0, ``ObjectKeyFactory.mainPath``):
  ``<root>/<topic>-<topicId>/<partition>/<20-digit start offset>-<segment id>.{log,indexes,rsm-manifest}``,
  the ``.log`` chunked and maybe compressed and encrypted (read by
  :class:`~logdoctor.logdir.remote_aiven.AivenLogReader`).

Invariants: which remote segments exist is what the store's folder for the partition lists (what is really
there), never what a metadata record claims; a segment is listed by any object of its layout (so that one
whose ``.log`` is gone is still listed, and its read names the missing object); an object key is read by
its last three names only, whatever prefix the store puts before them. Nothing here reads an object.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from logdoctor.logdir.storage import Storage

__all__ = [
    "AIVEN_TOPIC_DIR",
    "KAFKA_LOCAL_DIR",
    "KAFKA_LOCAL_ROOT",
    "LAYOUTS",
    "SEGMENT_ID",
    "RemoteObjectKey",
    "detect_layout",
    "list_remote_segments",
    "parse_object_key",
    "remote_partition_folder",
]

LAYOUTS = ("kafka-local", "aiven")
KAFKA_LOCAL_ROOT = "kafka-tiered-storage"  # LocalTieredStorage.ROOT_STORAGE_DIR_NAME
#: the objects each layout writes per segment (LocalTieredStorage's RemoteLogSegmentFileset; Aiven's
#: ObjectKeyFactory suffixes): any of them lists the segment, so that a segment whose ``.log`` object is
#: gone is still listed, and its read names the missing object
_SUFFIXES = {
    "kafka-local": {"log", "index", "timeindex", "snapshot", "txnindex", "leader_epoch_checkpoint"},
    "aiven": {"log", "indexes", "rsm-manifest"},
}


#: a segment object's file name in either layout: ``<20-digit start offset>-<segment id>.<suffix>``
_OBJECT = re.compile(r"^(\d{20})-([A-Za-z0-9_-]{22})\.([A-Za-z_.-]+)$")
#: a segment id or topic id as the layouts write it (a base64url UUID)
SEGMENT_ID = r"[A-Za-z0-9_-]{22}"
#: a kafka-local partition folder: ``<topic>-<partition>-<topicId>``
KAFKA_LOCAL_DIR = re.compile(rf"^(.+)-(\d+)-({SEGMENT_ID})$")
#: an Aiven topic folder: ``<topic>-<topicId>`` (its partitions are folders below it)
AIVEN_TOPIC_DIR = re.compile(rf"^(.+)-({SEGMENT_ID})$")


@dataclass(frozen=True, slots=True)
class RemoteObjectKey:
    """What an object's key says in either layout: the partition, the segment and which of its files."""

    layout: str
    topic: str
    partition: int
    topic_id: str
    start_offset: int
    segment_id: str
    suffix: str  # log, index, timeindex, snapshot, leader_epoch_checkpoint, txnindex; indexes, rsm-manifest
    prefix: str  # the key's part before the partition's folder ("" at the store's root)


def parse_object_key(key: str) -> RemoteObjectKey | None:
    """The segment object ``key`` (a path relative to anything: only its last three names count) names in
    Kafka's LocalTieredStorage layout (``<topic>-<partition>-<topicId>/<start>-<id>.<suffix>``) or Aiven's
    (``<topic>-<topicId>/<partition>/<start>-<id>.<suffix>``); None for any other object."""
    parts = key.rsplit("/", 3)
    m = _OBJECT.match(parts[-1])
    if m is None or len(parts) < 2:
        return None
    start, seg_id, suffix = int(m.group(1)), m.group(2), m.group(3)
    parent = parts[-2]
    if parent.isdigit() and len(parts) >= 3 and parent == str(int(parent)):
        t = AIVEN_TOPIC_DIR.match(parts[-3])
        if t is not None:
            prefix = parts[0] if len(parts) == 4 else ""
            return RemoteObjectKey(
                "aiven", t.group(1), int(parent), t.group(2), start, seg_id, suffix, prefix
            )
    k = KAFKA_LOCAL_DIR.match(parent)
    if k is not None:
        prefix = "/".join(parts[:-2])
        return RemoteObjectKey(
            "kafka-local", k.group(1), int(k.group(2)), k.group(3), start, seg_id, suffix, prefix
        )
    return None


def remote_partition_folder(
    root: str, storage: Storage, layout: str, topic: str, partition: int, topic_id: str
) -> str:
    if layout == "kafka-local":
        return storage.join(root, f"{topic}-{partition}-{topic_id}")
    return storage.join(root, f"{topic}-{topic_id}", str(partition))


def _kafka_local_root(root: str, storage: Storage) -> str:
    inner = storage.join(root, KAFKA_LOCAL_ROOT)
    entry = storage.info(inner)
    return inner if entry is not None and entry.is_dir() else root


def detect_layout(
    root: str, storage: Storage, topic: str, partition: int, topic_id: str
) -> tuple[str, str] | None:
    """(layout, root) of the partition's folder in the store, from what is there; None when neither."""
    for layout in LAYOUTS:
        base = _kafka_local_root(root, storage) if layout == "kafka-local" else root
        entry = storage.info(remote_partition_folder(base, storage, layout, topic, partition, topic_id))
        if entry is not None and entry.is_dir():
            return layout, base
    return None


def list_remote_segments(
    root: str,
    storage: Storage,
    layout: str,
    topic: str,
    partition: int,
    topic_id: str,
    *,
    only: Collection[str] | None = None,
) -> list[tuple[int, str, str, int]]:
    """(start offset, segment id, .log location, .log object size) of the partition's remote segments
    in offset order: every segment that has an object of the layout in the folder (its ``.log``, or
    another of its objects, so that a segment whose ``.log`` is gone is still listed, and its read names
    the missing object; size 0 then). ``only``: segment ids to keep."""
    if layout == "kafka-local":
        root = _kafka_local_root(root, storage)
    folder = remote_partition_folder(root, storage, layout, topic, partition, topic_id)
    try:
        entries = storage.list(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []
    found: dict[tuple[int, str], int] = {}
    for e in entries:
        m = _OBJECT.match(e.name)
        if m is None or e.is_dir():
            continue
        if m.group(3) not in _SUFFIXES[layout]:
            continue
        key = (int(m.group(1)), m.group(2))
        if only is not None and key[1] not in only:
            continue
        if m.group(3) == "log":
            found[key] = e.size
        else:
            found.setdefault(key, -1)
    return [
        (base, seg_id, storage.join(folder, f"{base:020d}-{seg_id}.log"), max(size, 0))
        for (base, seg_id), size in sorted(found.items())
    ]
