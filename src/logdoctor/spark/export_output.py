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
import os
import re
from collections.abc import Iterator
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
            elif e.is_file(follow_symlinks=False) and self._is_ours(e, rel, committed):
                self.ours.append(path)
            else:
                self.foreign.append(path)

    def _is_ours(self, e: os.DirEntry[str], rel: str, committed: bool) -> bool:
        name = e.name
        if name == SUCCESS and not rel:
            return True
        if name.startswith(".") and name.endswith(".crc"):  # Spark's checksum of a file beside it
            inner = name[1:-4]
            return inner == SUCCESS or bool(_PART.match(inner))
        if not _PART.match(name):
            return False
        if name.endswith(".parquet"):
            return _records_parquet(e.path)
        return committed and self.fmt != "parquet"

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
        if folders and folders[0] == TEMPORARY:
            ok_dirs = True
        else:
            ok_dirs = all(_HIVE_DIR.match(f) for f in folders)
        if not ok_dirs:
            foreign.append(rel)
        elif (name == SUCCESS and not folders) or _is_crc_of_ours(name):
            continue
        elif not _PART.match(name):
            foreign.append(rel)
        elif name.endswith(".parquet"):
            if not _records_parquet(full, filesystem):
                foreign.append(rel)
        elif not (committed and fmt != "parquet"):
            foreign.append(rel)
    return foreign


def _is_crc_of_ours(name: str) -> bool:
    """Spark's checksum ``.<name>.crc`` of _SUCCESS or a part file."""
    if not (name.startswith(".") and name.endswith(".crc")):
        return False
    inner = name[1:-4]
    return inner == SUCCESS or bool(_PART.match(inner))


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
