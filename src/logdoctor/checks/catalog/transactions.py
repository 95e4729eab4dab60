"""Catalog entries of producer state and transactions: producer snapshots, hanging
transactions and the __transaction_state log.
"""

from __future__ import annotations

from logdoctor.checks.catalog.entry import _E, _W, Case, Entry

#: the abort of a hanging transaction on a running cluster (KIP-664, tools/.../TransactionsCommand.java)
ABORT_COMMAND = (
    "kafka-transactions.sh --bootstrap-server HOST:PORT abort --topic {topic} --partition {partition} "
    "--start-offset {first_offset}"
)

ENTRIES: tuple[Entry, ...] = (
    Entry(
        "PRODUCER_SNAPSHOT_AHEAD",
        _W,
        "a producer state snapshot beyond the log end offset",
        "{path} snapshots producer state at offset {offset}, beyond the log end offset {log_end_offset}: "
        "the broker deletes it at startup and rebuilds producer state from older snapshots and the log",
        "The broker deletes it at startup and rebuilds producer state from the log (slow for large "
        "partitions); nothing to do unless segments were removed by hand (to remove it offline: {repair}).",
        "K:storage/.../log/ProducerStateManager.java truncateAndReload / removeStraySnapshots",
    ),
    Entry(
        "PRODUCER_SNAPSHOT_CORRUPT",
        _W,
        "a producer state snapshot the broker cannot read",
        "{path} cannot be read ({error}): the broker deletes it at startup",
        "The broker deletes it and rebuilds producer state from an older snapshot and the log (slow for "
        "large partitions); nothing is lost unless idempotence state is needed before the rebuild ends.",
        "K:storage/.../log/ProducerStateManager.java loadFromSnapshot ('Failed to load producer snapshot')",
    ),
    Entry(
        "TRANSACTION_HANGING",
        _E,
        "a transaction still open after the transaction timeout: read_committed consumers see nothing "
        "beyond its first offset",
        "producer {producer_id} (epoch {producer_epoch}) has had a transaction open since offset "
        "{first_offset} for {open_for} (its last write {last_timestamp_iso}, the partition's newest record "
        "{newest_timestamp_iso}; timeout {timeout_ms} ms from {timeout_source}, plus the broker's 5-minute "
        "late-transaction buffer): the last stable offset is {last_stable_offset}, so {records_above} "
        "records ({offsets_above} offsets) up to the log end offset {log_end_offset} are invisible to "
        "read_committed consumers",
        f"A command for the running cluster (not for this host's files): `{ABORT_COMMAND}` (KIP-664; "
        "`kafka-transactions.sh --bootstrap-server HOST:PORT "
        "find-hanging --broker-id ID` lists them). The abort writes the ABORT marker; read_committed "
        "consumers then move on.",
        "K:storage/.../log/ProducerStateManager.java (loadFromSnapshot, hasLateTransaction, "
        "LATE_TRANSACTION_BUFFER_MS, firstUnstableOffset), storage/.../log/UnifiedLog.java "
        "rebuildProducerState; tools/.../TransactionsCommand.java (KIP-664)",
    ),
    Entry(
        "TRANSACTION_STATE_MISMATCH",
        _W,
        "the transaction coordinator's state (__transaction_state) and a partition's open transactions "
        "disagree",
        "{message}",
        "A command for the running cluster: kafka-transactions.sh --bootstrap-server HOST:PORT describe "
        "--transactional-id {transactional_id} shows what the coordinator does with it (it completes "
        "PrepareCommit and PrepareAbort by writing the markers).",
        "K:transaction-coordinator/.../TransactionState.java, core/.../coordinator/transaction/"
        "TransactionStateManager.scala loadTransactionMetadata, TransactionMarkerChannelManager.scala; "
        "storage/.../log/ProducerStateManager.java",
        cases={
            "open-in-log": Case(
                "{topic}-{partition} holds a transaction of producer {producer_id} (epoch {producer_epoch}) "
                "open since offset {first_offset}, but the transaction coordinator has none open for it "
                "({said}): no marker will come, and read_committed consumers stay at offset {first_offset} "
                "until it is aborted",
                "A command for the running cluster (not for this host's files): kafka-transactions.sh "
                "--bootstrap-server HOST:PORT abort --topic {topic} --partition {partition} --start-offset "
                "{first_offset} (KIP-664).",
            ),
            "closed-in-log": Case(
                "the transaction coordinator has transactional id {transactional_id} (producer "
                "{producer_id}, epoch {producer_epoch}) in state {state} ({source}), listing "
                "{topic}-{partition}, but that partition's producer state shows the transaction's marker "
                "already written there"
            ),
        },
    ),
)
