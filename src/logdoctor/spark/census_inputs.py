"""The census's inputs, log dirs and inventories mixed, as Spark DataFrames of one shape.

Each PATH of ``logdoctor census`` is one of:

- a log dir, a broker folder holding log dirs, a folder of broker folders (or a glob of them): each
  broker's log dirs are scanned on an executor, one Spark task per broker, as before;
- an inventory file (``logdoctor inventory``'s Parquet or JSON Lines), a folder holding inventory files
  (``*.parquet``, ``*.jsonl``, ``*.json``), a glob of them, or a URI of any of these
  (``s3://bucket/inventories/``, ``s3://bucket/inventories/*.parquet``): read with ``spark.read``.

Log dirs at a URI (``s3://bucket/broker-1/kafka-logs``) are refused with a message that names
``logdoctor inventory``: a broker's scan (:mod:`logdoctor.checks`) reads its files from a local disk
(maps, ``os`` listings, owners and modes, the ``.lock``), so the census takes remote brokers as
inventories, collected where their log dirs are. (``export`` and the data sources read log dirs at URIs.)

Both give three DataFrames: ``replicas``, ``log_dirs`` and ``findings``, with the columns of
:data:`REPLICA_DDL`, :data:`LOG_DIR_DDL` and :data:`FINDING_DDL` (the rows of
:func:`logdoctor.checks.inventory.broker_rows`). An inventory that cannot be read (truncated, corrupt,
not an inventory, an unknown schema version) is checked on an executor first, left out, and becomes an
``INVENTORY_UNREADABLE`` finding naming its path; the census goes on with the others. That check
(:func:`checked_frame`) keeps each file's rows other than replicas on the executors for the census's
queries; Spark reads the files for the replicas alone: each inventory is read twice, by its check and by
Spark's reader, whatever kinds of record it holds.
"""

from __future__ import annotations

import fnmatch
import glob
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from logdoctor.checks.inventory import INVENTORY_DDL
from logdoctor.spark.census_input_checks import FINDING_DDL, finding_row

INVENTORY_SUFFIXES = (".parquet", ".jsonl", ".json")

REPLICA_DDL = ", ".join(
    (
        "broker string, broker_id int, log_dir string, topic string, partition int, kind string, path string",
        "topic_id string, log_start_offset bigint, log_end_offset bigint, high_watermark bigint",
        "recovery_point bigint, segments int, bytes bigint, findings int, cluster string",
        "local_log_start_offset bigint, remote_storage_enabled boolean",
        "remote_segments int, remote_bytes bigint, remote_log_start_offset bigint",
        "remote_log_end_offset bigint",
        "leader_epochs array<struct<epoch:int,start_offset:bigint>>",
        "consumer_log_start_offset bigint, consumer_log_end_offset bigint",
    )
)
LOG_DIR_DDL = ", ".join(
    (
        "broker string, broker_id int, log_dir string, real_path string, mode string, cluster_id string",
        "partitions int, locked boolean, clean_shutdown boolean, disk_total_bytes bigint",
        "disk_used_bytes bigint, disk_available_bytes bigint, disk_used_fraction double",
        "disk_used_percent int, disk_source string",
        # the broker's controller quorum (an inventory's broker row: checks.metadata_log.quorum_voters)
        "quorum_voters array<int>, quorum_source string, quorum_kind string",
    )
)
#: the columns of the controller quorum (an inventory's broker row, each census log-dir row of the broker)
QUORUM_COLUMNS = ("quorum_voters", "quorum_source", "quorum_kind")
#: one committed offset of a consumer group (inventory ``commit`` rows, schema version 3)
COMMIT_DDL = ", ".join(
    (
        "broker string, broker_id int, cluster string, group string, topic string, partition int",
        "committed_offset bigint, commit_timestamp bigint, lag_bytes bigint, lag_ms bigint",
        "group_type string, commit_source string, commit_record_offset bigint, commit_topic_id string",
    )
)
#: where the log cleaner stands on one compacted replica (checks.compaction.compaction_row, run by the scan)
COMPACTION_DDL = ", ".join(
    (
        "broker string, broker_id int, log_dir string, topic string, partition int, path string",
        "cleaner_checkpoint bigint, first_dirty_offset bigint, first_uncleanable_offset bigint",
        "clean_bytes bigint, dirty_bytes bigint, cleanable_ratio double, min_cleanable_dirty_ratio double",
        "cleanable_now boolean, oldest_dirty_timestamp bigint, compaction_findings array<string>",
    )
)
#: the transaction coordinator's state: one transactional id of a __transaction_state replica (its JSON:
#: checks.transaction_state.txn_to_json), and a replica's producer state (checks.inventory.transaction_rows)
TXN_DDL = "broker string, cluster string, path string, coordinator_txn string"
PRODUCER_DDL = ", ".join(
    (
        "broker string, cluster string, log_dir string, topic string, partition int, path string",
        "producer_id bigint, producer_epoch int, producer_last_timestamp bigint, txn_first_offset bigint",
    )
)
#: a share partition's state in a __share_group_state replica (checks.share_groups.share_rows)
SHARE_DDL = ", ".join(
    (
        "broker string, cluster string, log_dir string, path string, share_group string",
        "share_topic_id string, share_partition int, share_start_offset bigint, share_record_offset bigint",
    )
)
#: the producer of each TRANSACTION_HANGING finding (a two-phase-commit transaction changes its fix)
HANGING_DDL = "broker string, cluster string, path string, offset bigint, producer_id bigint"


#: the census's input frames (:class:`InputFrames`' fields of these names) and their columns
FRAME_DDLS = {
    "replicas": REPLICA_DDL,
    "log_dirs": LOG_DIR_DDL,
    "findings": FINDING_DDL,
    "hanging": HANGING_DDL,
    "commits": COMMIT_DDL,
    "compaction": COMPACTION_DDL,
    "txns": TXN_DDL,
    "producers": PRODUCER_DDL,
    "shares": SHARE_DDL,
}


def ddl_names(ddl: str) -> list[str]:
    return [part.strip().split(" ", 1)[0] for part in ddl.split(", ")]


#: the columns the census reads of an inventory's rows other than its replicas (its log dirs, findings,
#: commits, compaction, transaction and share rows), which the inventory's check brings back
#: (:func:`checked_frame`): Spark reads the files for the replicas alone
SMALL_COLUMNS = list(
    dict.fromkeys(
        c
        for name, ddl in FRAME_DDLS.items()
        if name != "replicas"
        for c in ("record", "cluster_id", *ddl_names(ddl))
        if c != "cluster"  # the census's own key, no inventory column
    )
)
#: the columns of each kind of record the census reads beyond a replica's, log dir's and finding's (a
#: finding's producer: a TRANSACTION_HANGING's)
_KIND_COLUMNS = {
    "broker": QUORUM_COLUMNS,
    "finding": ("producer_id",),
    "commit": tuple(ddl_names(COMMIT_DDL)),
    "compaction": tuple(ddl_names(COMPACTION_DDL)),
    "txn": tuple(ddl_names(TXN_DDL)),
    "producer": tuple(ddl_names(PRODUCER_DDL)),
    "share": tuple(ddl_names(SHARE_DDL)),
}
#: an inventory's verdict among the rows its check brings back (``record``): its error (``_error``), format
#: (``_format``) and the kinds of record it holds (``_kinds``)
VERDICT = "_verdict"
#: the rows an inventory's check brings back, each with its file (``_file``): :data:`SMALL_COLUMNS`, typed
#: as the inventory's, and the verdict's own columns
CHECKED_DDL = ", ".join(
    [part for part in INVENTORY_DDL.split(", ") if part.split(" ", 1)[0] in SMALL_COLUMNS]
    + ["_file string, _error string, _format string, _kinds array<string>"]
)


@dataclass(slots=True)
class CensusInputs:
    """What the PATHS are, found once (:func:`classify`) and passed down (the CLI's checks, the census job).

    ``items``: every PATH, commas split and local globs expanded (URIs as given); ``log_dir_paths``: those
    holding log dirs, with the log dirs found under each in ``found``; ``inventories``: inventory files
    (local or URI); ``left_out``: a note for each PATH that is one of logdoctor's own folders
    (:func:`logdoctor.logdir.discovery.leave_out_own`). :meth:`brokers` groups the log dirs by broker
    (once)."""

    log_dir_paths: list[str] = field(default_factory=list)
    inventories: list[str] = field(default_factory=list)
    items: list[str] = field(default_factory=list)
    found: dict[str, list[str]] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)  # a note for each of logdoctor's own folders given
    _brokers: list[Any] | None = None

    def brokers(self) -> list[Any]:
        """The log-dir inputs' brokers (``census_rules.BrokerInput``, not yet named: :func:`name_brokers`),
        grouped from the log dirs :func:`classify` found (no second walk of the inputs)."""
        if self._brokers is None:
            from logdoctor.spark.census_rules import group_found_log_dirs

            self._brokers = (
                group_found_log_dirs([(p, self.found[p]) for p in self.log_dir_paths])
                if self.log_dir_paths
                else []
            )
        return self._brokers


def is_uri(path: str) -> bool:
    return "://" in path


def _is_inventory_name(name: str) -> bool:
    return name.endswith(INVENTORY_SUFFIXES) and not name.startswith((".", "_"))


def _list_uri(uri: str) -> list[str]:
    """Inventory files named by a URI: a file, a folder (its inventory files), or a glob in the last part."""
    from pyarrow import fs

    if glob.has_magic(uri.split("://", 1)[1]):
        folder_uri, pattern = uri.rsplit("/", 1)
        filesystem, folder = fs.FileSystem.from_uri(folder_uri)
        infos = filesystem.get_file_info(fs.FileSelector(folder))
        return sorted(
            f"{folder_uri}/{i.base_name}"
            for i in infos
            if i.is_file and fnmatch.fnmatch(i.base_name, pattern)
        )
    filesystem, path = fs.FileSystem.from_uri(uri)
    info = filesystem.get_file_info(path)
    if info.type == fs.FileType.File:
        return [uri]
    if info.type == fs.FileType.Directory:
        infos = filesystem.get_file_info(fs.FileSelector(path))
        return sorted(
            f"{uri.rstrip('/')}/{i.base_name}" for i in infos if i.is_file and _is_inventory_name(i.base_name)
        )
    raise FileNotFoundError(f"{uri}: no such file or folder")


def classify(paths: Sequence[str], *, check: Callable[[list[str]], None] | None = None) -> CensusInputs:
    """Sort PATHS (globs expanded) into log-dir inputs and inventory files, each input visited once.

    ``check`` (the CLI's refusals) is given every PATH, split and expanded, before any is classified.
    Raises ``CensusError`` for a path that does not exist or holds neither log dirs nor inventories."""
    from logdoctor.logdir.discovery import find_log_dirs, leave_out_own
    from logdoctor.spark.census_input_checks import CensusError, refuse_remote_log_dirs

    out = CensusInputs()
    items: list[str] = []
    for item in paths:
        for part in str(item).split(","):
            part = part.strip()
            if not part:
                continue
            if is_uri(part):
                items.append(part)
            elif glob.has_magic(part):
                matches = sorted(glob.glob(part))
                if not matches:
                    raise CensusError(f"no file or folder matches {part!r}")
                items.extend(matches)
            else:
                items.append(part)
    if not items:
        raise CensusError("no path given")
    items, out.left_out = leave_out_own(items)  # logdoctor's own backups and exports: a note each
    if not items:
        raise CensusError("; ".join(out.left_out) + ": no other path given")
    if check is not None:
        check(list(items))
    out.items = list(items)
    for item in items:
        if is_uri(item):
            try:
                files = _list_uri(item)
            except (OSError, ValueError) as exc:
                raise CensusError(f"{item}: {exc}") from exc
            if not files:
                refuse_remote_log_dirs(item)
                raise CensusError(f"{item}: no inventory found there (*.parquet, *.jsonl, *.json)")
            bad = [f for f in files if not _is_inventory_name(f.rsplit("/", 1)[-1])]
            if bad:
                refuse_remote_log_dirs(item.rsplit("/", 2)[0])
                raise CensusError(f"{bad[0]}: a file that is not an inventory (*.parquet, *.jsonl, *.json)")
            out.inventories.extend(files)
            continue
        if os.path.isfile(item):
            if not _is_inventory_name(os.path.basename(item)):
                raise CensusError(f"{item}: a file that is not an inventory (*.parquet, *.jsonl, *.json)")
            out.inventories.append(os.path.abspath(item))
            continue
        if not os.path.isdir(item):
            raise CensusError(f"{item}: no such file or folder")
        found = find_log_dirs(os.path.abspath(item))
        if found:
            out.log_dir_paths.append(item)
            out.found[item] = found
            continue
        files = sorted(
            os.path.join(os.path.abspath(item), n) for n in os.listdir(item) if _is_inventory_name(n)
        )
        files = [f for f in files if os.path.isfile(f)]
        if not files:
            raise CensusError(f"{item}: no Kafka log dir and no inventory found there")
        out.inventories.extend(files)
    return out


#: an inventory's verdict: (path, error or None, "parquet" | "json", its log-dir rows, its kinds of record)
Verdict = tuple[str, str | None, str, list[dict[str, Any]], list[str]]


def check_inventory(path: str) -> Verdict:
    """(path, error or None, "parquet" | "json", its log-dir rows, the kinds of record it holds): read the
    whole file as a reader would (executor side): :func:`inventory_check`'s verdict."""
    return inventory_check(path)[0]


def inventory_check(path: str) -> tuple[Verdict, Any]:
    """(the verdict, the rows other than replicas): read the whole file as a reader would (executor side).

    The verdict: (path, error or None, "parquet" | "json", its log-dir rows, the kinds of record it holds).
    The log-dir rows (a few per broker, :data:`LOG_DIR_DDL`'s columns) name the broker; the record kinds
    (:data:`logdoctor.checks.inventory.RECORD_KINDS` found in its ``record`` column) tell the census which of
    its queries have rows to read (none of a kind no inventory holds). The rows other than replicas (an
    Arrow table of :data:`SMALL_COLUMNS`; None when the file is unreadable) are the census's rows of every
    kind but the replicas: the check decodes them anyway, so no query reads the file again for them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from logdoctor.checks.inventory import arrow_schema, read_inventory_rows

    try:
        if _is_parquet(path):
            dirs, kinds, small = _check_parquet(path)
            return (path, None, "parquet", dirs, kinds), small
        rows = read_inventory_rows(path)
        if not rows or rows[0].get("record") != "broker":
            raise ValueError("not an inventory: its first row is not a broker row")
        # every row typed as the inventory's schema here, on the executor: a value of another type makes
        # this file unreadable (a finding), where Spark's JSON reader would make it null without a word
        table = pa.Table.from_pylist(rows, schema=arrow_schema())
        log_dirs = table.filter(pc.equal(table.column("record"), "log_dir"))
        kinds = sorted(k for k in pc.unique(table.column("record")).to_pylist() if k is not None)
        verdict = (path, None, "json", log_dirs.select(ddl_names(LOG_DIR_DDL)).to_pylist(), kinds)
        return verdict, _small_rows(table, table.schema)
    except Exception as exc:  # any failure to read is the finding
        return (path, f"{type(exc).__name__}: {exc}", "", [], []), None


def _small_rows(table: Any, schema: Any) -> Any:
    """The rows of ``table`` (an inventory's) other than replicas, as :data:`SMALL_COLUMNS` typed as in
    ``schema`` (the inventory's :func:`logdoctor.checks.inventory.arrow_schema`; a column of a version
    before it: nulls)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = table.filter(pc.invert(pc.fill_null(pc.equal(table.column("record"), "replica"), False)))
    return pa.table(
        {
            c: rows.column(c).cast(schema.field(c).type)
            if c in rows.column_names
            else pa.nulls(rows.num_rows, schema.field(c).type)
            for c in SMALL_COLUMNS
        }
    )


def _check_parquet(path: str) -> tuple[list[dict[str, Any]], list[str], Any]:
    """A Parquet inventory: its footer (a truncated file has none), schema version and columns, and
    every page of the columns the census reads decoded (a corrupt page fails here, not in Spark).
    Returns its log-dir rows, the kinds of record it holds and its rows other than replicas
    (:func:`_small_rows`)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from logdoctor.checks.inventory import METADATA_KEY, READABLE_VERSIONS, _filesystem, arrow_schema

    filesystem, p = _filesystem(path)
    dir_cols = [c for c in ddl_names(LOG_DIR_DDL) if c not in QUORUM_COLUMNS]  # the broker row's (verdicts)
    dirs: list[dict[str, Any]] = []
    kinds: set[str] = set()
    small: list[Any] = []
    with filesystem.open_input_file(p) as fh:
        pf = pq.ParquetFile(fh)
        version = int((pf.schema_arrow.metadata or {}).get(METADATA_KEY, b"0"))
        if version not in READABLE_VERSIONS:
            readable = " and ".join(map(str, READABLE_VERSIONS))
            raise ValueError(f"inventory schema version {version}, this logdoctor reads {readable}")
        required = sorted(  # the census's own cluster key is no inventory column; an older one: no quorum
            (
                set(ddl_names(REPLICA_DDL) + ddl_names(LOG_DIR_DDL) + ddl_names(FINDING_DDL))
                - {"cluster", *QUORUM_COLUMNS}
            )
            | {"record"}
        )
        names = set(pf.schema_arrow.names)  # the property builds the schema again on each call
        missing = [c for c in required if c not in names]
        if missing:
            raise ValueError(f"not an inventory: no column {', '.join(missing)}")
        if not pf.num_row_groups:
            raise ValueError("not an inventory: its first row is not a broker row")
        schema = arrow_schema()
        for i in range(pf.num_row_groups):
            record = pf.read_row_group(i, columns=["record"]).column(0)
            if i == 0 and (len(record) == 0 or record[0].as_py() != "broker"):
                raise ValueError("not an inventory: its first row is not a broker row")
            # every other column the census reads of the kinds of record this row group holds (a version 2
            # file has no commit, compaction, txn or share columns; a kind it does not hold is no query's)
            held = [k for k in pc.unique(record).to_pylist() if k is not None]
            more = {c for k in held for c in _KIND_COLUMNS.get(k, ())}
            wanted = sorted((set(required) | (more & names)) - {"record"})
            group = pf.read_row_group(i, columns=wanted).append_column("record", record)
            log_dirs = group.filter(pc.equal(group.column("record"), "log_dir"))
            dirs.extend(log_dirs.select(dir_cols).to_pylist())
            kinds.update(held)
            small.append(_small_rows(group, schema))
    return dirs, sorted(kinds), pa.concat_tables(small) if small else None


def _is_parquet(path: str) -> bool:
    from logdoctor.checks.inventory import _filesystem

    filesystem, p = _filesystem(path)
    with filesystem.open_input_file(p) as fh:
        return fh.read(4) == b"PAR1"


def _slices(spark: Any, n: int) -> int:
    """Tasks for ``n`` small files: a few per core (each task starts a Python worker's imports)."""
    return max(1, min(n, 4 * spark.sparkContext.defaultParallelism))


def _log_dirs_frame(spark: Any, rows: list[dict[str, Any]]) -> Any:
    """The inventories' log-dir rows (typed by :func:`check_inventory`) as a DataFrame."""
    import pyarrow as pa

    from logdoctor.checks.inventory import arrow_schema

    inventory = arrow_schema()
    schema = pa.schema([inventory.field(c) for c in ddl_names(LOG_DIR_DDL)])
    return spark.createDataFrame(pa.Table.from_pylist(rows, schema=schema)).coalesce(1)


@contextmanager
def session_confs(spark: Any, confs: dict[str, str]) -> Iterator[None]:
    """The session's SQL ``confs`` set for what runs inside, and put back as they were after (the session
    may be shared: tests', a notebook's)."""
    old = {key: spark.conf.get(key, None) for key in confs}
    for key, value in confs.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in old.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def _listing_tasks(spark: Any, tasks: int) -> Any:
    """Spark lists more than 32 input paths with a job of a task per path (each task's start costs more
    than a stat): a few tasks per core instead, for the DataFrames made inside (listing is eager)."""
    return session_confs(spark, {"spark.sql.sources.parallelPartitionDiscovery.parallelism": str(tasks)})


def checked_frame(spark: Any, files: list[str]) -> Any:
    """Each inventory of ``files`` checked (:func:`inventory_check`, looked up here: a test may replace it)
    on the executors, a few files per task: a DataFrame of :data:`CHECKED_DDL`, its verdict row (record
    :data:`VERDICT`) and its rows other than replicas, sent to the JVM as Arrow batches and persisted (memory
    and disk), so that each file is checked once and the census's queries of every kind but the replicas
    read these rows, not the file. Not yet computed: :func:`verdicts` is its first job."""
    from pyspark import StorageLevel

    check = inventory_check

    def checked(batches: Iterator[Any], check: Callable[[str], Any] = check) -> Iterator[Any]:
        import pyarrow as pa

        schema = _checked_schema()
        for batch in batches:
            for path in batch.column(0).to_pylist():
                (_p, error, fmt, _dirs, kinds), rows = check(path)
                verdict = {"record": VERDICT, "_file": path, "_error": error, "_format": fmt, "_kinds": kinds}
                yield from pa.Table.from_pylist([verdict], schema=schema).to_batches()
                if rows is not None and rows.num_rows:
                    n = rows.num_rows
                    cols = {c: rows.column(c) for c in SMALL_COLUMNS}
                    cols["_file"] = pa.array([path] * n, pa.string())
                    table = pa.table([cols.get(f.name, pa.nulls(n, f.type)) for f in schema], schema=schema)
                    yield from table.to_batches()

    paths = spark.sparkContext.parallelize([(f,) for f in files], _slices(spark, len(files)))
    frame = spark.createDataFrame(paths, "_file string").mapInArrow(checked, CHECKED_DDL)
    return frame.persist(StorageLevel.MEMORY_AND_DISK)


def _checked_schema() -> Any:
    """:data:`CHECKED_DDL` as Arrow: the inventory's types of :data:`SMALL_COLUMNS`, then the verdict's."""
    import pyarrow as pa

    from logdoctor.checks.inventory import arrow_schema

    inventory = arrow_schema()
    return pa.schema(
        [inventory.field(c) for c in ddl_names(CHECKED_DDL) if c in SMALL_COLUMNS]
        + [
            pa.field("_file", pa.string()),
            pa.field("_error", pa.string()),
            pa.field("_format", pa.string()),
            pa.field("_kinds", pa.list_(pa.string())),
        ]
    )


def verdicts(checked: Any, files: list[str]) -> list[Verdict]:
    """Each file's verdict from :func:`checked_frame`'s rows, in the order of ``files``: (path, error or
    None, format, its log-dir rows, the kinds of record it holds), as :func:`check_inventory` gives it.
    Only the verdict, broker and log-dir rows come to the driver: a few per inventory. Each log-dir row gets
    its broker row's controller quorum (:data:`QUORUM_COLUMNS`), as a census of log dirs gives it."""
    from pyspark.sql import functions as F

    dir_cols = ddl_names(LOG_DIR_DDL)
    rows = (
        checked.where(F.col("record").isin(VERDICT, "log_dir", "broker"))
        .select("_file", "record", "_error", "_format", "_kinds", *dir_cols)
        .toArrow()
        .to_pylist()
    )
    found: dict[str, Verdict] = {}
    dirs: dict[str, list[dict[str, Any]]] = {}
    quorum: dict[str, dict[str, Any]] = {}
    for r in rows:
        if r["record"] == VERDICT:
            found[r["_file"]] = (r["_file"], r["_error"], r["_format"] or "", [], list(r["_kinds"] or []))
        elif r["record"] == "broker":
            quorum[r["_file"]] = {c: r[c] for c in QUORUM_COLUMNS}
        else:
            dirs.setdefault(r["_file"], []).append({c: r[c] for c in dir_cols})
    for f, of_file in dirs.items():
        for d in of_file:
            d.update(quorum.get(f, {}))
    return [(*found[f][:3], dirs.get(f, []), found[f][4]) for f in files]


def read_with_pyarrow(spark: Any, files: list[str]) -> Any:
    """Inventories at URIs Spark's own file systems may not open (``s3://`` without hadoop-aws): each
    executor task reads its files with pyarrow's file systems (the URI's scheme) into rows."""
    from logdoctor.checks.inventory import column_names, read_inventory_rows

    names = column_names()

    def rows(path: str) -> list[tuple[Any, ...]]:
        return [(*(r.get(c) for c in names), path) for r in read_inventory_rows(path)]

    rdd = spark.sparkContext.parallelize(files, _slices(spark, len(files))).flatMap(rows)
    return spark.createDataFrame(rdd, INVENTORY_DDL + ", _file string")


def _file_keys(path: str) -> list[str]:
    """The names Spark's ``input_file_name()`` may give a file read from ``path`` (a local path: its
    ``file:`` URI forms), and the path itself (read_with_pyarrow's)."""
    if is_uri(path) and not path.startswith("file:"):
        return [path]
    local = path[len("file://") :] if path.startswith("file://") else path
    local = os.path.abspath(local)
    from pathlib import Path

    return sorted({path, local, "file:" + local, Path(local).as_uri()})


def unreadable_finding(path: str, error: str) -> dict[str, Any]:
    from logdoctor.checks import catalog

    return finding_row(None, None, catalog.make("INVENTORY_UNREADABLE", path, error=error))


@dataclass(slots=True)
class InputFrames:
    """The census's input DataFrames and what the driver learnt on the way (all small)."""

    replicas: Any
    log_dirs: Any
    findings: Any
    brokers: list[Any]  # BrokerInput of the log-dir inputs
    all_brokers: list[Any]  # BrokerInput of every input (log dirs and readable inventories), named
    inventories: list[str]
    unreadable: list[tuple[str, str]]
    cached: list[Any] = field(default_factory=list)
    commits: Any = None  # the consumer groups' committed offsets (COMMIT_DDL; version 2 inventories: none)
    compaction: Any = None  # where the cleaner stands per compacted replica (COMPACTION_DDL)
    txns: Any = None  # the coordinator's state (TXN_DDL)
    producers: Any = None  # each replica's producer state (PRODUCER_DDL)
    hanging: Any = None  # TRANSACTION_HANGING's producers (HANGING_DDL)
    shares: Any = None  # share-partition states (SHARE_DDL)
    #: the names of the frames above known to hold no row (a small census's, made of the driver's scans):
    #: their queries need not run
    empty: frozenset[str] = frozenset()

    def unpersist(self) -> None:
        for item in self.cached:
            item.unpersist()


def load_inputs(
    spark: Any,
    inputs: CensusInputs,
    now_ms: int,
    *,
    config_inputs: Any = None,
    progress: Any = None,
    simulated_disks: Any = None,
    on_driver: bool = False,
    driver_scans: Any = None,
) -> InputFrames:
    """DataFrames of every input: log dirs scanned on the executors, inventories read by Spark.

    ``on_driver`` (a small census): the log dirs are scanned here, one broker after the other, and their
    rows become DataFrames of local rows: no Python worker is started for a few brokers' scans;
    ``driver_scans``: those scans already started (``census.scan_ahead``: a Future of their results)."""
    from pyspark.sql import functions as F

    from logdoctor.spark.census_rules import BrokerInput, name_brokers, scan_broker

    columns = {name: ddl_names(ddl) for name, ddl in FRAME_DDLS.items()}
    frames: dict[str, list[Any]] = {name: [] for name in FRAME_DDLS}
    cached: list[Any] = []
    rowless: set[str] = set()
    raw = inputs.brokers()
    if progress is not None:
        progress(0, len(raw) + len(inputs.inventories))
    # each inventory's check, once: its verdict and log dirs come to the driver (a few short rows per
    # inventory), its rows other than replicas stay on the executors, kept for the census's queries
    small = checked_frame(spark, inputs.inventories) if inputs.inventories else None
    checked: list[Verdict] = []
    if small is not None:
        cached.append(small)
        checked = verdicts(small, inputs.inventories)
    # every input broker, log dirs and inventories alike, named together: a broker is (cluster id, node
    # id), and replicas are compared only within its cluster (census_rules.name_brokers)
    readable = [(path, dirs) for path, error, _fmt, dirs, _kinds in checked if error is None]
    named = name_brokers(
        [
            *raw,
            *(
                BrokerInput(
                    dirs[0]["broker"] if dirs else os.path.basename(path),
                    dirs[0]["broker_id"] if dirs else None,
                    (),
                    next((d["cluster_id"] for d in dirs if d.get("cluster_id")), None),
                )
                for path, dirs in readable
            ),
        ]
    )
    brokers, of_inventory = (
        named[: len(raw)],
        dict(zip((p for p, _d in readable), named[len(raw) :], strict=True)),
    )
    if brokers and on_driver:
        results = (
            driver_scans.result()
            if driver_scans is not None
            else [scan_broker(b, now_ms, config_inputs, simulated_disks) for b in brokers]
        )
        if len(results) != len(brokers):
            raise AssertionError(f"{len(results)} driver scans for {len(brokers)} brokers")
        for name, ddl in FRAME_DDLS.items():
            local = [tuple(r.get(c) for c in columns[name]) for res in results for r in res[name]]
            # one partition: a task, not one per core, for a few hundred rows; none: a frame the optimizer
            # knows empty (as a kind no inventory holds, below), so nothing over it runs
            frame = spark.createDataFrame(local, ddl).coalesce(1)
            if not local:
                frame = frame.where(F.lit(False))
                if not inputs.inventories:
                    rowless.add(name)
            frames[name].append(frame)
    elif brokers:
        scans = spark.sparkContext.parallelize(brokers, max(1, len(brokers))).map(
            lambda b: scan_broker(b, now_ms, config_inputs, simulated_disks)
        )
        # each census table reads the scan results again: kept on disk when the memory is wanted (the
        # remote audit's cached frames), so that none is evicted and the broker scanned again (RDD.persist
        # is MEMORY_ONLY: an evicted block is recomputed, here one task re-scanning the whole broker)
        from pyspark import StorageLevel

        scans = scans.persist(StorageLevel.MEMORY_AND_DISK)
        cached.append(scans)
        for name, ddl in FRAME_DDLS.items():
            rows = scans.flatMap(
                lambda res, name=name, cols=columns[name]: [tuple(r.get(c) for c in cols) for r in res[name]]
            )
            frames[name].append(spark.createDataFrame(rows, ddl))
    unreadable: list[tuple[str, str]] = []
    if inputs.inventories:
        good: dict[str, list[str]] = {"parquet": [], "json": [], "remote": []}
        log_dir_rows: list[dict[str, Any]] = []
        held: set[str] = set()  # the kinds of record the readable inventories hold
        for path, error, fmt, dirs, kinds in checked:
            if error is not None:
                unreadable.append((path, error))
                continue
            held.update(kinds)
            log_dir_rows.extend(dict(d, broker=of_inventory[path].broker) for d in dirs)
            if is_uri(path) and not path.startswith("file://"):
                good["remote"].append(path)
            else:
                good[fmt].append(path)
        if any(good.values()):
            frames["log_dirs"].append(_log_dirs_frame(spark, log_dir_rows))
        # each inventory's rows get its broker's census name and cluster key, by the file they come from
        names = spark.createDataFrame(
            [(key, b.broker, b.cluster) for path, b in of_inventory.items() for key in _file_keys(path)],
            "_file string, _broker string, _cluster string",
        )

        def with_names(df: Any) -> Any:
            return (
                df.join(F.broadcast(names), "_file", "left")
                .withColumn("broker", F.coalesce("_broker", "broker"))
                .withColumn("cluster", F.coalesce("_cluster", "cluster_id", F.lit("")))
            )

        # the replicas, read by Spark (the only query that reads the files after their check)
        for fmt, files in good.items():
            if not files or "replica" not in held:
                continue
            reader = spark.read.schema(INVENTORY_DDL)
            if fmt == "remote":
                df = read_with_pyarrow(spark, files)
            else:
                with _listing_tasks(spark, _slices(spark, len(files))):
                    df = reader.parquet(*files) if fmt == "parquet" else reader.json(files)
                df = df.withColumn("_file", F.input_file_name())
            df = with_names(df)
            frames["replicas"].append(df.where(df.record == "replica").select(*columns["replicas"]))
        # every other kind from the rows the checks kept (an unreadable inventory has none)
        if small is not None and any(good.values()):
            df = with_names(small.where(F.col("record") != VERDICT))
            for name, record in (
                ("findings", "finding"),
                ("commits", "commit"),
                ("compaction", "compaction"),
                ("txns", "txn"),
                ("producers", "producer"),
                ("shares", "share"),
            ):
                # a kind no inventory holds: no query over them (its frame is empty, made here: Spark's
                # optimizer drops the joins and windows over it, and the consumer ranges are never made)
                if record in held:
                    frames[name].append(df.where(df.record == record).select(*columns[name]))
            if "finding" in held:
                hanging = (df.record == "finding") & (df.code == "TRANSACTION_HANGING")
                frames["hanging"].append(
                    df.where(hanging & df.producer_id.isNotNull()).select(*columns["hanging"])
                )
    if unreadable:
        rows = [tuple(unreadable_finding(p, e).get(c) for c in columns["findings"]) for p, e in unreadable]
        frames["findings"].append(spark.createDataFrame(rows, FINDING_DDL))
    out: dict[str, Any] = {}
    for name, dfs in frames.items():
        if not dfs:
            # a false filter: Spark's optimizer knows it empty (a local list is an RDD it cannot see into),
            # and so drops every join, window and shuffle made over it (PropagateEmptyRelation)
            out[name] = spark.createDataFrame([], FRAME_DDLS[name]).where(F.lit(False))
            continue
        df = dfs[0]
        for other in dfs[1:]:
            df = df.unionByName(other)
        out[name] = df
    if progress is not None:
        progress(len(raw) + len(inputs.inventories), len(raw) + len(inputs.inventories))
    return InputFrames(
        **out,
        brokers=brokers,
        all_brokers=named,
        inventories=list(inputs.inventories),
        unreadable=unreadable,
        cached=cached,
        empty=frozenset(rowless),
    )


__all__ = [
    "COMMIT_DDL",
    "COMPACTION_DDL",
    "FINDING_DDL",
    "HANGING_DDL",
    "LOG_DIR_DDL",
    "PRODUCER_DDL",
    "QUORUM_COLUMNS",
    "REPLICA_DDL",
    "SHARE_DDL",
    "TXN_DDL",
    "CensusInputs",
    "InputFrames",
    "check_inventory",
    "classify",
    "load_inputs",
]
