"""``export --view cdc``: each Debezium topic among the inputs folded into the source table it describes
(:mod:`logdoctor.spark.cdc`), written as Parquet at ``OUT/<topic>`` or as an Iceberg or Delta table there;
the events that do not decode go to ``OUT/_undecoded`` as ``--typed`` sends them (docs/cdc.md).

One Spark task per topic-partition (``view=cdc`` plans the slices of each partition into one task, as the
latest view does) reads its records as every output reads them
(:func:`logdoctor.spark.sources.slice_reader.read_slices`: the isolation level first), decodes them
(:class:`logdoctor.spark.typed.TypedBatches`) and folds them
(:class:`logdoctor.spark.cdc.PartitionFold`): it returns the partition's live rows, one per key, never the
events. The driver merges the partitions of each topic and writes its table: the output holds the table,
so the driver's memory holds one row per live key of one topic at a time.

``--ending-timestamp T``: the table as it stood at T by the events' ``source.ts_ms`` (not the records'
Kafka timestamps: the read is not cut by it), with the columns of the writer schema of its last event
applied by then (a column added after T is not there); ``--ending-offsets``: as of those offsets
(exclusive).

``--mode append`` into Iceberg or Delta continues the table: only the events above the offsets it was folded
to (its ``logdoctor.offsets`` property, per partition) are read and folded, starting from the table's rows
(:func:`append_change`: a placeholder with no earlier value among the new events takes the table's value of
the key; an event at or before, by source position, the event that wrote its key's row in the table is a
redelivery of one an earlier run folded, skipped: :func:`applied_rows`); the rows they changed are
upserted by primary key and the keys they deleted removed, in one commit of the format's library
(:mod:`logdoctor.spark.tables.cdc_commit`; a truncate among them empties the table in the same commit).
With no change, nothing is committed. A driver killed before or during the commit leaves the previous
table; a commit whose outcome cannot be read keeps its data file (``CommitUnknownError``, as the typed
tables' export).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from logdoctor.errors import FormatError
from logdoctor.logdir.read_options import ReadOptions
from logdoctor.spark.typed import UNDECODED, TopicCounts, TypedBatches, merge_counts, undecoded_total

#: the table property holding, per partition, the source position fields of the last truncate folded into
#: the table (JSON): an append compares redelivered events with it (:class:`logdoctor.spark.cdc.Applied`)
TRUNCATED_PROPERTY = "logdoctor.cdc.truncated"

#: what an export of the cdc view says of a topic it writes no table for
NOT_AN_ENVELOPE = "its values are not Debezium change events (no op, before, after and source)"


def not_an_envelope(tp: Any) -> str:
    """Why a topic of the typed survey (:class:`logdoctor.spark.typed.TopicPlan`) is no Debezium topic: its
    values name no schema, or decode to something else than an envelope (a record of other fields, a
    primitive, a union of messages)."""
    if not tp.values_typed:
        return "its values name no schema (no registry frame, no Connect JSON envelope): not Debezium events"
    typ = tp.value_type
    if pa.types.is_struct(typ):
        return "its values are records without op, before, after and source: not Debezium change events"
    return f"its values are of type {typ}, not records: not Debezium change events"


@dataclass(slots=True)
class CdcSummary:
    """Per topic the fold's counts (:class:`logdoctor.spark.cdc.CdcStats`) and its table, the topics left
    out and why, and the typed decoding's counts (records sent to ``_undecoded``)."""

    stats: dict[str, Any] = field(default_factory=dict)
    tables: dict[str, str] = field(default_factory=dict)
    left_out: dict[str, str] = field(default_factory=dict)
    counts: dict[str, TopicCounts] = field(default_factory=dict)
    unchanged: list[str] = field(default_factory=list)
    #: per topic appended to (``--mode append``): rows upserted, keys deleted, whether a truncate emptied it
    appended: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def undecoded(self) -> int:
        return undecoded_total(self.counts)

    def to_json(self) -> dict[str, Any]:
        return {
            "topics": {
                t: {
                    **s.to_json(),
                    "table": self.tables.get(t),
                    "unchanged": t in self.unchanged,
                    "appended": self.appended.get(t),
                }
                for t, s in sorted(self.stats.items())
            },
            "left_out": dict(sorted(self.left_out.items())),
            "decoding": {t: c.to_json() for t, c in sorted(self.counts.items())},
            "undecoded": self.undecoded,
        }

    def lines(self) -> list[str]:
        out = []
        for topic, s in sorted(self.stats.items()):
            if s.refused:
                out.append(f"{topic}: no table: {s.refused}")
                continue
            parts = [f"{s.events_folded:,} events folded into {s.rows_written:,} rows"]
            if topic in self.unchanged:
                parts.append("no change newer than the table's: unchanged")
            if topic in self.appended:
                a = self.appended[topic]
                parts.append(
                    f"appended: {a['upserted']:,} rows upserted, {a['deleted']:,} keys deleted"
                    + (", the table truncated first" if a["truncated"] else "")
                )
            if s.events_uncommitted:
                parts.append(f"{s.events_uncommitted:,} events of aborted or open transactions not applied")
            if s.events_after_end:
                parts.append(f"{s.events_after_end:,} events after the point in time not applied")
            if s.events_redelivered:
                parts.append(
                    f"{s.events_redelivered:,} redelivered events not applied (at or before their key's last "
                    "event by source position)"
                )
            if s.redeliveries_unchecked:
                parts.append(f"redeliveries not checked: {s.redeliveries_unchecked}")
            if s.default_cells:
                parts.append(
                    f"{s.default_cells:,} cells given their column's default (the row's last event predates "
                    "the column)"
                )
            if s.truncates:
                parts.append(f"{s.truncates:,} truncates")
            if s.rows_without_snapshot:
                parts.append(
                    f"{s.rows_without_snapshot:,} rows whose history starts after the log start (no snapshot "
                    "read or insert covers them)"
                )
            if s.partial_rows:
                parts.append(
                    f"{s.partial_rows:,} partial rows ({s.placeholder_cells_null:,} placeholder cells with "
                    "no earlier value, null)"
                )
            if s.deletes_without_row:
                parts.append(f"{s.deletes_without_row:,} deletes of keys with no row")
            if s.deletes_in_cleaned_range or s.rows_in_cleaned_range:
                parts.append(
                    f"compacted: {s.rows_in_cleaned_range:,} rows and {s.deletes_in_cleaned_range:,} "
                    "deletes in the range the log cleaner has cleaned (deletes it removed with their "
                    "tombstones are not known)"
                )
            if s.unordered_events:
                n = len(s.unordered_events)
                parts.append(f"{n:,} events that could not be ordered across partitions")
            where = self.tables.get(topic)
            out.append(f"{topic}: {'; '.join(parts)}" + (f" -> {where}" if where else ""))
        for topic, why in sorted(self.left_out.items()):
            out.append(f"{topic}: skipped, no table: {why}")
        for topic, c in sorted(self.counts.items()):
            if c.undecoded:
                why = ", ".join(f"{r} {n:,}" for r, n in sorted(c.undecoded.items()))
                n = sum(c.undecoded.values())
                out.append(f"{topic}: {n:,} events to _undecoded ({why})")
        return out


def compaction_of(refs: Sequence[Any]) -> dict[str, Any]:
    """Per compacted topic the log cleaner's offsets (:class:`logdoctor.spark.cdc.Compaction`), from each
    local partition's ``cleaner-offset-checkpoint`` entry and the topic's ``cleanup.policy``."""
    from logdoctor.logdir.model import LogDir
    from logdoctor.spark.cdc import Compaction

    cleaned: dict[str, dict[int, int]] = {}
    dirs: dict[str, Any] = {}
    for ref in refs:
        if not ref.storage.is_local:
            continue
        try:
            d = dirs.setdefault(ref.log_dir, LogDir(ref.log_dir))
            offset = d.partition(ref.topic, ref.partition).cleaner_offset
        except (KeyError, OSError, FormatError):  # no such folder, or an unreadable checkpoint: not known
            continue
        if offset:
            cleaned.setdefault(ref.topic, {})[ref.partition] = int(offset)
    return {t: Compaction(cleaned_to=parts) for t, parts in cleaned.items()}


def fold_task(group: Sequence[Any], opts: Any, plan: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """Executor side: one partition's records decoded and folded; its undecoded rows as Arrow IPC bytes."""
    from logdoctor.spark.cdc import _without_cyclic_gc

    with _without_cyclic_gc():  # once for the partition: per batch, each re-enable would scan every row kept
        return _fold_task(group, opts, plan, options)


def _fold_task(group: Sequence[Any], opts: Any, plan: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    from logdoctor.formats.registry import debezium
    from logdoctor.spark.cdc import FoldOptions, PartitionFold, envelope_types
    from logdoctor.spark.sources.slice_reader import read_slices
    from logdoctor.spark.typed import counts_json

    splitter = TypedBatches(plan)
    writer_columns: dict[Any, frozenset[str] | None] = {}

    def columns_of(writer: Any) -> frozenset[str] | None:
        """The columns of ``after`` in a writer schema (the table's columns when it wrote)."""
        if writer is None:
            return None
        if writer not in writer_columns:
            dec = splitter.decoders.get(writer)
            typ = getattr(dec, "arrow_type", None)
            after = None
            if typ is not None and pa.types.is_struct(typ) and typ.get_field_index("after") >= 0:
                after = typ.field("after").type
            writer_columns[writer] = frozenset(after.names) if pa.types.is_struct(after) else None
        return writer_columns[writer]

    fold: PartitionFold | None = None
    topic = partition = None
    last = -1
    bad: list[pa.RecordBatch] = []
    undecodable: list[dict[str, Any]] = []
    problems: list[dict[str, Any]] = []
    envelope = True
    for raw in read_slices(group, opts, undecodable=undecodable, problems=problems):
        if raw.num_rows:
            last = max(last, int(raw.column("offset")[-1].as_py()))
        name, good, side = splitter.split(raw)
        if side is not None and side.num_rows:
            bad.append(side)
        if good is None or not good.num_rows:
            continue
        topic, partition = name, int(good.column("kafka")[0]["partition"].as_py())
        if fold is None and envelope:
            tp = plan.topics[name]
            if not (tp.values_typed and debezium.is_envelope(tp.value_type)):
                envelope = False
                continue
            base: FoldOptions = options.get(name) or options.get("") or FoldOptions()
            after_type, _ = envelope_types(pa.schema(list(tp.value_columns())))
            fold = PartitionFold(partition, after_type, base)
        if fold is not None:
            writers = splitter.row_writers
            columns = None if writers is None else [columns_of(w) for w in writers]
            fold.feed(good, columns if columns is not None and len(columns) == good.num_rows else None)
    sink = pa.BufferOutputStream()
    if bad:
        with pa.ipc.new_stream(sink, bad[0].schema) as w:
            for b in bad:
                w.write_batch(b)
    seg = group[0].segment if group else None
    return {
        "topic": topic if topic is not None else (seg.topic if seg is not None else None),
        "partition": partition if partition is not None else (seg.partition if seg is not None else None),
        "last_offset": last,
        "envelope": envelope,
        "result": None if fold is None else fold.result(),
        "undecoded": sink.getvalue().to_pybytes() if bad else b"",
        "typed": counts_json(splitter.counts),
        "undecodable": undecodable,
        "skipped": problems,
    }


def run_cdc_export(
    spark: Any,
    paths: Sequence[str] | str,
    out: str,
    *,
    fmt: str = "parquet",
    mode: str = "error",
    options: ReadOptions | Mapping[str, str] | None = None,
    placeholder: str | None = None,
    catalog: Mapping[str, str] | None = None,
    table_name: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    watch: Any = None,
) -> Any:
    """Fold every Debezium topic of PATHS into its table under ``out`` (the module doc). ``watch``
    (:class:`~logdoctor.spark.tables.outcome.CommitWatch`): told each table once opened, to say after a
    Ctrl-C what each holds."""
    from logdoctor.logdir.slices import PerPartition
    from logdoctor.spark.cdc import FoldOptions, merge_partitions
    from logdoctor.spark.export import ExportError, ExportJob, is_local_path

    if mode == "append" and fmt == "parquet":
        raise ExportError(
            "--view cdc with --mode append to Parquet would add the changed rows a second time: use --format "
            "iceberg or delta, or --mode overwrite (nothing was written)"
        )
    if fmt not in ("parquet", "iceberg", "delta"):
        raise ExportError(f"--view cdc writes parquet, iceberg or delta, not {fmt!r}")
    if fmt == "parquet" and not is_local_path(out):  # a relative path too: a local folder
        raise ExportError(
            "--view cdc writes Parquet to a local folder; give --format iceberg|delta for a URI"
        )
    opts = ReadOptions.of(options)
    point_in_time = opts.ending_timestamps.default
    if opts.ending_timestamps.by_partition:
        raise ExportError("--view cdc: --ending-timestamp is one moment for the whole table (epoch ms)")
    # the point in time is the fold's (source.ts_ms), never a cut of the read by Kafka timestamps
    job = ExportJob.planned(
        spark, paths, out, dataclasses.replace(opts, ending_timestamps=PerPartition(), view="cdc"), mode
    )
    out, opts, items, refs = job.out, job.opts, job.items, job.plan.refs
    if fmt == "parquet":
        job.refuse_existing("overwrite")
    started = time.perf_counter()
    typed = job.survey()
    compactions = compaction_of(refs)
    base = FoldOptions(
        ending_timestamp_ms=point_in_time, **({"placeholder": placeholder} if placeholder else {})
    )
    per_topic = {t: dataclasses.replace(base, compaction=c) for t, c in compactions.items()}
    per_topic[""] = base
    from logdoctor.formats.registry.debezium import is_envelope

    cdc_topics = {t for t, tp in typed.topics.items() if tp.values_typed and is_envelope(tp.value_type)}
    left_out = {t: not_an_envelope(tp) for t, tp in typed.topics.items() if t not in cdc_topics}
    cdc_refs = [r for r in refs if r.topic in cdc_topics]
    appending: dict[str, Any] = {}
    held: dict[str, dict[str, int]] = {}
    if mode == "append":
        if point_in_time is not None:
            raise ExportError(
                "--view cdc: --mode append continues a table with every newer event; --ending-timestamp "
                "would leave some out for good (nothing was written)"
            )
        appending, held = _tables_to_continue(fmt, out, sorted(cdc_topics), catalog, table_name)
        if watch is not None:  # each continued by one MERGE (upserts and deletes): the rows it then holds
            for table in appending.values():
                watch.opened(table, table.location, "merge")
        opts = job.restart_above({(t, int(p)): n for t, parts in held.items() for p, n in parts.items()})
        for topic, table in appending.items():  # what each table holds: its rows' positions (redeliveries)
            applied = applied_rows(table, typed.topics[topic].key_type)
            per_topic[topic] = dataclasses.replace(per_topic.get(topic, base), applied=applied)
    groups = job.groups(cdc_refs)
    done = job.collect(groups, lambda g, shipped: fold_task(g, opts, shipped, per_topic), typed, progress)
    summary = CdcSummary(counts=merge_counts(d["typed"] for d in done if d.get("typed")), left_out=left_out)
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for d in done:
        if d["topic"] is not None:
            by_topic.setdefault(d["topic"], []).append(d)
    tables: dict[str, pa.Table] = {}
    changes: dict[str, AppendChange] = {}
    ends: dict[str, dict[str, int]] = {}
    marks: dict[str, dict[str, str]] = {}  # per topic its table's TRUNCATED_PROPERTY, when any
    for topic, parts in sorted(by_topic.items()):
        if topic not in appending and (
            not all(p["envelope"] for p in parts) or not any(p["result"] is not None for p in parts)
        ):
            summary.left_out[topic] = NOT_AN_ENVELOPE
            continue
        from logdoctor.spark.cdc import CdcStats, build_table, columns_at_end, envelope_types

        results = [p["result"] for p in parts if p["result"] is not None]
        if not results:  # appending: the newer records change nothing (aborted, or not change events)
            summary.stats[topic] = CdcStats()
            continue
        tp = typed.topics[topic]
        value_type, source_type = envelope_types(pa.schema(list(tp.value_columns())))
        rows, stats = merge_partitions(results)
        summary.stats[topic] = stats
        if stats.refused:
            continue
        compaction = per_topic.get(topic, base).compaction
        ends[topic] = dict(held.get(topic, {}))
        for p in parts:  # a partition whose newer records all left out keeps the offset the table holds
            key = str(p["partition"])
            ends[topic][key] = max(int(p["last_offset"]), ends[topic].get(key, -1))
        truncated = dict(getattr(per_topic.get(topic, base).applied, "truncated", None) or {})
        for r in results:
            if r.truncates and r.truncates[-1].position is not None:
                truncated[r.partition] = dict(zip(r.position_names, r.truncates[-1].position, strict=True))
        if truncated:
            marks[topic] = {TRUNCATED_PROPERTY: json.dumps({str(p): v for p, v in sorted(truncated.items())})}
        if topic in appending:
            changes[topic] = append_change(rows, results, value_type, source_type, stats, compaction)
        else:
            # as of a point in time: the columns the source table had then (its last event's writer schema)
            columns = columns_at_end(results) if point_in_time is not None else None
            tables[topic] = build_table(rows, value_type, source_type, stats, compaction, columns)
    for topic in appending:
        summary.stats.setdefault(topic, CdcStats())
    # each table and the side table: Parquet committed by rename, or one commit per table (``watch``: told
    # each table once opened, :mod:`logdoctor.spark.tables.outcome`; ``marks``: per table more properties)
    side = [pa.ipc.open_stream(pa.py_buffer(d["undecoded"])).read_all() for d in done if d.get("undecoded")]
    everything: dict[str, pa.Table] = {**tables, **({UNDECODED: pa.concat_tables(side)} if side else {})}
    if fmt == "parquet":
        locations = _write_parquet(out, mode, everything)
    else:
        locations = _write_tables(
            fmt, out, mode, everything, ends, summary, catalog, table_name, items, watch, marks
        )
    if appending:
        locations.update(_append_tables(fmt, appending, changes, ends, summary, items, marks))
    summary.tables = locations
    elapsed = time.perf_counter() - started
    return job.result(
        format=fmt,
        rows=sum(t.num_rows for t in tables.values()),
        files=len(locations),
        bytes_out=0,
        elapsed_s=elapsed,
        typed=summary,
    )


def _write_parquet(out: str, mode: str, tables: Mapping[str, pa.Table]) -> dict[str, str]:
    import shutil
    import uuid

    import pyarrow.parquet as pq

    from logdoctor.spark.export import TEMPORARY, attempt_dir, commit_attempts

    os.makedirs(out, exist_ok=True)
    job = uuid.uuid4().hex[:12]
    attempt = attempt_dir(out, job, 0, 0)
    try:
        for name, table in tables.items():
            os.makedirs(os.path.join(attempt, name), exist_ok=True)
            pq.write_table(table, os.path.join(attempt, name, f"part-00000-{job}.parquet"))
        commit_attempts(out, job, [{"task": 0, "dir": attempt}], mode)
    except BaseException:
        shutil.rmtree(os.path.join(out, TEMPORARY, job), ignore_errors=True)
        raise
    open(os.path.join(out, "_SUCCESS"), "wb").close()  # as the arrow writer marks a committed job
    return {n: os.path.join(out, n) for n in tables if n != UNDECODED}


def _write_tables(
    fmt: str,
    out: str,
    mode: str,
    tables: Mapping[str, pa.Table],
    ends: Mapping[str, Mapping[str, int]],
    summary: CdcSummary,
    catalog: Mapping[str, str] | None,
    table_name: str | None,
    items: Sequence[str],
    watch: Any = None,
    marks: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, str]:
    from logdoctor.spark.tables.export import commit_files, table_properties
    from logdoctor.spark.tables.files import FileLayout, keeping_files_unless_known, new_job_id, write_file
    from logdoctor.spark.tables.typed_export import open_typed_tables, to_format
    from logdoctor.spark.typed import format_schema

    job = new_job_id()
    opened, existing = open_typed_tables(fmt, out, list(tables), mode, catalog, table_name)
    if watch is not None:
        for name, table in opened.items():
            side_append = name == UNDECODED and mode == "append" and name in existing
            watch.opened(table, table.location, "append" if side_append else "overwrite")
    locations: dict[str, str] = {}
    for name, rows in tables.items():
        table = opened[name]
        offsets = {name: dict(ends.get(name, {}))}
        if mode == "append" and name in existing and name != UNDECODED:
            held = json.loads(table.properties().get("logdoctor.offsets", "{}"))
            if held == offsets:
                summary.unchanged.append(name)
                locations[name] = table.location
                continue
        schema = format_schema(rows.schema, fmt)
        rows = to_format(rows, schema)
        layout = FileLayout(data_uri=table.data_uri, job=job)
        written = write_file(rows, layout, 0, 0, {})
        properties = {**table_properties(items, offsets, "cdc"), **(marks or {}).get(name, {})}
        # a new table, or the fold of the whole log replacing what the table held; the undecoded events of
        # an append are new ones: added to the side table
        if name not in existing:
            commit_mode = "error"
        elif name == UNDECODED and mode == "append":
            commit_mode = "append"
        else:
            commit_mode = "overwrite"
        with keeping_files_unless_known(layout) as committed:
            commit_files(table, fmt, [written], schema, commit_mode, properties)
            committed.append(written.path)
        if name != UNDECODED:
            locations[name] = table.location
    return locations


def _tables_to_continue(
    fmt: str, out: str, topics: Sequence[str], catalog: Mapping[str, str] | None, table_name: str | None
) -> tuple[dict[str, Any], dict[str, dict[str, int]]]:
    """The existing tables of ``topics`` an append continues, and per topic the offsets each was folded to
    ({partition: last offset read}, its ``logdoctor.offsets``). A table of another view is refused."""
    from logdoctor.spark.export import ExportError
    from logdoctor.spark.tables.typed_export import open_typed_table

    opened: dict[str, Any] = {}
    held: dict[str, dict[str, int]] = {}
    for topic in topics:
        table = open_typed_table(fmt, out, topic, catalog, table_name)
        if not table.exists():
            continue
        props = table.properties()
        view = props.get("logdoctor.view", "history")
        if view != "cdc":
            raise ExportError(
                f"{fmt} table {table.location} holds the {view} view, this export the cdc view: --mode "
                "append would mix them; give another --out, or --mode overwrite (nothing was written)"
            )
        opened[topic] = table
        offsets = json.loads(props.get("logdoctor.offsets", "{}")).get(topic, {})
        held[topic] = {str(p): int(n) for p, n in offsets.items()}
    return opened, held


@dataclass
class AppendChange:
    """What the newer events of a topic do to the table they continue: ``rows``, the rows they changed
    (the fold's table, :func:`logdoctor.spark.cdc.build_table`, in its column order); ``deleted``, the keys
    they deleted (physical values, as the fold keys rows); whether a truncate is among them; the key's
    columns; and per row of ``rows`` whose placeholder cells had no earlier value among the new events, the
    key whose row in the table holds it and those columns (``opens``: row index, key, column indexes)."""

    rows: pa.Table
    deleted: list[Any]
    truncate: bool
    key_names: tuple[str, ...]
    value_type: pa.StructType
    opens: list[tuple[int, Any, list[int]]]
    stats: Any


def append_change(
    rows: Sequence[tuple[Any, Any]],
    results: Sequence[Any],
    value_type: pa.StructType,
    source_type: pa.StructType,
    stats: Any,
    compaction: Any,
) -> AppendChange:
    """The :class:`AppendChange` of the newer events' fold (``rows`` and ``results``: the merge's)."""
    from logdoctor.spark.cdc import _sort_key, build_table, deleted_keys
    from logdoctor.spark.export import ExportError

    key_names = next((r.key_names for r in results if r.key_names), None)
    if key_names is None or not set(key_names) <= set(value_type.names):
        raise ExportError(
            f"--view cdc --mode append: the events' key {key_names or '(not a struct)'} does not name "
            "columns of the table; give --mode overwrite (nothing was written)"
        )
    ordered = sorted(rows, key=lambda kv: _sort_key(kv[0]))  # build_table's order
    opens = [
        (i, row.open_key, sorted(row.unresolved))
        for i, (_, row) in enumerate(ordered)
        if row.unresolved and row.open_key is not None
    ]
    truncate = any(r.truncates for r in results)
    table = build_table(ordered, value_type, source_type, stats, compaction)
    return AppendChange(table, deleted_keys(results, rows), truncate, key_names, value_type, opens, stats)


def key_table(keys: Sequence[Any], change: AppendChange, schema: pa.Schema) -> pa.Table:
    """``keys`` (as the fold keys rows) as the table's key columns, in ``schema``'s types."""
    from logdoctor.formats.registry import debezium

    columns = []
    for j, name in enumerate(change.key_names):
        physical = change.value_type.field(name)
        values = [k[j] if isinstance(k, tuple) else k for k in keys]
        _, array, _ = debezium.convert_column(physical, pa.array(values, physical.type))
        columns.append(array.cast(schema.field(name).type))
    return pa.Table.from_arrays(columns, names=list(change.key_names))


def applied_rows(table: Any, key_type: pa.DataType) -> Any:
    """What the table an append continues holds (:class:`logdoctor.spark.cdc.Applied`): per row its key
    columns (``key_type``'s fields) and the partition and source position of the event that wrote it (the
    provenance column); None when the table names no positions (the fold then compares nothing more)."""
    from logdoctor.spark.cdc import PROVENANCE_COLUMN, Applied
    from logdoctor.spark.tables.typed_export import table_columns

    if not pa.types.is_struct(key_type):
        return None
    keys = [key_type.field(i).name for i in range(key_type.num_fields)]
    names = table_columns(table, loaded=True)  # the table whose offsets the append continues
    provenance = "__" + PROVENANCE_COLUMN if "__" + PROVENANCE_COLUMN in names else PROVENANCE_COLUMN
    if provenance not in names or not set(keys) <= names:
        return None
    held = table.rows([*keys, provenance])
    prov = held.column(provenance).combine_chunks()
    if prov.type.get_field_index("position") < 0:
        return None
    marked = json.loads(table.properties().get(TRUNCATED_PROPERTY, "{}"))
    partitions = prov.field("partition").to_pylist()
    positions = prov.field("position").to_pylist()
    key_values = zip(*(held.column(k).to_pylist() for k in keys), strict=True)
    rows = {
        key: (int(part), where)
        for key, part, where in zip(key_values, partitions, positions, strict=True)
        if where is not None and part is not None
    }
    return Applied(rows, {int(p): where for p, where in marked.items()})


def fill_open_cells(table: Any, rows: pa.Table, change: AppendChange) -> pa.Table:
    """``rows`` with each open placeholder cell (:class:`AppendChange`) taken from the table's row of its
    key (null when the table has none, or holds null there); the counts of the fold's stats follow."""
    if not change.opens:
        return rows
    held = table.rows()  # in the rows' types
    current = pa.Table.from_arrays(
        [held.column(f.name).cast(f.type) for f in rows.schema], schema=rows.schema
    )
    index = {
        k: i
        for i, k in enumerate(zip(*(current.column(n).to_pylist() for n in change.key_names), strict=True))
    }
    wanted = key_table([key for _, key, _ in change.opens], change, rows.schema)
    wanted_keys = list(zip(*(wanted.column(n).to_pylist() for n in change.key_names), strict=True))
    names = [change.value_type.field(j).name for j in range(change.value_type.num_fields)]
    out = rows.to_pylist()
    old = current.to_pylist()
    stats = change.stats
    for (i, _, columns), key in zip(change.opens, wanted_keys, strict=True):
        j = index.get(key)
        if j is None:
            continue
        filled = [c for c in columns if old[j][names[c]] is not None]
        for c in filled:
            out[i][names[c]] = old[j][names[c]]
        stats.placeholder_cells_resolved += len(filled)
        stats.placeholder_cells_null -= len(filled)
        if len(filled) == len(columns):
            stats.partial_rows -= 1
    return pa.Table.from_pylist(out, schema=rows.schema)


def _append_tables(
    fmt: str,
    appending: Mapping[str, Any],
    changes: Mapping[str, AppendChange],
    ends: Mapping[str, Mapping[str, int]],
    summary: CdcSummary,
    items: Sequence[str],
    marks: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, str]:
    """Each continued table: its change committed (:mod:`logdoctor.spark.tables.cdc_commit`), or nothing
    when the newer events change nothing."""
    from logdoctor.spark.tables.cdc_commit import commit_delta, commit_iceberg
    from logdoctor.spark.tables.export import _pause, table_properties
    from logdoctor.spark.tables.files import FileLayout, new_job_id
    from logdoctor.spark.tables.typed_export import to_format
    from logdoctor.spark.typed import format_schema

    locations: dict[str, str] = {}
    for topic, table in sorted(appending.items()):
        locations[topic] = table.location
        change = changes.get(topic)
        if change is None or not (change.rows.num_rows or change.deleted or change.truncate):
            summary.unchanged.append(topic)
            continue
        schema = format_schema(change.rows.schema, fmt)
        rows = fill_open_cells(table, to_format(change.rows, schema), change)
        deleted = key_table(change.deleted, change, schema)
        properties = {
            **table_properties(items, {topic: dict(ends.get(topic, {}))}, "cdc"),
            **(marks or {}).get(topic, {}),
        }
        if fmt == "iceberg":
            layout = FileLayout(data_uri=table.data_uri, job=new_job_id())
            commit_iceberg(table, layout, rows, deleted, change.truncate, schema, properties, _pause)
        else:
            commit_delta(table, rows, deleted, change.truncate, properties, _pause)
        summary.appended[topic] = {
            "upserted": rows.num_rows,
            "deleted": deleted.num_rows,
            "truncated": change.truncate,
        }
    return locations
