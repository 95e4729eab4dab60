"""Records as columns, for the Spark pipeline and bulk readers: :func:`decode_columns` and
:class:`RecordColumns` (numpy offsets and timestamps, Arrow keys, values and headers over the
decoder's own buffers, no second copy of the payload)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from logdoctor.formats.batch_v2 import RecordBatchV2, decode_v2_run
from logdoctor.formats.record_types import Batch, Record, TimestampType
from logdoctor.formats.v2_twin import column_buffers

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

__all__ = ["RecordColumns", "columns_of_records", "decode_columns"]

_INT32_MAX = 0x7FFFFFFF


@dataclass(slots=True)
class RecordColumns:
    """Records of one or more batches as columns, for the Spark pipeline and benchmarks.

    ``offsets``/``timestamps`` are int64 numpy arrays, ``timestamp_types`` int8 (0 CreateTime,
    1 LogAppendTime, -1 none for magic 0). ``keys``/``values`` are Arrow binary arrays (null = null
    key/value; large_binary past 2 GiB), ``headers`` an Arrow list<struct<key: string, value: binary>>
    array. The numpy arrays and Arrow buffers share the memory the decoder wrote (no copy).
    """

    offsets: np.ndarray
    timestamps: np.ndarray
    timestamp_types: np.ndarray
    keys: pa.Array
    values: pa.Array
    headers: pa.Array

    def __len__(self) -> int:
        return len(self.offsets)

    def to_arrow(self) -> pa.RecordBatch:
        """One Arrow record batch: key, value, offset, timestamp, timestampType, headers."""
        import pyarrow as pa

        return pa.RecordBatch.from_arrays(
            [
                self.keys,
                self.values,
                pa.array(self.offsets, type=pa.int64()),
                pa.array(self.timestamps, type=pa.int64()),
                pa.array(self.timestamp_types.astype("int32"), type=pa.int32()),
                self.headers,
            ],
            names=["key", "value", "offset", "timestamp", "timestampType", "headers"],
        )


def decode_columns(batches: Iterable[Batch]) -> RecordColumns:
    """Decode the records of many batches into one RecordColumns.

    Consecutive v2 batches of one buffer (as ``iter_batches`` yields them) are decoded by one C
    call that writes every column in a single pass: each key and value is copied once, from the
    segment (uncompressed) or from the decompressed records (lz4 is decompressed in that call;
    gzip, snappy and zstd by ``codecs`` first). v0/v1 entries go through ``records()``, consecutive
    ones of a timestamp type as one part (a v0/v1 entry is often one record: a part each cost ~1 ms).
    Raises the typed error of the first bad batch (CorruptRecordError, UnsupportedError, ...).
    """
    parts: list[RecordColumns] = []
    run: list[RecordBatchV2] = []
    legacy: list[Record] = []
    legacy_type = None

    def flush() -> None:
        nonlocal run, legacy
        if run:
            parts.append(_columns_from_buffers(decode_v2_run(run)))
        elif legacy:
            parts.append(_columns_from_buffers(_buffers_from_records(legacy, legacy_type)))
        run, legacy = [], []

    for batch in batches:
        if isinstance(batch, RecordBatchV2):
            if legacy or (run and batch.buffer is not run[0].buffer):
                flush()
            run.append(batch)
            continue
        if run or (legacy and batch.timestamp_type != legacy_type):
            flush()
        legacy.extend(batch.records())
        legacy_type = batch.timestamp_type
    flush()
    if not parts:
        parts.append(_columns_from_buffers(decode_v2_run([])))
    return parts[0] if len(parts) == 1 else _concat_columns(parts)


def columns_of_records(records: list[Record], timestamp_type: TimestampType) -> RecordColumns:
    """RecordColumns of already decoded records of one batch (a window of a large batch's records)."""
    return _columns_from_buffers(_buffers_from_records(records, timestamp_type))


def _arrow_binary(n: int, nulls: int, validity, ends, data, *, string: bool = False) -> pa.Array:
    """An Arrow binary (or string) array over the decoder's buffers (int64 ends, n + 1 of them)."""
    import numpy as np
    import pyarrow as pa

    offsets = np.frombuffer(ends, dtype=np.int64)
    large = bool(offsets[-1] > _INT32_MAX)
    if string:
        typ = pa.large_string() if large else pa.string()
    else:
        typ = pa.large_binary() if large else pa.binary()
    arr = pa.Array.from_buffers(
        typ,
        n,
        [
            pa.py_buffer(validity) if nulls else None,
            pa.py_buffer(offsets if large else offsets.astype(np.int32)),
            pa.py_buffer(data),
        ],
        null_count=nulls,
    )
    if string:
        try:
            arr.validate(full=True)
        except pa.ArrowInvalid:  # invalid UTF-8: decode like Java's new String(bytes, UTF_8)
            raw = arr.view(pa.large_binary() if large else pa.binary()).to_pylist()
            arr = pa.array([b.decode("utf-8", "replace") for b in raw], type=typ)
    return arr


def _columns_from_buffers(t: tuple) -> RecordColumns:
    import numpy as np
    import pyarrow as pa

    (n, offsets, timestamps, ts_types, key_nulls, key_valid, key_ends, key_data, value_nulls, value_valid,
     value_ends, value_data, list_ends, nh, hkey_ends, hkey_data, hvalue_nulls, hvalue_valid, hvalue_ends,
     hvalue_data) = t  # fmt: skip
    hkeys = _arrow_binary(nh, 0, None, hkey_ends, hkey_data, string=True)
    hvalues = _arrow_binary(nh, hvalue_nulls, hvalue_valid, hvalue_ends, hvalue_data)
    struct_arr = pa.StructArray.from_arrays([hkeys, hvalues], names=["key", "value"])
    list_offsets = np.frombuffer(list_ends, dtype=np.int64)
    if nh > _INT32_MAX:  # pragma: no cover - 2**31 headers
        headers = pa.LargeListArray.from_arrays(pa.array(list_offsets), struct_arr)
    else:
        headers = pa.ListArray.from_arrays(pa.array(list_offsets.astype(np.int32)), struct_arr)
    return RecordColumns(
        offsets=np.frombuffer(offsets, dtype=np.int64),
        timestamps=np.frombuffer(timestamps, dtype=np.int64),
        timestamp_types=np.frombuffer(ts_types, dtype=np.int8),
        keys=_arrow_binary(n, key_nulls, key_valid, key_ends, key_data),
        values=_arrow_binary(n, value_nulls, value_valid, value_ends, value_data),
        headers=headers,
    )


def _buffers_from_records(records: list[Record], timestamp_type: TimestampType) -> tuple:
    """The decode_batch_columns tuple for records decoded one by one (v0/v1 entries)."""
    headers = [h for r in records for h in r.headers]
    return column_buffers(
        [r.offset for r in records],
        [r.timestamp for r in records],
        [int(timestamp_type)] * len(records),
        [r.key for r in records],
        [r.value for r in records],
        [0, *itertools.accumulate(len(r.headers) for r in records)],
        [h.key.encode("utf-8", "surrogatepass") for h in headers],
        [h.value for h in headers],
    )


def _concat_columns(parts: list[RecordColumns]) -> RecordColumns:
    """Several RecordColumns as one (a copy: only for mixed v0/v1/v2 input or several buffers)."""
    import numpy as np
    import pyarrow as pa

    def cat(arrays: list[pa.Array]) -> pa.Array:
        types = {a.type for a in arrays}
        if len(types) > 1:  # binary and large_binary: all large
            large = next(t for t in types if t in (pa.large_binary(), pa.large_string()))
            arrays = [a.cast(large) for a in arrays]
        return pa.concat_arrays(arrays)

    return RecordColumns(
        offsets=np.concatenate([p.offsets for p in parts]),
        timestamps=np.concatenate([p.timestamps for p in parts]),
        timestamp_types=np.concatenate([p.timestamp_types for p in parts]),
        keys=cat([p.keys for p in parts]),
        values=cat([p.values for p in parts]),
        headers=pa.concat_arrays([p.headers for p in parts]),
    )
