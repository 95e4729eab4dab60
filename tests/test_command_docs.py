"""docs/commands/<command>.md, one page per command (issue 47 item 7), are what the CLI's own definitions
give (scripts/gen_command_docs.py --check): a changed option or help text without its page fails here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_every_command_has_its_page_as_the_cli_gives_it() -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gen_command_docs.py"), "--check"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr


def test_the_check_fails_on_a_stale_page(tmp_path: Path, monkeypatch) -> None:
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import gen_command_docs as gen
    finally:
        sys.path.pop(0)
    pages = gen.pages()
    assert set(pages) >= {"scan", "repair", "export", "census", "restore", "dump"}
    for name, text in pages.items():
        (tmp_path / f"{name}.md").write_text(text)
    monkeypatch.setattr(gen, "OUT", tmp_path)
    monkeypatch.setattr(gen, "REPO", tmp_path.parent)
    assert gen.main(["--check"]) == 0
    (tmp_path / "scan.md").write_text(pages["scan"].replace("--deep", "--deeper"))
    assert gen.main(["--check"]) == 1
