"""Catalog entries of the broker's state as the log dir is read: how it shut down, whether it runs
(its lock held) and whether a partition changed during the read.
"""

from __future__ import annotations

from logdoctor.checks.catalog.entry import _I, _W, Entry

ENTRIES: tuple[Entry, ...] = (
    Entry(
        "UNCLEAN_SHUTDOWN",
        _W,
        "the broker did not shut down cleanly: the next start recovers segments",
        "{logdir} has no .kafka_cleanshutdown marker{evidence}: at the next start the broker recovers every "
        "segment from each partition's recovery point (reads and re-validates them, rebuilds their indexes)",
        "Nothing to fix if the scan finds no corruption; expect a longer startup. Give the broker enough "
        "time to stop (systemd TimeoutStopSec, controlled.shutdown).",
        "K:core/.../log/LogManager.scala loadLogs (CleanShutdownFileHandler), LogLoader.recoverLog",
    ),
    Entry(
        "BROKER_RUNNING",
        _I,
        "a broker holds the log dir's lock: the dir is live (information, not damage)",
        "{path} is locked{holder}: a broker is running on {logdir}. Each partition was read as of one "
        "moment, when its check began (its files listed with their sizes): each .log up to its listed "
        "size, so the log end offsets and record counts reported are that moment's (the JSON gives each "
        "partition's active .log size as listed, read_as_of_bytes); what the broker does "
        "meanwhile (appends, a roll, a deletion, its preallocated active indexes, the recovery point "
        "behind the log end) is its normal state, not a finding. The commands that write to a log dir "
        "(repair, move-partition, sync-replica, restore with --apply) refuse it while the lock is held "
        "(exit 75)",
        "Nothing to fix: reads are safe next to a running broker (docs/live-broker.md). Stop the broker "
        "before repairing anything.",
        "K:server-common/.../util/FileLock.java (tryLock on .lock)",
    ),
    Entry(
        "PARTITION_CHANGED_WHILE_READ",
        _I,
        "a running broker removed segments of a partition faster than it could be read",
        "{path}: a segment listed when the partition's check began was removed by the running broker "
        "(retention or the log cleaner) before it was read, {reads} times in a row: the partition is not "
        "checked (no damage is implied)",
        "Scan it again; a broker removes a segment file.delete.delay.ms (60 s by default) after renaming it "
        ".deleted, so this happens only when segments roll and expire within seconds.",
        "K:storage/.../log/LogSegment.java changeFileSuffixes; UnifiedLog.deleteSegmentFiles",
    ),
)
