"""The Python Data Sources ``kafka-log`` (one row per record) and ``kafka-log-segments`` (per segment).

Spark runs ``partitions()`` in a planning worker and ``read()`` in executor Python workers, so
everything here pickles (small dataclasses: the model's refs, :mod:`logdoctor.logdir.refs`, and the
slices of :mod:`logdoctor.spark.planning`) and the heavy imports happen inside the methods. Readers
yield ``pyarrow.RecordBatch`` objects whose types are
exactly the ones of :mod:`logdoctor.spark.schema`.

A bad batch fails nothing. A batch whose CRC does not match where the framing goes on intact after it
(the next batch where its size says, or the segment's end) is left out alone and the rows go on
(``kafka-log-segments``: column ``crc_mismatches``; :func:`logdoctor.formats.records.skip_crc_mismatches`);
where the framing breaks (a torn or zero-filled tail, an impossible size or magic) the rows of a segment
stop at the last valid batch, as the broker's recovery would truncate there; ``kafka-log-segments``
reports where and why. A batch whose header and CRC are valid but whose records do not decode (bad
varint lengths, a payload that is not its codec's) is one the broker keeps (``LogSegment.recover``
checks CRCs, it does not decode records): its rows are left out and the rows go on after it;
``kafka-log-segments`` with the option ``checkRecords`` lists such batches (column ``undecodable``),
and ``export`` names them.

Paths may be URIs (``s3://``, ``gs://``, ``hdfs://``, ``abfs://``; :mod:`logdoctor.logdir.storage`,
options ``s3.region`` and ``s3.endpoint``). A remote segment is read by byte ranges of the planned
slice only, in chunks cut at batch boundaries; a remote file that cannot be read fails the task (Spark
retries it) instead of giving no rows. ``kafka-log-segments`` summarizes remote segments from their
bytes as it does local ones, but its ``findings`` there hold only what reading the segment finds
(``LOG_CORRUPT``): the scan's checks of indexes, checkpoints and snapshots read local files only.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from logdoctor.spark.daemon import install_in_worker

install_in_worker()  # in a Spark planning or task worker: cheap importlib.invalidate_caches()

if TYPE_CHECKING:
    import pyarrow as pa

    from logdoctor.logdir.refs import SegmentRef
    from logdoctor.logdir.storage import Storage
    from logdoctor.logdir.transactions import SegmentTransactions
    from logdoctor.spark.planning import ReadOptions, SegmentSlice


class SlicePartition(InputPartition):
    """An InputPartition carrying planned SegmentSlices, read in order (picklable)."""

    def __init__(self, value: tuple[SegmentSlice, ...]) -> None:
        super().__init__(value)


class SegmentPartition(InputPartition):
    """An InputPartition carrying a group of SegmentRefs for the segments source."""

    def __init__(self, value: tuple[SegmentRef, ...]) -> None:
        super().__init__(value)


def _paths(options: dict[str, str]) -> str:
    # load(path) puts it in "path"; load([a, b]) in "paths" as a JSON list
    import json

    if options.get("paths"):
        try:
            items = json.loads(options["paths"])
            if isinstance(items, list):
                extra = [options["path"]] if options.get("path") else []
                return ",".join([*extra, *map(str, items)])
        except ValueError:
            pass
        return str(options["paths"])
    return str(options.get("path", ""))


# --- kafka-log --------------------------------------------------------------------------------------


class KafkaLogDataSource(DataSource):
    """``spark.read.format("kafka-log").load(PATHS)``: the records of Kafka log segments on disk."""

    @classmethod
    def name(cls) -> str:
        return "kafka-log"

    def schema(self) -> Any:
        from logdoctor.logdir.read_options import ReadOptions
        from logdoctor.spark.schema import records_ddl

        opts = ReadOptions.from_options(self.options)
        if opts.view == "cdc":
            from logdoctor.spark.planning import PlanningError

            raise PlanningError("view cdc is an export of tables, not a frame: logdoctor export --view cdc")
        if opts.typed:  # one topic's typed rows (logdoctor.spark.typed_frame)
            from logdoctor.spark.typed_frame import spark_schema, typed_frame

            return spark_schema(typed_frame(_paths(self.options), opts, read_slices))
        return records_ddl(opts.decoded)

    def reader(self, schema: Any) -> DataSourceReader:
        return KafkaLogReader(dict(self.options))


class KafkaLogReader(DataSourceReader):
    def __init__(self, options: dict[str, str]) -> None:
        from logdoctor.logdir.read_options import ReadOptions

        self.options = options
        self.read_options = ReadOptions.from_options(options)
        self.typed_frame: Any = None
        if self.read_options.typed:  # planned here, in the planning worker; pickled to the tasks with it
            from logdoctor.spark.typed_frame import typed_frame

            self.typed_frame = typed_frame(_paths(options), self.read_options, read_slices)

    def partitions(self) -> Sequence[InputPartition]:
        from logdoctor.spark.planning import plan_slices, read_plan, task_groups

        opts = self.read_options
        slices = plan_slices(read_plan(_paths(self.options), opts).refs, opts)
        return [SlicePartition(g) for g in task_groups(slices, opts)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if partition is None or partition.value is None:  # no segment at all
            return
        rows = read_slices(partition.value, self.read_options)
        if self.typed_frame is not None:
            yield from self.typed_frame.rows(rows)
            return
        yield from rows


_ZERO_ROWS_CACHE: dict[bool, Any] = {}


def _decoder_for(name: str, topic: str, features: Any = None):
    """The internal-topic decoder ``(key, value) -> dict`` for option ``decoder`` and this topic; ``features``
    (the cluster's feature levels, :attr:`SegmentSlice.features`) choose the layouts Kafka changed under one
    version, for the decoders that take them (``__consumer_offsets``, ``__share_group_state``)."""
    from logdoctor.formats import internal

    return internal.decoder_by_name(name, topic, features)


def _decode_json(decode, keys: list, values: list, control: list[bool]) -> list[str | None]:
    import base64
    import json

    def default(obj: Any) -> Any:
        if isinstance(obj, (bytes, bytearray, memoryview)):
            return base64.b64encode(bytes(obj)).decode("ascii")
        if hasattr(obj, "to_json"):
            return obj.to_json()
        if hasattr(obj, "__dataclass_fields__"):
            import dataclasses

            return dataclasses.asdict(obj)
        if hasattr(obj, "value") and hasattr(obj, "name"):  # enums
            return obj.name
        return str(obj)

    out: list[str | None] = []
    for key, value, is_control in zip(keys, values, control, strict=True):
        if decode is None or is_control:
            out.append(None)
            continue
        try:
            obj = decode(key, value)
        except Exception as exc:  # a record the decoder does not know: say so, keep going
            obj = {"type": "undecodable", "error": str(exc)}
        out.append(json.dumps(obj, default=default, sort_keys=True))
    return out


# What _build_arrow reads off every batch, in one C-level getter call per batch (slots of
# RecordBatchV2, plain attributes of LegacyBatch): the record count first, then the batch columns.
_BATCH_FIELDS = (
    "record_count",
    "position",
    "producer_id",
    "producer_epoch",
    "base_sequence",
    "partition_leader_epoch",
    "attributes",
    "magic",
)
_COUNT, _POSITION, _PRODUCER_ID, _PRODUCER_EPOCH = 0, 1, 2, 3
_BASE_SEQUENCE, _LEADER_EPOCH, _ATTRIBUTES, _MAGIC = 4, 5, 6, 7
# The attributes bits (DefaultRecordBatch.java: COMPRESSION_CODEC_MASK, TRANSACTIONAL_FLAG_MASK,
# CONTROL_FLAG_MASK); v0/v1 entries have only the codec bits (LegacyRecord.java), never the flags.
_CODEC_MASK = 0x07
_TRANSACTIONAL_MASK = 0x10
_CONTROL_MASK = 0x20
_INT32_MAX = 0x7FFFFFFF


def batch_header_columns(batches: Sequence[Any]) -> Any:
    """The fields of ``_BATCH_FIELDS`` of every batch, as an int64 numpy array of shape (batches, 8)."""
    import itertools
    import operator

    import numpy as np

    getter = operator.attrgetter(*_BATCH_FIELDS)
    width = len(_BATCH_FIELDS)
    flat = np.fromiter(
        itertools.chain.from_iterable(map(getter, batches)), dtype=np.int64, count=len(batches) * width
    )
    return flat.reshape(len(batches), width)


def _constant_string(value: str, n: int) -> pa.Array:
    """A string array of ``n`` times ``value``, built from its buffers (no per-row work)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    data = value.encode("utf-8", "surrogatepass")
    if len(data) * n > _INT32_MAX:  # pragma: no cover - more than 2 GiB of one value
        return pc.take(pa.array([value], pa.string()), pa.array(np.zeros(n, dtype=np.int32)))
    offsets = np.arange(n + 1, dtype=np.int32) * np.int32(len(data))
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data * n)])


def _compression_column(batches: Sequence[Any], codecs: Any, counts: Any) -> pa.Array:
    """The codec label of each record's batch (``Compression.label``)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from logdoctor.formats.record_types import Compression

    n = int(counts.sum())
    lo, hi = int(codecs.min()), int(codecs.max())
    if lo < 0 or hi >= len(Compression):  # pragma: no cover - decode refuses unknown codecs first
        labels = [b.compression.label for b in batches]  # raises what the batch raises
        return pa.array(np.repeat(np.asarray(labels, dtype=object), counts), pa.string())
    if lo == hi:  # one codec (the usual case)
        return _constant_string(Compression(lo).label, n)
    table = pa.array([c.label for c in Compression], pa.string())
    return pc.take(table, pa.array(np.repeat(codecs.astype(np.int8), counts)))


def _transaction_codes(batches: Sequence[Any], head: Any, txn: SegmentTransactions | None) -> Any:
    """The result code of each batch's transaction (0: none; logdoctor.logdir.transactions.RESULTS)."""
    import numpy as np

    v2 = head[:, _MAGIC] == 2
    attributes = head[:, _ATTRIBUTES]
    transactional = v2 & (attributes & _TRANSACTIONAL_MASK != 0) & (head[:, _PRODUCER_ID] >= 0)
    if txn is None or not txn.spans or not transactional.any():
        return np.zeros(len(batches), dtype=np.int8)
    return np.asarray(
        txn.results(
            head[:, _PRODUCER_ID].tolist(),
            [b.base_offset for b in batches],
            transactional.astype(np.int8).tolist(),
        ),
        dtype=np.int8,
    )


def _build_arrow(
    seg: SegmentRef,
    batches: list,
    cols: Any,
    opts: ReadOptions,
    start_offset: int | None,
    end_offset: int | None,
    txn: SegmentTransactions | None = None,
    features: Any = None,
) -> pa.RecordBatch | None:
    """Arrow rows for the decoded records of ``batches`` (columns from decode_columns).

    No Python work per record: the batch fields are read once per batch (one attrgetter call) and
    spread over the batch's records with ``np.repeat``; constant columns are built from buffers.

    ``txn``: the segment's transactions (:class:`~logdoctor.logdir.transactions.SegmentTransactions`):
    each record's ``transaction_result``, and what its isolation level leaves out (``read_committed``: the
    records of aborted transactions, everything at or above the last stable offset)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from logdoctor.logdir.transactions import READ_COMMITTED, RESULTS
    from logdoctor.spark.schema import records_arrow_schema

    n = len(cols)
    if n == 0:
        return None
    head = batch_header_columns(batches)
    counts = head[:, _COUNT]

    def per_record(column: int, dtype: Any) -> np.ndarray:
        return np.repeat(head[:, column].astype(dtype), counts)

    offsets = cols.offsets.astype(np.int64, copy=False)
    ts_ms = cols.timestamps.astype(np.int64, copy=False)
    ts_type = cols.timestamp_types.astype(np.int32)
    # NO_TIMESTAMP (magic 0) and values that do not fit microseconds become null
    ts_null = (ts_type < 0) | (np.abs(ts_ms) > 9_000_000_000_000_000 // 1000)
    has_null = bool(ts_null.any())
    ts_us = (np.where(ts_null, 0, ts_ms) if has_null else ts_ms) * 1000
    timestamp = pa.array(ts_us, type=pa.timestamp("us", tz="UTC"), mask=ts_null if has_null else None)

    attributes = head[:, _ATTRIBUTES]
    v2 = head[:, _MAGIC] == 2
    transactional = np.repeat(v2 & (attributes & _TRANSACTIONAL_MASK != 0), counts)
    control = np.repeat(v2 & (attributes & _CONTROL_MASK != 0), counts)

    arrays = [
        cols.keys,
        cols.values,
        _constant_string(seg.topic, n),
        pa.array(np.full(n, seg.partition, dtype=np.int32)),
        pa.array(offsets),
        timestamp,
        pa.array(ts_type),
        cols.headers,
        _constant_string(row_log_dir(seg), n),
        pa.array(np.full(n, seg.base_offset, dtype=np.int64)),
        pa.array(per_record(_POSITION, np.int64)),
        pa.array(per_record(_PRODUCER_ID, np.int64)),
        pa.array(per_record(_PRODUCER_EPOCH, np.int16)),
        pa.array(per_record(_BASE_SEQUENCE, np.int32)),
        pa.array(transactional),
        pa.array(control),
        pa.array(per_record(_LEADER_EPOCH, np.int32)),
        _compression_column(batches, attributes & _CODEC_MASK, counts),
    ]
    codes = np.repeat(_transaction_codes(batches, head, txn), counts)
    if codes.any():
        arrays.append(pc.take(pa.array(RESULTS, pa.string()), pa.array(codes)))
    else:
        arrays.append(pa.nulls(n, pa.string()))
    if opts.decoded:
        decode = _decoder_for(opts.decoder, seg.topic, features)
        arrays.append(
            pa.array(
                _decode_json(decode, cols.keys.to_pylist(), cols.values.to_pylist(), control.tolist()),
                pa.string(),
            )
        )
    schema = records_arrow_schema(opts.decoded)
    arrays = [a if a.type == f.type else a.cast(f.type) for a, f in zip(arrays, schema, strict=True)]
    rb = pa.RecordBatch.from_arrays(arrays, schema=schema)
    stable_end = None if txn is None else txn.stable_end
    committed_only = txn is not None and txn.isolation == READ_COMMITTED
    drop_aborted = committed_only and bool(codes.any())
    if start_offset is not None or end_offset is not None or stable_end is not None or drop_aborted:
        keep = np.ones(n, dtype=bool)
        if start_offset is not None:
            keep &= offsets >= start_offset
        if end_offset is not None:
            keep &= offsets < end_offset
        if stable_end is not None:
            keep &= offsets < stable_end
        if drop_aborted:  # a marker stays where includeControl asks for it: it is not aborted data
            keep &= (codes != RESULTS.index("aborted")) | control
        if not keep.all():
            rb = rb.filter(pa.array(keep))
    return rb if rb.num_rows else None


def undecodable_batch(batch: Any, path: str, error: BaseException | str) -> dict[str, Any]:
    """One batch whose records cannot be read, as export reports it (file positions and offsets)."""
    return {
        "path": path,
        "position": int(batch.position),
        "size": int(batch.size),
        "base_offset": int(batch.base_offset) if batch.base_offset is not None else None,
        "last_offset": int(batch.last_offset),
        "error": str(error),
    }


def row_log_dir(seg: Any) -> str:
    """The ``log_dir`` column of a segment's rows: the log dir, absolute for a local one whatever path it
    was given by (as the remote tier's root is), so rows read from different folders compare; a remote-tier
    segment's store root."""
    if seg.remote is not None:
        return str(seg.remote.root)
    return os.path.abspath(seg.log_dir) if seg.storage.is_local else str(seg.log_dir)


def crc_skip_row(skip: Any, path: str) -> dict[str, Any]:
    """One batch left out alone for its CRC (:class:`logdoctor.formats.records.CrcSkip`), in the shape of
    :func:`undecodable_batch` plus the two CRCs, as export reports it."""
    return {
        "path": path,
        "position": skip.position,
        "size": skip.size,
        "base_offset": skip.base_offset,
        "last_offset": skip.last_offset,
        "stored_crc": skip.stored_crc,
        "computed_crc": skip.computed_crc,
        "error": skip.describe(),
    }


class _Window:
    """One window of a batch's records (``record_windows``): the batch's fields, its own record count."""

    __slots__ = ("_batch", "record_count")

    def __init__(self, batch: Any, record_count: int) -> None:
        self._batch = batch
        self.record_count = record_count

    def __getattr__(self, name: str) -> Any:
        return getattr(self._batch, name)


def _decode(batches: list, path: str, bad: list[dict[str, Any]] | None = None) -> Iterator[tuple[list, Any]]:
    """Decode ``batches`` to columns: (batches, their columns) parts. A batch that does not decode (a
    CRC-valid batch whose records are garbage: bad varint lengths, a payload that is not its codec's) is
    left out, and named in ``bad``; the batches after it are still read (issue 24: export stopped at the
    first such batch and said nothing). A gzip or zstd batch whose records are more than a window (a
    decompression bomb) gives a part per window, never decompressed whole."""
    from logdoctor.errors import FormatError
    from logdoctor.formats.batch_v2 import SectionTooLargeError
    from logdoctor.formats.records import decode_columns

    try:
        cols = decode_columns(batches)
        if len(cols) == sum(b.record_count for b in batches):
            yield batches, cols
            return
    except (FormatError, SectionTooLargeError):
        pass
    good: list = []
    for b in batches:  # decode one at a time: keep every batch that decodes
        try:
            c = decode_columns([b])
            if len(c) != b.record_count:
                raise ValueError(f"{len(c)} records decoded where the batch header says {b.record_count}")
        except SectionTooLargeError:
            if good:
                yield good, decode_columns(good)
                good = []
            yield from _decode_windows(b, path, bad)
            continue
        except (FormatError, ValueError) as exc:
            if bad is not None:
                bad.append(undecodable_batch(b, path, exc))
            continue
        good.append(b)
    if good:
        yield good, decode_columns(good)


def remote_error_text(seg: SegmentRef, error: Exception, last_offset: int | None) -> str:
    """What a remote-tier segment that could not be read (whole) says: its id, the offsets not read."""
    assert seg.remote is not None
    unread = None if last_offset is None else last_offset + 1
    return (
        f"remote segment {seg.remote.segment_id} ({seg.remote.layout}): "
        f"{seg.remote.offsets_text(seg.base_offset, unread)} not read: {error}"
    )


#: what a writing task holds of Arrow rows before it writes them (besides a row count): a decompression
#: bomb's rows are large, a million of them would be the whole bomb in memory (issue 31)
WRITE_FLUSH_BYTES = 32 * 1024 * 1024


def remote_gap_text(seg: SegmentRef, last_offset: int | None, end: int | None = None) -> str | None:
    """A remote-tier segment read whole that stops before the offset the next segment (remote, or the
    local log) starts at: the offsets between are in no object of the store (one missing: a tiered
    topic is never compacted, its offsets are contiguous). ``end``: the read stopped there on purpose."""
    if seg.remote is None:
        return None
    last = seg.remote.end_offset  # the segment's own last offset (the metadata's, or before the next one)
    bounds = [
        b
        for b in (seg.next_base_offset, seg.remote.local_from, end, None if last is None else last + 1)
        if b is not None
    ]
    if not bounds:
        return None
    expected = min(bounds)
    first = seg.base_offset if last_offset is None else last_offset + 1
    if first >= expected:
        return None
    return (
        f"remote segment {seg.remote.segment_id} ({seg.remote.layout}): offsets {first}-{expected - 1} not "
        f"read: {seg.path} ends at offset {first - 1} and the next segment starts at {expected}: "
        "those offsets are in no object of the store (a missing segment?)"
    )


def _decode_windows(b: Any, path: str, bad: list[dict[str, Any]] | None) -> Iterator[tuple[list, Any]]:
    """A large gzip or zstd batch a window of records at a time; a bad record ends it (named in ``bad``)."""
    from logdoctor.errors import FormatError
    from logdoctor.formats.columns import columns_of_records

    try:
        for records in b.record_windows():
            cols = columns_of_records(records, b.timestamp_type)
            yield [_Window(b, len(records))], cols
    except FormatError as exc:
        if bad is not None:
            bad.append(undecodable_batch(b, path, exc))


def read_slices(
    slices: Sequence[SegmentSlice],
    opts: ReadOptions,
    undecodable: list[dict[str, Any]] | None = None,
    problems: list[dict[str, Any]] | None = None,
    latest: Any = None,
    tombstones: bool = False,
) -> Iterator[pa.RecordBatch]:
    """The rows of one task's slices (:func:`logdoctor.spark.planning.task_groups`), as every output reads
    them: each slice's records (:func:`read_slice`), or with ``view=latest`` the latest record of each key
    of each partition (:func:`logdoctor.spark.latest.latest_rows`; ``latest``: a dict the per-partition
    :class:`~logdoctor.spark.latest.LatestStats` go into, keyed by (log dir, topic, partition);
    ``tombstones``: keep the keys whose latest record is a tombstone, for an upsert to delete them)."""
    from logdoctor.logdir import page_cache, read_rate

    # the task's read discipline, from the read options (a Python worker runs many tasks: set for each)
    page_cache.leave_as_found(not opts.keep_cache)
    read_rate.limit(opts.max_read_rate)
    if opts.view != "latest":
        for sl in slices:
            yield from read_slice(sl, opts, undecodable=undecodable, problems=problems)
        return
    from logdoctor.spark.latest import LatestStats, latest_rows
    from logdoctor.spark.planning import partition_groups

    for group in partition_groups(slices):
        seg = group[0].segment
        st = LatestStats()
        yield from latest_rows(
            group,
            opts,
            read_slice,
            stats=st,
            undecodable=undecodable,
            problems=problems,
            tombstones=tombstones,
        )
        if latest is not None:
            latest[(row_log_dir(seg), seg.topic, seg.partition)] = st


def read_slice(
    sl: SegmentSlice,
    opts: ReadOptions,
    undecodable: list[dict[str, Any]] | None = None,
    problems: list[dict[str, Any]] | None = None,
) -> Iterator[pa.RecordBatch]:
    """The records of one slice as Arrow batches of about ``opts.batch_rows`` rows. Batches whose records
    do not decode are skipped (appended to ``undecodable`` when given), the rows go on after them.

    ``problems``: where a remote-tier segment that cannot be read (whole) is reported, as a
    ``kafka-log-segments`` row would (path, valid_bytes, size_bytes, error), so that ``export`` need not
    read the remote tier a second time to find it."""
    from logdoctor.errors import FormatError
    from logdoctor.formats.records import CrcSkip, skip_crc_mismatches
    from logdoctor.logdir.read_plan import OffsetOrder
    from logdoctor.logdir.seek import segment_batches
    from logdoctor.logdir.transactions import ABORTED_CODE, READ_COMMITTED

    seg = sl.segment
    start, end = sl.start_offset, sl.end_offset
    pending: list = []
    rows = 0
    walk = segment_batches(
        seg,
        sl.read_from,
        verify_crc=False,
        stop=sl.emit_to,
        hint=sl.fetch_hint,
        hint_offset=end if sl.fetch_hint is not None else None,
    )
    crc_skipped: list[CrcSkip] = []
    batches = skip_crc_mismatches(walk, crc_skipped) if opts.verify_crc else walk
    walked_end, walked_last = sl.read_from, None
    whole = True  # read to the segment's end (a gap after it is then the store's)
    order = OffsetOrder(seg)  # each offset once: a batch going back is named, not read twice
    crc_told = 0
    stable_end = None if sl.txn is None else sl.txn.stable_end
    drop_aborted = sl.txn is not None and sl.txn.isolation == READ_COMMITTED and bool(sl.txn.spans)
    try:
        for batch in batches:
            walked_end, walked_last = batch.position + batch.size, batch.last_offset
            if batch.position < sl.emit_from:
                continue  # walked (and CRC-checked) only: an earlier slice emits it
            if sl.emit_to is not None and batch.position >= sl.emit_to:
                break
            if end is not None and batch.last_offset >= end and batch.base_offset >= end:
                whole = False
                order.beyond(batch)
                break
            while crc_told < len(crc_skipped):  # batches left out alone before this one: named, no gap
                order.passed(crc_skipped[crc_told].last_offset)
                crc_told += 1
            if not order.admit(batch):
                continue
            if start is not None and batch.last_offset < start:
                continue
            if stable_end is not None and batch.base_offset >= stable_end:
                continue  # at or above the LSO (or the high watermark): never decoded
            if batch.is_control and not opts.include_control:
                continue
            if (
                drop_aborted
                and batch.is_transactional
                and not batch.is_control
                and sl.txn.result_of(batch.producer_id, batch.base_offset) == ABORTED_CODE  # type: ignore[union-attr]
            ):
                continue  # read_committed: an aborted transaction's batch is never decoded
            pending.append(batch)
            rows += batch.record_count
            if rows >= opts.batch_rows:
                for good, cols in _decode(pending, seg.path, undecodable):
                    out = _build_arrow(seg, good, cols, opts, start, end, sl.txn, sl.features)
                    if out is not None:
                        yield out
                pending, rows = [], 0
    except FormatError as exc:
        # rows stop at the last valid batch; kafka-log-segments reports the damage
        if problems is not None and seg.remote is not None:
            problems.append(
                {
                    "path": seg.path,
                    "valid_bytes": walked_end,
                    "size_bytes": seg.size,
                    "error": remote_error_text(seg, exc, walked_last),
                }
            )
        whole = False
    except OSError:
        if seg.ranged:
            raise  # a remote read failed: fail the task (Spark retries it), never lose rows silently
        return  # a local file gone since planning: no rows, as before
    finally:
        batches.close()
        walk.close()
        if undecodable is not None:  # the CRC-bad batches this slice emits, skipped alone
            undecodable.extend(
                crc_skip_row(c, seg.path)
                for c in crc_skipped
                if c.position >= sl.emit_from
                and (sl.emit_to is None or c.position < sl.emit_to)
                and (start is None or c.last_offset >= start)
                and (end is None or c.base_offset is None or c.base_offset < end)
            )
    if crc_skipped and (walked_last is None or crc_skipped[-1].last_offset > walked_last):
        walked_last = crc_skipped[-1].last_offset  # named as skipped, not a gap in the store
    if problems is not None:
        problems.extend(
            {"path": seg.path, "valid_bytes": walked_end, "size_bytes": seg.size, "error": text}
            for text in order.problems
        )
    gap = remote_gap_text(seg, walked_last, end) if whole and problems is not None else None
    if gap is not None:
        problems.append({"path": seg.path, "valid_bytes": walked_end, "size_bytes": seg.size, "error": gap})  # type: ignore[union-attr]
    if pending:
        for good, cols in _decode(pending, seg.path, undecodable):
            out = _build_arrow(seg, good, cols, opts, start, end, sl.txn, sl.features)
            if out is not None:
                yield out


# --- kafka-log-segments -----------------------------------------------------------------------------


class KafkaLogSegmentsDataSource(DataSource):
    """``spark.read.format("kafka-log-segments").load(PATHS)``: one row per segment (.log file)."""

    @classmethod
    def name(cls) -> str:
        return "kafka-log-segments"

    def schema(self) -> str:
        from logdoctor.spark.schema import segments_ddl

        return segments_ddl()

    def reader(self, schema: Any) -> DataSourceReader:
        return KafkaLogSegmentsReader(dict(self.options))


SEGMENTS_PER_TASK_BYTES = 256 * 1024 * 1024
SEGMENTS_PER_TASK = 64


def segment_groups(segs: Sequence[SegmentRef]) -> list[tuple[SegmentRef, ...]]:
    """The segments in tasks of ``kafka-log-segments``: many small segments per task, a big one alone."""
    groups: list[tuple[SegmentRef, ...]] = []
    cur: list[SegmentRef] = []
    size = 0
    for s in segs:
        if cur and (size + s.size > SEGMENTS_PER_TASK_BYTES or len(cur) >= SEGMENTS_PER_TASK):
            groups.append(tuple(cur))
            cur, size = [], 0
        cur.append(s)
        size += s.size
    if cur:
        groups.append(tuple(cur))
    return groups


class KafkaLogSegmentsReader(DataSourceReader):
    def __init__(self, options: dict[str, str]) -> None:
        from logdoctor.logdir.read_options import ReadOptions

        self.options = options
        self.read_options = ReadOptions.from_options(options)  # validated early

    def partitions(self) -> Sequence[InputPartition]:
        from logdoctor.logdir.read_plan import one_remote_copy
        from logdoctor.spark.planning import read_plan

        plan = read_plan(_paths(self.options), self.read_options)
        segs = [s for ref in one_remote_copy(plan.refs) for s in ref.segments]
        groups = [SegmentPartition(g) for g in segment_groups(segs)]
        if plan.not_read:  # offsets the plan names as not read once: a row each (read_plan)
            groups.append(SegmentPartition(plan.not_read))  # type: ignore[arg-type]
        return groups

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        from logdoctor.logdir.read_plan import NotRead
        from logdoctor.spark.schema import segments_arrow_schema

        if partition is None or partition.value is None:
            return
        scans: dict[str, list[Any] | None] = {}
        check_records = self.read_options.check_records
        rows = []
        for s in partition.value:
            if isinstance(s, NotRead):
                rows.append(not_read_row(s))
                continue
            folder = s.storage.dirname(s.path)
            if folder not in scans:  # the scan reads local files only (module doc)
                scans[folder] = partition_findings(s.log_dir, folder) if not s.ranged else None
            rows.append(segment_summary(s, scans[folder], check_records))
        schema = segments_arrow_schema()
        yield pa.RecordBatch.from_pylist(rows, schema=schema)


def _ts(ms: int | None):
    import datetime as dt

    if ms is None or ms < 0:
        return None
    try:
        return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)
    except (OverflowError, OSError, ValueError):
        return None


def broker_time_index_max(path: str, storage: Storage | None = None) -> int | None:
    """The time index's last slot timestamp, as the broker takes it (every slot counts, KAFKA-10207)."""
    from logdoctor.formats.index import TIME_ENTRY_SIZE
    from logdoctor.logdir.storage import LOCAL

    storage = storage or LOCAL
    try:
        entry = storage.info(path)
        if entry is None or entry.is_dir():
            return None
        slots = entry.size // TIME_ENTRY_SIZE
        if slots == 0:
            return None
        tail = storage.read_range(path, (slots - 1) * TIME_ENTRY_SIZE, 8)
    except (OSError, ValueError):
        return None
    return int.from_bytes(tail, "big", signed=True) if len(tail) == 8 else None


def _remote_time_index_max(seg: SegmentRef) -> int | None:
    """The last time-index slot's timestamp of a remote-tier segment (its index from the store)."""
    from logdoctor.formats.index import TIME_ENTRY_SIZE
    from logdoctor.logdir.remote_reader import remote_index_bytes

    data = remote_index_bytes(seg, "timestamp")
    slots = len(data) // TIME_ENTRY_SIZE
    if slots == 0:
        return None
    return int.from_bytes(
        data[(slots - 1) * TIME_ENTRY_SIZE : (slots - 1) * TIME_ENTRY_SIZE + 8], "big", signed=True
    )


def partition_findings(log_dir: str, partition_dir: str, now_ms: int | None = None) -> list[Any] | None:
    """The scan's findings for one partition folder (logdoctor.checks, default depth); None if it fails.

    Checkpoint values come from the log dir as the scanner reads them (an unreadable checkpoint
    counts as empty, as LogManager.loadLogs does).
    """
    import time

    try:
        from logdoctor.checks.access import BrokerUser
        from logdoctor.checks.context import Depth, PartitionTask, ScanOptions
        from logdoctor.checks.partition import check_partition
        from logdoctor.logdir.model import LogDir
        from logdoctor.logdir.names import (
            CLEAN_SHUTDOWN_FILE,
            LOG_START_OFFSET_CHECKPOINT,
            RECOVERY_POINT_CHECKPOINT,
            REPLICATION_OFFSET_CHECKPOINT,
            parse_partition_dir,
        )

        name = os.path.basename(partition_dir.rstrip(os.sep))
        parsed = parse_partition_dir(name)
        if parsed is None:
            return None
        ld = LogDir(log_dir)

        def cp(which: str) -> int | None:
            read = ld.checkpoint(which)
            if read.error is not None or read.problems or parsed.is_metadata:
                return None
            return read.get(parsed.topic, parsed.partition)

        user = BrokerUser.owner_of(log_dir)
        options = ScanOptions(Depth.DEFAULT, now_ms or int(time.time() * 1000), user)
        task = PartitionTask(
            log_dir=log_dir,
            path=partition_dir,
            name=name,
            topic=parsed.topic,
            partition=parsed.partition,
            kind=parsed.kind.value,
            recovery_point=cp(RECOVERY_POINT_CHECKPOINT),
            log_start_checkpoint=cp(LOG_START_OFFSET_CHECKPOINT),
            high_watermark=cp(REPLICATION_OFFSET_CHECKPOINT),
            clean_shutdown=os.path.exists(os.path.join(log_dir, CLEAN_SHUTDOWN_FILE))
            and not parsed.is_metadata,
            broker_user=user,
            options=options,
        )
        return list(check_partition(task).findings)
    except Exception:  # the read's own findings still stand
        return None


def segment_findings(
    seg: SegmentRef,
    error: Any,
    valid_bytes: int,
    scan_findings: list[Any] | None = None,
    crc_mismatches: Sequence[Any] = (),
) -> list[dict[str, str]]:
    """Findings of one segment: the scan's findings about its files, plus LOG_CORRUPT from the read itself
    when the scan did not report it (or could not run): the framing error, and the batches left out alone
    for their CRC (``crc_mismatches``), as the scan reports a CRC mismatch."""
    out: list[dict[str, str]] = []
    prefix = os.path.join(os.path.dirname(seg.path), f"{seg.base_offset:020d}.")
    for f in scan_findings or ():
        if f.path.startswith(prefix):
            out.append({"code": f.code, "severity": f.severity.label, "message": f.message})
    if (error is not None or crc_mismatches) and not any(f["code"] == "LOG_CORRUPT" for f in out):
        parts = [c.describe() for c in crc_mismatches]
        if error is not None:
            parts.append(
                f"{error}; {seg.size - valid_bytes} bytes after the last valid batch (valid {valid_bytes})"
            )
        out.append({"code": "LOG_CORRUPT", "severity": "error", "message": "; ".join(parts)})
    return out


_CHECK_BATCHES = 256  # batches decoded at once by checkRecords


class _Summary:
    """What kafka-log-segments says about a segment's batches, gathered as they are walked (the batches
    are not kept: a remote segment is read in chunks, and only one or two are in memory at a time)."""

    def __init__(self, path: str = "", check_records: bool = False) -> None:
        self.path = path
        self.undecodable: list[dict[str, Any]] | None = [] if check_records else None
        self._pending: list[Any] = []
        self.batch_count = 0
        self.record_count = 0
        self.valid_bytes = 0
        self.last_offset: int | None = None
        self.codecs: set[str] = set()
        self.magics: set[int] = set()
        self.min_ts: int | None = None
        self.max_ts: int | None = None
        self.error: Exception | None = None
        self.crc_mismatches: list[Any] = []  # CrcSkip: batches left out alone for their CRC
        self._crc_told = 0  # of crc_mismatches, told to order
        self.order: Any = None  # logdir.read_plan.OffsetOrder of the segment, when given

    def walk(self, batches: Iterator[Any]) -> None:
        """Summarize a walk made with ``verify_crc=False``: a batch whose CRC does not match is left out
        alone where the framing goes on after it (``crc_mismatches``), else the walk stops there."""
        from logdoctor.errors import FormatError
        from logdoctor.formats.records import skip_crc_mismatches

        try:
            for b in skip_crc_mismatches(batches, self.crc_mismatches):
                self.add(b)
        except FormatError as exc:
            self.error = exc
        self.valid_bytes += sum(c.size for c in self.crc_mismatches)  # the framing is intact over them
        if self.crc_mismatches and (
            self.last_offset is None or self.crc_mismatches[-1].last_offset > self.last_offset
        ):
            self.last_offset = self.crc_mismatches[-1].last_offset
        self._check()

    def _check(self) -> None:
        """Decode the records of the pending batches (checkRecords), naming those that do not decode."""
        if self._pending:
            for _ in _decode(self._pending, self.path, self.undecodable):
                pass
            self._pending = []

    def add(self, b: Any) -> None:
        if self.order is not None:
            while self._crc_told < len(self.crc_mismatches):  # left out alone before b: no gap
                self.order.passed(self.crc_mismatches[self._crc_told].last_offset)
                self._crc_told += 1
            self.order.admit(b)
        if self.undecodable is not None:
            self._pending.append(b)
            if len(self._pending) >= _CHECK_BATCHES:
                self._check()
        self.batch_count += 1
        self.valid_bytes += b.size
        self.last_offset = b.last_offset
        with contextlib.suppress(Exception):  # a legacy wrapper whose inner messages do not decode
            self.record_count += b.record_count
        self.codecs.add(b.compression.label)
        self.magics.add(int(b.magic))
        mts = b.max_timestamp
        if mts >= 0:
            self.max_ts = mts if self.max_ts is None else max(self.max_ts, mts)
        try:
            fts = b.first_timestamp
        except Exception:
            fts = mts
        for t in (fts, mts):
            if t >= 0:
                self.min_ts = t if self.min_ts is None else min(self.min_ts, t)


def not_read_row(p: Any) -> dict[str, Any]:
    """The kafka-log-segments row of offsets the read plan names as not read once (no batch read)."""
    return {
        "log_dir": None,
        "topic": p.topic,
        "partition": p.partition,
        "path": p.path,
        "base_offset": p.first_offset,
        "last_offset": p.last_offset,
        "size_bytes": 0,
        "record_count": 0,
        "batch_count": 0,
        "min_timestamp": None,
        "max_timestamp": None,
        "time_index_max_timestamp": None,
        "codecs": [],
        "magic_versions": [],
        "valid_bytes": 0,
        "error": p.error,
        "findings": [{"code": "REMOTE_OFFSETS_LOST", "severity": "error", "message": p.error}]
        if p.lost
        else [],
        "undecodable": None,
        "crc_mismatches": None,
    }


def _torn_at_the_plans_edge(seg: SegmentRef, error: Exception | None) -> bool:
    """Whether ``error`` is a batch torn at the planned end of a live partition's active segment (the last
    one planned, its log dir's ``.lock`` held): a batch the broker was in the middle of writing when the
    plan listed the size. Kafka's reader takes a partial batch at the end as not yet written
    (K:clients/.../record/FileLogInputStream.nextBatch), so it is no damage (docs/live-broker.md)."""
    from logdoctor.errors import TruncatedError
    from logdoctor.logdir.lock import lock_holder

    if not isinstance(error, TruncatedError) or seg.ranged or seg.next_base_offset is not None:
        return False
    try:
        return lock_holder(seg.log_dir) is not None
    except OSError:
        return False


def segment_summary(
    seg: SegmentRef, scan_findings: list[Any] | None = None, check_records: bool = False
) -> dict[str, Any]:
    """One row of kafka-log-segments (never raises on bad bytes; a remote read failure raises OSError).
    ``check_records``: also decode every valid batch's records and list those that do not decode
    (column ``undecodable``; null without it)."""
    from logdoctor.formats.records import iter_batches
    from logdoctor.logdir.files import map_file
    from logdoctor.logdir.read_plan import OffsetOrder

    error_text: str | None = None
    summary = _Summary(seg.path, check_records)
    summary.order = OffsetOrder(seg)
    size = 0
    if not seg.ranged:
        try:
            # up to its planned size; a segment renamed .deleted since the plan is read there (map_file)
            buf = map_file(seg.path, seg.size)
        except FileNotFoundError:
            buf = memoryview(b"")
            # a running broker's retention or log cleaner removed it since the plan: no damage, and its
            # records are not exported (docs/live-broker.md)
            error_text = f"{seg.path}: removed since the plan (a running broker's retention or log cleaner)"
        except OSError as exc:
            buf = memoryview(b"")
            error_text = f"{seg.path}: cannot read: {exc.strerror}"
        size = len(buf)
        summary.walk(iter_batches(buf, source=seg.path, verify_crc=False))
        if _torn_at_the_plans_edge(seg, summary.error):
            summary.error = None  # a batch a running broker was writing at the plan's moment: not yet written
    elif seg.remote is not None:  # a remote-tier segment: its object(s) may be bad before any batch
        from logdoctor.errors import FormatError
        from logdoctor.logdir.ranged import iter_ranged_batches
        from logdoctor.logdir.remote_reader import open_remote_log

        try:
            with open_remote_log(seg) as reader:
                size = reader.size
                summary.walk(iter_ranged_batches(reader, source=seg.path, verify_crc=False))
        except FormatError as exc:
            summary.error = exc
    else:
        from logdoctor.logdir.ranged import iter_ranged_batches

        with seg.storage.open(seg.path) as reader:
            size = reader.size
            summary.walk(iter_ranged_batches(reader, source=seg.path, verify_crc=False))
    error = summary.error
    if error is not None:
        error_text = str(error)
        if seg.remote is not None:  # name the offsets that could not be read
            error_text = remote_error_text(seg, error, summary.last_offset)
    elif seg.remote is not None:
        error_text = remote_gap_text(seg, summary.last_offset)
    if summary.order.problems:  # offsets going back (or, remote, skipped or past the segment's end)
        error_text = "; ".join([*([error_text] if error_text else []), *summary.order.problems])
    findings = segment_findings(seg, error, summary.valid_bytes, scan_findings, summary.crc_mismatches)
    return {
        "log_dir": row_log_dir(seg),
        "topic": seg.topic,
        "partition": seg.partition,
        "path": seg.path,
        "base_offset": seg.base_offset,
        "last_offset": summary.last_offset,
        "size_bytes": size if size else seg.size,
        "record_count": summary.record_count,
        "batch_count": summary.batch_count,
        "min_timestamp": _ts(summary.min_ts),
        "max_timestamp": _ts(summary.max_ts),
        "time_index_max_timestamp": _ts(
            broker_time_index_max(seg.time_index_path, seg.storage)
            if seg.remote is None
            else _remote_time_index_max(seg)
        ),
        "codecs": sorted(summary.codecs),
        "magic_versions": sorted(summary.magics),
        "valid_bytes": summary.valid_bytes,
        "error": error_text,
        "findings": findings,
        "undecodable": (
            None
            if summary.undecodable is None
            else [{k: v for k, v in u.items() if k != "path"} for u in summary.undecodable]
        ),
        "crc_mismatches": [
            {k: v for k, v in crc_skip_row(c, seg.path).items() if k != "path"}
            for c in summary.crc_mismatches
        ],
    }


def register(spark: Any) -> None:
    """Register the ``kafka-log`` and ``kafka-log-segments`` data sources on a SparkSession."""
    spark.dataSource.register(KafkaLogDataSource)
    spark.dataSource.register(KafkaLogSegmentsDataSource)
