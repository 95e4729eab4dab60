"""The catalog's entries live in modules named for their subject (checks/catalog/): each code is defined
in exactly one of them, every module that holds entries is assembled into the one door, and the codes are
the ones released before the catalog was split (issue 61 item 3: codes are stable)."""

from __future__ import annotations

import collections
import importlib
import pkgutil

from logdoctor.checks import catalog

#: every code the catalog held as one module (codes never change meaning and are never dropped)
RELEASED = frozenset(
    {
        "BOOTSTRAP_CHECKPOINT_CORRUPT",
        "BROKER_RUNNING",
        "CHECKPOINT_CORRUPT",
        "CHECKPOINT_MISMATCH",
        "COMPACTION_BATCH_TOO_LARGE",
        "COMPACTION_BEHIND",
        "COMPACTION_DAMAGE",
        "COMPACTION_KEYLESS_RECORDS",
        "COMPACTION_TOMBSTONES_EXPIRED",
        "CONSUMER_OFFSET_OUT_OF_RANGE",
        "CONTROLLER_METADATA_LOST",
        "CONTROLLER_QUORUM_TOO_SMALL",
        "DIRECTORY_ID_DUPLICATE",
        "DIRECTORY_ID_INVALID",
        "DIRECTORY_ID_MISSING",
        "DUPLICATE_PARTITION",
        "INDEX_CORRUPT",
        "INDEX_GARBAGE_AFTER_ZERO_SLOT",
        "INDEX_MISSING",
        "INDEX_OFFSET_MISMATCH",
        "INDEX_OFFSET_NOT_IN_LOG",
        "INDEX_OUT_OF_ORDER",
        "INDEX_PARTIAL_ENTRY",
        "INDEX_PREALLOCATED_UNCLEAN",
        "INDEX_POSITION_BEYOND_LOG",
        "INDEX_POSITION_NEGATIVE",
        "INDEX_POSITION_NOT_BATCH_START",
        "INDEX_SANITY_CHECK_FAILED",
        "INDEX_WITHOUT_LOG",
        "INVALID_DIR_NAME",
        "INVENTORY_UNREADABLE",
        "JBOD_METADATA_VERSION",
        "KRAFT_METADATA_NOT_SCANNED",
        "LEADER_EPOCH_BEYOND_LOG_END",
        "LOG_CORRUPT",
        "LOG_CRC_MISMATCH",
        "LOG_DIRS_OF_DIFFERENT_BROKERS",
        "LOG_DIR_NEARLY_FULL",
        "LOG_INVALID_BYTES",
        "LOG_NON_CONSECUTIVE_OFFSETS",
        "LOG_OFFSET_BELOW_BASE",
        "LOG_PAST_REMOTE_SEGMENT",
        "LOG_RECORDS_UNDECODABLE",
        "METADATA_RECORD_UNREAD",
        "METADATA_SNAPSHOT_CORRUPT",
        "METADATA_SNAPSHOT_MISMATCH",
        "METADATA_SNAPSHOT_MISSING",
        "META_PROPERTIES_INVALID",
        "META_PROPERTIES_MISMATCH",
        "NOT_A_REGULAR_FILE",
        "ORPHAN_FILE",
        "PARTITION_CHANGED_WHILE_READ",
        "PARTITION_METADATA_INVALID",
        "PERMISSION_DENIED",
        "PRODUCER_SNAPSHOT_AHEAD",
        "PRODUCER_SNAPSHOT_CORRUPT",
        "QUORUM_STATE_CORRUPT",
        "QUORUM_STATE_MISMATCH",
        "REMOTE_EPOCH_LINEAGE_BROKEN",
        "REMOTE_METADATA_INVALID",
        "REMOTE_METADATA_NOT_HERE",
        "REMOTE_METADATA_RETENTION_SHORT",
        "REMOTE_OBJECTS_LEAKED",
        "REMOTE_OFFSETS_LOST",
        "REMOTE_PARTITION_DELETED_ON_DISK",
        "REMOTE_SEGMENTS_OVERLAP",
        "REMOTE_SEGMENT_BELOW_LOG_START",
        "REMOTE_SEGMENT_MISSING",
        "REMOTE_UPLOAD_STALLED",
        "REMOTE_UPLOAD_UNFINISHED",
        "REPLICA_DIVERGED",
        "REPLICA_LAG",
        "REPLICA_MISPLACED",
        "REPLICA_MISSING",
        "REPLICA_NOT_ASSIGNED",
        "RETENTION_BLOCKED",
        "RETENTION_DUE",
        "RETENTION_RISK",
        "SEGMENT_BASE_OFFSET_MISMATCH",
        "SEVERAL_CLUSTERS",
        "SHARE_GROUP_BEHIND_LOG_START",
        "STRAY_REPLICA_LEFT",
        "SYMLINK_IN_LOG_DIR",
        "TIME_INDEX_OFFSET_NOT_IN_LOG",
        "TIME_INDEX_OUT_OF_ORDER",
        "TIME_INDEX_TIMESTAMP_MISMATCH",
        "TOPIC_ID_MISMATCH",
        "TOPIC_ID_SHARED",
        "TOPIC_RECREATED",
        "TRANSACTION_HANGING",
        "TRANSACTION_STATE_MISMATCH",
        "UNCLEAN_SHUTDOWN",
        "UNKNOWN_FILE",
    }
)


def test_no_code_is_defined_in_two_subject_modules() -> None:
    where = collections.defaultdict(list)
    for subject in catalog.SUBJECTS:
        for entry in subject.ENTRIES:
            where[entry.code].append(subject.__name__)
    assert {code: mods for code, mods in where.items() if len(mods) > 1} == {}


def test_every_module_holding_entries_is_assembled() -> None:
    holding = set()
    for info in pkgutil.iter_modules(catalog.__path__):
        module = importlib.import_module(f"{catalog.__name__}.{info.name}")
        if hasattr(module, "ENTRIES"):
            holding.add(module.__name__)
    assert holding == {subject.__name__ for subject in catalog.SUBJECTS}


def test_the_codes_are_the_released_ones() -> None:
    assert set(catalog.CATALOG) == RELEASED
    assert set(catalog.codes()) == RELEASED


def test_the_repair_phrase_ends_a_clause() -> None:
    """``{repair}`` renders as "`logdoctor repair ...` prints the plan, add --apply to make it": a fix
    template may follow it with punctuation or a parenthesis, never with more words of the same clause
    (issue 77 item 5: "... add --apply to make it does the same")."""
    import re

    from logdoctor.checks.catalog import CATALOG

    templates = [(e.code, e.fix) for e in CATALOG.values()]
    templates += [
        (f"{e.code}/{name}", c.fix) for e in CATALOG.values() for name, c in e.cases.items() if c.fix
    ]
    run_on = [(code, m.group(0)) for code, t in templates for m in re.finditer(r"\{repair\} +[a-z]\w*", t)]
    assert run_on == []
