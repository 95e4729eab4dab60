"""What the readers of both sources take in: the InputPartitions Spark hands their tasks (planned slices,
or groups of segments), and the paths a ``load()`` names.

Spark pickles an InputPartition from the planning worker to the task's Python worker: these carry only
small picklable dataclasses (:mod:`logdoctor.logdir.refs`, the slices of :mod:`logdoctor.logdir.slices`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql.datasource import InputPartition

if TYPE_CHECKING:
    from logdoctor.logdir.refs import SegmentRef
    from logdoctor.logdir.slices import SegmentSlice


class SlicePartition(InputPartition):
    """An InputPartition carrying planned SegmentSlices, read in order (picklable)."""

    def __init__(self, value: tuple[SegmentSlice, ...]) -> None:
        super().__init__(value)


class SegmentPartition(InputPartition):
    """An InputPartition carrying a group of SegmentRefs for the segments source."""

    def __init__(self, value: tuple[SegmentRef, ...]) -> None:
        super().__init__(value)


def _paths(options: dict[str, str]) -> str:
    # load(path) puts it in "path"; load([a, b]) in "paths" as a JSON list
    import json

    if options.get("paths"):
        try:
            items = json.loads(options["paths"])
            if isinstance(items, list):
                extra = [options["path"]] if options.get("path") else []
                return ",".join([*extra, *map(str, items)])
        except ValueError:
            pass
        return str(options["paths"])
    return str(options.get("path", ""))
