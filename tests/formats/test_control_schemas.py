"""KRaft control records (LeaderChangeMessage, SnapshotHeader/Footer, KRaftVersion, Voters) of every real
metadata log, snapshot and bootstrap.checkpoint: our parser (formats.control) against the reader driven by
Kafka's JSON definitions (../shared/kafka-schemas/clients)."""

from __future__ import annotations

import base64
import dataclasses
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import kafka_schemas as ks
import realworld
from logdoctor.formats.control import parse_control_record
from logdoctor.formats.records import iter_batches

NAMES = {
    2: "LeaderChangeMessage",
    3: "SnapshotHeaderRecord",
    4: "SnapshotFooterRecord",
    5: "KRaftVersionRecord",
    6: "VotersRecord",
}


def _plain(x: Any) -> Any:
    if dataclasses.is_dataclass(x):
        return {k: _plain(v) for k, v in dataclasses.asdict(x).items() if k != "tagged_fields"}
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items() if k != "tagged_fields"}
    if isinstance(x, list | tuple):
        return [_plain(v) for v in x]
    if isinstance(x, uuid.UUID):
        return base64.urlsafe_b64encode(x.bytes).decode().rstrip("=")
    return x


def _same(ours: Any, theirs: Any) -> bool:
    """Equal, where ours may carry a field of a later version (not in these files) left as None."""
    if isinstance(theirs, dict) and isinstance(ours, dict):
        extra = set(ours) - set(theirs)
        return all(ours[k] is None for k in extra) and all(
            k in ours and _same(ours[k], v) for k, v in theirs.items()
        )
    if isinstance(theirs, list) and isinstance(ours, list):
        return len(ours) == len(theirs) and all(_same(a, b) for a, b in zip(ours, theirs, strict=True))
    return ours == theirs


def _dirs() -> list:
    if not realworld.available():
        return realworld.params([])
    return [
        pytest.param(realworld.REALWORLD / e["name"], id=e["name"])
        for e in realworld.manifest()["entries"]
        if e["has"]["__cluster_metadata_data"]
    ]


@pytest.mark.parametrize("log_dir", _dirs())
def test_control_records_agree_with_the_schemas(log_dir: Path) -> None:
    ks.require()
    mdir = log_dir / "__cluster_metadata-0"
    files = (
        sorted(mdir.glob("*.log"))
        + sorted(mdir.glob("*.checkpoint"))
        + sorted(log_dir.glob("bootstrap.checkpoint"))
    )
    seen: Counter = Counter()
    for f in files:
        for b in iter_batches(f.read_bytes()):
            if not b.is_control:
                continue
            for r in b.records():
                ctl = parse_control_record(r.key, r.value)
                if ctl.type_id not in NAMES:
                    continue
                spec = ks.Spec(ks.load(f"clients/{NAMES[ctl.type_id]}.json"))
                value = bytes(r.value)
                theirs, end = ks.read(spec, value, int.from_bytes(value[:2], "big", signed=True))
                assert end == len(value)
                assert _same(_plain(ctl.value), theirs), (f, r.offset, theirs)
                seen[NAMES[ctl.type_id]] += 1
    assert seen, "no control record"
