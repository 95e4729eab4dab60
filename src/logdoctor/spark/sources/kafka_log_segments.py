"""The Python Data Source ``kafka-log-segments``: one row per segment
(``spark.read.format("kafka-log-segments")``).

Spark runs ``partitions()`` in a planning worker (the segments in tasks: many small ones per task, a big
one alone) and ``read()`` in executor Python workers (a row each:
:func:`logdoctor.spark.sources.segment_summary.segment_summary`, with the scan's findings of the
segment's partition folder, local segments only: :mod:`logdoctor.spark.sources.segment_findings`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from logdoctor.spark.sources.inputs import SegmentPartition, _paths
from logdoctor.spark.sources.segment_findings import partition_findings
from logdoctor.spark.sources.segment_summary import not_read_row, segment_summary

if TYPE_CHECKING:
    import pyarrow as pa

    from logdoctor.logdir.refs import SegmentRef


class KafkaLogSegmentsDataSource(DataSource):
    """``spark.read.format("kafka-log-segments").load(PATHS)``: one row per segment (.log file)."""

    @classmethod
    def name(cls) -> str:
        return "kafka-log-segments"

    def schema(self) -> str:
        from logdoctor.spark.schema import segments_ddl

        return segments_ddl()

    def reader(self, schema: Any) -> DataSourceReader:
        return KafkaLogSegmentsReader(dict(self.options))


SEGMENTS_PER_TASK_BYTES = 256 * 1024 * 1024
SEGMENTS_PER_TASK = 64


def segment_groups(segs: Sequence[SegmentRef]) -> list[tuple[SegmentRef, ...]]:
    """The segments in tasks of ``kafka-log-segments``: many small segments per task, a big one alone."""
    groups: list[tuple[SegmentRef, ...]] = []
    cur: list[SegmentRef] = []
    size = 0
    for s in segs:
        if cur and (size + s.size > SEGMENTS_PER_TASK_BYTES or len(cur) >= SEGMENTS_PER_TASK):
            groups.append(tuple(cur))
            cur, size = [], 0
        cur.append(s)
        size += s.size
    if cur:
        groups.append(tuple(cur))
    return groups


class KafkaLogSegmentsReader(DataSourceReader):
    def __init__(self, options: dict[str, str]) -> None:
        from logdoctor.logdir.read_options import ReadOptions

        self.options = options
        self.read_options = ReadOptions.from_options(options)  # validated early

    def partitions(self) -> Sequence[InputPartition]:
        from logdoctor.logdir.read_plan import one_remote_copy
        from logdoctor.logdir.slices import read_plan

        plan = read_plan(_paths(self.options), self.read_options)
        segs = [s for ref in one_remote_copy(plan.refs) for s in ref.segments]
        groups = [SegmentPartition(g) for g in segment_groups(segs)]
        if plan.not_read:  # offsets the plan names as not read once: a row each (read_plan)
            groups.append(SegmentPartition(plan.not_read))  # type: ignore[arg-type]
        return groups

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        from logdoctor.logdir.read_plan import NotRead
        from logdoctor.spark.schema import segments_arrow_schema

        if partition is None or partition.value is None:
            return
        scans: dict[str, list[Any] | None] = {}
        check_records = self.read_options.check_records
        rows = []
        for s in partition.value:
            if isinstance(s, NotRead):
                rows.append(not_read_row(s))
                continue
            folder = s.storage.dirname(s.path)
            if folder not in scans:  # the scan reads local files only (module doc)
                scans[folder] = partition_findings(s.log_dir, folder) if not s.ranged else None
            rows.append(segment_summary(s, scans[folder], check_records))
        schema = segments_arrow_schema()
        yield pa.RecordBatch.from_pylist(rows, schema=schema)
