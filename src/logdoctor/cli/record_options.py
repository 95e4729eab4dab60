"""The options of the commands that read records (``export``; ``replay`` next, issue 72), declared once.

What is read (the inputs, ``--topics``, the offset and timestamp ranges, ``--include-control``,
``--isolation-level``, ``--upto``, ``--view``, ``--include-internal``, the split size, the remote tier),
with which Spark (``--master``, ``--conf``, ``--remote``) and how gently (``--keep-cache``,
``--max-read-rate``): the fields of :class:`RecordReadArgs`, each with its typer declaration (names,
help, metavar, default) in the field's metadata. What a command writes (``export``'s ``--out``,
``--format``, ``--typed``, ``--decoder``...) stays the command's own.

A command takes them all as ONE parameter annotated :class:`RecordReadArgs`::

    @app.command("replay")
    @reads_records
    def replay_command(
        read: RecordReadArgs,
        bootstrap_server: Annotated[str, typer.Option("--bootstrap-server", metavar="HOST:PORT")],
    ) -> None:
        records = plan_records(read, verb="replayed")  # usage errors 64, missing input 66, ... as export
        spark = get_spark(read.master, "logdoctor replay", conf=records.confs, remote=read.remote)
        ...  # records.options (ReadOptions), records.plan (ReadPlan), records.paths

Typer has no option group taken as one parameter: :func:`reads_records` gives typer a signature
(``__signature__``) in which the fields of :class:`RecordReadArgs` stand in place of that parameter, and
packs what typer parsed into the object before the command runs. ``tests/cli/test_record_options.py``
checks that a command declared so has exactly ``export``'s read options, so the two cannot drift.

:func:`plan_records` turns the object into what every layer below takes: the one
:class:`~logdoctor.logdir.read_options.ReadOptions` (:func:`record_read_options`, validated once, with the
data sources' words), the read plan, and the Spark confs, with the exits ``export`` always had: 64 for a
bad value, 66 for a missing input, 77 for an input named directly that this user cannot read.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, overload

import typer

from logdoctor.cli.read_options import KeepCacheOption, MaxReadRateOption
from logdoctor.cli.remote_options import RemoteLayoutOption, RemotePrivateKeyOption
from logdoctor.cli.spark_options import ConfOption, RemoteOption

if TYPE_CHECKING:
    from rich.console import Console

    from logdoctor.logdir.read_options import ReadOptions
    from logdoctor.logdir.read_plan import ReadPlan
    from logdoctor.logdir.remote_attach import ListingProblem

__all__ = [
    "RECORD_READ_OPTIONS",
    "RecordRead",
    "RecordReadArgs",
    "plan_records",
    "reads_records",
    "record_read_options",
    "remote_tier_not_read",
]

_CLI = "logdoctor.cli"  # the field metadata key holding the field's typer declaration


def _cli(declared: Any, default: Any = MISSING) -> Any:
    """A field of :class:`RecordReadArgs` declared on the command line by ``declared`` (an ``Annotated``
    type with its ``typer.Option`` or ``typer.Argument``); ``default`` is the command line's too."""
    return field(default=default, metadata={_CLI: declared})


@dataclass(frozen=True, slots=True)
class RecordReadArgs:
    """The record-reading options as given on the command line (strings as typed: :func:`plan_records`
    validates them). The field order is the order of the options in ``--help``."""

    paths: tuple[str, ...] = _cli(
        Annotated[
            list[str],
            typer.Argument(
                help="Log dirs, partition folders or .log files (globs allowed): local paths or URIs "
                "(s3://, gs://, hdfs://, abfs://; credentials from the environment, e.g. AWS_*)."
            ),
        ]
    )
    master: str | None = _cli(
        Annotated[str | None, typer.Option("--master", help="Spark master (default local[*]).")], None
    )
    conf: tuple[str, ...] | None = _cli(ConfOption, None)
    remote: str | None = _cli(RemoteOption, None)
    topics: str | None = _cli(
        Annotated[str | None, typer.Option("--topics", help="Comma list or regex of topics.")], None
    )
    starting_offsets: str | None = _cli(
        Annotated[str | None, typer.Option("--starting-offsets", help="Number or Spark-Kafka JSON.")], None
    )
    ending_offsets: str | None = _cli(
        Annotated[str | None, typer.Option("--ending-offsets", help="Number or JSON (exclusive).")], None
    )
    starting_timestamp: int | None = _cli(
        Annotated[int | None, typer.Option("--starting-timestamp", help="Epoch ms.")], None
    )
    ending_timestamp: int | None = _cli(
        Annotated[int | None, typer.Option("--ending-timestamp", help="Epoch ms (exclusive).")], None
    )
    include_control: bool = _cli(
        Annotated[bool, typer.Option("--include-control", help="Keep control records.")], False
    )
    isolation_level: str = _cli(
        Annotated[
            str,
            typer.Option(
                "--isolation-level",
                help="read_committed (default: what Kafka's read_committed consumers, Kafka Streams and "
                "every exactly-once pipeline read: no record of an aborted transaction, nothing at or above "
                "the last stable offset) or read_uncommitted (every data record). Every row says its "
                "transaction's outcome in transaction_result (docs/transactions.md).",
            ),
        ],
        "read_committed",
    )
    upto: str = _cli(
        Annotated[
            str,
            typer.Option(
                "--upto",
                help="log-end (default: a dead broker's high watermark checkpoint lags its log) or "
                "high-watermark (leave out what a consumer could not yet fetch: the records at or above the "
                "replica's checkpointed high watermark).",
            ),
        ],
        "log-end",
    )
    open_transactions: str = _cli(
        Annotated[
            str,
            typer.Option(
                "--open-transactions",
                help="What becomes of a transaction left without a marker that no __transaction_state among "
                "the inputs ends (the coordinator's own state decides first: PrepareCommit commits, "
                "PrepareAbort and Ongoing abort, as the restarted cluster does): hold (default: as that "
                "cluster, read_committed stops at its first offset) or abort (as after kafka-transactions.sh "
                "abort: the records after it are read). docs/transactions.md",
            ),
        ],
        "hold",
    )
    cut_at: int | None = _cli(
        Annotated[
            int | None,
            typer.Option(
                "--cut-at",
                metavar="EPOCH_MS",
                help="A transaction-consistent cut at this moment (inclusive): every partition's records up "
                "to it, a transaction in every partition or in none, by when it committed (its earliest "
                "marker); a non-transactional batch by its max timestamp. Each partition's cut end offset "
                "is in the summary. docs/transactions.md",
            ),
        ],
        None,
    )
    view: str = _cli(
        Annotated[
            str,
            typer.Option(
                "--view",
                help="history (default: every record), latest (a compacted topic as a table: the latest "
                "record of each key per partition, keys whose latest record is a tombstone left out; "
                "docs/compacted-topics.md) or cdc (each Debezium topic folded into the table it describes, "
                "at OUT/TOPIC; docs/cdc.md).",
            ),
        ],
        "history",
    )
    include_internal: bool = _cli(
        Annotated[
            bool,
            typer.Option(
                "--include-internal",
                help="Export internal topics too (names starting with __: __consumer_offsets, "
                "__transaction_state, __remote_log_metadata...), left out unless --topics names them.",
            ),
        ],
        False,
    )
    max_partition_bytes: str | None = _cli(
        Annotated[str | None, typer.Option("--max-partition-bytes", help="Split size, e.g. 128m.")], None
    )
    remote_storage: str | None = _cli(
        Annotated[
            str | None,
            typer.Option(
                "--remote-storage",
                metavar="URI",
                help="The remote tier of tiered partitions (folder, s3://, gs://, hdfs://...): their remote "
                "segments are exported first, then the local ones, every offset once.",
            ),
        ],
        None,
    )
    remote_layout: str | None = _cli(RemoteLayoutOption, None)
    remote_private_key: str | None = _cli(RemotePrivateKeyOption, None)
    keep_cache: bool = _cli(KeepCacheOption, False)
    max_read_rate: str | None = _cli(MaxReadRateOption, None)


#: the names of :class:`RecordReadArgs`'s fields, in ``--help`` order
RECORD_READ_OPTIONS: tuple[str, ...] = tuple(f.name for f in fields(RecordReadArgs))

F = TypeVar("F", bound=Callable[..., Any])


@overload
def reads_records(func: F, /) -> F: ...
@overload
def reads_records(*, help_order: Sequence[str] | None = None) -> Callable[[F], F]: ...
def reads_records(func: Any = None, /, *, help_order: Sequence[str] | None = None) -> Any:
    """A command function that takes the record-reading options as one parameter annotated
    :class:`RecordReadArgs`, made into one typer sees with each of them (put under ``@app.command``).

    The options stand where that parameter stands, in :class:`RecordReadArgs`'s order; ``help_order``
    (every parameter name, the command's own and the read options', each once) places them among the
    command's own instead (``export`` keeps the order its ``--help`` always had)."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        hints = typing.get_type_hints(command, include_extras=True)
        own = inspect.signature(command).parameters
        slots = [name for name in own if hints.get(name) is RecordReadArgs]
        if len(slots) != 1:
            raise TypeError(f"{command.__qualname__}: expected one parameter annotated RecordReadArgs")
        slot = slots[0]
        clash = set(RECORD_READ_OPTIONS) & set(own)
        if clash:
            raise TypeError(f"{command.__qualname__}: {', '.join(sorted(clash))} are record read options")
        kw = inspect.Parameter.KEYWORD_ONLY  # any order of defaults; typer passes every value by name
        shared = [
            inspect.Parameter(
                f.name,
                kw,
                default=inspect.Parameter.empty if f.default is MISSING else f.default,
                annotation=f.metadata[_CLI],
            )
            for f in fields(RecordReadArgs)
        ]
        params: list[inspect.Parameter] = []
        for name, p in own.items():
            if name == slot:
                params.extend(shared)
            else:
                params.append(p.replace(kind=kw, annotation=hints.get(name, p.annotation)))
        if help_order is not None:
            by_name = {p.name: p for p in params}
            if len(help_order) != len(by_name) or set(help_order) != set(by_name):
                missing = sorted(set(by_name) - set(help_order))
                unknown = sorted(set(help_order) - set(by_name))
                raise TypeError(
                    f"{command.__qualname__}: help_order must name every parameter once "
                    f"(missing {missing}, unknown {unknown})"
                )
            params = [by_name[name] for name in help_order]

        @functools.wraps(command)
        def with_read_options(**given: Any) -> Any:
            read = RecordReadArgs(
                **{name: _frozen(given.pop(name)) for name in RECORD_READ_OPTIONS if name in given}
            )
            return command(**given, **{slot: read})

        returns = hints.get("return", inspect.Signature.empty)
        with_read_options.__signature__ = inspect.Signature(params, return_annotation=returns)  # type: ignore[attr-defined]
        with_read_options.__annotations__ = {p.name: p.annotation for p in params}
        if returns is not inspect.Signature.empty:
            with_read_options.__annotations__["return"] = returns
        return with_read_options

    return decorate if func is None else decorate(func)


def _frozen(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def record_read_options(
    args: RecordReadArgs, *, task_read_rate: int | None = None, extra: Mapping[str, object] | None = None
) -> ReadOptions:
    """The read options of ``args``: one :class:`~logdoctor.logdir.read_options.ReadOptions`, validated once.
    Each option is read as the data-source option of the same meaning (:meth:`ReadOptions.from_options`),
    so that a bad value is the same error, in the same words, from a command and from
    ``spark.read.format("kafka-log")``. ``task_read_rate``: each Spark task's bytes a second
    (``maxReadRate``); ``extra``: the command's own options that shape the read, by their data-source
    names (``export``: ``decoder``, ``typed``, ``schemas``). Raises ``PlanningError``."""
    from logdoctor.logdir.read_options import ReadOptions

    given: dict[str, object] = {
        "topics": args.topics,
        "startingOffsets": args.starting_offsets,
        "endingOffsets": args.ending_offsets,
        "startingTimestamp": args.starting_timestamp,
        "endingTimestamp": args.ending_timestamp,
        "includeControl": args.include_control,
        "kafka.isolation.level": args.isolation_level,
        "upTo": args.upto,
        "openTransactions": args.open_transactions,
        "cutAt": args.cut_at,
        "view": args.view,
        "includeInternal": args.include_internal,
        "maxPartitionBytes": args.max_partition_bytes,
        "remoteStorage": args.remote_storage,
        "remoteLayout": args.remote_layout,
        "remotePrivateKey": args.remote_private_key,
        "keepCache": args.keep_cache,
        "maxReadRate": task_read_rate,
    }
    overlap = {k.lower() for k in given} & {k.lower() for k in extra or {}}
    if overlap:
        raise TypeError(f"extra read options {sorted(overlap)} are record read options")
    return ReadOptions.from_options({**given, **(extra or {})})


@dataclass(frozen=True, slots=True)
class RecordRead:
    """What a record-reading command reads, checked and planned (:func:`plan_records`)."""

    args: RecordReadArgs
    #: what every layer below takes (the Spark job, the data sources: :meth:`ReadOptions.to_options`)
    options: ReadOptions
    #: the read plan: the partitions selected (``refs``), every one found (``found``), what is not read
    plan: ReadPlan
    #: the ``--conf`` pairs, for ``get_spark``
    confs: Mapping[str, str]
    #: the lines of :func:`remote_tier_not_read` (already printed as warnings)
    not_read: tuple[str, ...]
    #: the inputs this user cannot read (already printed as warnings; the command exits 77 at its end)
    denied: tuple[ListingProblem, ...]

    @property
    def paths(self) -> list[str]:
        """The inputs as given (what the Spark jobs take)."""
        return list(self.args.paths)


def plan_records(
    args: RecordReadArgs,
    *,
    extra: Mapping[str, object] | None = None,
    verb: str = "exported",
    err: Console | None = None,
) -> RecordRead:
    """``args`` checked and planned, before Spark starts: a bad ``--conf``, ``--max-read-rate`` or read option
    is a usage error (64, the data sources' words), a missing input 66, an input named directly that this
    user cannot read 77. Sets this process's read discipline (page cache, read rate). On ``err`` (stderr):
    a warning for each tiered partition whose remote tier is not read (``verb``: what the command does to
    records, in those lines) and each input this user cannot read (left out; the command exits 77 once done).
    ``extra``: as for :func:`record_read_options`."""
    from logdoctor.cli.error_lines import fail, usage_error
    from logdoctor.cli.exit_codes import EX_NOINPUT, EX_NOPERM
    from logdoctor.cli.input_checks import leave_out_own, require_inputs_exist
    from logdoctor.cli.output import text_console
    from logdoctor.cli.read_options import apply_read_discipline, task_read_rate
    from logdoctor.cli.remote_options import require_remote_inputs
    from logdoctor.cli.spark_options import parse_conf
    from logdoctor.logdir.discovery import InputNotFoundError, InputPermissionError, split_paths
    from logdoctor.logdir.slices import PlanningError, read_plan

    try:
        confs = parse_conf(args.conf)
    except ValueError as exc:
        usage_error(str(exc))
    rate = apply_read_discipline(
        args.keep_cache, args.max_read_rate
    )  # the driver's reads (indexes, listings)
    paths = list(args.paths)
    try:
        options = record_read_options(
            args, task_read_rate=task_read_rate(rate, args.master) if rate is not None else None, extra=extra
        )
        require_inputs_exist(split_paths(paths))  # a missing input exits 66, as for every command
        leave_out_own(split_paths(paths))  # logdoctor's own backups are no input: a note each (discover)
        require_remote_inputs(args.remote_storage, args.remote_private_key)
        plan = read_plan(paths, options)
    except InputNotFoundError as exc:  # a URI that names nothing: 66 too
        fail(f"error: {exc}", EX_NOINPUT)
    except InputPermissionError as exc:  # an input named directly that this user cannot read: 77
        fail(f"error: {exc}", EX_NOPERM)
    except PlanningError as exc:
        usage_error(str(exc))
    err = err if err is not None else text_console(stderr=True)
    not_read = remote_tier_not_read(list(plan.refs), options.topics, verb=verb)
    for line in not_read:
        err.print(f"warning: {line}", soft_wrap=True, markup=False)
    # what this user cannot read is named now and left out; the rest is read, and the exit is 77
    denied = tuple(p for p in plan.not_read if p.permission)
    for p in denied:
        err.print(f"warning: {p.error}", soft_wrap=True, markup=False)
    return RecordRead(args, options, plan, confs, tuple(not_read), denied)


def remote_tier_not_read(refs: list, topics: str | None = None, *, verb: str = "exported") -> list[str]:
    """Partitions whose ``log-start-offset-checkpoint`` entry is below their first local segment and whose
    remote tier is not being read: offsets [entry, first local segment) are in the remote tier of a tiered
    partition (KIP-405; docs/tiered-storage.md) and would be missing from the output without a word
    (issue 23). One line each, said before Spark starts. Only the partitions of the topics read
    (``topics``, the ``--topics`` value): another topic's remote tier is not missing from this read.
    ``verb``: what the command does with the records (``exported``, ``replayed``)."""
    from logdoctor.logdir.model import LogDir
    from logdoctor.logdir.slices import topic_matcher

    chosen = topic_matcher(topics)
    dirs: dict[str, LogDir] = {}
    out = []
    for ref in refs:
        if not chosen(ref.topic):
            continue
        segs = ref.segments
        if not segs or any(s.remote is not None for s in segs) or not ref.storage.is_local:
            continue
        d = dirs.setdefault(ref.log_dir, LogDir(ref.log_dir))
        try:
            entry = d.partition(ref.topic, ref.partition).log_start_offset_checkpoint
        except (OSError, KeyError, ValueError):
            continue
        first = segs[0].base_offset
        if entry is not None and entry < first:
            out.append(
                f"{ref.topic}-{ref.partition} ({ref.log_dir}): offsets {entry}-{first - 1} are below its "
                f"first local segment (its log start offset checkpoint says {entry}): the remote tier of a "
                f"tiered partition, not {verb}; give --remote-storage URI to read them"
            )
    return out
