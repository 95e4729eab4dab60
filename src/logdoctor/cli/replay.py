"""`logdoctor replay PATHS --bootstrap-server HOST:PORT`: a dead broker's records back into a live cluster
(issue 72), on the engine of :mod:`logdoctor.replay`.

Without ``--apply`` the plan is printed and nothing is written. Exit codes: 0 a clean plan printed, or a
replay done; 1 the same with ranges of the source left out (torn, CRC-bad: named, counted); 2 a
transaction failed (aborted: a rerun resumes) or the offset map read back does not match the source; 64
usage (``--view`` other than history, ``--include-control``, a Java-only client key, a client setting
librdkafka refuses...); 66 a missing input or config file; 69 the target cluster does not answer a client
made with the given settings; 73 ``--offset-map`` names a folder that holds something other than a Delta
table, or inside an input; 77 an input this user cannot read; 78 the plan has conflicts (printed; nothing
written), or another replay runs into the same target, or a ``--groups`` group gained members on the
target before its commit, or is left at an offset there that no replay committed (the records are
replayed); 130 Ctrl-C (the transactions committed stay, a rerun
resumes).

With ``--master`` (``local[N]``, ``spark://...``, any Spark master; ``--conf`` as ``export`` takes them)
each source partition's replay is one Spark task (:mod:`logdoctor.spark.replay_job`), and ``--offset-map``
is written by Spark through ``export``'s table writers; the plan, the topics, the conflicts and ``--groups``
stay in this process, which prints the same result. Without ``--master`` no Spark is started.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Annotated, Any

import typer

from logdoctor.cli.app import app
from logdoctor.cli.error_lines import fail, refused, usage_error
from logdoctor.cli.exit_codes import (
    EX_CANTCREAT,
    EX_FAILED,
    EX_NOINPUT,
    EX_NOPERM,
    EX_OK,
    EX_REFUSED,
    EX_UNAVAILABLE,
    EX_WARNINGS,
    ExitCode,
)
from logdoctor.cli.jsonout import print_json
from logdoctor.cli.lines import Lines, lines_for, wrap
from logdoctor.cli.record_options import RecordReadArgs, plan_records, reads_records
from logdoctor.logdir.disk import human_bytes

if TYPE_CHECKING:
    from logdoctor.replay import ReplayPlan, ReplayResult

__all__ = ["client_config", "replay_command"]

#: keys of a producer config that the replay sets itself (exactly once: one transactional producer per
#: target partition); ``bootstrap.servers`` is --bootstrap-server
OWN_PRODUCER_KEYS = ("bootstrap.servers", "transactional.id", "enable.idempotence", "acks")
#: librdkafka's keys of the producers' codec (``compression.codec`` is its alias): --compression's
CODEC_KEYS = ("compression.type", "compression.codec")
_JAAS_MODULES = ("PlainLoginModule", "ScramLoginModule")
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def client_config(path: str, option: str) -> dict[str, str]:
    """The ``key=value`` pairs of a Kafka client properties file (``--admin-config``, ``--producer-config``),
    for confluent-kafka (librdkafka): every key passed as it is, except the Java client's security keys
    librdkafka does not know, mapped: ``sasl.jaas.config`` of a PLAIN or SCRAM login module ->
    ``sasl.username``/``sasl.password``; ``ssl.truststore.location`` of ``ssl.truststore.type=PEM`` ->
    ``ssl.ca.location``; ``ssl.keystore.type=PKCS12`` dropped (librdkafka's ``ssl.keystore.location`` is
    PKCS#12). Any other of them (a JKS store, another JAAS login module) is a usage error naming the key.
    ``sasl.mechanism`` is librdkafka's alias of ``sasl.mechanisms``, ``security.protocol`` and the other
    ``ssl.*`` keys are the same in both clients. A missing file exits 66."""
    from logdoctor.errors import FormatError
    from logdoctor.formats.properties import parse_properties

    if not os.path.isfile(path):
        fail(f"error: {option} {path}: no such file", EX_NOINPUT)
    try:
        with open(path, "rb") as fh:
            props = parse_properties(fh.read(), source=path)
    except FormatError as exc:
        usage_error(f"{option} {path}: {exc}")
    except OSError as exc:
        fail(f"error: {option} {path}: {exc.strerror or exc}", EX_NOPERM)
    keys = props.keys()
    conf = {k: props.get(k) or "" for k in keys}
    return java_keys_mapped(conf, f"{option} {path}")


def java_keys_mapped(conf: Mapping[str, str], where: str) -> dict[str, str]:
    """``conf`` with the Java client's security keys mapped for librdkafka (see :func:`client_config`)."""
    out = dict(conf)
    jaas = out.pop("sasl.jaas.config", None)
    if jaas is not None:
        if not any(m in jaas for m in _JAAS_MODULES):
            usage_error(
                f"{where}: sasl.jaas.config: only a PlainLoginModule or ScramLoginModule (username, "
                "password) is mapped for librdkafka; give librdkafka's keys instead (sasl.oauthbearer.*, "
                "sasl.kerberos.*)"
            )
        opts = dict(_JAAS_OPTION.findall(jaas))
        if "username" not in opts or "password" not in opts:
            usage_error(f'{where}: sasl.jaas.config: no username="..." and password="..." in it')
        out.setdefault("sasl.username", opts["username"])
        out.setdefault("sasl.password", opts["password"])
    store_type = (out.pop("ssl.truststore.type", None) or "JKS").upper()
    trust = out.pop("ssl.truststore.location", None)
    trust_password = out.pop("ssl.truststore.password", None)
    if trust is not None:
        if store_type != "PEM":
            usage_error(
                f"{where}: ssl.truststore.location: a {store_type} truststore is the Java client's; "
                "librdkafka takes the CA certificates as a PEM file: ssl.ca.location"
            )
        if trust_password:
            usage_error(f"{where}: ssl.truststore.password: a PEM truststore has no password for librdkafka")
        out.setdefault("ssl.ca.location", trust)
    key_type = out.pop("ssl.keystore.type", None)
    if key_type is not None and key_type.upper() != "PKCS12":
        usage_error(
            f"{where}: ssl.keystore.type={key_type}: librdkafka reads a PKCS12 keystore "
            "(ssl.keystore.location) or PEM files (ssl.certificate.location, ssl.key.location)"
        )
    for java_only in ("ssl.enabled.protocols", "ssl.protocol", "sasl.login.callback.handler.class"):
        if java_only in out:
            usage_error(f"{where}: {java_only} is a Java client key librdkafka does not know")
    return out


def _check_clients(
    bootstrap: str,
    admin: dict[str, str],
    producer: dict[str, str],
    timeout: float,
    admin_file: str | None,
    producer_file: str | None,
) -> None:
    """The replay's clients that write made with their settings and heard from before anything is written
    (:func:`logdoctor.replay.check_clients`): a setting the client library refuses is a usage error (64)
    naming the files it came from, a target that does not answer a client exits 69."""
    from logdoctor.replay import ClientSettingsError, TargetUnreachable, check_clients
    from logdoctor.replay.target import Target

    try:
        check_clients(Target(bootstrap, admin, timeout), producer)
    except ClientSettingsError as exc:
        files = [f"--admin-config {admin_file}"] if admin_file is not None else []
        if exc.client == "transactional producer" and producer_file is not None:
            files.append(f"--producer-config {producer_file}")
        usage_error(f"{' and '.join(files) or bootstrap}: {exc}")
    except TargetUnreachable as exc:
        fail(f"error: {bootstrap}: the target cluster cannot be reached with these settings: {exc}",
             EX_UNAVAILABLE)  # fmt: skip


_PLAN_LINE = "Plan only: nothing was written. Add --apply to replay."


def print_replay_plan(out: Lines, plan: ReplayPlan, ignored: set[str]) -> None:
    """The plan for people: topics to create or existing, each partition's records and names, conflicts."""
    from logdoctor.logdir.transactions import describe_without_marker

    out.line(
        f"Replay into {plan.bootstrap} (cluster {plan.cluster_id}): {plan.remaining_records:,} of "
        f"{plan.records:,} records of {len(plan.partitions)} partition(s) left to send",
        "bold",
    )
    if plan.topics:
        out.line("Topics:", "bold")
    for t in plan.topics:
        names = f"{t.source_topic} -> {t.target_topic}"
        if t.exists:
            out.line(f"  {names}: exists, {t.partitions} partition(s)")
            for partition, (first, high) in sorted(t.open_transactions.items()):
                held = f"{first}-{high - 1} of {t.target_topic}-{partition}"
                wrap(out, f"a transaction holds offsets {held}, open: --apply fences {t.source_topic}'s "
                     "earlier re-hashed producers first (a killed run's transaction is aborted) and refuses "
                     "another producer's", "      ", "yellow", first="    open: ")  # fmt: skip
        else:
            verb = "create" if t.create else "missing (not created)"
            rf = "the target's default replication factor"
            configs = (
                ", ".join(f"{k}={v}" for k, v in sorted(t.configs.items())) or "none"
                if t.configs is not None
                else "unknown: the target's defaults"
            )
            out.line(f"  {names}: {verb}, {t.partitions} partition(s), {rf}")
            wrap(out, f"configs ({t.configs_from}): {configs}", "      ", first="    ")
    if plan.partitions:
        out.line("Partitions:", "bold")
    for p in plan.partitions:
        offsets = f"offsets {p.first_offset}-{p.last_offset}" if p.first_offset is not None else "no records"
        into = (
            f"{p.target_topic} (keys over {p.target_partitions} partitions)"
            if p.rehashed
            else f"{p.target_topic}-{p.target_partition}"
        )
        size = human_bytes(p.bytes)
        line = f"  {p.name} -> {into}: {p.records:,} records, {size} ({offsets}){_codec(plan, p)}"
        if p.progress is not None:
            line += (
                f"; replayed up to source offset {p.progress.next_source_offset}: "
                f"{p.remaining_records:,} left" + (" (done)" if p.done else "")
            )
        out.line(line)
        notes = [("not read: ", problem) for problem in p.problems]
        if p.copies:
            wrap(
                out,
                f"{p.log_dir}'s, the reference of the copies in {', '.join(p.copies)} (the newest leader "
                "epoch, then the longest log)",
                "      ",
                first="    copy: ",
            )
        if p.pending:
            notes.insert(0, ("pending: ", "a transaction of an earlier, killed run still holds this "
                             "partition's progress: --apply ends it first (aborted, unless its commit had "
                             "begun) and goes on from what is committed"))  # fmt: skip
        if p.target_open_from is not None and p.target_offsets is not None:
            notes.insert(0, ("open: ", f"a transaction holds offsets {p.target_open_from}-"
                             f"{p.target_offsets[1] - 1} of {p.target_topic}-{p.target_partition}, open: "
                             "--apply fences this partition's earlier producer first (a killed run's "
                             "transaction is aborted) and refuses another producer's"))  # fmt: skip
        notes += [("", describe_without_marker(t)) for t in p.without_marker]
        if p.held_back:
            notes.append(("held back: ", f"{p.held_back:,} record(s) at or above the last stable offset held "
                          "back by the open transaction(s): not replayed"))  # fmt: skip
        if p.cut_end is not None:
            notes.append(("cut: ", f"--cut-at ends at offset {p.cut_end} (groups past it resume there), "
                          f"{p.cut_left_out:,} record(s) left out by it"))  # fmt: skip
        for label, text in notes:
            wrap(out, text, "      ", "yellow", first=f"    {label}")
    for line in plan.not_read:
        wrap(out, line, "    ", "yellow", first="not read: ")
    if plan.left_out:
        wrap(out, ", ".join(plan.left_out), "    ", "dim", first="left out: ")
    if plan.groups is not None:
        print_groups(out, plan.groups)
    conflicts = plan.all_conflicts()
    if conflicts:
        out.line(f"Conflicts ({len(conflicts)}):", "bold")
        for c in conflicts:
            style = "dim" if c.code in ignored else "red"
            note = " (ignored: --ignore-conflict)" if c.code in ignored else ""
            wrap(out, f"{c.code}{note}: {c.message}", "      ", style, first="  ")
    else:
        out.line("No conflict.")


def _codec(plan: ReplayPlan, p: Any) -> str:
    """The codec of the partition's producer, and whose it is (``--compression``)."""
    if plan.compression == "source":
        whose = "" if p.source_compression is None else f", {p.compression} batches (the source's codec)"
    else:
        source = p.source_compression
        other = "" if source in (None, p.compression) else f"; the source's {source}"
        whose = f", {p.compression} batches (--compression{other})"
    if p.recompressed_as is not None:
        whose += f", recompressed {p.recompressed_as} by the broker ({p.target_topic}'s compression.type)"
    return whose


def print_groups(out: Lines, groups: list[Any], verb: str = "") -> None:
    """Each consumer group carried over: its state on the target, each partition's before (the source's
    committed offset) and after (the target offset, or after the replay), and what becomes of it."""
    out.line(f"Consumer groups{verb} ({len(groups)}):" if groups else "Consumer groups: none to carry over",
             "bold")  # fmt: skip
    for g in groups:
        members = f", {len(g.members)} member(s)" if g.members else ""
        state = "no such group" if g.target_state in ("DEAD", "ABSENT") else g.target_state.lower()
        out.line(f"  {g.group} (on the target: {state}{members})")
        for p in g.partitions:
            after = p.target_offset if p.target_offset is not None else "after the replay"
            note = _group_note(p, g.overwrite and not verb)
            out.line(
                f"    {p.source_topic}-{p.source_partition} -> {p.target_topic}-{p.target_partition}: "
                f"{p.source_offset} -> {after} ({note})"
                + (f" (committed at {p.cut_from}, past the cut: clamped)" if p.cut_from is not None else "")
            )
        if g.not_replayed:
            wrap(out, ", ".join(g.not_replayed), "      ", "dim", first="    not replayed: ")


def _group_note(p: Any, overwrite: bool) -> str:
    """What becomes of one partition of a group (its status), for people."""
    if p.status == "committed on the target":
        if overwrite:  # the plan's: --apply moves it
            return f"to move from {p.target_committed} (--groups-overwrite)"
        miss = (
            f"its consumers skip {p.skipped} replayed record(s)"
            if p.skipped is not None
            else f"its consumers read {p.read_again} replayed record(s) again"
        )
        return f"not committed: the target group is at {p.target_committed}, no replay committed it: {miss}"
    if p.status == "kept":
        since = (
            " (moved on since the replay committed it)" if p.carried is not None else ", the same record next"
        )
        return f"kept: the target group is at {p.target_committed}{since}"
    return {
        "commit": "to commit",
        "after the replay": "committed once the partition is replayed",
        "committed": "committed",
        "active": "not committed: the group has active members",
    }.get(p.status, p.status)


#: the formats of ``--offset-map``: ``export``'s writers that need no catalog
OFFSET_MAP_FORMATS = ("parquet", "delta")
#: the one file of a Parquet offset map in its folder
OFFSET_MAP_FILE = "offset-map.parquet"


#: the files of a Parquet folder Spark's writer leaves (``--master``): part files, its marker, their checksums
_SPARK_PARQUET = re.compile(r"\.?(part-.*\.parquet|_SUCCESS)(\.crc)?")


def _offset_map_location(location: str, fmt: str, spark: bool = False) -> str:
    """``--offset-map`` as an absolute location; a local folder that holds something other than an offset
    map of ``fmt`` (a Delta table; the Parquet map's one file, or with ``spark`` (``--master``) that or
    the files of Spark's Parquet writer) is refused (73): the replay writes its map there, never over other
    files."""
    from logdoctor.logdir.outputs import absolute_location

    where = absolute_location(location)
    if "://" not in where and os.path.isdir(where) and os.listdir(where):
        if fmt == "delta":
            ours = os.path.isdir(os.path.join(where, "_delta_log"))
        else:
            names = set(os.listdir(where)) - {OFFSET_MAP_FILE}
            ours = not names or (spark and all(_SPARK_PARQUET.fullmatch(n) for n in names))
        if not ours:
            what = "a Delta table" if fmt == "delta" else f"a Parquet offset map (only {OFFSET_MAP_FILE})"
            fail(
                f"refused: --offset-map {where} exists and is not {what}: choose another folder "
                "(nothing was written)",
                EX_CANTCREAT,
            )
    elif "://" not in where and os.path.exists(where) and not os.path.isdir(where):
        fail(f"refused: --offset-map {where} is a file (nothing was written)", EX_CANTCREAT)
    return where


def write_offset_map(plan: ReplayPlan, location: str, timeout: float, fmt: str = "parquet") -> dict[str, Any]:
    """The whole offset map of the replay (every record replayed so far, by this run and earlier ones),
    read back from the target and checked against the source (:func:`logdoctor.replay.offset_map`),
    written at ``location`` (a folder or URI) as ``export`` writes its tables: ``parquet``, one file
    ``offset-map.parquet`` written by pyarrow through the table writer's file system
    (:func:`logdoctor.spark.tables.files.filesystem`, snappy, its row groups) under a temporary name and
    moved in place; ``delta``, a Delta table by deltalake in one commit. Either replaces the map before
    (it is the map of the replay as it is now). Memory: one chunk of rows."""
    import pyarrow as pa

    from logdoctor.replay import offset_map, offset_map_schema

    rows = cleaned = 0

    def counted() -> Iterator[pa.RecordBatch]:
        nonlocal rows, cleaned
        for batch in offset_map(plan, timeout=timeout):
            rows += batch.num_rows
            cleaned += batch.column("target_offset").null_count
            yield batch

    if fmt == "delta":
        from deltalake import DeltaTable, write_deltalake

        from logdoctor.spark.tables.delta import storage_options

        reader = pa.RecordBatchReader.from_batches(offset_map_schema(), counted())
        opts = storage_options(location) or None
        write_deltalake(location, reader, mode="overwrite", storage_options=opts)
        version = DeltaTable(location, storage_options=opts).version()
        return {"location": location, "format": "delta", "rows": rows, "cleaned": cleaned, "version": version}
    import uuid

    import pyarrow.parquet as pq

    from logdoctor.spark.tables.files import ROW_GROUP_ROWS, filesystem, join_uri

    fs, root = filesystem(location)
    fs.create_dir(root, recursive=True)
    tmp = f"{root}/.{OFFSET_MAP_FILE}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        with (
            fs.open_output_stream(tmp) as sink,
            pq.ParquetWriter(sink, offset_map_schema(), compression="snappy") as writer,
        ):
            for batch in counted():
                writer.write_batch(batch, row_group_size=ROW_GROUP_ROWS)
        fs.move(tmp, f"{root}/{OFFSET_MAP_FILE}")
    except BaseException:
        with contextlib.suppress(OSError):
            fs.delete_file(tmp)
        raise
    return {
        "location": join_uri(location, OFFSET_MAP_FILE),
        "format": "parquet",
        "rows": rows,
        "cleaned": cleaned,
    }


def _on_transaction(plan: ReplayPlan, update: Callable[[int, int], None] | None) -> Any:
    if update is None:
        return None
    base = {p.name: p.records - p.remaining_records for p in plan.partitions}
    done: dict[str, int] = {}
    total = plan.remaining_records

    def on_transaction(pp: Any, prog: Any) -> None:
        done[pp.name] = prog.records - base.get(pp.name, 0)
        update(sum(done.values()), total)

    return on_transaction


def print_result(out: Lines, result: ReplayResult, seconds: float, offsets: Mapping[str, Any] | None) -> None:
    out.line(
        f"Replayed {result.records:,} records of {len(result.partitions)} partition(s) in {seconds:.1f} s"
        + (f"; created {', '.join(result.created_topics)}" if result.created_topics else ""),
        "bold",
    )
    for p in result.partitions:
        resumed = f" (resumed from source offset {p.resumed_from})" if p.resumed_from is not None else ""
        total = "" if p.progress is None else f"; {p.progress.records:,} replayed in all"
        copy = "" if p.copy is None else f"; the copy in {p.copy}"
        out.line(
            f"  {p.name} -> {p.target}: {p.records:,} records, {p.transactions} transaction(s)"
            + resumed
            + total
            + copy
        )
    for problem in result.problems:
        wrap(out, problem, "    ", "yellow", first="not read: ")
    if result.groups is not None:
        print_groups(out, result.groups, " after the replay")
    if offsets is not None:
        where = (
            f"the Delta table {offsets['location']} (version {offsets['version']})"
            if offsets["format"] == "delta"
            else f"the Parquet folder {offsets['location']} (written by Spark)"
            if offsets.get("writer") == "spark"
            else f"the Parquet file {offsets['location']}"
        )
        out.line(
            f"Offset map: {offsets['rows']:,} rows (every record replayed, checked against the source) in "
            + where
        )
        if offsets.get("cleaned"):
            out.line(
                f"  {offsets['cleaned']:,} of them no longer on the target, its cleaner removed them (a "
                "later record has their key, or a tombstone): target_offset null"
            )


@app.command("replay")
@reads_records
def replay_command(
    ctx: typer.Context,
    read: RecordReadArgs,
    bootstrap_server: Annotated[
        str,
        typer.Option(
            "--bootstrap-server", metavar="HOST:PORT", help="The live (target) cluster: one or more brokers."
        ),
    ],
    apply: Annotated[
        bool,
        typer.Option("--apply", help="Replay (without it the plan is printed and nothing is written)."),
    ] = False,
    topic_map: Annotated[
        list[str] | None,
        typer.Option(
            "--topic-map",
            metavar="OLD=NEW",
            help="Replay topic OLD into NEW; repeat for several, the first that matches wins. OLD made only "
            "of topic-name characters is a name, anything else a regex matched whole (NEW may use its "
            "groups: \\1, \\2...). Other topics keep their names.",
        ),
    ] = None,
    offset_map_dir: Annotated[
        str | None,
        typer.Option(
            "--offset-map",
            metavar="DIR",
            help="With --apply: write the offset map (source topic, partition, offset -> target topic, "
            "partition, offset) of every record replayed so far, read back from the target and checked, "
            "at DIR (a folder or URI) in --offset-map-format; it replaces the map written before.",
        ),
    ] = None,
    offset_map_format: Annotated[
        str,
        typer.Option(
            "--offset-map-format",
            metavar="FORMAT",
            help="parquet (default: one file DIR/offset-map.parquet, moved in place whole; with --master, "
            "Spark's Parquet writer's files in DIR) or delta (a Delta table, one commit), written as export "
            "writes them.",
        ),
    ] = "parquet",
    producer_config: Annotated[
        str | None,
        typer.Option(
            "--producer-config",
            metavar="FILE",
            help="Kafka client properties for the producers (after --admin-config's). Keys go to "
            "librdkafka as they are; of the Java client's: sasl.jaas.config (PLAIN, SCRAM) is mapped to "
            "sasl.username/sasl.password, ssl.truststore.location of type PEM to ssl.ca.location, "
            "ssl.keystore.type=PKCS12 dropped; any other (JKS stores) is refused, named. "
            "transactional.id, enable.idempotence and acks are the replay's own.",
        ),
    ] = None,
    admin_config: Annotated[
        str | None,
        typer.Option(
            "--admin-config",
            metavar="FILE",
            help="Kafka client properties (security.protocol, sasl.mechanism, ssl.*...) for every client "
            "of the target: admin, consumers and producers. Mapped as --producer-config.",
        ),
    ] = None,
    ignore_conflict: Annotated[
        list[str] | None,
        typer.Option(
            "--ignore-conflict",
            metavar="CODE",
            help="Replay despite the plan's conflicts of CODE (e.g. NO_TIMESTAMP, RETENTION_DELETES); "
            "repeat for several (docs/replay.md lists them).",
        ),
    ] = None,
    groups_overwrite: Annotated[
        bool,
        typer.Option(
            "--groups-overwrite",
            help="With --groups: a group's offset on the target that no replay committed (its consumers "
            "ran there, or it was set by hand) is moved to the translated offset, where the plan shows it "
            "(without it: the conflict GROUP_COMMITTED_ON_TARGET).",
        ),
    ] = False,
    groups: Annotated[
        str | None,
        typer.Option(
            "--groups",
            metavar="REGEX",
            help="Carry over the source's consumer groups whose id REGEX matches whole (--all-groups: every "
            "group): each group's last committed offset (from the log dirs' __consumer_offsets) on a "
            "replayed partition, translated to the target offset of the next replayed record, is committed "
            "on the target after that partition's records, while the group has no active member there.",
        ),
    ] = None,
    all_groups: Annotated[
        bool, typer.Option("--all-groups", help="Carry over every consumer group: --groups '.*'.")
    ] = False,
    partitioner: Annotated[
        str,
        typer.Option(
            "--partitioner",
            metavar="NAME",
            help="same (default): each record to its source partition's number. default: the key "
            "re-hashed as the Java producer's default partitioner does (murmur2, over the target topic's "
            "partitions; a null key keeps its source partition modulo their count); not with --groups.",
        ),
    ] = "same",
    compression: Annotated[
        str,
        typer.Option(
            "--compression",
            metavar="CODEC",
            help="The codec of the batches the replay writes: source (default: each source partition's, the "
            "codec of its source batches, of most of its records' bytes if they mix codecs), none, gzip, "
            "snappy, lz4 or zstd. The records' bytes are the same either way; the plan names each "
            "partition's.",
        ),
    ] = "source",
    no_create: Annotated[
        bool, typer.Option("--no-create", help="Never create a topic: a missing one is a conflict.")
    ] = False,
    max_rate: Annotated[
        float | None,
        typer.Option(
            "--max-rate",
            metavar="RECORDS_PER_S",
            help="With --apply: send at most this many records per second, over the whole replay (one token "
            "bucket for all partitions: bursts of at most a tenth of a second's records; each transaction at "
            "most ten seconds of its partition's share). Default: as fast as the target takes them.",
        ),
    ] = None,
    parallelism: Annotated[
        int | None,
        typer.Option(
            "--parallelism",
            metavar="N",
            help="With --apply: replay at most N source partitions at once (threads of this process, each "
            "partition with its own transactional producer; every lease taken first). 1: one after the "
            "other. Default: the number of partitions, at most 4.",
        ),
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", metavar="SECONDS", help="Each request to the target.")
    ] = 60.0,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the plan (and the result) as JSON.")
    ] = False,
) -> None:
    """Replay log dirs' records into a live cluster, exactly once and resumable (plan unless --apply)."""
    from logdoctor.cli.input_checks import refuse_overlapping_outputs
    from logdoctor.logdir.discovery import split_paths

    if read.view.strip().lower() != "history":
        usage_error(f"--view {read.view}: a replay sends the records as they are (--view history)")
    if read.include_control:
        usage_error("--include-control: control records are never replayed (the target's transactions "
                    "write their own)")  # fmt: skip
    if read.remote is not None:
        usage_error("--remote: a replay runs its partitions as Spark tasks of a SparkContext, which Spark "
                    "Connect has not: give the cluster's --master")  # fmt: skip
    if read.conf and read.master is None:
        usage_error("--conf goes with --master (without it a replay starts no Spark)")
    if max_rate is not None and read.master is not None:
        usage_error("--max-rate is a bucket over the whole replay in one process: not with --master")
    if parallelism is not None and read.master is not None:
        usage_error("--parallelism is this process's: with --master each partition is a Spark task")
    if parallelism is not None and parallelism < 1:
        usage_error(f"--parallelism {parallelism}: at least 1")
    if offset_map_dir is not None and not apply:
        usage_error("--offset-map is written by --apply (the plan writes nothing)")
    map_format = offset_map_format.strip().lower()
    if map_format not in OFFSET_MAP_FORMATS:
        usage_error(f"--offset-map-format {offset_map_format}: one of {', '.join(OFFSET_MAP_FORMATS)}")
    if timeout <= 0:
        usage_error(f"--timeout {timeout}: must be more than 0")
    if max_rate is not None and not max_rate > 0:
        usage_error(f"--max-rate {max_rate}: must be more than 0 records per second")
    from logdoctor.replay.partitioner import DEFAULT, PARTITIONERS
    from logdoctor.replay.plan import COMPRESSIONS

    chosen_partitioner = partitioner.strip().lower()
    if chosen_partitioner not in PARTITIONERS:
        usage_error(f"--partitioner {partitioner}: one of {', '.join(PARTITIONERS)}")
    codec = compression.strip().lower()
    if codec not in COMPRESSIONS:
        usage_error(f"--compression {compression}: one of {', '.join(COMPRESSIONS)}")
    if groups is not None and all_groups:
        usage_error("--groups and --all-groups: give one")
    if groups is not None and any(groups in (*p.opts, *p.secondary_opts) for p in ctx.command.params):
        # ``--groups --apply``: the parser gave --groups the value "--apply"
        usage_error(f"--groups {groups}: {groups} is an option, not a regex: --groups REGEX, or --all-groups")
    groups = ".*" if all_groups else groups
    if groups_overwrite and groups is None:
        usage_error("--groups-overwrite goes with --groups")
    if groups is not None and chosen_partitioner == DEFAULT:
        from logdoctor.replay.groups import REHASHED_GROUPS

        usage_error(f"--groups with --partitioner default: {REHASHED_GROUPS}")
    if groups is not None:
        try:
            re.compile(groups)
        except re.error as exc:
            usage_error(f"--groups {groups!r}: not a valid regex: {exc}")
    try:
        from logdoctor.replay import TopicMap

        mapping = TopicMap(topic_map or [])
    except ValueError as exc:
        usage_error(f"--topic-map: {exc}")
    admin = client_config(admin_config, "--admin-config") if admin_config is not None else {}
    producer = client_config(producer_config, "--producer-config") if producer_config is not None else {}
    own = [k for k in OWN_PRODUCER_KEYS if k in producer or k in admin]
    if own:
        usage_error(f"{', '.join(own)}: the replay sets it (--bootstrap-server; one transactional producer "
                    "per target partition)")  # fmt: skip
    codec_keys = [k for k in CODEC_KEYS if k in producer or k in admin]
    if codec_keys:
        usage_error(f"{', '.join(codec_keys)}: the replay sets it: --compression CODEC (default source: each "
                    "partition's source codec)")  # fmt: skip
    records = plan_records(read, verb="replayed")  # 64 / 66 / 77 as export
    # librdkafka's own log lines (each failed connection, again and again) off: the one line is ours
    if not {"log_level", "debug"} & {*admin, *producer}:
        admin = {"log_level": "2", **admin}
    _check_clients(bootstrap_server, admin, producer, timeout, admin_config, producer_config)
    location = None
    if offset_map_dir is not None:
        location = _offset_map_location(offset_map_dir, map_format, spark=read.master is not None)
        if "://" not in location:
            refuse_overlapping_outputs(
                [location], [*split_paths(records.paths), *sorted({r.log_dir for r in records.plan.found})]
            )
    ignored = {c.strip().upper() for c in ignore_conflict or () if c.strip()}
    out = lines_for()
    try:
        _run(
            out, records, bootstrap_server, mapping, admin, producer, ignored, not no_create, timeout, apply,
            json_out, location, groups, max_rate, map_format, chosen_partitioner, read.master,
            dict(records.confs), groups_overwrite, parallelism, codec,
        )  # fmt: skip
    except KeyboardInterrupt:
        fail(
            "interrupted: logdoctor replay stopped; every transaction it committed stays on the target, the "
            "one under way is aborted: run it again to resume",
            ExitCode.INTERRUPTED,
        )


def _run(
    out: Lines,
    records: Any,
    bootstrap: str,
    mapping: Any,
    admin: dict[str, str],
    producer: dict[str, str],
    ignored: set[str],
    create: bool,
    timeout: float,
    apply: bool,
    json_out: bool,
    location: str | None,
    groups: str | None = None,
    max_rate: float | None = None,
    map_format: str = "parquet",
    partitioner: str = "same",
    master: str | None = None,
    confs: Mapping[str, str] | None = None,
    groups_overwrite: bool = False,
    parallelism: int | None = None,
    compression: str = "source",
) -> None:
    from confluent_kafka import KafkaException

    from logdoctor.logdir.discovery import DiscoveryError
    from logdoctor.replay import (
        ReplayFailed,
        ReplayMismatch,
        ReplayRefused,
        TargetUnreachable,
        apply_replay,
        plan_groups,
        plan_replay,
    )

    try:
        plan = plan_replay(
            records.paths, bootstrap, opts=records.options, topic_map=mapping, admin_config=admin,
            create=create, timeout=timeout, partitioner=partitioner, compression=compression,
        )  # fmt: skip
        if groups is not None:
            from logdoctor.replay.target import Target

            plan_groups(plan, groups, Target(bootstrap, admin, timeout), overwrite=groups_overwrite)
    except DiscoveryError as exc:
        usage_error(str(exc))
    except (KafkaException, TimeoutError, TargetUnreachable) as exc:
        fail(f"error: {bootstrap}: the target cluster cannot be reached or refused: {exc}", EX_UNAVAILABLE)
    blocking = [c for c in plan.all_conflicts() if c.code not in ignored]
    left_out = _not_replayed(plan)
    if not apply or blocking:
        if json_out:
            print_json(
                {"plan": plan.to_json(), "ignored": sorted(ignored), "applied": False,
                 "ranges_not_replayed": len(left_out)}
            )  # fmt: skip
        else:
            print_replay_plan(out, plan, ignored)
            if blocking:
                out.line(
                    f"Refused: {len(blocking)} conflict(s): nothing was written (resolve them, or "
                    "--ignore-conflict CODE those to accept)",
                    "red",
                )
            else:
                out.line(_PLAN_LINE)
        raise typer.Exit(EX_REFUSED if blocking else _done(records, left_out))
    if not json_out:
        print_replay_plan(out, plan, ignored)
    started = time.monotonic()
    offsets = None
    spark = None
    if master is not None:  # started as ``export`` starts it, before anything is written
        from logdoctor.cli.output import text_console
        from logdoctor.cli.spark_options import start_spark

        err = None if json_out else text_console(stderr=True)
        spark = start_spark(err, master, "logdoctor replay", conf=dict(confs or {}), sql=False)
    try:
        if spark is not None:
            from logdoctor.spark.replay_job import spark_runner, write_offset_map_table

            result = apply_replay(
                plan, producer_config=producer, ignore=ignored, timeout=timeout, offset_rows=False,
                runner=spark_runner(spark),
            )  # fmt: skip
            if location is not None:
                from logdoctor.spark.tables import TableError

                try:
                    offsets = write_offset_map_table(spark, plan, location, timeout, map_format)
                except TableError as exc:
                    fail(f"failed: --offset-map {location}: {exc} (the records are replayed)", EX_FAILED)
        else:
            from logdoctor.cli.progress import progress_bar

            # a bar over the records to send (stderr on a terminal), moved by each transaction
            with progress_bar(not json_out and plan.remaining_records > 0, "replay") as update:
                result = apply_replay(
                    plan, producer_config=producer, ignore=ignored, timeout=timeout,
                    offset_rows=False, on_transaction=_on_transaction(plan, update),
                    max_rate=max_rate, parallelism=parallelism,
                )  # fmt: skip
            if location is not None:
                offsets = write_offset_map(plan, location, timeout, map_format)
    except ReplayRefused as exc:
        refused(str(exc), EX_REFUSED)
    except (ReplayFailed, ReplayMismatch) as exc:
        fail(f"failed: {exc} (what was committed stays; run the replay again to resume)", EX_FAILED)
    except (KafkaException, TimeoutError, TargetUnreachable) as exc:
        fail(f"error: {bootstrap}: the target cluster cannot be reached or refused: {exc}", EX_UNAVAILABLE)
    seconds = time.monotonic() - started
    left_out = _not_replayed(plan, result)
    if json_out:
        print_json(
            {
                "plan": plan.to_json(),
                "ignored": sorted(ignored),
                "applied": True,
                "result": result.to_json(),
                "seconds": round(seconds, 3),
                "offset_map": offsets,
                "ranges_not_replayed": len(left_out),
            }
        )
    else:
        print_result(out, result, seconds, offsets)
    active = sorted({g.group for g in result.groups or () for p in g.partitions if p.status == "active"})
    if active:
        fail(
            f"refused: consumer group(s) {', '.join(active)} not committed: active members on the target "
            "(the records are replayed; stop their consumers and run the replay again to commit them)",
            EX_REFUSED,
        )
    other = sorted(
        {g.group for g in result.groups or () for p in g.partitions if p.status == "committed on the target"}
    )
    if other and "GROUP_COMMITTED_ON_TARGET" not in ignored:
        fail(
            f"refused: consumer group(s) {', '.join(other)} not committed: offsets on the target that no "
            "replay committed, where their consumers skip replayed records or read some again (the records "
            "are replayed; run the replay again to see them in its plan, and add --groups-overwrite to move "
            "them)",
            EX_REFUSED,
        )
    raise typer.Exit(_done(records, left_out))


def _not_replayed(plan: ReplayPlan, result: ReplayResult | None = None) -> list[str]:
    """The source's ranges a replay leaves out, one line each: what the read plan does not read once and
    what each partition's read skipped (a torn tail, a CRC-bad batch, records that do not decode), as
    the plan found them, and what the run met besides."""
    lines = [*plan.not_read, *(line for p in plan.partitions for line in p.problems)]
    return lines + [line for line in (result.problems if result is not None else ()) if line not in lines]


def _done(records: Any, left_out: list[str]) -> int:
    """The exit code of a plan or replay carried out: 77 when an input could not be read, 1 when records
    were left out (as ``export``'s skipped ranges: docs/exit-codes.md), else 0."""
    return EX_NOPERM if records.denied else EX_WARNINGS if left_out else EX_OK
