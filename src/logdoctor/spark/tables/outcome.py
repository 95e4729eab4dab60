"""What an interrupted table export left in its table, read from the table itself: its one commit, or
nothing. The commit is one atomic step of the format's library (a catalog swap, a ``_delta_log`` entry),
so a Ctrl-C lands either before it (nothing was committed: the table is as it was) or after it (the table
has the commit, whole); the export's other files are never part of the table either way. The table's
current snapshot (Iceberg) or version (Delta) when the export opened it is compared with the one after
the interrupt."""

from __future__ import annotations

from typing import Any

__all__ = ["NOTHING_COMMITTED", "CommitWatch"]

NOTHING_COMMITTED = "nothing was committed; the table is as it was"


class CommitWatch:
    """The table an export opened and its state then (:meth:`opened`), for :meth:`line` after a Ctrl-C."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.table: Any = None
        self.before: tuple[int | None, int] = (None, 0)

    def opened(self, table: Any) -> None:
        """``table`` (an :class:`~.iceberg.IcebergTable` or :class:`~.delta.DeltaLakeTable`, loaded) is the
        export's: its snapshot or version now is the one a commit of this export would follow."""
        self.before = _state(table)
        self.table = table

    def line(self) -> str:
        """``the table has its commit of N rows (snapshot S)`` or :data:`NOTHING_COMMITTED`."""
        if self.table is None:  # stopped before the table was opened: the commit comes after
            return NOTHING_COMMITTED
        try:
            self.table.load()
            version, total = _state(self.table)
        except Exception as exc:  # the table cannot be read now: say so, never guess
            why = " ".join(str(exc).split())
            return f"whether its commit landed is unknown: the table cannot be read ({why})"
        if version is None or version == self.before[0]:
            return NOTHING_COMMITTED
        rows = _added_rows(self.table)
        if rows is None:
            rows = total - self.before[1] if self.mode == "append" else total
        word = "snapshot" if _is_iceberg(self.table) else "version"
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
        return int(snap.snapshot_id), int(_summary(snap).get("total-records", 0))
    import pyarrow as pa

    adds = pa.table(t.get_add_actions(flatten=True))
    rows = sum(n or 0 for n in adds.column("num_records").to_pylist()) if adds.num_rows else 0
    return int(t.version()), int(rows)


def _summary(snap: Any) -> dict[str, str]:
    summary = snap.summary
    if summary is None:
        return {}
    return dict(getattr(summary, "additional_properties", None) or {})


def _added_rows(table: Any) -> int | None:
    """The rows the current Iceberg snapshot added (its summary's ``added-records``); None for Delta."""
    if not _is_iceberg(table):
        return None
    snap = table._table.current_snapshot()
    added = _summary(snap).get("added-records") if snap is not None else None
    return int(added) if added is not None else 0
