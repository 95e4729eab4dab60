"""Issue 27: no definition (function, method or class) in ``src/logdoctor/repair`` is longer than 200
lines, read with ``ast`` (nothing is imported): each repair rule is a module of its own
(``repair/rules``), and a procedure is a sequence of named steps."""

from __future__ import annotations

import ast
from pathlib import Path

REPAIR = Path(__file__).resolve().parents[2] / "src" / "logdoctor" / "repair"
LIMIT = 200


def long_definitions(root: Path, limit: int = LIMIT) -> list[str]:
    """``path:line name (n lines)`` for every def or class of ``root`` longer than ``limit`` lines."""
    out: list[str] = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                n = (node.end_lineno or node.lineno) - first + 1
                if n > limit:
                    out.append(f"{path.relative_to(root)}:{first} {node.name} ({n} lines)")
    return out


def test_no_definition_in_repair_is_longer_than_200_lines() -> None:
    assert long_definitions(REPAIR) == []


def test_the_length_check_sees_a_long_definition(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT))
    (tmp_path / "m.py").write_text(f"class Short:\n    pass\n\n\ndef long() -> None:\n{body}\n")
    assert long_definitions(tmp_path) == [f"m.py:5 long ({LIMIT + 1} lines)"]
    assert long_definitions(tmp_path, LIMIT + 1) == []
