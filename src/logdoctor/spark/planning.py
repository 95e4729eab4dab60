"""Driver side of the data sources: which segments to read, from where, in how many pieces.

Everything here runs in Spark's planning worker (``DataSourceReader.partitions()``) or in the
census driver, never per record. It lists folders by name (logdoctor.logdir.names), reads index
files, and reads a few batch headers when a timestamp has to be turned into an offset. The
results are small picklable dataclasses handed to the executors.

Every path is a local path or a URI of a file system pyarrow opens (``s3://``, ``gs://``, ``hdfs://``,
``abfs://``; :mod:`logdoctor.logdir.storage`): listings, index reads and header reads go through the
:class:`~logdoctor.logdir.storage.Storage` of the path, which each ref carries to the executors.
A local segment larger than ``maxPartitionBytes`` is split at offset-index positions; a remote one is
not (a split's task walks the segment from its start to stop at its first invalid batch, which would
read the bytes before the split again over the network): it is read once, by byte ranges in chunks.

Offsets and timestamps follow Spark's Kafka source: ``startingOffsets`` is inclusive,
``endingOffsets`` exclusive, -2 is earliest and -1 latest; a timestamp T stands for the first
offset whose record timestamp is >= T (Kafka's ListOffsets by timestamp, i.e.
LogSegment.findOffsetByTimestamp: time index lookup, offset index lookup, then a scan of the
batches from that position; K:storage/.../log/LogSegment.java).
"""

from __future__ import annotations

import glob
import json
import os
import re
import struct
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from logdoctor.logdir.names import (
    DirKind,
    FileState,
    SegmentFileType,
    parse_partition_dir,
    parse_segment_file,
)
from logdoctor.logdir.storage import LOCAL, Entry, Storage, is_uri

EARLIEST = -2
LATEST = -1
DEFAULT_MAX_PARTITION_BYTES = 128 * 1024 * 1024
_MAX_SEARCH_DEPTH = 4


class PlanningError(ValueError):
    """A bad path or option given to a data source (shown to the user as is)."""


class InputNotFoundError(PlanningError):
    """A path given to a data source does not exist (the CLI exits 66 for it, as for a local path)."""


# --- what is on disk --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SegmentRef:
    """One live ``.log`` file and the names of its index files."""

    log_dir: str
    topic: str
    partition: int
    base_offset: int
    path: str
    size: int
    next_base_offset: int | None = None  # base offset of the next segment of the partition
    storage: Storage = LOCAL  # where ``path`` is (a local path, or a URI on that file system)

    @property
    def index_path(self) -> str:
        return self.path[: -len(".log")] + SegmentFileType.INDEX.value

    @property
    def time_index_path(self) -> str:
        return self.path[: -len(".log")] + SegmentFileType.TIMEINDEX.value

    @property
    def is_last(self) -> bool:
        return self.next_base_offset is None


@dataclass(frozen=True, slots=True)
class PartitionRef:
    log_dir: str
    topic: str
    partition: int
    path: str
    kind: str  # DirKind value
    segments: tuple[SegmentRef, ...] = ()
    storage: Storage = LOCAL


def split_paths(paths: str | Sequence[str] | None, options: Mapping[str, Any] | None = None) -> list[str]:
    """``load("a,b")`` or ``load(["a", "b"])`` -> ["a", "b"]; globs are expanded, order kept.

    A glob in a URI (``s3://bucket/brokers/*/kafka-logs``) is matched against the file system's
    listings (``options``: the data source's, for ``s3.region`` / ``s3.endpoint``)."""
    if paths is None:
        return []
    items = [paths] if isinstance(paths, str) else list(paths)
    out: list[str] = []
    for item in items:
        for part in str(item).split(","):
            part = part.strip()
            if not part:
                continue
            if is_uri(part) and glob.has_magic(part.split("://", 1)[1].split("?", 1)[0]):
                try:
                    storage, pattern = Storage.of(part, options)
                    matches = storage.glob(pattern)
                except (OSError, ValueError) as exc:
                    raise PlanningError(f"{part}: {exc}") from exc
                if not matches:
                    raise PlanningError(f"no file or folder matches {part!r}")
                out.extend(matches)
            elif glob.has_magic(part):
                matches = sorted(glob.glob(part))
                if not matches:
                    raise PlanningError(f"no file or folder matches {part!r}")
                out.extend(matches)
            else:
                out.append(part)
    return out


def _segment_logs(partition_dir: str, storage: Storage = LOCAL) -> list[tuple[int, str, Entry]]:
    """(base offset, path, listing entry) of the live ``.log`` files of a partition folder, in order."""
    logs: list[tuple[int, str, Entry]] = []
    try:
        # regular files only: a symlink is never followed, a FIFO never opened (logdir.files)
        entries = [e for e in storage.list(partition_dir) if e.is_regular_file()]
    except OSError as exc:
        raise PlanningError(f"cannot list {partition_dir}: {exc.strerror or exc}") from exc
    for entry in entries:
        parsed = parse_segment_file(entry.name)
        if (
            parsed is None
            or parsed.file_type is not SegmentFileType.LOG
            or parsed.state is not FileState.LIVE
        ):
            continue
        logs.append((parsed.base_offset, storage.join(partition_dir, entry.name), entry))
    logs.sort(key=lambda item: (item[0], item[1]))
    return logs


def _partition_ref(
    partition_dir: str, log_dir: str, only: str | None = None, storage: Storage = LOCAL
) -> PartitionRef | None:
    parsed = parse_partition_dir(storage.basename(partition_dir))
    if parsed is None:
        return None
    logs = _segment_logs(partition_dir, storage)
    segments: list[SegmentRef] = []
    for i, (base, path, entry) in enumerate(logs):
        if only is not None and not storage.same(path, only):
            continue
        try:
            size = entry.size
        except OSError:
            continue
        nxt = logs[i + 1][0] if i + 1 < len(logs) else None
        segments.append(SegmentRef(log_dir, parsed.topic, parsed.partition, base, path, size, nxt, storage))
    return PartitionRef(
        log_dir, parsed.topic, parsed.partition, partition_dir, parsed.kind.value, tuple(segments), storage
    )


def _subdirs(path: str, storage: Storage = LOCAL) -> list[str]:
    try:
        return sorted(e.name for e in storage.list(path) if e.is_dir())
    except OSError:
        return []


def _remote_evidence(storage: Storage, path: str, entries: Sequence[Entry]) -> str | None:
    """Why the remote folder ``path`` (listed as ``entries``) is a log dir, by the local rule."""
    from logdoctor.logdir.recognize import first_partition_file, log_dir_evidence

    def partition_file(entry: Entry) -> str | None:
        try:
            return first_partition_file(storage.list(storage.join(path, entry.name)))
        except OSError:
            return None

    return log_dir_evidence(entries, partition_file) if entries else None


def is_log_dir(path: str, storage: Storage = LOCAL) -> bool:
    """A folder with meta.properties, a checkpoint file, or a topic-partition folder holding partition
    files: the rule every command shares (:func:`logdoctor.logdir.recognize.recognize`)."""
    if not storage.is_local:
        try:
            return _remote_evidence(storage, path, storage.list(path)) is not None
        except OSError:
            return False
    from logdoctor.logdir.recognize import PathKind, recognize

    return recognize(path, look_below=False).kind is PathKind.LOG_DIR


def _is_partition_dir(path: str, storage: Storage = LOCAL) -> bool:
    if parse_partition_dir(storage.basename(path)) is None:
        return False
    return bool(_segment_logs(path, storage)) or not is_log_dir(path, storage)


def find_log_dirs(path: str, depth: int = 0, storage: Storage | None = None) -> list[str]:
    """Log dirs at or under ``path`` (a broker folder may hold several; searched a few levels deep).

    ``path`` is a local path or a URI (resolved with :meth:`Storage.of` when ``storage`` is None)."""
    if storage is None:
        storage, path = Storage.of(path)
    if is_log_dir(path, storage):
        return [path]
    if depth >= _MAX_SEARCH_DEPTH:
        return []
    out: list[str] = []
    for name in _subdirs(path, storage):
        out.extend(find_log_dirs(storage.join(path, name), depth + 1, storage))
    return out


def log_dir_partitions(
    log_dir: str, kinds: Iterable[str] = (DirKind.LOG.value,), storage: Storage = LOCAL
) -> list[PartitionRef]:
    wanted = set(kinds)
    out: list[PartitionRef] = []
    for name in _subdirs(log_dir, storage):
        ref = _partition_ref(storage.join(log_dir, name), log_dir, storage=storage)
        if ref is not None and ref.kind in wanted:
            out.append(ref)
    return out


def discover(
    paths: str | Sequence[str] | None, options: Mapping[str, Any] | None = None
) -> list[PartitionRef]:
    """Partitions named by PATHS: log dirs (or folders holding them), partition folders, .log files.

    A log dir contributes its ``<topic>-<p>`` folders (not ``-delete``/``-future``/``-stray`` ones,
    which the broker does not serve); a partition folder or .log file named directly is read
    whatever its kind. The same file named twice is read once. Each path is a local path or a URI
    (``options``: the data source's, for the file system's ``s3.region`` / ``s3.endpoint``).
    """
    items = split_paths(paths, options)
    if not items:
        raise PlanningError("no path given: load(PATH) with a log dir, a partition folder or a .log file")
    out: dict[tuple[str, str], PartitionRef] = {}

    def add(ref: PartitionRef | None) -> None:
        if ref is None:
            return
        st = ref.storage
        key = (st.fs_uri, os.path.abspath(ref.path) if st.is_local else ref.path)
        prev = out.get(key)
        if prev is None:
            out[key] = ref
        else:  # merge single-file refs of one partition
            segs = {s.path: s for s in (*prev.segments, *ref.segments)}
            out[key] = PartitionRef(
                prev.log_dir,
                prev.topic,
                prev.partition,
                prev.path,
                prev.kind,
                tuple(sorted(segs.values(), key=lambda s: s.base_offset)),
                prev.storage,
            )

    for item in items:
        try:
            storage, loc = Storage.of(item, options)
            path = os.path.normpath(loc) if storage.is_local else loc
            entry = storage.info(path)
        except (OSError, ValueError) as exc:
            raise PlanningError(f"{item}: {getattr(exc, 'strerror', None) or exc}") from exc
        if entry is None:
            raise InputNotFoundError(f"{item}: no such file or folder")
        if not entry.is_dir():
            parsed = parse_segment_file(storage.basename(path))
            if parsed is None or parsed.file_type is not SegmentFileType.LOG:
                raise PlanningError(f"{item}: not a segment .log file (expected <20-digit base offset>.log)")
            part_dir = storage.dirname(path)
            ref = _partition_ref(part_dir, storage.dirname(part_dir), only=path, storage=storage)
            if ref is None:
                raise PlanningError(
                    f"{item}: its folder is not a topic-partition folder (<topic>-<partition>)"
                )
            add(ref)
        else:
            if _is_partition_dir(path, storage):
                add(_partition_ref(path, storage.dirname(path), storage=storage))
                continue
            log_dirs = find_log_dirs(path, storage=storage)
            if not log_dirs:
                raise PlanningError(f"{item}: no Kafka log dir, partition folder or .log file found there")
            for ld in log_dirs:
                for ref in log_dir_partitions(ld, storage=storage):
                    add(ref)
    return sorted(out.values(), key=lambda r: (r.log_dir, r.topic, r.partition))


# --- options ----------------------------------------------------------------------------------------


def topic_matcher(topics: str | None):
    """``topics``: a comma list of names, or a regex (anything with regex metacharacters)."""
    if topics is None or not topics.strip():
        return lambda _t: True
    text = topics.strip()
    if re.fullmatch(r"[A-Za-z0-9._\-]+(\s*,\s*[A-Za-z0-9._\-]+)*", text):
        names = {t.strip() for t in text.split(",")}
        return lambda t: t in names
    try:
        pattern = re.compile(text)
    except re.error as exc:
        raise PlanningError(
            f"topics: {text!r} is neither a comma list of topics nor a valid regex: {exc}"
        ) from exc
    return lambda t: pattern.fullmatch(t) is not None


@dataclass(frozen=True, slots=True)
class PerPartition:
    """An option that is one value for every partition, or a {topic: {partition: value}} map."""

    default: int | None = None
    by_partition: Mapping[tuple[str, int], int] = field(default_factory=dict)

    def get(self, topic: str, partition: int) -> int | None:
        return self.by_partition.get((topic, partition), self.default)


def parse_per_partition(
    name: str, text: str | None, *, named: Mapping[str, int] | None = None
) -> PerPartition:
    """A number, a name (``earliest``/``latest`` where allowed) or Spark-Kafka JSON ``{"t":{"0":23}}``."""
    if text is None or not str(text).strip():
        return PerPartition()
    raw = str(text).strip()
    if named and raw.lower() in named:
        return PerPartition(named[raw.lower()])
    if re.fullmatch(r"-?\d+", raw):
        return PerPartition(int(raw))
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise PlanningError(
            f'{name}: expected a number or JSON like {{"topic":{{"0":23}}}}, got {raw!r}'
        ) from exc
    if isinstance(obj, int) and not isinstance(obj, bool):
        return PerPartition(obj)
    if not isinstance(obj, dict):
        raise PlanningError(f"{name}: expected a JSON object of topics, got {raw!r}")
    by: dict[tuple[str, int], int] = {}
    for topic, parts in obj.items():
        if not isinstance(parts, dict):
            raise PlanningError(f"{name}: topic {topic!r} must map partition numbers to values")
        for p, value in parts.items():
            try:
                by[(str(topic), int(p))] = int(value)
            except (TypeError, ValueError) as exc:
                raise PlanningError(f"{name}: bad entry {topic!r}/{p!r}: {value!r}") from exc
    return PerPartition(None, by)


@dataclass(frozen=True, slots=True)
class ReadOptions:
    topics: str | None = None
    starting_offsets: PerPartition = field(default_factory=PerPartition)
    ending_offsets: PerPartition = field(default_factory=PerPartition)
    starting_timestamps: PerPartition = field(default_factory=PerPartition)
    ending_timestamps: PerPartition = field(default_factory=PerPartition)
    include_control: bool = False
    decoder: str = "none"
    max_partition_bytes: int = DEFAULT_MAX_PARTITION_BYTES
    verify_crc: bool = True
    batch_rows: int = 65536
    min_partitions: int = field(default_factory=lambda: 2 * (os.cpu_count() or 1))

    @property
    def decoded(self) -> bool:
        return self.decoder != "none"


DECODERS = ("none", "auto", "consumer-offsets", "transactions", "cluster-metadata")
_OFFSET_NAMES = {"earliest": EARLIEST, "latest": LATEST}


def _bool(name: str, text: str | None, default: bool) -> bool:
    if text is None:
        return default
    v = str(text).strip().lower()
    if v in ("true", "1", "yes"):
        return True
    if v in ("false", "0", "no"):
        return False
    raise PlanningError(f"{name}: expected true or false, got {text!r}")


def _size(name: str, text: str | None, default: int) -> int:
    if text is None:
        return default
    m = re.fullmatch(r"\s*(\d+)\s*([kmgt]?)b?\s*", str(text).lower())
    if m is None:
        raise PlanningError(f"{name}: expected a byte count like 134217728 or 128m, got {text!r}")
    value = int(m.group(1)) * 1024 ** " kmgt".index(m.group(2) or " ")
    if value <= 0:
        raise PlanningError(f"{name}: must be positive")
    return value


def parse_read_options(options: Mapping[str, str]) -> ReadOptions:
    """Options of ``kafka-log`` (names as in Spark's Kafka source; case-insensitive)."""
    opts = {str(k).lower(): v for k, v in options.items()}
    decoder = str(opts.get("decoder", "none")).strip().lower()
    if decoder not in DECODERS:
        raise PlanningError(f"decoder: expected one of {', '.join(DECODERS)}, got {decoder!r}")
    start_ts = opts.get("startingtimestamp")
    end_ts = opts.get("endingtimestamp")
    return ReadOptions(
        topics=opts.get("topics") or opts.get("subscribe") or opts.get("subscribepattern"),
        starting_offsets=parse_per_partition(
            "startingOffsets", opts.get("startingoffsets"), named=_OFFSET_NAMES
        ),
        ending_offsets=parse_per_partition("endingOffsets", opts.get("endingoffsets"), named=_OFFSET_NAMES),
        # Spark: startingTimestamp wins over startingOffsetsByTimestamp, which wins over startingOffsets
        starting_timestamps=parse_per_partition(
            "startingTimestamp", start_ts if start_ts is not None else opts.get("startingoffsetsbytimestamp")
        ),
        ending_timestamps=parse_per_partition(
            "endingTimestamp", end_ts if end_ts is not None else opts.get("endingoffsetsbytimestamp")
        ),
        include_control=_bool("includeControl", opts.get("includecontrol"), False),
        decoder=decoder,
        max_partition_bytes=_size(
            "maxPartitionBytes", opts.get("maxpartitionbytes"), DEFAULT_MAX_PARTITION_BYTES
        ),
        verify_crc=_bool("verifyCrc", opts.get("verifycrc"), True),
        min_partitions=_positive_int("minPartitions", opts.get("minpartitions"), 2 * (os.cpu_count() or 1)),
    )


def _positive_int(name: str, text: str | None, default: int) -> int:
    if text is None:
        return default
    try:
        value = int(str(text).strip())
    except ValueError as exc:
        raise PlanningError(f"{name}: expected a positive integer, got {text!r}") from exc
    if value <= 0:
        raise PlanningError(f"{name}: expected a positive integer, got {text!r}")
    return value


# --- index lookups ----------------------------------------------------------------------------------


def _read_small(path: str, storage: Storage = LOCAL) -> bytes:
    try:
        return storage.read(path)  # local: logdir.files.read_file (no symlink, no FIFO)
    except (OSError, ValueError):
        return b""


def offset_index_entries(seg: SegmentRef) -> list[tuple[int, int]]:
    """Real (absolute offset, position) entries of the segment's ``.index`` that are usable for seeking.

    Entries must grow strictly in both offset and position and point inside the log; the first
    entry that does not ends the usable part (a corrupt index only costs a longer scan).
    """
    from logdoctor.formats.index import OFFSET_ENTRY_SIZE, offset_index_array, real_entry_count

    data = _read_small(seg.index_path, seg.storage)
    n = real_entry_count(data, OFFSET_ENTRY_SIZE)
    if n == 0:
        return []
    arr = offset_index_array(data[: n * OFFSET_ENTRY_SIZE])
    out: list[tuple[int, int]] = []
    last_off, last_pos = seg.base_offset - 1, -1
    for rel, pos in zip(arr["relative_offset"].tolist(), arr["position"].tolist(), strict=True):
        off = seg.base_offset + rel
        if off <= last_off or pos <= last_pos or pos >= seg.size or rel < 0:
            break
        if seg.next_base_offset is not None and off >= seg.next_base_offset:
            break
        out.append((off, pos))
        last_off, last_pos = off, pos
    return out


def time_index_entries(seg: SegmentRef) -> tuple[list[tuple[int, int]], bool]:
    """Real (timestamp, absolute offset) entries of the ``.timeindex``, and whether it looks complete.

    Complete means trimmed (no zero-padded tail) with timestamps and offsets that never go down.
    """
    from logdoctor.formats.index import TIME_ENTRY_SIZE, real_entry_count, slot_count, time_index_array

    data = _read_small(seg.time_index_path, seg.storage)
    n = real_entry_count(data, TIME_ENTRY_SIZE)
    complete = n > 0 and n == slot_count(data, TIME_ENTRY_SIZE) and len(data) % TIME_ENTRY_SIZE == 0
    if n == 0:
        return [], False
    arr = time_index_array(data[: n * TIME_ENTRY_SIZE])
    out: list[tuple[int, int]] = []
    for ts, rel in zip(arr["timestamp"].tolist(), arr["relative_offset"].tolist(), strict=True):
        off = seg.base_offset + rel
        if out and (ts < out[-1][0] or off < out[-1][1]):
            complete = False
            break
        out.append((ts, off))
    return out, complete


def _largest_at_most(entries: Sequence[tuple[int, int]], key: int) -> tuple[int, int] | None:
    """The entry with the largest first element <= key (entries sorted by it), like AbstractIndex.lookup."""
    lo, hi = 0, len(entries)
    while lo < hi:
        mid = (lo + hi) // 2
        if entries[mid][0] <= key:
            lo = mid + 1
        else:
            hi = mid
    return entries[lo - 1] if lo else None


_HEADER = struct.Struct(">qi")
_HEADER_PROBE = 17  # offset, size, and the magic byte at 16


def _plausible_header(buf, at: int, position: int, file_size: int, seg: SegmentRef) -> bool:
    """Whether the bytes at ``buf[at:]`` (file position ``position``) look like a batch header."""
    if position == 0:
        return True
    if position < 0 or at < 0 or at + _HEADER_PROBE > len(buf) or position + _HEADER_PROBE > file_size:
        return False
    offset, size = _HEADER.unpack_from(buf, at)
    magic = buf[at + 16]
    if magic not in (0, 1, 2) or size < 14 or position + 12 + size > file_size:
        return False
    if offset < seg.base_offset and not (magic < 2 and offset == 0):  # librdkafka v1 wrappers may say 0
        return False
    return seg.next_base_offset is None or offset < seg.next_base_offset


def plausible_batch_start(buf, position: int, seg: SegmentRef) -> bool:
    """Cheap check that a batch header starts at ``position`` (offset in range, sane size and magic)."""
    return _plausible_header(buf, position, position, len(buf), seg)


def _plausible_at(seg: SegmentRef, position: int, buf=None) -> bool:
    """:func:`plausible_batch_start` in the mapped file ``buf``, or with one 17-byte read of a remote one."""
    if buf is not None or seg.storage.is_local:
        return plausible_batch_start(_map(seg.path) if buf is None else buf, position, seg)
    if position == 0:
        return True
    try:
        head = seg.storage.read_range(seg.path, position, _HEADER_PROBE)
    except (OSError, ValueError):
        return False
    return _plausible_header(head, 0, position, seg.size, seg)


def seek_position(seg: SegmentRef, target_offset: int, buf=None) -> int:
    """Byte position to start reading ``seg`` to find ``target_offset`` (OffsetIndex.lookup)."""
    if target_offset <= seg.base_offset:
        return 0
    entry = _largest_at_most(offset_index_entries(seg), target_offset)
    if entry is None:
        return 0
    if buf is not None and not plausible_batch_start(buf, entry[1], seg):
        return 0
    return entry[1]


def _seek(seg: SegmentRef, target_offset: int, entries: Sequence[tuple[int, int]] | None = None) -> int:
    """:func:`seek_position` with the position checked (in the map, or by a header read when remote)."""
    if target_offset <= seg.base_offset:
        return 0
    entry = _largest_at_most(offset_index_entries(seg) if entries is None else entries, target_offset)
    if entry is None or not _plausible_at(seg, entry[1]):
        return 0
    return entry[1]


def _map(path: str):
    from logdoctor.logdir.files import map_file

    try:
        return map_file(path)
    except OSError:
        return memoryview(b"")


#: The first read when looking for a timestamp from an index position (it is usually within a few KiB).
SEEK_FIRST_CHUNK = 64 * 1024


def segment_batches(
    seg: SegmentRef,
    start: int = 0,
    *,
    verify_crc: bool = True,
    stop: int | None = None,
    hint: int | None = None,
    hint_offset: int | None = None,
    first_chunk: int | None = None,
) -> Iterator[Any]:
    """The batches of ``seg`` from byte ``start``, as :func:`logdoctor.formats.records.iter_batches`
    over the whole file yields them: a local file is mapped; a remote one is read by byte ranges
    (:func:`logdoctor.logdir.ranged.iter_ranged_batches`: ``stop``, ``hint`` and ``hint_offset`` bound
    what it reads). Raises OSError when the file cannot be opened, FormatError at its first bad batch."""
    from logdoctor.formats.records import iter_batches

    if seg.storage.is_local:
        from logdoctor.logdir.files import map_file

        yield from iter_batches(map_file(seg.path), source=seg.path, start=start, verify_crc=verify_crc)
        return
    from logdoctor.logdir.ranged import iter_ranged_batches

    with seg.storage.open(seg.path) as reader:
        yield from iter_ranged_batches(
            reader,
            source=seg.path,
            start=start,
            stop=stop,
            verify_crc=verify_crc,
            first_chunk=first_chunk,
            hint=hint,
            hint_offset=hint_offset,
        )


def _first_offset_at_or_after_timestamp(seg: SegmentRef, ts: int, position: int) -> int | None:
    """Scan batches from ``position``: the first record offset whose timestamp is >= ts, or None."""
    from logdoctor.errors import FormatError

    try:
        for batch in segment_batches(seg, position, verify_crc=True, first_chunk=SEEK_FIRST_CHUNK):
            if batch.max_timestamp < ts:
                continue
            for record in batch.records():
                if record.timestamp >= ts:
                    return record.offset
    except FormatError:
        return None  # rows of a segment stop at its first invalid batch; so does the search
    except OSError:
        if not seg.storage.is_local:
            raise  # a remote read failed: a wrong start offset would silently drop rows
        return None  # a local file gone since listing: as an empty one
    return None


def offset_for_timestamp(segments: Sequence[SegmentRef], ts: int) -> int | None:
    """The first offset of the partition whose record timestamp is >= ts; None when there is none.

    Segments whose complete time index proves their largest timestamp is below ``ts`` are skipped
    (the broker does the same with ``segment.largestTimestamp``); inside the chosen segment the time
    index then the offset index give the position to start the scan from.
    """
    for seg in segments:
        entries, complete = time_index_entries(seg)
        if entries and complete and not seg.is_last and entries[-1][0] < ts:
            continue
        position = 0
        found = _largest_at_most(entries, ts) if entries else None
        if found is not None:
            position = _seek(seg, found[1])
        offset = _first_offset_at_or_after_timestamp(seg, ts, position)
        if offset is None and position:
            offset = _first_offset_at_or_after_timestamp(seg, ts, 0)  # index led us wrong: rescan
        if offset is not None:
            return offset
    return None


# --- input partitions -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SegmentSlice:
    """What one Spark task reads: the batches of one segment that start in [emit_from, emit_to).

    The reader walks (and CRC-checks) from ``read_from`` to ``emit_from`` without emitting, so
    that a split of a large segment still stops at the segment's first invalid batch.
    """

    segment: SegmentRef
    read_from: int = 0
    emit_from: int = 0
    emit_to: int | None = None
    start_offset: int | None = None  # inclusive
    end_offset: int | None = None  # exclusive
    part: int = 0
    parts: int = 1
    # a remote segment: probably no batch at or after this position is wanted (from the offset index
    # and end_offset); its reads stop there unless the batch there proves otherwise
    fetch_hint: int | None = None


@dataclass(frozen=True, slots=True)
class PartitionRange:
    start_offset: int | None
    end_offset: int | None


def resolve_range(ref: PartitionRef, opts: ReadOptions) -> PartitionRange:
    segs = ref.segments
    start: int | None = None
    end: int | None = None
    s_ts = opts.starting_timestamps.get(ref.topic, ref.partition)
    if s_ts is not None:
        found = offset_for_timestamp(segs, s_ts)
        start = found if found is not None else _log_end_bound(segs)
    else:
        s = opts.starting_offsets.get(ref.topic, ref.partition)
        if s is not None and s >= 0:
            start = s
        elif s == LATEST:
            start = _log_end_bound(segs)
    e_ts = opts.ending_timestamps.get(ref.topic, ref.partition)
    if e_ts is not None:
        end = offset_for_timestamp(segs, e_ts)
    else:
        e = opts.ending_offsets.get(ref.topic, ref.partition)
        if e is not None and e >= 0:
            end = e
        elif e == EARLIEST:
            end = segs[0].base_offset if segs else 0
    return PartitionRange(start, end)


def _log_end_bound(segs: Sequence[SegmentRef]) -> int:
    """An offset past every record (used for 'latest' as a start): no row will be read."""
    return 2**63 - 1 if segs else 0


def split_points(
    seg: SegmentRef, start: int, max_bytes: int, entries: Sequence[tuple[int, int]] | None = None
) -> list[int]:
    """Positions after ``start`` where a large local segment is cut, taken from its offset index."""
    if seg.size - start <= max_bytes:
        return []
    positions = [pos for _, pos in (offset_index_entries(seg) if entries is None else entries) if pos > start]
    if not positions:
        return []
    buf = _map(seg.path)
    cuts: list[int] = []
    target = start + max_bytes
    i = 0
    while target < seg.size and i < len(positions):
        best = None
        while i < len(positions) and positions[i] <= target:
            best = positions[i]
            i += 1
        if best is None:  # no index entry in this window: cut at the next one
            best = positions[i]
            i += 1
        if plausible_batch_start(buf, best, seg) and (not cuts or best > cuts[-1]):
            cuts.append(best)
        target = best + max_bytes
    return cuts


def plan_slices(refs: Sequence[PartitionRef], opts: ReadOptions) -> list[SegmentSlice]:
    """One slice per segment in the requested range; segments over maxPartitionBytes are split."""
    match = topic_matcher(opts.topics)
    out: list[SegmentSlice] = []
    for ref in refs:
        if not match(ref.topic) or not ref.segments:
            continue
        rng = resolve_range(ref, opts)
        for seg in ref.segments:
            if (
                rng.start_offset is not None
                and seg.next_base_offset is not None
                and seg.next_base_offset <= rng.start_offset
            ):
                continue  # the whole segment is before the start
            if rng.end_offset is not None and seg.base_offset >= rng.end_offset:
                continue
            if (
                rng.start_offset is not None
                and rng.end_offset is not None
                and rng.start_offset >= rng.end_offset
            ):
                continue
            seeking = rng.start_offset is not None and rng.start_offset > seg.base_offset
            if not seg.storage.is_local:  # read once, by ranges: not split (module doc)
                entries = offset_index_entries(seg) if seeking or rng.end_offset is not None else []
                read_from = _seek(seg, rng.start_offset, entries) if seeking else 0  # type: ignore[arg-type]
                hint = _end_hint(entries, rng.end_offset) if rng.end_offset is not None else None
                out.append(
                    SegmentSlice(
                        seg, read_from, read_from, None, rng.start_offset, rng.end_offset, fetch_hint=hint
                    )
                )
                continue
            read_from = 0
            if seeking:
                read_from = seek_position(seg, rng.start_offset, _map(seg.path))  # type: ignore[arg-type]
            cuts = split_points(seg, read_from, opts.max_partition_bytes)
            bounds = [read_from, *cuts, None]
            n = len(bounds) - 1
            for k in range(n):
                out.append(
                    SegmentSlice(
                        seg, read_from, bounds[k], bounds[k + 1], rng.start_offset, rng.end_offset, k, n
                    )
                )
    return out


def _end_hint(entries: Sequence[tuple[int, int]], end_offset: int) -> int | None:
    """A position where every batch has offsets >= ``end_offset``, from the offset index: that of the
    entry after the first entry at or past ``end_offset`` (an entry's offset is the last of the batches
    appended from its position on, so everything from the next entry's position on comes after it)."""
    for i, (offset, _) in enumerate(entries):
        if offset >= end_offset:
            return entries[i + 1][1] if i + 1 < len(entries) else None
    return None


#: What opening one segment costs, in bytes of reading (Spark's spark.sql.files.openCostInBytes idea):
#: many small segments share a task, because every Python task has a fixed cost of its own.
OPEN_COST_BYTES = 1024 * 1024


def _slice_bytes(sl: SegmentSlice) -> int:
    end = sl.segment.size if sl.emit_to is None else sl.emit_to
    if sl.fetch_hint is not None:
        end = min(end, sl.fetch_hint)
    return max(0, end - sl.emit_from)


def pack_slices(
    slices: Sequence[SegmentSlice], max_bytes: int, min_partitions: int
) -> list[tuple[SegmentSlice, ...]]:
    """Group slices into tasks of about ``max_bytes`` (at least ``min_partitions`` tasks when there is
    enough data), keeping each partition's segments together and in order, like Spark's FilePartition.
    """
    if not slices:
        return []
    total = sum(_slice_bytes(s) + OPEN_COST_BYTES for s in slices)
    target = min(max_bytes, max(OPEN_COST_BYTES, total // max(1, min_partitions)))
    groups: list[tuple[SegmentSlice, ...]] = []
    cur: list[SegmentSlice] = []
    size = 0
    for sl in slices:
        cost = _slice_bytes(sl) + OPEN_COST_BYTES
        if cur and size + cost > target:
            groups.append(tuple(cur))
            cur, size = [], 0
        cur.append(sl)
        size += cost
    if cur:
        groups.append(tuple(cur))
    return groups
