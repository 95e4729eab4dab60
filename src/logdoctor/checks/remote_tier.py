"""Findings about the remote tier of tiered partitions (KIP-405), from the replay of __remote_log_metadata.

Runs once per scan, after the partitions (it needs every partition's first local segment and every log
dir's log-start checkpoint). Nothing is replayed unless the log dirs hold a ``__remote_log_metadata``
partition. One finding per root cause:

- REMOTE_OFFSETS_LOST: offsets in [log start, local log start) that no COPY_SEGMENT_FINISHED segment
  holds (K:core/.../log/remote/RemoteLogManager.java read throws OffsetOutOfRangeException for them);
- REMOTE_UPLOAD_UNFINISHED: one per segment left in COPY_SEGMENT_STARTED whose copy the metadata shows
  ended (:func:`logdoctor.checks.remote_audit.dangling_uploads`; its objects stay in the store);
- REMOTE_SEGMENT_BELOW_LOG_START: one per partition, the segments the expiration task has yet to delete;
- REMOTE_PARTITION_DELETED_ON_DISK: a RemotePartitionDeleteMetadataRecord for a folder still here (same
  topic id: a topic re-created under the same name is another partition);
- REMOTE_METADATA_INVALID: one per record the replay could not apply (file and byte position);
- REMOTE_METADATA_NOT_HERE: once, for the tiered partitions whose metadata partition is not among the
  inputs (one broker holds only the metadata partitions it replicates): never a gap reported from
  missing events.

The log start offset of a tiered partition is its log-start checkpoint entry (K:storage/.../log/
LogLoader.java: ``isRemoteLogEnabled ? logStartOffsetCheckpoint : max(...)``); the local log start
offset is the first local segment's base offset (K:core/.../log/UnifiedLog.scala localLogStartOffset).
Which partitions are tiered, and their two offsets, are decided in one place (:mod:`logdoctor.checks.tiered`
with :mod:`logdoctor.logdir.offsets`); the replay's COPY_SEGMENT_FINISHED segments are one of its
pieces of evidence (the scanner feeds them in).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from logdoctor.checks import catalog
from logdoctor.checks.context import PartitionReport
from logdoctor.checks.findings import Finding
from logdoctor.checks.state.time_words import iso
from logdoctor.checks.tiered import REMOTE_LOG_METADATA_TOPIC
from logdoctor.checks.topic_config import ConfigInputs
from logdoctor.logdir.disk import human_bytes
from logdoctor.logdir.model import LogDir
from logdoctor.logdir.names import LOG_START_OFFSET_CHECKPOINT, RootEntryKind

if TYPE_CHECKING:  # the replay's module loads only when a log dir shows remote storage (issue 35)
    from logdoctor.logdir.remote_metadata import RemoteLogMetadata, RemotePartition, RemoteSegment

__all__ = [
    "check_remote_tier",
    "list_segment_objects",
    "metadata_partition_count",
    "mp_name",
    "ranges_text",
    "remote_metadata_for_scan",
    "tier_columns",
]


def ranges_text(ranges: Sequence[tuple[int, int]]) -> str:
    """``[a, b)`` ranges as ``a-(b-1)`` joined by commas."""
    return ", ".join(f"{a}-{b - 1}" if b - a > 1 else str(a) for a, b in ranges)


def _when(ms: int | None) -> str:
    """A remote segment's timestamp (an event's, its largest record's) in a finding: ISO-8601 UTC."""
    if ms is None or ms < 0:
        return "unknown"
    said = iso(ms)
    return f"{ms} ms" if said == "out of range" else said


def metadata_partition_count(image: Any) -> tuple[int | None, str | None]:
    """The number of ``__remote_log_metadata`` partitions the KRaft metadata log records (None: unknown)."""
    if image is None:
        return None, None
    tid = image.topic_id(REMOTE_LOG_METADATA_TOPIC)
    if tid is None:
        return None, None
    n = sum(1 for (t, _p) in image.partitions if t == tid)
    return (n, "from the KRaft metadata log") if n > 0 else (None, None)


# --- the remote store: the objects of one segment id ---------------------------------------------------


def _candidate_dirs(tip: Any) -> list[str]:
    """Where the two layouts keep a partition's objects, relative to the store's root: Kafka's
    LocalTieredStorage ``[kafka-tiered-storage/]<topic>-<partition>-<topicId>/`` and Aiven's plugin
    ``<topic>-<topicId>/<partition>/`` (RemoteStorageManager object keys, without a key prefix)."""
    local = f"{tip.topic}-{tip.partition}-{tip.topic_id}"
    return [local, f"kafka-tiered-storage/{local}", f"{tip.topic}-{tip.topic_id}/{tip.partition}"]


def list_segment_objects(store: str, tip: Any, segment_id: str) -> tuple[list[str], str | None]:
    """The objects under ``store`` (a folder or a URI pyarrow opens) whose names carry ``segment_id``, in
    the partition's folder of either layout; ``(objects, error)``. Lists, never reads an object."""
    found: list[str] = []
    if "://" not in store:
        root = os.path.abspath(store)
        if not os.path.isdir(root):
            return [], f"{store} is not a folder"
        for rel in _candidate_dirs(tip):
            d = os.path.join(root, rel)
            try:
                names = sorted(os.listdir(d))
            except OSError:
                continue
            found.extend(os.path.join(d, n) for n in names if segment_id in n)
        return found, None
    try:
        from pyarrow import fs as pafs

        filesystem, root = pafs.FileSystem.from_uri(store)
        for rel in _candidate_dirs(tip):
            infos = filesystem.get_file_info(
                pafs.FileSelector(f"{root.rstrip('/')}/{rel}", allow_not_found=True)
            )
            found.extend(
                f"{store.rstrip('/')}/{rel}/{i.base_name}"
                for i in sorted(infos, key=lambda i: i.path)
                if segment_id in i.base_name
            )
    except Exception as e:
        return found, f"cannot list {store}: {e}"
    return found, None


# --- the check ---------------------------------------------------------------------------------------------


def _log_start_checkpoints(paths: Iterable[str]) -> dict[str, dict[tuple[str, int], int]]:
    out: dict[str, dict[tuple[str, int], int]] = {}
    for p in paths:
        cp = LogDir.shared(p).checkpoint(LOG_START_OFFSET_CHECKPOINT)
        out[p] = {} if cp.error is not None else dict(cp.offsets)
    return out


def _has_tier_evidence(paths: Iterable[str], results: Iterable[PartitionReport]) -> bool:
    if REMOTE_LOG_METADATA_TOPIC in map(attrgetter("topic"), results):  # no Python call for each of 50,000
        return True
    cache = RootEntryKind.REMOTE_LOG_INDEX_CACHE
    return any(any(e.kind is cache for e, _ in LogDir.shared(p).listing) for p in paths)


def remote_metadata_for_scan(
    paths: Sequence[str],
    results: Sequence[PartitionReport],
    image: Any = None,
    inputs: ConfigInputs | None = None,
) -> RemoteLogMetadata | None:
    """The replay of the ``__remote_log_metadata`` partitions of a scan's log dirs; None (nothing read)
    when nothing in them says remote storage is in use (no metadata partition, no remote-log-index-cache).

    The metadata partition count: the KRaft metadata log's, else ``--server-properties``'
    (``rlmm.config.remote.log.metadata.topic.num.partitions``: checks.topic_config
    remote_log_metadata_partitions), else Kafka's default."""
    if not _has_tier_evidence(paths, [r for r in results if r.kind == "log"]):
        return None
    n, source = metadata_partition_count(image)
    if n is None and inputs is not None and inputs.remote_log_metadata_partitions is not None:
        n, key = inputs.remote_log_metadata_partitions
        source = f"{key} in --server-properties {inputs.server_properties_path or 'server.properties'}"
    from logdoctor.logdir.remote_metadata import replay_remote_log_metadata

    return replay_remote_log_metadata(paths, num_partitions=n, num_partitions_source=source)


def check_remote_tier(
    paths: Sequence[str],
    results: Sequence[PartitionReport],
    metadata: RemoteLogMetadata | None,
    *,
    remote_storage: str | None = None,
    index: Any = None,
) -> list[Finding]:
    """The remote tier's findings for the partitions of one scan (``paths``: its log dirs)."""
    if metadata is None:
        return []
    results = [r for r in results if r.kind == "log"]
    findings: list[Finding] = []
    logdir_of = {os.path.join(p, ""): p for p in paths}
    for prob in metadata.problems:
        findings.append(_problem_finding(prob, metadata, paths))
    checkpoints = _log_start_checkpoints(paths)
    # the audit's modules only when there is remote log metadata: a scan without it never loads them
    from logdoctor.checks.remote_audit import newest_event_ms

    newest = newest_event_ms(metadata.partitions.values())
    unchecked: list[tuple[PartitionReport, int | None]] = []
    for r in results:
        if r.topic == REMOTE_LOG_METADATA_TOPIC or r.topic.startswith("__cluster_metadata"):
            continue
        logdir = (
            r.log_dir
            if r.log_dir in checkpoints
            else logdir_of.get(os.path.dirname(r.path) + os.sep, r.log_dir)
        )
        cp = checkpoints.get(logdir, {}).get((r.topic, r.partition))
        rp = metadata.partition(r.topic_id, r.topic, r.partition)
        if rp is None:
            looks_tiered = cp is not None and r.first_base_offset is not None and cp < r.first_base_offset
            if looks_tiered and not metadata.covers(r.topic_id, r.partition):
                try:
                    needed = metadata.metadata_partition_for(r.topic_id, r.partition) if r.topic_id else None
                except ValueError:
                    needed = None
                unchecked.append((r, needed))
            continue
        findings.extend(_partition_findings(r, logdir, cp, rp, metadata, remote_storage, index, newest))
    if unchecked:
        findings.append(_not_here(unchecked, metadata, paths[0]))
    return findings


def mp_name(n: int | None) -> str:
    """A ``__remote_log_metadata`` partition's folder name (the topic's when the partition is unknown)."""
    return f"{REMOTE_LOG_METADATA_TOPIC}-{n}" if n is not None else REMOTE_LOG_METADATA_TOPIC


_CASE = {"invalid-transition": "transition", "wrong-partition": "partition-count"}


def _problem_finding(prob: Any, md: RemoteLogMetadata, paths: Sequence[str]) -> Finding:
    path = prob.path or next(iter(md.metadata_dirs.values()), paths[0])
    logdir = next((p for p in paths if path.startswith(os.path.join(p, ""))), paths[0])
    folder = os.path.basename(os.path.dirname(path)) if path.endswith(".log") else os.path.basename(path)
    case = _CASE.get(prob.kind, prob.kind)
    tip = prob.topic_id_partition
    facts = dict(prob.facts)
    if case == "partition-count":
        folder = mp_name(facts["found"])
    fields: dict[str, Any] = {
        "logdir": logdir,
        "metadata_partition": folder,
        "repair": catalog.repair_hint("LOG_CORRUPT", logdir),
        "topic_partition": tip.name if tip is not None else "",
        "topic_id": tip.topic_id if tip is not None else "",
        "segment_id": prob.segment_id or "",
        "num_partitions": md.num_partitions,
        "num_source": md.num_partitions_source,
        "from_state": facts.get("from_state", ""),
        "to_state": facts.get("to_state", ""),
        "error": facts.get("error", prob.message),
        "expected": facts.get("expected", ""),
    }
    return catalog.make(
        "REMOTE_METADATA_INVALID",
        path,
        case=case,
        position=prob.position,
        offset=prob.offset if prob.offset is not None and prob.offset >= 0 else None,
        details={"kind": prob.kind, "segment_id": prob.segment_id, "replay": prob.message},
        **fields,
    )


def tier_columns(rp: RemotePartition) -> dict[str, Any]:
    """A partition's remote tier: its COPY_SEGMENT_FINISHED segments (the ones that serve reads), their
    bytes, the first offset they hold and the offset after the last (the inventory's remote columns)."""
    return {
        "remote_segments": len(rp.copied),
        "remote_bytes": rp.remote_bytes,
        "remote_log_start_offset": rp.remote_log_start_offset,
        "remote_log_end_offset": rp.remote_log_end_offset,
    }


def _partition_findings(
    r: PartitionReport,
    logdir: str,
    cp: int | None,
    rp: RemotePartition,
    md: RemoteLogMetadata,
    remote_storage: str | None,
    index: Any = None,
    newest_ms: int | None = None,
) -> list[Finding]:
    from logdoctor.logdir.remote_metadata import SegmentState

    tip = rp.topic_id_partition
    tp = f"{r.topic}-{r.partition}"
    mp = mp_name(rp.metadata_partition)
    out: list[Finding] = []
    if rp.delete_state is not None:
        if r.topic_id is None:
            return out  # without partition.metadata the folder may be a re-created topic's: say nothing
        last = rp.delete_events[-1]
        live = rp.live_segments
        out.append(
            catalog.make(
                "REMOTE_PARTITION_DELETED_ON_DISK",
                r.path,
                logdir=logdir,
                topic_partition=tp,
                topic_id=tip.topic_id,
                metadata_partition=mp,
                state=last.state,
                broker_id=last.broker_id,
                when=_when(last.event_timestamp_ms),
                segments=(
                    "the remote tier has forgotten its segments"
                    if rp.deleted or not live
                    else f"{len(live)} of its remote segments are still listed, to be deleted"
                ),
                details={
                    "delete_state": last.state,
                    "metadata_path": last.path,
                    "metadata_position": last.position,
                },
            )
        )
        return out  # a deleted partition's tier is being removed: no gap or leftover is news
    if rp.metadata_partition in md.incomplete:
        return out  # known only up to the damage (its own finding says so): never a gap from missing events
    local_start = r.first_base_offset
    remote_start = rp.remote_log_start_offset
    if cp is not None:
        log_start, log_start_source = cp, "log-start-offset-checkpoint"
    else:  # no entry: never invent a gap below what is known to exist
        known = [o for o in (remote_start, local_start) if o is not None]
        log_start, log_start_source = (
            (min(known) if known else None),
            "no checkpoint entry: the lowest offset held",
        )
    if log_start is not None and local_start is not None and log_start < local_start:
        gaps = rp.uncovered(log_start, local_start)
        if gaps:
            out.append(_gap_finding(r, logdir, tp, rp, mp, gaps, log_start, log_start_source, local_start))
    from logdoctor.checks.remote_audit import dangling_uploads

    for seg, why in dangling_uploads(rp, newest_ms):
        out.append(_unfinished(r, logdir, tp, rp, seg, why, local_start, remote_storage, index))
    if log_start is not None:
        below = [
            s
            for s in rp.live_segments
            if s.end_offset < log_start
            and s.state in (SegmentState.COPY_SEGMENT_FINISHED, SegmentState.DELETE_SEGMENT_STARTED)
        ]
        if below:
            states = Counter(s.state.name for s in below)
            out.append(
                catalog.make(
                    "REMOTE_SEGMENT_BELOW_LOG_START",
                    r.path,
                    logdir=logdir,
                    topic_partition=tp,
                    count=len(below),
                    size=human_bytes(sum(s.size for s in below)),
                    ranges=ranges_text([(s.start_offset, s.end_offset + 1) for s in below]),
                    log_start_offset=log_start,
                    states=", ".join(f"{n} {k}" for k, n in sorted(states.items())),
                    details={"segment_ids": [s.segment_id for s in below], "log_start_offset": log_start},
                )
            )
    return out


def _gap_finding(
    r: PartitionReport,
    logdir: str,
    tp: str,
    rp: RemotePartition,
    mp: str,
    gaps: list[tuple[int, int]],
    log_start: int,
    log_start_source: str,
    local_start: int,
) -> Finding:
    tip = rp.topic_id_partition
    copied = rp.copied
    remote_ranges = ranges_text(_merge([(s.start_offset, s.end_offset + 1) for s in copied])) or "nothing"
    kept_below = [
        (a, min(b, gaps[-1][0])) for a, b in _merge([(s.start_offset, s.end_offset + 1) for s in copied])
    ]
    kept_below = [(a, b) for a, b in kept_below if a < b and b <= local_start and a >= log_start]
    delete_note = (
        f" (it also makes the broker delete the remote segments below {local_start}: offsets "
        f"{ranges_text(kept_below)}, which still exist; copy them out of the store first)"
        if kept_below
        else ""
    )
    earliest_note = (
        ", which is itself in the gap, so the consumer fails again and again"
        if gaps[0][0] == log_start
        else " and reads up to the gap again"
    )
    delete_json = json.dumps(
        {"partitions": [{"topic": r.topic, "partition": r.partition, "offset": local_start}], "version": 1},
        separators=(",", ":"),
    )
    return catalog.make(
        "REMOTE_OFFSETS_LOST",
        r.path,
        offset=gaps[0][0],
        logdir=logdir,
        topic_partition=tp,
        topic_id=tip.topic_id,
        ranges=ranges_text(gaps),
        count=sum(b - a for a, b in gaps),
        log_start_offset=log_start,
        log_start_source=log_start_source,
        remote_ranges=remote_ranges,
        metadata_partition=mp,
        local_log_start_offset=local_start,
        earliest_note=earliest_note,
        kafka_local_dir=f"{r.topic}-{r.partition}-{tip.topic_id}",
        aiven_dir=f"{r.topic}-{tip.topic_id}/{r.partition}",
        delete_json=delete_json,
        delete_note=delete_note,
        details={
            "gaps": [list(g) for g in gaps],
            "log_start_offset": log_start,
            "local_log_start_offset": local_start,
            "metadata_partition": rp.metadata_partition,
            **tier_columns(rp),
        },
    )


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _unfinished(
    r: PartitionReport,
    logdir: str,
    tp: str,
    rp: RemotePartition,
    seg: RemoteSegment,
    why: str,
    local_start: int | None,
    remote_storage: str | None,
    index: Any = None,
) -> Finding:
    others = [s for s in rp.copied if s.start_offset <= seg.start_offset and s.end_offset >= seg.end_offset]
    if others:
        covered = f"its offsets are in copied segment {others[0].segment_id}"
    elif local_start is not None and seg.start_offset >= local_start:
        covered = "its offsets are still in the log dir, to be uploaded again"
    else:
        covered = "no other copy of its offsets is known: see REMOTE_OFFSETS_LOST if the scan reports it"
    tip = rp.topic_id_partition
    listing = index.partition(tip.topic_id, tip.partition) if index is not None else None
    if index is not None:  # the audit's listing (--remote-storage or --remote-inventory): no LIST of its own
        so = listing.segments.get(seg.segment_id) if listing is not None else None
        listed = so.keys if so is not None else []
        objects = (
            f"{len(listed)} objects of it are in the store: {', '.join(listed)}"
            if listed
            else f"no object of it is in {remote_storage or f'the store ({index.source})'}"
        )
        list_hint = ""
    elif remote_storage is None:
        objects = "the remote store was not given (scan --remote-storage) to list its objects"
        list_hint = " (scan again with --remote-storage and the store's folder or URI to list them)"
        listed: list[str] = []
    else:
        listed, error = list_segment_objects(remote_storage, rp.topic_id_partition, seg.segment_id)
        if error is not None:
            objects = error
        elif listed:
            objects = f"{len(listed)} objects of it are in the store: {', '.join(listed)}"
        else:
            objects = f"no object of it is in {remote_storage}"
        list_hint = ""
    ev = seg.first_event
    return catalog.make(
        "REMOTE_UPLOAD_UNFINISHED",
        ev.path,
        position=ev.position,
        offset=ev.offset,
        logdir=logdir,
        topic_partition=tp,
        segment_id=seg.segment_id,
        start_offset=seg.start_offset,
        end_offset=seg.end_offset,
        size=human_bytes(seg.size),
        broker_id=ev.broker_id,
        started=_when(ev.event_timestamp_ms),
        dangling=why,
        objects=objects,
        covered=covered,
        list_hint=list_hint,
        details={"segment_id": seg.segment_id, "partition_path": r.path, "objects": listed, "dangling": why},
    )


def _not_here(
    unchecked: list[tuple[PartitionReport, int | None]], md: RemoteLogMetadata, logdir: str
) -> Finding:
    needed = sorted({n for _r, n in unchecked if n is not None})
    names = sorted({f"{r.topic}-{r.partition}" for r, _n in unchecked})
    shown = ", ".join(names[:20]) + (f" and {len(names) - 20} more" if len(names) > 20 else "")
    return catalog.make(
        "REMOTE_METADATA_NOT_HERE",
        logdir,
        logdir=logdir,
        count=len(names),
        needed=", ".join(mp_name(n) for n in needed) or "metadata partitions the topic ids do not name",
        num_partitions=md.num_partitions,
        num_source=md.num_partitions_source,
        partitions=shown,
        details={"partitions": names, "metadata_partitions": needed},
    )
