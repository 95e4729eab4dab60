"""The census's join, lag and fleet findings as Spark SQL over the input DataFrames.

Input: the ``replicas``, ``log_dirs`` and ``findings`` DataFrames of :mod:`logdoctor.spark.census_inputs`
(log dirs scanned on executors, inventories read by Spark, mixed). Nothing proportional to the number of
replicas comes to the driver: the per-partition join, the lag of each replica, the partitions table,
``REPLICA_LAG`` and ``TOPIC_RECREATED`` findings and the fix command of each scan finding are computed on
the executors and written by Spark; the driver collects the log dirs (a few per broker), the counts, and
the first rows of each table for the summary and the report (at most :data:`COLLECT_LIMIT` each).

Replicas are matched by broker (``broker-<id>`` from meta.properties) and topic id: when the replicas of
one topic name carry different topic ids (``partition.metadata``), the topic was deleted and created
again, and each id is a topic of its own (``TOPIC_RECREATED``); lag is only computed between replicas of
one id. The rules are those of :func:`logdoctor.spark.census_rules.replica_lag`, ``partition_rows``,
``log_dir_rows`` and ``fleet_findings`` (the Python versions the tests compare with).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from logdoctor.spark.census_inputs import FINDING_DDL, ddl_names

#: rows of each table the driver keeps for the summary, the terminal and the HTML report
COLLECT_LIMIT = 20_000


def _names(text: str) -> list[str]:
    return text.split(", ")


REPLICA_COLUMNS = _names(
    "broker, broker_id, log_dir, topic, partition, kind, path, log_start_offset, log_end_offset, "
    "high_watermark, recovery_point, segments, bytes, findings, max_log_end_offset, replica_count, "
    "lag_offsets, lag_bytes, partition_high_watermark, below_high_watermark, topic_id"
)
PARTITION_COLUMNS = _names(
    "topic, partition, replicas, brokers, max_log_end_offset, min_log_end_offset, min_log_start_offset, "
    "max_log_start_offset, high_watermark, bytes, lagging_broker, lagging_log_dir, max_lag_offsets, "
    "max_lag_bytes, topic_id"
)
LOG_DIR_COLUMNS = _names(
    "broker, broker_id, log_dir, real_path, mode, cluster_id, partitions, locked, clean_shutdown, "
    "disk_total_bytes, disk_used_bytes, disk_available_bytes, disk_used_fraction, disk_used_percent, "
    "disk_source, bytes, folders"
)
FINDING_COLUMNS = [*ddl_names(FINDING_DDL), "fix_command"]
FINDING_OUT_DDL = FINDING_DDL + ", fix_command string"


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


def _topic_keys(F: Any, live: Any) -> Any:
    """Per topic: ``topic_key`` '' when its replicas agree on the topic id, else the id (a topic each)."""
    ids = (
        live.where(F.col("topic_id").isNotNull())
        .groupBy("topic")
        .agg(F.countDistinct("topic_id").alias("ids"))
        .where(F.col("ids") > 1)
        .select("topic", F.lit(True).alias("recreated"))
    )
    joined = live.join(F.broadcast(ids), "topic", "left")
    return joined.withColumn(
        "topic_key", F.when(F.col("recreated"), F.coalesce(F.col("topic_id"), F.lit(""))).otherwise(F.lit(""))
    )


def replica_table(replicas: Any) -> Any:
    """Live replicas with their lag behind the most advanced replica of their partition (as replica_lag)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    live = _topic_keys(F, replicas.where(F.col("kind") == "log"))
    w = Window.partitionBy("topic", "topic_key", "partition")
    leo, hw = F.col("log_end_offset"), F.max("high_watermark").over(w)
    out = (
        live.withColumn("max_log_end_offset", F.max("log_end_offset").over(w))
        .withColumn("replica_count", F.count(F.lit(1)).over(w).cast("int"))
        .withColumn("lag_offsets", F.col("max_log_end_offset") - leo)
        .withColumn(
            "lag_bytes",
            F.greatest(
                F.lit(0).cast("bigint"),
                F.max(F.coalesce("bytes", F.lit(0))).over(w) - F.coalesce("bytes", F.lit(0)),
            ),
        )
        .withColumn("partition_high_watermark", hw)
        .withColumn(
            "below_high_watermark", F.coalesce(hw.isNotNull() & leo.isNotNull() & (leo < hw), F.lit(False))
        )
        # the most advanced replica (ties: the first by broker, log dir), in the same window: no other shuffle
        .withColumn(
            "leader",
            F.min(
                F.when(leo.isNotNull(), F.struct((-leo).alias("k"), "broker", "log_dir", "log_end_offset"))
            ).over(w),
        )
    )
    return out.select(
        *REPLICA_COLUMNS,
        "topic_key",
        F.col("leader.broker").alias("leader_broker"),
        F.col("leader.log_dir").alias("leader_log_dir"),
        F.col("leader.log_end_offset").alias("leader_log_end_offset"),
    )


def partition_table(replicas: Any) -> Any:
    """One row per partition (per topic id of a recreated topic), as :func:`census.partition_rows`: one
    aggregation; the most lagging replica is the smallest (-lag, -lag bytes, broker, log dir)."""
    from pyspark.sql import functions as F

    lag = F.coalesce(F.col("lag_offsets"), F.lit(0).cast("bigint"))
    worst = F.min(
        F.struct(
            (-lag).alias("a"),
            (-F.col("lag_bytes")).alias("b"),
            "broker",
            "log_dir",
            lag.alias("lag"),
            "lag_bytes",
        )
    )
    agg = replicas.groupBy("topic", "topic_key", "partition").agg(
        F.count(F.lit(1)).cast("int").alias("replicas"),
        F.sort_array(F.collect_list("broker")).alias("brokers"),
        F.max("log_end_offset").alias("max_log_end_offset"),
        F.min("log_end_offset").alias("min_log_end_offset"),
        F.min("log_start_offset").alias("min_log_start_offset"),
        F.max("log_start_offset").alias("max_log_start_offset"),
        F.max("high_watermark").alias("high_watermark"),
        F.sum(F.coalesce("bytes", F.lit(0))).cast("bigint").alias("bytes"),
        F.max("topic_id").alias("topic_id"),
        worst.alias("worst"),
    )
    lagging = F.col("worst.lag") > 0
    return agg.select(
        *(
            c
            for c in PARTITION_COLUMNS
            if c not in ("lagging_broker", "lagging_log_dir", "max_lag_offsets", "max_lag_bytes")
        ),
        F.when(lagging, F.col("worst.broker")).alias("lagging_broker"),
        F.when(lagging, F.col("worst.log_dir")).alias("lagging_log_dir"),
        F.col("worst.lag").alias("max_lag_offsets"),
        F.when(lagging, F.col("worst.lag_bytes")).otherwise(F.lit(0).cast("bigint")).alias("max_lag_bytes"),
        "topic_key",
    )


def log_dir_table(log_dirs: Any, replicas: Any) -> Any:
    """Log dirs with the bytes and number of live partition folders each holds (as log_dir_rows)."""
    from pyspark.sql import functions as F

    size = replicas.groupBy("broker", "log_dir").agg(
        F.sum(F.coalesce("bytes", F.lit(0))).cast("bigint").alias("bytes"),
        F.count(F.lit(1)).cast("int").alias("folders"),
    )
    return (
        log_dirs.join(size, ["broker", "log_dir"], "left")
        .withColumn("bytes", F.coalesce("bytes", F.lit(0).cast("bigint")))
        .withColumn("folders", F.coalesce("folders", F.lit(0)))
        .select(*LOG_DIR_COLUMNS)
    )


def _lag_finding(row: dict[str, Any]) -> tuple[Any, ...]:
    """REPLICA_LAG of one lagging replica (executor side), as census.fleet_findings makes it."""
    from logdoctor.checks import catalog
    from logdoctor.checks.findings import Severity

    below = bool(row["below_high_watermark"])
    state = (
        f"below the partition's high watermark {row['partition_high_watermark']}, so it is out of the ISR"
        if below
        else "behind the most advanced replica"
    )
    tp = f"{row['topic']}-{row['partition']}"
    f = catalog.make(
        "REPLICA_LAG",
        row["path"],
        severity=Severity.ERROR if below else None,
        topic_partition=tp,
        broker=row["broker"],
        log_end_offset=row["log_end_offset"],
        lag=row["lag_offsets"],
        lag_bytes=row["lag_bytes"] or 0,
        leader_broker=row["leader_broker"],
        leader_log_end_offset=row["leader_log_end_offset"],
        state=state,
        leader_logdir=row["leader_log_dir"],
        logdir=row["log_dir"],
    )
    command = f"logdoctor sync-replica {tp} --leader {row['leader_log_dir']} --follower {row['log_dir']}"
    return (
        row["broker"], row["log_dir"], f.code, f.severity.label, f.path, None, row["log_end_offset"],
        f.message, f.fix, command,
    )  # fmt: skip


def lag_findings(spark: Any, replicas: Any) -> Any:
    """REPLICA_LAG for every replica behind its partition's most advanced one (computed on executors;
    the most advanced replica is :func:`replica_table`'s ``leader_*`` columns)."""
    from pyspark.sql import functions as F

    rows = replicas.where(F.col("lag_offsets") > 0).rdd.map(lambda r: _lag_finding(r.asDict()))
    return spark.createDataFrame(rows, FINDING_OUT_DDL)


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
    return (
        row["broker"], row["log_dir"], f.code, f.severity.label, f.path, None, None, f.message, f.fix,
        f"logdoctor scan {row['log_dir']}",
    )  # fmt: skip


def recreated_findings(spark: Any, replicas: Any) -> Any:
    """TOPIC_RECREATED: one per (topic, topic id) group of a topic whose replicas carry several ids."""
    from pyspark.sql import functions as F

    rec = replicas.where(F.col("topic_key") != "")
    per_id = rec.groupBy("topic", "topic_id").agg(
        F.sort_array(F.collect_set("broker")).alias("brokers"),
        F.min(F.struct("broker", "log_dir", "path")).alias("first"),
    )
    described = per_id.withColumn(
        "group",
        F.concat(F.coalesce("topic_id", F.lit("(none)")), F.lit(" on "), F.array_join("brokers", ", ")),
    )
    per_topic = described.groupBy("topic").agg(
        F.count(F.lit(1)).alias("ids"),
        F.array_join(F.sort_array(F.collect_list("group")), "; ").alias("groups"),
    )
    rows = (
        described.join(per_topic, "topic")
        .select(
            "topic",
            "ids",
            "groups",
            F.col("first.broker").alias("broker"),
            F.col("first.log_dir").alias("log_dir"),
            F.col("first.path").alias("path"),
        )
        .rdd.map(lambda r: _recreated_finding(r.asDict()))
    )
    return spark.createDataFrame(rows, FINDING_OUT_DDL)


def _scan_fix(row: dict[str, Any], dirs: dict[str, list[str]]) -> tuple[Any, ...]:
    from logdoctor.spark.census_rules import BrokerInput, fix_command

    if row["code"] == "INVENTORY_UNREADABLE":
        command = "logdoctor inventory"  # run on the broker's host, with its log dirs
    else:
        brokers = [BrokerInput(row["broker"], None, tuple(dirs.get(row["broker"] or "", ())))]
        command = fix_command(row, brokers)
    return (*(row[c] for c in FINDING_COLUMNS[:-1]), command)


def scan_findings(spark: Any, findings: Any, broker_dirs: dict[str, list[str]]) -> Any:
    """The scans' findings (from either input) with the logdoctor command that fixes each."""
    dirs = spark.sparkContext.broadcast(broker_dirs)
    rows = findings.rdd.map(lambda r: _scan_fix(r.asDict(), dirs.value))
    return spark.createDataFrame(rows, FINDING_OUT_DDL)


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
    spark: Any, replicas_in: Any, log_dirs_in: Any, findings_in: Any
) -> tuple[CensusFrames, list[dict[str, Any]]]:
    """The four census tables as DataFrames, and the (collected) log dirs."""
    from pyspark.sql import functions as F

    replicas = replica_table(replicas_in).persist()
    partitions = partition_table(replicas)
    log_dirs_df = log_dir_table(log_dirs_in, replicas)
    log_dirs = [r.asDict() for r in log_dirs_df.orderBy("broker", "log_dir").collect()]  # a few per broker
    broker_dirs: dict[str, list[str]] = {}
    for d in log_dirs:
        broker_dirs.setdefault(d["broker"], []).append(d["log_dir"])
    for v in broker_dirs.values():
        v.sort()
    full = full_disk_findings(spark, log_dirs, replicas)
    findings = (
        scan_findings(spark, findings_in, broker_dirs)
        .unionByName(lag_findings(spark, replicas))
        .unionByName(recreated_findings(spark, replicas))
    )
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
    findings = findings.withColumn("severity_rank", rank).persist()  # few rows, used three times
    frames = CensusFrames(
        replicas.sortWithinPartitions("topic", "partition", "broker", "log_dir").select(*REPLICA_COLUMNS),
        partitions.sortWithinPartitions("topic", "partition", "topic_key").select(*PARTITION_COLUMNS),
        log_dirs_df.orderBy("broker", "log_dir"),
        findings.orderBy("severity_rank", F.coalesce("broker", F.lit("")), "path", "code").select(
            *FINDING_COLUMNS
        ),
        (replicas, findings),
    )
    return frames, log_dirs


def first_rows(df: Any, limit: int = COLLECT_LIMIT) -> tuple[list[dict[str, Any]], int]:
    """(at most ``limit`` rows, the table's row count): what the driver keeps of a big table."""
    rows = [r.asDict(recursive=True) for r in df.limit(limit).collect()]
    total = len(rows) if len(rows) < limit else df.count()
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
