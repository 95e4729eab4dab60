"""``export --view cdc``: each Debezium topic among the inputs folded into the source table it describes
(:mod:`logdoctor.spark.cdc`), written as Parquet at ``OUT/<topic>`` or as an Iceberg or Delta table there;
the events that do not decode go to ``OUT/_undecoded`` as ``--typed`` sends them (docs/cdc.md).

One Spark task per topic-partition (``view=cdc`` plans the slices of each partition into one task, as the
latest view does) reads its records as every output reads them (:func:`logdoctor.spark.sources.read_slices`:
the isolation level first), decodes them (:class:`logdoctor.spark.typed.TypedBatches`) and folds them
(:class:`logdoctor.spark.cdc.PartitionFold`): it returns the partition's live rows, one per key, never the
events. The driver merges the partitions of each topic and writes its table: the output holds the table,
so the driver's memory holds one row per live key of one topic at a time.

``--ending-timestamp T``: the table as it stood at T by the events' ``source.ts_ms`` (not the records'
Kafka timestamps: the read is not cut by it); ``--ending-offsets``: as of those offsets (exclusive).

``--mode append`` into Iceberg or Delta: when the log holds offsets above those the table was folded to
(its ``logdoctor.offsets`` property), the table is folded again from the log and replaced in one commit of
the format's library (the rows that did not change are written again); else nothing is committed and the
table is unchanged. A driver killed before or during the commit leaves the previous table.
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

from logdoctor.spark.typed import UNDECODED, TopicCounts, TypedBatches, merge_counts, undecoded_total

#: what an export of the cdc view says of a topic it writes no table for
NOT_AN_ENVELOPE = "its values are not Debezium change events (no op, before, after and source)"


@dataclass(slots=True)
class CdcSummary:
    """Per topic the fold's counts (:class:`logdoctor.spark.cdc.CdcStats`) and its table, the topics left
    out and why, and the typed decoding's counts (records sent to ``_undecoded``)."""

    stats: dict[str, Any] = field(default_factory=dict)
    tables: dict[str, str] = field(default_factory=dict)
    left_out: dict[str, str] = field(default_factory=dict)
    counts: dict[str, TopicCounts] = field(default_factory=dict)
    unchanged: list[str] = field(default_factory=list)

    @property
    def undecoded(self) -> int:
        return undecoded_total(self.counts)

    def to_json(self) -> dict[str, Any]:
        return {
            "topics": {
                t: {**s.to_json(), "table": self.tables.get(t), "unchanged": t in self.unchanged}
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
                parts.append("no event newer than the table's: unchanged")
            if s.events_uncommitted:
                parts.append(f"{s.events_uncommitted:,} events of aborted or open transactions not applied")
            if s.events_after_end:
                parts.append(f"{s.events_after_end:,} events after the point in time not applied")
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
            out.append(f"{topic}: left out: {why}")
        for topic, c in sorted(self.counts.items()):
            if c.undecoded:
                why = ", ".join(f"{r} {n:,}" for r, n in sorted(c.undecoded.items()))
                n = sum(c.undecoded.values())
                out.append(f"{topic}: {n:,} events to _undecoded ({why})")
        return out


def fold_options(opts: Any, placeholder: str | None, compaction: Any = None) -> Any:
    """The fold's options of the read options (``ending_timestamps``' default: the point in time)."""
    from logdoctor.spark.cdc import FoldOptions

    kwargs: dict[str, Any] = {"ending_timestamp_ms": opts.ending_timestamps.default}
    if placeholder:
        kwargs["placeholder"] = placeholder
    if compaction is not None:
        kwargs["compaction"] = compaction
    return FoldOptions(**kwargs)


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
            offset = d.partition(ref.topic, ref.partition).cleaner_offset()
        except Exception:
            continue
        if offset:
            cleaned.setdefault(ref.topic, {})[ref.partition] = int(offset)
    return {t: Compaction(cleaned_to=parts) for t, parts in cleaned.items()}


def fold_task(group: Sequence[Any], opts: Any, plan: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """Executor side: one partition's records decoded and folded; its undecoded rows as Arrow IPC bytes."""
    from logdoctor.formats.registry import debezium
    from logdoctor.spark.cdc import FoldOptions, PartitionFold, envelope_types
    from logdoctor.spark.sources import read_slices
    from logdoctor.spark.typed import counts_json

    splitter = TypedBatches(plan)
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
            fold.feed(good)
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


def _side_table(done: Sequence[Mapping[str, Any]]) -> pa.Table | None:
    parts = [
        pa.ipc.open_stream(pa.py_buffer(d["undecoded"])).read_all() for d in done if d.get("undecoded")
    ]
    return pa.concat_tables(parts) if parts else None


def run_cdc_export(
    spark: Any,
    paths: Sequence[str] | str,
    out: str,
    *,
    fmt: str = "parquet",
    mode: str = "error",
    options: Mapping[str, str] | None = None,
    placeholder: str | None = None,
    catalog: Mapping[str, str] | None = None,
    table_name: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Any:
    """Fold every Debezium topic of PATHS into its table under ``out`` (the module doc)."""
    from logdoctor.logdir.outputs import absolute_location, check_output_location
    from logdoctor.spark.cdc import merge_partitions
    from logdoctor.spark.consumer_view import transaction_summary
    from logdoctor.spark.export import (
        ExportError,
        ExportResult,
        OutputExistsError,
        StageProgress,
        is_local_path,
        output_has_data,
        skipped_ranges,
    )
    from logdoctor.spark.planning import (
        PerPartition,
        parse_read_options,
        plan_slices,
        plan_transactions,
        read_plan,
        task_groups,
    )
    from logdoctor.spark.typed import load_typed_registry
    from logdoctor.spark.typed_job import survey_job

    if mode not in ("error", "overwrite", "append"):
        raise ExportError(f"--mode must be one of error, overwrite, append, got {mode!r}")
    if mode == "append" and fmt == "parquet":
        raise ExportError(
            "--view cdc with --mode append to Parquet would add the changed rows a second time: use --format "
            "iceberg or delta, or --mode overwrite (nothing was written)"
        )
    if fmt not in ("parquet", "iceberg", "delta"):
        raise ExportError(f"--view cdc writes parquet, iceberg or delta, not {fmt!r}")
    out = absolute_location(out)
    if fmt == "parquet" and not is_local_path(out):
        raise ExportError(
            "--view cdc writes Parquet to a local folder; give --format iceberg|delta for a URI"
        )
    opts_map = {k: str(v) for k, v in (options or {}).items() if v is not None}
    opts = parse_read_options(opts_map)
    point_in_time = opts.ending_timestamps.default
    if opts.ending_timestamps.by_partition:
        raise ExportError("--view cdc: --ending-timestamp is one moment for the whole table (epoch ms)")
    # the point in time is the fold's (source.ts_ms), never a cut of the read by Kafka timestamps
    opts = dataclasses.replace(opts, ending_timestamps=PerPartition(), view="cdc")
    plan = read_plan(paths, {k: v for k, v in opts_map.items() if k.lower() != "endingtimestamp"})
    items = list(plan.items)
    refs = plan.refs
    check_output_location(out, [*items, *plan.log_dirs])
    if fmt == "parquet" and mode == "error" and output_has_data(out):
        raise OutputExistsError(
            f"output {out} exists and is not empty: choose another --out, or --mode overwrite "
            "(nothing was written or deleted)"
        )
    loaded = load_typed_registry(items, opts, opts_map)
    txns = plan_transactions(refs, opts)
    started = time.perf_counter()
    typed = survey_job(spark, refs, opts, txns, loaded.registry)
    compactions = compaction_of(refs)
    base = dataclasses.replace(fold_options(opts, placeholder), ending_timestamp_ms=point_in_time)
    per_topic = {t: dataclasses.replace(base, compaction=c) for t, c in compactions.items()}
    per_topic[""] = base
    from logdoctor.formats.registry.debezium import is_envelope

    cdc_topics = {t for t, tp in typed.topics.items() if tp.values_typed and is_envelope(tp.value_type)}
    left_out = {t: NOT_AN_ENVELOPE for t in typed.topics if t not in cdc_topics}
    cdc_refs = [r for r in refs if r.topic in cdc_topics]
    groups = task_groups(plan_slices(cdc_refs, opts, txns), opts)
    tracker = StageProgress(spark, progress) if progress is not None else None
    if tracker is not None:
        tracker.__enter__()
    try:
        done: list[dict[str, Any]] = []
        if groups:
            from logdoctor.spark.typed import broadcast, shipped

            plan_b = broadcast(spark, typed)  # the registry and the topics' types: once per executor
            done = (
                spark.sparkContext.parallelize(list(groups), len(groups))
                .map(lambda g: fold_task(g, opts, shipped(plan_b), per_topic))
                .collect()
            )
    finally:
        if tracker is not None:
            tracker.__exit__(None, None, None)
    summary = CdcSummary(counts=merge_counts(d["typed"] for d in done if d.get("typed")), left_out=left_out)
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for d in done:
        if d["topic"] is not None:
            by_topic.setdefault(d["topic"], []).append(d)
    tables: dict[str, pa.Table] = {}
    ends: dict[str, dict[str, int]] = {}
    for topic, parts in sorted(by_topic.items()):
        if not all(p["envelope"] for p in parts) or not any(p["result"] is not None for p in parts):
            summary.left_out[topic] = NOT_AN_ENVELOPE
            continue
        from logdoctor.spark.cdc import build_table, envelope_types

        tp = typed.topics[topic]
        value_type, source_type = envelope_types(pa.schema(list(tp.value_columns())))
        rows, stats = merge_partitions([p["result"] for p in parts if p["result"] is not None])
        summary.stats[topic] = stats
        if stats.refused:
            continue
        compaction = per_topic.get(topic, base).compaction
        tables[topic] = build_table(rows, value_type, source_type, stats, compaction)
        ends[topic] = {str(p["partition"]): int(p["last_offset"]) for p in parts}
    side = _side_table(done)
    locations = _write(fmt, out, mode, tables, side, ends, summary, catalog, table_name, items)
    summary.tables = locations
    elapsed = time.perf_counter() - started
    segs = [s for ref in refs for s in ref.segments]
    skipped = skipped_ranges(
        spark,
        items,
        opts_map,
        "arrow",
        [u for d in done for u in d.get("undecodable") or ()],
        [p for d in done for p in d.get("skipped") or ()],
        plan,
    )
    return ExportResult(
        out_dir=out,
        format=fmt,
        rows=sum(t.num_rows for t in tables.values()),
        files=len(locations),
        bytes_out=0,
        bytes_in=sum(s.size for s in segs),
        segments=len(segs),
        skipped=skipped,
        elapsed_s=elapsed,
        writer="arrow",
        mode=mode,
        left_out=list(plan.left_out),
        transactions=transaction_summary(refs, txns, opts),
        isolation_level=opts.isolation_level,
        view="cdc",
        typed=summary,
    )


def _write(
    fmt: str,
    out: str,
    mode: str,
    tables: Mapping[str, pa.Table],
    side: pa.Table | None,
    ends: Mapping[str, Mapping[str, int]],
    summary: CdcSummary,
    catalog: Mapping[str, str] | None,
    table_name: str | None,
    items: Sequence[str],
) -> dict[str, str]:
    """Write each table (and the side table): Parquet committed by rename, or one commit per table."""
    everything = dict(tables)
    if side is not None and side.num_rows:
        everything[UNDECODED] = side
    if fmt == "parquet":
        return _write_parquet(out, mode, everything)
    return _write_tables(fmt, out, mode, everything, ends, summary, catalog, table_name, items)


def _write_parquet(out: str, mode: str, tables: Mapping[str, pa.Table]) -> dict[str, str]:
    import shutil
    import uuid

    import pyarrow.parquet as pq

    from logdoctor.spark.export import TEMPORARY, _clear_output, commit_attempts

    os.makedirs(out, exist_ok=True)
    job = uuid.uuid4().hex[:12]
    attempt = os.path.join(out, TEMPORARY, job, "task-00000-attempt-0")
    try:
        for name, table in tables.items():
            os.makedirs(os.path.join(attempt, name), exist_ok=True)
            pq.write_table(table, os.path.join(attempt, name, f"part-00000-{job}.parquet"))
        if mode == "overwrite":
            _clear_output(out)
        commit_attempts(out, job, [{"task": 0, "dir": attempt}])
    except BaseException:
        shutil.rmtree(os.path.join(out, TEMPORARY, job), ignore_errors=True)
        raise
    with open(os.path.join(out, "_SUCCESS"), "wb"):
        pass
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
) -> dict[str, str]:
    from logdoctor.spark.tables.files import FileLayout, new_job_id, remove_uncommitted
    from logdoctor.spark.tables.typed_export import open_typed_tables, table_properties, to_format, write_file
    from logdoctor.spark.typed import format_schema

    job = new_job_id()
    opened, existing = open_typed_tables(fmt, out, list(tables), mode, catalog, table_name)
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
        properties = table_properties(items, offsets, "cdc")
        # the table is the fold of the whole log: it replaces what the table held (the side table too)
        commit_mode = "overwrite" if name in existing else "error"
        committed: list[str] = []
        try:
            if fmt == "iceberg":
                table.commit([written.path], schema, commit_mode, properties, properties)
            else:
                table.commit([written], schema, commit_mode, properties, [])
            committed = [written.path]
        finally:
            remove_uncommitted(layout, committed)
        if name != UNDECODED:
            locations[name] = table.location
    return locations
