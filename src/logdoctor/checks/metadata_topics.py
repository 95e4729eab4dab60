"""Topic ids as the KRaft metadata log knows them (TopicRecord / RemoveTopicRecord), for TOPIC_ID_MISMATCH.

A KRaft broker compares each partition folder's partition.metadata with the topic id of the
metadata image (K:core/.../log/LogManager.scala, KAFKA-14617 stray logs; UnifiedLog.assignTopicId):
a folder whose id differs belongs to a deleted incarnation of the topic. We rebuild name -> id from
the latest KRaft snapshot (``<offset>-<epoch>.checkpoint``, record batches) and the metadata log
after it. Anything unreadable is skipped quietly: the metadata log's own damage is reported by the
segment checks.
"""

from __future__ import annotations

import os

from logdoctor.errors import FormatError
from logdoctor.logdir.names import parse_kraft_snapshot, parse_segment_file


def _apply(buf: bytes, ids: dict[str, str], min_offset: int) -> None:
    from logdoctor.formats.internal.cluster_metadata import decode_metadata_record
    from logdoctor.formats.records import iter_batches

    by_id = {v: k for k, v in ids.items()}
    try:
        for batch in iter_batches(buf):
            if batch.is_control or batch.last_offset < min_offset:
                continue
            for rec in batch.records():
                if rec.offset < min_offset:
                    continue
                try:
                    d = decode_metadata_record(rec.value)
                except FormatError:
                    continue
                if d["type"] == "TopicRecord":
                    name, tid = d["data"]["name"], d["data"]["topic_id"]
                    ids[name] = tid
                    by_id[tid] = name
                elif d["type"] == "RemoveTopicRecord":
                    name = by_id.pop(d["data"]["topic_id"], None)
                    if name is not None:
                        ids.pop(name, None)
    except FormatError:
        return


def topic_ids(metadata_dir: str) -> dict[str, str] | None:
    """name -> topic id (Kafka base64) from ``__cluster_metadata-0``; None when nothing is readable."""
    try:
        names = sorted(os.listdir(metadata_dir))
    except OSError:
        return None
    snapshots = []
    logs = []
    for n in names:
        snap = parse_kraft_snapshot(n)
        if snap is not None and snap[1] is not None and snap[1].value == "":
            snapshots.append((snap[0].offset, n))
            continue
        seg = parse_segment_file(n)
        if seg is not None and seg.suffix == ".log":
            logs.append((seg.base_offset, n))
    ids: dict[str, str] = {}
    start = 0
    read_any = False
    if snapshots:
        end, name = max(snapshots)
        try:
            with open(os.path.join(metadata_dir, name), "rb") as f:
                _apply(f.read(), ids, 0)
            start, read_any = end, True
        except OSError:
            pass
    for _base, name in sorted(logs):
        try:
            with open(os.path.join(metadata_dir, name), "rb") as f:
                _apply(f.read(), ids, start)
            read_any = True
        except OSError:
            continue
    return ids if read_any else None
