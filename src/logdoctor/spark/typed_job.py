"""The driver side of typed tables: the registry of the inputs, the first pass as a Spark job, the summary.

(:mod:`logdoctor.spark.typed` holds what the executors run.)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from logdoctor.logdir.read_options import ReadOptions
from logdoctor.spark.typed import (  # noqa: F401 (load_typed_registry: the driver's entry point)
    TopicCounts,
    TypedPlan,
    broadcast,
    load_typed_registry,
    merge_counts,
    merge_surveys,
    plan_topics,
    shipped,
    survey,
    undecoded_total,
)


@dataclass(slots=True)
class TypedSummary:
    """What a typed export made of each topic, and of the registry it used."""

    counts: dict[str, TopicCounts] = field(default_factory=dict)
    tables: dict[str, str] = field(default_factory=dict)  # topic -> table location
    registry_sources: list[str] = field(default_factory=list)
    registry_notes: list[str] = field(default_factory=list)
    schemas: int = 0

    @property
    def undecoded(self) -> int:
        return undecoded_total(self.counts)

    def table_of(self, topic: str) -> str | None:
        """The table of ``topic``; None when none of its records went there (all in ``_undecoded``) and no
        folder is there (the Parquet export writes none for it; issue 75). An Iceberg or Delta table is
        made empty, and a table given by URI is named as it is."""
        import os

        where = self.tables.get(topic)
        c = self.counts.get(topic)
        all_sent_away = c is not None and c.records and c.records <= sum(c.undecoded.values())
        if where and all_sent_away and "://" not in where and not os.path.exists(where):
            return None
        return where

    def to_json(self) -> dict[str, Any]:
        return {
            "registry": {
                "sources": list(self.registry_sources),
                "schemas": self.schemas,
                "notes": list(self.registry_notes),
            },
            "topics": {t: {**c.to_json(), "table": self.table_of(t)} for t, c in sorted(self.counts.items())},
            "undecoded": self.undecoded,
        }

    def lines(self) -> list[str]:
        """One line per topic for the text summary (and the causes when a schema id was missing)."""
        out = []
        for topic, c in sorted(self.counts.items()):
            parts = [f"{c.decoded:,} decoded"]
            if c.schema_deleted:
                parts.append(f"{c.schema_deleted:,} of them by a soft-deleted schema (kafka.schema_deleted)")
            if c.tombstones:
                parts.append(f"{c.tombstones:,} tombstones")
            if c.raw:
                parts.append(f"{c.raw:,} values without a schema (kept as bytes in column value)")
            if c.undecoded:
                why = ", ".join(f"{r} {n:,}" for r, n in sorted(c.undecoded.items()))
                parts.append(f"{sum(c.undecoded.values()):,} to _undecoded ({why})")
            if c.keys_undecoded:
                why = ", ".join(f"{r} {n:,}" for r, n in sorted(c.keys_undecoded.items()))
                parts.append(f"{sum(c.keys_undecoded.values()):,} keys not decoded ({why}; kafka.key null)")
            where = self.table_of(topic)
            out.append(f"{topic}: {'; '.join(parts)}" + (f" -> {where}" if where else ""))
            out.extend(f"  {topic}: {note}" for note in c.notes)
        missing = {i for c in self.counts.values() for i in c.missing_ids}
        if missing:
            from logdoctor.logdir.schemas_store import LoadedRegistry, missing_ids_text

            out.append(missing_ids_text(missing, LoadedRegistry(None, tuple(self.registry_sources))))  # type: ignore[arg-type]
        return out


#: inputs of at most this many bytes (local segments) are surveyed by the driver itself: the same code on
#: the same groups, milliseconds, where a Spark job on a cold JVM costs seconds (issue 76)
DRIVER_SURVEY_BYTES = 64 * 1024 * 1024


def surveyed_on_driver(groups: Sequence[Sequence[Any]], limit: int = DRIVER_SURVEY_BYTES) -> bool:
    """Whether the first pass over ``groups`` runs on the driver: every slice a local segment (none read
    by byte ranges: a URI or the remote tier) and their segments at most ``limit`` bytes in all."""
    segs = {sl.segment.path: sl.segment for group in groups for sl in group}
    return all(not s.ranged for s in segs.values()) and sum(s.size for s in segs.values()) <= limit


def survey_job(spark: Any, refs: Sequence[Any], opts: Any, txns: Any, registry: Any) -> TypedPlan:
    """The first pass: one Spark task per group of slices (the groups the write job uses) says which writer
    schemas its topics name; the driver plans each topic's table
    (:func:`logdoctor.spark.typed.plan_topics`). Small local inputs (:func:`surveyed_on_driver`) are
    surveyed group by group on the driver, no Spark job."""
    from logdoctor.logdir.slices import plan_slices, task_groups

    groups = task_groups(plan_slices(refs, opts, txns), opts)
    if not groups:
        return plan_topics({}, registry)
    if surveyed_on_driver(groups):
        from logdoctor.spark.sources.slice_reader import read_slices

        return plan_topics(merge_surveys(survey(read_slices(g, opts), registry) for g in groups), registry)

    registry_b = broadcast(spark, registry)

    def run(group: Any) -> Any:
        from logdoctor.spark.sources.slice_reader import read_slices

        return survey(read_slices(group, opts), shipped(registry_b))

    parts = spark.sparkContext.parallelize(list(groups), len(groups)).map(run).collect()
    return plan_topics(merge_surveys(parts), registry)


def summary_of(parts: Sequence[Mapping[str, Any]], loaded: Any, tables: Mapping[str, str]) -> TypedSummary:
    registry = getattr(loaded, "registry", None)
    return TypedSummary(
        counts=merge_counts(parts),
        tables=dict(tables),
        registry_sources=list(getattr(loaded, "sources", []) or []),
        registry_notes=list(getattr(loaded, "notes", []) or []),
        schemas=len(registry.schemas) if registry is not None else 0,
    )


def write_with_spark(
    spark: Any, items: Sequence[str], opts: ReadOptions, plan: TypedPlan, out: str, fmt: str, mode: str
) -> tuple[int, list[dict[str, Any]]]:
    """The spark writer's typed export: each topic's ``kafka-log`` frame (``typed=true``, the first pass's
    plan handed over) written to ``OUT/<topic>`` and the side table to ``OUT/_undecoded``, each committed by
    Spark's committer. Returns the rows written and the counts per topic
    (:meth:`logdoctor.spark.typed.TopicCounts.to_json` form)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    from logdoctor.spark.typed import UNDECODED
    from logdoctor.spark.typed_frame import encode_plan

    base = dataclasses.replace(opts, typed_plan=encode_plan(plan), typed=True)
    spark_mode = "errorifexists" if mode == "error" else mode
    counts: dict[str, TopicCounts] = {}
    rows = 0
    untyped = dataclasses.replace(opts, typed=False, undecoded=False, schemas=())
    raw = (
        spark.read.format("kafka-log")
        .options(**untyped.to_options())
        .load(list(items))
        .where("not is_control")
        .groupBy("topic")
        .agg(
            F.count(F.lit(1)).alias("records"),
            F.sum(F.col("value").isNull().cast("long")).alias("tombstones"),
        )
        .collect()
    )
    totals = {r["topic"]: (int(r["records"]), int(r["tombstones"] or 0)) for r in raw}
    for n, topic in enumerate(sorted(plan.topics)):
        obs = Observation(f"logdoctor-typed-{n}")
        frame = dataclasses.replace(base, topics=topic, undecoded=False)
        reader = spark.read.format("kafka-log").options(**frame.to_options())
        df = reader.load(list(items))
        df = df.observe(
            obs,
            F.count(F.lit(1)).alias("rows"),
            F.sum(F.col("kafka.schema_deleted").cast("long")).alias("deleted"),
        )
        df.write.mode(spark_mode).format(fmt).save(f"{out.rstrip('/')}/{topic}")
        got = obs.get
        written = int(got.get("rows") or 0)
        rows += written
        records, tombstones = totals.get(topic, (written, 0))
        c = counts.setdefault(topic, TopicCounts())
        c.notes = list(plan.topics[topic].notes)
        c.records, c.tombstones = records, tombstones
        if plan.topics[topic].values_typed:
            c.decoded, c.schema_deleted = written - tombstones, int(got.get("deleted") or 0)
        else:
            c.raw = written - tombstones
    side = f"{out.rstrip('/')}/{UNDECODED}"
    side_options = dataclasses.replace(base, undecoded=True).to_options()
    spark.read.format("kafka-log").options(**side_options).load(list(items)).write.mode(spark_mode).format(
        fmt
    ).save(side)
    for r in spark.read.format(fmt).load(side).groupBy("topic", "reason", "schema_id").count().collect():
        c = counts.setdefault(r["topic"], TopicCounts())
        c.undecoded[r["reason"]] += int(r["count"])
        if r["reason"] in ("unknown_schema_id", "schema_hard_deleted") and r["schema_id"] is not None:
            c.missing_ids.add(int(r["schema_id"]))
    return rows, [{t: c.to_json() for t, c in counts.items()}]
