"""The census's rules, below the job and its Spark SQL: which brokers the inputs name, one broker's scan
rows (executor side), and the per-partition lag, disk and fleet findings as plain Python over rows
(the reference the Spark SQL of :mod:`logdoctor.spark.census_sql` is tested against), with the
command that fixes each finding."""

from __future__ import annotations

import os
import re
import shlex
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from logdoctor.checks import catalog
from logdoctor.checks.disk_space import NEARLY_FULL_ERROR, NEARLY_FULL_WARN  # the one threshold, scan's
from logdoctor.checks.findings import Finding, Severity
from logdoctor.formats.checkpoint import latest_epoch
from logdoctor.logdir.disk import human_bytes
from logdoctor.spark.census_input_checks import CensusError, finding_row, refuse_remote_log_dirs


@dataclass(frozen=True, slots=True)
class BrokerInput:
    """One broker: a label, its id from meta.properties when readable, its log dirs, its cluster id, and
    the census's cluster key (``cluster``): replicas are compared only with those of the same key."""

    broker: str
    broker_id: int | None
    log_dirs: tuple[str, ...]
    cluster_id: str | None = None
    cluster: str = ""


def _meta(log_dir: str) -> tuple[int | None, str | None]:
    """(broker.id/node.id, cluster.id) of a log dir's meta.properties (None when unreadable)."""
    from logdoctor.logdir.model import LogDir

    try:
        meta = LogDir(log_dir).meta_properties
    except Exception:
        return None, None
    bid = next((v for a in ("node_id", "broker_id") if isinstance(v := getattr(meta, a, None), int)), None)
    cluster = getattr(meta, "cluster_id", None)
    return bid, cluster if isinstance(cluster, str) and cluster else None


def discover_brokers(paths: Sequence[str]) -> list[BrokerInput]:
    """The brokers of the log dirs under PATHS (:func:`group_log_dirs`), named by :func:`name_brokers`."""
    return name_brokers(group_log_dirs(paths))


def group_log_dirs(paths: Sequence[str]) -> list[BrokerInput]:
    """Group the log dirs under PATHS by broker: (cluster.id, node id) of meta.properties, else the folder
    holding them. Cluster ids are not unique (docker-compose setups share one, with node id 1), and a
    broker has one metadata log: dirs of one (cluster.id, node id) that each hold a ``__cluster_metadata-0``
    are as many brokers (the dirs without one join them only when there is a single such broker).
    The brokers still need their census names and cluster keys (:func:`name_brokers`)."""
    from logdoctor.logdir.discovery import find_log_dirs, split_paths

    items = split_paths(list(paths))
    if not items:
        raise CensusError("no path given")
    found: list[tuple[str, list[str]]] = []
    for item in items:
        if "://" in item and not item.startswith("file:"):
            refuse_remote_log_dirs(item)
            raise CensusError(f"{item}: a URI; the census takes log dirs on a local disk, and inventories")
        if not os.path.isdir(item):
            raise CensusError(f"{item}: no such folder")
        log_dirs = find_log_dirs(os.path.abspath(item))
        if not log_dirs:
            raise CensusError(f"{item}: no Kafka log dir found there")
        found.append((item, log_dirs))
    return group_found_log_dirs(found)


def group_found_log_dirs(found: Sequence[tuple[str, Sequence[str]]]) -> list[BrokerInput]:
    """:func:`group_log_dirs` of the log dirs already found under each input path: (path, its log dirs),
    as ``census_inputs.classify`` found them."""
    from logdoctor.checks.cross_dir import split_by_metadata_log
    from logdoctor.logdir.metadata_image import replay

    groups: dict[tuple[str, str], list[str]] = {}
    ids: dict[tuple[str, str], tuple[int | None, str | None]] = {}
    for item, log_dirs in found:
        for ld in log_dirs:
            bid, cluster = _meta(ld)
            if bid is not None:
                label = f"broker-{bid}"
            elif os.path.abspath(ld) == os.path.abspath(item):
                label = os.path.basename(ld.rstrip(os.sep))
            else:
                label = os.path.basename(os.path.dirname(ld.rstrip(os.sep)))
            key = (cluster or "", label)
            groups.setdefault(key, [])
            if ld not in groups[key]:
                groups[key].append(ld)
            ids[key] = (bid, cluster)
    images: dict[str, Any] = {}

    def image_of(mdir: str) -> Any:
        if mdir not in images:
            images[mdir] = replay(mdir)
        return images[mdir]

    raw: list[BrokerInput] = []
    for key, dirs in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        bid, cluster = ids[key]
        # several metadata logs: several brokers, each with the dirs its metadata registers (as scan)
        for mine, _mdir in split_by_metadata_log(sorted(dirs), bid, image_of):
            raw.append(BrokerInput(key[1], bid, tuple(sorted(mine)), cluster))
    return raw


def name_brokers(brokers: Sequence[BrokerInput]) -> list[BrokerInput]:
    """Each input broker (log dirs or an inventory) with its census label and cluster key.

    A broker is (cluster id, node id). The label stays ``broker-<id>`` unless brokers of several clusters
    share it (then ``broker-<id>@<cluster id>``). Two inputs with the same cluster id and node id cannot
    be two members of one cluster: that cluster id is shared by several clusters (docker-compose setups
    share ``MkU3OEVBNTcwNTJENDM2Qk``), so each broker with it is taken as a cluster of its own (labels
    ``...#1``, ``...#2``), and its replicas are compared with no other broker's."""
    pairs = Counter((b.cluster_id or "", b.broker) for b in brokers if b.broker_id is not None)
    shared = {c for (c, _label), n in pairs.items() if n > 1}
    clusters_of_label: dict[str, set[str]] = {}
    for b in brokers:
        clusters_of_label.setdefault(b.broker, set()).add(b.cluster_id or "")
    seen: Counter[tuple[str, str]] = Counter()
    out = []
    for b in brokers:
        cid = b.cluster_id or ""
        label = b.broker
        if len(clusters_of_label[b.broker]) > 1 or cid in shared:
            label = f"{b.broker}@{cid}" if cid else b.broker
        cluster = cid
        if cid in shared:
            seen[(cid, b.broker)] += 1
            n = seen[(cid, b.broker)]
            label = f"{label}#{n}"
            cluster = f"{cid}#{label}"
        out.append(BrokerInput(label, b.broker_id, b.log_dirs, b.cluster_id, cluster))
    return out


def clusters_finding(brokers: Sequence[BrokerInput]) -> dict[str, Any] | None:
    """SEVERAL_CLUSTERS (said once) when the census's brokers belong to more than one cluster."""
    keys: dict[str, list[str]] = {}
    for b in brokers:
        keys.setdefault(b.cluster, []).append(b.broker)
    if len(keys) < 2:
        return None
    listing = "; ".join(
        f"{key or 'no cluster id'}: {', '.join(sorted(set(names)))}" for key, names in sorted(keys.items())
    )
    shared = sorted({b.cluster_id or "" for b in brokers if b.cluster != (b.cluster_id or "")})
    named = ", ".join(c or "(none: meta.properties without cluster.id)" for c in shared)
    note = (
        f". Cluster id {named} is shared by brokers with the same node id (cluster ids are not "
        "unique: many docker-compose setups format every cluster with MkU3OEVBNTcwNTJENDM2Qk), so they are "
        "brokers of different clusters; each of them is taken as a cluster of its own"
        if shared
        else ""
    )
    f = catalog.make("SEVERAL_CLUSTERS", "", clusters=len(keys), listing=listing, shared=note)
    return _finding(None, None, f, NO_COMMAND)


def quorum_findings(
    log_dirs: Sequence[dict[str, Any]], brokers: Sequence[BrokerInput]
) -> list[dict[str, Any]]:
    """CONTROLLER_QUORUM_TOO_SMALL, once per census cluster (:func:`name_brokers`' key: the brokers of a
    shared cluster id are clusters of their own) whose controller quorum has fewer than 3 voters, as the
    first of its brokers (by name) that knows it says it (``log_dirs``: the census's log-dir rows, each with
    its broker's :data:`logdoctor.spark.census_inputs.QUORUM_COLUMNS`). A quorum of N voters elects a
    leader and commits with a majority, N // 2 + 1 (K:raft/.../raft/CandidateState.java majoritySize,
    LeaderState.java's high watermark): of 1 or 2 voters, that is all of them, so it survives the loss of
    none. Census only: one broker's log dirs are not its cluster, and a single combined-mode node (every
    test cluster's) is no damage a scan should warn of."""
    cluster_of = {b.broker: b for b in brokers}
    said: dict[str, dict[str, Any]] = {}
    for d in sorted(log_dirs, key=lambda d: (d["broker"], d["log_dir"])):
        b = cluster_of.get(d["broker"])
        voters = d.get("quorum_voters")
        if b is None or voters is None or b.cluster in said:
            continue
        said[b.cluster] = d
    out = []
    for d in said.values():
        voters = list(d["quorum_voters"])
        if len(voters) >= 3:
            continue
        b = cluster_of[d["broker"]]
        majority = len(voters) // 2 + 1
        f = catalog.make(
            "CONTROLLER_QUORUM_TOO_SMALL",
            "",
            cluster=b.cluster_id or "(no cluster id)",
            count=len(voters),
            voters=voters,
            source=d["quorum_source"],
            kind=d["quorum_kind"],
            majority=majority,
        )
        out.append(_finding(d["broker"], None, f, NO_COMMAND))
    return out


# --- the per-broker task (runs on an executor) --------------------------------------------------------


def scan_broker(
    broker: BrokerInput, now_ms: int, config_inputs: Any = None, simulated_disks: Any = None
) -> dict[str, Any]:
    """Scan one broker's log dirs (executor side). Returns plain, picklable data.

    ``config_inputs`` (checks.topic_config.ConfigInputs: --topic-config, --server-properties) joins the
    topic configs of the broker's own KRaft metadata log, resolved as scan and retention do. The rows
    are :func:`logdoctor.checks.inventory.broker_rows`', the same an inventory of the broker holds."""
    from logdoctor.checks.context import Depth, ScanOptions
    from logdoctor.checks.inventory import BrokerIdentity, broker_rows

    options = ScanOptions(Depth.DEFAULT, now_ms, config_inputs=config_inputs, simulated_disks=simulated_disks)
    res = broker_rows(
        list(broker.log_dirs), options, BrokerIdentity(broker.broker, broker.broker_id, broker.cluster_id)
    )
    hanging = [
        {"broker": f["broker"], "path": f["path"], "offset": f["offset"], "producer_id": f["producer_id"]}
        for f in res["findings"]
        if f["code"] == "TRANSACTION_HANGING" and f.get("producer_id") is not None
    ]
    for r in (*res["replicas"], *res["commits"], *res["txns"], *res["producers"], *res["shares"], *hanging):
        r["cluster"] = broker.cluster
    for d in res["log_dirs"]:  # its controller quorum, on its log-dir rows (an inventory's: verdicts)
        d.update(res["quorum"])
    keys = ("replicas", "findings", "log_dirs", "commits", "compaction", "txns", "producers", "shares")
    keys += ("bytes_read",)
    return {**{k: res[k] for k in keys}, "hanging": hanging}


def diverged_findings(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """REPLICA_DIVERGED across the census's brokers, by the scan's own rule
    (:func:`logdoctor.checks.divergence.partition_diverged`) per partition group: ``rows`` are live
    replicas (any number of partitions; census_sql.divergence_findings groups them on the executors) with
    ``leader_epochs``. A replica whose folder is readable here (a census of log dirs) gets the scan's
    finding, records lost, timestamps and epochs included; an inventory's (its folder on the broker's host)
    the offsets it loses. The fix is the export that saves them."""
    from logdoctor.checks.divergence import Replica, is_compared, partition_diverged

    def replica(r: dict[str, Any]) -> Replica:
        epochs = tuple((int(e["epoch"]), int(e["start_offset"])) for e in r.get("leader_epochs") or ())
        start = r["log_start_offset"] if r["log_start_offset"] is not None else 0
        return Replica(
            r["broker"], r["broker"], r["log_dir"], r["path"], r["topic"], int(r["partition"]), r["topic_id"],
            epochs, start, int(r["log_end_offset"]), r["high_watermark"],
        )  # fmt: skip

    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in rows:
        if is_compared(r.get("kind") or "log", r["topic"], bool(r.get("leader_epochs")), r["log_end_offset"]):
            groups.setdefault((r.get("cluster") or "", r["topic"], r["partition"]), []).append(r)
    out: list[dict[str, Any]] = []
    for _key, reps in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
        by_path = {r["path"]: r for r in reps}
        for f in partition_diverged([replica(r) for r in reps]):
            r = by_path[f.path]
            out.append(_finding(r["broker"], r["log_dir"], f, finding_fix(f), offset=f.offset))
    return out


def _pkey(r: dict[str, Any]) -> tuple[str, str, int]:
    """A partition of one cluster: replicas of two clusters are never compared."""
    return (r.get("cluster") or "", r["topic"], r["partition"])


def replica_lag(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Add to each live replica its lag behind the reference replica of its partition.

    ``lag_offsets`` = the reference replica's log end offset - this log end offset (0 at least; the
    reference replica: :func:`logdoctor.logdir.divergence.reference_key`, newest leader epoch first);
    ``lag_bytes`` = the reference replica's bytes - this replica's bytes (0 at least);
    ``below_high_watermark`` when this log ends before the partition's high watermark (the largest in
    any replica's checkpoint, at most the reference replica's log end): such a replica cannot be in the
    ISR.
    """
    from logdoctor.checks.replica_lag import partition_lag

    # leader_epochs: an input of REPLICA_DIVERGED (diverged_findings) and of the reference replica's choice
    # (its latest epoch, census_sql.replica_table's ``latest_epoch``), no column of the replicas table
    live = [{k: v for k, v in r.items() if k != "leader_epochs"} for r in rows if r["kind"] == "log"]
    epochs = {
        id(r): _latest_epoch_of(o) for r, o in zip(live, (o for o in rows if o["kind"] == "log"), strict=True)
    }
    groups: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for r in live:
        groups.setdefault(_pkey(r), []).append(r)
    for reps in groups.values():
        lags = partition_lag([_lag_replica(r, epochs[id(r)]) for r in reps])
        for r, lag in zip(reps, lags, strict=True):
            r["max_log_end_offset"] = lag.max_log_end_offset
            r["replica_count"] = lag.replica_count
            r["lag_offsets"] = lag.lag_offsets
            r["lag_bytes"] = lag.lag_bytes
            r["partition_high_watermark"] = lag.partition_high_watermark
            r["below_high_watermark"] = lag.below_high_watermark
    live.sort(key=lambda r: (r["topic"], r["partition"], r.get("cluster") or "", r["broker"], r["log_dir"]))
    return live


def _latest_epoch_of(r: dict[str, Any]) -> int | None:
    """A replica row's latest leader epoch: its ``latest_epoch`` (a replicas table row), else that of its
    ``leader_epochs`` (an inventory's or a scan's row); None without either."""
    if r.get("latest_epoch") is not None:
        return int(r["latest_epoch"])
    return latest_epoch([(int(e["epoch"]), e["start_offset"]) for e in r.get("leader_epochs") or ()])


def _lag_replica(r: dict[str, Any], latest: int | None = None) -> Any:
    """A replica row as the lag rule reads it; its latest leader epoch ``latest``, else the row's own
    (:func:`_latest_epoch_of`; a row without epochs: the reference is the longest log)."""
    from logdoctor.checks.replica_lag import LagReplica

    return LagReplica(
        r["broker"], r["log_dir"], r["path"], r["topic"], int(r["partition"]), r.get("log_end_offset"),
        r.get("bytes") or 0, r.get("high_watermark"), latest if latest is not None else _latest_epoch_of(r),
    )  # fmt: skip


def partition_rows(replicas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for r in replicas:
        groups.setdefault(_pkey(r), []).append(r)
    out = []
    for (cluster, topic, partition), reps in sorted(
        groups.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])
    ):
        worst = max(reps, key=lambda r: (r["lag_offsets"] or 0, r["lag_bytes"]))
        lagging = (worst["lag_offsets"] or 0) > 0

        def vals(key: str, reps: list[dict[str, Any]] = reps) -> list[int]:
            return [r[key] for r in reps if r.get(key) is not None]

        out.append(
            {
                "topic": topic,
                "partition": partition,
                "cluster": cluster,
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
                # a tiered replica's log start is its checkpoint, below its local log start
                "min_local_log_start_offset": min(vals("local_log_start_offset"), default=None),
                "max_local_log_start_offset": max(vals("local_log_start_offset"), default=None),
                "tiered_replicas": sum(1 for r in reps if r.get("remote_storage_enabled")),
                # the remote tier is one copy shared by the replicas: the most any replica's metadata knows
                "remote_segments": max(vals("remote_segments"), default=None),
                "remote_bytes": max(vals("remote_bytes"), default=None),
                "remote_log_start_offset": min(vals("remote_log_start_offset"), default=None),
                "remote_log_end_offset": max(vals("remote_log_end_offset"), default=None),
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


def _finding(
    broker: str | None, log_dir: str | None, f: Finding, fix: FixCommand, offset: int | None = None
) -> dict[str, Any]:
    return {**finding_row(broker, log_dir, f, offset=offset), **fix.columns()}


def fleet_findings(replicas: list[dict[str, Any]], log_dirs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Findings only a view across brokers can make: lagging replicas and nearly full disks.

    Codes (catalog scope "fleet"): REPLICA_LAG, LOG_DIR_NEARLY_FULL.
    """
    from logdoctor.checks.replica_lag import lagging, partition_lag

    out: list[dict[str, Any]] = []
    groups: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for r in replicas:
        groups.setdefault(_pkey(r), []).append(r)
    for reps in groups.values():
        # a replica by its broker and path: brokers on hosts of their own often share their log dirs' paths
        by_path = {(r["broker"], r["path"]): r for r in reps}
        for lag in partition_lag([_lag_replica(r) for r in reps]):
            for f in lagging([lag]):
                r = by_path[(lag.replica.broker, f.path)]
                out.append(_finding(r["broker"], r["log_dir"], f, finding_fix(f), offset=r["log_end_offset"]))
    by_broker: dict[str, list[dict[str, Any]]] = {}
    for d in log_dirs:
        by_broker.setdefault(d["broker"], []).append(d)
    biggest: dict[tuple[str, str], dict[str, Any]] = {}
    for r in replicas:
        cur = biggest.get((r["broker"], r["log_dir"]))
        if cur is None or (r["bytes"] or 0) > (cur["bytes"] or 0):
            biggest[(r["broker"], r["log_dir"])] = r
    for d in log_dirs:
        used = d.get("disk_used_fraction")
        if used is None or used < NEARLY_FULL_WARN:
            continue
        big = biggest.get((d["broker"], d["log_dir"]))
        others = [
            o
            for o in by_broker.get(d["broker"], [])
            if o["log_dir"] != d["log_dir"] and big is not None and _frees_space_on(d, o, big["bytes"] or 0)
        ]
        target = min(others, key=lambda o: o.get("disk_used_fraction") or 0.0, default=None)
        if target is not None and big is not None:
            argv = [
                "logdoctor", "move-partition", f"{big['topic']}-{big['partition']}", "--from", d["log_dir"],
                "--to", target["log_dir"],
            ]  # fmt: skip
            command = FixCommand.of(argv)
            fix = (
                f"Move a large partition ({big['topic']}-{big['partition']}, "
                f"{human_bytes(big['bytes'] or 0)}) to {target['log_dir']}, on another file system "
                f"({used_pct(target)} used, "
                f"{human_bytes(target.get('disk_available_bytes') or 0)} free), with the broker stopped: "
                f"`{command.command}` prints the plan and whether it fits, add --apply to make it; "
                "or use kafka-reassign-partitions with log dirs (KIP-113) while it runs."
            )
        else:
            command = FixCommand.of(["logdoctor", "retention", d["log_dir"]])
            fix = (
                f"Add a log dir on another disk, lower retention (`{command.command}` shows what retention "
                "deletes), or reassign partitions to other brokers."
            )
        f = catalog.make(
            "LOG_DIR_NEARLY_FULL",
            d["log_dir"],
            severity=Severity.ERROR if used >= NEARLY_FULL_ERROR else None,
            logdir=d["log_dir"],
            used=used_pct(d),
            available=_size(d.get("disk_available_bytes")),
            total=_size(d.get("disk_total_bytes")),
            disk_source=d.get("disk_source"),
            fix=fix,
        )
        out.append(_finding(d["broker"], d["log_dir"], f, command))
    return out


def _size(n: int | None) -> str:
    return "an unknown number of bytes" if n is None else human_bytes(n)


def _frees_space_on(full: dict[str, Any], other: dict[str, Any], nbytes: int) -> bool:
    """Whether moving ``nbytes`` from the log dir ``full`` to ``other`` (rows of one broker) frees space on
    ``full``'s file system: ``other`` is not nearly full, has room for them (checks.disk_space.move_margin),
    and lies on another file system. The rows carry no device: two dirs whose disks ``statvfs`` read with
    the same size and the same free bytes at the same moment are one file system; a simulated disk says
    nothing of where a folder lies, so it never gets a move."""
    from logdoctor.checks.disk_space import move_margin

    if full.get("disk_source") != "statvfs" or other.get("disk_source") != "statvfs":
        return False
    if (other.get("disk_used_fraction") or 1.0) >= NEARLY_FULL_WARN:
        return False
    free = other.get("disk_available_bytes") or 0
    if free < nbytes + move_margin(nbytes):
        return False
    same = (full.get("disk_total_bytes"), full.get("disk_available_bytes")) == (
        other.get("disk_total_bytes"),
        free,
    )
    return not same


def used_pct(log_dir_row: dict[str, Any]) -> str:
    """A log dir's disk Use% as ``df`` prints it ("34%"), from the row's ``disk_used_percent``."""
    pct = log_dir_row.get("disk_used_percent")
    return "?" if pct is None else f"{pct}%"


class FixCommand(NamedTuple):
    """The command that fixes a census finding, as its two columns: ``fix_command`` (the line a person
    pastes: the argv quoted for a shell, ``shlex.join``; or a command for the running cluster, which is no
    argv of logdoctor's) and ``fix_argv`` (the argvs a script runs without a shell, as the scan's
    ``fix_argv``: the one of ``fix_command``, or none)."""

    command: str
    argv: list[list[str]]

    @classmethod
    def of(cls, argv: Sequence[str] | None) -> FixCommand:
        """The fix whose command is ``argv`` (None: no command, the fix's words are the fix)."""
        return cls(shlex.join(argv), [list(argv)]) if argv else NO_COMMAND

    def columns(self) -> dict[str, Any]:
        return {"fix_command": self.command, "fix_argv": self.argv}


NO_COMMAND = FixCommand("", [])

#: a command in a fix's backticks: logdoctor's own, or one for the running cluster (kafka-*.sh)
_BACKTICKED = re.compile(r"`((?:logdoctor|kafka-[a-z-]+\.sh) [^`]*)`")


def command_in_fix(code: str, fix: str) -> str | None:
    """The command a finding's fix gives, as it gives it (the first in backticks; for a finding whose fix
    is a command for the running cluster, that one: TRANSACTION_HANGING's KIP-664 abort); None: the fix
    names none (its text is the fix)."""
    found = _BACKTICKED.findall(fix or "")
    return found[0] if found else None


def _fix_in_text(command: str | None) -> FixCommand:
    """A command a fix text gives: a logdoctor one is its argv quoted (catalog.render_fix), so
    ``shlex.split`` gives the argv back; another (kafka-*.sh, with placeholders) is no argv of ours."""
    if command is None:
        return NO_COMMAND
    if command.startswith("logdoctor "):
        return FixCommand.of(shlex.split(command))
    return FixCommand(command, [])


def finding_fix(f: Finding) -> FixCommand:
    """The command of a finding the census makes itself with the scan's rule: the first its fix names
    (its ``fix_argv``), else a command for the running cluster its text gives."""
    if f.fix_argv:
        return FixCommand.of(f.fix_argv[0])
    return _fix_in_text(command_in_fix(f.code, f.fix))


def scan_fix(finding: dict[str, Any], brokers: Sequence[BrokerInput]) -> FixCommand:
    """The command that fixes a scan finding (a row: an inventory keeps the fix's text, not its argvs), as
    the scan's fix gives it: the repair of its broker's log dirs (a dry run unless --apply) for a
    repairable code, else the command the fix names (a procedure, an export, a command for the running
    cluster); none when the fix names none (its text is the fix: never `logdoctor scan`, which fixes
    nothing)."""
    try:
        from logdoctor.repair.planner import REPAIRABLE
    except ImportError:  # pragma: no cover - the repair layer is part of the package
        REPAIRABLE = ()
    dirs = next((b.log_dirs for b in brokers if b.broker == finding["broker"]), ())
    targets = list(dirs) if dirs else [finding.get("log_dir") or finding["path"]]
    fix = finding.get("fix") or ""
    consent = re.search(r"`(logdoctor repair [^`]*--allow-metadata-loss)`", fix)
    if consent is not None:  # the last voter's metadata log: the repair that says what it loses
        return _fix_in_text(consent.group(1))
    procedure = re.search(r"`(logdoctor (?:move-partition|sync-replica) [^`]*)`", fix)
    if procedure is not None and finding["code"] not in REPAIRABLE:
        return _fix_in_text(procedure.group(1))  # the operator procedure the fix names (REPLICA_MISPLACED)
    if finding["code"] in REPAIRABLE:
        # a finding of a deep scan (an inventory at --depth deep) is repaired from a deep scan, which its fix
        # names (checks.default.log_corrupt_repair): a default-depth repair would not see it
        deep = ["--deep"] if f"--only {finding['code']} --deep" in fix else []
        return FixCommand.of(["logdoctor", "repair", *targets, "--only", finding["code"], *deep])
    return _fix_in_text(command_in_fix(finding["code"], fix))
