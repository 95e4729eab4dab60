"""Export into open tables (``export --format iceberg|delta``): tasks write Parquet with pyarrow straight
into the table's storage, the driver commits every file in one transaction of the format's library.

- :mod:`.files`: task side (decode, keep rows above the table's offsets, write, file statistics).
- :mod:`.iceberg`: pyiceberg (SQLite ``SqlCatalog`` beside the table by default, any catalog by properties).
- :mod:`.delta`: deltalake (delta-rs) ``create_table_with_add_actions`` / ``create_write_transaction``.
- :mod:`.orphans`: files earlier exports left uncommitted (a killed driver): named, removed once old.
- :mod:`.export`: the job (plan, run the tasks on Spark, commit, remove what the commit does not reference).
"""

from __future__ import annotations

from collections.abc import Callable

from logdoctor.spark.export import ExportError

TABLE_FORMATS = ("iceberg", "delta")
# Test seam only (tests/spark/test_tables_commit.py, test_typed_commit_kill.py): "before:SECONDS" or
# "after:SECONDS" makes the driver sleep right before or after the commit call, so that a test can SIGKILL it
# there; "after@TABLE:SECONDS" only at that table's commit (an export of several tables). Never set it
# otherwise.
PAUSE_ENV = "LOGDOCTOR_TEST_PAUSE_COMMIT"


class TableError(ExportError):
    """The table cannot be reached, read or committed (catalog down, storage not writable, conflict);
    the table is unchanged."""


class CommitUnknownError(TableError):
    """The commit call failed and the table could not be read to tell whether the commit landed: the
    export's files are kept (a table that holds the commit needs them; the next export's sweep removes
    those no commit references)."""


#: the property (Delta: commitInfo; Iceberg: snapshot summary and table property) naming one commit, by which
#: a commit call that failed is looked for in the table (:meth:`~.delta.DeltaLakeTable.commit`)
COMMIT_PROPERTY = "logdoctor.commit"


def after_failed_commit(
    where: str, what: str, exc: BaseException, landed: Callable[[], bool], read: str, one_line: Callable
) -> None:
    """A commit call of the table ``where`` raised ``exc``; ``landed()`` reads the table (``read``: what it
    reads) for the commit's :data:`COMMIT_PROPERTY`. Landed: return (the commit is the table's, with every
    file it references); not there: :class:`TableError`, the table unchanged; ``read`` cannot be read:
    :class:`CommitUnknownError` (the export keeps its files)."""
    try:
        held = landed()
    except Exception as read_exc:
        raise CommitUnknownError(
            f"{where}: {what} failed: {one_line(exc)}; whether it landed is unknown ({read} cannot be read: "
            f"{one_line(read_exc)}); this export's files are kept"
        ) from None
    if not held:
        raise TableError(f"{where}: {what} failed: {one_line(exc)}; the table is unchanged") from None


class TableSchemaError(ExportError):
    """The table's schema is not the export's (nothing was written)."""


class TableExistsError(ExportError):
    """``--mode error`` and the table already exists (nothing was written)."""
