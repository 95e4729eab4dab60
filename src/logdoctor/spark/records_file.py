"""A Parquet file of records with export's schema, written with pyarrow alone (no Spark session): the
records ``repair`` removes are saved this way before a truncation (:mod:`logdoctor.repair.removed_records`)
so that people read them as they read an export (same columns, :mod:`logdoctor.spark.schema`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from logdoctor.repair.removed_records import RemovedRecords

__all__ = ["write_removed_records"]


def write_removed_records(removed: RemovedRecords) -> int:
    """Write the intact records of ``removed`` to ``removed.destination`` (atomically: a temporary file
    renamed, fsynced: :func:`~logdoctor.logdir.atomic.atomic_write`); returns the rows written. Control
    records are kept (``is_control``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from logdoctor.formats.records import iter_batches
    from logdoctor.logdir import files
    from logdoctor.logdir.atomic import atomic_write
    from logdoctor.logdir.names import parse_segment_file
    from logdoctor.logdir.refs import SegmentRef
    from logdoctor.logdir.slices import ReadOptions
    from logdoctor.spark.schema import records_arrow_schema
    from logdoctor.spark.sources.batch_decode import _decode
    from logdoctor.spark.sources.records_arrow import _build_arrow

    opts = ReadOptions(include_control=True)
    parts: list[pa.RecordBatch] = []
    for run in removed.runs:
        buf = files.read_range(run.path, run.start, run.end - run.start)  # the intact batches only
        batches: Sequence = list(iter_batches(buf, source=run.path, verify_crc=True, base_position=run.start))
        parsed = parse_segment_file(os.path.basename(run.path))
        base = parsed.base_offset if parsed is not None else 0
        size = os.path.getsize(run.path)
        seg = SegmentRef(removed.log_dir, removed.topic, removed.partition, base, run.path, size)
        for good, cols in _decode(list(batches), run.path):
            rb = _build_arrow(seg, good, cols, opts, None, None)
            if rb is not None:
                parts.append(rb)
    table = pa.Table.from_batches(parts, schema=records_arrow_schema(False))
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    os.makedirs(os.path.dirname(removed.destination), exist_ok=True)
    atomic_write(removed.destination, memoryview(sink.getvalue()))
    return table.num_rows
