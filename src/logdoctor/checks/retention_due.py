"""RETENTION_DUE: the segments the broker's next retention check deletes, and the offsets they hold.

The round is `logdoctor retention`'s own (:func:`logdoctor.checks.retention_round.partition_retention`, after
K:UnifiedLog deleteOldSegments): below the log start offset (deleteLogStartOffsetBreachedSegments: a
log-start-offset-checkpoint above a segment's end, as DeleteRecords or a hand edit leaves it), then
retention.bytes, then retention.ms by the largest timestamp the broker reads. The broker runs it
log.retention.check.interval.ms (5 minutes by default) after it starts, and every interval since.

Severity: a note. Deleting what the topic's retention says is Kafka working as configured, and the records
below the log start offset are already unreadable (a fetch below it is OffsetOutOfRange); a scan of an
archived log dir finds every delete topic's data past retention. The note says what goes, so that nobody
starts a broker on a log dir whose data they meant to keep without knowing; the report's headline counts
its offsets among the records at risk. A segment deleted only because of a wrong largest timestamp is
RETENTION_RISK besides (an error). Not for a tiered partition (its local segments go once uploaded:
their records stay in remote storage) nor the KRaft metadata log (trimmed behind snapshots).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from logdoctor.checks.findings import Finding
from logdoctor.checks.retention_round import (
    LOG_START_OFFSET_BREACH,
    RETENTION_MS_BREACH,
    broker_timestamp,
    partition_retention,
)
from logdoctor.logdir.disk import human_bytes
from logdoctor.logdir.names import METADATA_TOPIC

if TYPE_CHECKING:
    from logdoctor.checks.context import PartitionReport

__all__ = ["retention_due"]


def retention_due(rep: PartitionReport, now_ms: int) -> Finding | None:
    """The RETENTION_DUE of one scanned partition (its report complete: offsets, segment infos), or None
    when the next retention check deletes nothing of it."""
    cfg = rep.topic_config
    if cfg is None or rep.topic == METADATA_TOPIC or rep.remote_log_enabled or not rep.segment_infos:
        return None
    # each pass of the round stops at the first segment it may not delete: when the first segment is safe
    # from all three, the round deletes nothing (most partitions: the round itself is not run)
    infos = rep.segment_infos
    head = infos[0]
    start = rep.log_start_offset
    below_start = len(infos) > 1 and start is not None and infos[1].base_offset <= start
    ms, size = cfg.retention_ms.value, cfg.retention_bytes.value
    by_time = cfg.delete and ms >= 0 and now_ms - broker_timestamp(head) > ms
    by_size = cfg.delete and 0 <= size <= sum(i.size for i in infos)
    if not (below_start or by_time or by_size):
        return None
    from logdoctor.checks import catalog
    from logdoctor.checks.state.time_words import duration

    pr, _risks = partition_retention(rep, cfg, now_ms)
    gone = pr.deleted
    if not gone or pr.new_log_start_offset is None:
        return None
    first = gone[0].base_offset
    end = pr.new_log_start_offset  # the first offset kept (the log end when every segment goes)
    offsets = max(0, end - first)
    count = {r: sum(1 for s in gone if s.reason == r) for r in dict.fromkeys(s.reason for s in gone)}
    why = []
    for reason, n in count.items():
        if reason == LOG_START_OFFSET_BREACH:
            why.append(
                f"{n} wholly below the log start offset {pr.log_start_offset} (log-start-offset-checkpoint): "
                "their records are already unreadable, a fetch below it is OffsetOutOfRange"
            )
        elif reason == RETENTION_MS_BREACH:
            why.append(
                f"{n} past retention.ms={cfg.retention_ms.value} ({duration(cfg.retention_ms.value)}) by the "
                "largest timestamp the broker reads"
            )
        else:
            why.append(f"{n} past retention.bytes={cfg.retention_bytes.value}")
    early = sum(1 for s in gone if s.at_risk)
    also = f"; {early} of them only because of a wrong largest timestamp (RETENTION_RISK)" if early else ""
    if pr.rolls:
        also += (
            f"; every segment goes, so the broker first rolls a new empty segment at offset {end} and the "
            "partition holds no record"
        )
    path = os.path.join(rep.path, f"{first:020d}.log")
    return catalog.make(
        "RETENTION_DUE",
        path,
        logdir=rep.log_dir,
        offset=first,
        tp=f"{rep.topic}-{rep.partition}",
        segments=len(gone),
        size=human_bytes(sum(s.size for s in gone)),
        first=first,
        last=end - 1,
        offsets=f"{offsets:,}",
        why="; ".join(why),
        moves=(
            f"The log start offset moves from {pr.log_start_offset} to {end}"
            if pr.log_start_offset != end
            else f"The log start offset stays {end}"
        ),
        also=also,
        config=cfg.describe(),
        details={
            "segments": [s.base_offset for s in gone],
            "bytes": sum(s.size for s in gone),
            "offsets": offsets,
            "first_offset": first,
            "last_offset": end - 1,
            "reasons": {r or "": n for r, n in count.items()},
            "early": early,
            "log_start_offset": pr.log_start_offset,
            "new_log_start_offset": end,
            "rolls": pr.rolls,
        },
    )
