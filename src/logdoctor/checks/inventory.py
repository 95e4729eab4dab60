"""The inventory of one broker's log dirs: everything the fleet census needs, in one small file.

``logdoctor inventory LOGDIR... --out FILE_OR_URI`` runs on the broker's host (read only, safe next to
a running broker) and writes the rows this module builds; ``logdoctor census`` reads such files from
many brokers together (:mod:`logdoctor.spark.census_inputs`). The format is documented in
``docs/inventory.md``; :data:`SCHEMA_VERSION` changes whenever a column changes meaning or goes away.

Read only: the scan (:func:`logdoctor.checks.scanner.scan`) opens every file read-only, the ``.lock``
is only probed (``F_OFD_GETLK``, :mod:`logdoctor.logdir.lock`: nothing is taken or released, so a
running broker is never disturbed) and that probe's answer is recorded as ``broker_running``.

One flat table, a row per thing, told apart by ``record``:

- ``broker``: one row: broker id, cluster id, depth, when, whether the broker was running, the controller
  quorum its metadata log dir names;
- ``log_dir``: one row per log dir: directory id, mode, disk usage (df's, :func:`logdoctor.logdir.disk.
  disk_usage`), the four offset checkpoints (entries read, problems);
- ``replica``: one row per live partition folder: log start/end offsets, high watermark, recovery point,
  segments, bytes, topic id (partition.metadata), leader epochs (leader-epoch-checkpoint), and since
  version 2 the local log start offset and whether remote storage applies (:mod:`logdoctor.checks.tiered`)
  and its remote tier from the replay of ``__remote_log_metadata`` (:func:`remote_columns`);
- ``finding``: one row per scan finding at the chosen depth.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.gc_pause import no_automatic_collections
from logdoctor.logdir.disk import disk_usage

SCHEMA_VERSION = 3  # 3: commit rows (consumer groups); 2: tiered storage (local log start, remote...)
#: the versions this logdoctor reads (a version 2 file has no commit rows: its groups are unknown)
READABLE_VERSIONS = (2, 3)
METADATA_KEY = b"logdoctor.inventory.schema_version"
RECORD_KINDS = (
    "broker", "log_dir", "replica", "finding", "commit", "compaction", "txn", "producer", "share"
)  # fmt: skip

#: Spark DDL of an inventory row (Parquet and JSON Lines alike); docs/inventory.md explains each column.
INVENTORY_DDL = ", ".join(
    (
        "schema_version int, record string, broker string, broker_id int, cluster_id string",
        "collected_at_ms bigint, depth string, broker_running boolean, host string",
        "log_dir string, directory_id string, real_path string, mode string, locked boolean",
        "clean_shutdown boolean, partitions int, disk_total_bytes bigint, disk_used_bytes bigint",
        "disk_available_bytes bigint, disk_used_fraction double, disk_used_percent int, disk_source string",
        "checkpoints array<struct<file:string,entries:int,readable:boolean,problems:int>>",
        "topic string, partition int, kind string, path string, topic_id string",
        "log_start_offset bigint, log_end_offset bigint, high_watermark bigint, recovery_point bigint",
        "segments int, bytes bigint, findings int",
        "remote_segments int, remote_bytes bigint, remote_log_start_offset bigint",
        "remote_log_end_offset bigint",
        "leader_epochs array<struct<epoch:int,start_offset:bigint>>",
        "code string, severity string, position bigint, offset bigint, message string, fix string",
        # version 2: tiered storage (KIP-405)
        "local_log_start_offset bigint, remote_storage_enabled boolean",
        # version 3: consumer groups' committed offsets (the census's consumer_groups table)
        "group string, committed_offset bigint, commit_timestamp bigint, lag_bytes bigint, lag_ms bigint",
        # within version 3: the group type (classic, consumer, share, streams; null: no metadata record)
        "group_type string",
        # within version 3: where a commit is (its __consumer_offsets folder and record offset, the topic
        # id it was made for) and the log range a consumer of a replica sees (checks.consumer_groups
        # log_range): the census judges commits by the scan's rule (issue 47)
        "commit_source string, commit_record_offset bigint, commit_topic_id string",
        "consumer_log_start_offset bigint, consumer_log_end_offset bigint",
        # within version 3: compaction rows, where the log cleaner stands (checks.compaction.compaction_row)
        "cleaner_checkpoint bigint, first_dirty_offset bigint, first_uncleanable_offset bigint",
        "clean_bytes bigint, dirty_bytes bigint, cleanable_ratio double, min_cleanable_dirty_ratio double",
        "cleanable_now boolean, oldest_dirty_timestamp bigint, compaction_findings array<string>",
        # within version 3: the transaction coordinator's state (txn rows: one per transactional id of the
        # broker's __transaction_state replicas, checks.transaction_state.txn_to_json) and each replica's
        # producer state (producer rows), which the census judges across brokers; producer_id is also
        # a TRANSACTION_HANGING finding's producer
        "coordinator_txn string, producer_id bigint, producer_epoch int, producer_last_timestamp bigint",
        "txn_first_offset bigint",
        # within version 3: share rows, the share-partition states of the broker's __share_group_state
        # replicas (checks.share_groups.share_rows), judged by the census against the fleet's log starts
        "share_group string, share_topic_id string, share_partition int, share_start_offset bigint",
        "share_record_offset bigint",
        # within version 3: the broker row's controller quorum, as its metadata log dir says it
        # (checks.metadata_log.quorum_voters; null: ZooKeeper mode or unknown), judged by the census
        "quorum_voters array<int>, quorum_source string, quorum_kind string",
    )
)


def column_names() -> list[str]:
    return [part.split(" ", 1)[0] for part in INVENTORY_DDL.split(", ")]


def arrow_schema() -> Any:
    """The inventory's pyarrow schema (with the schema version in its metadata)."""
    import pyarrow as pa

    scalar = {
        "int": pa.int32(),
        "bigint": pa.int64(),
        "string": pa.string(),
        "boolean": pa.bool_(),
        "double": pa.float64(),
    }

    def arrow_type(typ: str) -> Any:  # a type of INVENTORY_DDL: a scalar, array<T> or struct<name:T,...>
        if typ.startswith("array<"):
            return pa.list_(arrow_type(typ[6:-1]))
        if typ.startswith("struct<"):
            return pa.struct([(n, arrow_type(t)) for n, t in (f.split(":", 1) for f in typ[7:-1].split(","))])
        return scalar[typ]

    fields = [
        pa.field(name, arrow_type(typ)) for name, typ in (p.split(" ", 1) for p in INVENTORY_DDL.split(", "))
    ]
    return pa.schema(fields, metadata={METADATA_KEY: str(SCHEMA_VERSION).encode()})


@dataclass(frozen=True, slots=True)
class BrokerIdentity:
    """How the census names a broker: ``broker-<id>`` from meta.properties, else a folder name."""

    label: str
    broker_id: int | None
    cluster_id: str | None


def meta_identity(log_dir: str) -> tuple[int | None, str | None, str | None]:
    """(node/broker id, cluster id, directory id) of a log dir's meta.properties (None when unreadable)."""
    from logdoctor.logdir.model import LogDir

    try:
        meta = LogDir.shared(log_dir).meta_properties
    except Exception:
        return None, None, None
    if meta is None:
        return None, None, None
    bid = next((v for a in ("node_id", "broker_id") if isinstance(v := getattr(meta, a, None), int)), None)
    cluster = getattr(meta, "cluster_id", None)
    directory = getattr(meta, "directory_id", None)
    cluster_id = cluster if isinstance(cluster, str) else None
    return bid, cluster_id, directory if isinstance(directory, str) else None


def broker_identity(log_dirs: Sequence[str]) -> BrokerIdentity:
    """The census's name for the broker owning ``log_dirs`` (as :func:`logdoctor.spark.census.
    discover_brokers` names it when given the broker's folder or its single log dir)."""
    bid = cluster = None
    for ld in log_dirs:
        b, c, _ = meta_identity(ld)
        bid = b if bid is None else bid
        cluster = c if cluster is None else cluster
    if bid is not None:
        label = f"broker-{bid}"
    elif len(log_dirs) == 1:
        label = os.path.basename(os.path.abspath(log_dirs[0]).rstrip(os.sep))
    else:
        label = os.path.basename(os.path.dirname(os.path.abspath(log_dirs[0]).rstrip(os.sep)))
    return BrokerIdentity(label, bid, cluster)


def _owning_dir(path: str, log_dirs: Sequence[str]) -> str | None:
    best = None
    for d in log_dirs:
        if (path == d or path.startswith(d.rstrip(os.sep) + os.sep)) and (best is None or len(d) > len(best)):
            best = d
    return best


def _checkpoints(log_dir: str) -> list[dict[str, Any]]:
    from logdoctor.logdir.model import LogDir
    from logdoctor.logdir.names import OFFSET_CHECKPOINT_FILES

    # within broker_rows' shared_log_dirs block: the checkpoints as the scan read them, not read again
    # (two of 50,000 entries each were 0.11 s)
    ld = LogDir.shared(log_dir)
    out = []
    for name in OFFSET_CHECKPOINT_FILES:
        cp = ld.checkpoint(name)
        if not cp.exists:
            continue
        out.append(
            {
                "file": name,
                "entries": len(cp.checkpoint.entries) if cp.checkpoint is not None else 0,
                "readable": cp.error is None,
                "problems": len(cp.problems),
            }
        )
    return out


def broker_rows(
    log_dirs: Sequence[str],
    options: ScanOptions,
    identity: BrokerIdentity | None = None,
    *,
    jobs: int | None = 1,
    inventory: bool = False,
) -> dict[str, Any]:
    """Scan one broker's log dirs; the census's rows of it: ``replicas``, ``findings``, ``log_dirs``.

    With ``inventory`` the rows carry the inventory's extra columns too (directory ids, checkpoints,
    leader epochs) and there is a ``broker`` row. The census from log dirs and from inventories both use
    these rows, so their tables agree by construction of the input and by the one Spark SQL of the join.
    """
    from logdoctor.logdir.model import shared_log_dirs

    # one LogDir per path for the scan and the rows alike: meta.properties and the checkpoints read once
    with shared_log_dirs():
        return _broker_rows(log_dirs, options, identity, jobs=jobs, inventory=inventory)


#: the scan's findings the census makes again across brokers (left out of a broker's rows)
FLEET_JUDGED = frozenset(
    {
        "LOG_DIR_NEARLY_FULL",
        "CONSUMER_OFFSET_OUT_OF_RANGE",
        "TRANSACTION_STATE_MISMATCH",
        "SHARE_GROUP_BEHIND_LOG_START",
    }
)


def _broker_rows(
    log_dirs: Sequence[str],
    options: ScanOptions,
    identity: BrokerIdentity | None,
    *,
    jobs: int | None,
    inventory: bool,
) -> dict[str, Any]:
    from logdoctor.checks.consumer_groups import log_range
    from logdoctor.checks.metadata_log import quorum_voters
    from logdoctor.checks.scanner import scan

    dirs_abs = [os.path.abspath(d) for d in log_dirs]
    who = identity or broker_identity(dirs_abs)
    # the coordinator's state is judged across brokers (transaction_rows): every replica's producers kept
    report = scan(dirs_abs, dataclasses.replace(options, keep_producers=True), jobs=jobs)
    replicas = []
    remote = report.remote
    # no remote log metadata replayed: every replica's remote columns are the same nulls (made once)
    unknown_remote = remote_columns(None, "log", None, "", 0) if remote is None else None
    for p in report.partitions:
        row: dict[str, Any] = {
            "broker": who.label,
            "broker_id": who.broker_id,
            "log_dir": p.log_dir,
            "topic": p.topic,
            "partition": p.partition,
            "kind": p.kind,
            "path": p.path,
            "topic_id": p.topic_id,
            "log_start_offset": p.log_start_offset,
            "log_end_offset": p.log_end_offset,
            "high_watermark": p.high_watermark,
            "recovery_point": p.recovery_point,
            "segments": p.segments,
            "bytes": p.bytes,
            "findings": len(p.findings),
            "local_log_start_offset": p.local_log_start_offset,
            "remote_storage_enabled": p.remote_log_enabled,
            **(unknown_remote or remote_columns(remote, p.kind, p.topic_id, p.topic, p.partition)),
        }
        # as the scan read them (its findings say why a file is unreadable); the census compares them
        # across brokers (REPLICA_DIVERGED)
        row["leader_epochs"] = [{"epoch": e, "start_offset": s} for e, s in p.leader_epochs]
        rng = log_range(p)
        row["consumer_log_start_offset"], row["consumer_log_end_offset"] = rng if rng else (None, None)
        replicas.append(row)
    findings = [
        {
            "broker": who.label,
            "log_dir": _owning_dir(f.path, report_dirs(report)),
            "code": f.code,
            "severity": f.severity.label,
            "path": f.path,
            "position": f.position,
            "offset": f.offset,
            "message": f.message,
            "fix": f.fix,
        }
        | ({"producer_id": (f.details or {}).get("producer_id")} if f.code == "TRANSACTION_HANGING" else {})
        for f in report.findings
        # the census makes these with the fleet's view: LOG_DIR_NEARLY_FULL from the log_dir rows
        # (census_rules), CONSUMER_OFFSET_OUT_OF_RANGE by the scan's rule over every broker's replicas and
        # commits (census_sql.consumer_offset_findings)
        if f.code not in FLEET_JUDGED
    ]
    dirs = []
    for d in report.log_dirs:
        du = disk_usage(d.path, options.simulated_disks)
        row = {
            "broker": who.label,
            "broker_id": who.broker_id if who.broker_id is not None else d.node_id,
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
        if inventory:
            row["directory_id"] = meta_identity(d.path)[2]
            row["checkpoints"] = _checkpoints(d.path)
        dirs.append(row)
    from logdoctor.checks.compaction import compaction_row
    from logdoctor.checks.consumer_groups import commit_rows

    compaction = []
    for p in report.partitions:
        row = compaction_row(p)
        if row is not None:
            compaction.append({"broker": who.label, "broker_id": who.broker_id, "log_dir": p.log_dir, **row})

    commits = [
        {"broker": who.label, "broker_id": who.broker_id, **c}
        for c in (commit_rows(report.partitions) if report.depth is not Depth.QUICK else [])
    ]
    txns, producers = transaction_rows(report, who)
    from logdoctor.checks.share_groups import share_rows

    shares = [
        {"broker": who.label, "broker_id": who.broker_id, **r}
        for r in (share_rows(report.partitions, report.features) if report.depth is not Depth.QUICK else [])
    ]
    return {
        "replicas": replicas,
        "findings": findings,
        "commits": commits,
        "compaction": compaction,
        "txns": txns,
        "producers": producers,
        "shares": shares,
        "log_dirs": dirs,
        "bytes_read": report.bytes_read,
        "broker_running": any(d.locked for d in report.log_dirs),
        "identity": who,
        "quorum": quorum_voters(report.metadata),
    }


def transaction_rows(report: Any, who: BrokerIdentity) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The inputs of TRANSACTION_STATE_MISMATCH the census judges across brokers (checks.transaction_state
    ``mismatches``): ``txn`` rows, the coordinator's state of each of the broker's ``__transaction_state``
    replicas (the one a consumer fetches from of each, as the scan's rule takes), and ``producer`` rows, the
    producer state of each live replica (kept with ScanOptions.keep_producers)."""
    from logdoctor.checks.consumer_groups import replicas_by_partition
    from logdoctor.checks.transaction_state import coordinator_state, txn_to_json
    from logdoctor.logdir.names import TRANSACTION_STATE_TOPIC

    base = {"broker": who.label, "broker_id": who.broker_id}
    txns: list[dict[str, Any]] = []
    producers: list[dict[str, Any]] = []
    if report.depth is Depth.QUICK:
        return txns, producers
    chosen = sorted(replicas_by_partition(report.partitions, {}).items(), key=lambda kv: kv[0][2])
    for (_c, topic, n), p in chosen:
        if topic != TRANSACTION_STATE_TOPIC:
            continue
        for t in coordinator_state([p]).values():
            txns.append({**base, "log_dir": p.log_dir, "topic": topic, "partition": n, "path": p.path,
                         "coordinator_txn": txn_to_json(t)})  # fmt: skip
    for p in report.partitions:
        for pid, (epoch, last, first) in sorted(p.producers.items()):
            producers.append({**base, "log_dir": p.log_dir, "topic": p.topic, "partition": p.partition,
                              "path": p.path, "producer_id": pid, "producer_epoch": epoch,
                              "producer_last_timestamp": last, "txn_first_offset": first})  # fmt: skip
    return txns, producers


def remote_columns(
    remote: Any, kind: str, topic_id: str | None, topic: str, partition: int
) -> dict[str, Any]:
    """The remote tier of one replica (``remote``: the scan's RemoteLogMetadata, None when the log dirs show
    no remote storage): its COPY_SEGMENT_FINISHED segments (the ones that serve reads), their bytes, the
    first offset they hold and the offset after the last. All null when unknown (no metadata replayed, or
    the partition's metadata partition is not in these log dirs); 0 segments and null offsets when the
    metadata partition was read and holds no segment of it (not tiered)."""
    none = {
        "remote_segments": None,
        "remote_bytes": None,
        "remote_log_start_offset": None,
        "remote_log_end_offset": None,
    }
    if remote is None or kind != "log":
        return none
    rp = remote.partition(topic_id, topic, partition)
    if rp is None:
        if remote.covers(topic_id, partition):
            return {**none, "remote_segments": 0, "remote_bytes": 0}
        return none
    from logdoctor.checks.remote_tier import tier_columns

    return tier_columns(rp)


def report_dirs(report: Any) -> list[str]:
    return [d.path for d in report.log_dirs]


@dataclass(slots=True)
class Inventory:
    """One broker's inventory: its rows (a dict per row, every column of :data:`INVENTORY_DDL`)."""

    rows: list[dict[str, Any]]
    broker: str
    broker_id: int | None
    broker_running: bool
    depth: Depth
    elapsed_s: float

    def count(self, record: str) -> int:
        return sum(1 for r in self.rows if r["record"] == record)


def build_inventory(
    log_dirs: Sequence[str],
    depth: Depth = Depth.DEFAULT,
    *,
    now_ms: int | None = None,
    jobs: int | None = None,
    config_inputs: Any = None,
    simulated_disks: Any = None,
) -> Inventory:
    """Scan ``log_dirs`` (one broker's) at ``depth`` and build its inventory rows. Reads only."""
    with no_automatic_collections():  # 100,000 dicts for 50,000 partitions (checks.gc_pause)
        return _build_inventory(log_dirs, depth, now_ms, jobs, config_inputs, simulated_disks)


def _build_inventory(
    log_dirs: Sequence[str],
    depth: Depth,
    now_ms: int | None,
    jobs: int | None,
    config_inputs: Any,
    simulated_disks: Any,
) -> Inventory:
    import socket

    started = time.perf_counter()
    now = int(time.time() * 1000) if now_ms is None else now_ms
    options = ScanOptions(depth, now, config_inputs=config_inputs, simulated_disks=simulated_disks)
    res = broker_rows(log_dirs, options, jobs=jobs, inventory=True)
    who: BrokerIdentity = res["identity"]
    names = column_names()
    base = {"schema_version": SCHEMA_VERSION, "broker": who.label, "broker_id": who.broker_id}
    rows: list[dict[str, Any]] = [
        {
            **base,
            "record": "broker",
            "cluster_id": who.cluster_id,
            "collected_at_ms": now,
            "depth": depth.name.lower(),
            "broker_running": res["broker_running"],
            "host": socket.gethostname(),
            **res["quorum"],
        }
    ]
    for d in res["log_dirs"]:
        rows.append({**d, **base, "record": "log_dir", "broker_id": d["broker_id"]})
    # every column, in order (None: absent)
    rows = [dict(zip(names, map(r.get, names), strict=True)) for r in rows]
    template = dict.fromkeys(names)
    kinds = (
        ("replica", res["replicas"]),
        ("finding", res["findings"]),
        ("commit", res["commits"]),
        ("compaction", res["compaction"]),
        ("txn", res["txns"]),
        ("producer", res["producers"]),
        ("share", res["shares"]),
    )
    for record, found in kinds:
        for r in found:  # {**r, **base, "record": ...} with every column, made in place (50,000 replicas)
            row = template.copy()
            row.update(r)
            row.update(base)
            row["record"] = record
            if len(row) != len(template):  # a key that is no column: left out
                row = {k: row[k] for k in names}
            rows.append(row)
    return Inventory(
        rows, who.label, who.broker_id, res["broker_running"], depth, time.perf_counter() - started
    )


def _filesystem(out: str) -> tuple[Any, str]:
    """(pyarrow file system, path in it) of a local path or a URI (``s3://``, ``file://`` ...)."""
    from pyarrow import fs

    if "://" in out:
        return fs.FileSystem.from_uri(out)
    return fs.LocalFileSystem(), os.path.abspath(out)


class InventoryOutputError(ValueError):
    """``--out`` names a folder, or an existing file that is not an inventory (nothing was written)."""


_NOT_AN_INVENTORY = BrokerIdentity("", None, None)  # what _inventory_owner answers for any other file


def _inventory_owner(filesystem: Any, path: str) -> BrokerIdentity:
    """Whose inventory the file at ``path`` is (any schema version: Parquet with the inventory's schema
    metadata, or JSON Lines whose first row carries ``schema_version``): its broker row's name, broker
    id and cluster id; :data:`_NOT_AN_INVENTORY` for any other file."""
    try:
        with filesystem.open_input_file(path) as fh:
            head = fh.read(4)
            if head == b"PAR1":
                import pyarrow.parquet as pq

                fh.seek(0)
                pf = pq.ParquetFile(fh)
                if METADATA_KEY not in (pf.schema_arrow.metadata or {}):
                    return _NOT_AN_INVENTORY
                names = pf.schema_arrow.names
                cols = [c for c in ("record", "broker", "broker_id", "cluster_id") if c in names]
                rows = pf.read(columns=cols).to_pylist()
                row = next((r for r in rows if r.get("record") == "broker"), rows[0] if rows else {})
            else:
                fh.seek(0)
                first = fh.read(64 * 1024).split(b"\n", 1)[0]
                row = json.loads(first)  # the broker row comes first
    except (OSError, ValueError):  # unreadable, not Parquet, not JSON
        return _NOT_AN_INVENTORY
    if not isinstance(row, dict) or ("schema_version" not in row and "record" not in row):
        return _NOT_AN_INVENTORY
    bid, cluster = row.get("broker_id"), row.get("cluster_id")
    return BrokerIdentity(
        str(row.get("broker") or "?"),
        bid if isinstance(bid, int) else None,
        cluster if isinstance(cluster, str) else None,
    )


def _same_broker(a: BrokerIdentity, b: BrokerIdentity) -> bool:
    """Whether two identities name one broker: cluster id and node id when both have them, else the
    census's name."""
    if a.broker_id is not None and b.broker_id is not None:
        clusters = {a.cluster_id, b.cluster_id} - {None}
        return a.broker_id == b.broker_id and len(clusters) <= 1
    return a.label == b.label


def _describe(who: BrokerIdentity) -> str:
    cluster = f", cluster {who.cluster_id}" if who.cluster_id else ""
    return f"{who.label} (broker id {who.broker_id if who.broker_id is not None else 'unknown'}{cluster})"


def check_inventory_output(out: str, owner: BrokerIdentity | None = None) -> None:
    """Refuse (:class:`InventoryOutputError`) an ``out`` that is a folder or an existing file other than
    an inventory, or (given ``owner``, the broker whose inventory is to be written) another broker's
    inventory: an inventory is replaced only by the same broker's (cluster id and node id)."""
    import pyarrow.fs as pafs

    filesystem, path = _filesystem(str(out))
    info = filesystem.get_file_info(path)
    if info.type == pafs.FileType.Directory:
        raise InventoryOutputError(
            f"{out} is a folder: --out names the inventory file, "
            f"e.g. {os.path.join(str(out), 'broker-1.parquet')}"
        )
    if info.type == pafs.FileType.NotFound:
        return
    found = _inventory_owner(filesystem, path)
    if found is _NOT_AN_INVENTORY:
        raise InventoryOutputError(
            f"{out} exists and is not an inventory: inventory replaces only an inventory it wrote; choose "
            "another --out (or remove the file)"
        )
    if owner is not None and not _same_broker(found, owner):
        raise InventoryOutputError(
            f"{out} is the inventory of {_describe(found)}, not of {_describe(owner)} whose log dirs were "
            "given: an inventory is replaced only by the same broker's; choose another --out"
        )


def write_inventory(
    inv: Inventory, out: str, *, json_lines: bool = False, owner: BrokerIdentity | None = None
) -> str:
    """Write ``inv`` to ``out`` (local path or URI): Parquet, or JSON Lines with ``json_lines``.

    Refuses, before writing, what :func:`check_inventory_output` refuses. Local files are written to a
    temporary name beside ``out`` and renamed, so a reader never sees half a file; a failed or
    interrupted write removes its temporary file. Returns the path written."""
    with no_automatic_collections():  # a string per row, an Arrow column per column (gc_pause)
        return _write_inventory(inv, out, json_lines, owner)


# JSON Lines are encoded and written this many rows at a time: one string of the whole file (51 MB for
# 50,000 partitions), then its bytes, were two allocations of that size, each paid in page faults
_JSON_LINES_BATCH = 1000


def _write_json_lines(rows: list[dict[str, Any]], fh: Any) -> None:
    encode = json.JSONEncoder(default=str, separators=(",", ":")).encode  # json.dumps's, made once
    for start in range(0, len(rows), _JSON_LINES_BATCH):
        fh.write("".join([encode(r) + "\n" for r in rows[start : start + _JSON_LINES_BATCH]]).encode())


def _write_inventory(inv: Inventory, out: str, json_lines: bool, owner: BrokerIdentity | None) -> str:
    import pyarrow as pa

    check_inventory_output(out, owner)
    filesystem, path = _filesystem(str(out))
    parent = os.path.dirname(path)
    if parent:
        filesystem.create_dir(parent, recursive=True)
    local = type(filesystem).__name__ == "LocalFileSystem"
    target = f"{path}.tmp-{os.getpid()}" if local else path
    try:
        if json_lines:
            with filesystem.open_output_stream(target) as fh:
                _write_json_lines(inv.rows, fh)
        else:
            import pyarrow.parquet as pq

            table = pa.Table.from_pylist(inv.rows, schema=arrow_schema())
            with filesystem.open_output_stream(target) as fh:
                pq.write_table(table, fh, compression="zstd")
        if local:
            os.replace(target, path)
    except BaseException:
        if local:
            with contextlib.suppress(OSError):
                os.unlink(target)
        raise
    return path


def inventory_row_count(path: str, most: int) -> int:
    """The rows of the inventory file at ``path`` without reading them (Parquet: its footer's count; JSON
    Lines: its lines, counted until past ``most``); 0 for a file that cannot be read so (the reader of
    :func:`read_inventory_rows` says why)."""
    import pyarrow.parquet as pq

    try:
        filesystem, p = _filesystem(path)
        with filesystem.open_input_file(p) as fh:
            if fh.read(4) == b"PAR1":
                return pq.ParquetFile(fh).metadata.num_rows
            fh.seek(0)
            lines = 0
            while lines <= most and (chunk := fh.read(1 << 20)):
                lines += chunk.count(b"\n")
            return lines
    except (OSError, ValueError):
        return 0


def read_inventory_rows(path: str) -> list[dict[str, Any]]:
    """Read an inventory file (Parquet or JSON Lines; local path or URI) back into rows.

    Raises ValueError for a file that is not an inventory of a schema version this logdoctor reads."""
    import pyarrow.parquet as pq

    filesystem, p = _filesystem(path)
    with filesystem.open_input_file(p) as fh:
        head = fh.read(4)
        fh.seek(0)
        if head == b"PAR1":
            table = pq.read_table(fh)
            meta = table.schema.metadata or {}
            version = int(meta.get(METADATA_KEY, b"0"))
            rows = table.to_pylist()
        else:
            rows = [json.loads(line) for line in fh.read().decode().splitlines() if line.strip()]
            version = rows[0].get("schema_version", 0) if rows else 0
    if version not in READABLE_VERSIONS:
        raise ValueError(
            f"{path}: inventory schema version {version}, this logdoctor reads "
            + " and ".join(map(str, READABLE_VERSIONS))
        )
    return rows


__all__ = [
    "INVENTORY_DDL",
    "READABLE_VERSIONS",
    "SCHEMA_VERSION",
    "BrokerIdentity",
    "Inventory",
    "arrow_schema",
    "broker_identity",
    "broker_rows",
    "build_inventory",
    "inventory_row_count",
    "read_inventory_rows",
    "write_inventory",
]
