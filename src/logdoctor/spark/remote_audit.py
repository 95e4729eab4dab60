"""The remote tier audit at fleet scale (``census --remote-storage`` / ``--remote-inventory``).

The rules are those of :mod:`logdoctor.checks.remote_audit` (the scan's), as Spark SQL over two
DataFrames built on executors, so that nothing proportional to the store comes to the driver:

- ``objects``: one row per segment object, a task per listing part (an S3 Inventory data file; a direct
  listing is one recursive list of the store's root in one task: never a LIST per partition), the key
  parsed by :func:`logdoctor.logdir.remote_tier.parse_object_key`;
- ``segments``: one row per remote segment after the replay of ``__remote_log_metadata``, a task per
  metadata partition (one copy of each, from the brokers' log dirs);

joined per (topic id, partition, segment id), aggregated per partition. Only partitions whose metadata
partition was read whole are compared (never "leaked" from events not read). The driver collects the
metadata partitions read (at most their count) and builds nothing else: the findings are made on the
executors and unioned into the census's findings table (the driver keeps its first rows and counts).

Without a local leader-epoch lineage here (the census does not join the replicas' checkpoints), the
lineage rule is the one between consecutive finished segments: an epoch never goes down along a log.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from typing import Any

from logdoctor.checks.remote_audit import REQUIRED
from logdoctor.logdir.remote_metadata import (
    DEFAULT_METADATA_PARTITIONS,
    REMOTE_LOG_METADATA_TOPIC,
    SegmentState,
    metadata_partition_for,
)

__all__ = ["OBJECT_DDL", "SEGMENT_DDL", "audit_findings", "metadata_folders", "object_frame", "segment_frame"]

OBJECT_DDL = (
    "topic_id string, topic string, partition int, layout string, folder string, segment_id string, "
    "start_offset bigint, suffix string, key string, size bigint"
)
SEGMENT_DDL = (
    "topic_id string, topic string, partition int, metadata_partition int, segment_id string, "
    "start_offset bigint, end_offset bigint, max_timestamp_ms bigint, first_epoch int, last_epoch int, "
    "epochs string, size bigint, state int, partition_deleted boolean, event_timestamp_ms bigint, "
    "broker_id int"
)
#: an upload left in COPY_SEGMENT_STARTED this long before the census's time is dangling, not in progress
#: (the copy task runs every remote.log.manager.task.interval.ms, 30 s by default, and a segment's upload
#: takes seconds to minutes; KAFKA-17062: a failed copy leaves the segment and its objects behind)
DANGLING_AFTER_MS = 3_600_000
#: keys of leaked objects a finding names (its fix's delete command); the count and bytes are all of them
KEYS_SHOWN = 100


# --- inputs --------------------------------------------------------------------------------------------


def metadata_folders(log_dirs: Sequence[str]) -> dict[int, str]:
    """One folder per ``__remote_log_metadata`` partition found in ``log_dirs`` (names only: one listing of
    each log dir; the first copy found wins)."""
    from logdoctor.logdir.names import DirKind, parse_partition_dir

    found: dict[int, str] = {}
    for d in log_dirs:
        try:
            names = sorted(os.listdir(d))
        except OSError:
            continue
        for n in names:
            if not n.startswith(REMOTE_LOG_METADATA_TOPIC):
                continue
            pd = parse_partition_dir(n)
            if pd is not None and pd.topic == REMOTE_LOG_METADATA_TOPIC and pd.kind is DirKind.LOG:
                found.setdefault(pd.partition, os.path.join(d, n))
    return found


def _object_rows(objects: Any) -> Iterator[tuple[Any, ...]]:
    from logdoctor.logdir.remote_tier import parse_object_key

    for obj in objects:
        k = parse_object_key(obj.key)
        if k is None:
            continue
        folder = obj.key[: obj.key.rfind("/")]
        yield (
            k.topic_id, k.topic, k.partition, k.layout, folder, k.segment_id, k.start_offset, k.suffix,
            obj.key, obj.size,
        )  # fmt: skip


def _inventory_part(manifest: Any, key: str) -> Iterator[tuple[Any, ...]]:
    from logdoctor.logdir.store_listing import read_inventory_file

    yield from _object_rows(read_inventory_file(manifest, key))


def _listing(store: str) -> Iterator[tuple[Any, ...]]:
    from logdoctor.logdir.store_listing import list_store

    yield from _object_rows(list_store(store))


def object_frame(spark: Any, *, remote_storage: str | None, remote_inventory: str | None) -> Any:
    """The segment objects of the store: a task per inventory data file, or one listing task."""
    sc = spark.sparkContext
    if remote_inventory is not None:
        from logdoctor.logdir.store_listing import read_inventory_manifest

        manifest = read_inventory_manifest(remote_inventory)  # small: the list of data files
        keys = [k for k, _s, _m in manifest.files]
        rdd = sc.parallelize(keys, max(1, len(keys))).flatMap(lambda k: _inventory_part(manifest, k))
    else:
        assert remote_storage is not None
        rdd = sc.parallelize([remote_storage], 1).flatMap(_listing)
    return spark.createDataFrame(rdd, OBJECT_DDL)


def _replay_part(item: tuple[int, str, int]) -> Iterator[tuple[Any, ...]]:
    from logdoctor.logdir.remote_metadata import replay_metadata_folders

    mp, folder, n = item
    md = replay_metadata_folders({mp: folder}, num_partitions=n)
    if mp in md.incomplete:
        yield ("", "", -1, mp, "", -1, -1, -1, None, None, "incomplete", 0, -1, False, None, None)
        return
    yield ("", "", -1, mp, "", -1, -1, -1, None, None, "read", 0, -1, False, None, None)
    for tip, rp in md.partitions.items():
        for seg in rp.segments.values():
            epochs = [e for e, _o in seg.leader_epochs]
            yield (
                tip.topic_id, tip.topic, tip.partition, mp, seg.segment_id, seg.start_offset,
                seg.end_offset, seg.max_timestamp_ms, min(epochs, default=None), max(epochs, default=None),
                ", ".join(f"{e}@{o}" for e, o in seg.leader_epochs), seg.size, int(seg.state), rp.deleted,
                seg.first_event.event_timestamp_ms, seg.first_event.broker_id,
            )  # fmt: skip


def segment_frame(spark: Any, folders: dict[int, str], num_partitions: int) -> Any:
    """The remote segments of every metadata partition in ``folders`` (a task each); the rows with
    ``partition = -1`` say which metadata partitions were read whole (``epochs`` "read") or not."""
    items = [(mp, folder, num_partitions) for mp, folder in sorted(folders.items())]
    rdd = spark.sparkContext.parallelize(items, max(1, len(items))).flatMap(_replay_part)
    return spark.createDataFrame(rdd, SEGMENT_DDL)


# --- findings (made on the executors) ------------------------------------------------------------------


def _row(f: Any, command: str) -> tuple[Any, ...]:
    return (None, None, f.code, f.severity.label, f.path, f.position, f.offset, f.message, f.fix, command)


def _leaked(r: dict[str, Any], source: str) -> tuple[Any, ...]:
    from logdoctor.checks import catalog
    from logdoctor.checks.remote_store import _delete_command

    keys = list(r["keys"])
    delete = _delete_command(keys)
    if r["objects"] > len(keys):
        delete += f" (and {r['objects'] - len(keys)} more objects of these segments in {r['folder']})"
    f = catalog.make(
        "REMOTE_OBJECTS_LEAKED",
        r["folder"],
        topic_partition=f"{r['topic']}-{r['partition']}",
        topic_id=r["topic_id"],
        count=r["segments"],
        objects=r["objects"],
        bytes=r["bytes"],
        source=source,
        metadata_partition=f"{REMOTE_LOG_METADATA_TOPIC}-{r['metadata_partition']}",
        why=r["why"],
        delete=delete,
    )
    return _row(f, "")


def _missing(r: dict[str, Any], source: str) -> tuple[Any, ...]:
    from logdoctor.checks import catalog
    from logdoctor.checks.remote_store import _when
    from logdoctor.checks.remote_tier import ranges_text  # noqa: F401 (same wording as the scan)

    miss = list(r["missing"]) if r["missing"] is not None else ["all"]
    lo = r["prev_max_timestamp_ms"]
    time_range = (
        f"after {_when(lo)} and up to {_when(r['max_timestamp_ms'])}"
        if lo is not None
        else f"up to {_when(r['max_timestamp_ms'])}"
    )
    stem = f"{r['start_offset']:020d}-{r['segment_id']}"
    base = r["folder"] or f"<{r['topic']}-{r['partition']} folder of the store>"
    keys = f"{base}/{stem}.<suffix>" if miss == ["all"] else ", ".join(f"{base}/{stem}.{s}" for s in miss)
    f = catalog.make(
        "REMOTE_SEGMENT_MISSING",
        base,
        offset=r["start_offset"],
        topic_partition=f"{r['topic']}-{r['partition']}",
        topic_id=r["topic_id"],
        segment_id=r["segment_id"],
        start_offset=r["start_offset"],
        end_offset=r["end_offset"],
        time_range=time_range,
        metadata_partition=f"{REMOTE_LOG_METADATA_TOPIC}-{r['metadata_partition']}",
        what="every object of the segment" if miss == ["all"] else ", ".join(f".{s}" for s in miss),
        source=source,
        held="the census does not compare it with the brokers' local logs: see each broker's scan",
        keys=keys,
        local_log_start_offset="unknown",
        delete_json=json.dumps(
            {
                "partitions": [
                    {"topic": r["topic"], "partition": r["partition"], "offset": r["end_offset"] + 1}
                ],
                "version": 1,
            },
            separators=(",", ":"),
        ),
    )
    return _row(f, "")


def _dangling(r: dict[str, Any], source: str) -> tuple[Any, ...]:
    from logdoctor.checks import catalog
    from logdoctor.checks.remote_store import _when

    keys = list(r["keys"] or [])
    objects = (
        f"{r['objects']} objects of it ({r['bytes']} bytes) are in the store ({source}): {', '.join(keys)}"
        if keys
        else f"no object of it is in the store ({source})"
    )
    f = catalog.make(
        "REMOTE_UPLOAD_UNFINISHED",
        r["folder"] or f"{r['topic']}-{r['partition']}",
        offset=r["start_offset"],
        topic_partition=f"{r['topic']}-{r['partition']}",
        segment_id=r["segment_id"],
        start_offset=r["start_offset"],
        end_offset=r["end_offset"],
        size=r["size"],
        broker_id=r["broker_id"],
        started=_when(r["event_timestamp_ms"]),
        objects=objects,
        covered="the census does not say whether a copied segment holds its offsets: scan the partition's "
        "log dirs with --remote-storage",
        list_hint="",
    )
    return _row(f, "")


def _overlap(r: dict[str, Any]) -> tuple[Any, ...]:
    from logdoctor.checks import catalog

    dup = (r["prev_start"], r["prev_end"]) == (r["start_offset"], r["end_offset"])
    shared = (max(r["prev_start"], r["start_offset"]), min(r["prev_end"], r["end_offset"]))
    f = catalog.make(
        "REMOTE_SEGMENTS_OVERLAP",
        r["folder"] or f"{r['topic']}-{r['partition']}",
        case="duplicate" if dup else None,
        offset=shared[0],
        topic_partition=f"{r['topic']}-{r['partition']}",
        metadata_partition=f"{REMOTE_LOG_METADATA_TOPIC}-{r['metadata_partition']}",
        first_id=r["prev_id"],
        first_range=f"{r['prev_start']}-{r['prev_end']}",
        first_epochs=r["prev_epochs"],
        second_id=r["segment_id"],
        second_range=f"{r['start_offset']}-{r['end_offset']}",
        second_epochs=r["epochs"],
        shared=f"{shared[0]}-{shared[1]}",
        bytes=r["size"],
    )
    return _row(f, "")


def _epoch_break(r: dict[str, Any]) -> tuple[Any, ...]:
    from logdoctor.checks import catalog

    f = catalog.make(
        "REMOTE_EPOCH_LINEAGE_BROKEN",
        r["folder"] or f"{r['topic']}-{r['partition']}",
        case="between-segments",
        offset=r["start_offset"],
        topic_partition=f"{r['topic']}-{r['partition']}",
        segment_id=r["segment_id"],
        start_offset=r["start_offset"],
        end_offset=r["end_offset"],
        epochs=r["epochs"],
        previous_id=r["prev_id"],
        previous_epochs=r["prev_epochs"],
        reason=f"it starts at epoch {r['first_epoch']}, below epoch {r['prev_last_epoch']} of the segment "
        "before it",
        lineage_source="",
        lineage="",
    )
    return _row(f, "")


def audit_findings(
    spark: Any,
    log_dirs: Sequence[str],
    *,
    remote_storage: str | None = None,
    remote_inventory: str | None = None,
    num_partitions: int | None = None,
    now_ms: int | None = None,
) -> Any:
    """The audit's findings as a DataFrame of the census's findings columns (FINDING_OUT_DDL). Uploads
    left in COPY_SEGMENT_STARTED more than :data:`DANGLING_AFTER_MS` before ``now_ms`` are
    REMOTE_UPLOAD_UNFINISHED with the objects they left (the census drops the brokers' scans' own)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from logdoctor.spark.census_sql import FINDING_OUT_DDL

    n = num_partitions or DEFAULT_METADATA_PARTITIONS
    folders = metadata_folders(log_dirs)
    source = (
        f"S3 Inventory report {remote_inventory}"
        if remote_inventory is not None
        else f"a listing of {remote_storage}"
    )
    if not folders:
        return spark.createDataFrame([], FINDING_OUT_DDL)
    segs_all = segment_frame(spark, folders, n).persist()
    status = segs_all.where(F.col("partition") == -1).select("metadata_partition", "epochs").collect()
    complete = sorted(r["metadata_partition"] for r in status if r["epochs"] == "read")
    segs = segs_all.where(F.col("partition") >= 0)
    # read once (a task per listing part), used by the four comparisons
    objs = object_frame(spark, remote_storage=remote_storage, remote_inventory=remote_inventory).persist()

    mp_of = F.udf(lambda t, p: metadata_partition_for(t, p, n), T.IntegerType())
    parts = objs.select("topic_id", "partition").distinct()
    parts = parts.withColumn("metadata_partition", mp_of("topic_id", "partition"))
    covered_parts = parts.where(F.col("metadata_partition").isin(complete))

    per_seg = objs.groupBy("topic_id", "partition", "segment_id").agg(
        F.first("topic").alias("topic"),
        F.first("layout").alias("layout"),
        F.first("folder").alias("folder"),
        F.first("start_offset").alias("start_offset"),
        F.collect_set("suffix").alias("suffixes"),
        F.sum("size").alias("bytes"),
        F.count(F.lit(1)).alias("objects"),
        F.sort_array(F.collect_list("key")).alias("keys"),
    )
    live = segs.where(
        (F.col("state") != int(SegmentState.DELETE_SEGMENT_FINISHED)) & ~F.col("partition_deleted")
    ).select("topic_id", "partition", "segment_id")
    named = segs.select("topic_id", "partition", "segment_id", "state", "partition_deleted")
    leaked = (
        per_seg.join(covered_parts, ["topic_id", "partition"])
        .join(live, ["topic_id", "partition", "segment_id"], "left_anti")
        .join(named, ["topic_id", "partition", "segment_id"], "left")
        .withColumn(
            "why",
            F.when(F.col("partition_deleted"), "the partition was deleted from the remote tier")
            .when(F.col("state").isNull(), "no event of the remote log metadata names it")
            .otherwise("its deletion finished (DELETE_SEGMENT_FINISHED)"),
        )
    )
    leaked_parts = leaked.groupBy("topic_id", "partition").agg(
        F.first("topic").alias("topic"),
        F.first("folder").alias("folder"),
        F.first("metadata_partition").alias("metadata_partition"),
        F.count(F.lit(1)).alias("segments"),
        F.sum("objects").alias("objects"),
        F.sum("bytes").alias("bytes"),
        F.array_join(F.sort_array(F.collect_set("why")), "; ").alias("why"),
        F.slice(F.sort_array(F.flatten(F.collect_list("keys"))), 1, KEYS_SHOWN).alias("keys"),
    )

    finished = segs.where(
        (F.col("state") == int(SegmentState.COPY_SEGMENT_FINISHED)) & ~F.col("partition_deleted")
    ).where(F.col("metadata_partition").isin(complete))
    w = Window.partitionBy("topic_id", "partition").orderBy("start_offset", "end_offset", "segment_id")
    before = w.rowsBetween(Window.unboundedPreceding, -1)
    ordered = (
        finished.withColumn("prev_max_timestamp_ms", F.lag("max_timestamp_ms").over(w))
        .withColumn(
            "reach", F.max(F.struct("end_offset", "start_offset", "segment_id", "epochs")).over(before)
        )
        .withColumn("prev", F.lag(F.struct("end_offset", "last_epoch", "segment_id", "epochs")).over(w))
    )
    folder_of = objs.groupBy("topic_id", "partition").agg(
        F.first("folder").alias("folder"), F.first("layout").alias("p_layout")
    )
    ordered = ordered.join(folder_of, ["topic_id", "partition"], "left")
    required = F.when(F.col("p_layout") == "aiven", F.array(*map(F.lit, REQUIRED["aiven"]))).otherwise(
        F.array(*map(F.lit, REQUIRED["kafka-local"]))
    )
    present = per_seg.select("topic_id", "partition", "segment_id", "suffixes")
    missing = (
        ordered.join(present, ["topic_id", "partition", "segment_id"], "left")
        .withColumn(
            "missing",
            F.when(F.col("suffixes").isNull(), F.lit(None).cast("array<string>")).otherwise(
                F.array_except(required, F.col("suffixes"))
            ),
        )
        .where(F.col("suffixes").isNull() | (F.size("missing") > 0))
    )
    overlaps = ordered.where(
        F.col("reach").isNotNull() & (F.col("start_offset") <= F.col("reach.end_offset"))
    )
    overlaps = (
        overlaps.withColumn("prev_start", F.col("reach.start_offset"))
        .withColumn("prev_end", F.col("reach.end_offset"))
        .withColumn("prev_id", F.col("reach.segment_id"))
        .withColumn("prev_epochs", F.col("reach.epochs"))
    )
    breaks = (
        ordered.where(
            F.col("prev").isNotNull()
            & (F.col("first_epoch") < F.col("prev.last_epoch"))
            & (F.col("start_offset") > F.col("prev.end_offset"))
        )
        .withColumn("prev_id", F.col("prev.segment_id"))
        .withColumn("prev_epochs", F.col("prev.epochs"))
        .withColumn("prev_last_epoch", F.col("prev.last_epoch"))
    )
    dangling = segs.where(
        (F.col("state") == int(SegmentState.COPY_SEGMENT_STARTED))
        & ~F.col("partition_deleted")
        & F.col("metadata_partition").isin(complete)
    )
    if now_ms is not None:
        dangling = dangling.where(F.col("event_timestamp_ms") < F.lit(now_ms - DANGLING_AFTER_MS))
    dangling = dangling.join(
        per_seg.select("topic_id", "partition", "segment_id", "folder", "objects", "bytes", "keys"),
        ["topic_id", "partition", "segment_id"],
        "left",
    ).withColumn("keys", F.slice("keys", 1, KEYS_SHOWN))
    rows = (
        leaked_parts.rdd.map(lambda r: _leaked(r.asDict(), source))
        .union(dangling.rdd.map(lambda r: _dangling(r.asDict(), source)))
        .union(missing.rdd.map(lambda r: _missing(r.asDict(), source)))
        .union(overlaps.rdd.map(lambda r: _overlap(r.asDict())))
        .union(breaks.rdd.map(lambda r: _epoch_break(r.asDict())))
    )
    out = spark.createDataFrame(rows, FINDING_OUT_DDL)
    return out
