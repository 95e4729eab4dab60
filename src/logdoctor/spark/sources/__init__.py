"""The Python Data Sources ``kafka-log`` (one row per record) and ``kafka-log-segments`` (per segment).

Spark runs ``partitions()`` in a planning worker and ``read()`` in executor Python workers, so
everything here pickles (small dataclasses: the model's refs, :mod:`logdoctor.logdir.refs`, and the
slices of :mod:`logdoctor.logdir.slices`) and the heavy imports happen inside the methods. Readers
yield ``pyarrow.RecordBatch`` objects whose types are
exactly the ones of :mod:`logdoctor.spark.schema`.

A bad batch fails nothing. A batch whose CRC does not match where the framing goes on intact after it
(the next batch where its size says, or the segment's end) is left out alone and the rows go on
(``kafka-log-segments``: column ``crc_mismatches``; :func:`logdoctor.formats.records.skip_crc_mismatches`);
where the framing breaks (a torn or zero-filled tail, an impossible size or magic) the rows of a segment
stop at the last valid batch, as the broker's recovery would truncate there; ``kafka-log-segments``
reports where and why. A batch whose header and CRC are valid but whose records do not decode (bad
varint lengths, a payload that is not its codec's) is one the broker keeps (``LogSegment.recover``
checks CRCs, it does not decode records): its rows are left out and the rows go on after it;
``kafka-log-segments`` with the option ``checkRecords`` lists such batches (column ``undecodable``),
and ``export`` names them.

Paths may be URIs (``s3://``, ``gs://``, ``hdfs://``, ``abfs://``; :mod:`logdoctor.logdir.storage`,
options ``s3.region`` and ``s3.endpoint``). A remote segment is read by byte ranges of the planned
slice only, in chunks cut at batch boundaries; a remote file that cannot be read fails the task (Spark
retries it) instead of giving no rows. ``kafka-log-segments`` summarizes remote segments from their
bytes as it does local ones, but its ``findings`` there hold only what reading the segment finds
(``LOG_CORRUPT``): the scan's checks of indexes, checkpoints and snapshots read local files only.

Each source, its reader and what they share in a module of its own: :mod:`.kafka_log` and
:mod:`.kafka_log_segments` (the sources and their readers), :mod:`.inputs` (their InputPartitions and
paths), :mod:`.slice_reader` (a slice's records as rows, the reader every output uses),
:mod:`.records_arrow` (those rows in Arrow), :mod:`.batch_decode` (batches to record columns, bad ones
left out), :mod:`.columns` (row values both share), :mod:`.remote_gaps` (what a remote segment not read
whole says), :mod:`.segment_summary` and :mod:`.segment_findings` (a segment's row). This module is the
entry point that registers them; importing any of them runs :func:`~logdoctor.spark.daemon.install_in_worker`.
"""

from __future__ import annotations

from typing import Any

from logdoctor.spark.daemon import install_in_worker

install_in_worker()  # in a Spark planning or task worker: cheap importlib.invalidate_caches()


def register(spark: Any) -> None:
    """Register the ``kafka-log`` and ``kafka-log-segments`` data sources on a SparkSession."""
    from logdoctor.spark.sources.kafka_log import KafkaLogDataSource
    from logdoctor.spark.sources.kafka_log_segments import KafkaLogSegmentsDataSource

    spark.dataSource.register(KafkaLogDataSource)
    spark.dataSource.register(KafkaLogSegmentsDataSource)
