"""The Spark pipeline: Python Data Sources over Kafka log dirs, and the export and census jobs.

``register(spark)`` makes ``spark.read.format("kafka-log")`` (one row per record) and
``spark.read.format("kafka-log-segments")`` (one row per segment) available;
:func:`logdoctor.spark.session.get_spark` builds a local session and registers them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["get_spark", "register"]


def register(spark: Any) -> None:
    """Register the ``kafka-log`` and ``kafka-log-segments`` data sources on a SparkSession."""
    from logdoctor.spark.sources import register as _register

    _register(spark)


def get_spark(master: str | None = None, app_name: str = "logdoctor", **kwargs: Any) -> Any:
    """A local SparkSession (see :func:`logdoctor.spark.session.get_spark`) with both sources registered."""
    from logdoctor.spark.session import get_spark as _get

    return _get(master, app_name, **kwargs)
