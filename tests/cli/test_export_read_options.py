"""A bad read option is one error, in the same words, from both edges (issue 61 item 2): the ``export``
command's parameter (exit 64 before Spark starts, nothing written) and the ``kafka-log`` data source's
option of the same meaning (``spark.read.format("kafka-log").option(NAME, VALUE)``: the data source parses
its options once into :class:`~logdoctor.logdir.read_options.ReadOptions`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import logdoctor.cli.export  # noqa: F401  (registers the command)
from logdoctor.cli.app import app
from logdoctor.logdir.slices import PlanningError
from logdoctor.sample.logdir import TopicSpec, generate_log_dir
from logdoctor.spark.sources.kafka_log import KafkaLogDataSource
from logdoctor.spark.sources.kafka_log_segments import KafkaLogSegmentsDataSource

#: (the export's parameter, the data source's option, a bad value)
BAD = [
    ("--starting-offsets", "startingOffsets", "soon"),
    ("--ending-offsets", "endingOffsets", "[1]"),
    ("--isolation-level", "kafka.isolation.level", "dirty"),
    ("--upto", "upTo", "now"),
    ("--view", "view", "newest"),
    ("--decoder", "decoder", "avro"),
    ("--max-partition-bytes", "maxPartitionBytes", "lots"),
    ("--topics", "topics", "orders("),
]


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root, _ = generate_log_dir(
        tmp_path_factory.mktemp("opts") / "logs", [TopicSpec("orders", partitions=1, records_per_partition=5)]
    )
    return root


def _data_source_error(options: dict[str, str]) -> str:
    with pytest.raises(PlanningError) as err:
        KafkaLogDataSource(options).schema()
    return str(err.value)


@pytest.mark.parametrize(("flag", "option", "value"), BAD, ids=[b[1] for b in BAD])
def test_a_bad_value_is_the_same_error_from_the_command_and_the_data_source(
    log_dir: Path, tmp_path: Path, flag: str, option: str, value: str
) -> None:
    said = _data_source_error({"path": str(log_dir), option: value})
    assert option in said and value in said
    out = tmp_path / "out"
    args = ["export", str(log_dir), "--out", str(out), flag, value]
    res = CliRunner().invoke(app, args, env={"JAVA_HOME": "/nonexistent", "PATH": "/usr/bin:/bin"})
    assert res.exit_code == 64, res.output
    assert said in " ".join(res.output.split()), res.output
    assert not out.exists()  # refused before Spark started or anything was written


def test_the_segments_source_parses_its_options_once_too(log_dir: Path) -> None:
    reader = KafkaLogSegmentsDataSource({"path": str(log_dir), "checkRecords": "TRUE", "topics": "orders"})
    assert reader.reader(None).read_options.check_records
    with pytest.raises(PlanningError, match="checkRecords: expected true or false, got 'all'"):
        KafkaLogSegmentsDataSource({"path": str(log_dir), "checkRecords": "all"}).reader(None)
    with pytest.raises(PlanningError, match="topics: 'orders\\(' is neither a comma list"):
        KafkaLogSegmentsDataSource({"path": str(log_dir), "topics": "orders("}).reader(None)
