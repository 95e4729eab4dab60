"""README.md and docs/ as GitHub shows them: every relative link leads to a file of the repository and every
``#anchor`` to a heading of its page, by GitHub's rule for heading ids; README.md stays short.

`make docs` (run by `make test`) checks the same links on the site mkdocs builds (`mkdocs build --strict`,
mkdocs.yml's ``validation``), with mkdocs' own heading ids; this test checks them where most readers read
them, on GitHub, without mkdocs. Links to other sites (``scheme:``) are not followed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 150  # issue 47: a README a newcomer reads in five minutes

LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(```|~~~)")


def prose(text: str) -> str:
    """The text outside fenced code blocks and inline code spans (links there are not links)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(re.sub(r"`[^`]*`", "", line))
    return "\n".join(lines)


def github_ids(text: str) -> set[str]:
    """The ids GitHub gives a page's headings: the heading's text (markup dropped) lowercased, every
    character but letters, digits, ``_``, ``-`` and spaces removed, each space a ``-``; a repeated id gets
    ``-1``, ``-2``, ..."""
    ids: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        m = None if fenced else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1))  # a link's text
        title = title.replace("`", "").replace("*", "")
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        ids.add(slug if n == 0 else f"{slug}-{n}")
        seen[slug] = n + 1
    return ids


def links(page: Path) -> list[str]:
    return LINK.findall(prose(page.read_text()))


def test_the_slug_rule() -> None:
    text = "# Who loses what\n## `--remote-log-metadata`\n## KRaft log dirs (Kafka 3.7+, several)\n"
    text += "## Retention\n"
    text += "```\n# not a heading\n```\n## Retention\n"
    assert github_ids(text) == {
        "who-loses-what",
        "--remote-log-metadata",
        "kraft-log-dirs-kafka-37-several",
        "retention",
        "retention-1",
    }


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.is_relative_to(ROOT) or not dest.exists():
            broken.append(f"{target}: no file {dest}")
        elif anchor and dest.suffix == ".md" and anchor not in github_ids(dest.read_text()):
            broken.append(f"{target}: {dest.relative_to(ROOT)} has no heading with the id {anchor!r}")
    assert broken == []


def test_readme_links_reach_the_docs() -> None:
    """The README's links (the site's home page) lead into docs/: mkdocs checks them only there."""
    targets = [t.partition("#")[0] for t in links(ROOT / "README.md") if t.partition("#")[0]]
    assert targets, "README.md links nowhere"
    assert [t for t in targets if not t.startswith("docs/")] == []


def test_readme_is_short() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= README_MAX_LINES
