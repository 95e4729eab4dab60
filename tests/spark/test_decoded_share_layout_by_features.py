"""The data sources' ``decoded`` column (option ``decoder``) reads share-group records with the cluster's
feature levels: the read plan gives each slice of ``__consumer_offsets`` / ``__share_group_state`` its log
dir's levels (its own metadata log, else its broker's in a sibling log dir), as `dump` and `scan` use them.
Read with the planning and reading functions the Spark tasks run (no session needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import kafka_schemas as ks
from logdoctor.logdir.metadata_image import log_dir_features
from logdoctor.logdir.slices import parse_read_options, plan_slices, read_plan
from logdoctor.spark.sources.slice_reader import read_slices
from share_state_data import share_snapshot, share_state_log_dir

pytestmark = pytest.mark.skipif(not ks.available_42(), reason=ks.SKIP_REASON_42)


def _decoded(paths: list[Path]) -> list[dict]:
    options = {"decoder": "auto", "topics": "__share_group_state"}
    opts = parse_read_options(options)
    slices = plan_slices(read_plan([str(p) for p in paths], opts).refs, opts)
    return [json.loads(v) for rb in read_slices(slices, opts) for v in rb.column("decoded").to_pylist()]


def test_the_decoded_column_names_the_feature_level(tmp_path: Path) -> None:
    records = [share_snapshot("g", 17)]
    chosen = share_state_log_dir(tmp_path / "a" / "kafka-logs", records, share_version=1).parent.parent
    exact = share_state_log_dir(tmp_path / "b" / "kafka-logs", records, share_version=None).parent.parent
    [with_levels] = _decoded([chosen])
    [without] = _decoded([exact])
    assert with_levels["value"] == without["value"] and with_levels["value"]["start_offset"] == 17
    assert with_levels["layout_by"] == "feature levels: share.version 1"
    assert "feature levels" not in without["layout_by"]


def test_a_log_dir_without_the_metadata_log_takes_its_brokers(tmp_path: Path) -> None:
    first, second, other = (tmp_path / n for n in ("logs-0", "logs-1", "other"))
    share_state_log_dir(first, [share_snapshot("g", 3)], share_version=1)
    share_state_log_dir(second, [share_snapshot("h", 4)], share_version=None)
    share_state_log_dir(other, [share_snapshot("i", 5)], share_version=None)
    for d, node in ((first, 1), (second, 1), (other, 2)):
        (d / "meta.properties").write_text(f"version=1\nnode.id={node}\ncluster.id=c1\n")
    levels = log_dir_features([str(first), str(second), str(other)])
    assert set(levels) == {str(first), str(second)}
    assert levels[str(second)] == levels[str(first)] and levels[str(first)].share_version == 1
    by_group = {d["key"]["group_id"]: d["layout_by"] for d in _decoded([first, second, other])}
    assert by_group["g"] == by_group["h"] == "feature levels: share.version 1"
    assert "feature levels" not in by_group["i"]
