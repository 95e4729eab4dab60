"""Issue 27: the repair planner's rules are one module per rule family under ``repair/rules``; each
names the finding codes it plans for (``CODES``) and the Kafka source it restates (its docstring), the
codes together are exactly what ``repair --only`` accepts, and docs/repair-rules.md lists every module
and code. Where the Kafka source tree is on disk (the workspace), every cited file exists in it."""

from __future__ import annotations

import importlib
import re
import subprocess
from pathlib import Path

import pytest

from logdoctor.repair.planner import REPAIRABLE, parse_only

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "src" / "logdoctor" / "repair" / "rules"
DOC = ROOT / "docs" / "repair-rules.md"
KAFKA = ROOT.parent / ".mirror" / "apache+kafka" / "repo"
RULE_MODULES = sorted(p.stem for p in RULES.glob("*.py") if p.stem not in ("__init__", "context"))
CITED = re.compile(r"K:([\w./-]+?\.(?:java|scala))")


def test_the_rule_families_are_the_modules_named_in_the_issue() -> None:
    assert RULE_MODULES == [
        "checkpoints",
        "indexes",
        "leader_epochs",
        "orphans",
        "permissions",
        "producer_snapshots",
        "properties",
        "truncation",
    ]


@pytest.mark.parametrize("name", RULE_MODULES)
def test_a_rule_module_names_its_codes_and_its_kafka_source(name: str) -> None:
    mod = importlib.import_module(f"logdoctor.repair.rules.{name}")
    assert mod.CODES and set(mod.CODES) <= set(REPAIRABLE)
    doc = mod.__doc__ or ""
    for code in mod.CODES:
        assert code in doc, f"{name}: {code} not in its docstring"
    assert CITED.search(doc), f"{name}: its docstring cites no Kafka source file (K:....java/.scala)"


def test_the_codes_of_the_rules_are_repairable_once_each() -> None:
    codes = [
        c for name in RULE_MODULES for c in importlib.import_module(f"logdoctor.repair.rules.{name}").CODES
    ]
    assert sorted(codes) == sorted(REPAIRABLE)
    assert len(set(codes)) == len(codes)
    assert parse_only(None) == set(REPAIRABLE)


def test_docs_list_every_rule_module_and_code_in_the_brokers_order() -> None:
    text = DOC.read_text()
    for name in RULE_MODULES:
        assert f"rules/{name}.py" in text
    for code in REPAIRABLE:
        assert code in text
    # LogLoader.load: temp and swap files, then recovery (truncation), then checkpoints
    assert (
        text.index("rules/orphans.py")
        < text.index("rules/truncation.py")
        < text.index("rules/checkpoints.py")
    )


def _kafka_files() -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(KAFKA), "ls-tree", "-r", "--name-only", "HEAD"], capture_output=True, text=True
    )
    return out.stdout.splitlines() if out.returncode == 0 else []


@pytest.mark.skipif(not KAFKA.is_dir(), reason="no Kafka mirror (../.mirror/apache+kafka, workspace only)")
def test_every_kafka_file_a_rule_cites_exists_in_kafka() -> None:
    files = _kafka_files()
    assert files
    for name in [*RULE_MODULES, "context"]:
        doc = importlib.import_module(f"logdoctor.repair.rules.{name}").__doc__ or ""
        for cited in CITED.findall(doc):
            # "K:storage/.../log/LogLoader.java": the parts around "..." must be a real path's
            head, _, tail = cited.rpartition(".../")
            tail = tail or cited
            hits = [f for f in files if f.endswith("/" + tail) or f == tail]
            if head:
                hits = [f for f in hits if f.startswith(head.rstrip("/"))]
            assert hits, f"{name}: cites K:{cited}, not a file of Kafka's source"
