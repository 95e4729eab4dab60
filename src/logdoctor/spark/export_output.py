"""What an earlier export wrote in an output folder, and nothing else: the one rule of what
``export --mode overwrite`` may delete (issue 32: a command deletes only what it wrote).

An export's folder holds, at any depth of hive-style ``column=value`` folders: ``part-*`` data files,
``_SUCCESS`` (the committed job's marker, Spark's and the arrow writer's), Spark's checksum files
``.<name>.crc`` of those, and ``_temporary`` (an uncommitted job's attempt folders). A ``part-*.parquet``
is the export's only when its footer holds the ``kafka-log`` records columns (:mod:`logdoctor.spark.schema`,
less the hive partition columns, which live in the folder names); another format's ``part-*`` (written by
the Spark writer) is taken as the export's only in a folder whose root holds ``_SUCCESS``.

Anything else is foreign: overwrite is refused (naming it) before anything is written or deleted.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["ExportOutput", "export_output", "foreign_objects", "refusal_text"]

SUCCESS = "_SUCCESS"
TEMPORARY = "_temporary"
_PART = re.compile(r"^part-.+")
_HIVE_DIR = re.compile(r"^[^=/]+=.*$")
# the columns every records file of an export holds (whatever --partition-by took into folder names)
_CORE_COLUMNS = ("key", "value", "offset", "timestamp", "segment_base_offset", "batch_position")


class ExportOutput:
    """A local output folder sorted into what an export wrote (``ours``: relative paths, files and the
    folders left empty without them) and what it did not (``foreign``)."""

    def __init__(self, root: str, fmt: str = "parquet") -> None:
        self.root = root
        self.fmt = fmt
        self.ours: list[str] = []
        self.foreign: list[str] = []
        committed = os.path.isfile(os.path.join(root, SUCCESS))
        if os.path.isdir(root):
            self._walk(root, "", committed, under_temporary=False)

    def _walk(self, folder: str, rel: str, committed: bool, under_temporary: bool) -> None:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            self.foreign.append(rel or ".")
            return
        for e in entries:
            path = os.path.join(rel, e.name) if rel else e.name
            if e.is_dir(follow_symlinks=False):
                temp = under_temporary or (e.name == TEMPORARY and not rel)
                if temp or _HIVE_DIR.match(e.name):
                    self._walk(e.path, path, committed, temp)
                else:
                    self.foreign.append(path + "/")
            elif e.is_file(follow_symlinks=False) and _is_ours(
                e.name, not rel, committed, self.fmt, functools.partial(_records_parquet, e.path)
            ):
                self.ours.append(path)
            else:
                self.foreign.append(path)

    def folders(self) -> Iterator[str]:
        """The hive-style folders under the root, deepest first."""
        for dirpath, _dirnames, _files in os.walk(self.root, topdown=False):
            if os.path.normpath(dirpath) != os.path.normpath(self.root):
                yield dirpath

    def clear(self, keep: str = TEMPORARY) -> None:
        """Delete what an earlier export wrote (never ``keep``, the running job's folder), then the
        folders that are left empty; nothing foreign is touched."""
        for rel in self.ours:
            if rel.split(os.sep, 1)[0] == keep:
                continue
            os.unlink(os.path.join(self.root, rel))
        for folder in self.folders():
            rel = os.path.relpath(folder, self.root)
            if rel.split(os.sep, 1)[0] == keep:
                continue
            with contextlib.suppress(OSError):  # not empty: not ours alone
                os.rmdir(folder)

    def refusal(self) -> str | None:
        """The refusal of ``--mode overwrite`` when anything foreign is there (None: nothing is)."""
        return refusal_text(self.root, self.foreign)


def _is_ours(name: str, at_root: bool, committed: bool, fmt: str, records: Callable[[], bool]) -> bool:
    """Whether the file ``name`` (in the output's root: ``at_root``) is an export's: ``_SUCCESS`` at the
    root, Spark's checksum ``.<name>.crc`` of it or of a part file beside it, a ``part-*.parquet`` whose
    footer holds the records columns (``records()``), another format's ``part-*`` in a committed output."""
    if name == SUCCESS and at_root:
        return True
    if name.startswith(".") and name.endswith(".crc"):
        inner = name[1:-4]
        return inner == SUCCESS or bool(_PART.match(inner))
    if not _PART.match(name):
        return False
    if name.endswith(".parquet"):
        return records()
    return committed and fmt != "parquet"


def _records_parquet(path: str, filesystem: Any = None) -> bool:
    """A Parquet file whose footer holds the export's records columns."""
    try:
        import pyarrow.parquet as pq

        if filesystem is None:
            names: Any = set(pq.read_schema(path).names)
        else:
            with filesystem.open_input_file(path) as fh:
                names = set(pq.read_schema(fh).names)
    except Exception:  # not Parquet, unreadable, torn: not ours
        return False
    return all(c in names for c in _CORE_COLUMNS)


def foreign_objects(uri: str, fmt: str = "parquet") -> list[str] | None:
    """The objects under the output URI ``uri`` that no export wrote (relative paths; [] none; None: the
    store could not be listed here), by the rules of :class:`ExportOutput`: an object store has no folders,
    so each object's path is judged by its folder names (``column=value``, or under ``_temporary``)."""
    try:
        import pyarrow.fs as pafs

        filesystem, root = pafs.FileSystem.from_uri(uri)
        infos = filesystem.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True))
    except Exception:  # no file system for the scheme here
        return None
    files = {
        i.path[len(root) :].lstrip("/"): i.path for i in infos if i.type == pafs.FileType.File
    }
    committed = SUCCESS in files
    foreign: list[str] = []
    for rel, full in sorted(files.items()):
        *folders, name = rel.split("/")
        ok_dirs = folders[:1] == [TEMPORARY] or all(_HIVE_DIR.match(f) for f in folders)
        records = functools.partial(_records_parquet, full, filesystem)
        if not ok_dirs or not _is_ours(name, not folders, committed, fmt, records):
            foreign.append(rel)
    return foreign


def refusal_text(root: str, foreign: list[str]) -> str | None:
    """The refusal of ``--mode overwrite`` of ``root`` holding ``foreign`` (None: nothing foreign)."""
    if not foreign:
        return None
    sep = "" if root.endswith("/") else "/"
    shown = ", ".join(f"{root}{sep}{f}" for f in foreign[:5])
    more = f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
    return (
        f"output {root} holds what no logdoctor export wrote: {shown}{more}; --mode overwrite "
        "replaces only an earlier export's files (part-* files with the records columns, _SUCCESS, "
        "_temporary, column=value folders): move those away or choose another --out (nothing was "
        "written or deleted)"
    )


def export_output(root: str, fmt: str = "parquet") -> ExportOutput:
    """Sort the local folder ``root`` (see :class:`ExportOutput`)."""
    return ExportOutput(root, fmt)
