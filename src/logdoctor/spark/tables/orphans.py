"""Data files no snapshot references, left in a table's storage by an export that never committed.

A driver killed before or during its commit (``kill -9``, a lost machine) leaves the Parquet files its
tasks wrote in the table's data folder: the table is right (no snapshot references them) but the storage
holds them. Each export of a table looks for such files after its commit and removes them as Iceberg's
``remove_orphan_files`` and Delta's ``VACUUM`` do, with the same two safety rules:

- only a file that **no snapshot** references: not the current one nor any older one kept for time
  travel (Iceberg: every snapshot's manifests; Delta: every ``add`` and ``remove`` of the log and its
  checkpoints), and only files of logdoctor's own naming (``ld<job>-<task>-<attempt>-<hex>.parquet``,
  :func:`.files.write_table_files`): another writer's files are never touched;
- only a file older than :data:`MIN_AGE_S` (3 days, Iceberg's default): a younger one may belong to an
  export of the same table that is still running and has yet to commit it. Younger files are named
  (count, bytes, age) and left for a later export.

The scan is best effort: a failure to list or read the table's metadata removes nothing and is reported.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from logdoctor.spark.tables.files import filesystem, join_uri

MIN_AGE_S = 3 * 24 * 3600
JOB_FILE = re.compile(r"^(ld[0-9a-f]{12})-\d{5}-\d+-[0-9a-f]{8}\.parquet$")


@dataclass(frozen=True, slots=True)
class Orphans:
    """What one sweep found: files removed (old enough) and kept (too young), with their bytes."""

    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    removed_bytes: int = 0
    kept_bytes: int = 0
    youngest_kept_s: float | None = None  # age of the youngest file kept
    min_age_s: float = MIN_AGE_S
    error: str | None = None  # the sweep could not run (nothing removed)

    def to_json(self) -> dict[str, Any]:
        return {
            "removed": self.removed,
            "removed_bytes": self.removed_bytes,
            "kept": self.kept,
            "kept_bytes": self.kept_bytes,
            "min_age_s": self.min_age_s,
            "error": self.error,
        }

    def lines(self) -> list[str]:
        """What a person reads after the export (nothing when nothing was found)."""
        out = []
        if self.error:
            out.append(f"uncommitted files of earlier exports not checked: {self.error}")
        if self.removed:
            out.append(
                f"removed {len(self.removed):,} files ({self.removed_bytes:,} bytes) that no snapshot of "
                f"the table references, left by earlier exports that did not commit (older than "
                f"{_age(self.min_age_s)})"
            )
        if self.kept:
            out.append(
                f"{len(self.kept):,} files ({self.kept_bytes:,} bytes) that no snapshot of the table "
                f"references are kept, the youngest {_age(self.youngest_kept_s or 0)} old: an export "
                f"still running may commit them; an export of this table removes them once they are "
                f"older than {_age(self.min_age_s)}"
            )
        return out


def _age(seconds: float) -> str:
    if seconds >= 2 * 86400:
        return f"{seconds / 86400:.0f} days"
    if seconds >= 2 * 3600:
        return f"{seconds / 3600:.0f} hours"
    if seconds >= 120:
        return f"{seconds / 60:.0f} minutes"
    return f"{seconds:.0f} s"


def job_files_in(data_uri: str) -> list[tuple[str, int, float]]:
    """(path as a table references it, size, modification time) of every logdoctor data file under
    ``data_uri``."""
    import pyarrow.fs as pafs

    fs, root = filesystem(data_uri)
    found = []
    selector = pafs.FileSelector(root, recursive=True, allow_not_found=True)
    for info in fs.get_file_info(selector):
        if info.type != pafs.FileType.File or not JOB_FILE.match(info.base_name):
            continue
        if "/_delta_log/" in info.path or "/metadata/" in info.path[len(root) :]:
            continue
        mtime = info.mtime.timestamp() if info.mtime is not None else time.time()
        found.append((join_uri(data_uri, info.path[len(root) :]), int(info.size or 0), mtime))
    return found


def sweep(
    data_uri: str,
    referenced_names: Iterable[str],
    *,
    running_job: str | None = None,
    min_age_s: float = MIN_AGE_S,
    now: float | None = None,
) -> Orphans:
    """Remove logdoctor's data files under ``data_uri`` whose name no snapshot references
    (``referenced_names``: file names, unique by their job id and random suffix) and that are older than
    ``min_age_s``; name the younger ones. ``running_job``: this export's job id (its files are never
    touched)."""
    referenced = set(referenced_names)
    now = time.time() if now is None else now
    fs, root = filesystem(data_uri)
    removed: list[str] = []
    kept: list[str] = []
    removed_bytes = kept_bytes = 0
    youngest: float | None = None
    for path, size, mtime in job_files_in(data_uri):
        name = path.rsplit("/", 1)[-1]
        match = JOB_FILE.match(name)
        if name in referenced or (match is not None and match.group(1) == running_job):
            continue
        age = now - mtime
        if age >= min_age_s:
            fs.delete_file(f"{root}{path[len(data_uri.rstrip('/')) :]}")
            removed.append(path)
            removed_bytes += size
        else:
            kept.append(path)
            kept_bytes += size
            youngest = age if youngest is None else min(youngest, age)
    return Orphans(sorted(removed), sorted(kept), removed_bytes, kept_bytes, youngest, min_age_s)
