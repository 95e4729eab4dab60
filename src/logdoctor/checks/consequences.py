"""One finding per root cause: the findings another one causes are linked to it (``Finding.caused_by``).

Text output lists a consequence under its cause instead of as a problem of its own; ``--json`` keeps every
finding, each consequence with ``caused_by`` naming its cause; repair counts a consequence as handled by the
action that repairs its cause. The links:

- ``LOG_CORRUPT`` in a partition: the broker's recovery truncates the log there, so the log end offset the
  scan uses is the truncation point, and what was written beyond it shows up as
  ``PRODUCER_SNAPSHOT_AHEAD``, ``LEADER_EPOCH_BEYOND_LOG_END`` and ``CHECKPOINT_MISMATCH`` entries of that
  partition beyond its log end (recovery point, high watermark): all the one truncation
  (K:storage/.../log/LogLoader.java recoverLog, then the checkpoints and caches follow the new end);
- ``PARTITION_METADATA_INVALID``: without a readable topic id a KRaft replica looks stray, so its
  ``REPLICA_NOT_ASSIGNED`` (reason: no topic id) is that file's consequence;
- ``LOG_CORRUPT`` of the KRaft metadata log (``__cluster_metadata-0``): the cluster metadata is replayed up
  to the damage only, so a replica the image does not assign (``REPLICA_NOT_ASSIGNED`` judged on an image
  that ends at or before the damaged offset) may well be assigned by the records after it: that
  corruption's consequence, gone once the log is repaired (or its records re-fetched from a voter);
- the same code at the same file and byte position found twice (e.g. one bad index entry seen by the
  default index check and again by ``--deep``'s cross-check), and ``META_PROPERTIES_MISMATCH`` once per
  differing field of one file: the later ones are the first one's.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable

from logdoctor.checks.findings import Finding

__all__ = ["link_consequences"]

_TRUNCATION_CONSEQUENCES = ("PRODUCER_SNAPSHOT_AHEAD", "LEADER_EPOCH_BEYOND_LOG_END")


def _partition_folder(path: str) -> str | None:
    """The ``<log dir>/<topic>-<partition>`` folder a path lies in (None: the log dir level)."""
    from pathlib import Path

    from logdoctor.logdir.names import parse_partition_dir

    p = Path(path)
    for folder in (p, *p.parents):
        if parse_partition_dir(folder.name) is not None:
            return str(folder)
    return None


def _beyond_log_end(f: Finding) -> bool:
    d = f.details
    off, leo = d.get("checkpoint_offset"), d.get("log_end_offset")
    return isinstance(off, int) and isinstance(leo, int) and off > leo


def _cut(f: Finding) -> int | None:
    """The first offset a metadata log's LOG_CORRUPT leaves unread (where the replay stops)."""
    cut = f.details.get("cut_offset")
    return cut if isinstance(cut, int) else None


def _metadata_cause(f: Finding, corrupt: list[Finding]) -> Finding | None:
    """The metadata log's LOG_CORRUPT behind a REPLICA_NOT_ASSIGNED judged on an image that ends at or
    before its damage (the image's end offset: ``metadata_offset``), else None."""
    end = f.details.get("metadata_offset")
    if not isinstance(end, int):
        return None
    fitting = [c for c in corrupt if end <= (_cut(c) or 0)]
    exact = [c for c in fitting if _cut(c) == end]
    return (exact or fitting or [None])[0]


def link_consequences(findings: Iterable[Finding]) -> list[Finding]:
    """The same findings, in the same order, each consequence with ``caused_by`` set to its cause."""
    out = list(findings)
    cause: dict[int, Finding] = {}
    # LOG_CORRUPT: the first one of a partition (the earliest segment: where recovery truncates)
    corrupt: dict[str, Finding] = {}
    for f in out:
        if f.code == "LOG_CORRUPT":
            folder = _partition_folder(f.path)
            if folder is not None and (folder not in corrupt or f.path < corrupt[folder].path):
                corrupt[folder] = f
    bad_meta: dict[str, Finding] = {}
    for f in out:
        if f.code == "PARTITION_METADATA_INVALID":
            folder = _partition_folder(f.path)
            if folder is not None:
                bad_meta.setdefault(folder, f)
    metadata_cuts = [
        f for f in out if f.code == "LOG_CORRUPT" and f.details.get("metadata_log") and _cut(f) is not None
    ]
    seen: dict[tuple[str, str, int | None], Finding] = {}
    per_file: dict[str, Finding] = {}
    # what stops the cleaner at a damaged batch is that damage (checks.compaction: COMPACTION_DAMAGE follows
    # the scan's finding at the same file and byte position)
    damage = {(f.path, f.position): f for f in out if f.code in ("LOG_CORRUPT", "LOG_RECORDS_UNDECODABLE")}

    for i, f in enumerate(out):
        if f.code in _TRUNCATION_CONSEQUENCES:
            root = corrupt.get(_partition_folder(f.path) or "")
            if root is not None:
                cause[i] = root
                continue
        if f.code == "CHECKPOINT_MISMATCH" and _beyond_log_end(f):
            d = f.details
            folder = os.path.join(os.path.dirname(f.path), f"{d.get('topic')}-{d.get('partition')}")
            root = corrupt.get(folder)
            if root is not None:
                cause[i] = root
                continue
        if f.code == "REPLICA_NOT_ASSIGNED" and f.path in bad_meta and f.details.get("no_topic_id"):
            cause[i] = bad_meta[f.path]
            continue
        if f.code == "REPLICA_NOT_ASSIGNED" and metadata_cuts:
            root = _metadata_cause(f, metadata_cuts)
            if root is not None:
                cause[i] = root
                continue
        if f.code == "COMPACTION_DAMAGE" and (f.path, f.position) in damage:
            cause[i] = damage[(f.path, f.position)]
            continue
        if f.code == "META_PROPERTIES_MISMATCH":
            first = per_file.setdefault(f.path, f)
            if first is not f:
                cause[i] = first
            continue
        key = (f.code, f.path, f.position)
        first = seen.setdefault(key, f)
        if first is not f and f.position is not None:
            cause[i] = first
    return [dataclasses.replace(f, caused_by=cause[i].ref) if i in cause else f for i, f in enumerate(out)]
