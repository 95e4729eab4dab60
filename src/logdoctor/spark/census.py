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
- ``log_dirs``: bytes per log dir and how full its disk is, as ``df`` prints it (logdoctor.logdir.disk; a
  ``df.json`` beside the log dirs, written when log dirs were copied off their disks, overrides it);
- ``findings``: the scan's findings plus the fleet-level ones (REPLICA_LAG, LOG_DIR_NEARLY_FULL),
  each with the logdoctor command that fixes it.

``summary.json`` and ``summary.txt`` hold the readable summary.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from logdoctor.checks import catalog
from logdoctor.checks.findings import Finding, Severity
from logdoctor.logdir.disk import disk_usage

NEARLY_FULL_WARN = 0.85
NEARLY_FULL_ERROR = 0.95


class CensusError(ValueError):
    """Bad census input (no log dir found, a path that does not exist)."""


@dataclass(frozen=True, slots=True)
class BrokerInput:
    """One broker: a label, its id from meta.properties when readable, its log dirs."""

    broker: str
    broker_id: int | None
    log_dirs: tuple[str, ...]


def _meta_id(log_dir: str) -> int | None:
    from logdoctor.logdir.model import LogDir

    try:
        meta = LogDir(log_dir).meta_properties
    except Exception:
        return None
    for attr in ("node_id", "broker_id"):
        value = getattr(meta, attr, None)
        if isinstance(value, int):
            return value
    return None


def discover_brokers(paths: Sequence[str]) -> list[BrokerInput]:
    """Group the log dirs under PATHS by broker (meta.properties id, else the folder holding them)."""
    from logdoctor.spark.planning import find_log_dirs, split_paths

    groups: dict[str, list[str]] = {}
    ids: dict[str, int | None] = {}
    items = split_paths(list(paths))
    if not items:
        raise CensusError("no path given")
    for item in items:
        if not os.path.isdir(item):
            raise CensusError(f"{item}: no such folder")
        found = find_log_dirs(os.path.abspath(item))
        if not found:
            raise CensusError(f"{item}: no Kafka log dir found there")
        for ld in found:
            bid = _meta_id(ld)
            if bid is not None:
                key = f"broker-{bid}"
            elif os.path.abspath(ld) == os.path.abspath(item):
                key = os.path.basename(ld.rstrip(os.sep))
            else:
                key = os.path.basename(os.path.dirname(ld.rstrip(os.sep)))
            groups.setdefault(key, [])
            if ld not in groups[key]:
                groups[key].append(ld)
            ids[key] = bid
    return [BrokerInput(k, ids[k], tuple(sorted(v))) for k, v in sorted(groups.items())]


# --- the per-broker task (runs on an executor) --------------------------------------------------------


def scan_broker(broker: BrokerInput, now_ms: int, config_inputs: Any = None) -> dict[str, Any]:
    """Scan one broker's log dirs (executor side). Returns plain, picklable data.

    ``config_inputs`` (checks.topic_config.ConfigInputs: --topic-config, --server-properties) joins the
    topic configs of the broker's own KRaft metadata log, resolved as scan and retention do."""
    from logdoctor.checks.context import Depth, ScanOptions
    from logdoctor.checks.scanner import scan

    options = ScanOptions(Depth.DEFAULT, now_ms, config_inputs=config_inputs)
    report = scan(list(broker.log_dirs), options, jobs=1)
    replicas = []
    for p in report.partitions:
        replicas.append(
            {
                "broker": broker.broker,
                "broker_id": broker.broker_id,
                "log_dir": p.log_dir,
                "topic": p.topic,
                "partition": p.partition,
                "kind": p.kind,
                "path": p.path,
                "log_start_offset": p.log_start_offset,
                "log_end_offset": p.log_end_offset,
                "high_watermark": p.high_watermark,
                "recovery_point": p.recovery_point,
                "segments": p.segments,
                "bytes": p.bytes,
                "findings": len(p.findings),
            }
        )
    findings = []
    for f in report.findings:
        findings.append(
            {
                "broker": broker.broker,
                "log_dir": _owning_dir(f.path, broker.log_dirs),
                "code": f.code,
                "severity": f.severity.label,
                "path": f.path,
                "position": f.position,
                "offset": f.offset,
                "message": f.message,
                "fix": f.fix,
            }
        )
    dirs = []
    for d in report.log_dirs:
        du = disk_usage(d.path)
        dirs.append(
            {
                "broker": broker.broker,
                "broker_id": broker.broker_id if broker.broker_id is not None else d.node_id,
                "log_dir": d.path,
                "real_path": os.path.realpath(d.path),
                "mode": d.mode,
                "cluster_id": d.cluster_id,
                "partitions": d.partitions,
                "locked": d.locked,
                "clean_shutdown": d.clean_shutdown,
                "disk_total_bytes": du.total_bytes,
                "disk_used_bytes": du.used_bytes,
                "disk_available_bytes": du.available_bytes,
                "disk_used_fraction": du.used_fraction,  # df's: used / (used + available)
                "disk_used_percent": du.used_percent,  # df's Use%, rounded up as df does
                "disk_source": du.source,
            }
        )
    return {"replicas": replicas, "findings": findings, "log_dirs": dirs, "bytes_read": report.bytes_read}


def _owning_dir(path: str, log_dirs: Sequence[str]) -> str | None:
    best = None
    for d in log_dirs:
        if (path == d or path.startswith(d.rstrip(os.sep) + os.sep)) and (best is None or len(d) > len(best)):
            best = d
    return best


# --- the job -----------------------------------------------------------------------------------------


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

    def counts(self) -> dict[str, int]:
        c = {"error": 0, "warning": 0, "info": 0}
        for f in self.findings:
            c[f["severity"]] = c.get(f["severity"], 0) + 1
        return c

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
            "summary": {**self.counts(), "elapsed_s": round(self.elapsed_s, 3)},
        }


_REPLICA_SCHEMA = ", ".join((
    "broker string, broker_id int, log_dir string, topic string, partition int, kind string, path string",
    "log_start_offset bigint, log_end_offset bigint, high_watermark bigint, recovery_point bigint",
    "segments int, bytes bigint, findings int, max_log_end_offset bigint, replica_count int",
    "lag_offsets bigint, lag_bytes bigint, partition_high_watermark bigint, below_high_watermark boolean",
))
_PARTITION_SCHEMA = ", ".join((
    "topic string, partition int, replicas int, brokers array<string>, max_log_end_offset bigint",
    "min_log_end_offset bigint, min_log_start_offset bigint, max_log_start_offset bigint",
    "high_watermark bigint, bytes bigint, lagging_broker string, lagging_log_dir string",
    "max_lag_offsets bigint, max_lag_bytes bigint",
))
_FINDING_SCHEMA = ", ".join((
    "broker string, log_dir string, code string, severity string, path string, position bigint",
    "offset bigint, message string, fix string, fix_command string",
))
_LOG_DIR_SCHEMA = ", ".join((
    "broker string, broker_id int, log_dir string, real_path string, mode string, cluster_id string",
    "partitions int, locked boolean, clean_shutdown boolean, disk_total_bytes bigint, disk_used_bytes bigint",
    "disk_available_bytes bigint, disk_used_fraction double, disk_used_percent int, disk_source string",
    "bytes bigint, folders int",
))


def run_census(
    spark: Any,
    paths: Sequence[str],
    out_dir: str | os.PathLike[str],
    *,
    now_ms: int | None = None,
    progress: Any = None,
    config_inputs: Any = None,
) -> CensusResult:
    """Run the census with ``spark`` and write the Parquet tables and the summary under ``out_dir``.

    The scans (the part that reads the logs) run as one Spark job, a task per broker; the join of
    their replica rows (metadata, a few rows per partition) happens on the driver with Arrow.
    """
    started = time.perf_counter()
    brokers = discover_brokers(paths)
    now = int(time.time() * 1000) if now_ms is None else now_ms
    if progress is not None:
        progress(0, len(brokers))
    rdd = spark.sparkContext.parallelize(brokers, max(1, len(brokers))).map(
        lambda b: scan_broker(b, now, config_inputs)
    )
    results = rdd.collect()
    if progress is not None:
        progress(len(brokers), len(brokers))

    replicas = replica_lag([r for res in results for r in res["replicas"]])
    partitions = partition_rows(replicas)
    log_dirs = log_dir_rows([d for res in results for d in res["log_dirs"]], replicas)
    findings = [dict(f, fix_command=fix_command(f, brokers)) for res in results for f in res["findings"]]
    findings.extend(fleet_findings(replicas, log_dirs))
    findings.sort(
        key=lambda f: (_SEVERITY_ORDER.get(f["severity"], 3), f["broker"] or "", f["path"], f["code"])
    )

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tables = {}
    for name, rows, schema in (
        ("partitions", partitions, _PARTITION_SCHEMA),
        ("replicas", replicas, _REPLICA_SCHEMA),
        ("log_dirs", log_dirs, _LOG_DIR_SCHEMA),
        ("findings", findings, _FINDING_SCHEMA),
    ):
        tables[name] = _write_table(out / name, rows, schema)
    result = CensusResult(
        out_dir=str(out),
        brokers=len(brokers),
        log_dirs=log_dirs,
        partitions=partitions,
        replicas=replicas,
        findings=findings,
        elapsed_s=time.perf_counter() - started,
        tables=tables,
        now_ms=now,
    )
    (out / "summary.json").write_text(json.dumps(result.to_json(), indent=2, default=str) + "\n")
    (out / "summary.txt").write_text(render_summary(result) + "\n")
    return result


def _arrow_schema(ddl: str):
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "int": pa.int32(),
        "bigint": pa.int64(),
        "boolean": pa.bool_(),
        "double": pa.float64(),
        "array<string>": pa.list_(pa.string()),
    }
    fields = []
    for part in ddl.split(", "):
        name, typ = part.strip().split(" ", 1)
        fields.append((name, types[typ]))
    return pa.schema(fields)


def _write_table(folder: Path, rows: list[dict[str, Any]], ddl: str) -> str:
    """One Parquet file in ``folder``, a table folder as Spark writes it (``spark.read.parquet`` works)."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = _arrow_schema(ddl)
    table = pa.Table.from_pylist([{k: r.get(k) for k in schema.names} for r in rows], schema=schema)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    pq.write_table(table, folder / "part-00000.parquet")
    return str(folder)


def replica_lag(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Add to each live replica its lag behind the most advanced replica of its partition.

    ``lag_offsets`` = max log end offset - this log end offset; ``lag_bytes`` = the most advanced
    replica's bytes - this replica's bytes (0 at least); ``below_high_watermark`` when this log ends
    before the partition's high watermark (the largest in any replica's checkpoint): such a replica
    cannot be in the ISR.
    """
    live = [dict(r) for r in rows if r["kind"] == "log"]
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in live:
        groups.setdefault((r["topic"], r["partition"]), []).append(r)
    for reps in groups.values():
        leo = max((r["log_end_offset"] for r in reps if r["log_end_offset"] is not None), default=None)
        most = max((r["bytes"] or 0 for r in reps), default=0)
        hw = max((r["high_watermark"] for r in reps if r["high_watermark"] is not None), default=None)
        for r in reps:
            r["max_log_end_offset"] = leo
            r["replica_count"] = len(reps)
            r["lag_offsets"] = (
                None if leo is None or r["log_end_offset"] is None else leo - r["log_end_offset"]
            )
            r["lag_bytes"] = max(0, most - (r["bytes"] or 0))
            r["partition_high_watermark"] = hw
            r["below_high_watermark"] = bool(
                hw is not None and r["log_end_offset"] is not None and r["log_end_offset"] < hw
            )
    live.sort(key=lambda r: (r["topic"], r["partition"], r["broker"], r["log_dir"]))
    return live


def partition_rows(replicas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in replicas:
        groups.setdefault((r["topic"], r["partition"]), []).append(r)
    out = []
    for (topic, partition), reps in sorted(groups.items()):
        worst = max(reps, key=lambda r: (r["lag_offsets"] or 0, r["lag_bytes"]))
        lagging = (worst["lag_offsets"] or 0) > 0

        def vals(key: str, reps: list[dict[str, Any]] = reps) -> list[int]:
            return [r[key] for r in reps if r[key] is not None]

        out.append(
            {
                "topic": topic,
                "partition": partition,
                "replicas": len(reps),
                "brokers": sorted(r["broker"] for r in reps),
                "max_log_end_offset": max(vals("log_end_offset"), default=None),
                "min_log_end_offset": min(vals("log_end_offset"), default=None),
                "min_log_start_offset": min(vals("log_start_offset"), default=None),
                "max_log_start_offset": max(vals("log_start_offset"), default=None),
                "high_watermark": max(vals("high_watermark"), default=None),
                "bytes": sum(r["bytes"] or 0 for r in reps),
                "lagging_broker": worst["broker"] if lagging else None,
                "lagging_log_dir": worst["log_dir"] if lagging else None,
                "max_lag_offsets": worst["lag_offsets"] or 0,
                "max_lag_bytes": worst["lag_bytes"] if lagging else 0,
            }
        )
    return out


def log_dir_rows(dirs: list[dict[str, Any]], replicas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    size: dict[str, int] = {}
    count: dict[str, int] = {}
    for r in replicas:
        size[r["log_dir"]] = size.get(r["log_dir"], 0) + (r["bytes"] or 0)
        count[r["log_dir"]] = count.get(r["log_dir"], 0) + 1
    out = [dict(d, bytes=size.get(d["log_dir"], 0), folders=count.get(d["log_dir"], 0)) for d in dirs]
    out.sort(key=lambda d: (d["broker"], d["log_dir"]))
    return out


_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def _finding(
    broker: str, log_dir: str, f: Finding, command: str, offset: int | None = None
) -> dict[str, Any]:
    return {
        "broker": broker,
        "log_dir": log_dir,
        "code": f.code,
        "severity": f.severity.label,
        "path": f.path,
        "position": None,
        "offset": offset,
        "message": f.message,
        "fix": f.fix,
        "fix_command": command,
    }


def fleet_findings(replicas: list[dict[str, Any]], log_dirs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Findings only a view across brokers can make: lagging replicas and nearly full disks.

    Codes (catalog scope "fleet"): REPLICA_LAG, LOG_DIR_NEARLY_FULL.
    """
    out: list[dict[str, Any]] = []
    leaders: dict[tuple[str, int], dict[str, Any]] = {}
    for r in replicas:
        key = (r["topic"], r["partition"])
        best = leaders.get(key)
        if r["log_end_offset"] is not None and (
            best is None or r["log_end_offset"] > (best["log_end_offset"] or -1)
        ):
            leaders[key] = r
    for r in replicas:
        lag = r.get("lag_offsets")
        if not lag or lag <= 0:
            continue
        src = leaders[(r["topic"], r["partition"])]
        hw = r.get("partition_high_watermark")
        state = (
            f"below the partition's high watermark {hw}, so it is out of the ISR"
            if r.get("below_high_watermark")
            else "behind the most advanced replica"
        )
        tp = f"{r['topic']}-{r['partition']}"
        f = catalog.make(
            "REPLICA_LAG",
            r["path"],
            severity=Severity.ERROR if r.get("below_high_watermark") else None,
            topic_partition=tp,
            broker=r["broker"],
            log_end_offset=r["log_end_offset"],
            lag=lag,
            lag_bytes=r.get("lag_bytes") or 0,
            leader_broker=src["broker"],
            leader_log_end_offset=src["log_end_offset"],
            state=state,
            leader_logdir=src["log_dir"],
            logdir=r["log_dir"],
        )
        command = f"logdoctor sync-replica {tp} --leader {src['log_dir']} --follower {r['log_dir']}"
        out.append(_finding(r["broker"], r["log_dir"], f, command, offset=r["log_end_offset"]))
    by_broker: dict[str, list[dict[str, Any]]] = {}
    for d in log_dirs:
        by_broker.setdefault(d["broker"], []).append(d)
    biggest: dict[str, dict[str, Any]] = {}
    for r in replicas:
        cur = biggest.get(r["log_dir"])
        if cur is None or (r["bytes"] or 0) > (cur["bytes"] or 0):
            biggest[r["log_dir"]] = r
    for d in log_dirs:
        used = d.get("disk_used_fraction")
        if used is None or used < NEARLY_FULL_WARN:
            continue
        others = [o for o in by_broker.get(d["broker"], []) if o["log_dir"] != d["log_dir"]]
        target = min(others, key=lambda o: o.get("disk_used_fraction") or 0.0, default=None)
        big = biggest.get(d["log_dir"])
        if target is not None and big is not None:
            command = (
                f"logdoctor move-partition {big['topic']}-{big['partition']} --from {d['log_dir']} "
                f"--to {target['log_dir']}"
            )
            fix = (
                f"Move a large partition ({big['topic']}-{big['partition']}, {big['bytes']} bytes) to "
                f"{target['log_dir']} ({used_pct(target)} used) with the broker "
                f"stopped (`{command}` prints the plan, add --apply to make it), "
                "or use kafka-reassign-partitions with log dirs (KIP-113) while it runs."
            )
        else:
            command = f"logdoctor retention {d['log_dir']}"
            fix = (
                "Add a log dir on another disk, lower retention (`" + command + "` shows what retention "
                "deletes), or reassign partitions to other brokers."
            )
        f = catalog.make(
            "LOG_DIR_NEARLY_FULL",
            d["log_dir"],
            severity=Severity.ERROR if used >= NEARLY_FULL_ERROR else None,
            logdir=d["log_dir"],
            used=used_pct(d),
            available=d.get("disk_available_bytes"),
            total=d.get("disk_total_bytes"),
            disk_source=d.get("disk_source"),
            fix=fix,
        )
        out.append(_finding(d["broker"], d["log_dir"], f, command))
    return out


def used_pct(log_dir_row: dict[str, Any]) -> str:
    """A log dir's disk Use% as ``df`` prints it ("34%"), from the row's ``disk_used_percent``."""
    pct = log_dir_row.get("disk_used_percent")
    return "?" if pct is None else f"{pct}%"


def fix_command(finding: dict[str, Any], brokers: Sequence[BrokerInput]) -> str:
    """The logdoctor command that fixes a scan finding (repair runs a dry run unless --apply)."""
    try:
        from logdoctor.repair.planner import REPAIRABLE
    except ImportError:  # pragma: no cover - the repair layer is part of the package
        REPAIRABLE = ()
    dirs = next((b.log_dirs for b in brokers if b.broker == finding["broker"]), ())
    target = " ".join(dirs) if dirs else (finding.get("log_dir") or finding["path"])
    procedure = re.search(r"`(logdoctor (?:move-partition|sync-replica) [^`]*)`", finding.get("fix") or "")
    if procedure is not None and finding["code"] not in REPAIRABLE:
        return procedure.group(1)  # the operator procedure the finding's fix names (e.g. REPLICA_MISPLACED)
    if finding["code"] in REPAIRABLE:
        return f"logdoctor repair {target} --only {finding['code']}"
    return f"logdoctor scan {target}"


def render_summary(result: CensusResult) -> str:
    """A plain-text summary: the fleet in numbers, lagging replicas, disks, findings with fix commands."""
    lines: list[str] = []
    c = result.counts()
    lines.append(
        f"Fleet census: {result.brokers} brokers, {len(result.log_dirs)} log dirs, {len(result.partitions)} "
        f"topic-partitions, {len(result.replicas)} replicas; {c['error']} errors, {c['warning']} warnings, "
        f"{c['info']} info ({result.elapsed_s:.1f} s)"
    )
    lagging = [p for p in result.partitions if (p.get("max_lag_offsets") or 0) > 0]
    lines.append("")
    lines.append(f"Lagging replicas: {len(lagging)}")
    for p in lagging:
        lines.append(
            f"  {p['topic']}-{p['partition']}: {p['lagging_broker']} is {p['max_lag_offsets']} offsets / "
            f"{p['max_lag_bytes']} bytes behind (log end offsets "
            f"{p['min_log_end_offset']}..{p['max_log_end_offset']}, "
            f"high watermark {p['high_watermark']})"
        )
    lines.append("")
    lines.append("Log dirs:")
    for d in result.log_dirs:
        lines.append(
            f"  {d['broker']:<10} {d['log_dir']}: {d.get('bytes') or 0} bytes in "
            f"{d.get('folders') or 0} folders, "
            f"disk {used_pct(d)} used ({d.get('disk_source')})"
        )
    lines.append("")
    lines.append("Findings and fixes:")
    for f in result.findings:
        lines.append(f"  [{f['severity'].upper()}] {f['code']} {f['path']}")
        lines.append(f"      {f['message']}")
        lines.append(f"      fix: {f['fix_command']}")
    lines.append("")
    lines.append("Tables (Parquet): " + ", ".join(f"{k}={v}" for k, v in result.tables.items()))
    return "\n".join(lines)


def broker_inputs_json(brokers: Sequence[BrokerInput]) -> list[dict[str, Any]]:
    return [asdict(b) for b in brokers]
