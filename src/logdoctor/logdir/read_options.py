"""The options of a read, typed: :class:`ReadOptions`, made once at each edge and taken by every layer below.

A read is asked for in two ways: the ``kafka-log`` / ``kafka-log-segments`` data sources' options (strings,
names as in Spark's Kafka source, case-insensitive: :meth:`ReadOptions.from_options`) and the CLI's
parameters (``export``: it builds the object, and gives Spark :meth:`ReadOptions.to_options`). Below those
edges nothing parses a string: the read plan (:mod:`logdoctor.logdir.read_plan`), discovery
(:mod:`logdoctor.logdir.discovery`: the file systems' options), the remote tier
(:class:`~logdoctor.logdir.remote_store.RemoteOptions`, a member) and Spark's planning and readers take what
they need by name.

A bad value is one :class:`~logdoctor.logdir.read_errors.DiscoveryError` (the data sources' ``PlanningError``)
naming the option and the value, whichever edge it came from.

Invariant: ``ReadOptions.from_options(x.to_options()) == x`` (:meth:`to_options` gives only what differs
from the defaults).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from logdoctor.logdir.coordinator import HOLD, OPEN_TRANSACTION_POLICIES
from logdoctor.logdir.read_errors import DiscoveryError
from logdoctor.logdir.read_rate import parse_size
from logdoctor.logdir.remote_store import RemoteOptions, RemoteTierError
from logdoctor.logdir.storage import storage_options
from logdoctor.logdir.transactions import ISOLATION_LEVELS, READ_COMMITTED, UPTO

__all__ = [
    "DECODERS",
    "DEFAULT_MAX_PARTITION_BYTES",
    "EARLIEST",
    "LATEST",
    "TYPED_PLAN_OPTION",
    "VIEWS",
    "PerPartition",
    "ReadOptions",
    "names_internal",
    "parse_per_partition",
    "topic_matcher",
]

EARLIEST = -2
LATEST = -1
DEFAULT_MAX_PARTITION_BYTES = 128 * 1024 * 1024
DECODERS = ("none", "auto", "consumer-offsets", "transactions", "cluster-metadata")
VIEWS = ("history", "latest", "cdc")
_OFFSET_NAMES = {"earliest": EARLIEST, "latest": LATEST}

#: the option carrying an export's typed first pass to the data source (logdoctor.spark.typed_frame)
TYPED_PLAN_OPTION = "logdoctor.typedPlan"

#: Kafka's internal topics and every other ``__`` topic (MirrorMaker 2's default exclude ``__.*``)
INTERNAL_TOPIC_PREFIX = "__"


def _default_min_partitions() -> int:
    return 2 * (os.cpu_count() or 1)


# --- topics -------------------------------------------------------------------------------------------


def _is_list(text: str) -> bool:
    return re.fullmatch(r"[A-Za-z0-9._\-]+(\s*,\s*[A-Za-z0-9._\-]+)*", text) is not None


def topic_matcher(topics: str | None) -> Callable[[str], bool]:
    """``topics``: a comma list of names, or a regex (anything with regex metacharacters)."""
    if topics is None or not topics.strip():
        return lambda _t: True
    text = topics.strip()
    if _is_list(text):
        names = {t.strip() for t in text.split(",")}
        return lambda t: t in names
    try:
        pattern = re.compile(text)
    except re.error as exc:
        raise DiscoveryError(
            f"topics: {text!r} is neither a comma list of topics nor a valid regex: {exc}"
        ) from exc
    return lambda t: pattern.fullmatch(t) is not None


def names_internal(topics: str | None) -> bool:
    """Whether ``topics`` asks for internal topics by name: a comma list (it lists them, or the matcher
    leaves them out anyway) or a regex that starts with ``__``."""
    if topics is None or not topics.strip():
        return False
    text = topics.strip()
    return _is_list(text) or text.startswith(INTERNAL_TOPIC_PREFIX)


# --- offsets and timestamps ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PerPartition:
    """An option that is one value for every partition, or a {topic: {partition: value}} map."""

    default: int | None = None
    by_partition: Mapping[tuple[str, int], int] = field(default_factory=dict)

    def get(self, topic: str, partition: int) -> int | None:
        return self.by_partition.get((topic, partition), self.default)

    def text(self) -> str | None:
        """The option's text (:func:`parse_per_partition` of it is equal; None: not given)."""
        if self.by_partition:
            by: dict[str, dict[str, int]] = {}
            for (topic, partition), value in self.by_partition.items():
                by.setdefault(topic, {})[str(partition)] = value
            return json.dumps(by, sort_keys=True)
        return None if self.default is None else str(self.default)


def parse_per_partition(
    name: str, text: str | None, *, named: Mapping[str, int] | None = None
) -> PerPartition:
    """A number, a name (``earliest``/``latest`` where allowed) or Spark-Kafka JSON ``{"t":{"0":23}}``."""
    if text is None or not str(text).strip():
        return PerPartition()
    raw = str(text).strip()
    if named and raw.lower() in named:
        return PerPartition(named[raw.lower()])
    if re.fullmatch(r"-?\d+", raw):
        return PerPartition(int(raw))
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise DiscoveryError(
            f'{name}: expected a number or JSON like {{"topic":{{"0":23}}}}, got {raw!r}'
        ) from exc
    if isinstance(obj, int) and not isinstance(obj, bool):
        return PerPartition(obj)
    if not isinstance(obj, dict):
        raise DiscoveryError(f"{name}: expected a JSON object of topics, got {raw!r}")
    by: dict[tuple[str, int], int] = {}
    for topic, parts in obj.items():
        if not isinstance(parts, dict):
            raise DiscoveryError(f"{name}: topic {topic!r} must map partition numbers to values")
        for p, value in parts.items():
            try:
                by[(str(topic), int(p))] = int(value)
            except (TypeError, ValueError) as exc:
                raise DiscoveryError(f"{name}: bad entry {topic!r}/{p!r}: {value!r}") from exc
    return PerPartition(None, by)


# --- the options ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """Everything a read of log dirs takes (each field's option name in :meth:`to_options`)."""

    #: ``topics`` (``subscribe``, ``subscribePattern``): a comma list or a regex; None: every topic
    topics: str | None = None
    starting_offsets: PerPartition = field(default_factory=PerPartition)
    ending_offsets: PerPartition = field(default_factory=PerPartition)
    starting_timestamps: PerPartition = field(default_factory=PerPartition)
    ending_timestamps: PerPartition = field(default_factory=PerPartition)
    include_control: bool = False
    decoder: str = "none"
    max_partition_bytes: int = DEFAULT_MAX_PARTITION_BYTES
    verify_crc: bool = True
    batch_rows: int = 65536
    min_partitions: int = field(default_factory=_default_min_partitions)
    #: what a consumer of this ``isolation.level`` reads (logdoctor.logdir.transactions): read_committed by
    #: default, as Kafka Streams and every exactly-once pipeline read
    isolation_level: str = READ_COMMITTED
    #: ``log-end`` (default: a dead broker's checkpoint lags its log) or ``high-watermark``
    upto: str = "log-end"
    #: ``openTransactions``: what becomes of a transaction left without a marker that no coordinator state
    #: among the inputs ends (logdoctor.logdir.coordinator): ``hold`` (default: as the restarted cluster,
    #: the last stable offset stays at it) or ``abort`` (as after ``kafka-transactions.sh abort``)
    open_transactions: str = HOLD
    #: ``cutAt``: a transaction-consistent cut at this moment (epoch ms, inclusive; logdoctor.logdir.cut): a
    #: non-transactional batch whose max timestamp is at or below it, a transaction committed at or before
    #: it in every partition or in none; None: no cut
    cut_at: int | None = None
    #: ``history`` (every record), ``latest`` (the latest record per key, logdoctor.spark.latest) or ``cdc``
    #: (a Debezium topic's events folded into its table, logdoctor.spark.cdc: the rows read are the history's)
    view: str = "history"
    #: typed tables (docs/typed-tables.md): keys and values decoded with the registry rebuilt from the
    #: ``_schemas`` partitions among the inputs and under ``schemas`` (more paths or URIs)
    typed: bool = False
    schemas: tuple[str, ...] = ()
    #: ``keepCache``: leave the pages a task reads in the page cache (by default those it brought in are
    #: dropped: logdoctor.logdir.page_cache); ``maxReadRate``: each task's reads paced to this many bytes a
    #: second (logdoctor.logdir.read_rate; the tasks running at once add up)
    keep_cache: bool = False
    max_read_rate: int | None = None
    #: ``includeInternal``: internal topics read though ``topics`` does not name them (logdir.read_plan)
    include_internal: bool = False
    #: ``typed=undecoded``: the typed frame's side table of the records that do not decode
    undecoded: bool = False
    #: the export's typed first pass, encoded (:data:`TYPED_PLAN_OPTION`; logdoctor.spark.typed_frame)
    typed_plan: str | None = None
    #: ``checkRecords`` of ``kafka-log-segments``: each batch's records decoded too
    check_records: bool = False
    #: the file systems' options (``s3.region``, ``s3.endpoint``: logdoctor.logdir.storage.OPTIONS)
    storage: tuple[tuple[str, str], ...] = ()
    #: the remote tier (``remoteStorage``, ``remoteLayout``, ``remotePrivateKey``), None: not read
    remote: RemoteOptions | None = None

    @property
    def decoded(self) -> bool:
        return self.decoder != "none"

    @property
    def upto_high_watermark(self) -> bool:
        return self.upto == "high-watermark"

    @classmethod
    def of(cls, options: ReadOptions | Mapping[str, Any] | None) -> ReadOptions:
        """``options`` as given to a Python API (:meth:`from_options` of a mapping; as is if typed)."""
        if isinstance(options, ReadOptions):
            return options
        return cls.from_options(options or {})

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> ReadOptions:
        """The data-source options (names as in Spark's Kafka source; case-insensitive; None: not given)."""
        opts = {str(k).lower(): v for k, v in options.items() if v is not None}
        isolation = opts.get("kafka.isolation.level", opts.get("isolationlevel"))
        decoder = str(opts.get("decoder", "none")).strip().lower()
        if decoder not in DECODERS:
            raise DiscoveryError(f"decoder: expected one of {', '.join(DECODERS)}, got {decoder!r}")
        start_ts = opts.get("startingtimestamp")
        end_ts = opts.get("endingtimestamp")
        topics = opts.get("topics") or opts.get("subscribe") or opts.get("subscribepattern")
        topics = None if topics is None else str(topics)
        topic_matcher(topics)  # a bad regex: said now
        try:
            remote = RemoteOptions.from_options(opts)
        except RemoteTierError as exc:
            raise DiscoveryError(str(exc)) from None
        plan = opts.get(TYPED_PLAN_OPTION.lower())
        return cls(
            topics=topics,
            starting_offsets=parse_per_partition(
                "startingOffsets", opts.get("startingoffsets"), named=_OFFSET_NAMES
            ),
            ending_offsets=parse_per_partition(
                "endingOffsets", opts.get("endingoffsets"), named=_OFFSET_NAMES
            ),
            # Spark: startingTimestamp wins over startingOffsetsByTimestamp, which wins over startingOffsets
            starting_timestamps=parse_per_partition(
                "startingTimestamp",
                start_ts if start_ts is not None else opts.get("startingoffsetsbytimestamp"),
            ),
            ending_timestamps=parse_per_partition(
                "endingTimestamp", end_ts if end_ts is not None else opts.get("endingoffsetsbytimestamp")
            ),
            include_control=_bool("includeControl", opts.get("includecontrol"), False),
            decoder=decoder,
            max_partition_bytes=_size(
                "maxPartitionBytes", opts.get("maxpartitionbytes"), DEFAULT_MAX_PARTITION_BYTES
            ),
            verify_crc=_bool("verifyCrc", opts.get("verifycrc"), True),
            min_partitions=_positive_int(
                "minPartitions", opts.get("minpartitions"), _default_min_partitions()
            ),
            isolation_level=_choice("kafka.isolation.level", isolation, ISOLATION_LEVELS, READ_COMMITTED),
            upto=_choice("upTo", opts.get("upto"), UPTO, "log-end"),
            open_transactions=_choice(
                "openTransactions", opts.get("opentransactions"), OPEN_TRANSACTION_POLICIES, HOLD
            ),
            cut_at=_cut_at(opts.get("cutat"), isolation),
            view=_choice("view", opts.get("view"), VIEWS, "history"),
            typed=_typed(opts.get("typed")),
            schemas=_paths_list(opts.get("schemas")),
            keep_cache=_bool("keepCache", opts.get("keepcache"), False),
            max_read_rate=_size("maxReadRate", opts.get("maxreadrate"), 0) or None,
            include_internal=_bool("includeInternal", opts.get("includeinternal"), False),
            undecoded=opts.get("typed") is not None and str(opts["typed"]).strip().lower() == "undecoded",
            typed_plan=str(plan) if plan else None,
            check_records=_bool("checkRecords", opts.get("checkrecords"), False),
            storage=storage_options(opts),
            remote=remote,
        )

    def to_options(self) -> dict[str, str]:
        """The data-source options that give these (:meth:`from_options` of them is equal): what differs
        from the defaults, as strings (what ``spark.read.options(...)`` takes)."""
        out: dict[str, str] = {}
        default = ReadOptions()
        if self.topics is not None:
            out["topics"] = self.topics
        for name, value in (
            ("startingOffsets", self.starting_offsets),
            ("endingOffsets", self.ending_offsets),
            ("startingTimestamp", self.starting_timestamps),
            ("endingTimestamp", self.ending_timestamps),
        ):
            text = value.text()
            if text is not None:
                out[name] = text
        for name, attr in _PLAIN_OPTIONS:  # the flags, then the values written as they are
            value = getattr(self, attr)
            if value != getattr(default, attr):
                out[name] = ("true" if value else "false") if isinstance(value, bool) else str(value)
        if self.typed:
            out["typed"] = "undecoded" if self.undecoded else "true"
        if self.schemas:
            out["schemas"] = json.dumps(list(self.schemas))
        out.update(self.storage)
        if self.remote is not None:
            out.update(self.remote.to_options())
        return out

    def only(self, *names: str) -> ReadOptions:
        """These options with only the fields ``names`` kept (the others at their defaults)."""
        unknown = set(names) - {f.name for f in fields(self)}
        if unknown:
            raise TypeError(f"no read option {', '.join(sorted(unknown))}")
        return ReadOptions(**{name: getattr(self, name) for name in names})


#: (option, field) of the options :meth:`ReadOptions.to_options` gives as they are where not the default
_PLAIN_OPTIONS = (
    ("includeControl", "include_control"),
    ("verifyCrc", "verify_crc"),
    ("keepCache", "keep_cache"),
    ("includeInternal", "include_internal"),
    ("checkRecords", "check_records"),
    ("decoder", "decoder"),
    ("maxPartitionBytes", "max_partition_bytes"),
    ("minPartitions", "min_partitions"),
    ("kafka.isolation.level", "isolation_level"),
    ("upTo", "upto"),
    ("openTransactions", "open_transactions"),
    ("view", "view"),
    ("cutAt", "cut_at"),
    ("maxReadRate", "max_read_rate"),
    (TYPED_PLAN_OPTION, "typed_plan"),
)


def _bool(name: str, text: Any, default: bool) -> bool:
    if text is None:
        return default
    v = str(text).strip().lower()
    if v in ("true", "1", "yes"):
        return True
    if v in ("false", "0", "no"):
        return False
    raise DiscoveryError(f"{name}: expected true or false, got {text!r}")


def _size(name: str, text: Any, default: int) -> int:
    if text is None:
        return default
    try:
        return parse_size(text)
    except ValueError as exc:
        raise DiscoveryError(f"{name}: {exc}") from None


def _choice(name: str, text: Any, choices: Sequence[str], default: str) -> str:
    """One of ``choices`` (case-insensitive; ``-`` and ``_`` alike), ``default`` when not given."""
    if text is None or not str(text).strip():
        return default
    value = str(text).strip().lower().replace("-", "_")
    for choice in choices:
        if choice.replace("-", "_") == value:
            return choice
    raise DiscoveryError(f"{name}: expected one of {', '.join(choices)}, got {text!r}")


def _cut_at(text: Any, isolation: Any) -> int | None:
    """Option ``cutAt``: epoch ms; a cut is what read_committed reads up to a moment (logdir.cut)."""
    if text is None or not str(text).strip():
        return None
    try:
        value = int(str(text).strip())
    except ValueError:
        raise DiscoveryError(f"cutAt: expected epoch milliseconds, got {text!r}") from None
    if _choice("kafka.isolation.level", isolation, ISOLATION_LEVELS, READ_COMMITTED) != READ_COMMITTED:
        raise DiscoveryError(
            "cutAt: a cut reads what read_committed reads: drop --isolation-level read_uncommitted"
        )
    return value


def _typed(text: Any) -> bool:
    """Option ``typed``: true, false, or ``undecoded`` (the ``kafka-log`` frame of the side table)."""
    if text is not None and str(text).strip().lower() == "undecoded":
        return True
    return _bool("typed", text, False)


def _paths_list(text: Any) -> tuple[str, ...]:
    """Option ``schemas``: paths or URIs separated by commas (or a JSON list, for paths with commas)."""
    if text is None or not str(text).strip():
        return ()
    raw = str(text).strip()
    if raw.startswith("["):
        try:
            items = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise DiscoveryError(
                f"schemas: expected paths separated by commas or a JSON list, got {raw!r}"
            ) from exc
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise DiscoveryError(f"schemas: expected a JSON list of paths, got {raw!r}")
        return tuple(items)
    return tuple(p.strip() for p in raw.split(",") if p.strip())


def _positive_int(name: str, text: Any, default: int) -> int:
    if text is None:
        return default
    try:
        value = int(str(text).strip())
    except ValueError as exc:
        raise DiscoveryError(f"{name}: expected a positive integer, got {text!r}") from exc
    if value <= 0:
        raise DiscoveryError(f"{name}: expected a positive integer, got {text!r}")
    return value
