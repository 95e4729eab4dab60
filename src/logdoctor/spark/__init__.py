"""The Spark pipeline: Python Data Sources over Kafka log dirs, and the export and census jobs.

``register(spark)`` makes ``spark.read.format("kafka-log")`` (one row per record) and
``spark.read.format("kafka-log-segments")`` (one row per segment) available;
:func:`logdoctor.spark.session.get_spark` builds a local session and registers them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["register"]


def register(spark: Any) -> None:
    """Register the ``kafka-log`` and ``kafka-log-segments`` data sources on a SparkSession."""
    from logdoctor.spark.sources import register as _register

    _register(spark)
