"""Catalog entries of what lies in a log dir: files without their segment, folders whose names
are no partition, files of unknown kinds, links and other irregular files, unreadable ones.
"""

from __future__ import annotations

from logdoctor.checks.catalog.entry import _E, _I, _W, Case, Entry

ENTRIES: tuple[Entry, ...] = (
    Entry(
        "ORPHAN_FILE",
        _W,
        "a leftover the broker deletes or renames at startup",
        "{path}: {reason}",
        "Delete it while the broker is stopped.",
        "K:storage/.../log/LogLoader.java removeTempFilesAndCollectSwapFiles, loadSegmentFiles; "
        "core/.../log/LogManager.scala (-delete, -future, -stray folders); "
        "core/.../raft/KafkaMetadataLog.scala recoverSnapshots",
        cases={
            "delete-dir": Case(
                "{path}: a partition folder scheduled for deletion (-delete): the broker deletes it at "
                "startup",
                "Nothing to do; the broker deletes it.",
            ),
            "future-dir": Case(
                "{path}: a KIP-113 move target (-future) left by an interrupted replica move between "
                "log dirs: the broker resumes the move",
                "Let the broker finish the move, or cancel it with kafka-reassign-partitions.",
            ),
            "root-tmp-file": Case(
                "{path}: left by an interrupted atomic write of a checkpoint or meta.properties (the "
                "original is intact): the broker ignores it",
                "Delete it while the broker is stopped.",
            ),
            "deleted": Case(
                "{path} was renamed .deleted for asynchronous deletion (retention, truncation or "
                "compaction) and never removed: the broker deletes it at startup",
                "Nothing to do: the broker deletes it. To free the space now, delete it while the "
                "broker is stopped.",
            ),
            "cleaned": Case(
                "{path} is partial output of the log cleaner (a crash during compaction): the broker "
                "deletes it at startup, with any .swap at or above its offset",
                "Nothing to do: the broker deletes it and compacts again.",
            ),
            "swap": Case(
                "{path} is a compacted or split segment awaiting swap-in: at startup the broker "
                "renames it into place and deletes the segment files it replaces (or deletes it when a "
                ".cleaned file has a lower offset)",
                "Let the broker complete the swap; keep a backup of the partition first if you doubt "
                "the .swap.",
            ),
            "index-without-log": Case(
                "{path} is an index file with no .log: the broker deletes it at startup ('Found an "
                "orphaned index file ... with no corresponding log file')",
                "Nothing to do, or delete it while the broker is stopped. If its .log was deleted by "
                "hand, data is gone.",
            ),
            "partial-snapshot": Case(
                "{path} is a KRaft snapshot that was being written at a crash: it is deleted at startup",
                "Nothing to do.",
            ),
            "tmp-file": Case(
                "{path} was left by an interrupted atomic write (the file it was replacing is intact): "
                "the broker ignores it and overwrites it on the next write",
                "Delete it while the broker is stopped.",
            ),
            "deleted-snapshot": Case(
                "{path} is a KRaft snapshot marked for deletion (older than the latest snapshot or the "
                "log start): the node deletes it at startup (KafkaMetadataLog.recoverSnapshots)",
                "Nothing to do: the broker deletes it. To free the space now, delete it while the "
                "broker is stopped.",
            ),
        },
    ),
    Entry(
        "PERMISSION_DENIED",
        _E,
        "a file or folder the broker's user cannot read or write",
        "{path} is not {need} by {user} ({why}){consequence}",
        "Fix ownership and mode before starting the broker: `chown {user} {path}` and "
        "`chmod u+{mode_fix} {path}` (or `chown -R` the whole log dir); or with logdoctor: {repair}.",
        "K:storage/.../log/LogLoader.java ('Could not read file'); field report 002",
    ),
    Entry(
        "DUPLICATE_PARTITION",
        _E,
        "the same partition in two log dirs of one broker",
        "{partition} is in {count} log dirs of this broker ({where}): the broker refuses to start "
        "('Duplicate log directories for {partition} are found'). This copy: log end offset "
        "{log_end_offset}, {size}",
        "Keep the copy with the higher log end offset (compare with `logdoctor scan {logdirs} --json`), "
        "move the other folder out of the log dirs, then start the broker.",
        "K:core/.../log/LogManager.scala loadLog ('Duplicate log directories for ... are found')",
    ),
    Entry(
        "INVALID_DIR_NAME",
        _E,
        "a folder in a log dir that is not a partition folder",
        "{path} is not a topic-partition folder: the broker fails to load the log dir ('... is not in "
        "the form of topic-partition')",
        "Move {path} out of the log dir (the broker treats every folder in it as a partition).",
        "K:core/.../log/LocalLog.scala parseTopicPartitionName",
    ),
    Entry(
        "UNKNOWN_FILE",
        _I,
        "a file Kafka neither writes nor reads",
        "{path}: not a file Kafka writes in a {where}; the broker ignores it",
        "Harmless to the broker; remove it to keep the log dir clean.",
        "K:storage/.../log/LogLoader.java (ignores unknown files)",
    ),
    Entry(
        "NOT_A_REGULAR_FILE",
        _E,
        "a FIFO, socket, device or folder where a log dir holds regular files",
        "{path} is a {kind}, not a regular file: {never}",
        "Stop the broker and move {path} out of the log dir; if a file Kafka wrote had this name, restore it "
        "from a replica or a backup (a repair never touches it).",
        "K:storage/.../log/LogLoader.java loadSegmentFiles, removeTempFilesAndCollectSwapFiles (File.isFile: "
        "regular files only); server-common/.../util/FileLock.java; CheckpointFile.java",
        cases={
            "kafka-name": Case(
                "{path} is a {kind}, not a regular file, under a name Kafka gives a regular file: the broker "
                "skips it where it lists regular files only (LogLoader) and fails where it opens the name "
                "(a segment, index, checkpoint or lock of this name is missing or unusable). {never}"
            ),
            "other-name": Case(
                "{path} is a {kind}, not a regular file, in a {where}: Kafka writes no such entry and the "
                "broker ignores it. {never}",
                "Remove it to keep the log dir clean (a repair never touches it).",
            ),
        },
    ),
    Entry(
        "SYMLINK_IN_LOG_DIR",
        _W,
        "a symlink in a log dir: logdoctor never follows it, so what it points to is not checked",
        "{path} is a symlink to {target}",
        "Replace the symlink with what it points to (copy it into the log dir while the broker is stopped), "
        "or check what it points to on its own (by its real path).",
        "K:core/.../log/LogManager.scala, storage/.../log/LogLoader.java (java.io.File follows symlinks)",
        cases={
            "outside": Case(
                "{path} is a symlink to {target}, outside the log dir {logdir}: the broker reads and writes "
                "through it, but logdoctor never follows a link out of the log dirs it was given, so {what} "
                "was not checked (and is never changed by logdoctor repair)"
            ),
            "inside": Case(
                "{path} is a symlink to {target}, inside the log dir: the broker follows it and sees the "
                "same {what} twice; logdoctor does not follow it (the target is checked under its own name)",
                "Replace the symlink with a copy of what it points to, or remove it if it is a leftover.",
            ),
            "dangling": Case(
                "{path} is a symlink to {target}, which does not exist: the broker skips it where it lists "
                "regular files and fails where it opens the name",
                "Remove the symlink, or restore what it pointed to while the broker is stopped.",
            ),
        },
    ),
)
