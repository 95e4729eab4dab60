"""The census's refusals of its inputs: the error a bad input raises, and log dirs at a URI (the census
scans log dirs on a local disk only; remote brokers come as inventories); and the columns of a census
finding. Used where the inputs are classified (:mod:`logdoctor.spark.census_inputs`) and grouped into
brokers, and where findings are made (:mod:`logdoctor.spark.census_rules`), below both.
"""

from __future__ import annotations

from typing import Any

FINDING_DDL = ", ".join(
    (
        "broker string, log_dir string, code string, severity string, path string, position bigint",
        "offset bigint, message string, fix string",
    )
)
_FINDING_NAMES = tuple(part.split(" ", 1)[0] for part in FINDING_DDL.split(", "))


def finding_values(broker: Any, log_dir: Any, f: Any, position: Any = None, offset: Any = None) -> tuple:
    """The finding ``f`` (:class:`~logdoctor.checks.findings.Finding`) of ``broker``'s ``log_dir`` in
    :data:`FINDING_DDL`'s columns, in their order."""
    return (broker, log_dir, f.code, f.severity.label, f.path, position, offset, f.message, f.fix)


def finding_row(broker: Any, log_dir: Any, f: Any, offset: Any = None) -> dict[str, Any]:
    """:func:`finding_values` by column name (no position)."""
    return dict(zip(_FINDING_NAMES, finding_values(broker, log_dir, f, offset=offset), strict=True))


class CensusError(ValueError):
    """Bad census input (no log dir found, a path that does not exist)."""


REMOTE_LOG_DIRS = (
    "{item} holds Kafka log dirs ({shown}) at a URI: the census scans log dirs on a local disk only (the "
    "scan reads their files with mmap, listings, owners and modes, the broker's .lock). Collect an "
    "inventory of each broker where its log dirs are, `logdoctor inventory LOGDIR... --out "
    "s3://bucket/inventories/broker-ID.parquet`, and give the census the inventories (files, folders or "
    "URIs of them); `logdoctor export` and the kafka-log data sources read log dirs at URIs directly"
)


def refuse_remote_log_dirs(item: str) -> None:
    """Raise ``CensusError`` (naming ``logdoctor inventory``) when the URI ``item`` (a glob allowed)
    is or holds Kafka log dirs; return when it does not."""
    import glob

    from logdoctor.logdir.discovery import find_log_dirs
    from logdoctor.logdir.storage import Storage

    try:
        storage, loc = Storage.of(item)
        places = storage.glob(loc) if glob.has_magic(loc.split("://", 1)[1]) else [loc]
        found = [ld for place in places for ld in find_log_dirs(place, storage=storage)]
    except (OSError, ValueError):
        return
    if found:
        shown = ", ".join(found[:3]) + (", ..." if len(found) > 3 else "")
        raise CensusError(REMOTE_LOG_DIRS.format(item=item, shown=shown))
