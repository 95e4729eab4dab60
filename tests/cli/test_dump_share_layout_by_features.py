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


def _counting_replays(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from logdoctor.logdir import metadata_image

    replayed: list[str] = []
    real = metadata_image.replay

    def replay(metadata_dir):  # type: ignore[no-untyped-def]
        replayed.append(str(metadata_dir))
        return real(metadata_dir)

    monkeypatch.setattr(metadata_image, "replay", replay)
    return replayed


def test_one_dump_of_two_log_dirs_reads_each_ones_levels_once(tmp_path: Path, monkeypatch) -> None:
    """Each log dir's own levels, each read once in one call; the next call reads them again."""
    records = [share_snapshot("g", 17)]
    with_levels = share_state_log_dir(tmp_path / "a" / "kafka-logs", records, share_version=1)
    without = share_state_log_dir(tmp_path / "b" / "kafka-logs", records, share_version=None)
    replayed = _counting_replays(monkeypatch)
    args = ["dump", str(with_levels), str(without), str(with_levels), "--print-data", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    layouts = [json.loads(r)["decoded"]["layout_by"] for r in result.output.splitlines() if '"record"' in r]
    assert [("feature levels" in by) for by in layouts] == [True, False, True]
    assert len(replayed) == len(set(replayed)) == 1  # the one log dir with a metadata log, once
    assert CliRunner().invoke(app, args).exit_code == 0
    assert len(replayed) == 2  # a new dump reads the log dir's levels afresh


@pytest.mark.realworld
def test_a_kraft_log_dir_dumped_whole_replays_its_metadata_log_once(monkeypatch) -> None:
    """Every file of a real KRaft log dir (50 __consumer_offsets folders, whose decoder takes the cluster's
    levels) in one call: its metadata log replayed once, not once per segment (50 times: ~5 s more)."""
    import realworld

    log_dir = realworld.require() / "kraft-3.5-greenlemont-single"
    files = sorted(str(p) for p in log_dir.rglob("*") if p.is_file())
    replayed = _counting_replays(monkeypatch)
    result = CliRunner().invoke(app, ["dump", "-p", *files])
    assert result.exit_code == 0, result.output
    assert "decoder consumer-offsets" in result.output
    assert replayed == [str(log_dir / "__cluster_metadata-0")]
