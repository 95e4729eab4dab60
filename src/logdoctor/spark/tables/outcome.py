"""What an interrupted table export left in its tables, read from the tables themselves: per table, its one
commit, or nothing. A commit is one atomic step of the format's library (a catalog swap, a ``_delta_log``
entry), so a Ctrl-C lands either before it (nothing was committed: the table is as it was) or after it (the
table has the commit, whole); the export's other files are never part of a table either way. Each table's
current snapshot (Iceberg) or version (Delta) when the export opened it is compared with the one after the
interrupt. An export of several tables (``--typed``, ``--view cdc``) commits each on its own: the line
names each table the export opened and what it holds; a table the export had not opened yet was not
touched."""

from __future__ import annotations

from typing import Any

from logdoctor.spark.tables.iceberg import _summary_of

__all__ = ["NOTHING_COMMITTED", "CommitWatch"]

NOTHING_COMMITTED = "nothing was committed; the table is as it was"

#: the commit modes whose rows are the table's after it (a MERGE: upserts and deletes in one commit)
_HOLDS = "merge"


class CommitWatch:
    """The tables an export opened and their state then (:meth:`opened`), for :meth:`line` after a
    Ctrl-C."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        #: name -> [table, (snapshot or version, rows) when opened, commit mode]; "" for the one table
        self.tables: dict[str, list[Any]] = {}

    def opened(self, table: Any, name: str = "", mode: str | None = None) -> None:
        """``table`` (an :class:`~.iceberg.IcebergTable` or :class:`~.delta.DeltaLakeTable`, loaded) is the
        export's (``name``: its name among several, shown in the line): its snapshot or version now is the
        one a commit of this export would follow. ``mode``: this table's commit when not the export's
        (``append``, ``overwrite``, or ``merge``: the rows said are those the table holds after it)."""
        if name in self.tables:  # opened again (a CDC append's table): the first state is the one before
            return
        self.tables[name] = [table, _state(table), mode or self.mode]

    def line(self) -> str:
        """One table: ``the table has its commit of N rows (snapshot S)`` or :data:`NOTHING_COMMITTED`.
        Several: ``table T: ...`` for each, joined by ``; ``."""
        if not self.tables:  # stopped before a table was opened: every commit comes after
            return NOTHING_COMMITTED
        if list(self.tables) == [""]:
            return _line(*self.tables[""])
        parts = [f"table {name}: {_line(*entry)}" for name, entry in sorted(self.tables.items())]
        return "; ".join(parts)


def _line(table: Any, before: tuple[int | None, int], mode: str) -> str:
    try:
        table.load()
        version, total = _state(table)
    except Exception as exc:  # the table cannot be read now: say so, never guess
        why = " ".join(str(exc).split())
        return f"whether its commit landed is unknown: the table cannot be read ({why})"
    if version is None or version == before[0]:
        return NOTHING_COMMITTED
    word = "snapshot" if _is_iceberg(table) else "version"
    if mode == _HOLDS:
        return f"the table has its commit ({word} {version}) and holds {total:,} rows"
    rows = _added_rows(table)
    if rows is None:
        rows = total - before[1] if mode == "append" else total
    return f"the table has its commit of {rows:,} rows ({word} {version})"


def _is_iceberg(table: Any) -> bool:
    return type(table).__name__ == "IcebergTable"


def _state(table: Any) -> tuple[int | None, int]:
    """(current snapshot id or version, rows), of the table as last loaded; (None, 0) without one."""
    t = getattr(table, "_table", None)
    if t is None:
        return None, 0
    if _is_iceberg(table):
        snap = t.current_snapshot()
        if snap is None:
            return None, 0
        return int(snap.snapshot_id), int(_summary_of(snap).get("total-records", 0))
    import pyarrow as pa

    adds = pa.table(t.get_add_actions(flatten=True))
    rows = sum(n or 0 for n in adds.column("num_records").to_pylist()) if adds.num_rows else 0
    return int(t.version()), int(rows)


def _added_rows(table: Any) -> int | None:
    """The rows the current Iceberg snapshot added (its summary's ``added-records``); None for Delta."""
    if not _is_iceberg(table):
        return None
    snap = table._table.current_snapshot()
    added = _summary_of(snap).get("added-records") if snap is not None else None
    return int(added) if added is not None else 0
