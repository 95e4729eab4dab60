"""The log dir layer: naming rules, crash-safe writes, the broker lock and the lazy model."""

from logdoctor.logdir.atomic import atomic_write, fsync_dir
from logdoctor.logdir.lock import hold_lock, is_locked, lock_holder
from logdoctor.logdir.model import (
    CheckpointRead,
    Irregular,
    LogDir,
    Orphan,
    Partition,
    Segment,
    SmallFileRead,
)
from logdoctor.logdir.names import (
    DirKind,
    FileState,
    PartitionDirName,
    SegmentFileType,
    parse_partition_dir,
    parse_segment_file,
)

__all__ = [
    "CheckpointRead",
    "DirKind",
    "FileState",
    "Irregular",
    "LogDir",
    "Orphan",
    "Partition",
    "PartitionDirName",
    "Segment",
    "SegmentFileType",
    "SmallFileRead",
    "atomic_write",
    "fsync_dir",
    "hold_lock",
    "is_locked",
    "lock_holder",
    "parse_partition_dir",
    "parse_segment_file",
]
