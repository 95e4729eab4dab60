"""A preallocated index: zero slots after the real entries of a ``.index`` or ``.timeindex``. One rule,
used by ``scan`` (:func:`logdoctor.checks.indexes.analyze_index`) and ``dump``
(:mod:`logdoctor.cli.dump.indexes`, its ``--verify-index`` too), so that both say the same of the same file.

The broker creates a segment's ``.index`` and ``.timeindex`` at ``segment.index.bytes`` (10 MiB, rounded down
to the entry size) and writes entries from the start (K:storage/src/main/java/org/apache/kafka/storage/
internals/log/AbstractIndex.java, the constructor); it trims a file to its entries when its segment rolls
(``LogSegment.onBecomeInactiveSegment``, ``AbstractIndex.trimToValidSize``). Until then the active segment's
indexes are that preallocated file: real entries, then zero slots. What each kind of tail is:

- :attr:`Tail.PREALLOCATED`: the active segment's index (no later ``.log`` beside it), zero past its
  entries. Judged by its entries, never corrupt. A broker reading it back does not use its bytes as they
  are: at load ``LogSegment.sanityCheck`` checks neither index (since KAFKA-7283, 2.3: only the
  ``.txnindex``, K:storage/.../log/LogSegment.java), and the active segment is recovered whenever the last
  stop was not clean (``LogLoader.recoverLog`` recovers the segment holding the recovery point and every
  later one; ``LogSegment.recover`` resets both indexes and rebuilds them from the ``.log``). Who leaves one
  on a stopped broker: a SIGKILL or a crash (every partition's active segment), and, from 4.4, a clean stop
  for the KRaft metadata log ``__cluster_metadata-0``. In 4.4 ``AbstractIndex.close`` unmaps the file
  without trimming it (up to 4.3 it called ``trimToValidSize`` first), and ``LogManager.shutdown`` trims
  the active segment of the logs it manages before closing them (``UnifiedLog.prepareActiveSegmentForClose``,
  ``LogSegment.onBecomeInactiveSegment``); the metadata log is not one of them: ``KafkaRaftLog.close``
  (K:raft/src/main/java/org/apache/kafka/raft/internals/KafkaRaftLog.java; ``kafka.raft.KafkaMetadataLog``
  in 3.x) only closes its ``UnifiedLog`` (read in the 4.3.1 and 4.4.0 jars; a cleanly stopped 4.4.0 broker
  leaves the file so, a 4.3.1 broker trims it: ``tests/brokers/test_broker_files.py``). Either way the
  metadata log is opened with recovery point 0 and ``lastShutdownClean=false`` at every start, so its
  segments are recovered and their indexes rebuilt from the ``.log`` each time. Brokers up to 2.2 checked
  every index at load, reading every slot as an entry: after an unclean shutdown they reject this file and
  rebuild it, logging "Found a corrupted index file" (field report 000's warning; ``scan``'s
  ``INDEX_PREALLOCATED_UNCLEAN``, :func:`logdoctor.checks.indexes.report_preallocated_unclean`; tested
  with real 1.0.2 and 2.2.2 brokers in tests/brokers/test_broker_era_index.py). Kafka's ``DumpLogSegments``
  lists such a file's entries and stops at the first zero slot (exit 0); only its ``--index-sanity-check``,
  which opens it the broker's way (every slot an entry, the last one a zero slot), calls the ``.timeindex``
  corrupt ("the last timestamp is 0 which is less than the first").
- :attr:`Tail.UNTRIMMED`: an inactive segment's index with zero slots: a roll should have trimmed it (a
  crash between the roll and the trim, or a tool that wrote it so); the broker reads every slot as an
  entry, the last a zero slot (for a ``.timeindex``: largest timestamp 0, see ``RETENTION_RISK``).
  ``scan``'s ``INDEX_CORRUPT``.
- :attr:`Tail.GARBAGE`: non-zero bytes after a zero slot: the entries go backwards for the broker.
"""

from __future__ import annotations

import enum
import os
from pathlib import Path

from logdoctor.formats.index import real_entry_count
from logdoctor.logdir.names import FileState, SegmentFileType, match_segment_file

#: the KRaft metadata log's partition folder (K:raft/.../raft/internals/KafkaRaftLog.java; the topic
#: ``__cluster_metadata``, partition 0)
METADATA_LOG_FOLDER = "__cluster_metadata-0"


class Tail(enum.Enum):
    """What follows the real entries of an index (:func:`classify_tail`)."""

    NONE = "none"  # every slot a real entry (or an empty file)
    PREALLOCATED = "preallocated"
    UNTRIMMED = "untrimmed"
    GARBAGE = "garbage"


def classify_tail(
    data: bytes | memoryview, entry_size: int, *, active: bool, real: int | None = None
) -> Tail:
    """The rule: what the slots after the ``real`` entries (:func:`~logdoctor.formats.index.real_entry_count`,
    computed when not given) of an index of whole or partial entries are, for the active segment's index
    (``active``) or an inactive one's."""
    n = real_entry_count(data, entry_size) if real is None else real
    whole = len(data) - len(data) % entry_size
    start = n * entry_size
    if start >= whole:
        return Tail.NONE
    zeros = data.count(0, start, whole) if isinstance(data, bytes) else bytes(data[start:whole]).count(0)
    if zeros != whole - start:
        return Tail.GARBAGE
    return Tail.PREALLOCATED if active else Tail.UNTRIMMED


def is_active_segment_file(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a file of its partition folder's active segment: no ``.log`` with a higher base
    offset beside it (``LocalLog``'s last segment). Lists the folder; False when it cannot."""
    p = Path(path)
    seg = match_segment_file(p.name)
    if seg is None or seg[2] is not FileState.LIVE:
        return False
    try:
        names = os.listdir(p.parent)
    except OSError:
        return False
    for name in names:
        other = match_segment_file(name)
        live_log = other is not None and other[1] is SegmentFileType.LOG and other[2] is FileState.LIVE
        if live_log and other[0] > seg[0]:
            return False
    return True


def what_the_broker_does(folder_name: str, entries: int, zero_slots: int) -> str:
    """A stopped broker's preallocated active-segment index (:attr:`Tail.PREALLOCATED`), said for the reader
    of a dump: what it is and what the broker does with it at its next start."""
    head = (
        f"the active segment's index, preallocated: {zero_slots} zero slots after its {entries} entries, "
        "read up to them (not corruption; DumpLogSegments lists the same entries)"
    )
    if folder_name == METADATA_LOG_FOLDER:
        return (
            f"{head}. A 4.4 broker leaves the KRaft metadata log's active segment so even at a clean stop "
            "(KafkaRaftLog.close closes its UnifiedLog without the trim LogManager.shutdown gives the other "
            "logs, and AbstractIndex.close no longer trims), and every broker rebuilds these indexes from "
            "the .log at each start (the metadata log is opened with recovery point 0 and "
            "lastShutdownClean=false: LogLoader.recoverLog, LogSegment.recover)"
        )
    return (
        f"{head}. The broker trims it when the segment rolls or at a clean stop; after a stop that was not "
        "clean it recovers the active segment and rebuilds its indexes from the .log (LogLoader.recoverLog, "
        "LogSegment.recover)"
    )


__all__ = [
    "METADATA_LOG_FOLDER",
    "Tail",
    "classify_tail",
    "is_active_segment_file",
    "what_the_broker_does",
]
