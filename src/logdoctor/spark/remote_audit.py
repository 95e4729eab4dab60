"""The remote tier audit at fleet scale (``census --remote-storage`` / ``--remote-inventory``).

The rules are those of :mod:`logdoctor.checks.remote_audit` (the scan's), as Spark SQL over two
DataFrames built on executors, so that nothing proportional to the store comes to the driver:

- ``objects``: one row per segment object, a task per listing part (an S3 Inventory data file; a direct
  listing is one recursive list of the store's root in one task: never a LIST per partition), the key
  parsed by :func:`logdoctor.logdir.remote_layouts.parse_object_key`;
- ``segments``: one row per remote segment after the replay of ``__remote_log_metadata``, a task per
  metadata partition (one copy of each, from the brokers' log dirs);

joined per (topic id, partition, segment id), aggregated per partition. Only partitions whose metadata
partition was read whole are compared (never "leaked" from events not read). The driver collects the
metadata partitions read (at most their count, with each one's newest event time) and builds nothing
else: the findings are made on the executors and unioned into the census's findings table (the driver
keeps its first rows and counts).

Overlaps, leader-epoch lineage breaks and dangling uploads are not restated in SQL: each partition's
segment rows (with their events and objects) are gathered into one task with the census row of its
replica with the highest log end offset (its ``leader-epoch-checkpoint`` lineage, log end, log start and
local log start offsets), and the scan's own rule runs there
(:func:`logdoctor.checks.remote_audit.lineage_audit`, :func:`~logdoctor.checks.remote_audit.
dangling_uploads`) with the scan's finding builders: the same inputs give the same findings.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from typing import Any

from logdoctor.checks.remote_audit import REQUIRED
from logdoctor.logdir.disk import human_bytes
from logdoctor.logdir.remote_metadata import (
    DEFAULT_METADATA_PARTITIONS,
    REMOTE_LOG_METADATA_TOPIC,
    SegmentState,
    metadata_partition_for,
)
from logdoctor.spark.arrow_rows import BATCH_ROWS, arrow_batches

__all__ = ["OBJECT_DDL", "SEGMENT_DDL", "audit_findings", "metadata_folders", "object_frame", "segment_frame"]

OBJECT_DDL = (
    "topic_id string, topic string, partition int, layout string, folder string, segment_id string, "
    "start_offset bigint, suffix string, key string, size bigint"
)
SEGMENT_DDL = (
    "topic_id string, topic string, partition int, metadata_partition int, segment_id string, "
    "start_offset bigint, end_offset bigint, max_timestamp_ms bigint, first_epoch int, last_epoch int, "
    "epochs string, size bigint, state int, partition_deleted boolean, event_timestamp_ms bigint, "
    "broker_id int, leader_epochs array<struct<epoch:int,start_offset:bigint>>, "
    "events array<struct<state:string,event_timestamp_ms:bigint,broker_id:int,path:string,position:bigint,"
    "offset:bigint>>"
)
#: the replica whose leader-epoch lineage a partition's remote tier is checked against (a census row of
#: the replicas table, the one with the highest log end offset: the census's leader)
REPLICA_COLUMNS = (
    "path", "log_dir", "leader_epochs", "log_end_offset", "local_log_start_offset", "log_start_offset"
)  # fmt: skip
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
    from logdoctor.logdir.remote_layouts import parse_object_key

    for obj in objects:
        k = parse_object_key(obj.key)
        if k is None:
            continue
        folder = obj.key[: obj.key.rfind("/")]
        yield (
            k.topic_id, k.topic, k.partition, k.layout, folder, k.segment_id, k.start_offset, k.suffix,
            obj.key, obj.size,
        )  # fmt: skip




def _object_batch(keys: list[str], sizes: list[int]) -> Any:
    """The OBJECT_DDL rows (an Arrow record batch) of the segment objects among ``keys``: those
    :func:`logdoctor.logdir.remote_layouts.parse_object_key` names, as :func:`_object_rows` makes them."""
    import pyarrow as pa

    from logdoctor.logdir.remote_layouts import parse_object_key

    cols: list[list[Any]] = [[] for _ in range(10)]
    (tid, topic, part, layout, folder, seg, start, suffix, key, size) = cols
    for k, n in zip(keys, sizes, strict=True):
        p = parse_object_key(k)
        if p is None:
            continue
        tid.append(p.topic_id)
        topic.append(p.topic)
        part.append(p.partition)
        layout.append(p.layout)
        folder.append(k[: k.rfind("/")])
        seg.append(p.segment_id)
        start.append(p.start_offset)
        suffix.append(p.suffix)
        key.append(k)
        size.append(n)
    s, i32, i64 = pa.string(), pa.int32(), pa.int64()
    types = (s, s, i32, s, s, s, i64, s, s, i64)  # OBJECT_DDL's
    names = [f.split()[0] for f in OBJECT_DDL.split(", ")]
    arrays = [pa.array(c, t) for c, t in zip(cols, types, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, names=names)


def _inventory_batches(manifest: Any, batches: Iterator[Any]) -> Iterator[Any]:
    """mapInArrow: the segment objects of the data files named in ``batches`` (column ``file``)."""
    from logdoctor.logdir.store_listing import read_inventory_sizes

    for b in batches:
        for file_key in b.column(0).to_pylist():
            keys, sizes = read_inventory_sizes(manifest, file_key)
            for i in range(0, max(len(keys), 1), BATCH_ROWS):
                yield _object_batch(keys[i : i + BATCH_ROWS], sizes[i : i + BATCH_ROWS])


def _listing(store: str) -> Iterator[tuple[Any, ...]]:
    from logdoctor.logdir.store_listing import list_store

    yield from _object_rows(list_store(store))


def object_frame(spark: Any, *, remote_storage: str | None, remote_inventory: str | None) -> Any:
    """The segment objects of the store: a task per inventory data file, or one listing task."""
    sc = spark.sparkContext
    if remote_inventory is not None:
        from logdoctor.logdir.store_listing import read_inventory_manifest

        manifest = read_inventory_manifest(remote_inventory)  # small: the list of data files
        keys = [(k,) for k, _s, _m in manifest.files]
        files = spark.createDataFrame(sc.parallelize(keys, max(1, len(keys))), "file string")
        return files.mapInArrow(lambda it: _inventory_batches(manifest, it), OBJECT_DDL)
    assert remote_storage is not None
    return spark.createDataFrame(sc.parallelize([remote_storage], 1).flatMap(_listing), OBJECT_DDL)


def _replay_part(item: tuple[int, str, int]) -> Iterator[tuple[Any, ...]]:
    from logdoctor.checks.remote_audit import newest_event_ms
    from logdoctor.logdir.remote_metadata import replay_metadata_folders

    mp, folder, n = item
    md = replay_metadata_folders({mp: folder}, num_partitions=n)
    status = "incomplete" if mp in md.incomplete else "read"
    # the status row: event_timestamp_ms is the newest event of the metadata partition
    newest = newest_event_ms(md.partitions.values())
    yield ("", "", -1, mp, "", -1, -1, -1, None, None, status, 0, -1, False, newest, None, None, None)
    if status != "read":
        return
    for tip, rp in md.partitions.items():
        for seg in rp.segments.values():
            epochs = [e for e, _o in seg.leader_epochs]
            yield (
                tip.topic_id, tip.topic, tip.partition, mp, seg.segment_id, seg.start_offset,
                seg.end_offset, seg.max_timestamp_ms, min(epochs, default=None), max(epochs, default=None),
                ", ".join(f"{e}@{o}" for e, o in seg.leader_epochs), seg.size, int(seg.state), rp.deleted,
                seg.first_event.event_timestamp_ms, seg.first_event.broker_id,
                [(e, o) for e, o in seg.leader_epochs],
                [
                    (e.state, e.event_timestamp_ms, e.broker_id, e.path, e.position, e.offset)
                    for e in seg.events
                ],
            )  # fmt: skip


def _replay_batches(items: Iterator[Any], schema: Any) -> Iterator[Any]:
    """mapInArrow: the SEGMENT_DDL rows of the metadata partitions named in ``items`` (mp, folder, n)."""
    for b in items:
        for item in zip(*(b.column(i).to_pylist() for i in range(3)), strict=True):
            yield from arrow_batches(_replay_part(item), schema)


def segment_frame(spark: Any, folders: dict[int, str], num_partitions: int) -> Any:
    """The remote segments of every metadata partition in ``folders`` (a task each); the rows with
    ``partition = -1`` say which metadata partitions were read whole (``epochs`` "read") or not."""
    from pyspark.sql.pandas.types import to_arrow_schema

    items = [(mp, folder, num_partitions) for mp, folder in sorted(folders.items())]
    rdd = spark.sparkContext.parallelize(items, max(1, len(items)))
    frame = spark.createDataFrame(rdd, "mp int, folder string, n int")
    schema = to_arrow_schema(spark.createDataFrame([], SEGMENT_DDL).schema)
    return frame.mapInArrow(lambda it: _replay_batches(it, schema), SEGMENT_DDL)


# --- findings (made on the executors) ------------------------------------------------------------------


def _row(f: Any) -> tuple[Any, ...]:
    """An audit finding as a census findings row: no command (its fix's words say what to do)."""
    from logdoctor.spark.census_input_checks import finding_values

    return (*finding_values(None, None, f, f.position, f.offset), "", [])


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
        size=human_bytes(r["bytes"]),
        source=source,
        metadata_partition=f"{REMOTE_LOG_METADATA_TOPIC}-{r['metadata_partition']}",
        why=r["why"],
        delete=delete,
    )
    return _row(f)


def _missing(r: dict[str, Any], source: str) -> tuple[Any, ...]:
    from logdoctor.checks import catalog
    from logdoctor.checks.remote_audit import missing_key, missing_what
    from logdoctor.checks.remote_tier import (
        _when,
        ranges_text,  # noqa: F401 (same wording as the scan)
    )

    miss = list(r["missing"]) if r["missing"] is not None else ["all"]
    lo = r["prev_max_timestamp_ms"]
    time_range = (
        f"after {_when(lo)} and up to {_when(r['max_timestamp_ms'])}"
        if lo is not None
        else f"up to {_when(r['max_timestamp_ms'])}"
    )
    stem = f"{r['start_offset']:020d}-{r['segment_id']}"
    base = r["folder"] or f"<{r['topic']}-{r['partition']} folder of the store>"
    keys = (
        f"{base}/{stem}.<suffix>"
        if miss == ["all"]
        else ", ".join(f"{base}/{stem}.{missing_key(s)}" for s in miss)
    )
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
        what="every object of the segment" if miss == ["all"] else ", ".join(missing_what(s) for s in miss),
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
    return _row(f)


def _remote_partition(r: dict[str, Any]) -> Any:
    """The partition's remote tier as the replay made it, from its segment rows gathered in one task."""
    from logdoctor.logdir.remote_metadata import RemoteEvent, RemotePartition, RemoteSegment, TopicIdPartition

    tip = TopicIdPartition(r["topic_id"], r["topic"], r["partition"])
    segments = {}
    for x in r["segments"]:
        events = [
            RemoteEvent(
                e["state"], e["event_timestamp_ms"], e["broker_id"], e["path"], e["position"], e["offset"]
            )
            for e in x["events"]
        ]
        segments[x["segment_id"]] = RemoteSegment(
            x["segment_id"], tip, x["start_offset"], x["end_offset"], x["max_timestamp_ms"],
            tuple((e["epoch"], e["start_offset"]) for e in x["leader_epochs"]), x["size"],
            SegmentState(x["state"]), x["broker_id"], x["event_timestamp_ms"], events=events,
        )  # fmt: skip
    return RemotePartition(tip, r["metadata_partition"], segments)


def _dangling(
    r: dict[str, Any], seg: Any, why: str, objs: dict[str, Any] | None, where: str, source: str
) -> tuple[Any, ...]:
    from logdoctor.checks import catalog
    from logdoctor.checks.remote_tier import _when

    keys = list(objs["keys"] or [])[:KEYS_SHOWN] if objs is not None else []
    objects = (
        f"{objs['objects']} objects of it ({objs['bytes']} bytes) are in the store ({source}): "
        f"{', '.join(keys)}"
        if keys and objs is not None
        else f"no object of it is in the store ({source})"
    )
    ev = seg.first_event
    f = catalog.make(
        "REMOTE_UPLOAD_UNFINISHED",
        where,
        offset=seg.start_offset,
        topic_partition=f"{r['topic']}-{r['partition']}",
        segment_id=seg.segment_id,
        start_offset=seg.start_offset,
        end_offset=seg.end_offset,
        size=human_bytes(seg.size),
        broker_id=ev.broker_id,
        started=_when(ev.event_timestamp_ms),
        dangling=why,
        objects=objects,
        covered="the census does not say whether a copied segment holds its offsets: scan the partition's "
        "log dirs with --remote-storage",
        list_hint="",
    )
    return _row(f)


def _partition_rows(r: dict[str, Any], newest_ms: int | None, source: str) -> Iterator[tuple[Any, ...]]:
    """The lineage and dangling-upload findings of one partition: the scan's rule
    (:func:`logdoctor.checks.remote_audit.lineage_audit`, :func:`~logdoctor.checks.remote_audit.
    dangling_uploads`) and findings (:mod:`logdoctor.checks.remote_store`), on its metadata rows and the
    replica (``r``'s replica columns, None when no log dir holds it) gathered into one task."""
    from logdoctor.checks.remote_audit import dangling_uploads, lineage_audit
    from logdoctor.checks.remote_store import epoch_break_finding, lineage_text, overlap_finding

    rp = _remote_partition(r)
    epochs = r["leader_epochs"]
    lineage = [(e["epoch"], e["start_offset"]) for e in epochs] if epochs is not None else None
    overlaps, breaks = lineage_audit(
        rp,
        lineage=lineage,
        log_end_offset=r["log_end_offset"],
        local_log_start_offset=r["local_log_start_offset"],
        log_start_offset=r["log_start_offset"],
    )
    tp = f"{r['topic']}-{r['partition']}"
    where = r["path"] or r["folder"] or source  # as the scan's: the replica, the store's folder, the listing
    logdir = r["log_dir"] or ""
    mp = f"{REMOTE_LOG_METADATA_TOPIC}-{r['metadata_partition']}"
    objs = {x["segment_id"]: x for x in r["segments"] if x["objects"]}
    for first, second in overlaps:
        so = objs.get(second.segment_id)
        f = overlap_finding(
            first, second, where=where, logdir=logdir, topic_partition=tp, metadata_partition=mp,
            second_bytes=so["bytes"] if so is not None else second.size,
        )  # fmt: skip
        yield _row(f)
    lineage_source, lineage_str = lineage_text(r["path"], lineage or [])
    for br in breaks:
        f = epoch_break_finding(
            br, where=where, logdir=logdir, topic_partition=tp, lineage_source=lineage_source,
            lineage=lineage_str,
        )  # fmt: skip
        yield _row(f)
    for seg, why in dangling_uploads(rp, newest_ms):
        yield _dangling(r, seg, why, objs.get(seg.segment_id), r["folder"] or tp, source)


def audit_findings(
    spark: Any,
    log_dirs: Sequence[str],
    *,
    remote_storage: str | None = None,
    remote_inventory: str | None = None,
    num_partitions: int | None = None,
    replicas: Any = None,
) -> Any:
    """The audit's findings as a DataFrame of the census's findings columns (FINDING_OUT_DDL).
    ``replicas``: the census's replicas table (the leader-epoch lineage and offsets of each partition's
    replica with the highest log end offset; None: no local log known). Dangling uploads
    (:func:`logdoctor.checks.remote_audit.dangling_uploads`, against the newest event of the metadata
    partitions read) are REMOTE_UPLOAD_UNFINISHED with the objects they left (the census drops the
    brokers' scans' own)."""
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
    status = (
        segs_all.where(F.col("partition") == -1)
        .select("metadata_partition", "epochs", "event_timestamp_ms")
        .collect()
    )
    complete = sorted(r["metadata_partition"] for r in status if r["epochs"] == "read")
    stamps = [r["event_timestamp_ms"] for r in status if r["event_timestamp_ms"] is not None]
    newest = max(stamps, default=None)  # the time the metadata read shows (dangling uploads)
    segs = segs_all.where(F.col("partition") >= 0)
    # read once (a task per listing part) into one row per segment, which the four comparisons use: the
    # objects themselves are not kept (a tenth of the rows at 5 objects per segment)
    objs = object_frame(spark, remote_storage=remote_storage, remote_inventory=remote_inventory)
    per_seg = (
        objs.groupBy("topic_id", "partition", "segment_id")
        .agg(
            F.first("topic").alias("topic"),
            F.first("layout").alias("layout"),
            F.first("folder").alias("folder"),
            F.first("start_offset").alias("start_offset"),
            F.collect_set("suffix").alias("suffixes"),
            F.max(F.when(F.col("suffix") == "log", F.col("size"))).alias("log_size"),
            F.sum("size").alias("bytes"),
            F.count(F.lit(1)).alias("objects"),
            F.sort_array(F.collect_list("key")).alias("keys"),
        )
        .persist()
    )
    mp_of = F.udf(lambda t, p: metadata_partition_for(t, p, n), T.IntegerType())
    parts = per_seg.select("topic_id", "partition").distinct()
    parts = parts.withColumn("metadata_partition", mp_of("topic_id", "partition"))
    covered_parts = parts.where(F.col("metadata_partition").isin(complete))
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
    ordered = finished.withColumn("prev_max_timestamp_ms", F.lag("max_timestamp_ms").over(w))
    folder_of = per_seg.groupBy("topic_id", "partition").agg(
        F.first("folder").alias("folder"), F.first("layout").alias("p_layout")
    )
    ordered = ordered.join(folder_of, ["topic_id", "partition"], "left")
    required = F.when(F.col("p_layout") == "aiven", F.array(*map(F.lit, REQUIRED["aiven"]))).otherwise(
        F.array(*map(F.lit, REQUIRED["kafka-local"]))
    )
    present = per_seg.select("topic_id", "partition", "segment_id", "suffixes", "log_size")
    # a Kafka-layout .log object whose size is not the metadata's (checks.remote_audit.short_log's words)
    short = F.when(
        (F.coalesce(F.col("p_layout"), F.lit("kafka-local")) == "kafka-local")
        & F.col("log_size").isNotNull()
        & (F.col("log_size") < F.col("size")),
        F.array(
            F.format_string(
                "the end of .log (%,d bytes listed where the remote log metadata records %,d)",
                "log_size",
                "size",
            )
        ),
    ).otherwise(F.array().cast("array<string>"))
    missing = (
        ordered.join(present, ["topic_id", "partition", "segment_id"], "left")
        .withColumn(
            "missing",
            F.when(F.col("suffixes").isNull(), F.lit(None).cast("array<string>")).otherwise(
                F.concat(F.array_except(required, F.col("suffixes")), short)
            ),
        )
        .where(F.col("suffixes").isNull() | (F.size("missing") > 0))
    )
    # one task per partition: its metadata rows (and each segment's objects) with its replica's lineage
    seg_objects = per_seg.select(
        "topic_id", "partition", "segment_id", F.col("objects").alias("objects"), "bytes",
        F.slice("keys", 1, KEYS_SHOWN).alias("keys"),
    )  # fmt: skip
    live_segs = segs.where(
        (F.col("state") != int(SegmentState.DELETE_SEGMENT_FINISHED))
        & ~F.col("partition_deleted")
        & F.col("metadata_partition").isin(complete)
    ).join(seg_objects, ["topic_id", "partition", "segment_id"], "left")
    seg_cols = (
        "segment_id", "start_offset", "end_offset", "max_timestamp_ms", "leader_epochs", "size", "state",
        "broker_id", "event_timestamp_ms", "events", "objects", "bytes", "keys",
    )  # fmt: skip
    groups = live_segs.groupBy("topic_id", "partition").agg(
        F.first("topic").alias("topic"),
        F.first("metadata_partition").alias("metadata_partition"),
        F.collect_list(F.struct(*seg_cols)).alias("segments"),
    )
    groups = groups.join(
        folder_of.select("topic_id", "partition", "folder"), ["topic_id", "partition"], "left"
    )
    if replicas is not None:
        rw = Window.partitionBy("topic_id", "partition").orderBy(
            F.col("log_end_offset").desc_nulls_last(), "broker", "log_dir"
        )
        chosen = (
            replicas.where((F.col("kind") == "log") & F.col("topic_id").isNotNull())
            .withColumn("_n", F.row_number().over(rw))
            .where(F.col("_n") == 1)
            .select("topic_id", "partition", *REPLICA_COLUMNS)
        )
        groups = groups.join(chosen, ["topic_id", "partition"], "left")
    else:
        for c, t in zip(REPLICA_COLUMNS, ("string", "string", "array<struct<epoch:int,start_offset:bigint>>",
                                          "bigint", "bigint", "bigint"), strict=True):  # fmt: skip
            groups = groups.withColumn(c, F.lit(None).cast(t))
    rows = (
        leaked_parts.rdd.map(lambda r: _leaked(r.asDict(), source))
        .union(missing.rdd.map(lambda r: _missing(r.asDict(), source)))
        .union(groups.rdd.flatMap(lambda r: _partition_rows(r.asDict(recursive=True), newest, source)))
    )
    out = spark.createDataFrame(rows, FINDING_OUT_DDL)
    return out
