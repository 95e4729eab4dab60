"""The append of ``--view cdc`` into an Iceberg or Delta table: the rows the newer events changed upserted by
primary key and the keys they deleted removed, in one commit of the format's library (docs/cdc.md).

- Iceberg (pyiceberg): one transaction deletes the rows of every changed or deleted key (overwrite by
  filter: the data files holding them rewritten without them; every row when a truncate is among the
  events), adds the file of the changed rows and sets the properties.
- Delta (delta-rs): one MERGE on the key columns: a changed key is updated or inserted, a deleted key
  deleted; with a truncate among the events, every row the source does not name is deleted too.

A process killed before the catalog swap (Iceberg) or the log entry (Delta) leaves the previous version.
Every commit of the cdc view's tables (these and the whole table's, ``cdc_job``) deletes the data files it
wrote only when it knows they are not the table's (:func:`.files.keeping_files_unless_known`): after a
:class:`~logdoctor.spark.tables.CommitUnknownError` (the commit call failed and the table could not be
read to tell whether it landed) or a Ctrl-C, they are kept, as the typed tables' export keeps them, and
the error says so; the next export's sweep removes those no commit references.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from logdoctor.spark.tables import COMMIT_PROPERTY
from logdoctor.spark.tables.files import keeping_files_unless_known

#: the MERGE source's column telling a deleted key (true) from a changed row (false)
DELETE_FLAG = "__logdoctor_delete"


def key_filter(keys: pa.Table) -> Any:
    """The pyiceberg expression matching the rows whose key columns equal one row of ``keys``."""
    from pyiceberg.expressions import And, EqualTo, In, Or

    names = keys.column_names
    if len(names) == 1:
        return In(names[0], set(keys.column(0).to_pylist()))
    rows = zip(*(keys.column(n).to_pylist() for n in names), strict=True)
    terms = (functools.reduce(And, (EqualTo(n, v) for n, v in zip(names, r, strict=True))) for r in rows)
    return functools.reduce(Or, terms)


def commit_iceberg(
    table: Any,
    layout: Any,
    rows: pa.Table,
    deleted: pa.Table,
    truncate: bool,
    schema: pa.Schema,
    properties: Mapping[str, str],
    pause: Callable[[str], None] | None = None,
) -> None:
    """One transaction of ``table`` (:class:`~logdoctor.spark.tables.iceberg.IcebergTable`): the rows of
    the keys of ``rows`` and ``deleted`` (all rows when ``truncate``) deleted, ``rows`` added."""
    from pyiceberg.expressions import AlwaysTrue

    from logdoctor.spark.tables import TableError
    from logdoctor.spark.tables.files import write_file

    written = write_file(rows, layout, 0, 0, {}) if rows.num_rows else None
    marker = uuid.uuid4().hex
    properties = {**properties, COMMIT_PROPERTY: marker}
    with keeping_files_unless_known(layout) as committed:
        try:
            if pause is not None:
                pause("before")
            txn = table._transaction(schema, "append")
            keys = pa.concat_tables([rows.select(deleted.column_names).cast(deleted.schema), deleted])
            if truncate:
                txn.delete(AlwaysTrue())
            elif keys.num_rows:
                txn.delete(key_filter(keys))
            if written is not None:
                txn.add_files([written.path], snapshot_properties=dict(properties))
            txn.set_properties(dict(properties))
            txn.commit_transaction()
            if written is not None:
                committed.append(written.path)
            if pause is not None:
                pause("after")
        except TableError:
            raise
        except KeyboardInterrupt:
            raise
        except Exception as exc:
            # landed anyway (a failure after the catalog swap): the commit is the table's, file and all; the
            # table unreadable to tell: CommitUnknownError, the file kept
            table._after_failed_commit(marker, "the cdc append", exc)
            if written is not None and written.path not in committed:
                committed.append(written.path)
    table._reload()


def merge_source(rows: pa.Table, deleted: pa.Table) -> pa.Table:
    """The MERGE source: ``rows`` then one row per deleted key (its key columns, the others null), every
    column nullable, and :data:`DELETE_FLAG`."""
    schema = pa.schema([f.with_nullable(True) for f in rows.schema])
    changed = rows.cast(schema).append_column(DELETE_FLAG, pa.array([False] * rows.num_rows, pa.bool_()))
    gone_cols = [
        deleted.column(f.name).cast(f.type)
        if f.name in deleted.column_names
        else pa.nulls(deleted.num_rows, f.type)
        for f in schema
    ]
    gone = pa.Table.from_arrays(gone_cols, schema=schema).append_column(
        DELETE_FLAG, pa.array([True] * deleted.num_rows, pa.bool_())
    )
    return pa.concat_tables([changed, gone])


def commit_delta(
    table: Any,
    rows: pa.Table,
    deleted: pa.Table,
    truncate: bool,
    properties: Mapping[str, str],
    pause: Callable[[str], None] | None = None,
) -> None:
    """One MERGE of ``table`` (:class:`~logdoctor.spark.tables.delta.DeltaLakeTable`) on the key columns of
    ``deleted``: ``rows`` upserted, ``deleted``'s keys deleted, every other row too when ``truncate``."""
    from deltalake import CommitProperties

    from logdoctor.spark.tables import TableError

    keys: Sequence[str] = deleted.column_names
    source = merge_source(rows, deleted)
    on = " AND ".join(f't."{k}" = s."{k}"' for k in keys)
    if not table._loaded:
        table.load()
    marker = uuid.uuid4().hex
    first = table._table.version() + 1
    try:
        if pause is not None:
            pause("before")
        merger = (
            table._table.merge(
                source,
                predicate=on,
                source_alias="s",
                target_alias="t",
                commit_properties=CommitProperties(custom_metadata={**properties, COMMIT_PROPERTY: marker}),
            )
            .when_matched_update_all(predicate=f's."{DELETE_FLAG}" = false', except_cols=[DELETE_FLAG])
            .when_matched_delete(predicate=f's."{DELETE_FLAG}" = true')
            .when_not_matched_insert_all(predicate=f's."{DELETE_FLAG}" = false', except_cols=[DELETE_FLAG])
        )
        if truncate:
            merger = merger.when_not_matched_by_source_delete()
        merger.execute()
        if pause is not None:
            pause("after")
    except TableError:
        raise
    except Exception as exc:  # landed anyway (a failure after the log entry): the MERGE is the table's
        table._after_failed_commit(marker, first, "the cdc append", exc)
    table._reload()
