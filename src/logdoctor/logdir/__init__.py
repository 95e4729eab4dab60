"""The log dir layer: naming rules, crash-safe writes, the broker lock and the lazy model.

Public names are loaded on first use (as in :mod:`logdoctor.checks`), so that importing one module of
the layer (``logdir.files``: a `scan --deep`'s early walks, issue 35) does not import the model, the lock
and the atomic writes with it.
"""

from __future__ import annotations

from logdoctor._lazy_exports import lazy_exports

_EXPORTS = {
    "atomic_write": "logdoctor.logdir.atomic",
    "fsync_dir": "logdoctor.logdir.atomic",
    "hold_lock": "logdoctor.logdir.lock",
    "is_locked": "logdoctor.logdir.lock",
    "lock_holder": "logdoctor.logdir.lock",
    "CheckpointRead": "logdoctor.logdir.model",
    "Irregular": "logdoctor.logdir.model",
    "LogDir": "logdoctor.logdir.model",
    "Orphan": "logdoctor.logdir.model",
    "Partition": "logdoctor.logdir.model",
    "Segment": "logdoctor.logdir.model",
    "SmallFileRead": "logdoctor.logdir.model",
    "DirKind": "logdoctor.logdir.names",
    "FileState": "logdoctor.logdir.names",
    "PartitionDirName": "logdoctor.logdir.names",
    "SegmentFileType": "logdoctor.logdir.names",
    "parse_partition_dir": "logdoctor.logdir.names",
    "parse_segment_file": "logdoctor.logdir.names",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)
