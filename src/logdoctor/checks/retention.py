"""`logdoctor retention`: which segments Kafka's retention would delete at a given time, and why.

Follows K:core/src/main/scala/kafka/log/UnifiedLog.scala deleteOldSegments (the Java port keeps the
rules): with cleanup.policy=delete, first segments below the log start offset, then size
(retention.bytes), then time (retention.ms); each pass walks the segments oldest first and stops
at the first one that is not deletable (deletableSegments); a segment is deletable only when the
high watermark is at or above its upper bound (the next segment's base offset, or the log end
offset for the last one), and a last segment that is empty never is. When every segment goes the
broker first rolls a new empty active segment (deleteSegments). Time retention uses
LogSegment.largestTimestamp (time index last entry, else the .log mtime): we report both that and
the true largest timestamp from the log, and flag segments deleted only because of the difference.

A tiered partition (remote storage on, :mod:`logdoctor.checks.tiered`) is judged as the broker judges a
remote log (UnifiedLog deleteOldSegments with ``remoteLogEnabledAndRemoteCopyEnabled``):
``local.retention.ms``/``local.retention.bytes`` (-2: as retention.ms/.bytes; UnifiedLog.localRetentionMs)
decide which local segments go, the log-start pass compares with the local log start offset, deleting
moves the local log start offset (incrementStartOffset), never the log start; and a segment is deleted
locally only once it is uploaded (deletableSegments.isSegmentEligibleForDeletion: its last offset at or
below highestOffsetInRemoteStorage, or the log start already past it). Offline the upload state is
known only from the remote log metadata; without it nothing is taken as uploaded, and a segment local
retention would delete is reported as waiting for its upload (``upload_state`` says which: known from the
replay of ``__remote_log_metadata`` when its partition is among the inputs, the highest copied offset
standing for UnifiedLog.highestOffsetInRemoteStorage, else unknown). ``retention.ms``/``retention.bytes``
then apply to the remote tier (K:core/.../log/remote/RemoteLogManager.java RLMExpirationTask), which
is said, not simulated here.

By release (read from the 4.3.1 and 4.4.0 jars; docs/tiered-storage.md "Local retention by release"): local
retention is the same in both. A segment whose largest timestamp is in the future is never time-breached,
uploaded or not, and the time pass stops at it (named on the segment: ``kept_because``); KAFKA-20609, which
ages such an uploaded segment by its file time, is in neither release. 4.4 adds delayed upload (KIP-1241,
``remote.copy.lag.ms``/``.bytes``, :func:`logdoctor.checks.retention_round.upload_holds`): the copy task
holds recent segments local only, which the segment says (``upload_held_by``). The release is the one the
KRaft metadata log shows (:func:`release_rule`): the broker's registration (its highest supported
metadata.version), else the finalized metadata.version; without a metadata log, or with a release it does
not tell, remote.copy.lag.* apply where set (only a 4.4 controller accepts them).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from logdoctor.checks.context import Depth, PartitionReport, ScanOptions
from logdoctor.checks.findings import Finding
from logdoctor.checks.retention_round import PartitionRetention, RetentionReport, partition_retention
from logdoctor.checks.scanner import scan, topic_config_resolver
from logdoctor.checks.topic_config import METADATA_TOPIC, ConfigInputs, TopicConfigResolver
from logdoctor.logdir.remote_metadata import REMOTE_LOG_METADATA_TOPIC, RemoteLogMetadata

__all__ = ["release_rule", "retention", "upload_state"]


def upload_state(metadata: RemoteLogMetadata | None, part: PartitionReport) -> tuple[int | None, str]:
    """A tiered partition's highest offset in remote storage and where it comes from, in words: the replay
    of its ``__remote_log_metadata`` partition when that is among the inputs, else unknown (then nothing
    counts as uploaded and local retention is shown waiting)."""
    if metadata is None:
        return None, (
            "unknown: no __remote_log_metadata partition among the inputs, so nothing counts as uploaded"
        )
    highest = metadata.highest_copied_offset(part.topic_id, part.topic, part.partition)
    if highest is None:
        return None, (
            "unknown: the __remote_log_metadata partition holding its events is not among the inputs "
            "(or is damaged), so nothing counts as uploaded"
        )
    rp = metadata.partition(part.topic_id, part.topic, part.partition)
    where = f"{REMOTE_LOG_METADATA_TOPIC}-{rp.metadata_partition}" if rp is not None else "the metadata"
    if highest < 0:
        return highest, f"{where}: nothing of it is in remote storage yet"
    return highest, f"{where}: highest offset in remote storage {highest} (COPY_SEGMENT_FINISHED)"


#: metadata.version 4.4-IV0 (K:server-common/.../common/MetadataVersion.java): the first level of Kafka 4.4,
#: whose brokers have delayed upload (KIP-1241)
DELAYED_UPLOAD_LEVEL = 31


def release_rule(image: Any, log_dirs: Iterable[str | os.PathLike[str]]) -> tuple[str, bool]:
    """Which release's retention rules apply, in words, and whether that release has delayed upload
    (remote.copy.lag.*): from this broker's registration in the KRaft metadata log (the highest
    metadata.version its release supports), else the finalized metadata.version."""
    from logdoctor.logdir.metadata_image import metadata_version_name
    from logdoctor.logdir.model import LogDir

    if image is None or image.metadata_version is None:
        return (
            "no KRaft metadata log among the inputs: the broker's release is unknown; Kafka 4.3/4.4 local "
            "retention (the same in both), remote.copy.lag.* applied where set",
            True,
        )
    node = None
    for d in log_dirs:
        try:
            meta = LogDir(os.fspath(d)).meta_properties
        except Exception:
            continue
        node = getattr(meta, "node_id", None)
        if isinstance(node, int):
            break
    reg = image.brokers.get(node) if isinstance(node, int) else None
    top = reg.max_metadata_version if reg is not None else None
    mv = image.metadata_version
    if top is not None:
        said = (
            f"broker {node}'s registration supports metadata.version up to {metadata_version_name(top)} "
            f"(level {top})"
        )
    else:
        said = f"metadata.version {metadata_version_name(mv)} (level {mv})"
    if (mv if top is None else top) >= DELAYED_UPLOAD_LEVEL:
        return f"{said}: Kafka 4.4 or later, with delayed upload (remote.copy.lag.*, KIP-1241)", True
    if top is not None:
        return f"{said}: Kafka 4.3 or earlier, without delayed upload (remote.copy.lag.* ignored)", False
    return (
        f"{said}, no registration of this broker: its release may be newer than that level; "
        "remote.copy.lag.* applied where set (only a 4.4 controller accepts them)",
        True,
    )


def retention(
    log_dirs: Iterable[str | os.PathLike[str]],
    *,
    now_ms: int,
    config_inputs: ConfigInputs | None = None,
    jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> RetentionReport:
    """Scan ``log_dirs`` (one broker) and simulate one retention round at ``now_ms``, each topic with the
    settings :mod:`logdoctor.checks.topic_config` resolves (the ones the scan's findings used)."""
    options = ScanOptions(
        depth=Depth.DEFAULT, now_ms=now_ms, true_timestamps=True, config_inputs=config_inputs
    )
    log_dirs = list(log_dirs)
    report = scan(log_dirs, options, jobs=jobs, progress=progress)
    rule, delayed = release_rule(report.metadata, log_dirs)
    resolver: TopicConfigResolver | None = None
    partitions: list[PartitionRetention] = []
    findings: list[Finding] = []
    for part in report.partitions:
        if part.topic == METADATA_TOPIC:
            continue  # the KRaft metadata log is trimmed behind snapshots, not by retention
        cfg = part.topic_config
        if cfg is None:  # a folder the scanner gave no config (not a live partition)
            resolver = resolver or topic_config_resolver([d.path for d in report.log_dirs], options)
            cfg = resolver.resolve(part.topic)
        highest, state = upload_state(report.remote, part) if part.remote_log_enabled else (None, "")
        pr, fs = partition_retention(part, cfg, now_ms, highest, state, rule, delayed)
        partitions.append(pr)
        findings.extend(fs)
    # the groups already out of range (the scan's), and those this round's deletions move out of range
    findings.extend(f for f in report.findings if f.code == "CONSUMER_OFFSET_OUT_OF_RANGE")
    findings.sort(key=lambda f: f.sort_key())
    return RetentionReport(now_ms, partitions, findings, _groups_moved(report, partitions))


def _groups_moved(report: Any, partitions: list[PartitionRetention]) -> list[dict[str, Any]]:
    from logdoctor.checks.consumer_groups import clusters_of, moved_out_of_range
    from logdoctor.checks.cross_dir import broker_groups

    ranges = {
        p.path: (p.new_log_start_offset, p.log_end_offset)
        for p in partitions
        if p.new_log_start_offset is not None
        and p.log_end_offset is not None
        and p.log_start_offset is not None
        and p.new_log_start_offset > p.log_start_offset
    }
    if not ranges:
        return []
    clusters = clusters_of(broker_groups(report.log_dirs))
    return [o.details() for o in moved_out_of_range(report.partitions, clusters, ranges)]
