"""The ``__remote_log_metadata`` partition count from ``--server-properties`` where the KRaft metadata does
not give it (../shared/tiered has no metadata log): K:core/.../log/remote/RemoteLogManager.java configureRLMM
hands the RLMM only the keys under ``remote.log.metadata.manager.impl.prefix`` (default ``rlmm.config.``,
RemoteLogManagerConfig), so the count is ``rlmm.config.remote.log.metadata.topic.num.partitions``
(TopicBasedRemoteLogMetadataManagerConfig, default 50). The real data was written with 50: payments' events
are in partitions 16 and 21, as the partitioner gives them with 50 (with 20, payments-0 would be in 1: a
wrong count is a finding).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import realworld
from logdoctor.checks.context import ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.checks.topic_config import config_inputs, remote_log_metadata_partitions
from logdoctor.cli import commands  # noqa: F401  (registers every command on the app)
from logdoctor.cli.main import app


def _scan(tmp_path: Path, text: str | None):
    d = realworld.require_tiered() / "kafka-local" / "kafka-logs"
    inputs = None
    if text is not None:
        props = tmp_path / "server.properties"
        props.write_text(text)
        inputs = config_inputs(server_properties=props)
    return scan([d], ScanOptions(config_inputs=inputs), jobs=1)


def _invalid(report) -> list:
    return [f for f in report.findings if f.code == "REMOTE_METADATA_INVALID"]


def test_prefixed_count_from_server_properties_is_used(tmp_path: Path) -> None:
    report = _scan(tmp_path, "rlmm.config.remote.log.metadata.topic.num.partitions=20\n")
    assert report.remote is not None and report.remote.num_partitions == 20
    assert "rlmm.config.remote.log.metadata.topic.num.partitions in --server-properties" in (
        report.remote.num_partitions_source
    )
    found = _invalid(report)
    assert found and all(f.details["kind"] == "wrong-partition" for f in found)
    assert "20 metadata partitions" in found[0].message and "--server-properties" in found[0].message


def test_the_count_the_data_was_written_with_gives_no_finding(tmp_path: Path) -> None:
    report = _scan(tmp_path, "rlmm.config.remote.log.metadata.topic.num.partitions=50\n")
    assert report.remote is not None and report.remote.num_partitions == 50
    assert "--server-properties" in report.remote.num_partitions_source
    assert _invalid(report) == []


def test_a_custom_prefix_and_an_unprefixed_key(tmp_path: Path) -> None:
    """The broker's own prefix setting is followed; a bare key never reaches the RLMM, so it is ignored."""
    report = _scan(
        tmp_path,
        "remote.log.metadata.manager.impl.prefix=rlmm.\nrlmm.remote.log.metadata.topic.num.partitions=20\n",
    )
    assert report.remote.num_partitions == 20 and "rlmm.remote.log" in report.remote.num_partitions_source
    bare = _scan(tmp_path, "remote.log.metadata.topic.num.partitions=20\n")
    assert bare.remote.num_partitions == 50 and _invalid(bare) == []
    assert remote_log_metadata_partitions({"remote.log.metadata.manager.impl.prefix": "",
                                           "remote.log.metadata.topic.num.partitions": "7"}) == (
        7, "remote.log.metadata.topic.num.partitions")


def test_a_bad_count_is_a_usage_error_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"rlmm\.config\.remote\.log\.metadata\.topic\.num\.partitions"):
        remote_log_metadata_partitions({"rlmm.config.remote.log.metadata.topic.num.partitions": "zero"})
    props = tmp_path / "server.properties"
    props.write_text("rlmm.config.remote.log.metadata.topic.num.partitions=-3\n")
    d = realworld.require_tiered() / "kafka-local" / "kafka-logs"
    out = CliRunner().invoke(app, ["scan", str(d), "--jobs", "1", "--server-properties", str(props)])
    assert out.exit_code != 0 and "Traceback" not in out.output
    assert "rlmm.config.remote.log.metadata.topic.num.partitions" in out.output, out.output
