"""The record-reading options are declared once (logdoctor.cli.record_options, issue 72): a command that
reads records takes them as one ``RecordReadArgs`` parameter and gets exactly ``export``'s (names,
defaults, help, metavars), packed into the object with the values parsed; and the same checks (exit 64
for a bad value, in the data sources' words; 66 for a missing input)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import pytest
import typer
import typer.main
from typer.testing import CliRunner

import logdoctor.cli.export  # noqa: F401  (registers the command)
from logdoctor.cli.app import app
from logdoctor.cli.record_options import (
    RECORD_READ_OPTIONS,
    RecordRead,
    RecordReadArgs,
    plan_records,
    reads_records,
    record_read_options,
)
from logdoctor.logdir.read_errors import DiscoveryError
from logdoctor.sample.logdir import TopicSpec, generate_log_dir

#: what makes two click parameters the same option to an operator
_SAME = (
    "name", "opts", "secondary_opts", "type", "required", "nargs", "multiple", "default", "envvar", "help",
    "metavar", "is_flag", "flag_value", "count", "hidden", "show_default", "param_type_name",
)  # fmt: skip

#: export's own options: what it writes and how (none of them is a read option)
_EXPORT_OWN = {
    "out", "fmt", "mode", "partition_by", "decoder", "writer", "typed", "schemas", "placeholder", "json_out",
    "catalog", "table_name", "partition_by_day",
}  # fmt: skip


def _params(command: Any) -> dict[str, dict[str, str]]:
    return {p.name: {k: repr(getattr(p, k, None)) for k in _SAME} for p in command.params if p.name}


def _export() -> Any:
    return typer.main.get_command(app).commands["export"]  # type: ignore[attr-defined]


def _one_command(func: Any) -> Any:
    """``func`` as the one command of a throwaway app (typer makes it the app itself)."""
    tiny = typer.Typer(add_completion=False)
    tiny.command()(func)
    return typer.main.get_command(tiny)


#: what a throwaway command was given, per call
_GOT: list[RecordReadArgs] = []


@reads_records
def _reader(
    read: RecordReadArgs,
    bootstrap_server: Annotated[str, typer.Option("--bootstrap-server", metavar="HOST:PORT")] = "x:9092",
) -> None:
    """Read records (a stand-in for the next command that reads them)."""
    _GOT.append(read)


def _invoke(func: Any, *args: str) -> tuple[Any, RecordReadArgs | None]:
    tiny = typer.Typer(add_completion=False)
    tiny.command()(func)
    _GOT.clear()
    res = CliRunner().invoke(tiny, list(args), env={"JAVA_HOME": "/nonexistent", "PATH": "/usr/bin:/bin"})
    return res, (_GOT[-1] if _GOT else None)


def test_a_command_declared_with_the_one_parameter_has_exactly_exports_read_options() -> None:
    theirs = _params(_export())
    ours = _params(_one_command(_reader))
    assert set(RECORD_READ_OPTIONS) <= set(theirs)
    assert set(ours) == {*RECORD_READ_OPTIONS, "bootstrap_server"}
    for name in RECORD_READ_OPTIONS:
        assert ours[name] == theirs[name], name
    # the rest of export's options are its output's, never a read option it declares apart
    assert set(theirs) - set(RECORD_READ_OPTIONS) == _EXPORT_OWN
    # in the order of the declaration (export places them among its own: its --help as it always was)
    order = [p.name for p in _export().params if p.name in RECORD_READ_OPTIONS]
    assert order == list(RECORD_READ_OPTIONS)


def test_the_read_options_stand_where_the_parameter_stands() -> None:
    def cmd(
        first: Annotated[str, typer.Option("--first")],
        read: RecordReadArgs,
        last: Annotated[bool, typer.Option("--last")] = False,
    ) -> None:
        """A command."""

    names = [p.name for p in _one_command(reads_records(cmd)).params]
    assert names == ["first", *RECORD_READ_OPTIONS, "last"]
    order = ["last", *RECORD_READ_OPTIONS, "first"]
    assert [p.name for p in _one_command(reads_records(help_order=order)(cmd)).params] == order


def test_the_command_gets_one_object_with_the_values_parsed() -> None:
    res, got = _invoke(
        _reader, "a", "b/*", "--topics", "orders,payments", "--starting-offsets", "5", "--ending-offsets",
        '{"orders":{"0":9}}', "--starting-timestamp", "100", "--ending-timestamp", "200", "--include-control",
        "--isolation-level", "read_uncommitted", "--upto", "high-watermark", "--view", "latest",
        "--include-internal", "--max-partition-bytes", "64m", "--remote-storage", "s3://b/tier",
        "--remote-layout", "aiven", "--remote-private-key", "k=/key.pem", "--master", "local[2]",
        "--conf", "spark.a=1", "--conf", "spark.b=2", "--remote", "sc://h:15002", "--keep-cache",
        "--max-read-rate", "20m", "--bootstrap-server", "h:9092",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert got == RecordReadArgs(
        paths=("a", "b/*"),
        master="local[2]",
        conf=("spark.a=1", "spark.b=2"),
        remote="sc://h:15002",
        topics="orders,payments",
        starting_offsets="5",
        ending_offsets='{"orders":{"0":9}}',
        starting_timestamp=100,
        ending_timestamp=200,
        include_control=True,
        isolation_level="read_uncommitted",
        upto="high-watermark",
        view="latest",
        include_internal=True,
        max_partition_bytes="64m",
        remote_storage="s3://b/tier",
        remote_layout="aiven",
        remote_private_key="k=/key.pem",
        keep_cache=True,
        max_read_rate="20m",
    )


def test_the_defaults_are_exports() -> None:
    res, got = _invoke(_reader, "a")
    assert res.exit_code == 0, res.output
    assert got == RecordReadArgs(paths=("a",))
    assert (got.isolation_level, got.upto, got.view, got.conf) == (
        "read_committed",
        "log-end",
        "history",
        None,
    )
    res, _ = _invoke(_reader)
    assert res.exit_code == 2 and "Missing argument" in res.output  # the inputs are required, as for export


def test_the_decorator_refuses_a_command_it_cannot_serve() -> None:
    def without(x: Annotated[str, typer.Option("--x")] = "") -> None: ...

    def clashing(read: RecordReadArgs, topics: Annotated[str, typer.Option("--t")] = "") -> None: ...

    def fine(read: RecordReadArgs, x: Annotated[str, typer.Option("--x")] = "") -> None: ...

    with pytest.raises(TypeError, match="one parameter annotated RecordReadArgs"):
        reads_records(without)
    with pytest.raises(TypeError, match="topics are record read options"):
        reads_records(clashing)
    with pytest.raises(TypeError, match=r"missing \['x'\]"):
        reads_records(help_order=RECORD_READ_OPTIONS)(fine)


def test_the_read_options_are_read_as_the_data_sources_read_them() -> None:
    args = RecordReadArgs(paths=("a",), topics="orders", starting_offsets="5", view="latest", keep_cache=True)
    options = record_read_options(args, task_read_rate=1000, extra={"decoder": "auto"})
    assert (options.topics, options.view, options.keep_cache, options.max_read_rate) == (
        "orders",
        "latest",
        True,
        1000,
    )
    assert options.starting_offsets.text() == "5" and options.decoder == "auto"
    with pytest.raises(DiscoveryError, match="upTo"):
        record_read_options(RecordReadArgs(paths=("a",), upto="now"))
    with pytest.raises(TypeError, match="record read options"):
        record_read_options(
            args, extra={"TOPICS": "x"}
        )  # the command's own are its own, never a shared one's


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root, _ = generate_log_dir(
        tmp_path_factory.mktemp("recs") / "logs", [TopicSpec("orders", partitions=2, records_per_partition=5)]
    )
    return root


_PLANNED: list[RecordRead] = []


@reads_records
def _planner(read: RecordReadArgs) -> None:
    """Plan a read as every command that reads records does."""
    _PLANNED.append(plan_records(read, verb="replayed"))


def test_plan_records_checks_and_plans_as_export_does(log_dir: Path, tmp_path: Path) -> None:
    _PLANNED.clear()
    res, _ = _invoke(_planner, str(log_dir), "--topics", "orders", "--ending-offsets", "3")
    assert res.exit_code == 0, res.output
    [planned] = _PLANNED
    assert sorted((r.topic, r.partition) for r in planned.plan.refs) == [("orders", 0), ("orders", 1)]
    assert planned.options.ending_offsets.text() == "3" and planned.paths == [str(log_dir)]
    assert planned.confs == {} and planned.not_read == () and planned.denied == ()
    # the same exits as export's, in the same words
    for flag, value, said in [
        ("--isolation-level", "dirty", "kafka.isolation.level"),
        ("--conf", "novalue", "--conf expects key=value"),
        ("--max-read-rate", "fast", "--max-read-rate"),
    ]:
        res, _ = _invoke(_planner, str(log_dir), flag, value)
        assert res.exit_code == 64, (flag, res.output)
        assert said in res.output and value in res.output
        ex = CliRunner().invoke(
            app,
            ["export", str(log_dir), "--out", str(tmp_path / "o"), flag, value],
            env={"PATH": "/usr/bin:/bin"},
        )
        assert ex.exit_code == 64 and " ".join(ex.output.split()) == " ".join(res.output.split())
    res, _ = _invoke(_planner, str(tmp_path / "nothing-here"))
    assert res.exit_code == 66, res.output
