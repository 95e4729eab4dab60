"""The verdict of the real-Debezium tests (tests/cdc_real): ``logdoctor export LOGDIR --view cdc`` run as a
user runs it, its table of each captured source table read back, and compared column for column with the
database's own ``SELECT * FROM`` that table. Test code.

Each column is compared as a value of its SQL type, read from both sides: the database's text output
(``psql``'s COPY, ``mariadb --xml``) and the exported table's Arrow value. A ``numeric`` is compared by value
(``1.5`` = ``1.500``: the column of a ``VariableScaleDecimal`` has the largest scale among its values), a
``jsonb`` as parsed JSON (PostgreSQL rewrites the text), a timestamp as an instant in UTC.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import kafka_cluster as kc


class Run:
    """What a module's workload left: the broker's log dir, the exports, the database's answers (at the end
    and at the point in time ``t_ms``), the figures measured."""

    def __init__(self) -> None:
        self.log_dir = Path()
        self.out = Path()
        self.out_t = Path()
        self.summary: dict = {}
        self.summary_t: dict = {}
        self.final: dict[str, tuple[list[str], list[tuple]]] = {}
        self.at_t: dict[str, tuple[list[str], list[tuple]]] = {}
        self.t_ms = 0
        self.figures: dict[str, Any] = {}
        self.records: dict[str, list[tuple]] = {}


@contextlib.contextmanager
def started_together(database: Any, cluster: kc.KafkaCluster) -> Iterator[None]:
    """``database`` (``databases.PostgresServer`` or ``MariaDBServer``) started while the broker's JVM starts
    (neither waits on the other; both in this thread: a process dies with the thread that started it), then
    stopped as ``with database, cluster:`` stops them: the broker first; both killed after a failure."""
    with contextlib.ExitStack() as stack:
        stack.push(database)
        stack.push(cluster)
        cluster.start(wait=False)
        database.start()
        cluster.wait_started()
        yield


def cpu_seconds() -> float:
    """CPU time (user + system) of this process and of every child it has waited for (the brokers, Connect
    workers, databases and CLIs a module started and stopped): the module's work, whatever the load."""
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _instant(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


# SQL type -> (the database's text -> value, the exported Arrow value -> value)
KINDS: dict[str, tuple[Callable[[str], Any], Callable[[Any], Any]]] = {
    "int": (int, int),
    "float": (float, float),
    "text": (str, str),
    "numeric": (Decimal, lambda v: Decimal(str(v))),
    "json": (json.loads, json.loads),
    "timestamp": (lambda s: _instant(datetime.fromisoformat(s)), _instant),
}


def export_cdc(log_dir: Path, out: Path, *extra: str) -> dict:
    """``logdoctor export LOG_DIR --view cdc --out OUT --json`` in a process of its own: its summary.
    Exit 1 (events to the side table, a topic refused) is an answer too: the caller judges the summary."""
    started = time.monotonic()
    done = kc.logdoctor("export", str(log_dir), "--view", "cdc", "--out", str(out), "--json", *extra)
    assert done.stdout.strip(), (
        f"export --view cdc printed nothing (exit {done.returncode}): {done.stderr[-4000:]}"
    )
    summary = json.loads(done.stdout)
    summary["_exit"] = done.returncode
    summary["_seconds"] = round(time.monotonic() - started, 1)
    summary["_stderr"] = done.stderr[-4000:]
    return summary


def read_table(folder: Path) -> pa.Table:
    files = sorted(folder.rglob("*.parquet"))
    assert files, f"no table at {folder}"
    return pa.concat_tables(pq.read_table(f) for f in files)


def compare(
    table: pa.Table,
    header: list[str],
    rows: list[tuple[str | None, ...]],
    kinds: Mapping[str, str],
    *,
    key: str = "id",
    columns: list[str] | None = None,
) -> list[str]:
    """The differences between the exported ``table`` and the database's ``header``/``rows`` (its text,
    ``None`` for NULL), column for column by ``kinds`` (column -> a key of :data:`KINDS`); only ``columns``
    when given. An empty list: equal."""
    exported = [c for c in table.column_names if c not in ("kafka", "__kafka")]
    problems: list[str] = []
    if columns is None and exported != header:
        problems.append(f"columns: exported {exported}, the database {header}")
    wanted = columns or [c for c in header if c in exported]
    db: dict[Any, dict[str, Any]] = {}
    for row in rows:
        named = dict(zip(header, row, strict=True))
        db[int(named[key])] = {c: None if named[c] is None else KINDS[kinds[c]][0](named[c]) for c in wanted}
    out: dict[Any, dict[str, Any]] = {}
    for named in table.select(
        [c for c in wanted if c in exported] + ([key] if key not in wanted else [])
    ).to_pylist():
        out[int(named[key])] = {
            c: None if named.get(c) is None else KINDS[kinds[c]][1](named[c]) for c in wanted
        }
    for k in sorted(db.keys() - out.keys()):
        problems.append(f"row {key}={k} missing from the export")
    for k in sorted(out.keys() - db.keys()):
        problems.append(f"row {key}={k} exported, not in the database: {_short(out[k])}")
    for k in sorted(db.keys() & out.keys()):
        for c in wanted:
            if db[k][c] != out[k][c]:
                problems.append(
                    f"{key}={k} {c}: exported {_short(out[k][c])}, the database {_short(db[k][c])}"
                )
    return problems


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 120 else f"{text[:60]}...({len(text)} chars)"


def redeliveries(records: list[tuple], position: Callable[[dict], tuple | None]) -> int:
    """Events of a topic's records (``kafka_cluster.read_all``) whose source position an earlier event of the
    topic already had: written again after a restart of the connector."""
    seen: set[tuple] = set()
    again = 0
    for _offset, key, value, *_ in records:
        if value is None:
            continue
        payload = json.loads(value)["payload"]
        if payload.get("op") not in ("c", "u", "d", "t"):
            continue
        where = position(payload)
        if where is None:
            continue
        where = (payload["op"], key, where)
        if where in seen:
            again += 1
        seen.add(where)
    return again


def wait_marker(worker: Any, marker_topics: list[str], phase: int, topics: list[str]) -> None:
    """Until each of ``marker_topics`` holds the event of the row ``(phase, 'phase PHASE')`` inserted into
    the marker table: the connectors have written every earlier commit then (each streams in commit order),
    and until the ends of ``topics`` stay put."""
    want = {"id": phase, "phase": f"phase {phase}"}
    for topic in marker_topics:
        kc.wait_until(
            f"the event of marker {phase} in {topic}",
            lambda topic=topic: any(
                v is not None and json.loads(v)["payload"]["after"] == want
                for _o, _k, v, *_ in kc.read_all(worker.cluster.bootstrap, topic, 0)
            ),
            180,
            every=0.5,
        )
    worker.wait_caught_up(topics, settle=1.5)


def quiet_instant() -> int:
    """A point in time (epoch ms) in the middle of a second in which nothing happens: the caller changes
    nothing from a second before it to a second after it (:func:`after_quiet`). MariaDB's binlog timestamps,
    and so its events' ``source.ts_ms``, have whole seconds."""
    now = time.time()
    time.sleep(1 - (now % 1) + 0.5)  # the middle of the next second
    return int(time.time() * 1000)


def after_quiet(t_ms: int) -> None:
    """Wait until the second after ``t_ms``'s second has begun."""
    time.sleep(max(0.0, (t_ms // 1000 + 1) - time.time() + 0.05))


def split_in_redelivery(records: list[tuple], position: Callable[[dict], tuple | None]) -> int | None:
    """The offset of the first redelivered create of a primary-key change (header ``__debezium.oldkey``) in
    a topic's records, else of the first redelivered event: an export up to there (exclusive) folds the
    originals and part of what Connect wrote again, an append the rest, whose key change then finds its old
    key's row gone (moved by the original), the case where only the table's positions tell a redelivery."""
    seen: set[tuple] = set()
    first = None
    for offset, key, value, headers, *_ in records:
        if value is None:
            continue
        payload = json.loads(value)["payload"]
        op = payload.get("op")
        where = position(payload) if op in ("c", "u", "d", "t") else None
        if where is None:
            continue
        event = (op, key, where)
        if event in seen:
            if first is None:
                first = offset
            if op == "c" and any(h[0] == "__debezium.oldkey" for h in headers or ()):
                return offset
        seen.add(event)
    return first


def export_then_append(log_dir: Path, out: Path, topic: str, split: int) -> tuple[pa.Table, dict, dict]:
    """``logdoctor export --view cdc --format delta`` of ``topic`` up to offset ``split`` (exclusive), then
    ``--mode append`` of the rest, as a user whose first export ran while Connect was writing again: the
    Delta table read by delta-rs and both summaries."""
    from deltalake import DeltaTable

    summaries = []
    for extra in (("--ending-offsets", str(split)), ("--mode", "append")):
        done = kc.logdoctor("export", str(log_dir), "--view", "cdc", "--format", "delta", "--topics", topic,
                            "--out", str(out), "--json", *extra)  # fmt: skip
        assert done.returncode == 0 and done.stdout.strip(), (done.returncode, done.stderr[-4000:])
        summaries.append(json.loads(done.stdout)["typed"]["topics"][topic])
    return DeltaTable(str(out / topic)).to_pyarrow_table(), summaries[0], summaries[1]
