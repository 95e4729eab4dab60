"""Delta tables through deltalake (delta-rs): the schema check and the one-commit add of every file.

deltalake 1.6 commits files written by someone else with its public API: ``AddAction`` entries (path
relative to the table, size, partition values, statistics JSON) given to
``deltalake.transaction.create_table_with_add_actions`` (a new table: metadata, protocol and every add
in commit 0) or ``DeltaTable.create_write_transaction`` (an existing table: one commit, ``append`` or
``overwrite``, which removes every file the snapshot had: they stay for time travel until vacuum).
A logdoctor column the table lacks is added by the data's own commit (its ``metaData`` action beside the
adds; :meth:`DeltaLakeTable._append`), never by a commit of its own.
A commit is one ``_delta_log/NNN.json`` put-if-absent: a reader sees the old version or the new one;
a commit by another writer since the version this export read is judged by logdoctor, not retried
blindly (:meth:`DeltaLakeTable.commit`): an append is retried on the new version unless the other
writer added offsets this export also holds.

Delta has no partition transforms: ``--partition-by-day`` adds a date column ``timestamp_day`` (the UTC
day of ``timestamp``) as the second partition column. Partition columns are not stored in the files
(Delta's convention). The table properties (``logdoctor.version``, ``logdoctor.sources``,
``logdoctor.offsets``) are each commit's ``commitInfo`` custom metadata (``DeltaTable.history()``):
deltalake 1.6 refuses a table ``configuration`` key outside ``delta.*`` ("Error parsing property").
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import unquote

from logdoctor.spark.tables import COMMIT_PROPERTY, TableError, after_failed_commit
from logdoctor.spark.tables.files import DAY_COLUMN, WrittenFile, last_offsets

COMMIT_RETRIES = 10


def storage_options(uri: str) -> dict[str, str]:
    """delta-rs object-store options from the environment (AWS_* as for the rest of logdoctor)."""
    from logdoctor.spark.export import is_local_path

    if is_local_path(uri):
        return {}
    opts: dict[str, str] = {}
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if uri.startswith(("s3://", "s3a://")):
        if endpoint:
            opts["AWS_ENDPOINT_URL"] = endpoint
            if endpoint.startswith("http://"):
                opts["AWS_ALLOW_HTTP"] = "true"
        # S3 has put-if-absent (conditional writes): delta-rs commits safely without a lock service
        opts.setdefault("conditional_put", "etag")
    return opts


def _uri(location: str) -> str:
    from logdoctor.spark.export import is_local_path

    return os.path.abspath(location) if is_local_path(location) and "://" not in location else location


def _stat_value(v: Any) -> Any:
    import datetime as dt

    if isinstance(v, dt.datetime):
        return v.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    if isinstance(v, dt.date):
        return v.isoformat()
    return v


def stats_json(f: WrittenFile, partition_columns: Sequence[str]) -> str:
    """Delta's per-file statistics (numRecords, minValues, maxValues, nullCount) of the data columns."""
    keep = [c for c in f.null_counts if c not in partition_columns]
    # min and max only of the types whose JSON value is exact here (a decimal, a time: no data skipping)
    ranged = [c for c in keep if c in f.min_values and not _is_bool(f, c) and _exact(f.min_values[c])]
    mins = {c: _stat_value(f.min_values[c]) for c in ranged if _finite(f.min_values[c])}
    maxs = {c: _stat_value(f.max_values[c]) for c in ranged if c in f.max_values and _finite(f.max_values[c])}
    return json.dumps(
        {
            "numRecords": f.rows,
            "minValues": mins,
            "maxValues": maxs,
            "nullCount": {c: f.null_counts[c] for c in keep},
        },
        allow_nan=False,  # JSON has no Infinity or NaN: delta-rs's kernel refuses such a log entry
    )


def _finite(v: Any) -> bool:
    """A bound JSON can hold: an infinite float has no JSON number (Python would write ``Infinity``,
    which delta-rs's JSON reader refuses, making the table unreadable), so that side is left out: the
    protocol's min and max are per column and optional, and a reader without one skips no file on it."""
    return not isinstance(v, float) or math.isfinite(v)


def _exact(v: Any) -> bool:
    import datetime as dt

    return isinstance(v, int | float | str | dt.datetime | dt.date) and not isinstance(v, dt.time)


def _is_bool(f: WrittenFile, c: str) -> bool:
    return isinstance(f.min_values.get(c), bool)


def _one_line(exc: BaseException) -> str:
    """delta-rs errors are chains of lines with ANSI colours: one plain line."""
    import re

    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).replace("↳", "<-")
    return (" ".join(text.split()) or type(exc).__name__)[:400]


class DeltaLakeTable:
    """One Delta table (it may not exist yet) at a local folder or URI."""

    format = "delta"

    def __init__(self, location: str, by_day: bool = False, partition_topic: bool = True) -> None:
        self.location = location.rstrip("/")
        self.uri = _uri(self.location)
        self.by_day = by_day
        #: the records table is partitioned by topic; a typed table (one topic) is not
        self.partition_topic = partition_topic
        self.options = storage_options(self.uri)
        self._table: Any = None
        self._loaded = False

    @property
    def data_uri(self) -> str:
        return self.location

    @property
    def partition_by(self) -> list[str]:
        if not self.partition_topic:
            return []
        return ["topic", DAY_COLUMN] if self.by_day else ["topic"]

    def table_schema(self, export_schema: Any) -> Any:
        import pyarrow as pa

        if self.by_day:
            return export_schema.append(pa.field(DAY_COLUMN, pa.date32()))
        return export_schema

    def load(self) -> Any:
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        try:
            self._table = DeltaTable(self.uri, storage_options=self.options or None)
        except TableNotFoundError:
            self._table = None
            self._loaded = True
        except Exception as exc:
            raise TableError(f"delta table {self.location}: cannot be read: {_one_line(exc)}") from None
        self._loaded = True
        return self._table

    def exists(self) -> bool:
        return self.load() is not None

    def schema_difference(self, export_schema: Any, known: Sequence[str]) -> tuple[list[str], list[str]]:
        from deltalake import Schema

        if self._table is None:
            return [], []
        want = Schema.from_arrow(self.table_schema(export_schema))
        have = {f.name: f for f in self._table.schema().fields}
        problems, add = [], []
        for f in want.fields:
            if f.name not in have:
                add.append(f.name)
            elif have[f.name].type != f.type:
                problems.append(
                    f"column {f.name} is {_type(have[f.name].type)} in the table, "
                    f"{_type(f.type)} in the export"
                )
        names = {*known, DAY_COLUMN} if self.by_day else set(known)
        problems += [f"column {n} is not a logdoctor column" for n in have if n not in names]
        parts = list(self._table.metadata().partition_columns)
        if parts != self.partition_by:
            problems.append(
                f"the table is partitioned by {parts or 'nothing'}, the export by {self.partition_by}"
            )
        return problems, add

    def offsets(self) -> dict[tuple[str, int], int]:
        if self._table is None:
            return {}
        try:
            rows = self._table.to_pyarrow_dataset().to_table(columns=["topic", "partition", "offset"])
        except Exception as exc:
            raise TableError(f"delta table {self.location}: cannot be read: {_one_line(exc)}") from None
        return last_offsets(rows)

    def rows(self, columns: Sequence[str] | None = None) -> Any:
        """The rows the table holds now (``columns`` of them), as Arrow."""
        return self._table.to_pyarrow_dataset().to_table(columns=None if columns is None else list(columns))

    def referenced_file_names(self) -> set[str]:
        """The file name of every data file the table's log references: each ``add`` and ``remove`` of
        every commit still in ``_delta_log`` and of its (classic) checkpoints, so files of older
        versions kept for time travel count. Raises ValueError for a log logdoctor does not read whole
        (V2 checkpoints with sidecars, managed commits): then nothing is removed."""
        import pyarrow.fs as pafs
        import pyarrow.parquet as pq

        from logdoctor.spark.tables.files import filesystem

        if self._table is None:
            return set()
        fs, root = filesystem(self.uri)
        names: set[str] = set()

        def add(path: str | None) -> None:
            if path:
                names.add(unquote(path).rsplit("/", 1)[-1])

        for info in fs.get_file_info(pafs.FileSelector(f"{root}/_delta_log", allow_not_found=True)):
            name = info.base_name
            if re.fullmatch(r"\d{20}\.json", name):
                for action in _actions(fs, info.path):
                    for kind in ("add", "remove"):
                        add((action.get(kind) or {}).get("path"))
            elif re.fullmatch(r"\d{20}\.checkpoint(\.\d{10}\.\d{10})?\.parquet", name):
                with fs.open_input_file(info.path) as f:
                    parquet = pq.ParquetFile(f)
                    kinds = [k for k in ("add", "remove") if k in parquet.schema_arrow.names]
                    table = parquet.read(columns=kinds)
                for kind in kinds:
                    for path in table.column(kind).combine_chunks().field("path").to_pylist():
                        add(path)
            elif info.type == pafs.FileType.Directory or re.fullmatch(r"\d{20}\..*\.(json|parquet)", name):
                raise ValueError(f"{info.path}: a Delta log entry logdoctor does not read")
        return names

    def commit(
        self,
        files: Sequence[WrittenFile],
        export_schema: Any,
        mode: str,
        properties: Mapping[str, str],
        add_columns: Sequence[str] = (),
        pause: Any = None,
    ) -> None:
        """Add ``files`` in one commit on the version this export read (:meth:`load` at the job's start).

        Another writer's commit in between: delta-rs is told not to retry (``max_commit_retries=0``) so
        that logdoctor decides. ``append``: the table is read again and the commit is retried on the new
        version unless the other writer added offsets this export also holds (then nothing is committed:
        the rows would be there twice). ``overwrite`` replaces exactly the version it read: any concurrent
        commit refuses it. A table created by another writer meanwhile refuses a commit that would create
        it. Each refusal is one :class:`TableError` line; the table stays as the other writer left it.
        """
        from deltalake import CommitProperties, Schema
        from deltalake.exceptions import CommitFailedError
        from deltalake.transaction import AddAction, create_table_with_add_actions

        if not self._loaded:
            self.load()
        schema = self.table_schema(export_schema)
        now = int(time.time() * 1000)
        root = self.location + "/"
        actions = [
            AddAction(
                path=f.path[len(root) :] if f.path.startswith(root) else f.path,
                size=f.size,
                partition_values=dict(f.partition),
                modification_time=now,
                data_change=True,
                stats=stats_json(f, self.partition_by),
            )
            for f in files
        ]
        marker = uuid.uuid4().hex
        metadata = {**properties, COMMIT_PROPERTY: marker}
        commit = CommitProperties(custom_metadata=metadata, max_commit_retries=0)
        first = None if self._table is None else self._table.version() + 1
        try:
            if pause is not None:
                pause("before")
            if self._table is None:
                try:
                    create_table_with_add_actions(
                        self.uri,
                        Schema.from_arrow(schema),
                        actions,
                        mode="error",
                        partition_by=self.partition_by,
                        name="logdoctor-records",
                        storage_options=self.options or None,
                        commit_properties=commit,
                    )
                except Exception as exc:
                    if "already exists" not in str(exc) or self.load() is None:
                        raise
                    raise TableError(
                        f"delta table {self.location}: another writer created the table (version "
                        f"{self._table.version()}) while this export ran; nothing was committed, the table "
                        "is as the other writer left it: run the export again with --mode append"
                    ) from None
            else:
                for attempt in range(COMMIT_RETRIES + 1):
                    read = self._table.version()
                    write_mode, table_schema, filters = "overwrite", Schema.from_arrow(schema), None
                    if mode != "overwrite":
                        write_mode, table_schema, filters = self._append(schema, add_columns)
                    try:
                        self._table.create_write_transaction(
                            actions,
                            write_mode,
                            table_schema,
                            partition_by=self.partition_by,
                            partition_filters=filters,
                            commit_properties=commit,
                        )
                        break
                    except CommitFailedError:
                        self._after_concurrent_commit(read, files, mode, attempt)
            if pause is not None:
                pause("after")
        except TableError:
            raise
        except Exception as exc:
            self._after_failed_commit(marker, first, "commit", exc)
        self._reload()

    def _reload(self) -> None:
        """The table after a commit that landed: one that cannot be read now keeps its last loaded
        version here (the commit is in the table whatever this read says)."""
        with contextlib.suppress(TableError):
            self.load()

    def _after_failed_commit(self, marker: str, first: int | None, what: str, exc: BaseException) -> None:
        """A commit call raised ``exc``: the log entries from version ``first`` (0 for a new table) say
        whether the commit landed anyway (delta-rs writes the entry, then reads the table again: a failure
        after the put is not a failed commit): :func:`~logdoctor.spark.tables.after_failed_commit`."""
        where = f"delta table {self.location}"
        after_failed_commit(where, what, exc, lambda: self.landed(marker, first or 0), "the log", _one_line)

    def landed(self, marker: str, first: int = 0) -> bool:
        """Whether a log entry from version ``first`` on is the commit whose commitInfo holds ``marker``
        (:data:`~logdoctor.spark.tables.COMMIT_PROPERTY`). Raises OSError when the log cannot be read."""
        import pyarrow.fs as pafs

        from logdoctor.spark.tables.files import filesystem

        fs, root = filesystem(self.uri)
        entries = fs.get_file_info(pafs.FileSelector(f"{root}/_delta_log", allow_not_found=True))
        versions = sorted(
            int(i.base_name[:20]) for i in entries if re.fullmatch(r"\d{20}\.json", i.base_name)
        )
        return any(
            _commit_info(action).get(COMMIT_PROPERTY) == marker
            for version in versions
            if version >= first
            for action in _actions(fs, f"{root}/_delta_log/{version:020d}.json")
        )

    def properties(self) -> dict[str, str]:
        """logdoctor's properties: the string values of the current version's commitInfo (empty when the table
        does not exist). Read from that version's log file itself: delta-rs's history() lists the log with
        a start-after query some S3 servers do not answer."""
        from logdoctor.spark.tables.files import filesystem

        if not self._loaded:
            self.load()
        if self._table is None:
            return {}
        fs, root = filesystem(self.location)
        try:
            actions = _actions(fs, f"{root}/_delta_log/{self._table.version():020d}.json")
        except OSError as exc:
            raise TableError(f"delta table {self.location}: cannot be read: {_one_line(exc)}") from None
        info = next((a["commitInfo"] for a in actions if isinstance(a.get("commitInfo"), dict)), {})
        return {k: v for k, v in info.items() if isinstance(v, str)}

    def upsert(self, files: Sequence[WrittenFile], export_schema: Any, properties: Mapping[str, str]) -> None:
        """The latest view's append (issue 46): delta-rs's MERGE of the new latest rows (``files``: the task
        files of live rows and of tombstones, streamed, never held whole) on (topic, partition, key): a key
        whose new latest record is a tombstone is deleted, one with a value updated or inserted; one
        commit. The task files themselves are not added (the merge writes its own)."""
        import pyarrow as pa
        import pyarrow.dataset as ds
        from deltalake import CommitProperties

        from logdoctor.spark.tables.files import filesystem

        schema = self.table_schema(export_schema)
        if not self._loaded:
            self.load()
        if self._table is None:
            raise TableError(f"delta table {self.location}: an upsert needs the table (nothing was written)")
        if not files:
            return
        fs, root = filesystem(self.location)
        rels = []
        for f in files:
            _fs, rel = filesystem(f.path)
            rels.append(rel)
        part = ds.partitioning(
            pa.schema([(c, schema.field(c).type) for c in self.partition_by]), flavor="hive"
        )
        source = ds.dataset(rels, format="parquet", filesystem=fs, partitioning=part, partition_base_dir=root)
        reader = source.scanner(columns=list(schema.names)).to_reader()
        reader = pa.RecordBatchReader.from_batches(
            schema, (b.cast(schema) if b.schema != schema else b for b in reader)
        )
        marker = uuid.uuid4().hex
        first = self._table.version() + 1
        try:
            (
                self._table.merge(
                    reader,
                    predicate="t.topic = s.topic AND t.partition = s.partition AND t.key = s.key",
                    source_alias="s",
                    target_alias="t",
                    commit_properties=CommitProperties(
                        custom_metadata={**properties, COMMIT_PROPERTY: marker}
                    ),
                )
                .when_matched_update_all(predicate="s.value IS NOT NULL")
                .when_matched_delete(predicate="s.value IS NULL")
                .when_not_matched_insert_all(predicate="s.value IS NOT NULL")
                .execute()
            )
        except Exception as exc:
            self._after_failed_commit(marker, first, "upsert", exc)
        self._reload()

    def _append(self, schema: Any, add_columns: Sequence[str]) -> tuple[str, Any, Any]:
        """``create_write_transaction`` arguments (mode, schema, partition filters) of an append on the
        version ``self._table`` holds.

        A logdoctor column the table lacks (``add_columns``) is added in the same commit as the data, so
        that a reader never sees a version with the new column and none of the export's rows: the table's
        fields in their order, then the new ones nullable (what ``alter.add_columns`` gives). deltalake
        1.6 writes a ``metaData`` action with a changed schema only in ``overwrite`` mode; an ``append``
        ignores the schema argument (delta-rs python/src/lib.rs ``create_write_transaction``: the
        ``SaveMode::Overwrite`` arm pushes ``Action::Metadata(metadata.with_schema(..))`` when the schema
        differs, the other arm only builds a "Cannot change schema except in overwrite." error it never
        returns). Overwrite mode removes the files of the partitions ``partition_filters`` matches:
        ``topic in ()`` matches none, so the commit is the add actions and the metaData, nothing removed.
        Columns another writer added meanwhile are in the table already and not added again."""
        from deltalake import Field, Schema

        fields = list(self._table.schema().fields)
        have = {f.name for f in fields}
        want = {f.name: f for f in Schema.from_arrow(schema).fields}
        new = [Field(n, want[n].type, nullable=True) for n in add_columns if n not in have]
        if not new:
            return "append", Schema.from_arrow(schema), None
        if not self.partition_topic:  # no partition to filter on: the columns are added first, then the data
            self._table.alter.add_columns(new)
            return "append", Schema.from_arrow(schema), None
        return "overwrite", Schema(fields + new), [("topic", "in", [])]

    def _after_concurrent_commit(
        self, read: int, files: Sequence[WrittenFile], mode: str, attempt: int
    ) -> None:
        """Another writer committed after version ``read``: raise :class:`TableError` unless an append
        can be retried on the new version (then ``self._table`` is that version)."""
        if self.load() is None:
            raise TableError(f"delta table {self.location}: the table was removed while this export ran")
        now = self._table.version()
        where = f"delta table {self.location}: another writer committed version {now} after version {read}"
        left = "nothing was committed, the table is as the other writer left it"
        if mode == "overwrite":
            raise TableError(
                f"{where}, which --mode overwrite would replace unseen; {left}: run the export again"
            )
        from logdoctor.spark.tables.concurrent import first_offsets, refuse_overlap

        refuse_overlap(where, first_offsets(files), self.offsets())
        if attempt == COMMIT_RETRIES:
            raise TableError(f"{where}: lost {attempt + 1} commit races to other writers; {left}")


def _actions(fs: Any, path: str) -> list[dict[str, Any]]:
    """The actions of one ``_delta_log`` JSON entry (a line each)."""
    with fs.open_input_stream(path) as stream:
        return [json.loads(line) for line in stream.read().decode("utf-8").splitlines() if line.strip()]


def _commit_info(action: Mapping[str, Any]) -> Mapping[str, Any]:
    info = action.get("commitInfo")
    return info if isinstance(info, dict) else {}


def _type(t: Any) -> str:
    return str(getattr(t, "type", None) or t)
