"""The census's join, lag and fleet findings as Spark SQL over the input DataFrames.

Input: the ``replicas``, ``log_dirs`` and ``findings`` DataFrames of :mod:`logdoctor.spark.census_inputs`
(log dirs scanned on executors, inventories read by Spark, mixed). Nothing proportional to the number of
replicas comes to the driver: the per-partition join, the lag of each replica, the partitions table,
``REPLICA_LAG`` and ``TOPIC_RECREATED`` findings and the fix command of each scan finding are computed on
the executors and written by Spark; the driver collects the log dirs (a few per broker), the counts, and
the first rows of each table for the summary and the report (at most :data:`COLLECT_LIMIT` each).

Replicas are matched within a cluster (the ``cluster`` key of
:func:`logdoctor.spark.census_rules.name_brokers`: brokers are their cluster id and node id, and replicas
of two clusters are never compared) and by topic id: when the replicas of one topic name carry different
topic ids (``partition.metadata``), the topic was deleted and created again, and each id is a topic of
its own (``TOPIC_RECREATED``); lag is only computed between replicas of one id. The rules are those of
:func:`logdoctor.spark.census_rules.replica_lag`, ``partition_rows``, ``log_dir_rows`` and
``fleet_findings`` (the Python versions the tests compare with).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from logdoctor.logdir.names import CONSUMER_OFFSETS_TOPIC, METADATA_TOPIC, TRANSACTION_STATE_TOPIC
from logdoctor.spark.census_input_checks import finding_values
from logdoctor.spark.census_inputs import FINDING_DDL, QUORUM_COLUMNS, ddl_names

#: rows of each table the driver keeps for the summary, the terminal and the HTML report
COLLECT_LIMIT = 20_000


def _names(text: str) -> list[str]:
    return text.split(", ")


REPLICA_COLUMNS = _names(
    "broker, broker_id, log_dir, topic, partition, kind, path, log_start_offset, log_end_offset, "
    "high_watermark, recovery_point, segments, bytes, findings, max_log_end_offset, replica_count, "
    "lag_offsets, lag_bytes, partition_high_watermark, below_high_watermark, topic_id, cluster, "
    "local_log_start_offset, remote_storage_enabled, remote_segments, remote_bytes, remote_log_start_offset, "
    "remote_log_end_offset"
)
PARTITION_COLUMNS = _names(
    "topic, partition, replicas, brokers, max_log_end_offset, min_log_end_offset, min_log_start_offset, "
    "max_log_start_offset, high_watermark, bytes, lagging_broker, lagging_log_dir, max_lag_offsets, "
    "max_lag_bytes, topic_id, cluster, min_local_log_start_offset, max_local_log_start_offset, "
    "tiered_replicas, remote_segments, remote_bytes, remote_log_start_offset, remote_log_end_offset"
)
LOG_DIR_COLUMNS = _names(
    "broker, broker_id, log_dir, real_path, mode, cluster_id, partitions, locked, clean_shutdown, "
    "disk_total_bytes, disk_used_bytes, disk_available_bytes, disk_used_fraction, disk_used_percent, "
    "disk_source, bytes, folders"
)
#: a finding's fix as its command (a line to paste) and as argvs (a script's, as the scan's ``fix_argv``):
#: census_rules.FixCommand
FINDING_COLUMNS = [*ddl_names(FINDING_DDL), "fix_command", "fix_argv"]
FINDING_OUT_DDL = FINDING_DDL + ", fix_command string, fix_argv array<array<string>>"


@dataclass(slots=True)
class CensusFrames:
    replicas: Any
    partitions: Any
    log_dirs: Any
    findings: Any
    cached: tuple[Any, ...] = ()  # persisted DataFrames: unpersist() when the tables are written

    def unpersist(self) -> None:
        for df in self.cached:
            df.unpersist()


def _topic_keys(F: Any, Window: Any, live: Any) -> Any:
    """Per topic: ``topic_key`` '' when its replicas agree on the topic id, else the id (a topic each).

    A window over each topic's replicas, not an aggregation joined back: the shuffle by topic that it
    needs also satisfies the window of :func:`replica_table` (a partition's replicas are a topic's), so
    the replicas are read and shuffled once, and only sorted again."""
    ids = F.size(
        F.collect_set("topic_id").over(Window.partitionBy("cluster", "topic"))
    )  # a set holds no null
    return live.withColumn(
        "topic_key", F.when(ids > 1, F.coalesce(F.col("topic_id"), F.lit(""))).otherwise(F.lit(""))
    )


#: the sort the window leaves each shuffle partition in (and the written tables keep); its first four
#: columns are a partition's key (a partition of one cluster, per topic id of a recreated topic)
_WINDOW_ORDER = ("cluster", "topic", "topic_key", "partition", "broker", "log_dir")
_PARTITION_KEYS = _WINDOW_ORDER[:4]


def _partition_window(Window: Any) -> Any:
    """The window of a partition's replicas in the (broker, log dir) order, spanning the whole partition:
    its aggregates are the partition's, computed after one shuffle and one sort."""
    ordered = Window.partitionBy(*_PARTITION_KEYS).orderBy(*_WINDOW_ORDER[4:])
    return ordered.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)


def replica_table(replicas: Any) -> Any:
    """Live replicas with their lag behind the reference replica of their partition (as replica_lag: the
    newest leader epoch, then the longest log), and that replica (``leader_*``). Only what a replica's row
    needs: the partition's own columns are :func:`partition_table`'s aggregation of this (persisted) table,
    not ~15 window aggregates carried by every replica and kept on the first of each partition (at 4
    million replicas: the window's stage -17 s of CPU, its cache 429 -> 274 MB, the partitions table's
    aggregation +11 s)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    live = _topic_keys(F, Window, replicas.where(F.col("kind") == "log"))
    w = _partition_window(Window)
    leo = F.col("log_end_offset")
    size = F.coalesce("bytes", F.lit(0)).cast("bigint")
    latest = _latest_epoch(F)
    # the reference replica, in logdir.divergence.reference_key's order: the newest leader epoch (none: -1),
    # the longest log, then the first by broker, log dir
    key = F.struct(
        (-F.coalesce(latest, F.lit(-1))).alias("e"),
        (-leo).alias("k"),
        "broker",
        "log_dir",
        "log_end_offset",
        size.alias("size"),
    )
    step = live.select(
        "*",
        F.max(leo).over(w).alias("max_log_end_offset"),
        F.count(F.lit(1)).over(w).cast("int").alias("replica_count"),
        F.max("high_watermark").over(w).alias("_hw"),
        F.max(size).over(w).alias("_most"),
        F.min(F.when(leo.isNotNull(), key)).over(w).alias("leader"),
    )
    # the high watermark: the largest any checkpoint holds, at most the reference's log end (a diverged
    # replica's goes with its truncation)
    hw = F.when(F.col("_hw").isNotNull(), F.least(F.col("_hw"), F.col("leader.log_end_offset")))
    lag = F.col("leader.log_end_offset") - leo
    step = step.select(
        "*",
        F.greatest(F.lit(0).cast("bigint"), F.coalesce("leader.size", "_most") - size).alias("lag_bytes"),
        hw.alias("partition_high_watermark"),
        F.coalesce(hw.isNotNull() & leo.isNotNull() & (leo < hw), F.lit(False)).alias("below_high_watermark"),
        F.when(lag.isNotNull(), F.greatest(F.lit(0).cast("bigint"), lag)).alias("lag_offsets"),
    )
    return step.select(
        *REPLICA_COLUMNS,
        "topic_key",
        F.col("leader.broker").alias("leader_broker"),
        F.col("leader.log_dir").alias("leader_log_dir"),
        F.col("leader.log_end_offset").alias("leader_log_end_offset"),
        _latest_epoch(F).alias("latest_epoch"),  # :func:`any_epoch_spread`'s number, read with the rest
    )


#: the confs the replicas' window is persisted with (:func:`persisted_replica_table`): its cached plan
#: keeps the partitioning and order the window leaves (an adaptive plan's are unknown to the queries over the
#: cache), so the partitions' aggregation streams over each part with no shuffle and no sort, and the
#: replicas table is written with no sort again
_PERSIST_CONFS = {"spark.sql.adaptive.enabled": "false"}
#: the confs :func:`partition_table`'s rows are written with: ``collect_list`` (the brokers) and ``min`` of a
#: struct (the most lagging replica) planned as a sort aggregation, whose input the persisted window leaves
#: sorted by the partition's key (an object hash aggregation falls back to sorting every replica beyond 128
#: partitions per task: at 4 million replicas ~2 GB spilled in the 1 GiB local JVM)
PARTITION_WRITE_CONFS = {"spark.sql.execution.useObjectHashAggregateExec": "false"}


def persisted_replica_table(replicas: Any) -> Any:
    """:func:`replica_table` of ``replicas``, persisted with :data:`_PERSIST_CONFS` (not yet computed)."""
    from logdoctor.spark.census_inputs import session_confs

    with session_confs(replicas.sparkSession, _PERSIST_CONFS):
        return replica_table(replicas).persist()


def partition_table(replicas: Any) -> Any:
    """One row per partition (per topic id of a recreated topic), as :func:`census.partition_rows`, from
    :func:`replica_table`'s rows: an aggregation by the window's keys (cheaper than carrying the partition's
    columns on every replica through the window); written with :data:`PARTITION_WRITE_CONFS`, it is a sort
    aggregation that streams over the :func:`persisted_replica_table`'s parts, already split and sorted by
    those keys. The most lagging replica is the
    smallest (-lag, -lag bytes, broker, log dir); the brokers are in the window's (broker, log dir)
    order."""
    from pyspark.sql import functions as F

    size = F.coalesce("bytes", F.lit(0)).cast("bigint")
    lag = F.coalesce(F.col("lag_offsets"), F.lit(0).cast("bigint"))
    worst = F.struct(
        (-lag).alias("a"),
        (-F.col("lag_bytes")).alias("b"),
        "broker",
        "log_dir",
        lag.alias("lag"),
        "lag_bytes",
    )
    agg = replicas.groupBy(*_PARTITION_KEYS).agg(
        # the same on every replica of the partition (window aggregates)
        F.count(F.lit(1)).cast("int").alias("replicas"),
        F.max("max_log_end_offset").alias("max_log_end_offset"),
        F.max("partition_high_watermark").alias("high_watermark"),
        F.sort_array(F.collect_list("broker")).alias("brokers"),
        F.min("log_end_offset").alias("min_log_end_offset"),
        F.min("log_start_offset").alias("min_log_start_offset"),
        F.max("log_start_offset").alias("max_log_start_offset"),
        F.sum(size).cast("bigint").alias("bytes"),
        F.min(worst).alias("worst"),
        F.max("topic_id").alias("p_topic_id"),
        # a tiered replica's log start (its checkpoint) is below its local one: both are compared
        F.min("local_log_start_offset").alias("min_local_log_start_offset"),
        F.max("local_log_start_offset").alias("max_local_log_start_offset"),
        F.sum(F.coalesce("remote_storage_enabled", F.lit(False)).cast("int"))
        .cast("int")
        .alias("tiered_replicas"),
        # the remote tier is one copy for all replicas: the most any replica's metadata knows of it
        F.max("remote_segments").alias("remote_segments"),
        F.max("remote_bytes").alias("remote_bytes"),
        F.min("remote_log_start_offset").alias("remote_log_start_offset"),
        F.max("remote_log_end_offset").alias("remote_log_end_offset"),
    )
    lagging = F.col("worst.lag") > 0
    made = {  # the columns not taken as the aggregation named them
        # always true: the column stays nullable, as the table's schema has it
        "brokers": F.when(F.col("replicas") > 0, F.col("brokers")),
        "lagging_broker": F.when(lagging, F.col("worst.broker")),
        "lagging_log_dir": F.when(lagging, F.col("worst.log_dir")),
        "max_lag_offsets": F.col("worst.lag"),
        "max_lag_bytes": F.when(lagging, F.col("worst.lag_bytes")).otherwise(F.lit(0).cast("bigint")),
        "topic_id": F.col("p_topic_id"),
    }
    return agg.select(*(made[c].alias(c) if c in made else c for c in [*PARTITION_COLUMNS, "topic_key"]))


def log_dir_table(log_dirs: Any, replicas: Any) -> Any:
    """Log dirs with the bytes and number of live partition folders each holds (as log_dir_rows), and their
    broker's controller quorum (:data:`QUORUM_COLUMNS`, which the census's table leaves out)."""
    from pyspark.sql import functions as F

    size = replicas.groupBy("broker", "log_dir").agg(
        F.sum(F.coalesce("bytes", F.lit(0))).cast("bigint").alias("bytes"),
        F.count(F.lit(1)).cast("int").alias("folders"),
    )
    return (
        log_dirs.join(size, ["broker", "log_dir"], "left")
        .withColumn("bytes", F.coalesce("bytes", F.lit(0).cast("bigint")))
        .withColumn("folders", F.coalesce("folders", F.lit(0)))
        .select(*LOG_DIR_COLUMNS, *QUORUM_COLUMNS)
    )


#: a DataFrame of rows, and the function that makes a finding (:data:`FINDING_OUT_DDL`) of each
FindingSource = tuple[Any, Callable[[dict[str, Any]], tuple[Any, ...]]]


def finding_frames(spark: Any, sources: Sequence[FindingSource], on_driver: bool = False) -> list[Any]:
    """The findings of each source, made on the executors (in Arrow batches of rows); or (``on_driver``, a
    small census: few rows) here, from the rows of every source collected by one query (each row as JSON,
    nulls kept), with no Python worker started for them."""
    from functools import reduce

    from pyspark.sql import functions as F

    if not on_driver:  # each rule's function over Arrow batches of its rows (mapInArrow), not rdd.map
        from logdoctor.spark.arrow_rows import map_rows

        return [map_rows(rows, make, FINDING_OUT_DDL) for rows, make in sources]
    as_json = {"ignoreNullFields": "false"}
    tagged = [
        rows.select(F.lit(i).alias("source"), F.to_json(F.struct(*rows.columns), as_json).alias("row"))
        for i, (rows, _make) in enumerate(sources)
    ]
    made: list[list[tuple[Any, ...]]] = [[] for _ in sources]
    for r in reduce(lambda a, b: a.unionByName(b), tagged).toArrow().to_pylist():
        made[r["source"]].append(sources[r["source"]][1](json.loads(r["row"])))
    return [spark.createDataFrame(rows, FINDING_OUT_DDL) for rows in made]


#: the columns of a replica :func:`_lag_finding` reads
_LAG_FINDING_COLUMNS = _names(
    "broker, log_dir, topic, partition, path, log_end_offset, lag_offsets, lag_bytes, below_high_watermark, "
    "partition_high_watermark, leader_broker, leader_log_dir, leader_log_end_offset"
)


def _lag_finding(row: dict[str, Any]) -> tuple[Any, ...]:
    """REPLICA_LAG of one lagging replica (executor side), by the scan's rule (checks.replica_lag)."""
    from logdoctor.checks.replica_lag import lag_finding
    from logdoctor.spark.census_rules import finding_fix

    f = lag_finding(
        broker=row["broker"], log_dir=row["log_dir"], path=row["path"], topic=row["topic"],
        partition=row["partition"], log_end_offset=row["log_end_offset"], lag=row["lag_offsets"],
        lag_bytes=row["lag_bytes"] or 0, below_high_watermark=bool(row["below_high_watermark"]),
        partition_high_watermark=row["partition_high_watermark"], leader_broker=row["leader_broker"],
        leader_log_dir=row["leader_log_dir"], leader_log_end_offset=row["leader_log_end_offset"],
    )  # fmt: skip
    return (*finding_values(row["broker"], row["log_dir"], f, offset=row["log_end_offset"]), *finding_fix(f))


def lag_findings(replicas: Any, diverged: Sequence[str] = ()) -> FindingSource:
    """REPLICA_LAG for every replica behind its partition's reference replica (the newest leader epoch's:
    :func:`replica_table`'s ``leader_*`` columns), except the replicas that diverged (``diverged``: their
    paths): such a replica does not lag, it loses records when it fetches, and sync-replica would copy
    the leader over them; its fix is REPLICA_DIVERGED's export."""
    from pyspark.sql import functions as F

    # the metadata log has no REPLICA_LAG: a Raft voter or observer fetches it from the leader and truncates
    # it itself (K:raft/.../KafkaRaftClient.java), and sync-replica refuses it
    lagging = replicas.where((F.col("lag_offsets") > 0) & (F.col("topic") != METADATA_TOPIC))
    if diverged:
        lagging = lagging.where(~F.col("path").isin(sorted(set(diverged))))
    return lagging.select(*_LAG_FINDING_COLUMNS), _lag_finding


def _recreated_finding(row: dict[str, Any]) -> tuple[Any, ...]:
    from logdoctor.checks import catalog

    f = catalog.make(
        "TOPIC_RECREATED",
        row["path"],
        topic=row["topic"],
        ids=row["ids"],
        groups=row["groups"],
        logdir=row["log_dir"],
    )
    # no command fixes it: the fix's words do (a scan would only show the folder again)
    return (*finding_values(row["broker"], row["log_dir"], f), "", [])


def recreated_findings(replicas: Any) -> FindingSource:
    """TOPIC_RECREATED: one per (topic, topic id) group of a topic whose replicas carry several ids."""
    from pyspark.sql import functions as F

    rec = replicas.where(F.col("topic_key") != "")
    per_id = rec.groupBy("cluster", "topic", "topic_id").agg(
        F.sort_array(F.collect_set("broker")).alias("brokers"),
        F.min(F.struct("broker", "log_dir", "path")).alias("first"),
    )
    described = per_id.withColumn(
        "group",
        F.concat(F.coalesce("topic_id", F.lit("(none)")), F.lit(" on "), F.array_join("brokers", ", ")),
    )
    per_topic = described.groupBy("cluster", "topic").agg(
        F.count(F.lit(1)).alias("ids"),
        F.array_join(F.sort_array(F.collect_list("group")), "; ").alias("groups"),
    )
    rows = described.join(per_topic, ["cluster", "topic"]).select(
        "topic",
        "ids",
        "groups",
        F.col("first.broker").alias("broker"),
        F.col("first.log_dir").alias("log_dir"),
        F.col("first.path").alias("path"),
    )
    return rows, _recreated_finding


def _shared_id_finding(row: dict[str, Any]) -> tuple[Any, ...]:
    from logdoctor.checks import catalog

    f = catalog.make(
        "TOPIC_ID_SHARED",
        row["path"],
        topics=row["topics"],
        topic=row["topic"],
        topic_id=row["topic_id"],
        where=row["where"],
        logdir=row["log_dir"],
        details={"topic_id": row["topic_id"], "topics": row["topics"].split(", ")},
    )
    return (*finding_values(row["broker"], row["log_dir"], f), "", [])  # no command, as TOPIC_RECREATED's


def shared_id_findings(replicas: Any, on_driver: bool = False) -> FindingSource:
    """TOPIC_ID_SHARED: one per topic after the first of a (cluster, topic id) whose replicas are of
    several topics (the scans' own TOPIC_ID_SHARED, of one broker's dirs, are left out: this is the
    fleet's view of the same rule, :func:`logdoctor.checks.cross_dir`). ``on_driver`` (a small census: few
    rows, in one query, no broadcast job) makes the rule's words for every topic."""
    from pyspark.sql import functions as F

    rec = replicas.where(F.col("topic_id").isNotNull() & (F.col("kind") == "log"))
    if not on_driver:
        # the (cluster, topic id)s of several topics first (a hash aggregation of their distinct topics: a
        # few rows per topic), and the words below made of their replicas only (none in a healthy fleet),
        # not a sorted set of strings made of every replica of every topic (a sort-based aggregation that
        # spilled); the rows the join below keeps are the same
        shared = (
            rec.select("cluster", "topic_id", "topic")
            .distinct()
            .groupBy("cluster", "topic_id")
            .count()
            .where(F.col("count") > 1)
            .select("cluster", "topic_id")
        )
        rec = rec.join(F.broadcast(shared), ["cluster", "topic_id"], "left_semi")
    # the scan's words (checks.cross_dir._shared_topic_ids): per topic, its first three "t-p in log dir"
    # in order; the first replica by (partition, log dir)
    held = F.concat("topic", F.lit("-"), F.col("partition").cast("string"), F.lit(" in "), "log_dir")
    per_topic = rec.groupBy("cluster", "topic_id", "topic").agg(
        F.min(F.struct("partition", "log_dir", "broker", "path")).alias("first"),
        F.array_join(F.slice(F.sort_array(F.collect_set(held)), 1, 3), ", ").alias("held"),
    )
    item = F.struct("topic", F.concat("topic", F.lit(": "), "held").alias("text"))
    in_order = F.transform(F.sort_array(F.collect_list(item)), lambda x: x["text"])  # by topic name
    per_id = per_topic.groupBy("cluster", "topic_id").agg(
        F.array_join(F.sort_array(F.collect_list("topic")), ", ").alias("topics"),
        F.array_join(in_order, "; ").alias("where"),
        F.min("topic").alias("first_topic"),
        F.count(F.lit(1)).alias("n"),
    )
    rows = (
        per_topic.join(per_id.where(F.col("n") > 1), ["cluster", "topic_id"])
        .where(F.col("topic") != F.col("first_topic"))
        .select(
            "topic",
            "topic_id",
            "topics",
            "where",
            F.col("first.broker").alias("broker"),
            F.col("first.log_dir").alias("log_dir"),
            F.concat(F.col("first.path"), F.lit("/partition.metadata")).alias("path"),
        )
    )
    return rows, _shared_id_finding


def _scan_fix(row: dict[str, Any], dirs: dict[str, list[str]]) -> tuple[Any, ...]:
    from logdoctor.spark.census_rules import BrokerInput, FixCommand, scan_fix

    if row["code"] == "INVENTORY_UNREADABLE":
        fix = FixCommand.of(["logdoctor", "inventory"])  # run on the broker's host, with its log dirs
    else:
        fix = scan_fix(row, [BrokerInput(row["broker"], None, tuple(dirs.get(row["broker"] or "", ())))])
    return (*(row[c] for c in FINDING_COLUMNS[:-2]), *fix)


def scan_findings(
    spark: Any, findings: Any, broker_dirs: Callable[[], dict[str, list[str]]], on_driver: bool = False
) -> FindingSource:
    """The scans' findings (from either input) with the logdoctor command that fixes each (the log dirs
    of each broker, ``broker_dirs()``, broadcast to the executors; or, ``on_driver``, asked for when the
    first finding is made: the log dirs may still be being collected while the findings' rows are)."""
    if on_driver:
        return findings, lambda r: _scan_fix(r, broker_dirs())
    dirs = spark.sparkContext.broadcast(broker_dirs())
    return findings, lambda r: _scan_fix(r, dirs.value)


def full_disk_findings(spark: Any, log_dirs: list[dict[str, Any]], replicas: Any) -> list[dict[str, Any]]:
    """LOG_DIR_NEARLY_FULL from the (collected, small) log dirs and each full dir's biggest replica."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from logdoctor.spark.census_rules import NEARLY_FULL_WARN, fleet_findings

    full = [d for d in log_dirs if (d.get("disk_used_fraction") or 0.0) >= NEARLY_FULL_WARN]
    if not full:
        return []
    keys = spark.createDataFrame([(d["broker"], d["log_dir"]) for d in full], "broker string, log_dir string")
    w = Window.partitionBy("broker", "log_dir").orderBy(
        F.coalesce("bytes", F.lit(0)).desc(), F.col("topic"), F.col("partition")
    )
    biggest = [
        r.asDict()
        for r in replicas.join(F.broadcast(keys), ["broker", "log_dir"])
        .withColumn("rank", F.row_number().over(w))
        .where(F.col("rank") == 1)
        .select("broker", "log_dir", "topic", "partition", "bytes", "path")
        .collect()  # one row per nearly full log dir
    ]
    # fleet_findings' rule, on the full dirs' own biggest replicas (no lag: only the disk findings)
    rows = [dict(b, kind="log", lag_offsets=0, log_end_offset=None) for b in biggest]
    return [f for f in fleet_findings(rows, log_dirs) if f["code"] == "LOG_DIR_NEARLY_FULL"]


def census_frames(
    spark: Any,
    replicas_in: Any,
    log_dirs_in: Any,
    findings_in: Any,
    extra: Sequence[dict[str, Any]] | Callable[[], Sequence[dict[str, Any]]] = (),
    more_findings: Any = None,
    on_driver: bool = False,
    diverged: Sequence[str] | Callable[[], Sequence[str]] = (),
    replica_rows: Any = None,
    brokers: Sequence[Any] = (),
) -> tuple[CensusFrames, list[dict[str, Any]]]:
    """The four census tables as DataFrames, and the (collected) log dirs. ``extra``: findings the driver
    made (rows of :data:`FINDING_COLUMNS`), such as SEVERAL_CLUSTERS, or a function that returns them
    (called when they join the findings: they may still be in the making); ``more_findings``: a DataFrame of
    those columns made on the executors (the remote tier audit, :mod:`logdoctor.spark.remote_audit`).
    ``on_driver`` (a small census): the findings made in Python are made here, from collected rows.
    ``diverged``: the paths of the replicas with REPLICA_DIVERGED (no REPLICA_LAG for them), or a function
    that returns them: on the driver it is called once the lag findings' rows are in, and those of the
    diverged replicas are dropped there (the divergence query may run meanwhile). ``replica_rows``: the
    replicas' :func:`persisted_replica_table`, when the caller made it (else made here). ``brokers``: every
    input broker, named (``census_rules.name_brokers``), whose cluster keys CONTROLLER_QUORUM_TOO_SMALL
    is said once for (``census_rules.quorum_findings``, over the collected log dirs)."""
    from pyspark.sql import functions as F

    from logdoctor.spark.census_rules import quorum_findings

    replicas = persisted_replica_table(replicas_in) if replica_rows is None else replica_rows
    partitions = partition_table(replicas)
    from logdoctor.spark.jobs import run_jobs

    log_dirs_df = log_dir_table(log_dirs_in, replicas).orderBy("broker", "log_dir")
    # a few per broker; on the driver (a small census) collected while the findings' rows are
    collecting = run_jobs(
        {"log_dirs": lambda: log_dirs_df.toArrow().to_pylist()}, together=on_driver, wait=not on_driver
    )["log_dirs"]

    @functools.cache
    def broker_dirs() -> dict[str, list[str]]:
        dirs: dict[str, list[str]] = {}
        for d in collecting.result():
            dirs.setdefault(d["broker"], []).append(d["log_dir"])
        return {broker: sorted(v) for broker, v in dirs.items()}

    # on the driver the lag findings are made from collected rows: the diverged replicas' are dropped after
    later = callable(diverged) and on_driver
    diverged_now = None if later else (diverged() if callable(diverged) else diverged)
    scanned = findings_in.where(F.col("code") != "TOPIC_ID_SHARED")
    scans, lag, recreated, shared = finding_frames(
        spark,
        (
            scan_findings(spark, scanned, broker_dirs, on_driver),
            lag_findings(replicas, () if later else diverged_now),
            recreated_findings(replicas),
            shared_id_findings(replicas, on_driver),
        ),
        on_driver,
    )
    if later:
        gone = set(diverged())  # type: ignore[operator]
        if gone:
            lag = lag.where(~F.col("path").isin(sorted(gone)))
    log_dirs = collecting.result()
    quorum = quorum_findings(log_dirs, brokers)
    for d in log_dirs:  # the brokers' quorums are no column of the census's log_dirs table
        for c in QUORUM_COLUMNS:
            del d[c]
    # the table is written from these rows: no second scan of the inputs and the replicas for it
    log_dirs_df = spark.createDataFrame(
        [tuple(d[c] for c in LOG_DIR_COLUMNS) for d in log_dirs], log_dirs_df.select(*LOG_DIR_COLUMNS).schema
    ).coalesce(1)
    full = [*full_disk_findings(spark, log_dirs, replicas), *quorum, *(extra() if callable(extra) else extra)]
    findings = scans.unionByName(lag).unionByName(recreated).unionByName(shared)
    if more_findings is not None:
        findings = findings.unionByName(more_findings)
    if full:
        findings = findings.unionByName(
            spark.createDataFrame([tuple(f.get(c) for c in FINDING_COLUMNS) for f in full], FINDING_OUT_DDL)
        )
    rank = (
        F.when(F.col("severity") == "error", 0)
        .when(F.col("severity") == "warning", 1)
        .when(F.col("severity") == "info", 2)
        .otherwise(3)
    )
    if on_driver:  # a few local DataFrames' rows: one task, not one per part of each
        findings = findings.coalesce(1)
    findings = findings.withColumn("severity_rank", rank).persist()  # few rows, used three times
    frames = CensusFrames(
        # the replicas in the order the window left them (Spark drops that sort as redundant); the
        # partitions, an aggregation's rows (one per partition), sorted by their key within each part
        replicas.sortWithinPartitions(*_WINDOW_ORDER).select(*REPLICA_COLUMNS),
        partitions.sortWithinPartitions(*_PARTITION_KEYS).select(*PARTITION_COLUMNS),
        log_dirs_df,  # made from the collected rows, in their order
        findings.orderBy("severity_rank", F.coalesce("broker", F.lit("")), "path", "code").select(
            *FINDING_COLUMNS
        ),
        (replicas, findings),
    )
    return frames, log_dirs


CONSUMER_GROUP_COLUMNS = _names(
    "cluster, group, group_type, topic, partition, committed_offset, commit_timestamp, log_start_offset, "
    "log_end_offset, lag_records, lag_bytes, lag_ms, out_of_range, broker"
)


def consumer_ranges(replicas: Any) -> Any:
    """Per (cluster, topic, partition), the replica a consumer group's commit is judged against and the log
    range a consumer of it sees: the scan's choice (checks.consumer_groups ``choice_key``: the newest leader
    epoch, then the longest log, then the path) over the replicas whose range is known
    (``consumer_log_start_offset``/``_end_offset``, checks.consumer_groups ``log_range``; an inventory
    written before those columns: its log start and end). A DataFrame (broker, path, log_dir, topic_id of the
    chosen replica)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    latest = F.coalesce(_latest_epoch(F), F.lit(-1))
    start = F.coalesce("consumer_log_start_offset", "log_start_offset")
    end = F.coalesce("consumer_log_end_offset", "log_end_offset")
    order = Window.partitionBy("cluster", "topic", "partition").orderBy(
        latest.desc(), F.coalesce("log_end_offset", F.lit(0)).desc(), "path"
    )
    known = replicas.where((F.col("kind") == "log") & start.isNotNull() & end.isNotNull())
    return (
        known.withColumn("_n", F.row_number().over(order))
        .where(F.col("_n") == 1)
        .select(
            F.coalesce("cluster", F.lit("")).alias("cluster"), "topic", "partition", "broker", "path",
            "log_dir", "topic_id", start.alias("log_start_offset"), end.alias("log_end_offset"),
        )
    )  # fmt: skip


def consumer_group_rows(commits: Any, ranges: Any) -> Any:
    """Each consumer group's commit per partition, as the scan of the brokers together judges it
    (checks.consumer_groups ``out_of_range``): the commits of the ``__consumer_offsets`` replica chosen by
    :func:`consumer_ranges` (every broker replays its own; an inventory written before ``commit_source``:
    the latest commit), against the range of the replica chosen for their partition (``_path``,
    ``_log_dir``, ``_broker``: that replica). The consumer-group table and CONSUMER_OFFSET_OUT_OF_RANGE are
    both made of these rows."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    chosen_co = ranges.where(F.col("topic") == CONSUMER_OFFSETS_TOPIC).select(
        "cluster", "broker", F.col("path").alias("commit_source")
    )
    commits = commits.withColumn("cluster", F.coalesce("cluster", F.lit("")))
    of_chosen = commits.join(chosen_co, ["cluster", "broker", "commit_source"], "left_semi")
    unplaced = commits.where(F.col("commit_source").isNull())  # inventories written before the column
    pick = Window.partitionBy("cluster", "group", "topic", "partition").orderBy(
        F.col("commit_timestamp").desc_nulls_last(), F.col("lag_bytes").isNull(), "broker"
    )
    one = (
        of_chosen.unionByName(unplaced).withColumn("_n", F.row_number().over(pick)).where(F.col("_n") == 1)
    )
    target = ranges.select(
        "cluster", "topic", "partition", "log_start_offset", "log_end_offset", "topic_id",
        F.col("broker").alias("_broker"), F.col("path").alias("_path"), F.col("log_dir").alias("_log_dir"),
    )  # fmt: skip
    joined = one.join(target, ["cluster", "topic", "partition"], "left")
    # the commit outside its range (checks.consumer_groups judge: a negative offset is no commit)
    inside = (F.col("committed_offset") < 0) | (
        (F.col("committed_offset") >= F.col("log_start_offset"))
        & (F.col("committed_offset") <= F.col("log_end_offset"))
    )
    lag = F.col("log_end_offset") - F.col("committed_offset")
    return joined.withColumn("out_of_range", F.when(F.col("log_end_offset").isNotNull(), ~inside)).withColumn(
        "lag_records", F.when(inside & (F.col("committed_offset") >= 0), lag)
    )


def consumer_group_table(rows: Any) -> Any:
    """One row per consumer group and partition (of one cluster), from :func:`consumer_group_rows`: its
    committed offset against the log range of its partition's chosen replica. ``group_type``: classic,
    consumer (KIP-848, regex subscriptions too), share or streams (KIP-1071), from the group's metadata record
    in ``__consumer_offsets`` (checks.consumer_groups.GROUP_TYPES; null without one, and from inventories
    written before the column).

    ``lag_records``: log end - committed offset (offsets; null when the commit is outside the range:
    ``out_of_range``, CONSUMER_OFFSET_OUT_OF_RANGE); ``lag_bytes`` and ``lag_ms`` as the broker holding the
    ``__consumer_offsets`` replica (``broker``) measured them on its own replica of the partition
    (checks.consumer_groups.commit_rows; null when it holds none)."""
    return rows.orderBy("cluster", "group", "topic", "partition").select(*CONSUMER_GROUP_COLUMNS)


def consumer_offset_findings(rows: Any, on_driver: bool = False) -> Any:
    """CONSUMER_OFFSET_OUT_OF_RANGE of :func:`consumer_group_rows`, each made by the scan's own function
    (checks.consumer_groups ``finding_of_row``) on the executors (``on_driver``, a small census: here), on
    the chosen replica's folder: a DataFrame of the census_inputs FINDING_DDL columns."""
    from pyspark.sql import functions as F

    out = rows.where(F.col("out_of_range")).select(
        "group", "topic", "partition", "committed_offset", "commit_timestamp", "commit_record_offset",
        "commit_source", "commit_topic_id", "topic_id", "log_start_offset", "log_end_offset",
        F.col("_path").alias("path"), F.col("_log_dir").alias("log_dir"), F.col("_broker").alias("broker"),
    )  # fmt: skip

    def made(r: dict[str, Any]) -> tuple[Any, ...] | None:
        from logdoctor.checks.consumer_groups import finding_of_row

        f = finding_of_row(r)
        return None if f is None else finding_values(r["broker"], r["log_dir"], f, f.position, f.offset)

    return _made_findings(out, made, on_driver)


def _made_findings(rows: Any, made: Callable[[dict[str, Any]], Any], on_driver: bool) -> Any:
    """A DataFrame of the census_inputs FINDING_DDL columns: ``made(row)`` (a finding's values, or None) of
    each of ``rows``, on the executors (``on_driver``, a small census: here, of the collected rows)."""
    spark = rows.sparkSession
    if on_driver:
        found = [t for t in map(made, rows.toArrow().to_pylist()) if t is not None]
        return spark.createDataFrame(found, FINDING_DDL).coalesce(1)
    made_rows = rows.rdd.map(lambda row: made(row.asDict(recursive=True))).filter(lambda t: t is not None)
    return spark.createDataFrame(made_rows, FINDING_DDL)


def transaction_state_findings(
    ranges: Any, txns: Any, producers: Any, on_driver: bool = False
) -> tuple[Any, dict[tuple[str, int], Any]]:
    """TRANSACTION_STATE_MISMATCH across brokers, by the scan's rule (checks.transaction_state
    ``mismatches``): each cluster's coordinator state is that of its ``__transaction_state`` replicas chosen
    as a consumer's (:func:`consumer_ranges`; their ``txn`` rows, collected: one per transactional id), and
    each partition's producer state that of its chosen replica (``producer`` rows), judged per partition on
    the executors (``on_driver``, a small census: here). Returns (the findings as a DataFrame of the
    census_inputs FINDING_DDL columns, the open two-phase-commit transactions by (cluster, producer id)).
    No ``__transaction_state`` among the inputs: no finding, as the scan."""
    from pyspark.sql import functions as F

    from logdoctor.checks.replica_ref import ReplicaRef
    from logdoctor.checks.transaction_state import (
        mismatches,
        open_two_phase_commits,
        txn_from_json,
    )

    spark = ranges.sparkSession
    ranges = ranges.select("cluster", "topic", "partition", "broker", "path", "log_dir")
    chosen_ts = ranges.where(F.col("topic") == TRANSACTION_STATE_TOPIC).select("cluster", "broker", "path")
    txns = txns.withColumn("cluster", F.coalesce("cluster", F.lit("")))
    rows = txns.join(chosen_ts, ["cluster", "broker", "path"], "left_semi").toArrow().to_pylist()
    if not rows:
        return spark.createDataFrame([], FINDING_DDL), {}
    state: dict[str, dict[str, Any]] = {}
    for r in sorted(rows, key=lambda r: r["path"]):
        t = txn_from_json(r["coordinator_txn"])
        state.setdefault(r["cluster"], {})[t.transactional_id] = t
    two_pc = open_two_phase_commits(state)
    judged = (
        producers.withColumn("cluster", F.coalesce("cluster", F.lit("")))
        .where(F.col("topic") != TRANSACTION_STATE_TOPIC)
        .join(ranges.select("cluster", "broker", "path"), ["cluster", "broker", "path"], "left_semi")
        .where(F.col("cluster").isin(*sorted(state)))
    )

    def judge(key: tuple[str, str, str, str, int], entries: Any, state: Any = state) -> list[tuple[Any, ...]]:
        cluster, broker, path, log_dir, partition = key
        entries = list(entries)
        producers = {
            int(e["producer_id"]): (int(e["producer_epoch"]), int(e["producer_last_timestamp"]),
                                    int(e["txn_first_offset"]))
            for e in entries
        }  # fmt: skip
        ref = ReplicaRef(path, log_dir, entries[0]["topic"], partition)
        return [
            finding_values(broker, log_dir, f, f.position, f.offset)
            for f in mismatches(state[cluster], [(ref, producers)])
        ]

    def key(r: dict[str, Any]) -> tuple[str, str, str, str, int]:
        return (r["cluster"], r["broker"], r["path"], r["log_dir"], int(r["partition"]))

    if on_driver:
        groups: dict[tuple[str, str, str, str, int], list[dict[str, Any]]] = {}
        for r in judged.toArrow().to_pylist():
            groups.setdefault(key(r), []).append(r)
        found = [t for k in sorted(groups) for t in judge(k, groups[k])]
        return spark.createDataFrame(found, FINDING_DDL).coalesce(1), two_pc
    made = (
        judged.rdd.map(lambda row: row.asDict())
        .groupBy(key)
        .flatMap(lambda kv: judge(kv[0], kv[1]))
    )
    return spark.createDataFrame(made, FINDING_DDL), two_pc


def share_group_findings(ranges: Any, shares: Any, on_driver: bool = False) -> Any:
    """SHARE_GROUP_BEHIND_LOG_START across brokers, by the scan's rule (checks.share_groups ``behind``): the
    share-partition states of each cluster's ``__share_group_state`` replicas chosen as a consumer's
    (:func:`consumer_ranges`; their ``share`` rows), each against the log start of its partition's chosen
    replica (found by topic id), made on the executors (``on_driver``, a small census: here). A DataFrame of
    the census_inputs FINDING_DDL columns."""
    from pyspark.sql import functions as F

    from logdoctor.checks.share_groups import SHARE_GROUP_STATE_TOPIC

    chosen = ranges.where(F.col("topic") == SHARE_GROUP_STATE_TOPIC).select("cluster", "broker", "path")
    states = shares.withColumn("cluster", F.coalesce("cluster", F.lit(""))).join(
        chosen, ["cluster", "broker", "path"], "left_semi"
    )
    targets = ranges.where(
        (F.col("topic") != SHARE_GROUP_STATE_TOPIC) & F.col("topic_id").isNotNull()
    ).select(
        "cluster", F.col("topic_id").alias("share_topic_id"), F.col("partition").alias("share_partition"),
        F.col("topic").alias("_topic"), F.col("path").alias("_path"), F.col("log_dir").alias("_log_dir"),
        F.col("broker").alias("_broker"), F.col("log_start_offset").alias("_log_start"),
    )  # fmt: skip
    behind = states.join(targets, ["cluster", "share_topic_id", "share_partition"]).where(
        (F.col("share_start_offset") >= 0) & (F.col("share_start_offset") < F.col("_log_start"))
    )

    def made(r: dict[str, Any]) -> tuple[Any, ...] | None:
        from logdoctor.checks.replica_ref import ReplicaRef
        from logdoctor.checks.share_groups import ShareState, behind

        s = ShareState(
            r["share_group"], r["share_topic_id"], int(r["share_partition"]), int(r["share_start_offset"]),
            r["path"], int(r["share_record_offset"]),
        )  # fmt: skip
        target = ReplicaRef(r["_path"], r["_log_dir"], r["_topic"], int(r["share_partition"]))
        f = behind(s, target, int(r["_log_start"]))
        return None if f is None else finding_values(r["_broker"], r["_log_dir"], f, f.position, f.offset)

    return _made_findings(behind, made, on_driver)


def two_phase_commit_fixes(findings: Any, hanging: Any, two_pc: dict[tuple[str, int], Any]) -> Any:
    """``findings`` with each TRANSACTION_HANGING of a producer whose transactional id holds a
    two-phase-commit transaction open (anywhere in its cluster: :func:`transaction_state_findings`) given the
    scan's two-phase-commit fix (checks.transaction_state ``two_phase_commit_fix``)."""
    from pyspark.sql import functions as F

    from logdoctor.checks.transaction_state import two_phase_commit_fix

    if not two_pc:
        return findings
    spark = findings.sparkSession
    fixes = spark.createDataFrame(
        [(c, pid, two_phase_commit_fix(t)) for (c, pid), t in sorted(two_pc.items())],
        "cluster string, producer_id bigint, _fix string",
    )
    which = (
        hanging.withColumn("cluster", F.coalesce("cluster", F.lit("")))
        .join(F.broadcast(fixes), ["cluster", "producer_id"])
        .select("broker", "path", "offset", "_fix")
        .withColumn("code", F.lit("TRANSACTION_HANGING"))
    )
    joined = findings.join(which, ["broker", "path", "offset", "code"], "left")
    return joined.withColumn("fix", F.coalesce("_fix", "fix")).select(*findings.columns)


def _latest_epoch(F: Any) -> Any:
    """A replica's latest leader epoch: its leader-epoch checkpoint's last entry's, not the largest
    (formats.checkpoint.latest_epoch); null without one."""
    return F.when(F.size("leader_epochs") > 0, F.element_at(F.col("leader_epochs"), -1).getField("epoch"))


def _live_latest_epochs(replicas: Any) -> tuple[Any, Any]:
    """(the live replicas with a leader epoch, the column of each one's latest epoch): what
    :func:`divergence_candidates` and :func:`any_epoch_spread` compare across a partition's replicas."""
    from pyspark.sql import functions as F

    live = replicas.where((F.col("kind") == "log") & (F.size("leader_epochs") > 0))
    return live, _latest_epoch(F)


def divergence_candidates(replicas: Any) -> Any:
    """The live replicas of the partitions whose replicas' latest leader epochs differ (a diverged replica
    has an older latest epoch than the leader; replicas of one epoch can only lag): the only partitions
    the divergence rule can find anything in (none in a healthy fleet). A DataFrame."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    live, latest = _live_latest_epochs(replicas)
    w = Window.partitionBy("cluster", "topic", "partition")
    return (
        live.withColumn("_latest", latest)
        .withColumn("_spread", F.max("_latest").over(w) - F.min("_latest").over(w))
        .where(F.col("_spread") > 0)
        .select(
            "broker", "log_dir", "path", "cluster", "topic", "partition", "topic_id", "log_start_offset",
            "log_end_offset", "high_watermark", "leader_epochs",
        )
    )  # fmt: skip


def any_epoch_spread(replicas: Any, replica_rows: Any = None) -> bool:
    """Whether any partition's live replicas differ in their latest leader epoch: whether
    :func:`divergence_candidates` has any row. An aggregation per partition of one number (partial on the
    map side: a narrow shuffle, no sort of whole replicas as the candidates' window needs); one row or
    none comes back to the driver. ``replica_rows``: the live replicas' :func:`persisted_replica_table`
    (its ``latest_epoch``), read in place of the inputs (which are not read again for this)."""
    from pyspark.sql import functions as F

    if replica_rows is not None:
        live, latest = replica_rows.where(F.col("latest_epoch").isNotNull()), F.col("latest_epoch")
    else:
        live, latest = _live_latest_epochs(replicas)
    spread = (
        live.select("cluster", "topic", "partition", latest.alias("_latest"))
        .groupBy("cluster", "topic", "partition")
        .agg((F.max("_latest") - F.min("_latest")).alias("_spread"))
        .where(F.col("_spread") > 0)
    )
    return spread.limit(1).toArrow().num_rows > 0


def divergence_findings(
    replicas: Any, on_driver: bool = False, replica_rows: Any = None
) -> list[dict[str, Any]]:
    """REPLICA_DIVERGED by the scan's rule (checks.divergence.partition_diverged, through
    census_rules.diverged_findings), one Spark task per group of candidate partitions
    (:func:`divergence_candidates`): each reads its replicas' lost records where their folders are. A
    small census (``on_driver``) runs the rule here on the collected candidates. ``replica_rows``: the
    replicas' :func:`persisted_replica_table`, which says whether there is any candidate
    (:func:`any_epoch_spread`) without reading the inputs again."""
    from logdoctor.spark.census_rules import diverged_findings

    candidates = divergence_candidates(replicas)
    if on_driver:
        return diverged_findings(candidates.toArrow().to_pylist())
    if not any_epoch_spread(replicas, replica_rows):
        return []  # no partition whose replicas' latest epochs differ: no candidate (a healthy fleet)

    def key(r: dict[str, Any]) -> tuple[str, str, int]:
        return (r.get("cluster") or "", r["topic"], r["partition"])

    return (
        candidates.rdd.map(lambda row: row.asDict(recursive=True))
        .groupBy(key)
        .flatMap(lambda kv: diverged_findings(list(kv[1])))
        .collect()
    )


def first_rows(
    df: Any,
    order: Sequence[Any],
    big_order: Sequence[Any] | None = None,
    limit: int | None = None,
    *,
    few: bool = False,
) -> tuple[list[dict[str, Any]], int]:
    """(at most ``limit`` rows, the table's row count): what the driver keeps of a big table.

    The count comes first (from a written Parquet table it is read off the footers), so one sorted
    query gives the rows: in ``order``, or in ``big_order`` when the table has more than ``limit``
    rows (a big fleet: the lagging replicas and partitions first). Rows come through Arrow. ``few``
    (a small census's table): one query of ``limit + 1`` rows in ``order`` first, which are all its rows
    and their count when no more come back."""
    limit = COLLECT_LIMIT if limit is None else limit
    if few:
        rows = (df.orderBy(*order) if order else df).limit(limit + 1).toArrow().to_pylist()
        if len(rows) <= limit:
            return rows, len(rows)
    total = df.count()
    chosen = big_order if big_order is not None and total > limit else order
    if not total:
        return [], 0
    rows = (df.orderBy(*chosen) if chosen else df).limit(limit).toArrow().to_pylist()
    return rows, total


def severity_counts(findings: Any) -> dict[str, int]:
    counts = {"error": 0, "warning": 0, "info": 0}
    for r in findings.groupBy("severity").count().collect():
        counts[r["severity"]] = int(r["count"])
    return counts


__all__: Sequence[str] = (
    "COLLECT_LIMIT",
    "CensusFrames",
    "census_frames",
    "first_rows",
    "severity_counts",
)
