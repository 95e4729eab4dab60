"""The cluster's feature levels choose between the layouts Kafka changed under one version (the 4.0 -> 4.1
share-group records), read from the broker's metadata log or bootstrap.checkpoint.

Records are written from Kafka's own JSON files (tests/kafka_schemas.py, 4.0.0 and 4.2.0); the one record
both layouts read exactly is built by hand from the same files: as 4.0's ShareSnapshotValue it is
SnapshotEpoch uint16, StateEpoch, LeaderEpoch, StartOffset 5, no batches and one unknown tagged field of 16
bytes; as 4.1's it is SnapshotEpoch int32, ..., StartOffset 0x050101, CreateTimestamp, WriteTimestamp, no
batches, no tagged field.
"""

from __future__ import annotations

import random
import struct
import types
from pathlib import Path

import pytest
from test_share_groups import _SHARE, _log_dir, _record

import kafka_schemas as ks
from logdoctor.checks.context import ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.errors import UnsupportedError
from logdoctor.formats.internal import decode_share_group_state
from logdoctor.formats.internal.layouts import ClusterFeatures
from logdoctor.logdir.metadata_image import bootstrap_features, cluster_features, replay
from logdoctor.sample.kraft import write_metadata_log, write_snapshot

pytestmark = pytest.mark.skipif(not ks.available_42(), reason=ks.SKIP_REASON_42)

# 4.0 reading: u16 1 | i32 2 | i32 3 | i64 5 | [] | 1 tagged field: tag 9, 16 bytes
# 4.1 reading: i32 0x00010000 | i32 0x00020000 | i32 0x00030000 | i64 0x050101 | i64 | i64 | [] | no tags
AMBIGUOUS = (
    struct.pack(">h", 0)
    + struct.pack(">Hiiq", 1, 2, 3, 5)
    + bytes([0x01, 0x01, 0x09, 0x10])
    + bytes(range(0x20, 0x2E))
    + bytes([0x01, 0x00])
)


def _key() -> bytes:
    return _record("ShareSnapshot", "amb", None, random.Random(1))[0]


def test_the_crafted_record_is_read_exactly_by_both_layouts() -> None:
    """The generic reader of each release's JSON file reads the bytes to their last byte."""
    for folder in (ks.SCHEMAS_42 / "_4.0.0", ks.SCHEMAS_42):
        spec = ks.Spec(ks.load_path(folder / _SHARE / "ShareSnapshotValue.json"))
        _fields, end = ks.read(spec, AMBIGUOUS, 0, 2)
        assert end == len(AMBIGUOUS)
    with pytest.raises(UnsupportedError, match="several"):
        decode_share_group_state(_key(), AMBIGUOUS)


@pytest.mark.parametrize(
    ("features", "start", "releases"),
    [
        (ClusterFeatures(metadata_version=27), 0x050101, "4.1.1/4.2.0/4.3.1/4.4.0"),
        (ClusterFeatures(metadata_version=25, share_version=1), 0x050101, "4.1.1/4.2.0/4.3.1/4.4.0"),
        (ClusterFeatures(25, 0, (25, 26)), 5, "4.0-SNAPSHOT/4.0.0"),
    ],
)
def test_an_ambiguous_record_is_decided_by_the_feature_levels(
    features: ClusterFeatures, start: int, releases: str
) -> None:
    rec = decode_share_group_state(_key(), AMBIGUOUS, features=features)
    assert rec["value"]["start_offset"] == start and rec["layout"] == releases
    assert rec["layout_by"].startswith("feature levels: ")


@pytest.mark.parametrize("features", [None, ClusterFeatures(25, 0, (25, 27)), ClusterFeatures(26, 0)])
def test_levels_that_allow_both_leave_it_undecided(features: ClusterFeatures | None) -> None:
    """A 4.1/4.2 broker among them (max level 27), or no registrations: both layouts are possible."""
    with pytest.raises(UnsupportedError, match="several"):
        decode_share_group_state(_key(), AMBIGUOUS, features=features)


def test_records_of_both_layouts_with_feature_levels_given() -> None:
    """Each layout's record under levels that name the other: read exactly, marked as against the levels
    (state kept from before an upgrade); under its own: chosen by the levels."""
    rng = random.Random(3)
    key, v41 = _record("ShareSnapshot", "g", 17, rng)
    spec40 = ks.Spec(ks.load_path(ks.SCHEMAS_42 / "_4.0.0" / _SHARE / "ShareSnapshotValue.json"))
    v40 = struct.pack(">h", 0) + ks.write(spec40, {**ks.random_value(spec40, 0, rng), "start_offset": 17}, 0)
    new, old = ClusterFeatures(metadata_version=28), ClusterFeatures(25, 0, (25,))
    for value, own, other, label in (
        (v41, new, old, "4.1.1/4.2.0/4.3.1/4.4.0"),
        (v40, old, new, "4.0-SNAPSHOT/4.0.0"),
    ):
        mine = decode_share_group_state(key, value, features=own)
        theirs = decode_share_group_state(key, value, features=other)
        assert mine["value"] == theirs["value"] and mine["value"]["start_offset"] == 17
        assert mine["layout"] == theirs["layout"] == label
        assert mine["layout_by"].startswith("feature levels")
        assert theirs["layout_by"].startswith("exact read, against the feature levels")


def _metadata(root: Path, level: int, broker_max: int, share: int | None = None) -> None:
    fleet = types.SimpleNamespace(log_dirs={1: [root]})
    recs = [{"type": "FeatureLevelRecord", "version": 0,
             "data": {"name": "metadata.version", "feature_level": level}}]
    if share is not None:
        recs.append({"type": "FeatureLevelRecord", "version": 0,
                     "data": {"name": "share.version", "feature_level": share}})
    recs.append({"type": "RegisterBrokerRecord", "version": 2, "data": {
        "broker_id": 1, "incarnation_id": "AAAAAAAAAAAAAAAAAAAAAQ", "broker_epoch": 5, "end_points": [],
        "features": [{"name": "metadata.version", "min_supported_version": 1,
                      "max_supported_version": broker_max}],
        "rack": None, "fenced": False}})
    write_metadata_log(fleet, 1, records=recs)  # type: ignore[arg-type]


def _behind(root: Path) -> list[tuple[str, int]]:
    return [(f.details["group"], f.details["offsets_never_delivered"])
            for f in scan([root], ScanOptions(), jobs=1).findings if f.code == "SHARE_GROUP_BEHIND_LOG_START"]


@pytest.mark.parametrize(
    ("level", "broker_max", "share", "expected"),
    [
        (25, 26, None, [("amb", 45)]),  # only 4.0 brokers: start offset 5, below the log start 50
        (27, 27, None, []),  # 4.1+: start offset 0x050101, past the log start
        (25, 29, 1, []),  # share.version 1: 4.1+
        (25, 29, None, []),  # undecided: not read, no finding either way
    ],
)
def test_scan_reads_the_levels_from_the_metadata_log(
    tmp_path: Path, level: int, broker_max: int, share: int | None, expected: list
) -> None:
    root = _log_dir(tmp_path, [(_key(), AMBIGUOUS)])
    _metadata(root, level, broker_max, share)
    image = replay(root / "__cluster_metadata-0")
    assert image.cluster_features() == ClusterFeatures(
        level, share or 0, (broker_max,), str(root / "__cluster_metadata-0"))
    assert _behind(root) == expected


def test_bootstrap_checkpoint_gives_the_levels_without_a_metadata_log(tmp_path: Path) -> None:
    """An empty metadata log names no metadata.version: the log dir's bootstrap.checkpoint does."""
    root = _log_dir(tmp_path, [(_key(), AMBIGUOUS)])
    write_metadata_log(types.SimpleNamespace(log_dirs={1: [root]}), 1, records=[])  # type: ignore[arg-type]
    boot = root / "bootstrap.checkpoint"
    write_snapshot(boot, [
        {"type": "FeatureLevelRecord", "version": 0,
         "data": {"name": "metadata.version", "feature_level": 28}},
        {"type": "FeatureLevelRecord", "version": 0, "data": {"name": "share.version", "feature_level": 1}},
    ])
    assert bootstrap_features(boot) == ClusterFeatures(28, 1, (), str(boot))
    assert cluster_features(root / "__cluster_metadata-0") == ClusterFeatures(28, 1, (), str(boot))
    rec = decode_share_group_state(_key(), AMBIGUOUS, features=bootstrap_features(boot))
    assert rec["layout_by"] == "feature levels: share.version 1"
    assert bootstrap_features(tmp_path / "missing") is None
