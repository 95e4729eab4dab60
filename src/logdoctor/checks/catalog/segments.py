"""Catalog entries of segments and their indexes: a .log's batches and the offset, time and
transaction indexes beside it (what LogLoader and the indexes' sanity checks reject or rebuild).
"""

from __future__ import annotations

from logdoctor.checks.catalog.entry import _E, _W, Case, Entry

ENTRIES: tuple[Entry, ...] = (
    Entry(
        "INDEX_CORRUPT",
        _E,
        "an offset/time/transaction index a broker's sanity check or lookup would reject",
        "{problem}. {verdict}",
        "Stop the broker, then {repair} (it moves {path} to a backup and rebuilds the segment's indexes "
        "from the .log); `logdoctor dump {segment} --verify-index` lists every bad entry. Or let the "
        "broker rebuild it: delete the segment's .index and .timeindex and restart (recovery rebuilds "
        "them from the .log).",
        "K:core/.../log/OffsetIndex.scala, TimeIndex.scala (0.10-2.x), storage/.../OffsetIndex.java, "
        "TimeIndex.java, TransactionIndex.java sanityCheck; Log.loadSegmentFiles / LogLoader",
    ),
    Entry(
        "INDEX_PREALLOCATED_UNCLEAN",
        _W,
        "the active segment's preallocated index after an unclean shutdown, which brokers up to 2.2 reject "
        "at load ('Found a corrupted index file')",
        "{path} is the active segment's {index} as the unclean shutdown left it, preallocated: {zeros} zero "
        "slots follow its {real} entries, and a broker that checks indexes when it loads a log reads every "
        "slot as an entry, the last one a zero slot. Kafka {eras} reject it at load and log {words} "
        "(Log.loadSegmentFiles), then delete the segment's indexes and rebuild them from the .log: no "
        "record is lost and the broker starts. Since 2.3 (KAFKA-7283) no index is checked at load, and "
        "every version recovers the active segment after an unclean shutdown (LogLoader.recoverLog), "
        "rebuilding this file from the .log",
        "Nothing to repair: the broker's next start rebuilds it from the .log (the warning above is that "
        "rebuild, not a failure), and deleting it changes nothing. To stop leaving it behind, give the "
        "broker time to stop cleanly (systemd TimeoutStopSec, controlled.shutdown): a clean stop trims the "
        "active segment's indexes.",
        "K:core/.../log/Log.scala loadSegmentFiles (1.0: index.sanityCheck, then timeIndex.sanityCheck; "
        "1.1-2.2: LogSegment.sanityCheck; 2.3+, KAFKA-7283: neither), OffsetIndex.scala and TimeIndex.scala "
        "sanityCheck, AbstractIndex (preallocated to segment.index.bytes, trimmed at roll and clean stop)",
    ),
    Entry(
        "INDEX_MISSING",
        _W,
        "a .log without its .index (or .timeindex)",
        "{path} has no {missing}: {effect}",
        "The indexes are rebuilt from the .log, which loses none of its valid records (damage in the .log "
        "is LOG_CORRUPT, said apart: the default scan reads such a segment whole, as the broker's start "
        "does); to rebuild them before the broker starts: {repair}.",
        "K:storage/.../log/LogLoader.java loadSegmentFiles, LogSegment.sanityCheck",
    ),
    Entry(
        "LOG_CORRUPT",
        _E,
        "a .log with bad bytes: CRC mismatch, truncated or zero-filled tail, offsets out of order",
        "{problem}{consequence}",
        "Stop the broker; if other replicas are in sync let this one re-replicate (delete the partition "
        "folder); otherwise {repair}: it truncates {path} to the {valid_bytes} valid bytes before the "
        "damage{dropped} (a backup keeps every byte it removes).",
        "K:storage/.../log/LogSegment.java recover, LogLoader.recoverLog; clients/.../record/"
        "DefaultRecordBatch.java ensureValid, FileLogInputStream; for __cluster_metadata-0: "
        "core/.../raft/KafkaMetadataLog.scala (truncateToLatestSnapshot), raft/.../KafkaRaftClient.java "
        "(Fetch, FetchSnapshot), raft/.../ReplicatedLog.java",
        cases={
            "metadata-log": Case(
                "{damage}. This is the node's KRaft metadata log, not a partition like the others "
                "({voters}): {loss}",
                "Stop the node. Another node holds this log (voters {others}): truncate it at offset {cut} "
                "({repair}; a backup keeps the rest) and, when it starts, the node fetches the records "
                "after the cut, or the latest snapshot, from the quorum's leader; do it while a majority "
                "of the voters runs. Never delete the folder while it is the only copy, and never use "
                "sync-replica on the metadata log.",
            ),
            "metadata-log-last-voter": Case(
                "{damage}. This is the node's KRaft metadata log, not a partition like the others, and no "
                "other node is known to hold it ({voters}): {loss}",
                "Stop the node and copy {folder} somewhere safe first: no other voter can give the records "
                "back. Never delete the folder (the cluster's topics, configs and ACLs would be gone) "
                "and never use sync-replica on it. A truncation loses the records above; repair refuses "
                "it without explicit consent: `{consent}` prints that plan, add --apply to make it.",
            ),
        },
    ),
    Entry(
        "LOG_RECORDS_UNDECODABLE",
        _E,
        "a batch whose CRC matches but whose records do not decode",
        "{problem}: the broker keeps such a batch (its recovery checks only CRCs) and serves it, and every "
        "consumer that fetches it fails (InvalidRecordException: 'Found invalid record structure', "
        "'Incorrect declared batch size')",
        "`logdoctor dump {path} --deep` names the first record that does not decode. The export skips "
        "such a batch alone and names it (the records around it are exported). The batch cannot be "
        "repaired in place: a replica that holds the same offsets in batches that decode (scan it with "
        "--deep) can give them back (stop this broker and let it re-replicate: delete the partition "
        "folder).",
        "K:storage/.../log/LogSegment.java recover (batch.ensureValid: the CRC only); clients/.../record/"
        "DefaultRecordBatch.java iterator, uncompressedIterator, compressedIterator; DefaultRecord.java "
        "readFrom (InvalidRecordException)",
    ),
    Entry(
        "SEGMENT_BASE_OFFSET_MISMATCH",
        _E,
        "a segment whose records do not fit its base offset",
        "the first batch of {path} starts at offset {offset}, below the segment's base offset {base} "
        "(from its file name)",
        "Stop the broker and move the segment aside; the broker recovers by deleting its data "
        "(LogSegment.recover fails ensureOffsetInRange with InvalidOffsetException; LogLoader deletes the "
        "segment's data: 'Found invalid offset during recovery. Deleting the corrupt segment').",
        "K:storage/.../log/LogSegment.java ensureOffsetInRange, LocalLog.splitOverflowedSegment",
        cases={
            "offset-overflow": Case(
                "{path} holds offset {offset}, more than 2^31-1 above its base offset {base}: index "
                "entries cannot represent it (offset overflow)",
                "Stop the broker and move the segment aside; the broker recovers by splitting it "
                "(recovery throws LogSegmentOffsetOverflowException and splits the segment: "
                "LocalLog.splitOverflowedSegment, KAFKA-7045).",
            ),
        },
    ),
)
