"""Which rows of an Iceberg table the latest view's upsert deletes, with memory bounded by a chunk of keys.

The upsert (:meth:`.iceberg.IcebergTable.upsert`) deletes every row whose (topic, partition, key) has a new
latest record. The changed keys are read from the task files in chunks of at most :data:`CHUNK_KEYS` rows
(:func:`key_chunks`, batch by batch); each chunk is matched against the key columns of the data files its
(topic, partition) pairs and key range may touch (:func:`rows_to_delete`: Arrow's ``is_in``, the file's rows
in scan order), and the matches are kept as one boolean per row of a touched file. Memory is then a chunk of
keys, a file's three key columns and those booleans: never a set of every changed key, whatever their
number. The data files are read once per chunk; the rewrite itself (:func:`rewrite`) reads a touched file
whole, as pyiceberg's own copy-on-write delete does."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

#: changed keys matched at once: a chunk of 40-byte keys and Arrow's hash set of it take about 100 MiB (the
#: whole upsert of 5,000,000 keys peaked at 952 MiB with chunks of 1 Mi keys)
CHUNK_KEYS = 1 << 18
#: rows read from a task file at a time
_BATCH = 1 << 16
_KEY_COLUMNS = ("topic", "partition", "key")


def key_chunks(paths: Sequence[str], limit: int | None = None) -> Iterator[pa.Table]:
    """The (topic, partition, key) rows with a key of the Parquet files ``paths`` (local paths or URIs), in
    tables of at most ``limit`` rows (:data:`CHUNK_KEYS` when None), read batch by batch."""
    from logdoctor.spark.tables.files import filesystem

    limit = CHUNK_KEYS if limit is None else limit
    held: list[pa.RecordBatch] = []
    count = 0
    for path in paths:
        fs, rel = filesystem(path)
        with fs.open_input_file(rel) as fh:
            for batch in pq.ParquetFile(fh).iter_batches(batch_size=_BATCH, columns=list(_KEY_COLUMNS)):
                batch = batch.filter(pc.is_valid(batch.column("key")))
                while batch.num_rows:
                    take = batch.slice(0, limit - count)
                    held.append(take)
                    count += take.num_rows
                    batch = batch.slice(take.num_rows)
                    if count == limit:
                        yield pa.Table.from_batches(held)
                        held, count = [], 0
    if count:
        yield pa.Table.from_batches(held)


def chunk_groups(chunk: pa.Table) -> dict[tuple[str, int], pa.Array]:
    """The chunk's keys per (topic, partition)."""
    pairs = chunk.group_by(["topic", "partition"]).aggregate([]).to_pylist()
    if len(pairs) == 1:
        return {(pairs[0]["topic"], int(pairs[0]["partition"])): chunk.column("key").combine_chunks()}
    out: dict[tuple[str, int], pa.Array] = {}
    for pair in pairs:
        t, p = pair["topic"], int(pair["partition"])
        where = pc.and_(pc.equal(chunk.column("topic"), t), pc.equal(chunk.column("partition"), p))
        out[(t, p)] = chunk.filter(where).column("key").combine_chunks()
    return out


def rows_to_delete(
    chunks: Iterable[pa.Table],
    plan: Callable[[dict[tuple[str, int], pa.Array]], Iterable[Any]],
    read_keys: Callable[[Any], pa.Table],
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(the scan task of every data file with a row to delete, by path; its rows to delete, one boolean per
    row in scan order). ``plan(groups)``: the scan tasks of the files that may hold the keys ``groups``;
    ``read_keys(task)``: that file's topic, partition and key columns, its rows in scan order."""
    tasks: dict[str, Any] = {}
    masks: dict[str, np.ndarray] = {}
    for chunk in chunks:
        groups = chunk_groups(chunk)
        for task in plan(groups):
            path = task.file.file_path
            keys = read_keys(task)
            hit = masks.get(path)
            if hit is None:
                hit = np.zeros(keys.num_rows, dtype=bool)
            for (t, p), ks in groups.items():
                here = pc.and_(pc.equal(keys.column("topic"), t), pc.equal(keys.column("partition"), p))
                match = pc.and_(here, pc.is_in(keys.column("key"), value_set=ks))
                hit |= match.fill_null(False).to_numpy(zero_copy_only=False)
            if hit.any():
                tasks[path], masks[path] = task, hit
    return tasks, masks


def key_filter(groups: dict[tuple[str, int], pa.Array]) -> Any:
    """An Iceberg expression that holds for every row of ``groups`` (per pair: its topic, partition and the
    range of its keys): a scan planned with it leaves out the files whose partition or key bounds exclude
    them all."""
    import functools

    from pyiceberg.expressions import And, EqualTo, GreaterThanOrEqual, LessThanOrEqual, Or

    terms = []
    for (t, p), ks in groups.items():
        lo, hi = pc.min_max(ks).values()
        terms.append(
            And(
                And(EqualTo("topic", t), EqualTo("partition", p)),
                And(GreaterThanOrEqual("key", lo.as_py()), LessThanOrEqual("key", hi.as_py())),
            )
        )
    return functools.reduce(Or, terms)


def rewrite(txn: Any, io: Any, tasks: dict[str, Any], masks: dict[str, np.ndarray]) -> None:
    """In ``txn``, one overwrite snapshot: each file of ``tasks`` is removed and, when rows remain, replaced
    by a file of its rows not in ``masks`` (pyiceberg's writer: the table's partition spec and field ids)."""
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan, _dataframe_to_data_files

    if not tasks:
        return
    meta = txn.table_metadata
    write_uuid = uuid.uuid4()
    import itertools

    counter = itertools.count(0)
    with txn.update_snapshot().overwrite() as snapshot:
        snapshot.commit_uuid = write_uuid
        for path, task in tasks.items():
            rows = ArrowScan(
                table_metadata=meta, io=io, projected_schema=meta.schema(), row_filter=AlwaysTrue()
            ).to_table(tasks=[task])
            mask = masks[path]
            if rows.num_rows != len(mask):
                raise ValueError(f"{path}: {rows.num_rows} rows read, {len(mask)} matched")
            kept = rows.filter(pa.array(~mask))
            del rows
            snapshot.delete_data_file(task.file)
            if kept.num_rows:
                for new in _dataframe_to_data_files(
                    table_metadata=meta, df=kept, io=io, write_uuid=write_uuid, counter=counter
                ):
                    snapshot.append_data_file(new)
