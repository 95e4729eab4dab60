"""Iceberg tables through pyiceberg: the catalog, the schema check and the one-transaction commit.

The embedded default catalog is pyiceberg's ``SqlCatalog`` on a SQLite file beside the table
(``OUT.catalog.db`` for ``--out OUT``): nothing to start. ``--catalog KEY=VALUE`` properties select
any catalog pyiceberg supports instead (``type=rest uri=...``, ``type=glue``, ``type=hive``,
``uri=sqlite:///...``); ``--out`` is then the table's location.

The commit is one pyiceberg transaction: (create the table with its partition spec when it does not
exist,) add the missing logdoctor columns by schema evolution (``union_by_name``: metadata only),
drop every data file for ``--mode overwrite`` (the files stay for time travel), register the written
files with ``Transaction.add_files`` (pyiceberg reads their footers: manifests and statistics are the
library's) and set the table properties. ``commit_transaction`` swaps the table's metadata pointer in
the catalog atomically, so a reader sees the old snapshot or the new one.
"""

from __future__ import annotations

import contextlib
import os
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from logdoctor.spark.tables import (
    COMMIT_PROPERTY,
    TableError,
    TableExistsError,
    TableSchemaError,
    after_failed_commit,
)
from logdoctor.spark.tables.files import last_offsets

DEFAULT_IDENTIFIER = "logdoctor.records"
COMMIT_RETRIES = 4


def keep_null_lists() -> None:
    """pyiceberg 0.12 reads a null list of structs as ``[]``: its projection
    (``pyiceberg.io.pyarrow.ArrowProjectionVisitor.list``) builds the list again from the offsets alone,
    and the validity goes (apache/iceberg-python#3833; the fix, #3834, carries the mask over, as this
    does). The data files hold the null, and Spark's and Parquet's readers read it; this makes pyiceberg's
    scan in this process read it too (idempotent): logdoctor's own reads of a table, and the read-back
    line an export prints. Else a row rewritten by the latest view's upsert or filled by a CDC append
    would be written back with ``[]``."""
    from pyiceberg.io.pyarrow import ArrowProjectionVisitor

    projected = ArrowProjectionVisitor.list
    if getattr(projected, "keeps_nulls", False):
        return

    def list_with_nulls(self: Any, list_type: Any, list_array: Any, value_array: Any) -> Any:
        out = projected(self, list_type, list_array, value_array)
        if out is None or not list_array.null_count or out.null_count == list_array.null_count:
            return out
        return type(out).from_arrays(out.offsets, out.values, type=out.type, mask=list_array.is_null())

    list_with_nulls.keeps_nulls = True  # type: ignore[attr-defined]
    ArrowProjectionVisitor.list = list_with_nulls  # type: ignore[method-assign]


def default_catalog_file(location: str) -> str:
    """The SQLite file of the embedded catalog for a local table folder ``location``."""
    return os.path.abspath(location.rstrip("/")) + ".catalog.db"


def catalog_properties(location: str, given: Mapping[str, str] | None) -> dict[str, str]:
    from logdoctor.spark.export import is_local_path

    props = dict(given or {})
    if not props:
        if not is_local_path(location):
            raise TableError(
                f"--format iceberg --out {location}: the embedded SQLite catalog lives beside a local "
                "folder only; give the catalog with --catalog (e.g. --catalog uri=sqlite:////path/cat.db "
                "or --catalog type=rest --catalog uri=https://...)"
            )
        props = {"type": "sql", "uri": f"sqlite:///{default_catalog_file(location)}"}
    # pyiceberg's FileIO reads S3 settings from the catalog properties only: take AWS_* as everywhere else
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint and location.startswith(("s3://", "s3a://")):
        props.setdefault("s3.endpoint", endpoint)
    if os.environ.get("AWS_DEFAULT_REGION") and location.startswith(("s3://", "s3a://")):
        props.setdefault("s3.region", os.environ["AWS_DEFAULT_REGION"])
    is_sql = str(props.get("uri", "")).startswith(("sqlite", "postgresql"))
    props.setdefault("type", "sql" if is_sql else "rest")
    if props["type"] == "sql":
        props.setdefault("init_catalog_tables", "true")
    return props


def _arrow_schema(export_schema: Any) -> Any:
    """Iceberg has no 16-bit integer: the table's producer_epoch is an int (the files are written so)."""
    import pyarrow as pa

    i = export_schema.get_field_index("producer_epoch")
    return export_schema.set(i, pa.field("producer_epoch", pa.int32())) if i >= 0 else export_schema


def _type_text(t: Any) -> str:
    return re.sub(r"-?\d+: ", "", str(t)).replace("required ", "").replace("optional ", "")


class IcebergTable:
    """One Iceberg table (it may not exist yet) in a catalog."""

    format = "iceberg"

    def __init__(
        self,
        location: str,
        identifier: str | None = None,
        catalog: Mapping[str, str] | None = None,
        by_day: bool = False,
        partition_topic: bool = True,
    ) -> None:
        self.location = location.rstrip("/")
        self.identifier = identifier or DEFAULT_IDENTIFIER
        self.by_day = by_day
        #: the records table is partitioned by topic; a typed table (one topic) is not
        self.partition_topic = partition_topic
        self.props = catalog_properties(self.location, catalog)
        self._catalog: Any = None
        self._table: Any = None
        self._read: tuple[bool, int | None] | None = None  # (exists, snapshot id) at the first load

    # -- reading -----------------------------------------------------------------------------------

    @property
    def data_uri(self) -> str:
        if self._table is not None:
            return str(self._table.location()).rstrip("/") + "/data"
        return self.location + "/data"

    def catalog(self) -> Any:
        if self._catalog is None:
            from pyiceberg.catalog import load_catalog

            keep_null_lists()  # every read of the table (upsert, CDC append) through the projection

            try:
                self._catalog = load_catalog("logdoctor", **self.props)
                if "." in self.identifier:
                    self._catalog.create_namespace_if_not_exists(self.identifier.rsplit(".", 1)[0])
            except Exception as exc:
                raise TableError(f"iceberg catalog {self._where()}: unreachable: {_one_line(exc)}") from None
        return self._catalog

    def _where(self) -> str:
        return self.props.get("uri") or self.props.get("type", "?")

    def load(self) -> Any:
        """The table, or None when it does not exist."""
        from pyiceberg.exceptions import NoSuchTableError

        try:
            self._table = self.catalog().load_table(self.identifier)
        except NoSuchTableError:
            self._table = None
        except TableError:
            raise
        except Exception as exc:
            raise TableError(f"iceberg table {self.identifier}: cannot be read: {_one_line(exc)}") from None
        if self._read is None:
            self._read = (self._table is not None, self._snapshot_id())
        return self._table

    def _snapshot_id(self) -> int | None:
        snap = self._table.current_snapshot() if self._table is not None else None
        return None if snap is None else int(snap.snapshot_id)

    def exists(self) -> bool:
        return self.load() is not None

    def schema_difference(self, export_schema: Any, known: Sequence[str]) -> tuple[list[str], list[str]]:
        """(problems, columns to add): a column of another type or a column logdoctor does not know is
        a problem; a logdoctor column the table lacks is added by schema evolution."""
        from pyiceberg.catalog import Catalog

        table = self._table
        if table is None:
            return [], []
        want = Catalog._convert_schema_if_needed(_arrow_schema(export_schema))
        have = {f.name: f for f in table.schema().fields}
        problems, add = [], []
        for f in want.fields:
            if f.name not in have:
                add.append(f.name)
            elif _type_text(have[f.name].field_type) != _type_text(f.field_type):
                problems.append(
                    f"column {f.name} is {_type_text(have[f.name].field_type)} in the table, "
                    f"{_type_text(f.field_type)} in the export"
                )
        problems += [f"column {n} is not a logdoctor column" for n in have if n not in known]
        return problems, add

    def offsets(self) -> dict[tuple[str, int], int]:
        """The last offset the table holds per (topic, partition), from the table's own rows."""
        if self._table is None or self._table.current_snapshot() is None:
            return {}
        try:
            rows = self._table.scan(selected_fields=("topic", "partition", "offset")).to_arrow()
        except Exception as exc:
            raise TableError(f"iceberg table {self.identifier}: cannot be read: {_one_line(exc)}") from None
        return last_offsets(rows)

    def rows(self, columns: Sequence[str] = ("*",)) -> Any:
        """The rows the table holds now (``columns`` of them), as Arrow."""
        return self._table.scan(selected_fields=tuple(columns)).to_arrow()

    def referenced_file_names(self) -> set[str]:
        """The file name of every data file any snapshot of the table references (every snapshot's
        manifests, deleted entries included: a file an older snapshot holds stays for time travel)."""
        table = self._table
        if table is None:
            return set()
        io, names, seen = table.io, set(), set()
        for snap in table.metadata.snapshots:
            for manifest in snap.manifests(io):
                if manifest.manifest_path in seen:
                    continue
                seen.add(manifest.manifest_path)
                for entry in manifest.fetch_manifest_entry(io, discard_deleted=False):
                    names.add(entry.data_file.file_path.rsplit("/", 1)[-1])
        return names

    # -- the commit --------------------------------------------------------------------------------

    def commit(
        self,
        paths: Sequence[str],
        export_schema: Any,
        mode: str,
        properties: Mapping[str, str],
        snapshot_properties: Mapping[str, str],
        pause: Any = None,
        first: Mapping[tuple[str, int], int] | None = None,
    ) -> None:
        """Register ``paths`` (Parquet files under :attr:`data_uri`) in one transaction.

        ``first``: the first offset of each (topic, partition) in ``paths``. When another writer
        committed after this export's first :meth:`load` and the table now holds any of those offsets,
        an append is refused (:func:`.concurrent.refuse_overlap`) instead of adding the records twice.
        (pyiceberg's own retry inside ``commit_transaction`` re-adds the files without this check: a
        commit racing that last moment is not covered.)"""
        from pyiceberg.exceptions import CommitFailedException

        marker = uuid.uuid4().hex
        properties = {**properties, COMMIT_PROPERTY: marker}
        snapshot_properties = {**snapshot_properties, COMMIT_PROPERTY: marker}
        for attempt in range(COMMIT_RETRIES + 1):
            try:
                if pause is not None and attempt == 0:
                    pause("before")  # test seam: before the table is read again and the commit
                txn = self._transaction(export_schema, mode)
                self._check_concurrent(first if mode == "append" else None)
                if paths:
                    txn.add_files(list(paths), snapshot_properties=dict(snapshot_properties))
                txn.set_properties(dict(properties))
                if pause is not None:
                    pause("commit")  # test seam (in-process tests only): right before the catalog swap
                txn.commit_transaction()
                if pause is not None:
                    pause("after")
                self._reload()
                return
            except CommitFailedException as exc:  # another writer committed first: retry on its snapshot
                if attempt == COMMIT_RETRIES:
                    raise TableError(
                        f"iceberg table {self.identifier}: commit failed after {attempt + 1} tries "
                        f"(concurrent writers): {_one_line(exc)}; the table is unchanged"
                    ) from None
                self.load()
            except (TableError, TableSchemaError, TableExistsError):
                raise
            except Exception as exc:
                self._after_failed_commit(marker, "commit", exc)
                self._reload()
                return

    def _reload(self) -> None:
        """The table after a commit that landed (one that cannot be read now keeps its last state here)."""
        with contextlib.suppress(TableError):
            self.load()

    def _after_failed_commit(self, marker: str, what: str, exc: BaseException) -> None:
        """A commit call raised ``exc``: the catalog's table says whether the swap happened anyway (a
        catalog that committed and then failed to answer, a failure after the swap):
        :func:`~logdoctor.spark.tables.after_failed_commit`."""
        where = f"iceberg table {self.identifier}"
        after_failed_commit(where, what, exc, lambda: self.landed(marker), "the table", _one_line)

    def landed(self, marker: str) -> bool:
        """Whether the catalog's table holds the commit marked ``marker`` (the table property
        :data:`~logdoctor.spark.tables.COMMIT_PROPERTY` of its metadata, or a snapshot's summary)."""
        from pyiceberg.exceptions import NoSuchTableError

        try:
            table = self.catalog().load_table(self.identifier)
        except NoSuchTableError:
            return False
        if table.properties.get(COMMIT_PROPERTY) == marker:
            return True
        return any(_summary_of(snap).get(COMMIT_PROPERTY) == marker for snap in table.metadata.snapshots)

    def properties(self) -> dict[str, str]:
        """The table's properties (logdoctor's among them); empty when it does not exist."""
        return dict(self._table.properties) if self._table is not None else {}

    def upsert(
        self,
        live: Sequence[str],
        keys_from: Sequence[str],
        export_schema: Any,
        properties: Mapping[str, str],
        snapshot_properties: Mapping[str, str],
    ) -> None:
        """The latest view's append (issue 46): in one transaction, the rows of every (topic, partition, key)
        in ``keys_from`` (the new latest rows' files and the tombstones' files) are deleted (copy-on-write:
        the data files holding them rewritten without them, in one overwrite snapshot) and the files ``live``
        are added. The keys are read in chunks of a bounded size and matched in Arrow (:mod:`.iceberg_rows`):
        memory does not grow with the number of changed keys. Only the keys of the new files are read, never
        a value."""
        from pyiceberg.expressions import AlwaysTrue
        from pyiceberg.io.pyarrow import ArrowScan
        from pyiceberg.table import DataScan

        from logdoctor.spark.tables import iceberg_rows

        marker = uuid.uuid4().hex
        properties = {**properties, COMMIT_PROPERTY: marker}
        snapshot_properties = {**snapshot_properties, COMMIT_PROPERTY: marker}
        try:
            txn = self._transaction(export_schema, "append")
            if keys_from and self._table is not None and self._table.current_snapshot() is not None:
                meta, io = txn.table_metadata, self._table.io
                keys_schema = meta.schema().select("topic", "partition", "key")

                def plan(groups: Any) -> Any:
                    where = iceberg_rows.key_filter(groups)
                    return DataScan(table_metadata=meta, io=io, row_filter=where).plan_files()

                def read_keys(task: Any) -> Any:
                    scan = ArrowScan(meta, io, projected_schema=keys_schema, row_filter=AlwaysTrue())
                    return scan.to_table(tasks=[task])

                chunks = iceberg_rows.key_chunks(keys_from)
                tasks, masks = iceberg_rows.rows_to_delete(chunks, plan, read_keys)
                iceberg_rows.rewrite(txn, io, tasks, masks)
            if live:
                txn.add_files(list(live), snapshot_properties=dict(snapshot_properties))
            txn.set_properties(dict(properties))
            txn.commit_transaction()
        except (TableError, TableSchemaError, TableExistsError):
            raise
        except Exception as exc:
            self._after_failed_commit(marker, "upsert", exc)
        self._reload()

    def _check_concurrent(self, first: Mapping[tuple[str, int], int] | None) -> None:
        """Another writer committed since the first :meth:`load`: a table it created meanwhile (its
        schema never checked) refuses the commit; an append whose offsets it added too is refused."""
        from logdoctor.spark.tables.concurrent import refuse_overlap

        was, now = self._read or (False, None), (self._table is not None, self._snapshot_id())
        if now == was:
            return
        if not was[0]:
            raise TableError(
                f"iceberg table {self.identifier}: another writer created the table (snapshot {now[1]}) "
                "while this export ran; nothing was committed, the table is as the other writer left it: "
                "run the export again with --mode append"
            )
        if first:
            where = f"iceberg table {self.identifier}: another writer committed snapshot {now[1]}"
            where += f" after {was[1]}"
            refuse_overlap(where, first, self.offsets())

    def _transaction(self, export_schema: Any, mode: str) -> Any:
        from pyiceberg.expressions import AlwaysTrue

        schema = _arrow_schema(export_schema)
        if self.load() is None:
            txn = self.catalog().create_table_transaction(
                self.identifier,
                schema=schema,
                location=self.location,
                # add_files infers an identity partition from min == max: keep whole topic names
                properties={"write.metadata.metrics.column.topic": "full"},
            )
            with txn.update_spec() as spec:
                if self.partition_topic:
                    spec.add_identity("topic")
                if self.by_day:
                    spec.add_field("timestamp", _day_transform(), "timestamp_day")
            return txn
        txn = self._table.transaction()
        with txn.update_schema() as update:
            update.union_by_name(schema)  # adds the columns the table lacks; metadata only
        if mode == "overwrite" and self._table.current_snapshot() is not None:
            txn.delete(AlwaysTrue())  # whole files only: they stay for time travel
        return txn


def _day_transform() -> Any:
    from pyiceberg.transforms import DayTransform

    return DayTransform()


def _summary_of(snap: Any) -> dict[str, str]:
    summary = snap.summary
    if summary is None:
        return {}
    return dict(getattr(summary, "additional_properties", None) or {})


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:400]
