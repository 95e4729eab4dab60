"""What a running broker's log dir normally looks like, so that a read next to it reports no damage for it.

A broker holding ``.lock`` (K:server-common/.../util/FileLock.java) changes its log dirs while they are
read. Its normal state, each not a finding of a read-only command (docs/live-broker.md):

- the active segment grows: each partition is read as of one moment, when its check began (its files
  listed with their sizes): every segment's ``.log`` is read up to its listed size, no further
  (checks.state.file_records.walk_file's ``end``, as Kafka's FileRecords.slice reads a segment up to the size
  taken when the read began), so the log end and the record counts reported are those of that moment. A batch
  the broker was writing when the size was listed ends past it: torn at the moment's edge, it is a batch
  not yet written (Kafka's readers, FileRecords' batch iterator, stop at a partial trailing batch), not
  damage;
- the active segment's ``.index`` and ``.timeindex`` are preallocated to ``log.index.size.max.bytes`` and
  zero past their last entry (AbstractIndex), are the broker's working copies (memory-mapped, an entry
  written after the log bytes it points at: LogSegment.append), trimmed at the roll
  (LogSegment.onBecomeInactiveSegment) and rebuilt from the log by recovery after an unclean stop
  (LogLoader.recoverLog recovers from the recovery point, always the active segment and later): their
  entries are not checked against the log while the broker writes them;
- a roll closes the active segment and starts another; retention and the log cleaner rename segments
  ``.deleted`` and remove them ``file.delete.delay.ms`` later (LogSegment.changeFileSuffixes), the cleaner
  writes ``.cleaned`` and ``.swap`` files (LogCleaner, UnifiedLog.replaceSegments), checkpoints are written
  through ``.tmp`` files (CheckpointFile.write), topic deletion renames folders ``-delete``: work in progress
  (:data:`TRANSIENT_ORPHANS`), not leftovers: at a start the broker deletes them (LogLoader), so a running
  broker's are its own;
- a segment listed at the moment may be renamed ``.deleted`` before it is read (read there:
  logdir.files.open_regular) or removed (the partition is read again as of a new moment, at most
  :data:`READS` times: checks.partition);
- the recovery point lags the log end (flushed at a roll or by ``log.flush.*``), and there is no
  ``.kafka_cleanshutdown`` marker (deleted at startup).

Real damage in a closed segment is still found: a closed segment's files are not changed by a running
broker (only renamed and removed).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from logdoctor.logdir.lock import lock_holder
from logdoctor.logdir.names import FileState, SegmentFileType, match_segment_file

if TYPE_CHECKING:
    from logdoctor.checks.findings import Finding
    from logdoctor.logdir.model import Segment

__all__ = ["READS", "TRANSIENT_ORPHANS", "Moment", "active_segment_of_live_dir"]

#: orphan kinds (logdir.model's Orphan.kind) that a running broker makes and removes itself
TRANSIENT_ORPHANS = frozenset(
    {
        "deleted",  # retention, truncation, compaction: renamed, removed file.delete.delay.ms later
        "deleted-snapshot",  # a KRaft snapshot deleted the same way
        "cleaned",  # the log cleaner's output being written
        "swap",  # the cleaner's output being swapped in
        "index-without-log",  # a segment being renamed .deleted file by file (the .log first)
        "tmp-file",  # a checkpoint, partition.metadata or meta.properties being written
        "partial-snapshot",  # a KRaft snapshot being written
        "delete-dir",  # a deleted topic's folder, removed file.delete.delay.ms later
    }
)

#: how many times a partition of a live log dir is read, each as of a new moment, when a segment file listed
#: at the moment is gone before it is read (retention removed it): a broker deletes the oldest segments, so
#: the next moment lists what is left
READS = 3


@dataclass(frozen=True, slots=True)
class Moment:
    """The moment a live partition is read as of: its files as listed when its check began. The active
    segment's ``.log`` is read as of its listed size (the log end then); its indexes are the broker's
    working copies."""

    working_indexes: frozenset[str]  # the active segment's .index and .timeindex
    active_log: str | None
    log_size: int  # the active .log's size as listed

    @classmethod
    def of(cls, segments: list[Segment]) -> Moment:
        if not segments:
            return cls(frozenset(), None, 0)
        active = segments[-1]
        working = frozenset(p for p in (active.index_file, active.timeindex_file) if p is not None)
        return cls(working, active.log_file, active.size)

    def being_written(self, finding: Finding) -> bool:
        """A finding about what the broker writes after the moment or in its working copies: the active
        segment's indexes, the active ``.log`` past its size as listed, or the batch torn at that size's
        edge (the walk's ``truncated`` damage: a batch whose write had not ended when the size was
        listed; K:clients/.../record/FileLogInputStream.nextBatch returns no batch for a partial one)."""
        if finding.path in self.working_indexes:
            return True
        at = finding.position
        if finding.path != self.active_log or at is None:
            return False
        return at >= self.log_size or (finding.details or {}).get("kind") == "truncated"


def active_segment_of_live_dir(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a file of the active segment (no later ``.log`` beside it) of a partition folder
    whose log dir's ``.lock`` is held: a file the running broker is writing (``dump``'s note and its
    index rule). Only asks: the lock is probed (F_OFD_GETLK), the folder listed."""
    p = Path(path)
    seg = match_segment_file(p.name)
    if seg is None:
        return False
    try:
        if lock_holder(p.parent.parent) is None:
            return False
        names = os.listdir(p.parent)
    except OSError:
        return False
    for name in names:
        other = match_segment_file(name)
        if other is None or other[1] is not SegmentFileType.LOG or other[2] is not FileState.LIVE:
            continue
        if other[0] > seg[0]:
            return False
    return True
