"""One partition folder as the scan sees it: one scandir, one stat per file, plain strings.

The scan touches 100,000s of files, so this is a lean counterpart of logdoctor.logdir.model for
the hot path (no pathlib objects, every stat taken once and shared by the permission, size and
mtime checks). File names are classified with logdoctor.logdir.names, the broker's rules.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from logdoctor.logdir.names import FileState, PartitionFileKind, SegmentFileType, classify_partition_file


@dataclass(slots=True)
class SegmentFiles:
    """A live segment: ``<base>.log`` and whichever index files exist (paths are strings)."""

    base_offset: int
    log_path: str
    size: int
    mtime_ms: int
    index_path: str | None = None
    index_size: int | None = None
    timeindex_path: str | None = None
    timeindex_size: int | None = None
    txnindex_path: str | None = None
    txnindex_size: int | None = None

    @property
    def log_name(self) -> str:
        return os.path.basename(self.log_path)


@dataclass(slots=True)
class Leftover:
    path: str
    kind: str  # deleted, cleaned, swap, index-without-log, partial-snapshot, tmp-file, unknown-file


@dataclass(slots=True)
class FolderLayout:
    files: list[tuple[str, os.stat_result]] = field(default_factory=list)  # (path, stat) of every file
    stats: dict[str, os.stat_result] = field(default_factory=dict)
    names: set[str] = field(default_factory=set)
    segments: list[SegmentFiles] = field(default_factory=list)
    leftovers: list[Leftover] = field(default_factory=list)
    producer_snapshots: list[tuple[int, str]] = field(default_factory=list)


_STATE_KIND = {FileState.DELETED: "deleted", FileState.CLEANED: "cleaned", FileState.SWAP: "swap"}


def read_layout(folder: str) -> FolderLayout:
    """List a partition folder (raises OSError when it cannot be listed)."""
    out = FolderLayout()
    groups: dict[int, dict[SegmentFileType, tuple[str, os.stat_result]]] = {}
    with os.scandir(folder) as it:
        entries = sorted((e for e in it if not e.is_dir(follow_symlinks=False)), key=lambda e: e.name)
    for e in entries:
        try:
            st = e.stat()
        except OSError:
            continue
        out.files.append((e.path, st))
        out.stats[e.path] = st
        out.names.add(e.name)
        pf = classify_partition_file(e.name)
        kind = pf.kind
        if kind is PartitionFileKind.SEGMENT_FILE:
            if pf.state is FileState.LIVE:
                groups.setdefault(pf.base_offset, {})[pf.file_type] = (e.path, st)  # type: ignore[index]
            else:
                out.leftovers.append(Leftover(e.path, _STATE_KIND[pf.state]))
        elif kind is PartitionFileKind.PRODUCER_SNAPSHOT:
            if pf.state is FileState.LIVE:
                out.producer_snapshots.append((pf.base_offset, e.path))  # type: ignore[arg-type]
            else:
                out.leftovers.append(Leftover(e.path, "deleted"))
        elif kind is PartitionFileKind.KRAFT_SNAPSHOT:
            if pf.state is not FileState.LIVE:
                out.leftovers.append(Leftover(e.path, "deleted"))
        elif kind is PartitionFileKind.KRAFT_SNAPSHOT_PARTIAL:
            out.leftovers.append(Leftover(e.path, "partial-snapshot"))
        elif kind is PartitionFileKind.TMP:
            out.leftovers.append(Leftover(e.path, "tmp-file"))
        elif kind is PartitionFileKind.UNKNOWN:
            out.leftovers.append(Leftover(e.path, "unknown-file"))
    for base in sorted(groups):
        g = groups[base]
        log = g.get(SegmentFileType.LOG)
        if log is None:
            # LogLoader deletes index files that have no .log ("Found an orphaned index file")
            out.leftovers.extend(Leftover(p, "index-without-log") for p, _st in g.values())
            continue
        seg = SegmentFiles(base, log[0], log[1].st_size, log[1].st_mtime_ns // 1_000_000)
        for t, attr in (
            (SegmentFileType.INDEX, "index"),
            (SegmentFileType.TIMEINDEX, "timeindex"),
            (SegmentFileType.TXNINDEX, "txnindex"),
        ):
            f = g.get(t)
            if f is not None:
                setattr(seg, f"{attr}_path", f[0])
                setattr(seg, f"{attr}_size", f[1].st_size)
        out.segments.append(seg)
    out.leftovers.sort(key=lambda x: x.path)
    out.producer_snapshots.sort()
    return out
