"""What the readers of both sources take in: the InputPartitions Spark hands their tasks (planned slices,
or groups of segments), and the paths a ``load()`` names.

Spark pickles an InputPartition from the planning worker to the task's Python worker: these carry only
small picklable dataclasses (:mod:`logdoctor.logdir.refs`, the slices of :mod:`logdoctor.logdir.slices`).
"""

from __future__ import annotations

from pyspark.sql.datasource import InputPartition


class SlicePartition(InputPartition):
    """An InputPartition carrying planned SegmentSlices (``value``: a tuple), read in order (picklable)."""


class SegmentPartition(InputPartition):
    """An InputPartition carrying a group of SegmentRefs (``value``: a tuple) for the segments source."""


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
