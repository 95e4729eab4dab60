"""The records a truncation removes (issue 32): how many, which offsets, which of them are intact, and
where they are saved as records people read before the truncation is applied.

Kafka's recovery cuts a segment at its first invalid batch and deletes every later segment
(K:storage/.../log/LogSegment.java recover, K:.../log/LogLoader.java recoverLog), so a single flipped
byte in a batch removes the batches after it too, though their CRCs hold. ``repair`` does what the broker
does; the bytes it cuts go to the backup dir (``tails/``, for rollback), and the records of the batches
whose CRC holds are saved first as a Parquet file of export's records schema beside the backup dir
(:func:`records_path`; written by :mod:`logdoctor.cli.repair` with :mod:`logdoctor.spark.records_file`,
pyarrow only). Here: what is removed, read from the files as they are before the plan runs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from logdoctor.errors import FormatError
from logdoctor.logdir import files
from logdoctor.logdir.names import BACKUP_DIR_INFIX, RECORDS_DIR_INFIX, parse_partition_dir
from logdoctor.repair.plan import Plan

__all__ = ["RemovedRecords", "RemovedRun", "records_path", "removed_by_plan", "removed_records"]

RECORDS_DIR_SUFFIX = ".records"


@dataclass(frozen=True, slots=True)
class RemovedRun:
    """Intact batches of one .log removed by the plan: bytes [start, end) of ``path``."""

    path: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class RemovedRecords:
    """What a truncation of one partition removes. ``records``: every record the cut bytes hold by their
    batch headers (a damaged header may miscount); ``intact``: the records of batches whose CRC holds,
    at offsets [``intact_first``, ``intact_last``] (``runs``: where they are), saved to ``destination``."""

    topic: str
    partition: int
    log_dir: str
    records: int
    first_offset: int | None
    last_offset: int | None
    intact: int
    intact_first: int | None
    intact_last: int | None
    runs: tuple[RemovedRun, ...]
    destination: str

    def describe(self) -> str:
        offsets = (
            f" at offsets [{self.first_offset}, {self.last_offset}]" if self.first_offset is not None else ""
        )
        saved = (
            f"; the {self.intact} intact record(s) (offsets [{self.intact_first}, {self.intact_last}], "
            f"batches whose CRC holds) are saved first as Parquet (export's records columns) to "
            f"{self.destination}"
            if self.intact
            else "; none of them is in a batch whose CRC holds"
        )
        return f"removes {self.records} record(s){offsets}{saved}"


def records_path(backup_dir: str, topic: str, partition: int, first: int | None, last: int | None) -> str:
    """Where a partition's removed records are saved: beside the backup dir (the apply engine creates that
    one, empty), a folder named after it (``<log dir>.logdoctor-records-<time>`` for the default backup
    dir, else ``<backup dir>.records``; never taken for a log dir)."""
    name = f"{topic}-{partition}.offsets-{first}-{last}.parquet"
    base = backup_dir.rstrip(os.sep)
    head, tail = os.path.split(base)
    if BACKUP_DIR_INFIX in tail:  # <log dir>.logdoctor-backup-<time> -> <log dir>.logdoctor-records-<time>
        return os.path.join(head, tail.replace(BACKUP_DIR_INFIX, RECORDS_DIR_INFIX), name)
    return os.path.join(base + RECORDS_DIR_SUFFIX, name)


def _walk(path: str, start: int) -> tuple[int, int | None, int | None, list[tuple[int, int, int, int, int]]]:
    """(records by the headers, first, last offsets, intact batches (position, end, count, first, last))
    of ``path`` from byte ``start``: each batch CRC-checked on its own; the walk stops where the framing
    does (a size field that is no batch)."""
    from logdoctor.formats.records import iter_batches

    buf = files.map_file(path)  # mapped, never read whole: a sparse tail of a GiB stays a hole
    pos, records = start, 0
    first = last = None
    intact: list[tuple[int, int, int, int, int]] = []
    while pos < len(buf):
        ok = True
        try:
            b = next(iter_batches(buf, source=path, start=pos, verify_crc=True), None)
        except FormatError:
            ok = False
            try:
                b = next(iter_batches(buf, source=path, start=pos, verify_crc=False), None)
            except FormatError:
                break
        if b is None or b.size <= 0:
            break
        records += b.record_count
        first = b.base_offset if first is None else first
        last = b.last_offset
        if ok:
            intact.append((b.position, b.position + b.size, b.record_count, b.base_offset, b.last_offset))
        pos = b.position + b.size
    del buf
    return records, first, last, intact


def removed_records(
    cut_log: str, valid_bytes: int, later_logs: list[str], backup_dir: str
) -> RemovedRecords | None:
    """What cutting ``cut_log`` at ``valid_bytes`` and removing ``later_logs`` removes (None: nothing)."""
    folder = os.path.dirname(cut_log)
    name = parse_partition_dir(os.path.basename(folder))
    if name is None:
        return None
    records = 0
    first = last = ifirst = ilast = None
    intact = 0
    runs: list[RemovedRun] = []
    for path, start in [(cut_log, valid_bytes), *((p, 0) for p in later_logs)]:
        try:
            n, f, lst, good = _walk(path, start)
        except OSError:
            continue
        records += n
        first = f if first is None else first
        last = lst if lst is not None else last
        for pos, end, count, bf, bl in good:
            intact += count
            ifirst = bf if ifirst is None else ifirst
            ilast = bl
            if runs and runs[-1].path == path and runs[-1].end == pos:
                runs[-1] = RemovedRun(path, runs[-1].start, end)
            else:
                runs.append(RemovedRun(path, pos, end))
    if records == 0 and not runs:
        return None
    return RemovedRecords(
        name.topic,
        name.partition,
        os.path.dirname(folder),
        records,
        first,
        last,
        intact,
        ifirst,
        ilast,
        tuple(runs),
        records_path(backup_dir, name.topic, name.partition, ifirst, ilast),
    )


def removed_by_plan(plan: Plan) -> list[RemovedRecords]:
    """The records each ``truncate-log`` action of ``plan`` removes, read now (before it runs)."""
    out: list[RemovedRecords] = []
    for a in plan.actions:
        if a.kind != "truncate-log":
            continue
        cut = next((s for s in a.steps if s.op == "truncate" and s.path == a.target), None)
        if cut is None:
            continue
        later = [
            s.path for s in a.steps if s.op != "truncate" and s.path.endswith(".log") and s.path != a.target
        ]
        removed = removed_records(a.target, int(cut.params["size_after"]), sorted(later), plan.backup_dir)
        if removed is not None:
            out.append(removed)
    return out
