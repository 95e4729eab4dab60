"""Checks that need every partition of a log dir back: its checkpoint entries against the partition
folders (stale, missing, outside the log), and the evidence of an unclean shutdown."""

from __future__ import annotations

import os
from functools import partial
from operator import itemgetter

from logdoctor.checks import catalog
from logdoctor.checks.context import PartitionReport
from logdoctor.checks.findings import Severity
from logdoctor.checks.scan_report import LogDirReport
from logdoctor.errors import FormatError
from logdoctor.formats.checkpoint import line_positions
from logdoctor.logdir.files import read_file
from logdoctor.logdir.model import CheckpointRead, LogDir
from logdoctor.logdir.names import (
    CLEAN_SHUTDOWN_FILE,
    CLEANER_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    OFFSET_CHECKPOINT_FILES,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    DirKind,
    parse_partition_dir,
)


def entry_positions(path: str) -> list[int | None]:
    """Byte position of each entry line of a well-formed checkpoint (for findings)."""
    try:
        return line_positions(read_file(path))[2:]
    except (OSError, FormatError, UnicodeDecodeError):
        return []


class Positions:
    """:func:`entry_positions` of one checkpoint, read on the first ``at``."""

    __slots__ = ("_got", "_path")

    def __init__(self, path: str) -> None:
        self._path = path
        self._got: list[int | None] | None = None

    def at(self, i: int) -> int | None:
        """The byte position of entry ``i`` (None: not known)."""
        if self._got is None:
            self._got = entry_positions(self._path)
        return self._got[i] if i < len(self._got) else None


Live = dict[tuple[str, int], PartitionReport]
_TP = itemgetter(0, 1)  # an entry's (topic, partition)
Entries = list[tuple[str, int, int]]


def checkpoints_against_partitions(ld: LogDir, rep: LogDirReport, parts: list[PartitionReport]) -> None:
    """Each offset checkpoint's entries against the partition folders of its log dir (files the
    broker cannot use at all were reported by the root checks and are skipped here)."""
    path = str(ld.path)
    make = partial(catalog.make, logdir=path)
    add = rep.findings.append
    log = DirKind.LOG.value  # once, not an enum attribute lookup per partition (50,000)
    live: Live = {
        (p.topic, p.partition): p for p in parts if p.kind == log and p.topic != "__cluster_metadata"
    }
    # a partition folder that is a symlink is reported (SYMLINK_IN_LOG_DIR), not checked: its entries
    # are neither stale nor to be removed
    unchecked = {
        (d.topic, d.partition)
        for i in ld.irregular
        if (d := parse_partition_dir(i.path.name)) is not None and d.kind is DirKind.LOG
    }
    # the partitions with a log end offset: only their entries can be outside their log (none of 50,000 empty)
    ended: Live = {tp: p for tp, p in live.items() if p.log_end_offset is not None}
    for name in OFFSET_CHECKPOINT_FILES:
        cp: CheckpointRead = ld.checkpoint(name)
        cpath = os.path.join(path, name)
        if cp.error is not None or cp.problems:
            continue  # already reported; the broker would not use its entries
        if not cp.exists:
            if name == RECOVERY_POINT_CHECKPOINT and live:
                add(make("CHECKPOINT_MISMATCH", cpath, case="missing-file", partitions=len(live)))
            continue
        entries: Entries = cp.checkpoint.entries if cp.checkpoint is not None else []
        # read again only for a finding's position (two 50,000-entry files of a clean log dir: none)
        positions = Positions(cpath)
        listed_tps = set(map(_TP, entries))  # (no Python call for each of 50,000 entries)
        if rep.locked:
            # a running broker writes its checkpoints from time to time (log.flush.offset.checkpoint.
            # interval.ms and the like) while partitions are created, deleted and trimmed by retention: an
            # entry that lags its partition is its normal state (checks.live); one beyond its log end is not
            if ended:
                _entries_outside_the_log(rep, path, name, cpath, entries, positions, ended, lagging_ok=True)
            continue
        if not listed_tps <= live.keys() | unchecked:
            _stale_entries(rep, path, name, cpath, entries, positions, live, unchecked)
        if name in (RECOVERY_POINT_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT):
            _missing_entries(rep, path, name, cpath, listed_tps, live)
        if ended:
            _entries_outside_the_log(rep, path, name, cpath, entries, positions, ended)


def _listed(tps: list[tuple[str, int]]) -> str:
    return ", ".join(f"{t}-{p}" for t, p in tps[:10]) + (" ..." if len(tps) > 10 else "")


def _stale_entries(
    rep: LogDirReport,
    path: str,
    name: str,
    cpath: str,
    entries: Entries,
    positions: Positions,
    live: Live,
    unchecked: set[tuple[str, int]],
) -> None:
    """Entries for partitions that are not in the log dir (moved or deleted by hand)."""
    stale = [
        (i, t, p) for i, (t, p, _o) in enumerate(entries) if (t, p) not in live and (t, p) not in unchecked
    ]
    if not stale:
        return
    i0 = stale[0][0]
    rep.findings.append(
        catalog.make(
            "CHECKPOINT_MISMATCH",
            cpath,
            case="stale-entries",
            logdir=path,
            position=positions.at(i0),
            count=len(stale),
            listed=_listed([(t, p) for _i, t, p in stale]),
            details={"file": name, "absent": [f"{t}-{p}" for _i, t, p in stale]},
        )
    )


def _missing_entries(
    rep: LogDirReport, path: str, name: str, cpath: str, listed_tps: set[tuple[str, int]], live: Live
) -> None:
    """Partitions of the log dir without an entry (copied in by hand); ``listed_tps``: the entries'."""
    missing = sorted(live.keys() - listed_tps)
    if not missing:
        return
    effect = (
        "the broker uses recovery point 0 for them (after an unclean shutdown it recovers all their segments)"
        if name == RECOVERY_POINT_CHECKPOINT
        else "their high watermark restarts at the log start offset"
    )
    rep.findings.append(
        catalog.make(
            "CHECKPOINT_MISMATCH",
            cpath,
            case="missing-entries",
            logdir=path,
            count=len(missing),
            listed=_listed(missing),
            effect=effect,
            details={"file": name, "missing": [f"{t}-{p}" for t, p in missing]},
        )
    )


#: each offset checkpoint's CHECKPOINT_MISMATCH cases: of an entry beyond the log end, and below the log start
_OUTSIDE_CASES = {
    RECOVERY_POINT_CHECKPOINT: ("recovery-point-beyond-log-end", "recovery-point-below-log-start"),
    REPLICATION_OFFSET_CHECKPOINT: ("high-watermark-beyond-log-end", "high-watermark-below-log-start"),
    LOG_START_OFFSET_CHECKPOINT: ("log-start-beyond-log-end", None),
    CLEANER_OFFSET_CHECKPOINT: ("cleaner-offset-outside-log", "cleaner-offset-outside-log"),
}


def _outside_case(name: str, off: int, leo: int, lso: int | None) -> str | None:
    """Which CHECKPOINT_MISMATCH case an entry ``off`` of file ``name`` is, against the log [lso, leo]."""
    beyond, below = _OUTSIDE_CASES.get(name, (None, None))
    return beyond if off > leo else below if lso is not None and off < lso else None


def _entries_outside_the_log(
    rep: LogDirReport,
    path: str,
    name: str,
    cpath: str,
    entries: Entries,
    positions: Positions,
    live: Live,
    *,
    lagging_ok: bool = False,
) -> None:
    """Entries beyond the log end or below the log start, and what the broker does with each (``live``:
    the partitions with a log end offset; ``lagging_ok``: an entry below the log start is no finding)."""
    for i, (t, p, off) in enumerate(entries):
        part = live.get((t, p))
        if part is None or part.log_end_offset is None:
            continue
        # recovery point, high watermark and cleaner offset are raised to the LOCAL log start
        # (UnifiedLog's constructor: updateLocalLogStartOffset raises both; the cleaner works on local
        # segments); for a tiered partition the log start itself is below it (logdir.offsets)
        leo = part.log_end_offset
        lso = part.local_log_start_offset
        if lso is None:
            lso = part.log_start_offset
        case = _outside_case(name, off, leo, None if lagging_ok else lso)
        if case is None:
            continue
        rep.findings.append(
            catalog.make(
                "CHECKPOINT_MISMATCH",
                cpath,
                case=case,
                logdir=path,
                position=positions.at(i),
                offset=off,
                severity=Severity.ERROR if case == "log-start-beyond-log-end" else None,
                partition=f"{t}-{p}",
                log_end_offset=leo,
                log_start_offset=lso,
                last_missing=off - 1,
                details={
                    "file": name,
                    "topic": t,
                    "partition": p,
                    "checkpoint_offset": off,
                    "log_end_offset": leo,
                    "log_start_offset": lso,
                },
            )
        )


def unclean_shutdown(ld: LogDir, rep: LogDirReport, parts: list[PartitionReport]) -> None:
    if rep.clean_shutdown or rep.locked:  # before listing the live partitions: the usual case
        return
    log = DirKind.LOG.value
    live = [p for p in parts if p.kind == log and p.topic != "__cluster_metadata"]
    if not live:
        return
    behind = [
        p
        for p in live
        if p.recovery_point is not None
        and p.log_end_offset is not None
        and p.recovery_point < p.log_end_offset
    ]
    untrimmed = sum(p.untrimmed_inactive_indexes for p in live)
    evidence = []
    if behind:
        evidence.append(
            f"{len(behind)} partition(s) have a recovery point below their log end offset "
            f"(e.g. {behind[0].topic}-{behind[0].partition}: {behind[0].recovery_point} < "
            f"{behind[0].log_end_offset})"
        )
    if untrimmed:
        evidence.append(f"{untrimmed} index file(s) of inactive segments were never trimmed")
    text = (" and " + "; ".join(evidence)) if evidence else ""
    rep.findings.append(
        catalog.make(
            "UNCLEAN_SHUTDOWN",
            os.path.join(str(ld.path), CLEAN_SHUTDOWN_FILE),
            logdir=str(ld.path),
            evidence=text,
            details={
                "partitions_behind_recovery_point": len(behind),
                "untrimmed_inactive_indexes": untrimmed,
            },
        )
    )
