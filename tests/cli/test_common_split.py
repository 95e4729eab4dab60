"""`cli/common.py` split by concern (issue #27): each command module imports what it uses by name from the
module of that concern; `cli.common` keeps only the command and group classes (what `--help` needs) and
still resolves the names it used to hold, as the very objects of their new modules."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import logdoctor.cli.common as common

CLI = Path(common.__file__).parent
KEPT = {"LogdoctorCommand", "LogdoctorGroup", "UsageExit64"}


def test_no_command_module_takes_a_moved_name_from_common() -> None:
    taken: list[str] = []
    for path in sorted(CLI.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module == "logdoctor.cli.common":
                taken += [f"{path.relative_to(CLI)}: {a.name}" for a in node.names if a.name not in KEPT]
    assert taken == []


def test_common_defines_only_the_command_classes() -> None:
    tree = ast.parse(Path(common.__file__).read_text())
    defined = {n.name for n in tree.body if isinstance(n, ast.ClassDef | ast.FunctionDef)}
    assert defined == {"LogdoctorCommand", "LogdoctorGroup", "_usage_exit", "__getattr__"}


def test_the_old_names_resolve_to_the_new_modules_objects() -> None:
    assert len(common.MOVED) == 46
    for name, module in common.MOVED.items():
        new = importlib.import_module(f"logdoctor.cli.{module}")
        assert name in new.__all__, (name, module)
        assert getattr(common, name) is getattr(new, name), name
    assert common.ExitCode.USAGE == 64 and common.parse_epoch_ms("2024-01-01T00:00:00Z") == 1704067200000
