"""`logdoctor dump` of a ``__share_group_state`` segment reads the cluster's feature levels from the log dir's
``__cluster_metadata-0``: a record whose layout Kafka changed under its version (ShareSnapshotValue v0, 4.0 ->
4.1) says it was chosen by them (``layout_by``), where without a metadata log it was the one exact read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import kafka_schemas as ks
from logdoctor.cli.commands import app
from share_state_data import share_snapshot, share_state_log_dir

pytestmark = pytest.mark.skipif(not ks.available_42(), reason=ks.SKIP_REASON_42)


def _decoded(segment: Path) -> list[dict]:
    result = CliRunner().invoke(app, ["dump", str(segment), "--print-data", "--json"])
    assert result.exit_code == 0, result.output
    return [r["decoded"] for r in map(json.loads, result.output.splitlines()) if r["type"] == "record"]


def test_dump_names_the_feature_level_that_chose_the_layout(tmp_path: Path) -> None:
    records = [share_snapshot("g", 17)]
    with_levels = share_state_log_dir(tmp_path / "a" / "kafka-logs", records, share_version=1)
    without = share_state_log_dir(tmp_path / "b" / "kafka-logs", records, share_version=None)
    [chosen] = _decoded(with_levels)
    [exact] = _decoded(without)
    assert chosen["value"] == exact["value"] and chosen["value"]["start_offset"] == 17
    assert chosen["layout"] == exact["layout"] == "4.1.1/4.2.0/4.3.1/4.4.0"
    assert chosen["layout_by"] == "feature levels: share.version 1"
    assert "feature levels" not in exact["layout_by"]
