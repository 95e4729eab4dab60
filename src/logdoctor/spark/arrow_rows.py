"""Rows made by Python code on the executors, sent to and from the JVM as Arrow record batches
(``DataFrame.mapInArrow``): a batch of rows per call, none pickled one by one (``rdd.map``), and the frame
stays a DataFrame, planned with the query it is part of."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

#: rows per Arrow batch sent to the JVM (bounds a Python worker's memory)
BATCH_ROWS = 65_536


def arrow_batches(rows: Iterator[tuple[Any, ...]], schema: Any) -> Iterator[Any]:
    """``rows`` (tuples in ``schema``'s column order; structs as tuples) as Arrow record batches of at most
    BATCH_ROWS rows."""
    import pyarrow as pa

    while chunk := list(itertools.islice(rows, BATCH_ROWS)):
        cols = zip(*chunk, strict=True)
        yield pa.RecordBatch.from_arrays(
            [pa.array(c, f.type) for c, f in zip(cols, schema, strict=True)], schema=schema
        )


def map_rows(frame: Any, make: Callable[[dict[str, Any]], tuple[Any, ...]], ddl: str) -> Any:
    """``frame``'s rows, each made into a row of ``ddl`` by ``make`` (its row as a dict), on the executors in
    Arrow batches: a DataFrame of ``ddl``."""
    from pyspark.sql.pandas.types import to_arrow_schema

    schema = to_arrow_schema(frame.sparkSession.createDataFrame([], ddl).schema)

    def made(batches: Iterator[Any]) -> Iterator[Any]:
        rows = (make(r) for b in batches for r in b.to_pylist())
        yield from arrow_batches(rows, schema)

    return frame.mapInArrow(made, ddl)
