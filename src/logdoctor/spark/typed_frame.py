"""The ``kafka-log`` DataFrame with ``typed=true``: one topic's typed rows (or with ``typed=undecoded`` the
rows that did not decode, with their reason), planned in the planning worker.

``spark.read.format("kafka-log").option("typed", "true").option("topics", "orders").load(PATH)``: the frame's
schema is the topic's table type (:mod:`logdoctor.spark.typed`), found by the first pass over the slices in
the planning worker itself (it reads the inputs once more than an untyped frame). Several topics are one
frame only when their tables have one schema; else the read is refused with an error naming them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from logdoctor.logdir.read_options import TYPED_PLAN_OPTION, ReadOptions
from logdoctor.spark.typed import TypedBatches, TypedPlan, format_schema, undecoded_schema

_CACHE: dict[str, TypedFrame] = {}


def encode_plan(plan: TypedPlan) -> str:
    """The value of the option a typed export hands its first pass's plan to each topic's frame with
    (:data:`~logdoctor.logdir.read_options.TYPED_PLAN_OPTION`: base64 of its pickle; logdoctor's own: the
    export makes it)."""
    import base64
    import pickle

    return base64.b64encode(pickle.dumps(plan, protocol=pickle.HIGHEST_PROTOCOL)).decode("ascii")


def decode_plan(text: str) -> TypedPlan:
    import base64
    import pickle

    plan = pickle.loads(base64.b64decode(text))
    if not isinstance(plan, TypedPlan):
        raise TypeError(f"option {TYPED_PLAN_OPTION}: not a typed plan")
    return plan


@dataclass(slots=True)
class TypedFrame:
    """What a typed ``kafka-log`` frame reads: the plan, and the frame's Arrow schema."""

    plan: TypedPlan
    schema: pa.Schema
    undecoded: bool

    def rows(self, raw: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """The frame's rows of a task's raw batches."""
        splitter = TypedBatches(self.plan)
        for rb in raw:
            _, good, bad = splitter.split(rb)
            rows = bad if self.undecoded else good
            if rows is not None and rows.num_rows:
                yield pa.Table.from_batches([rows]).cast(self.schema).combine_chunks().to_batches()[0]


def typed_frame(
    paths: str, opts: ReadOptions, read_slices: Callable[..., Iterator[pa.RecordBatch]]
) -> TypedFrame:
    """The plan of a typed frame (kept per process: Spark asks for the schema, then for the reader);
    ``read_slices``: :func:`logdoctor.spark.sources.slice_reader.read_slices`, the rows every output reads."""
    from logdoctor.logdir.slices import PlanningError, plan_slices, plan_transactions, read_plan, task_groups
    from logdoctor.spark.typed import load_typed_registry, plan_topics, survey

    key = json.dumps([paths, sorted(opts.to_options().items())])
    found = _CACHE.get(key)
    if found is not None:
        return found
    given = opts.typed_plan
    if given:  # the export's first pass, done once for every topic's frame
        typed = decode_plan(given)
    else:
        plan = read_plan(paths, opts)
        loaded = load_typed_registry(list(plan.items), opts)
        slices = plan_slices(plan.refs, opts, plan_transactions(plan.refs, opts, plan.decisions))
        raw = (rb for group in task_groups(slices, opts) for rb in read_slices(group, opts))
        typed = plan_topics(survey(raw, loaded.registry), loaded.registry)
    if given and opts.topics:  # only the topics this frame reads
        from logdoctor.logdir.read_plan import topic_matcher

        wanted = topic_matcher(opts.topics)
        typed = TypedPlan(typed.registry, {t: tp for t, tp in typed.topics.items() if wanted(t)})
    undecoded = opts.undecoded
    if undecoded:
        schema = format_schema(undecoded_schema(), "spark")
    else:
        schemas = {t: format_schema(tp.schema(), "spark") for t, tp in typed.topics.items()}
        distinct = {s.to_string(): s for s in schemas.values()}
        if len(distinct) > 1:
            raise PlanningError(
                "typed: the topics "
                + ", ".join(sorted(schemas))
                + " have tables of different schemas; read one topic per frame (option topics), or export "
                "them with export --typed (one table per topic)"
            )
        schema = next(iter(distinct.values())) if distinct else format_schema(_empty_plan_schema(), "spark")
    frame = TypedFrame(typed, schema, undecoded)
    _CACHE[key] = frame
    return frame


def _empty_plan_schema() -> pa.Schema:
    from logdoctor.spark.typed import TopicPlan

    return TopicPlan("", False, False, pa.binary(), pa.binary()).schema()


def spark_schema(frame: TypedFrame) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(frame.schema)
