"""The ``kafka-log`` rows in Arrow: the decoded record columns of a run of batches built into a record batch
of :func:`logdoctor.spark.schema.records_arrow_schema` (batch fields spread over their records, each
record's transaction result, the ``decoded`` column's JSON), filtered to the slice's offsets and what its
isolation level leaves out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from logdoctor.spark.sources.columns import row_log_dir

if TYPE_CHECKING:
    import pyarrow as pa

    from logdoctor.logdir.refs import SegmentRef
    from logdoctor.logdir.slices import ReadOptions
    from logdoctor.logdir.transactions import SegmentTransactions


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
