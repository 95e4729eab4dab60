"""Write docs/commands/<command>.md, one page per logdoctor command, from the CLI's own definitions (its
help, arguments and options, as `logdoctor COMMAND --help` shows them), so that the pages never drift from
the commands. `python scripts/gen_command_docs.py` writes them; `--check` fails (exit 1) when a page is not
what the CLI gives (tests/test_command_docs.py runs it, so `make test` does)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "docs" / "commands"

#: what each page says besides the CLI's help: the docs pages that explain the command at length
SEE_ALSO: dict[str, list[tuple[str, str]]] = {
    "census": [("Fleet census from inventories", "../census.md"),
               ("The inventory format", "../inventory.md")],
    "demo": [("Install and test", "../install.md")],
    "dump": [("Kafka versions covered on disk", "../kafka-versions.md"),
             ("Reading the remote tier", "../remote-tier.md")],
    "export": [("Export to tables", "../tables.md"), ("Transactions", "../transactions.md"),
               ("Compacted topics as tables", "../compacted-topics.md"),
               ("Every record once: the read plan", "../read-plan.md"), ("On a cluster", "../cluster.md")],
    "inventory": [("The inventory format", "../inventory.md")],
    "move-partition": [("Safety: plans, journals, backups", "../safety.md")],
    "rebuild-quorum": [("Rebuilding a lost controller quorum", "../quorum-rebuild.md"),
                       ("Safety: plans, journals, backups", "../safety.md")],
    "repair": [("The repair rules", "../repair-rules.md"),
               ("Safety: plans, journals, backups", "../safety.md")],
    "restore": [("Restoring from the remote tier", "../restore.md")],
    "retention": [("Topic configs and retention", "../topic-configs.md")],
    "scan": [("Who loses what", "../who-loses-what.md"), ("Tiered storage", "../tiered-storage.md"),
             ("The log cleaner", "../compaction.md")],
    "sync-replica": [("Who loses what", "../who-loses-what.md"),
                     ("Safety: plans, journals, backups", "../safety.md")],
}  # fmt: skip

_MARKUP = re.compile(r"\[/?(?:bold|italic|dim|red|green|yellow|cyan|magenta|blue|b|i)\]")


def _text(s: str | None) -> str:
    """A help text for a Markdown table cell: rich markup dropped, lines joined, pipes escaped."""
    s = _MARKUP.sub("", s or "")
    s = " ".join(s.split())
    return s.replace("|", "\\|")


def _default(p: Any) -> str:
    if getattr(p, "is_flag", False) or p.default is None or p.default == () or p.default is False:
        return ""
    if callable(p.default):
        return ""
    return f"`{p.default}`"


def _arg_name(a: Any) -> str:
    text = (a.metavar or a.name.upper()) + ("..." if a.nargs == -1 else "")
    return text if a.required else f"[{text}]"


def page(name: str, cmd: Any) -> str:
    """The Markdown page of one command."""
    args = [p for p in cmd.params if p.param_type_name == "argument"]
    opts = [p for p in cmd.params if p.param_type_name == "option" and not getattr(p, "hidden", False)]
    usage = " ".join([f"logdoctor {name}", *(_arg_name(a) for a in args), "[OPTIONS]"])
    help_text = _MARKUP.sub("", cmd.help or "").strip()
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", help_text) if p.strip()]
    out = [f"# logdoctor {name}", "", *[x for p in paragraphs for x in (p, "")]]
    out += ["```sh", usage, "```", ""]
    if args:
        out += ["## Arguments", "", "| argument | meaning |", "| --- | --- |"]
        out += [f"| `{_arg_name(a)}` | {_text(getattr(a, 'help', None))} |" for a in args]
        out.append("")
    if opts:
        out += ["## Options", "", "| option | meaning | default |", "| --- | --- | --- |"]
        for p in opts:
            names = ", ".join(f"`{o}`" for o in (*p.opts, *p.secondary_opts))
            out.append(f"| {names} | {_text(p.help)} | {_default(p)} |")
        out.append("")
    see = SEE_ALSO.get(name, [])
    if see:
        out += ["## See also", "", *[f"- [{title}]({link})" for title, link in see], ""]
    out += [
        "[Exit codes](../exit-codes.md) are those of every command. This page is made from the command's "
        "own definitions by `scripts/gen_command_docs.py`.",
        "",
    ]
    return "\n".join(out)


def pages() -> dict[str, str]:
    """command name -> its page."""
    os.environ.setdefault("LOGDOCTOR_HELP_CACHE", "0")
    import typer.main

    from logdoctor.cli import commands  # noqa: F401  (registers every command)
    from logdoctor.cli.main import app

    group = typer.main.get_command(app)
    return {name: page(name, cmd) for name, cmd in sorted(group.commands.items())}  # type: ignore[attr-defined]


def main(argv: list[str]) -> int:
    check = "--check" in argv
    want = pages()
    stale = []
    for name, text in want.items():
        path = OUT / f"{name}.md"
        if check:
            if not path.is_file() or path.read_text() != text:
                stale.append(str(path.relative_to(REPO)))
        else:
            OUT.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    extra = sorted(p.name for p in OUT.glob("*.md") if p.stem not in want) if OUT.is_dir() else []
    if check and (stale or extra):
        print("gen_command_docs: not what the CLI gives: " + ", ".join(stale + extra)
              + " (run: python scripts/gen_command_docs.py)", file=sys.stderr)  # fmt: skip
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
