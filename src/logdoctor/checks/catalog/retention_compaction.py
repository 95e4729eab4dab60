"""Catalog entries of retention and compaction: what time and size retention delete or cannot
delete, and what the log cleaner left behind or cannot clean.
"""

from __future__ import annotations

from logdoctor.checks.catalog.entry import _E, _I, _W, Case, Entry

_RISK_MESSAGE = (
    "{cause}: the broker would take largestTimestamp={broker_ts} ({broker_ts_iso}) for segment "
    "{segment}, but its records go up to {true_ts} ({true_ts_iso}); with retention.ms={retention_ms} "
    "(topic config used: {config}) it would delete the segment {when}{also}"
)

ENTRIES: tuple[Entry, ...] = (
    Entry(
        "RETENTION_RISK",
        _E,
        "time retention would use a wrong (too old) largest timestamp and delete the segment early",
        _RISK_MESSAGE,
        "Before starting the broker, rebuild the time index: {repair}.{permission}",
        "K:storage/.../log/LogSegment.java largestTimestamp/maxTimestampSoFar, UnifiedLog "
        "deleteRetentionMsBreachedSegments (from the oldest segment forward: deletableSegments stops at the "
        "first segment it may not delete, so a segment goes only once every older one has; a WARNING when "
        "older segments hold it, with the date); KAFKA-10207; field report 002 (largestTime=0)",
        cases={
            # the broker's user cannot read a time index whose entries are sound: the permission alone
            "permission-only": Case(
                _RISK_MESSAGE,
                "Before starting the broker, let the broker's user {user} read and write the time index: "
                "`chown {user} {path}`, `chmod u+rw {path}`. Nothing to rebuild: its entries are sound (its "
                "last entry is the records' largest timestamp).",
            ),
        },
    ),
    Entry(
        "RETENTION_BLOCKED",
        _W,
        "records with timestamps in the future keep a segment from time retention",
        "segment {segment} has a largest timestamp {broker_ts} ({broker_ts_iso}), {ahead} in the future: "
        "time retention will not delete it (nor any later segment) until then",
        "Find the producer that writes future CreateTime timestamps, or set "
        "message.timestamp.after.max.ms / use LogAppendTime for the topic.",
        "K:UnifiedLog deletableSegments (stops at the first segment not deletable); KAFKA-18929",
    ),
    Entry(
        "RETENTION_DUE",
        _I,
        "segments the broker's next retention check deletes",
        "{tp}: the broker's next retention check (log.retention.check.interval.ms after it starts, 5 minutes "
        "by default) deletes {segments} segment(s), {size} holding offsets {first} to {last} "
        "({offsets} offsets): {why}. {moves}{also} (topic config used: {config})",
        "Nothing to do if this is the retention you meant: `logdoctor retention {logdir}` lists each "
        "segment and why it goes. To keep these records, copy the partition folder elsewhere before the "
        "broker starts (and raise the topic's retention.ms / retention.bytes, or correct the partition's "
        "entry in log-start-offset-checkpoint if it was moved by mistake).",
        "K:storage/.../log/UnifiedLog.java deleteOldSegments (deleteLogStartOffsetBreachedSegments, "
        "deleteRetentionSizeBreachedSegments, deleteRetentionMsBreachedSegments), LogManager "
        "log.retention.check.interval.ms. A note: deleting what retention says is Kafka working as "
        "configured, and records below the log start offset are already unreadable (OffsetOutOfRange); "
        "the report counts its offsets among the records at risk",
    ),
    Entry(
        "COMPACTION_BEHIND",
        _W,
        "a compacted partition the log cleaner should have cleaned long ago: its uncompacted bytes keep "
        "growing until the disk fills",
        "{topic}-{partition} has been cleanable for {behind_for} of its own time (since "
        "{cleanable_since_iso}; its newest record {newest_iso}): {why}, yet the cleaner has not moved its "
        "checkpoint past offset "
        "{first_dirty_offset}; {cleanable_size} from there to offset {first_uncleanable_offset} are "
        "uncompacted ({clean_size} are clean){growth}; min.cleanable.dirty.ratio = {config}",
        "On the broker: the log cleaner's log (log-cleaner.log) says why it stopped (`Error due to`, `has "
        "died`, `Marking partition ... uncleanable`); the metrics kafka.log:type=LogCleanerManager,"
        "name=time-since-last-run-ms and uncleanable-partitions-count show it. A partition marked "
        "uncleanable stays so until the broker restarts; a dead cleaner thread restarts with the broker or "
        "when log.cleaner.threads is changed dynamically (kafka-configs.sh --bootstrap-server HOST:PORT "
        "--entity-type brokers --entity-default --alter --add-config log.cleaner.threads=N: LogCleaner."
        "reconfigure restarts the threads). `logdoctor scan {logdir} --deep` names what in the log stops "
        "the cleaner (COMPACTION_DAMAGE, COMPACTION_BATCH_TOO_LARGE).",
        "K:storage/.../internals/log/LogCleanerManager.java (grabFilthiestCompactedLog, cleanableOffsets, "
        "calculateCleanableBytes, maxCompactionDelay), LogToClean.java (cleanableRatio), LogCleaner.java "
        "(CleanerThread, reconfigure)",
    ),
    Entry(
        "COMPACTION_DAMAGE",
        _E,
        "damage in a segment the log cleaner reads: a cleaning round that meets it throws and the "
        "partition is compacted no more",
        "{path} holds {what} at {where} ({damage_code}): the log cleaner reads this segment whenever it "
        "cleans {topic}-{partition} (every segment below the first uncleanable offset "
        "{first_uncleanable_offset}), and there its round throws (a batch that runs past the segment's "
        "end: CorruptRecordException 'Log segment may be corrupt, batch size N > M bytes left in "
        "segment'; a header or records that do not parse: CorruptRecordException or "
        "InvalidRecordException from the batch iterator). The broker then marks the partition "
        "uncleanable ('Marking its partition ... as uncleanable'; Kafka 2.1 and later, KIP-346; before "
        "2.1 the cleaner thread dies and no compacted partition of the broker is cleaned) and compacts "
        "it no more until it restarts, while its uncompacted bytes ({cleanable_size} now) grow. At "
        "startup after an unclean shutdown the broker's recovery truncates damage above the recovery "
        "point first; damage below it stays",
        "Stop the broker and remove the damage: {repair_damage}. A partition marked uncleanable is cleaned "
        "again after the broker restarts.",
        "K:storage/.../internals/log/Cleaner.java (doClean, cleanInto, growBuffersOrFail, "
        "buildOffsetMapForSegment), LogCleaner.java (CleanerThread.tryCleanFilthiestLog, "
        "cleanFilthiestLog), LogCleanerManager.java (markPartitionUncleanable)",
        cases={
            "crc": Case(
                "{path} holds {what} at {where} ({damage_code}), in a segment the log cleaner reads "
                "whenever it cleans {topic}-{partition} (every segment below the first uncleanable offset "
                "{first_uncleanable_offset}): the cleaner checks no CRC, so it does not stop there; it "
                "copies the batch as it is when it keeps all its records, and when it drops some it writes "
                "the rest into a new batch with a new CRC over the damaged bytes: the damage then passes "
                "every CRC check (consumers', DumpLogSegments', the broker's recovery)",
                "Before the broker cleans this log again (stop it first): {repair_damage}.",
            ),
        },
    ),
    Entry(
        "COMPACTION_BATCH_TOO_LARGE",
        _W,
        "a batch in the segments the log cleaner reads larger than the largest buffer of a cleaner before "
        "Kafka 2.0",
        "{path}: the batch at offset {offset} (position {position}) is {size} bytes, larger than both the "
        "topic's max.message.bytes {topic_max} and the broker's message.max.bytes {broker_max}; the log "
        "cleaner reads it whenever it cleans {topic}-{partition} (every segment below the first uncleanable "
        "offset {first_uncleanable_offset}){more}. Its read and write buffers start at "
        "log.cleaner.io.buffer.size / log.cleaner.threads / 2 and double up to the larger of those two "
        "({limit} bytes); Kafka 2.0 and later (KAFKA-6834) then grow them to the batch's own size for that "
        "round (twice the batch's bytes of heap per cleaner thread) and go on; Kafka before 2.0 throws "
        "IllegalStateException ('This log contains a message larger than maximum allowable size of "
        "{limit}.') and the cleaner thread dies: no compacted partition of the broker is cleaned, and it "
        "dies at this batch again after every restart",
        "On Kafka 2.0 or later nothing needs doing. On an older broker raise the topic's max.message.bytes "
        "to at least the batch's size: kafka-configs.sh --zookeeper ZK_HOST:2181 --entity-type topics "
        "--entity-name {topic} --alter --add-config max.message.bytes={size_plain} (then restart the broker: "
        "its dead cleaner thread starts again with it).",
        "K:storage/.../internals/log/Cleaner.java (growBuffersOrFail, growBuffers, restoreBuffers), "
        "LogCleaner.java (CleanerThread: ioBufferSize / numThreads / 2, maxMessageSize); KAFKA-6834",
    ),
    Entry(
        "COMPACTION_KEYLESS_RECORDS",
        _W,
        "records without a key in a compacted topic: the next cleaning deletes them",
        "{topic}-{partition} holds {count} records without a key below its first uncleanable offset "
        "{first_uncleanable_offset} (the first at offset {offset} in {path}): the log cleaner drops every "
        "record without a key from the segments it cleans (it counts them as invalid: 'Found N invalid "
        "messages during compaction'), so its next cleaning of this log deletes them{when}. The broker "
        "rejects such records for a compacted topic at produce time (InvalidRecordException 'Compacted "
        "topic cannot accept message without key'): these were written while the topic was not compacted",
        "To keep them, save them before the broker cleans this log: `logdoctor export {folder} --out {out} "
        "--starting-offsets {offset} --ending-offsets {first_uncleanable_offset}` (every record of those "
        "offsets, the keyless ones among them, into {out} under the directory you run it from).",
        "K:storage/.../internals/log/Cleaner.java (shouldRetainRecord: no key, stats.invalidMessage; "
        "buildOffsetMapForSegment), LogCleaner.java (recordStats), LogValidator.java (validateKey)",
    ),
    Entry(
        "COMPACTION_TOMBSTONES_EXPIRED",
        _I,
        "tombstones in the cleaned part of a compacted log past their delete horizon, waiting for the next "
        "cleaning",
        "{topic}-{partition} holds {count} tombstones below its first dirty offset {first_dirty_offset} "
        "(the first at offset {offset} in {path}) that the log cleaner may now remove: {since} "
        "(delete.retention.ms = {config}). It removes them only when it next cleans this log, which it "
        "does when the cleanable ratio ({ratio} now) exceeds min.cleanable.dirty.ratio ({min_ratio}) or a "
        "dirty segment passes max.compaction.lag.ms; until then consumers reading from the start still "
        "see these deletes",
        "Nothing is lost. To have them removed sooner, let the cleaner take this log sooner once new records "
        "come: kafka-configs.sh --bootstrap-server HOST:PORT --entity-type topics --entity-name {topic} "
        "--alter --add-config max.compaction.lag.ms=MS.",
        "K:storage/.../internals/log/Cleaner.java (shouldRetainRecord: the batch's deleteHorizonMs, v2; "
        "doClean's legacyDeleteHorizonMs, v0/v1), clients/.../record/MemoryRecords.java filterTo "
        "(sets the delete horizon, KIP-534)",
    ),
)
