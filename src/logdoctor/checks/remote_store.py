"""Findings of the remote tier audit: the store's objects against the remote log metadata and the log dirs.

The comparison itself is :mod:`logdoctor.checks.remote_audit`; this module turns it into findings for a
scan (``--remote-storage`` lists the store, ``--remote-inventory`` reads an S3 Inventory report instead):

- REMOTE_OBJECTS_LEAKED: objects no live segment names (one per partition; the exact objects and a
  command deleting exactly them: the scan never deletes anything);
- REMOTE_SEGMENT_MISSING: a COPY_SEGMENT_FINISHED segment whose objects are not in the store;
- REMOTE_SEGMENTS_OVERLAP: two finished segments sharing offsets (or the same offsets twice);
- REMOTE_EPOCH_LINEAGE_BROKEN: a finished segment outside the local leader-epoch lineage, an epoch that
  goes down between consecutive segments, a local log below the remote tier's last epoch;

and, from the metadata and the log dirs alone (no listing needed):

- REMOTE_UPLOAD_STALLED: local segments past local retention above the highest uploaded offset;
- REMOTE_METADATA_RETENTION_SHORT: ``__remote_log_metadata`` retention below a tiered topic's.

A partition whose metadata partition is not among the inputs (or stopped at damage) is compared with
nothing (REMOTE_METADATA_NOT_HERE / REMOTE_METADATA_INVALID say so): missing events never make objects
look leaked.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from logdoctor.checks import catalog
from logdoctor.checks.context import PartitionReport, SegmentInfo
from logdoctor.checks.findings import Finding, Severity
from logdoctor.checks.remote_audit import (
    ALL,
    EpochBreak,
    PartitionAudit,
    StoreIndex,
    audit_partition,
    missing_key,
    missing_what,
)
from logdoctor.checks.remote_tier import _when, mp_name, ranges_text
from logdoctor.checks.retention_round import true_timestamp
from logdoctor.checks.topic_config import RETENTION_MS
from logdoctor.logdir.disk import human_bytes
from logdoctor.logdir.remote_metadata import REMOTE_LOG_METADATA_TOPIC, RemoteLogMetadata, RemoteSegment
from logdoctor.logdir.store_listing import (
    list_store,
    read_inventory_file,
    read_inventory_manifest,
)

__all__ = [
    "check_metadata_retention",
    "check_remote_store",
    "check_upload_stalled",
    "epoch_break_finding",
    "lineage_text",
    "overlap_finding",
    "store_index",
]

#: objects a REMOTE_OBJECTS_LEAKED fix deletes in its printed command (the rest are in its details)
DELETE_SHOWN = 100


def store_index(remote_storage: str | None, remote_inventory: str | None) -> StoreIndex | None:
    """The listing of the store: an S3 Inventory report's (``remote_inventory``: its manifest.json) or a
    direct listing of ``remote_storage``; None without either. Raises OSError / InventoryError when the
    listing cannot be read."""
    if remote_inventory is not None:
        manifest = read_inventory_manifest(remote_inventory)
        index = StoreIndex(f"S3 Inventory report {remote_inventory} of s3://{manifest.source_bucket}")
        for key, _size, _md5 in manifest.files:
            for obj in read_inventory_file(manifest, key):
                index.add(obj)
        return index
    if remote_storage is not None:
        return StoreIndex.build(list_store(remote_storage), f"a listing of {remote_storage}")
    return None


def _epochs(seg: RemoteSegment) -> str:
    return ", ".join(f"{e}@{o}" for e, o in seg.leader_epochs) or "none"


def _delete_command(keys: Sequence[str]) -> str:
    """One shell command deleting exactly ``keys`` (a local path: rm; s3://: the AWS CLI per object)."""
    shown = list(keys[:DELETE_SHOWN])
    local = [k for k in shown if "://" not in k]
    remote = [k for k in shown if "://" in k]
    parts = []
    if local:
        parts.append("rm -- " + " ".join(shlex.quote(k) for k in local))
    parts.extend(f"aws s3 rm {shlex.quote(k)}" for k in remote if k.startswith("s3://"))
    other = [k for k in remote if not k.startswith("s3://")]
    text = " && ".join(parts)
    if other:
        text += ("; and " if text else "") + "with the store's own tool: " + ", ".join(other)
    if len(keys) > DELETE_SHOWN:
        text += f" (and the {len(keys) - DELETE_SHOWN} more objects in this finding's details: objects)"
    return text


def _local_reports(results: Iterable[PartitionReport]) -> dict[tuple[str, int], PartitionReport]:
    out: dict[tuple[str, int], PartitionReport] = {}
    for r in results:
        if r.kind == "log" and r.topic_id is not None and r.topic != REMOTE_LOG_METADATA_TOPIC:
            out.setdefault((r.topic_id, r.partition), r)
    return out


def check_remote_store(
    paths: Sequence[str],
    results: Sequence[PartitionReport],
    metadata: RemoteLogMetadata | None,
    index: StoreIndex | None,
) -> list[Finding]:
    """The audit's findings for every partition the metadata or the listing knows whose events the
    metadata covers."""
    if metadata is None or index is None:
        return []
    local = _local_reports(results)
    keys: set[tuple[str, int]] = set(index.partitions)
    keys.update((t.topic_id, t.partition) for t in metadata.partitions)
    by_id = {(t.topic_id, t.partition): rp for t, rp in metadata.partitions.items()}
    findings: list[Finding] = []
    for topic_id, partition in sorted(keys):
        if not metadata.covers(topic_id, partition):
            continue
        objs = index.partition(topic_id, partition)
        rp = by_id.get((topic_id, partition))
        r = local.get((topic_id, partition))
        a = audit_partition(
            rp,
            objs,
            lineage=r.leader_epochs if r is not None else None,
            log_end_offset=r.log_end_offset if r is not None else None,
            local_log_start_offset=r.local_log_start_offset if r is not None else None,
            log_start_offset=r.log_start_offset if r is not None else None,
        )
        where = r.path if r is not None else (objs.folder if objs is not None else index.source)
        logdir = r.log_dir if r is not None else paths[0]
        findings.extend(_findings(a, r, where, logdir, index, rp.copied if rp is not None else []))
    return findings


def _findings(
    a: PartitionAudit,
    r: PartitionReport | None,
    where: str,
    logdir: str,
    index: StoreIndex,
    copied: list[RemoteSegment],
) -> list[Finding]:
    tip = a.topic_id_partition
    tp = tip.name
    mp = mp_name(a.metadata_partition)
    out: list[Finding] = []
    if a.leaked:
        keys = [k for so, _why in a.leaked for k in so.keys]
        whys = Counter(why for _so, why in a.leaked)
        out.append(
            catalog.make(
                "REMOTE_OBJECTS_LEAKED",
                where,
                logdir=logdir,
                topic_partition=tp,
                topic_id=tip.topic_id,
                count=len(a.leaked),
                objects=len(keys),
                size=human_bytes(a.leaked_bytes),
                source=index.source,
                metadata_partition=mp,
                why="; ".join(f"{n} segment{'s' if n != 1 else ''}: {w}" for w, n in whys.items()),
                delete=_delete_command(keys),
                details={
                    "objects": keys,
                    "bytes": a.leaked_bytes,
                    "segments": [
                        {
                            "segment_id": so.segment_id,
                            "start_offset": so.start_offset,
                            "bytes": so.bytes,
                            "why": w,
                        }
                        for so, w in a.leaked
                    ],
                },
            )
        )
    local_start = r.first_base_offset if r is not None else None
    by_start = sorted(copied, key=lambda s: (s.start_offset, s.end_offset))
    for seg, miss in a.missing:
        prev = [s for s in by_start if s.end_offset < seg.start_offset]
        lo = prev[-1].max_timestamp_ms if prev else None
        time_range = (
            f"after {_when(lo)} and up to {_when(seg.max_timestamp_ms)}"
            if lo
            else (f"up to {_when(seg.max_timestamp_ms)}")
        )
        if local_start is not None and seg.start_offset >= local_start:
            held, severity = "the log dir still holds all its offsets (nothing is lost yet)", Severity.WARNING
        elif local_start is not None and seg.end_offset >= local_start:
            held = (
                f"offsets {seg.start_offset}-{local_start - 1} are in no other copy (lost), the log dir "
                f"holds {local_start}-{seg.end_offset}"
            )
            severity = Severity.ERROR
        elif r is not None:
            held = f"no other copy of offsets {seg.start_offset}-{seg.end_offset} is known: they are lost"
            severity = Severity.ERROR
        else:
            held = "the log dirs scanned do not hold the partition: its offsets are in no copy they know of"
            severity = Severity.ERROR
        what = "every object of the segment" if miss == [ALL] else ", ".join(missing_what(s) for s in miss)
        folder = index.partition(tip.topic_id, tip.partition)
        stem = f"{seg.start_offset:020d}-{seg.segment_id}"
        base = folder.folder if folder is not None else f"<{tp} folder of the store>"
        keys = (
            f"{base}/{stem}.<suffix>"
            if miss == [ALL]
            else ", ".join(f"{base}/{stem}.{missing_key(s)}" for s in miss)
        )
        delete_json = json.dumps(
            {
                "partitions": [
                    {"topic": tip.topic, "partition": tip.partition, "offset": seg.end_offset + 1}
                ],
                "version": 1,
            },
            separators=(",", ":"),
        )
        out.append(
            catalog.make(
                "REMOTE_SEGMENT_MISSING",
                where,
                severity=severity,
                offset=seg.start_offset,
                logdir=logdir,
                topic_partition=tp,
                topic_id=tip.topic_id,
                segment_id=seg.segment_id,
                start_offset=seg.start_offset,
                end_offset=seg.end_offset,
                time_range=time_range,
                metadata_partition=mp,
                what=what,
                source=index.source,
                held=held,
                keys=keys,
                local_log_start_offset=local_start if local_start is not None else "unknown",
                delete_json=delete_json,
                details={
                    "segment_id": seg.segment_id,
                    "start_offset": seg.start_offset,
                    "end_offset": seg.end_offset,
                    "max_timestamp_ms": seg.max_timestamp_ms,
                    "min_timestamp_after_ms": lo,
                    "missing": miss,
                },
            )
        )
    objs = index.partition(tip.topic_id, tip.partition)
    for first, second in a.overlaps:
        so = objs.segments.get(second.segment_id) if objs is not None else None
        out.append(
            overlap_finding(
                first, second, where=where, logdir=logdir, topic_partition=tp, metadata_partition=mp,
                second_bytes=so.bytes if so is not None else second.size,
            )
        )  # fmt: skip
    source, lineage = lineage_text(
        r.path if r is not None else None, r.leader_epochs if r is not None else []
    )
    for br in a.epoch_breaks:
        out.append(
            epoch_break_finding(
                br, where=where, logdir=logdir, topic_partition=tp, lineage_source=source, lineage=lineage
            )
        )
    return out


def lineage_text(partition_path: str | None, leader_epochs: Iterable[tuple[int, int]]) -> tuple[str, str]:
    """(where the lineage comes from, the lineage as text) for REMOTE_EPOCH_LINEAGE_BROKEN."""
    source = (
        os.path.join(partition_path, "leader-epoch-checkpoint")
        if partition_path is not None
        else "the partition's leader"
    )
    return source, ", ".join(f"{e}@{o}" for e, o in leader_epochs) or "none"


def overlap_finding(
    first: RemoteSegment,
    second: RemoteSegment,
    *,
    where: str,
    logdir: str,
    topic_partition: str,
    metadata_partition: str,
    second_bytes: int,
) -> Finding:
    """REMOTE_SEGMENTS_OVERLAP of one pair of :func:`logdoctor.checks.remote_audit.lineage_audit` (the
    scan's and the census's)."""
    shared = (max(first.start_offset, second.start_offset), min(first.end_offset, second.end_offset))
    dup = (first.start_offset, first.end_offset) == (second.start_offset, second.end_offset)
    return catalog.make(
        "REMOTE_SEGMENTS_OVERLAP",
        where,
        case="duplicate" if dup else None,
        offset=shared[0],
        logdir=logdir,
        topic_partition=topic_partition,
        metadata_partition=metadata_partition,
        first_id=first.segment_id,
        first_range=f"{first.start_offset}-{first.end_offset}",
        first_epochs=_epochs(first),
        second_id=second.segment_id,
        second_range=f"{second.start_offset}-{second.end_offset}",
        second_epochs=_epochs(second),
        shared=f"{shared[0]}-{shared[1]}",
        size=human_bytes(second_bytes),
        details={
            "segment_ids": [first.segment_id, second.segment_id],
            "shared": list(shared),
            "duplicate": dup,
        },
    )


def epoch_break_finding(
    br: EpochBreak, *, where: str, logdir: str, topic_partition: str, lineage_source: str, lineage: str
) -> Finding:
    """REMOTE_EPOCH_LINEAGE_BROKEN of one break of :func:`logdoctor.checks.remote_audit.lineage_audit`
    (the scan's and the census's)."""
    s = br.segment
    return catalog.make(
        "REMOTE_EPOCH_LINEAGE_BROKEN",
        where,
        case=None if br.case == "outside-lineage" else br.case,
        offset=s.start_offset,
        logdir=logdir,
        topic_partition=topic_partition,
        segment_id=s.segment_id,
        start_offset=s.start_offset,
        end_offset=s.end_offset,
        epochs=_epochs(s),
        lineage_source=lineage_source,
        lineage=lineage,
        reason=br.reason,
        previous_id=br.previous.segment_id if br.previous is not None else "",
        previous_epochs=_epochs(br.previous) if br.previous is not None else "",
        details={"case": br.case, "segment_id": s.segment_id, "reason": br.reason},
    )


# --- stalled uploads -----------------------------------------------------------------------------------


def _stalled(
    segs: list[SegmentInfo], highest_uploaded: int, local_ms: int | None, local_bytes: int | None, now_ms: int
) -> list[tuple[SegmentInfo, int, str]]:
    """(segment, last offset, why) of the inactive segments local retention would delete if they were
    uploaded (UnifiedLog.deleteRetentionMsBreachedSegments / deleteRetentionSizeBreachedSegments with
    localRetentionMs/Bytes) whose offsets are above ``highest_uploaded``."""
    out: list[tuple[SegmentInfo, int, str]] = []
    inactive = segs[:-1]  # the active segment is never deleted
    diff = sum(s.size for s in segs) - local_bytes if local_bytes is not None and local_bytes >= 0 else None
    for i, s in enumerate(inactive):
        last = segs[i + 1].base_offset - 1
        why = None
        if local_ms is not None and local_ms >= 0 and now_ms > 0 and now_ms - true_timestamp(s) > local_ms:
            why = f"its largest timestamp {_when(true_timestamp(s))} is older than local.retention.ms"
        if diff is not None and diff - s.size >= 0:
            diff -= s.size
            why = why or "the partition is above local.retention.bytes"
        if why is not None and last > highest_uploaded:
            out.append((s, last, why))
    return out


#: the least time span of a partition's segments' timestamps that a write rate, and a date the disk is
#: full, are projected from (issue 47: records 1 ms apart gave "full in 4.4 days")
MIN_RATE_SPAN_MS = 3_600_000


def _fill(log_dir: str, segs: list[SegmentInfo], now_ms: int) -> tuple[str, dict[str, Any]]:
    """When the file system of ``log_dir`` fills at this partition's write rate (its segments' sizes over
    the span of their largest timestamps)."""
    try:
        free = shutil.disk_usage(log_dir).free
    except OSError:
        return "the free space of the log dir is unknown", {}
    if len(segs) < 2:
        return f"{free} bytes are free on the log dir's file system; the write rate is unknown", {
            "free": free
        }
    span = true_timestamp(segs[-1]) - true_timestamp(segs[0])
    grown = sum(s.size for s in segs[1:])
    if span <= 0 or grown <= 0:
        return f"{free} bytes are free on the log dir's file system; the write rate is unknown", {
            "free": free
        }
    if span < MIN_RATE_SPAN_MS:  # records written 1 ms apart are no rate a disk fills at
        return (
            f"{free} bytes are free on the log dir's file system; the write rate is unknown (the segments' "
            f"timestamps span {span} ms, less than the {MIN_RATE_SPAN_MS // 3_600_000} hour(s) a rate is "
            "projected from)",
            {"free": free},
        )
    rate = grown / span  # bytes per ms
    eta = int(free / rate)
    when = _when(now_ms + eta) if now_ms > 0 else f"in {eta // 86_400_000} days"
    text = (
        f"at this partition's write rate ({int(rate * 86_400_000)} bytes a day, from its segments' "
        f"timestamps) the {free} free bytes of the log dir's file system last {eta / 86_400_000:.1f} days "
        f"(until {when})"
    )
    return text, {"free": free, "bytes_per_day": int(rate * 86_400_000), "full_in_ms": eta}


def check_upload_stalled(
    results: Sequence[PartitionReport], metadata: RemoteLogMetadata | None, now_ms: int
) -> list[Finding]:
    if metadata is None:
        return []
    out: list[Finding] = []
    for r in results:
        if r.kind != "log" or not r.remote_log_enabled or r.topic_config is None or len(r.segment_infos) < 2:
            continue
        highest = metadata.highest_copied_offset(r.topic_id, r.topic, r.partition)
        if highest is None:
            continue  # its events are not here: nothing is known of its uploads
        cfg = r.topic_config
        if not cfg.delete:
            continue
        local_ms = cfg.local_retention_ms.value if cfg.local_retention_ms is not None else None
        local_bytes = cfg.local_retention_bytes.value if cfg.local_retention_bytes is not None else None
        segs = sorted(r.segment_infos, key=lambda s: s.base_offset)
        stalled = _stalled(segs, highest, local_ms, local_bytes, now_ms)
        if not stalled:
            continue
        fill, fill_json = _fill(r.log_dir, segs, now_ms)
        rp = metadata.partition(r.topic_id, r.topic, r.partition)
        retention = "; ".join(
            s.describe() for s in (cfg.local_retention_ms, cfg.local_retention_bytes) if s is not None
        )
        out.append(
            catalog.make(
                "REMOTE_UPLOAD_STALLED",
                r.path,
                offset=stalled[0][0].base_offset,
                logdir=r.log_dir,
                topic_partition=f"{r.topic}-{r.partition}",
                count=len(stalled),
                size=human_bytes(sum(s.size for s, _l, _w in stalled)),
                ranges=ranges_text([(s.base_offset, last + 1) for s, last, _w in stalled]),
                retention=retention,
                remote_end=highest + 1,
                metadata_partition=mp_name(rp.metadata_partition if rp is not None else None),
                fill=fill,
                details={
                    "segments": [
                        {"base_offset": s.base_offset, "last_offset": last, "size": s.size, "why": w}
                        for s, last, w in stalled
                    ],
                    "highest_uploaded_offset": highest,
                    **fill_json,
                },
            )
        )
    return out


# --- the metadata topic's retention ------------------------------------------------------------------------


def check_metadata_retention(
    results: Sequence[PartitionReport], metadata: RemoteLogMetadata | None
) -> list[Finding]:
    """One finding when ``__remote_log_metadata``'s retention.ms (as the scan resolves the topic's
    config) is finite and below a tiered topic's (unlimited counts as above any)."""
    md_cfg = next(
        (
            r.topic_config
            for r in results
            if r.topic == REMOTE_LOG_METADATA_TOPIC and r.topic_config is not None
        ),
        None,
    )
    if md_cfg is None or not md_cfg.delete or md_cfg.retention_ms.value < 0:
        return []
    limit = md_cfg.retention_ms.value
    longer: dict[str, str] = {}
    for r in results:
        if r.kind != "log" or not r.remote_log_enabled or r.topic_config is None:
            continue
        ms = r.topic_config.retention_ms.value
        if ms < 0 or ms > limit:
            longer.setdefault(r.topic, f"{r.topic} (retention.ms={r.topic_config.retention_ms.describe()})")
    if not longer:
        return []
    key = md_cfg.retention_ms.key
    props_hint = (
        f" (the topic exists: its retention.ms wins over {key}, which the brokers' RLMM creates the topic "
        f"with; set {key}=-1 in each broker's server.properties too, for a re-created topic)"
        if key != RETENTION_MS
        else ""
    )
    path = next((r.path for r in results if r.topic == REMOTE_LOG_METADATA_TOPIC), REMOTE_LOG_METADATA_TOPIC)
    logdir = next((r.log_dir for r in results if r.topic == REMOTE_LOG_METADATA_TOPIC), "")
    return [
        catalog.make(
            "REMOTE_METADATA_RETENTION_SHORT",
            path,
            logdir=logdir,
            metadata_retention=md_cfg.retention_ms.describe(),
            props_hint=props_hint,
            topics=", ".join(longer[t] for t in sorted(longer)),
            details={
                "metadata_retention_ms": limit,
                "metadata_retention_source": md_cfg.retention_ms.source,
                "topics": sorted(longer),
            },
        )
    ]
