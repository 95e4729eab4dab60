"""``export --typed`` from every input: ../shared/typed on S3 (moto's server), ``--view latest`` (a
compacted topic as a typed table: one row per key), and ``--schemas`` naming the ``_schemas`` partition
kept elsewhere while the inputs are only the data topics' partition folders. Each compares the typed
tables with facts/records.jsonl (decoded by the Apache avro package, protoc-compiled classes and json +
jsonschema, not by the project) through tests/typed_facts.py."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from test_typed_export import SIDE, check_export, check_topic_table, read_parquet_table

import typed_facts as tf
from logdoctor.spark.export import run_export

pytestmark = [pytest.mark.realworld, pytest.mark.spark]


def test_inputs_on_s3(spark, s3, tmp_path) -> None:
    uri = s3.upload(tf.logs(), "typed/kafka-logs")
    out = tmp_path / "out"
    result = run_export(spark, [uri], str(out), options={"typed": "true"})
    check_export(out, read_parquet_table)
    assert result.typed.undecoded == 15


def _last_per_key(topic: str) -> dict[tuple[int, str], dict[str, Any]]:
    """The facts' last committed record of each key of each partition of ``topic``."""
    last: dict[tuple[int, str], dict[str, Any]] = {}
    for fact in tf.data_records(topic):
        if not fact["aborted"]:
            last[(fact["partition"], json.dumps(fact["key_decoded"], sort_keys=True))] = fact
    return last


def test_view_latest_typed(spark, tmp_path) -> None:
    """One row per key: the key's last record by the facts, its value decoded as there; a key whose last
    record is a tombstone has no row; one whose last record does not decode is in the side table only."""
    out = tmp_path / "out"
    run_export(spark, [str(tf.logs())], str(out), options={"typed": "true", "view": "latest"})
    side_table = read_parquet_table(out / SIDE).to_pylist()
    side = Counter((r["topic"], r["partition"], r["offset"]) for r in side_table)
    checked = 0
    for topic in tf.topics():
        table = read_parquet_table(out / topic)
        last = _last_per_key(topic)
        rows = table.to_pylist()
        keys = [
            (r["kafka"]["partition"], json.dumps(tf.key_value(r, table.schema), sort_keys=True)) for r in rows
        ]
        assert len(keys) == len(set(keys)), f"{topic}: a key in two rows"
        want = {k: f for k, f in last.items() if f["decode_status"] in ("decoded", "decoded_deleted_schema")}
        assert set(keys) == set(want), (topic, sorted(set(keys) ^ set(want))[:5])
        for row, key in zip(rows, keys, strict=True):
            fact = want[key]
            assert row["kafka"]["offset"] == fact["offset"], (topic, key)
            spread = [c for c in table.column_names if c != "kafka"] != ["value"]
            fields = (
                list(fact["value_decoded"]) if isinstance(fact["value_decoded"], dict) and spread else None
            )
            assert tf.row_value(row, table.schema, fields) == fact["value_decoded"], (topic, key)
            checked += 1
        for fact in last.values():
            if fact["decode_status"] == "side_table":
                assert side.pop((topic, fact["partition"], fact["offset"]), 0) == 1, (topic, fact["offset"])
    assert not side, f"side-table rows that are no key's last record: {sorted(side)[:5]}"
    assert checked > 1000


def test_schemas_from_another_place(spark, tmp_path) -> None:
    """The inputs are the data topics' partition folders only (no _schemas among them); --schemas names a
    copy of the _schemas partition kept elsewhere, under another topic name."""
    store = tmp_path / "elsewhere" / "registry_backup-0"
    shutil.copytree(tf.logs() / "_schemas-0", store)
    topics = ("orders", "payments", "mixed")
    inputs = sorted(str(p) for p in tf.logs().iterdir() if p.is_dir() and p.name.rsplit("-", 1)[0] in topics)
    assert len(inputs) == 4
    out = tmp_path / "out"
    result = run_export(
        spark, inputs, str(out), options={"typed": "true", "schemas": json.dumps([str(store)])}
    )
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == sorted([*topics, SIDE])
    side = {(r["topic"], r["partition"], r["offset"]): r for r in read_parquet_table(out / SIDE).to_pylist()}
    for topic in topics:
        check_topic_table(topic, read_parquet_table(out / topic), side, committed=True)
    assert not side
    assert result.typed.undecoded == 15
    # without --schemas the same inputs name ids no registry read has: every framed value to the side table
    bare = tmp_path / "bare"
    run_export(spark, inputs, str(bare), options={"typed": "true"})
    reasons = Counter(r["reason"] for r in read_parquet_table(bare / SIDE).to_pylist())
    assert reasons["unknown_schema_id"] >= len(tf.data_records("orders")) + len(tf.data_records("payments"))


def _tier_first_segment(logs: Path, store: Path, topic: str, partition: int) -> int:
    """Tier the first segment of ``topic``-``partition`` of the log dir copy ``logs`` as Kafka's
    LocalTieredStorage leaves it (sample.remote_tier's layout: the segment's files under ``store``, its
    COPY_SEGMENT_STARTED / FINISHED events in the ``__remote_log_metadata`` partition of the log dir, the
    local copy deleted by local retention); returns the tiered segment's next offset."""
    from logdoctor.formats.checkpoint import new_leader_epoch_checkpoint, write_leader_epoch_checkpoint
    from logdoctor.formats.partition_metadata import parse_partition_metadata
    from logdoctor.formats.records import iter_batches
    from logdoctor.logdir.remote_metadata import SegmentState, TopicIdPartition, metadata_partition_for
    from logdoctor.sample.remote_tier import (
        MetadataEvent,
        metadata_batches,
        segment_metadata,
        segment_update,
        write_local_tiered_segment,
    )

    folder = logs / f"{topic}-{partition}"
    topic_id = parse_partition_metadata((folder / "partition.metadata").read_bytes()).topic_id
    tip = TopicIdPartition(topic_id, topic, partition)
    log = folder / f"{0:020d}.log"
    batches = list(iter_batches(log.read_bytes()))
    end = batches[-1].last_offset + 1
    files = {s: (folder / f"{0:020d}.{s}").read_bytes() for s in ("log", "index", "timeindex")}
    files["snapshot"] = (folder / f"{end:020d}.snapshot").read_bytes()
    files["leader_epoch_checkpoint"] = write_leader_epoch_checkpoint(new_leader_epoch_checkpoint([(0, 0)]))
    seg_id = "AAAAAAAAAAAAAAAAAAAAAQ"
    write_local_tiered_segment(store / "kafka-tiered-storage", tip, seg_id, 0, files)
    t = max(b.max_timestamp for b in batches) + 100
    kw = {"broker_id": 1, "event_timestamp_ms": t}
    size = len(files["log"])
    started = segment_metadata(tip, seg_id, 0, end - 1, max_timestamp_ms=t - 100, leader_epochs=[(0, 0)],
                               size=size, **kw)  # fmt: skip
    finished = segment_update(tip, seg_id, SegmentState.COPY_SEGMENT_FINISHED, **kw)
    events = [MetadataEvent(started, t), MetadataEvent(finished, t)]
    meta = logs / f"__remote_log_metadata-{metadata_partition_for(topic_id, partition)}"
    meta.mkdir()
    (meta / f"{0:020d}.log").write_bytes(metadata_batches(events, base_offset=0))
    for s in ("log", "index", "timeindex"):
        (folder / f"{0:020d}.{s}").unlink()
    return end


def test_remote_tier(spark, tmp_path) -> None:
    """``orders``-1's first segment in the remote tier (the typed set's log dir, tiered here): the table
    holds every record of the facts, read from the remote tier and the local log."""
    logs = tmp_path / "kafka-logs"
    shutil.copytree(tf.logs(), logs)
    for p in logs.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    store = tmp_path / "remote"
    tiered_end = _tier_first_segment(logs, store, "orders", 1)
    assert tiered_end > 0 and not (logs / "orders-1" / f"{0:020d}.log").exists()
    out = tmp_path / "out"
    options = {"typed": "true", "remoteStorage": str(store), "topics": "orders"}
    run_export(spark, [str(logs)], str(out), options=options)
    table = read_parquet_table(out / "orders")
    assert not list((out / SIDE).glob("*.parquet"))  # orders: every record decodes
    check_topic_table("orders", table, {}, committed=True)
    rows = table.to_pylist()
    remote = [r for r in rows if r["kafka"]["partition"] == 1 and r["kafka"]["offset"] < tiered_end]
    assert len(remote) == tiered_end
    assert {r["kafka"]["log_dir"] for r in remote} == {str(store)}
