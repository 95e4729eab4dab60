"""The Python Data Source ``kafka-log``: one row per record (``spark.read.format("kafka-log")``).

Spark runs ``partitions()`` in a planning worker and ``read()`` in executor Python workers: the reader
pickles (its options and their parsed form), the heavy imports happen inside the methods, and the rows
are those of :func:`logdoctor.spark.sources.slice_reader.read_slices`, as every output reads them, in the
types of :mod:`logdoctor.spark.schema` (with option ``typed``, one topic's typed rows:
:mod:`logdoctor.spark.typed_frame`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from logdoctor.spark.sources.inputs import SlicePartition, _paths
from logdoctor.spark.sources.slice_reader import read_slices

if TYPE_CHECKING:
    import pyarrow as pa


class KafkaLogDataSource(DataSource):
    """``spark.read.format("kafka-log").load(PATHS)``: the records of Kafka log segments on disk."""

    @classmethod
    def name(cls) -> str:
        return "kafka-log"

    def schema(self) -> Any:
        from logdoctor.logdir.read_options import ReadOptions
        from logdoctor.spark.schema import records_ddl

        opts = ReadOptions.from_options(self.options)
        if opts.view == "cdc":
            from logdoctor.spark.planning import PlanningError

            raise PlanningError("view cdc is an export of tables, not a frame: logdoctor export --view cdc")
        if opts.typed:  # one topic's typed rows (logdoctor.spark.typed_frame)
            from logdoctor.spark.typed_frame import spark_schema, typed_frame

            return spark_schema(typed_frame(_paths(self.options), opts, read_slices))
        return records_ddl(opts.decoded)

    def reader(self, schema: Any) -> DataSourceReader:
        return KafkaLogReader(dict(self.options))


class KafkaLogReader(DataSourceReader):
    def __init__(self, options: dict[str, str]) -> None:
        from logdoctor.logdir.read_options import ReadOptions

        self.options = options
        self.read_options = ReadOptions.from_options(options)
        self.typed_frame: Any = None
        if self.read_options.typed:  # planned here, in the planning worker; pickled to the tasks with it
            from logdoctor.spark.typed_frame import typed_frame

            self.typed_frame = typed_frame(_paths(options), self.read_options, read_slices)

    def partitions(self) -> Sequence[InputPartition]:
        from logdoctor.spark.planning import plan_slices, plan_transactions, read_plan, task_groups

        opts = self.read_options
        plan = read_plan(_paths(self.options), opts)
        slices = plan_slices(plan.refs, opts, plan_transactions(plan.refs, opts, plan.decisions))
        return [SlicePartition(g) for g in task_groups(slices, opts)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if partition is None or partition.value is None:  # no segment at all
            return
        rows = read_slices(partition.value, self.read_options)
        if self.typed_frame is not None:
            yield from self.typed_frame.rows(rows)
            return
        yield from rows
