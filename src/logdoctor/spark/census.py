"""The fleet census: many brokers' log dirs -> per topic-partition replica state, lag, disks, findings.

Input: PATHS, each a broker folder holding one or more log dirs (or a log dir itself, or a folder
of broker folders, or a glob). Each broker is one Spark task that runs the ordinary scan
(:func:`logdoctor.checks.scanner.scan`, all its findings, with the broker's own log dirs together
so its cross-log-dir checks work); the driver then joins the replicas of every topic-partition
with Spark SQL and writes four Parquet tables under ``--out``:

- ``replicas``: one row per (broker, log dir, topic, partition): log start/end offsets, high
  watermark and recovery point from the checkpoints, bytes, segments, lag behind the most advanced
  replica (offsets and bytes);
- ``partitions``: one row per topic-partition: replica count, max/min log end offset, high
  watermark, the most lagging replica and its lag;
- ``log_dirs``: bytes per log dir and how full its disk is, as ``df`` prints it (logdoctor.logdir.disk:
  statvfs of the log dir's real path);
- ``findings``: the scan's findings plus the fleet-level ones (REPLICA_LAG, LOG_DIR_NEARLY_FULL),
  each with the logdoctor command that fixes it;
- ``consumer_groups``: one row per consumer group and partition: its committed offset, the partition's
  log range, the lag in records, bytes and time, and whether the group will reset
  (:func:`logdoctor.spark.census_sql.consumer_group_table`);
- ``compaction``: one row per compacted replica: where its log cleaner stands (first dirty and first
  uncleanable offsets, clean and dirty bytes, cleanable ratio, the oldest dirty record) and the codes of
  its compaction findings, as each broker's scan computed them on the executor
  (:func:`logdoctor.checks.compaction.compaction_row`; the findings themselves are in ``findings``).

``summary.json`` and ``summary.txt`` hold the readable summary.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from logdoctor.logdir.disk import human_bytes
from logdoctor.spark.census_rules import (  # noqa: F401 (re-exported: the census API)
    NEARLY_FULL_ERROR,
    NEARLY_FULL_WARN,
    BrokerInput,
    CensusError,
    FixCommand,
    clusters_finding,
    discover_brokers,
    diverged_findings,
    fleet_findings,
    log_dir_rows,
    partition_rows,
    replica_lag,
    scan_broker,
    scan_fix,
    used_pct,
)

if TYPE_CHECKING:
    from logdoctor.spark.census_inputs import CensusInputs

# --- the job -----------------------------------------------------------------------------------------

#: a census on a local master of at most this many brokers (log dirs or inventory files) holding at most
#: :data:`SMALL_FLEET_FOLDERS` folders and inventory rows (no remote tier audit) is small
#: (:func:`is_small_fleet`): its tables hold a few thousand rows. It runs with :data:`SMALL_FLEET_CONFS`,
#: scans its brokers' log dirs and makes its findings on the driver (no Python worker to start for them),
#: and takes each table's rows with one query.
SMALL_FLEET_BROKERS = 16
SMALL_FLEET_FOLDERS = 2_000
#: a small census's SQL confs: each query one Spark job (adaptive execution runs each shuffle as a job of
#: its own, and runs them when a DataFrame's ``.rdd`` is taken), one task per shuffle (a task per 8th of a
#: few rows costs more than the rows; the tables' content is the same with any number of partitions)
SMALL_FLEET_CONFS = {
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.shuffle.partitions": "1",
    # no broadcast joins: each is a job of its own, run when its query is planned
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    # expressions interpreted, not compiled: Janino's compilation of each query's classes costs more than
    # running them over a few thousand rows (the same results: Spark's fallback when compiling fails)
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}


@dataclass(slots=True)
class CensusResult:
    out_dir: str
    brokers: int
    log_dirs: list[dict[str, Any]]
    partitions: list[dict[str, Any]]
    replicas: list[dict[str, Any]]
    findings: list[dict[str, Any]]
    elapsed_s: float = 0.0
    tables: dict[str, str] = field(default_factory=dict)
    now_ms: int | None = None  # the moment the time-based checks were made for
    #: totals of the tables when the lists above hold only their first rows (a big fleet); None: all rows
    totals: dict[str, int] | None = None
    finding_counts: dict[str, int] | None = None
    inventories: int = 0  # how many of the inputs were inventories
    consumer_groups: list[dict[str, Any]] = field(default_factory=list)  # the table's first rows
    compaction: list[dict[str, Any]] = field(default_factory=list)  # the table's first rows

    def counts(self) -> dict[str, int]:
        if self.finding_counts is not None:
            return dict(self.finding_counts)
        return _severities(self.findings)

    def total(self, table: str) -> int:
        """Rows of ``table`` (``replicas``, ``partitions``, ``log_dirs``, ``findings``) in the census."""
        if self.totals is not None and table in self.totals:
            return self.totals[table]
        return len(getattr(self, table))

    def to_json(self) -> dict[str, Any]:
        return {
            "out_dir": self.out_dir,
            "brokers": self.brokers,
            "now_ms": self.now_ms,
            "tables": self.tables,
            "log_dirs": self.log_dirs,
            "partitions": self.partitions,
            "replicas": self.replicas,
            "findings": self.findings,
            "consumer_groups": self.consumer_groups,
            "compaction": self.compaction,
            "summary": {
                **self.counts(),
                "elapsed_s": round(self.elapsed_s, 3),
                **({"totals": self.totals} if self.totals is not None else {}),
            },
        }


def small_inputs(inputs: CensusInputs) -> bool:
    """Whether ``inputs`` make a small census on a local master (:data:`SMALL_FLEET_BROKERS`): few brokers
    (a log-dir broker or an inventory file each) and at most :data:`SMALL_FLEET_FOLDERS` folders of their
    log dirs (one listing of each) and rows of their inventories (a Parquet footer's count, a JSON Lines
    file's lines), inventories on the local file system. Known before Spark starts."""
    from logdoctor.checks.inventory import inventory_row_count
    from logdoctor.logdir.storage import is_uri

    brokers = inputs.brokers()
    if len(brokers) + len(inputs.inventories) > SMALL_FLEET_BROKERS:
        return False
    folders = 0
    for log_dir in (d for b in brokers for d in b.log_dirs):
        try:
            with os.scandir(log_dir) as entries:
                folders += sum(1 for e in entries if e.is_dir())
        except OSError:
            continue  # the scan says what is wrong with it
        if folders > SMALL_FLEET_FOLDERS:
            return False
    for path in inputs.inventories:
        if is_uri(path):
            return False  # a remote object's rows are not counted here
        folders += inventory_row_count(path, SMALL_FLEET_FOLDERS - folders)
        if folders > SMALL_FLEET_FOLDERS:
            return False
    return True


def is_small_fleet(spark: Any, inputs: CensusInputs) -> bool:
    """Whether a census of ``inputs`` with ``spark`` is small: :func:`small_inputs` and a local master
    (whose one host scans them all)."""
    from logdoctor.spark.session import is_local_master

    return is_local_master(spark.sparkContext.master) and small_inputs(inputs)


def scan_ahead(
    inputs: CensusInputs, now_ms: int, *, config_inputs: Any = None, simulated_disks: Any = None
) -> Future[list[dict[str, Any]]]:
    """The driver's scans of a small census's brokers (:func:`small_inputs`), started in a thread: the
    CLI starts them before Spark, whose JVM starts in a process of its own meanwhile, and hands them to
    :func:`run_census` (``driver_scans``). The brokers are named as ``load_inputs`` names them."""
    from logdoctor.spark.census_rules import name_brokers
    from logdoctor.spark.jobs import run_jobs

    brokers = name_brokers(inputs.brokers())
    return run_jobs(
        {"driver-scans": lambda: [scan_broker(b, now_ms, config_inputs, simulated_disks) for b in brokers]},
        together=True,
        wait=False,
    )["driver-scans"]


def run_census(
    spark: Any,
    paths: Sequence[str] | CensusInputs,
    out_dir: str | os.PathLike[str],
    *,
    now_ms: int | None = None,
    progress: Any = None,
    config_inputs: Any = None,
    simulated_disks: Any = None,
    remote_storage: str | None = None,
    remote_inventory: str | None = None,
    driver_scans: Future[list[dict[str, Any]]] | None = None,
) -> CensusResult:
    """Run the census with ``spark`` and write the Parquet tables and the summary under ``out_dir``.

    PATHS are log dirs (or folders holding them) and inventories (``logdoctor inventory``; files,
    folders, globs, URIs), mixed (:mod:`logdoctor.spark.census_inputs`). The scans of log dirs run as
    one Spark job, a task per broker; the join of the replicas of every topic-partition, their lag and
    the fleet findings are Spark SQL (:mod:`logdoctor.spark.census_sql`), written by Spark; the driver
    keeps the log dirs, the counts and the first rows of the other tables. ``simulated_disks`` (the demo
    fleet's, tests': :mod:`logdoctor.logdir.disk`) replaces statvfs for the log dirs it names. PATHS may
    be the inputs already classified (``census_inputs.classify``, as ``logdoctor census`` does): they are
    not walked again. ``remote_storage`` / ``remote_inventory`` (an S3 Inventory manifest.json): audit the
    remote tier against the ``__remote_log_metadata`` partitions of the log dirs
    (:mod:`logdoctor.spark.remote_audit`: a task per listing part, findings in the findings table).
    ``driver_scans``: the brokers' scans :func:`scan_ahead` started (for ``now_ms``), taken by a small census.
    """
    from logdoctor.checks.inventory import FLEET_JUDGED
    from logdoctor.spark.census_inputs import CensusInputs, classify, load_inputs, session_confs
    from logdoctor.spark.census_sql import (
        COLLECT_LIMIT,
        PARTITION_WRITE_CONFS,
        census_frames,
        consumer_group_rows,
        consumer_group_table,
        consumer_offset_findings,
        consumer_ranges,
        divergence_findings,
        first_rows,
        persisted_replica_table,
        severity_counts,
        share_group_findings,
        transaction_state_findings,
        two_phase_commit_fixes,
    )
    from logdoctor.spark.jobs import run_jobs

    started = time.perf_counter()
    inputs = paths if isinstance(paths, CensusInputs) else classify(paths)
    now = int(time.time() * 1000) if now_ms is None else now_ms
    small = remote_storage is None and remote_inventory is None and is_small_fleet(spark, inputs)
    with session_confs(spark, SMALL_FLEET_CONFS if small else {}):
        frames_in = load_inputs(
            spark,
            inputs,
            now,
            config_inputs=config_inputs,
            progress=progress,
            simulated_disks=simulated_disks,
            on_driver=small,
            driver_scans=driver_scans if small else None,
        )
        several = clusters_finding(frames_in.all_brokers)
        empty = frames_in.empty
        # REPLICA_DIVERGED first, by the scan's rule per partition group: its replicas get no REPLICA_LAG.
        # A small census collects it, and the cross-broker rules' rows below, at once (a thread each); so
        # does a remote audit, whose metadata replay (a task per metadata partition) then runs while the
        # brokers' scans (a task per broker) do, instead of after them
        auditing = remote_storage is not None or remote_inventory is not None
        # a big census's replicas' window, persisted first: the divergence check reads it (its first job),
        # not the inputs again, and the tables below are made of it
        replica_rows = None if small or auditing else persisted_replica_table(frames_in.replicas)
        ahead = run_jobs(
            {
                "diverged": lambda: divergence_findings(
                    frames_in.replicas, on_driver=small, replica_rows=replica_rows
                )
            },
            together=small or auditing,
            wait=not (small or auditing),
        )
        audit = None
        if auditing:
            from logdoctor.spark.remote_audit import audit_findings

            rlmm = getattr(config_inputs, "remote_log_metadata_partitions", None)
            audit = audit_findings(
                spark,
                [d for b in frames_in.brokers for d in b.log_dirs],
                remote_storage=remote_storage,
                remote_inventory=remote_inventory,
                num_partitions=rlmm[0] if rlmm else None,
                replicas=frames_in.replicas,
            )
        # the commits judged by the scan's rule across brokers (an older inventory's own judgement left out)
        # the replica a consumer fetches from of each partition: what the cross-broker rules judge against;
        # a rule whose input rows are known to be none (a small census's) runs no query: it finds nothing
        ranges = consumer_ranges(frames_in.replicas).persist()
        group_rows = consumer_group_rows(frames_in.commits, ranges)
        cross: dict[str, Any] = {}
        if "commits" not in empty:
            cross["commits"] = lambda: consumer_offset_findings(group_rows, on_driver=small)
        if "txns" not in empty:
            # the coordinator's state against the partitions' producers, by the scan's rule across brokers
            cross["txns"] = lambda: transaction_state_findings(
                ranges, frames_in.txns, frames_in.producers, on_driver=small
            )
        if "shares" not in empty:
            cross["shares"] = lambda: share_group_findings(ranges, frames_in.shares, small)
        found = run_jobs(cross, together=small)
        scan_found = frames_in.findings.where(~frames_in.findings["code"].isin(*sorted(FLEET_JUDGED)))
        if "commits" in found:
            scan_found = scan_found.unionByName(found["commits"].result())
        if "txns" in found:
            txn_found, two_pc = found["txns"].result()
            scan_found = two_phase_commit_fixes(scan_found.unionByName(txn_found), frames_in.hanging, two_pc)
        if "shares" in found:
            scan_found = scan_found.unionByName(found["shares"].result())
        if audit is not None:  # the audit reports dangling uploads with their objects: not twice
            scan_found = scan_found.where(scan_found["code"] != "REMOTE_UPLOAD_UNFINISHED")

        def diverged() -> list[dict[str, Any]]:
            return ahead["diverged"].result()

        frames, log_dirs = census_frames(
            spark,
            frames_in.replicas,
            frames_in.log_dirs,
            scan_found,
            lambda: [*([several] if several is not None else []), *diverged()],
            more_findings=audit,
            on_driver=small,
            diverged=lambda: [f["path"] for f in diverged()],
            replica_rows=replica_rows,
            brokers=frames_in.all_brokers,
        )

        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        names = ("partitions", "replicas", "log_dirs", "findings", "consumer_groups", "compaction")
        tables = {name: str(out / name) for name in names}

        def write(name: str, df: Any) -> None:
            df.write.mode("overwrite").parquet(tables[name])

        def rows_of(
            name: str, df: Any, order: tuple[str, ...] = (), worst: str | None = None, confs: Any = None
        ) -> tuple[list[dict[str, Any]], int]:
            """The table ``name`` written from ``df`` (with the SQL ``confs``) and its first rows, read from
            the table with ``df``'s schema (no job to read the footers), ``worst`` first in a big table."""
            with session_confs(spark, confs or {}):
                write(name, df)
            written = spark.read.schema(df.schema).parquet(tables[name])
            big = (written[worst].desc_nulls_last(), *order) if worst else None
            return first_rows(written, order, big, few=small)

        def findings_rows() -> tuple[list[dict[str, Any]], int]:
            write("findings", frames.findings)
            return first_rows(frames.findings, (), few=small)

        # a small census's six tables at once (a thread each: jobs of a task whose time is the driver's
        # planning and commit); a big one's one after the other, the consumer groups last
        done = run_jobs(
            {
                # a big census's tables are written one after the other: the confs are this write's alone
                "partitions": lambda: rows_of(
                    "partitions",
                    frames.partitions,
                    ("topic", "partition", "topic_id"),
                    "max_lag_offsets",
                    None if small else PARTITION_WRITE_CONFS,
                ),
                "replicas": lambda: rows_of(
                    "replicas", frames.replicas, ("topic", "partition", "broker", "log_dir"), "lag_offsets"
                ),
                "log_dirs": lambda: write("log_dirs", frames.log_dirs),
                "findings": findings_rows,
                "consumer_groups": lambda: rows_of("consumer_groups", consumer_group_table(group_rows)),
                "compaction": lambda: rows_of(
                    "compaction",
                    frames_in.compaction,
                    ("broker", "topic", "partition", "log_dir"),
                    "dirty_bytes",
                ),
            },
            together=small,
        )
        (replicas, n_replicas), (partitions, n_partitions), (findings, n_findings), (groups, _n_groups) = (
            done[name].result() for name in ("replicas", "partitions", "findings", "consumer_groups")
        )
        compaction, _n_compaction = done["compaction"].result()
        # every finding collected: counted here, else by Spark
        if n_findings > len(findings):
            counts = severity_counts(spark.read.schema(frames.findings.schema).parquet(tables["findings"]))
        else:
            counts = _severities(findings)
        brokers = len({d["broker"] for d in log_dirs} | {b.broker for b in frames_in.brokers})
        frames_in.unpersist()
        frames.unpersist()
        ranges.unpersist()
    truncated = max(n_replicas, n_partitions, n_findings) >= COLLECT_LIMIT
    result = CensusResult(
        out_dir=str(out),
        brokers=brokers,
        log_dirs=log_dirs,
        partitions=partitions,
        replicas=replicas,
        findings=findings,
        elapsed_s=time.perf_counter() - started,
        tables=tables,
        now_ms=now,
        totals=dict(replicas=n_replicas, partitions=n_partitions, findings=n_findings) if truncated else None,
        finding_counts=counts,
        inventories=len(frames_in.inventories),
        consumer_groups=groups,
        compaction=compaction,
    )
    (out / "summary.json").write_text(json.dumps(result.to_json(), indent=2, default=str) + "\n")
    (out / "summary.txt").write_text(render_summary(result) + "\n")
    return result


def _severities(findings: list[dict[str, Any]]) -> dict[str, int]:
    counts = {"error": 0, "warning": 0, "info": 0}
    for f in findings:
        counts[f["severity"]] = counts.get(f["severity"], 0) + 1
    return counts


def render_summary(result: CensusResult) -> str:
    """A plain-text summary: the fleet in numbers, lagging replicas, disks, findings with fix commands."""
    from logdoctor.logdir.words import counted
    from logdoctor.report.model import high_watermark_text

    lines: list[str] = []
    c = result.counts()
    lines.append(
        f"Fleet census: {counted(result.brokers, 'broker')}, {counted(len(result.log_dirs), 'log dir')}, "
        f"{counted(result.total('partitions'), 'topic-partition')}, "
        f"{counted(result.total('replicas'), 'replica')}; {counted(c['error'], 'error')}, "
        f"{counted(c['warning'], 'warning')}, "
        f"{c['info']:,} info (the census's work {result.elapsed_s:.1f} s, Spark's start not counted)"
    )
    # a diverged replica does not lag: it loses records when it fetches (REPLICA_DIVERGED, under findings)
    diverged = {f["path"] for f in result.findings if f["code"] == "REPLICA_DIVERGED"}

    def folder(p: dict[str, Any]) -> str:
        return os.path.join(p.get("lagging_log_dir") or "", f"{p['topic']}-{p['partition']}")

    lagging = [
        p for p in result.partitions if (p.get("max_lag_offsets") or 0) > 0 and folder(p) not in diverged
    ]
    lines.append("")
    lines.append(f"Lagging replicas: {len(lagging)}")
    for p in lagging:
        lines.append(
            f"  {p['topic']}-{p['partition']}: {p['lagging_broker']} is {p['max_lag_offsets']} offsets / "
            f"{human_bytes(p['max_lag_bytes'] or 0)} behind (log end offsets "
            f"{p['min_log_end_offset']}..{p['max_log_end_offset']}, "
            f"high watermark {high_watermark_text(p['high_watermark'])})"
        )
    if diverged:  # behind their partition's leader too: named as what they are, never as "no lag"
        lines.append(f"Diverged replicas (REPLICA_DIVERGED: they lose records on fetching): {len(diverged)}")
        lines.extend(f"  {path}" for path in sorted(diverged))
    lines.append("")
    lines.append("Log dirs:")
    for d in result.log_dirs:
        lines.append(
            f"  {d['broker']:<10} {d['log_dir']}: {human_bytes(d.get('bytes') or 0)} in "
            f"{counted(d.get('folders') or 0, 'folder')}, "
            f"disk {used_pct(d)} used ({d.get('disk_source')})"
        )
    lines.append("")
    lines.append("Findings and fixes:")
    for f in result.findings:
        lines.append(f"  [{f['severity'].upper()}] {f['code']} {f['path']}")
        lines.append(f"      {f['message']}")
        lines.append(f"      fix: {f['fix_command'] or f['fix']}")
    lines.append("")
    lines.append("Tables (Parquet): " + ", ".join(f"{k}={v}" for k, v in result.tables.items()))
    return "\n".join(lines)
