"""The import graph of ``src/logdoctor``, read with ``ast`` (nothing is imported): no cycles between
modules, and no module importing from a layer above its own (docs/design.md).

Every import counts, at module level or inside a function (a lazy import is still a dependency).
An edge goes to the module named: ``import a.b.c`` and ``from a.b import c`` (c a module) depend on
``a.b.c``; ``from a.b import name`` (name defined in the package) depends on the package ``a.b``.
That a submodule's import first runs its parent packages is Python's business, not a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"

# Lowest first; a module may import its own layer and the ones below. spark and report share one.
LAYERS: dict[str, int] = {
    "errors": 0,
    "_lazy_exports": 0,
    "formats": 1,
    "logdir": 2,
    "sample": 3,
    "checks": 4,
    "repair": 5,
    "replay": 5,  # writes a log dir's records to a live cluster: beside repair, under the interfaces
    "spark": 6,
    "report": 6,
    "cli": 7,
    "__main__": 8,  # python -m logdoctor: the CLI
}


def module_files(root: Path) -> dict[str, Path]:
    mods: dict[str, Path] = {}
    for f in sorted(root.rglob("*.py")):
        parts = list(f.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = f
    return mods


def import_graph(mods: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the modules of ``mods`` it imports."""

    def targets(name: str) -> set[str]:
        return {name} & mods.keys()

    graph: dict[str, set[str]] = {}
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    found |= targets(alias.name)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                for alias in node.names:  # `from pkg import module`, else a name of pkg itself
                    found |= targets(f"{source}.{alias.name}") or targets(source)
        found.discard(mod)
        graph[mod] = found
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _layer(mod: str) -> int | None:
    parts = mod.split(".")
    return LAYERS[parts[1]] if len(parts) > 1 else None


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for mod, deps in sorted(graph.items()):
        own = _layer(mod)
        for dep in sorted(deps):
            theirs = _layer(dep)
            if own is not None and theirs is not None and theirs > own:
                bad.append(f"{mod} -> {dep}")
    return bad


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(module_files(SRC / "logdoctor"))


def test_every_package_has_a_layer(graph):
    assert {m.split(".")[1] for m in graph if "." in m} <= LAYERS.keys()


def test_no_import_cycles(graph):
    assert cycles(graph) == []


def test_no_import_from_a_layer_above(graph):
    assert upward_imports(graph) == []


def test_the_checks_see_what_they_must(tmp_path):
    """The same functions on a planted package: a cycle through a lazy relative import, and an
    upward import, are both reported (so the two tests above can fail)."""
    pkg = tmp_path / "logdoctor"
    for sub in ("formats", "checks"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "formats" / "a.py").write_text("def f():\n    from .b import g\n")
    (pkg / "formats" / "b.py").write_text("from logdoctor.formats import a\n")
    (pkg / "formats" / "c.py").write_text("from logdoctor.checks import thing\n")
    (pkg / "checks" / "thing.py").write_text("import logdoctor.formats.c\n")
    g = import_graph(module_files(pkg))
    assert ["logdoctor.formats.a", "logdoctor.formats.b"] in cycles(g)
    assert "logdoctor.formats.c -> logdoctor.checks.thing" in upward_imports(g)
