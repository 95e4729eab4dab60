"""``logdoctor dump FILE...``: every file of a log dir, for people (aligned text) and scripts (JSON Lines).

The anchor is Kafka's DumpLogSegments (K:core/src/main/scala/kafka/tools/DumpLogSegments.scala):
the kind of a file is decided by its name; ``.log`` and KRaft ``.checkpoint`` files are walked batch
by batch (``--deep`` for every record, ``--print-data`` for keys, values and headers), indexes are
listed and, with ``--verify-index``, checked against the log, producer snapshots and transaction
indexes listed. Beyond it: every other file of a log dir (checkpoints, leader-epoch-checkpoint,
partition.metadata, meta.properties, quorum-state, .kafka_cleanshutdown, .lock), seeking with the
indexes (``--offsets``, ``--timestamps``), decoders picked by folder name, typed control records,
JSON Lines, and one-line errors naming the file and position with the other files still dumped.

Exit codes (fsck-like): 0 clean, 1 warnings, 2 data errors (bad bytes, index mismatches),
64 usage, 66 missing input or a directory, 74 I/O error, 77 permission denied.
"""

from __future__ import annotations

import datetime as dt
import enum
import errno
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

from logdoctor.checks.seek import (
    DEFAULT_WINDOW,
    LogReader,
    SeekPlan,
    iter_batches_from,
    plan_offset_seek,
    plan_timestamp_seek,
)
from logdoctor.checks.verify_index import (
    Finding,
    FindingCode,
    Severity,
    scan_log_layout,
    verify_offset_index,
    verify_time_index,
)
from logdoctor.cli.main import app
from logdoctor.cli.render import JsonLinesWriter, to_jsonable
from logdoctor.errors import FormatError, TruncatedError
from logdoctor.formats.index import (
    OFFSET_ENTRY_SIZE,
    TIME_ENTRY_SIZE,
    TXN_ENTRY_SIZE,
    IndexKind,
    SanityEra,
    offset_index_array,
    real_entry_count,
    sanity_check,
    time_index_array,
)
from logdoctor.formats.record_types import Batch, Record
from logdoctor.logdir import names
from logdoctor.logdir.files import read_file

EX_OK = 0
EX_WARNINGS = 1
EX_DATA = 2
EX_USAGE = 64
EX_NOINPUT = 66
EX_SOFTWARE = 70
EX_IOERR = 74
EX_NOPERM = 77


# --- file kinds ---------------------------------------------------------------------------------


class FileKind(enum.StrEnum):
    LOG = "log"
    KRAFT_SNAPSHOT = "kraft-snapshot"
    OFFSET_INDEX = "offset-index"
    TIME_INDEX = "time-index"
    TXN_INDEX = "txn-index"
    PRODUCER_SNAPSHOT = "producer-snapshot"
    OFFSET_CHECKPOINT = "offset-checkpoint"
    LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
    PARTITION_METADATA = "partition-metadata"
    META_PROPERTIES = "meta-properties"
    QUORUM_STATE = "quorum-state"
    CLEAN_SHUTDOWN = "clean-shutdown"
    LOCK = "lock"


_SUFFIX_KINDS = {
    ".log": FileKind.LOG,
    ".index": FileKind.OFFSET_INDEX,
    ".timeindex": FileKind.TIME_INDEX,
    ".txnindex": FileKind.TXN_INDEX,
    ".snapshot": FileKind.PRODUCER_SNAPSHOT,
    ".checkpoint": FileKind.KRAFT_SNAPSHOT,
}
_FIXED_KINDS = {
    **dict.fromkeys(names.OFFSET_CHECKPOINT_FILES, FileKind.OFFSET_CHECKPOINT),
    names.LEADER_EPOCH_CHECKPOINT_FILE: FileKind.LEADER_EPOCH_CHECKPOINT,
    names.PARTITION_METADATA_FILE: FileKind.PARTITION_METADATA,
    names.META_PROPERTIES_FILE: FileKind.META_PROPERTIES,
    names.QUORUM_STATE_FILE: FileKind.QUORUM_STATE,
    names.CLEAN_SHUTDOWN_FILE: FileKind.CLEAN_SHUTDOWN,
    names.LOCK_FILE: FileKind.LOCK,
    names.BOOTSTRAP_CHECKPOINT_FILE: FileKind.KRAFT_SNAPSHOT,
}
_STATE_SUFFIXES = (".deleted", ".cleaned", ".swap", ".part")


@dataclass(frozen=True, slots=True)
class FileInfo:
    kind: FileKind
    base_offset: int | None  # segment files: from the 20 digits; KRaft snapshots: end offset
    epoch: int | None = None  # KRaft snapshots


def classify(name: str) -> FileInfo | None:
    """The kind of a log-dir file from its name alone (None when unknown), like DumpLogSegments."""
    if name.endswith(names.TMP_SUFFIX) and name[: -len(names.TMP_SUFFIX)] in _FIXED_KINDS:
        name = name[: -len(names.TMP_SUFFIX)]  # an interrupted atomic write: same format
    if name in _FIXED_KINDS:
        return FileInfo(_FIXED_KINDS[name], None)
    snap = names.parse_kraft_snapshot(name)
    if snap is not None:
        return FileInfo(FileKind.KRAFT_SNAPSHOT, snap[0].offset, snap[0].epoch)
    seg = names.parse_segment_file(name)
    if seg is not None:
        return FileInfo(_SUFFIX_KINDS[seg.file_type.value], seg.base_offset)
    stem = name
    for state in _STATE_SUFFIXES:
        if stem.endswith(state):
            stem = stem[: -len(state)]
            break
    dot = stem.rfind(".")
    kind = _SUFFIX_KINDS.get(stem[dot:]) if dot >= 0 else None
    if kind is None:
        return None
    digits = stem[:dot].split("-", 1)[0]
    return FileInfo(kind, int(digits) if digits.isdigit() else None)


# --- options ------------------------------------------------------------------------------------


class DecoderChoice(enum.StrEnum):
    AUTO = "auto"
    NONE = "none"
    CONSUMER_OFFSETS = "consumer-offsets"
    TRANSACTIONS = "transactions"
    CLUSTER_METADATA = "cluster-metadata"


@dataclass(frozen=True, slots=True)
class Range:
    first: int | None
    last: int | None

    def contains(self, value: int) -> bool:
        return (self.first is None or value >= self.first) and (self.last is None or value <= self.last)


@dataclass(slots=True)
class DumpOptions:
    deep: bool = False
    print_data: bool = False
    max_bytes: int | None = None
    offsets: Range | None = None
    timestamps: Range | None = None
    decoder: DecoderChoice = DecoderChoice.AUTO
    verify_index: bool = False
    verify_crc: bool = True


class UsageProblem(Exception):
    pass


def _parse_time(text: str) -> int:
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageProblem(f"not a timestamp (epoch ms or ISO-8601): {text!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return int(moment.timestamp() * 1000)


def parse_range(text: str, what: str, parse: Callable[[str], int] = int) -> Range:
    """``A:B``, ``A:``, ``:B`` or ``A`` (just A) into an inclusive range."""
    try:
        if ":" not in text and what == "offsets":
            v = parse(text)
            return Range(v, v)
        sep = text.rfind(":") if what == "offsets" else _range_separator(text)
        if sep < 0:
            v = parse(text)
            return Range(v, None)
        a, b = text[:sep].strip(), text[sep + 1 :].strip()
        r = Range(parse(a) if a else None, parse(b) if b else None)
    except ValueError:
        raise UsageProblem(f"--{what}: expected A:B, A: or :B, got {text!r}") from None
    if r.first is not None and r.last is not None and r.first > r.last:
        raise UsageProblem(f"--{what}: the range {text!r} is empty (start above end)")
    if what == "offsets" and r.first is not None and r.first < 0:
        raise UsageProblem(f"--offsets: negative offset in {text!r}")
    return r


def _range_separator(text: str) -> int:
    """The ``:`` separating two timestamps (ISO-8601 times contain colons of their own)."""
    if text.startswith(":"):
        return 0
    if text.endswith(":"):
        return len(text) - 1
    for i, ch in enumerate(text):
        if ch == ":":
            left = text[:i]
            if left.lstrip("-").isdigit() or (("T" in left or " " in left) and left.count(":") >= 2):
                return i
            if "T" not in left and " " not in left and len(left) == 10:  # a bare date
                return i
    return -1


# --- errors -------------------------------------------------------------------------------------


class DumpFailure(Exception):
    """A file that cannot be dumped (further): one line for stderr and an exit code."""

    def __init__(self, line: str, code: int, position: int | None = None) -> None:
        super().__init__(line)
        self.line = line
        self.code = code
        self.position = position


def _os_failure(path: Path, e: OSError) -> DumpFailure:
    if isinstance(e, PermissionError) or e.errno in (errno.EACCES, errno.EPERM):
        return DumpFailure(f"{path}: permission denied", EX_NOPERM)
    if isinstance(e, IsADirectoryError) or e.errno == errno.EISDIR:
        return DumpFailure(f"{path}: is a directory, not a file (give the files to dump)", EX_NOINPUT)
    if isinstance(e, FileNotFoundError) or e.errno == errno.ENOENT:
        return DumpFailure(f"{path}: no such file", EX_NOINPUT)
    return DumpFailure(f"{path}: {e.strerror or e}", EX_IOERR)


def _format_failure(path: Path, e: FormatError) -> DumpFailure:
    if e.source is None:
        e.with_source(str(path))
    return DumpFailure(str(e), EX_DATA, e.position)


# --- record decoding ----------------------------------------------------------------------------


RecordDecoder = Callable[[Record], dict[str, Any]]


def _topic_of(path: Path) -> str | None:
    if path.name == names.BOOTSTRAP_CHECKPOINT_FILE:
        return names.METADATA_TOPIC
    folder = path.parent.name or path.resolve().parent.name
    parent = names.parse_partition_dir(folder)
    return parent.topic if parent is not None else None


def pick_decoder(choice: DecoderChoice, path: Path) -> tuple[str | None, RecordDecoder | None]:
    """(name, decoder) for the records of ``path``: ``auto`` goes by the partition folder's topic."""
    from logdoctor.formats import internal

    if choice is DecoderChoice.NONE:
        return None, None
    if choice is DecoderChoice.AUTO:
        topic = _topic_of(path)
        name = {
            "__consumer_offsets": "consumer-offsets",
            "__transaction_state": "transactions",
            names.METADATA_TOPIC: "cluster-metadata",
        }.get(topic or "")
        if name is None:
            return None, None
    else:
        name = choice.value
    fn = internal.decoder_by_name(name)
    if fn is None:
        return None, None
    source = str(path)

    def decode(record: Record) -> dict[str, Any]:
        return fn(record.key, record.value, source=source)

    return name, decode


def _decode_control(record: Record, source: str) -> dict[str, Any]:
    from logdoctor.formats.control import parse_control_record

    parsed = parse_control_record(record.key, record.value, source=source)
    out: dict[str, Any] = {
        "type": "control",
        "control_type": parsed.control_type.name,
        "type_id": parsed.type_id,
        "key_version": parsed.key_version,
    }
    if parsed.value is not None:
        out["value"] = to_jsonable(parsed.value)
    return out


# --- per-kind dumpers: each yields plain dicts (the JSON objects); the renderers show them ---------


Event = dict[str, Any]


@dataclass(slots=True)
class FileContext:
    path: Path
    info: FileInfo
    opts: DumpOptions
    findings: list[Finding] = field(default_factory=list)
    failure: DumpFailure | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def file(self) -> str:
        return str(self.path)


def _open_reader(path: Path) -> LogReader:
    return LogReader.open(path)


def _sibling(path: Path, suffix: str) -> Path:
    stem = path.name.split(".", 1)[0]
    return path.with_name(stem + suffix)


def _read_optional(path: Path) -> bytes | None:
    try:
        return read_file(path)
    except OSError:
        return None


def _batch_event(ctx: FileContext, b: Batch, verify_crc: bool) -> Event:
    return {
        "type": "batch",
        "file": ctx.file,
        "position": b.position,
        "size": b.size,
        "base_offset": b.base_offset,
        "last_offset": b.last_offset,
        "record_count": b.record_count,
        "magic": b.magic,
        "compression": b.compression.label,
        "crc": b.stored_crc,
        "crc_valid": b.crc_valid() if verify_crc else None,
        "timestamp_type": b.timestamp_type.label,
        "max_timestamp": b.max_timestamp,
        "first_timestamp": getattr(b, "first_timestamp", -1),
        "producer_id": b.producer_id,
        "producer_epoch": b.producer_epoch,
        "base_sequence": b.base_sequence,
        "last_sequence": getattr(b, "last_sequence", -1),
        "partition_leader_epoch": b.partition_leader_epoch,
        "is_transactional": bool(b.is_transactional),
        "is_control": bool(b.is_control),
        "delete_horizon_ms": getattr(b, "delete_horizon_ms", None),
    }


def _record_event(
    ctx: FileContext, b: Batch, r: Record, decoder: RecordDecoder | None, decoder_name: str | None
) -> Event:
    ev: Event = {
        "type": "record",
        "file": ctx.file,
        "batch_position": b.position,
        "offset": r.offset,
        "timestamp": r.timestamp,
        "timestamp_type": r.timestamp_type.label,
        "key_size": -1 if r.key is None else len(r.key),
        "value_size": -1 if r.value is None else len(r.value),
        "key": r.key,
        "value": r.value,
        "headers": [{"key": h.key, "value": h.value} for h in r.headers],
        "sequence": r.sequence,
    }
    try:
        if b.is_control:
            ev["decoded"] = _decode_control(r, ctx.file)
        elif decoder is not None:
            ev["decoder"] = decoder_name
            ev["decoded"] = decoder(r)
    except FormatError as e:
        ev["decode_error"] = f"{type(e).__name__}: {e}"
    return ev


def _log_plan(ctx: FileContext, reader: LogReader) -> SeekPlan:
    opts, info = ctx.opts, ctx.info
    base = info.base_offset if info.kind is FileKind.LOG and info.base_offset is not None else None
    if base is None or (opts.offsets is None and opts.timestamps is None):
        return SeekPlan(0, "start")
    index = _read_optional(_sibling(ctx.path, ".index"))
    if opts.offsets is not None and opts.offsets.first is not None:
        plan = plan_offset_seek(reader, index, base, opts.offsets.first, source=ctx.file)
    elif opts.timestamps is not None and opts.timestamps.first is not None:
        tindex = _read_optional(_sibling(ctx.path, ".timeindex"))
        plan = plan_timestamp_seek(reader, index, tindex, base, opts.timestamps.first, source=ctx.file)
    else:
        return SeekPlan(0, "start")
    if plan.fallback:
        ctx.warnings.append(f"{ctx.file}: {plan.fallback}; reading from the start of the segment")
    return plan


def dump_log(ctx: FileContext) -> Iterator[Event]:
    """A ``.log`` segment or a KRaft ``.checkpoint`` snapshot: batches, records, findings."""
    opts = ctx.opts
    reader = _open_reader(ctx.path)
    header: Event = {"type": "file", "file": ctx.file, "kind": ctx.info.kind.value, "size": reader.size}
    if ctx.info.kind is FileKind.KRAFT_SNAPSHOT:
        header["snapshot_end_offset"] = ctx.info.base_offset
        header["snapshot_epoch"] = ctx.info.epoch
        header["bootstrap"] = ctx.path.name == names.BOOTSTRAP_CHECKPOINT_FILE
    else:
        header["base_offset"] = ctx.info.base_offset
    decoder_name, decoder = pick_decoder(opts.decoder, ctx.path)
    header["decoder"] = decoder_name
    yield header

    plan = _log_plan(ctx, reader)
    seeking = plan.position > 0 or opts.offsets is not None or opts.timestamps is not None
    end = reader.size if opts.max_bytes is None else min(reader.size, plan.position + opts.max_bytes)
    limited = end < reader.size
    deep = opts.deep or opts.print_data
    off_r, ts_r = opts.offsets, opts.timestamps
    stats = {"batches": 0, "records": 0, "first_offset": None, "last_offset": None}
    last_record_offset: int | None = None
    valid_end = plan.position
    error: FormatError | None = None
    gaps: list[Finding] = []
    crc_bad: list[Finding] = []
    started = ts_r is None or ts_r.first is None
    walk = iter_batches_from(reader, plan.position, end=end, window=DEFAULT_WINDOW if seeking else None)
    try:
        for b in walk:
            valid_end = b.position + b.size
            if off_r is not None:
                if off_r.first is not None and b.last_offset < off_r.first:
                    continue
                if off_r.last is not None and b.magic >= 2 and b.base_offset > off_r.last:
                    break
            if not started:
                if b.max_timestamp < ts_r.first:  # type: ignore[union-attr]
                    continue
                started = True
            ev = _batch_event(ctx, b, opts.verify_crc)
            yield ev
            stats["batches"] += 1
            if stats["first_offset"] is None:
                stats["first_offset"] = b.base_offset if b.magic >= 2 else None
            stats["last_offset"] = b.last_offset
            if ev["crc_valid"] is False:
                crc_bad.append(
                    Finding(
                        FindingCode.LOG_CRC_MISMATCH,
                        Severity.ERROR,
                        ctx.file,
                        f"batch at position {b.position} ({b.base_offset}..{b.last_offset}): stored CRC "
                        f"{b.stored_crc:#010x}, computed {b.compute_crc():#010x}",
                        log={
                            "position": b.position,
                            "base_offset": b.base_offset,
                            "last_offset": b.last_offset,
                        },
                    )
                )
            if deep:
                try:
                    for r in b.records():
                        if stats["first_offset"] is None:
                            stats["first_offset"] = r.offset
                        if last_record_offset is not None and r.offset != last_record_offset + 1:
                            gaps.append(_gap(ctx, last_record_offset, r.offset))
                        last_record_offset = r.offset
                        if off_r is not None and not off_r.contains(r.offset):
                            continue
                        if ts_r is not None and not ts_r.contains(r.timestamp):
                            continue
                        stats["records"] += 1
                        yield _record_event(ctx, b, r, decoder, decoder_name)
                except FormatError as e:
                    if ctx.failure is None:
                        ctx.failure = _format_failure(ctx.path, e)
            else:
                stats["records"] += b.record_count
                if b.magic >= 2:
                    if last_record_offset is not None and b.base_offset != last_record_offset + 1:
                        gaps.append(_gap(ctx, last_record_offset, b.base_offset))
                    last_record_offset = b.last_offset
            if off_r is not None and off_r.last is not None and b.last_offset >= off_r.last:
                break
            if ts_r is not None and ts_r.last is not None and b.max_timestamp > ts_r.last:
                break
    except FormatError as e:
        if not (limited and isinstance(e, TruncatedError)):
            error = e
    ctx.findings.extend(crc_bad)
    ctx.findings.extend(gaps)
    invalid = 0
    if error is not None:
        invalid = reader.size - valid_end
        ctx.findings.append(
            Finding(
                FindingCode.LOG_INVALID_BYTES,
                Severity.ERROR,
                ctx.file,
                f"Found {invalid} invalid bytes at the end of {ctx.path.name} (from position {valid_end}): "
                f"{error.kind}: expected {error.expected}"
                + (f", found {error.found}" if error.found else ""),
                log={"position": valid_end, "invalid_bytes": invalid, "size": reader.size},
            )
        )
        if ctx.failure is None:
            ctx.failure = _format_failure(ctx.path, error)
            if valid_end == 0 and plan.position == 0:
                ctx.failure.line += " (no batch at all: is this a Kafka log segment?)"
    yield from (f.to_dict() for f in ctx.findings)
    bytes_read = reader.bytes_read  # before the verification below reads the log again
    if opts.verify_index and ctx.info.kind is FileKind.LOG and ctx.info.base_offset is not None:
        yield from _verify_siblings(ctx, reader)
    yield {
        "type": "summary",
        "file": ctx.file,
        "kind": ctx.info.kind.value,
        "batches": stats["batches"],
        "records": stats["records"],
        "first_offset": stats["first_offset"],
        "last_offset": stats["last_offset"],
        "start_position": plan.position,
        "seek": plan.via,
        "valid_bytes": valid_end - plan.position,
        "invalid_bytes": invalid,
        "size": reader.size,
        "bytes_read": bytes_read,
        "findings": len(ctx.findings),
    }


def _gap(ctx: FileContext, prev: int, nxt: int) -> Finding:
    severity = Severity.ERROR if nxt <= prev else Severity.INFO
    what = "goes back" if nxt <= prev else "skips"
    return Finding(
        FindingCode.LOG_NON_CONSECUTIVE_OFFSETS,
        severity,
        ctx.file,
        f"{prev} is followed by {nxt} (the offset {what}"
        + ("; normal after compaction or a transaction abort cleanup)" if nxt > prev else ")"),
        log={"offset": prev, "next_offset": nxt},
    )


def _verify_siblings(ctx: FileContext, reader: LogReader) -> Iterator[Event]:
    base = ctx.info.base_offset or 0
    layout = scan_log_layout(reader)
    for suffix, fn in ((".index", verify_offset_index), (".timeindex", verify_time_index)):
        p = _sibling(ctx.path, suffix)
        data = _read_optional(p)
        if data is None:
            continue
        for f in fn(data, base, layout, file=str(p)):
            ctx.findings.append(f)
            yield f.to_dict()


def _index_checks(ctx: FileContext, data: bytes, kind: IndexKind, entry_size: int) -> None:
    """Checks that need no log: whole entries, era sanity (reported as failures: the file is bad)."""
    if len(data) % entry_size:
        ctx.failure = DumpFailure(
            f"{ctx.file}@{len(data) - len(data) % entry_size}: truncated: expected whole {entry_size}-byte "
            f"entries, found {len(data) % entry_size} trailing bytes (file length {len(data)})",
            EX_DATA,
            len(data) - len(data) % entry_size,
        )
    verdict = sanity_check(kind, data, ctx.info.base_offset or 0, SanityEra.KAFKA_2_0, source=ctx.file)
    if not verdict.passed and ctx.failure is None:
        ctx.failure = DumpFailure(f"{ctx.file}: corrupt index: {verdict.message}", EX_DATA)
    if ctx.failure is not None:
        return
    # Entries must grow (OffsetIndex.append / TimeIndex.maybeAppend refuse anything else): a file
    # of another kind named like an index fails here at once.
    n = real_entry_count(data, entry_size)
    if kind is IndexKind.OFFSET:
        arr = offset_index_array(data, strict=False)[:n]
        keys = [arr["relative_offset"], arr["position"]]
    else:
        arr = time_index_array(data, strict=False)[:n]
        keys = [arr["timestamp"], arr["relative_offset"]]
    for col, strict in zip(keys, (True, kind is IndexKind.OFFSET), strict=True):
        if col.size < 2:
            continue
        diffs = col[1:].astype("int64") - col[:-1].astype("int64")
        bad = (diffs <= 0) if strict else (diffs < 0)
        if bad.any():
            i = int(bad.argmax()) + 1
            ctx.failure = DumpFailure(
                f"{ctx.file}@{i * entry_size}: corrupt: expected index entries in increasing order, "
                f"found slot {i} "
                f"going back (use --verify-index for every finding)",
                EX_DATA,
                i * entry_size,
            )
            return


def _layout_for(ctx: FileContext) -> Any:
    log_path = _sibling(ctx.path, ".log")
    try:
        reader = LogReader.open(log_path)
    except OSError:
        ctx.findings.append(
            Finding(
                FindingCode.INDEX_WITHOUT_LOG,
                Severity.WARNING,
                ctx.file,
                f"cannot verify: no readable log segment {log_path.name} next to the index "
                "(the broker deletes such orphan indexes at startup)",
            )
        )
        return None
    return scan_log_layout(reader)


def dump_offset_index(ctx: FileContext) -> Iterator[Event]:
    data = read_file(ctx.path)
    base = ctx.info.base_offset or 0
    n = real_entry_count(data, OFFSET_ENTRY_SIZE)
    yield {
        "type": "file",
        "file": ctx.file,
        "kind": ctx.info.kind.value,
        "size": len(data),
        "base_offset": base,
    }
    annotations: dict[int, dict[str, Any]] = {}
    by_slot: dict[int, list[Finding]] = {}
    if ctx.opts.verify_index:
        layout = _layout_for(ctx)
        if layout is not None:
            ctx.findings.extend(
                verify_offset_index(data, base, layout, file=ctx.file, annotations=annotations)
            )
    else:
        _index_checks(ctx, data, IndexKind.OFFSET, OFFSET_ENTRY_SIZE)
    for f in ctx.findings:
        if f.slot is not None:
            by_slot.setdefault(f.slot, []).append(f)
    arr = offset_index_array(data, strict=False)[:n]
    rel = arr["relative_offset"].tolist()
    pos = arr["position"].tolist()
    off_r = ctx.opts.offsets
    shown = 0
    for i in range(n):
        offset = base + rel[i]
        if off_r is not None and not off_r.contains(offset):
            continue
        ev: Event = {
            "type": "index_entry",
            "file": ctx.file,
            "index": "offset",
            "slot": i,
            "offset": offset,
            "position": pos[i],
        }
        if ctx.opts.verify_index:
            ev["status"] = ",".join(f.code.value for f in by_slot.get(i, [])) or (
                "append-chunk" if i in annotations else "ok"
            )
            if i in annotations:
                ev.update(annotations[i])
        shown += 1
        yield ev
    yield from (f.to_dict() for f in ctx.findings)
    yield {
        "type": "summary",
        "file": ctx.file,
        "kind": ctx.info.kind.value,
        "entries": n,
        "shown": shown,
        "zero_slots": len(data) // OFFSET_ENTRY_SIZE - n,
        "findings": len(ctx.findings),
    }


def dump_time_index(ctx: FileContext) -> Iterator[Event]:
    data = read_file(ctx.path)
    base = ctx.info.base_offset or 0
    n = real_entry_count(data, TIME_ENTRY_SIZE)
    yield {
        "type": "file",
        "file": ctx.file,
        "kind": ctx.info.kind.value,
        "size": len(data),
        "base_offset": base,
    }
    if ctx.opts.verify_index:
        layout = _layout_for(ctx)
        if layout is not None:
            ctx.findings.extend(verify_time_index(data, base, layout, file=ctx.file))
    else:
        _index_checks(ctx, data, IndexKind.TIME, TIME_ENTRY_SIZE)
    by_slot: dict[int, list[Finding]] = {}
    for f in ctx.findings:
        if f.slot is not None:
            by_slot.setdefault(f.slot, []).append(f)
    arr = time_index_array(data, strict=False)[:n]
    ts = arr["timestamp"].tolist()
    rel = arr["relative_offset"].tolist()
    off_r, ts_r = ctx.opts.offsets, ctx.opts.timestamps
    shown = 0
    for i in range(n):
        offset = base + rel[i]
        if off_r is not None and not off_r.contains(offset):
            continue
        if ts_r is not None and not ts_r.contains(ts[i]):
            continue
        ev: Event = {
            "type": "index_entry",
            "file": ctx.file,
            "index": "time",
            "slot": i,
            "timestamp": ts[i],
            "offset": offset,
        }
        if ctx.opts.verify_index:
            ev["status"] = ",".join(f.code.value for f in by_slot.get(i, [])) or "ok"
        shown += 1
        yield ev
    yield from (f.to_dict() for f in ctx.findings)
    yield {
        "type": "summary",
        "file": ctx.file,
        "kind": ctx.info.kind.value,
        "entries": n,
        "shown": shown,
        "zero_slots": len(data) // TIME_ENTRY_SIZE - n,
        "findings": len(ctx.findings),
    }


def dump_txn_index(ctx: FileContext) -> Iterator[Event]:
    from logdoctor.formats.index import parse_txn_index

    data = read_file(ctx.path)
    yield {
        "type": "file",
        "file": ctx.file,
        "kind": ctx.info.kind.value,
        "size": len(data),
        "base_offset": ctx.info.base_offset,
    }
    entries = parse_txn_index(data[: len(data) - len(data) % TXN_ENTRY_SIZE], source=ctx.file)
    for i, e in enumerate(entries):
        yield {
            "type": "aborted_txn",
            "file": ctx.file,
            "slot": i,
            "version": e.version,
            "producer_id": e.producer_id,
            "first_offset": e.first_offset,
            "last_offset": e.last_offset,
            "last_stable_offset": e.last_stable_offset,
        }
    yield {"type": "summary", "file": ctx.file, "kind": ctx.info.kind.value, "entries": len(entries)}
    if len(data) % TXN_ENTRY_SIZE:
        parse_txn_index(data, source=ctx.file)  # raises the TruncatedError naming the position


def dump_producer_snapshot(ctx: FileContext) -> Iterator[Event]:
    from logdoctor.formats.producer_snapshot import parse_producer_snapshot

    data = read_file(ctx.path)
    snap = parse_producer_snapshot(data, source=ctx.file)
    yield {
        "type": "file",
        "file": ctx.file,
        "kind": ctx.info.kind.value,
        "size": len(data),
        "snapshot_offset": ctx.info.base_offset,
        "version": snap.version,
        "crc": snap.crc,
        "entries": len(snap.entries),
    }
    for e in snap.entries:
        ev: Event = {"type": "producer_state", "file": ctx.file}
        ev.update(to_jsonable(e))
        ev["first_sequence"] = e.first_sequence
        yield ev
    yield {
        "type": "summary",
        "file": ctx.file,
        "kind": ctx.info.kind.value,
        "entries": len(snap.entries),
        "trailing_bytes": len(snap.trailing),
    }


def _checkpoint_problems(ctx: FileContext, problems: list[Any]) -> None:
    if problems:
        p = problems[0]
        where = f"{ctx.file}@{p.position}" if p.position is not None else ctx.file
        line = f" (line {p.line})" if p.line is not None else ""
        ctx.failure = DumpFailure(f"{where}: format: {p.message}{line}", EX_DATA, p.position)


def dump_offset_checkpoint(ctx: FileContext) -> Iterator[Event]:
    from logdoctor.formats.checkpoint import scan_offset_checkpoint

    data = read_file(ctx.path)
    scan = scan_offset_checkpoint(data, source=ctx.file)
    cp = scan.checkpoint
    yield {
        "type": "file",
        "file": ctx.file,
        "kind": ctx.info.kind.value,
        "size": len(data),
        "checkpoint": ctx.path.name.removesuffix(names.TMP_SUFFIX),
        "version": cp.version,
        "count": cp.count if cp.count is not None else len(cp.entries),
        "empty": len(data) == 0,
    }
    for topic, partition, offset in cp.entries:  # type: ignore[misc]
        yield {
            "type": "checkpoint_entry",
            "file": ctx.file,
            "topic": topic,
            "partition": partition,
            "offset": offset,
        }
    yield {
        "type": "summary",
        "file": ctx.file,
        "kind": ctx.info.kind.value,
        "entries": len(cp.entries),
        "problems": len(scan.problems),
    }
    _checkpoint_problems(ctx, scan.problems)


def dump_leader_epoch_checkpoint(ctx: FileContext) -> Iterator[Event]:
    from logdoctor.formats.checkpoint import scan_leader_epoch_checkpoint

    data = read_file(ctx.path)
    scan = scan_leader_epoch_checkpoint(data, source=ctx.file)
    cp = scan.checkpoint
    yield {
        "type": "file",
        "file": ctx.file,
        "kind": ctx.info.kind.value,
        "size": len(data),
        "version": cp.version,
        "count": cp.count if cp.count is not None else len(cp.entries),
        "empty": len(data) == 0,
    }
    for epoch, start_offset in cp.entries:  # type: ignore[misc]
        yield {"type": "leader_epoch_entry", "file": ctx.file, "epoch": epoch, "start_offset": start_offset}
    yield {
        "type": "summary",
        "file": ctx.file,
        "kind": ctx.info.kind.value,
        "entries": len(cp.entries),
        "problems": len(scan.problems),
    }
    _checkpoint_problems(ctx, scan.problems)


def dump_partition_metadata(ctx: FileContext) -> Iterator[Event]:
    from logdoctor.formats.partition_metadata import parse_partition_metadata

    data = read_file(ctx.path)
    meta = parse_partition_metadata(data, source=ctx.file)
    yield {
        "type": "partition_metadata",
        "file": ctx.file,
        "version": meta.version,
        "topic_id": meta.topic_id,
        "topic_uuid": str(meta.topic_uuid),
        "trailing_bytes": len(meta.trailing),
    }


def dump_meta_properties(ctx: FileContext) -> Iterator[Event]:
    from logdoctor.formats.properties import parse_meta_properties

    data = read_file(ctx.path)
    meta = parse_meta_properties(data, source=ctx.file)
    props = meta.properties
    yield {
        "type": "meta_properties",
        "file": ctx.file,
        "version": meta.version,
        "mode": "kraft" if meta.version == 1 else "zookeeper",
        "node_id": meta.node_id,
        "cluster_id": meta.cluster_id,
        "directory_id": meta.directory_id,
        "properties": {k: props.get(k) for k in props.keys()} if props is not None else {},  # noqa: SIM118
    }


def dump_quorum_state(ctx: FileContext) -> Iterator[Event]:
    from logdoctor.formats.quorum_state import parse_quorum_state

    data = read_file(ctx.path)
    state = parse_quorum_state(data, source=ctx.file)
    ev: Event = {"type": "quorum_state", "file": ctx.file}
    ev.update(to_jsonable(state))
    ev.pop("trailing", None)
    ev["trailing_bytes"] = len(state.trailing)
    yield ev


def dump_clean_shutdown(ctx: FileContext) -> Iterator[Event]:
    from logdoctor.formats.cleanshutdown import parse_clean_shutdown

    data = read_file(ctx.path)
    marker = parse_clean_shutdown(data, source=ctx.file)
    ev: Event = {"type": "clean_shutdown", "file": ctx.file}
    ev.update(to_jsonable(marker))
    yield ev


def dump_lock(ctx: FileContext) -> Iterator[Event]:
    from logdoctor.logdir.lock import is_locked

    size = ctx.path.stat().st_size
    try:
        locked: bool | None = bool(is_locked(ctx.path.parent))
    except OSError:
        locked = None
    yield {"type": "lock", "file": ctx.file, "size": size, "locked": locked}


DUMPERS: dict[FileKind, Callable[[FileContext], Iterator[Event]]] = {
    FileKind.LOG: dump_log,
    FileKind.KRAFT_SNAPSHOT: dump_log,
    FileKind.OFFSET_INDEX: dump_offset_index,
    FileKind.TIME_INDEX: dump_time_index,
    FileKind.TXN_INDEX: dump_txn_index,
    FileKind.PRODUCER_SNAPSHOT: dump_producer_snapshot,
    FileKind.OFFSET_CHECKPOINT: dump_offset_checkpoint,
    FileKind.LEADER_EPOCH_CHECKPOINT: dump_leader_epoch_checkpoint,
    FileKind.PARTITION_METADATA: dump_partition_metadata,
    FileKind.META_PROPERTIES: dump_meta_properties,
    FileKind.QUORUM_STATE: dump_quorum_state,
    FileKind.CLEAN_SHUTDOWN: dump_clean_shutdown,
    FileKind.LOCK: dump_lock,
}


# --- driving ------------------------------------------------------------------------------------


class Sink:
    """Where events go: JSON Lines (:class:`JsonSink`) or aligned text (:class:`TextSink`)."""

    def event(self, ev: Event) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def error(self, path: Path, failure: DumpFailure) -> None:
        print(failure.line, file=sys.stderr, flush=True)

    def warning(self, line: str) -> None:
        print(f"warning: {line}", file=sys.stderr, flush=True)

    def end_file(self, ctx: FileContext) -> None:
        pass

    def close(self) -> None:
        pass


class JsonSink(Sink):
    def __init__(self) -> None:
        self.out = JsonLinesWriter(sys.stdout)

    def event(self, ev: Event) -> None:
        self.out.write(ev)

    def error(self, path: Path, failure: DumpFailure) -> None:
        super().error(path, failure)
        self.out.write(
            {
                "type": "error",
                "file": str(path),
                "position": failure.position,
                "exit_code": failure.code,
                "message": failure.line,
            }
        )

    def close(self) -> None:
        sys.stdout.flush()


def _iso(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "-"
    try:
        return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    except (OverflowError, OSError, ValueError):
        return str(ms)


_TS_SHORT = {"CreateTime": "create", "LogAppendTime": "append", "NoTimestampType": "-"}
_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "dim"}
_MAX_INFO_LINES = 10


class TextSink(Sink):
    """Aligned text for a terminal: a header and a summary line per file, one row per batch/entry."""

    def __init__(self, opts: DumpOptions) -> None:
        from logdoctor.cli.render import make_console

        self.opts = opts
        self.console = make_console()
        self.err = make_console(stderr=True)
        self._reset()

    def _reset(self) -> None:
        self.table: Any = None
        self.rows: list[list[Any]] = []
        self.headers: list[str] = []
        self.title: str | None = None
        self.findings: list[Event] = []
        self.summary: Event | None = None

    def _print(self, text: str, style: str | None = None) -> None:
        from rich.text import Text

        self.console.print(Text(text, style=style or ""))

    def _file_header(self, ev: Event) -> None:
        from logdoctor.cli.render import Column, StreamTable

        kind = ev.get("kind")
        extra = [f"{ev['size']:,} bytes"] if "size" in ev else []
        if ev.get("base_offset") is not None and kind != FileKind.KRAFT_SNAPSHOT.value:
            extra.insert(0, f"base offset {ev['base_offset']}")
        if kind == FileKind.KRAFT_SNAPSHOT.value:
            extra.insert(
                0,
                "KRaft bootstrap snapshot"
                if ev.get("bootstrap")
                else f"snapshot end offset {ev.get('snapshot_end_offset')}, epoch {ev.get('snapshot_epoch')}",
            )
        if ev.get("decoder"):
            extra.append(f"decoder {ev['decoder']}")
        self._print(f"Dumping {ev['file']}  ({kind}; {', '.join(extra)})", "bold")
        w_off = max(6, len(str(ev.get("base_offset") or ev.get("snapshot_end_offset") or 0)) + 2)
        w_pos = max(8, len(str(ev.get("size", 0))))
        if kind in (FileKind.LOG.value, FileKind.KRAFT_SNAPSHOT.value):
            self.table = StreamTable(
                self.console,
                [
                    Column("position", w_pos),
                    Column("base_offset", max(11, w_off)),
                    Column("last_offset", max(11, w_off)),
                    Column("count", 5),
                    Column("magic", 5),
                    Column("codec", 6, right=False),
                    Column("crc", 4, right=False),
                    Column("ts", 6, right=False),
                    Column("max_timestamp", 24, right=False),
                    Column("producer", 12),
                    Column("epoch", 5),
                    Column("sequence", 13),
                    Column("leader", 6),
                    Column("flags", 9, right=False),
                ],
                indent="  ",
            )
        elif kind == FileKind.OFFSET_INDEX.value:
            self.table = StreamTable(
                self.console,
                [
                    Column("slot", 6),
                    Column("offset", max(8, w_off)),
                    Column("position", 10),
                ],
                indent="  ",
            )
        elif kind == FileKind.TIME_INDEX.value:
            self.table = StreamTable(
                self.console,
                [
                    Column("slot", 6),
                    Column("timestamp", 14),
                    Column("time", 24, right=False),
                    Column("offset", max(8, w_off)),
                ],
                indent="  ",
            )
        elif kind == FileKind.TXN_INDEX.value:
            self.title, self.headers = (
                None,
                ["producer_id", "first_offset", "last_offset", "last_stable_offset"],
            )
        elif kind == FileKind.PRODUCER_SNAPSHOT.value:
            self.headers = [
                "producer_id",
                "epoch",
                "first_seq",
                "last_seq",
                "last_offset",
                "offset_delta",
                "timestamp",
                "coordinator_epoch",
                "txn_first_offset",
            ]
            self._print(f"  version {ev.get('version')}, crc {ev.get('crc')}, {ev.get('entries')} producers")
        elif kind == FileKind.OFFSET_CHECKPOINT.value:
            self.headers = ["topic", "partition", "offset"]
            self._print(
                f"  version {ev.get('version')}, {ev.get('count')} entries"
                + (" (empty file: no entries)" if ev.get("empty") else "")
            )
        elif kind == FileKind.LEADER_EPOCH_CHECKPOINT.value:
            self.headers = ["epoch", "start_offset"]
            self._print(
                f"  version {ev.get('version')}, {ev.get('count')} entries"
                + (" (empty file: no entries)" if ev.get("empty") else "")
            )

    def _batch(self, ev: Event) -> None:
        flags = "+".join(
            f for f, on in (("txn", ev["is_transactional"]), ("control", ev["is_control"])) if on
        )
        crc = "-" if ev["crc_valid"] is None else ("ok" if ev["crc_valid"] else "BAD")
        seq = "-" if ev["base_sequence"] < 0 else f"{ev['base_sequence']}..{ev['last_sequence']}"
        self.table.row(
            [
                ev["position"],
                ev["base_offset"],
                ev["last_offset"],
                ev["record_count"],
                ev["magic"],
                ev["compression"],
                crc,
                _TS_SHORT.get(ev["timestamp_type"], ev["timestamp_type"]),
                _iso(ev["max_timestamp"]),
                ev["producer_id"],
                ev["producer_epoch"],
                seq,
                ev["partition_leader_epoch"],
                flags or "-",
            ],
            style="red" if ev["crc_valid"] is False else None,
        )

    def _record(self, ev: Event) -> None:
        from logdoctor.cli.render import text_preview

        parts = [
            f"    | offset {ev['offset']}",
            f"{ev['timestamp_type']} {_iso(ev['timestamp'])}",
            f"key {ev['key_size']} B",
            f"value {ev['value_size']} B",
        ]
        if ev["sequence"] >= 0:
            parts.append(f"seq {ev['sequence']}")
        if ev["headers"]:
            parts.append("headers [" + ", ".join(h["key"] for h in ev["headers"]) + "]")
        decoded = ev.get("decoded")
        if decoded is not None and decoded.get("type") == "control":
            v = decoded.get("value") or {}
            detail = " ".join(f"{k}={v[k]}" for k in v if k not in ("tagged_fields", "unknown_tagged_fields"))
            parts.append(f"control {decoded['control_type']}" + (f" {detail}" if detail else ""))
        if self.opts.print_data:
            import json

            if decoded is not None and decoded.get("type") != "control":
                parts.append("decoded " + json.dumps(to_jsonable(decoded), separators=(",", ":")))
            else:
                parts.append(f"key {text_preview(ev['key'])}")
                parts.append(f"value {text_preview(ev['value'])}")
            for h in ev["headers"]:
                parts.append(f"header {h['key']}={text_preview(h['value'])}")
        if ev.get("decode_error"):
            parts.append(f"decode error: {ev['decode_error']}")
        self._print("  ".join(parts), "red" if ev.get("decode_error") else None)

    def event(self, ev: Event) -> None:
        t = ev["type"]
        if t == "file":
            self._reset()
            self._file_header(ev)
        elif t == "batch":
            self._batch(ev)
        elif t == "record":
            self._record(ev)
        elif t == "index_entry":
            status = ev.get("status")
            tail = "" if status in (None, "ok") else status
            if ev["index"] == "offset":
                self.table.row(
                    [ev["slot"], ev["offset"], ev["position"]],
                    tail=tail,
                    style="red" if tail and tail != "append-chunk" else None,
                )
            else:
                self.table.row(
                    [ev["slot"], ev["timestamp"], _iso(ev["timestamp"]), ev["offset"]],
                    tail=tail,
                    style="red" if tail else None,
                )
        elif t == "aborted_txn":
            self.rows.append(
                [ev["producer_id"], ev["first_offset"], ev["last_offset"], ev["last_stable_offset"]]
            )
        elif t == "producer_state":
            self.rows.append(
                [
                    ev["producer_id"],
                    ev["producer_epoch"],
                    ev["first_sequence"],
                    ev["last_sequence"],
                    ev["last_offset"],
                    ev["offset_delta"],
                    _iso(ev["timestamp"]),
                    ev["coordinator_epoch"],
                    ev["current_txn_first_offset"],
                ]
            )
        elif t == "checkpoint_entry":
            self.rows.append([ev["topic"], ev["partition"], ev["offset"]])
        elif t == "leader_epoch_entry":
            self.rows.append([ev["epoch"], ev["start_offset"]])
        elif t == "finding":
            self.findings.append(ev)
        elif t == "summary":
            self.summary = ev
        else:  # single-object kinds: partition_metadata, meta_properties, quorum_state, clean_shutdown, lock
            from logdoctor.cli.render import print_fields

            self._print(f"Dumping {ev.get('file')}  ({t.replace('_', ' ')})", "bold")
            fields = {k: v for k, v in ev.items() if k not in ("type", "file", "properties")}
            fields.update({f"[{k}]": v for k, v in (ev.get("properties") or {}).items()})
            print_fields(self.console, fields, indent="  ")

    def _summary_line(self, s: Event) -> str:
        kind = s.get("kind")
        if kind in (FileKind.LOG.value, FileKind.KRAFT_SNAPSHOT.value):
            offs = "" if s["last_offset"] is None else f", offsets {s['first_offset']}..{s['last_offset']}"
            text = (
                f"{s['batches']} batches, {s['records']} records{offs}, {s['valid_bytes']:,} valid bytes"
                f", {s['invalid_bytes']:,} invalid bytes"
            )
            if s.get("seek") != "start" or s.get("start_position"):
                text += f"; seek via {s['seek']} to position {s['start_position']}"
            text += f"; read {s['bytes_read']:,} of {s['size']:,} bytes"
        elif "zero_slots" in s:
            text = f"{s['entries']} entries" + (
                f" ({s['shown']} shown)" if s["shown"] != s["entries"] else ""
            )
            if s["zero_slots"]:
                text += f", {s['zero_slots']} zero slots after them (preallocated, not entries)"
        else:
            text = f"{s.get('entries', 0)} entries"
        n = len(self.findings)
        return f"  summary: {text}; {n} finding{'s' if n != 1 else ''}"

    def end_file(self, ctx: FileContext) -> None:
        from logdoctor.cli.render import print_table

        if (self.rows or self.headers) and self.rows:
            print_table(
                self.console,
                self.title,
                self.headers,
                self.rows,
                right=[not isinstance(c, str) for c in self.rows[0]],
            )
        infos = 0
        for f in self.findings:
            if f["severity"] == "info":
                infos += 1
                if infos > _MAX_INFO_LINES:
                    continue
            slot = f" slot {f['slot']}" if f.get("slot") is not None else ""
            self._print(
                f"  {f['severity'].upper():7} {f['code']}{slot}: {f['message']}",
                _SEVERITY_STYLE.get(f["severity"]),
            )
        if infos > _MAX_INFO_LINES:
            self._print(
                f"  ... and {infos - _MAX_INFO_LINES} more info findings (--json lists them all)", "dim"
            )
        if self.summary is not None:
            self._print(self._summary_line(self.summary), "bold")
        self._reset()

    def error(self, path: Path, failure: DumpFailure) -> None:
        from rich.text import Text

        self.console.file.flush()
        self.err.print(Text(failure.line, style="bold red"))


def dump_one(path: Path, opts: DumpOptions, sink: Sink) -> int:
    """Dump one file into ``sink``; return its exit code (errors go to the sink as one line)."""
    info = classify(path.name)
    if info is None:
        if path.is_dir():
            failure = _os_failure(path, IsADirectoryError(errno.EISDIR, "is a directory"))
        else:
            failure = DumpFailure(
                f"{path}: unknown file kind (decided by the name, as DumpLogSegments does): "
                "not a segment file, "
                "snapshot, index, checkpoint or other log-dir file",
                EX_USAGE,
            )
        sink.error(path, failure)
        return failure.code
    ctx = FileContext(path, info, opts)
    try:
        if path.is_dir():
            raise IsADirectoryError(errno.EISDIR, "is a directory")
        if path.exists() and not _readable(path):
            raise PermissionError(errno.EACCES, "permission denied")
        if info.kind in _MUST_NOT_BE_EMPTY and path.stat().st_size == 0:
            raise TruncatedError(
                f"a {info.kind.value} file", source=str(path), position=0, found="an empty file"
            )
        for ev in DUMPERS[info.kind](ctx):
            sink.event(ev)
    except FormatError as e:
        ctx.failure = _format_failure(path, e)
    except OSError as e:
        ctx.failure = _os_failure(path, e)
    except Exception as e:  # a bug must not stop the other files: one line, exit 70 (EX_SOFTWARE)
        ctx.failure = DumpFailure(f"{path}: internal error: {type(e).__name__}: {e}", EX_SOFTWARE)
    for w in ctx.warnings:
        sink.warning(w)
    sink.end_file(ctx)
    code = EX_OK
    if any(f.severity is Severity.WARNING for f in ctx.findings):
        code = EX_WARNINGS
    if any(f.severity is Severity.ERROR for f in ctx.findings):
        code = EX_DATA
    if ctx.failure is not None:
        sink.error(path, ctx.failure)
        code = max(code, ctx.failure.code)
    return code


def _readable(path: Path) -> bool:
    return os.access(path, os.R_OK)


# Files the broker cannot read when empty (an empty .log, index or offset checkpoint is normal).
_MUST_NOT_BE_EMPTY = frozenset(
    {FileKind.META_PROPERTIES, FileKind.PARTITION_METADATA, FileKind.QUORUM_STATE, FileKind.PRODUCER_SNAPSHOT}
)


class _DumpCommand(TyperCommand):
    """Usage errors exit with 64 (EX_USAGE), not click's 2: 2 means bad data here."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except Exception as e:
            if hasattr(e, "exit_code") and type(e).__name__ in (
                "UsageError",
                "BadParameter",
                "MissingParameter",
                "NoSuchOption",
                "BadOptionUsage",
                "BadArgumentUsage",
            ):
                e.exit_code = EX_USAGE
            raise


@app.command("dump", cls=_DumpCommand)
def dump(
    files: Annotated[list[Path], typer.Argument(help="Files of a log dir; the kind is decided by the name.")],
    deep: Annotated[
        bool,
        typer.Option(
            "--deep", "-d", help="Every record of every batch (inner messages of v0/v1 wrappers too)."
        ),
    ] = False,
    print_data: Annotated[
        bool, typer.Option("--print-data", "-p", help="Show keys, values and headers (implies --deep).")
    ] = False,
    max_bytes: Annotated[
        int | None,
        typer.Option(
            "--max-bytes", min=1, help="Read at most N bytes of batches per log (from the seek position)."
        ),
    ] = None,
    offsets: Annotated[
        str | None,
        typer.Option(
            "--offsets",
            metavar="A:B",
            help="Only offsets A..B (inclusive; A: or :B open). Seeks with the .index.",
        ),
    ] = None,
    timestamps: Annotated[
        str | None,
        typer.Option(
            "--timestamps",
            metavar="A:B",
            help="Only timestamps A..B (epoch ms or ISO-8601). Seeks with the .timeindex.",
        ),
    ] = None,
    decoder: Annotated[
        DecoderChoice,
        typer.Option(
            "--decoder",
            help="Decode internal topics' keys and values; auto picks by the partition folder name.",
        ),
    ] = DecoderChoice.AUTO,
    verify_index: Annotated[
        bool,
        typer.Option("--verify-index", help="Check indexes against their log and report every mismatch."),
    ] = False,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json", help='JSON Lines: one object per batch, record, entry or finding, with a "type".'
        ),
    ] = False,
    no_crc: Annotated[bool, typer.Option("--no-crc", help="Skip computing batch CRCs.")] = False,
) -> None:
    """Dump log-dir files like Kafka's DumpLogSegments, and more."""
    try:
        opts = DumpOptions(
            deep=deep or print_data or decoder not in (DecoderChoice.AUTO, DecoderChoice.NONE),
            print_data=print_data or decoder not in (DecoderChoice.AUTO, DecoderChoice.NONE),
            max_bytes=max_bytes,
            offsets=parse_range(offsets, "offsets") if offsets is not None else None,
            timestamps=parse_range(timestamps, "timestamps", _parse_time) if timestamps is not None else None,
            decoder=decoder,
            verify_index=verify_index,
            verify_crc=not no_crc,
        )
    except UsageProblem as e:
        print(f"logdoctor dump: {e}", file=sys.stderr)
        raise typer.Exit(EX_USAGE) from None
    if json_out:
        sink: Sink = JsonSink()
    else:
        sink = TextSink(opts)
    code = EX_OK
    try:
        for path in files:
            code = max(code, dump_one(path, opts, sink))
    except BrokenPipeError:  # `| head`: stop quietly
        sys.stderr.close()
        raise typer.Exit(EX_OK) from None
    sink.close()
    raise typer.Exit(code)
