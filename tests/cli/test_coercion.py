"""logdoctor.cli.coercion gives every parameter of every command typer's own value or error, and spares
a `scan` its pydantic import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer._click import Context
from typer._coercion import build_runtime_param

from logdoctor.cli import registry
from logdoctor.cli.app import app
from logdoctor.cli.coercion import LazyRuntimeParam, install

VALUES: tuple[Any, ...] = (
    None, True, False, 0, 1, 4096, -1, "0", "1", "7", "4096", "-1", "+3", " 5", "05", "1_000", "2.0",
    "x", "", "-", ".", "/tmp", "/no/such/dir", "a\udcffb", Path("/tmp"), Path("out/demo"),
    ("/tmp", "rel/dir"), ["a", "b"], ("/tmp", "a\udcffb"), ("x", "0"), (), "auto", "none",
    "12345678901234567890123",
)  # fmt: skip


def _outcome(runtime: Any, value: Any, param: Any, ctx: Context) -> tuple[str, Any]:
    try:
        return "value", runtime.coerce(value, param=param, ctx=ctx)
    except Exception as e:  # the error is part of the outcome compared
        return type(e).__name__, str(e.format_message() if hasattr(e, "format_message") else e)


def _params() -> list[tuple[Any, Any]]:
    registry.load_all()
    group = typer.main.get_command(app)
    out = [(group, p) for p in group.get_params(Context(group))]
    for command in group.commands.values():  # type: ignore[attr-defined]
        out += [(command, p) for p in command.get_params(Context(command))]
    return out


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_same_value_or_error_as_typer(value: Any) -> None:
    for command, param in _params():
        ctx = Context(command)
        real = build_runtime_param(param.type_descriptor)
        param._runtime_param = LazyRuntimeParam()
        lazy = param._runtime_param
        got, want = _outcome(lazy, value, param, ctx), _outcome(real, value, param, ctx)
        assert got == want, (command.name, param.name, value)
        assert type(got[1]) is type(want[1]), (command.name, param.name, value)
        if isinstance(want[1], list):
            assert [type(v) for v in got[1]] == [type(v) for v in want[1]]


def test_install_leaves_built_params_alone() -> None:
    _, param = _params()[-1]
    built = build_runtime_param(param.type_descriptor)
    param._runtime_param = built
    install([param])
    assert param._runtime_param is built


def test_scan_and_repair_do_not_import_pydantic(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from logdoctor.cli.main import main\n"
        "for argv in (['scan', '--deep', '--json', '-j', '1', {d!r}], ['repair', '--jobs', '2', {d!r}]):\n"
        "    sys.argv = ['logdoctor', *argv]\n"
        "    try:\n"
        "        main()\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print('pydantic' in sys.modules, file=sys.stderr)\n"
    ).format(d=str(tmp_path))
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert run.stderr.strip().splitlines()[-1] == "False", run.stderr
