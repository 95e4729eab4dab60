"""``--help`` replayed from the user's cache (cli/helpcache.py) is typer's own text, byte for byte, for
the app and every command, off a terminal, at another width and in colour; it is rendered again when the
code or the terminal changes; and no help cuts a word with "…" (cli/helptext.fold_long_words).

Start-up time is in BENCHMARKS.md ("CLI start"), never measured here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_in_process import run as run_in_process

import tiers
from logdoctor.cli import helpcache
from logdoctor.cli.main import _register, app
from logdoctor.cli.registry import COMMANDS

NAMES = ["", *(c.name for c in COMMANDS)]  # "": `logdoctor --help`

_PROGRAM = (
    "import json, sys\n"
    "sys.argv = ['logdoctor', *json.loads(sys.argv[1])]\n"
    "from logdoctor.cli.main import main\n"
    "code = 0\n"
    "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
    "sys.stdout.flush()\n"
    "print(json.dumps([code, sorted(sys.modules)]), file=sys.stderr)\n"
)


def _env(tmp_path: Path, cache: bool, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "NO_COLOR")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    env[helpcache.HELP_CACHE_ENV] = "1" if cache else "0"
    env.update(extra)
    return env


def _logdoctor(argv: list[str], env: dict[str, str]) -> tuple[int, str, set[str]]:
    """`logdoctor ARGV` in a fresh interpreter: exit code, stdout, the modules it imported."""
    done = subprocess.run(
        [sys.executable, "-c", _PROGRAM, json.dumps(argv)], capture_output=True, env=env, check=False
    )
    code, modules = json.loads(done.stderr.decode().strip().splitlines()[-1])
    return code, done.stdout.decode("utf-8", "surrogateescape"), set(modules)


def _cached(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "cache" / "logdoctor" / "help"
    return sorted(folder.glob("*.txt")) if folder.is_dir() else []


def _help_argv(name: str) -> list[str]:
    return [name, "--help"] if name else ["--help"]


def _check_replayed(tmp_path: Path, name: str, **extra: str) -> str:
    """typer's help, then the same call twice with the cache: the first renders and keeps it, the second
    replays it without typer; all three byte for byte the same."""
    argv = _help_argv(name)
    code, typer_text, typer_modules = _logdoctor(argv, _env(tmp_path, cache=False, **extra))
    assert code in (0, None) and "typer" in typer_modules and typer_text
    before = set(_cached(tmp_path))
    code, first, first_modules = _logdoctor(argv, _env(tmp_path, cache=True, **extra))
    assert code in (0, None) and "typer" in first_modules
    assert first == typer_text
    assert len(set(_cached(tmp_path)) - before) == 1  # kept
    code, again, again_modules = _logdoctor(argv, _env(tmp_path, cache=True, **extra))
    assert code == 0
    assert again == typer_text
    assert not {m for m in again_modules if m.split(".")[0] in ("typer", "click", "rich", "pydantic")}
    assert {m for m in again_modules if m.startswith("logdoctor")} == {
        "logdoctor",
        "logdoctor.cli",
        "logdoctor.cli.helpcache",
        "logdoctor.cli.main",
    }
    return typer_text


@pytest.mark.parametrize("name", [pytest.param(n, marks=tiers.marks(n in ("", "scan"))) for n in NAMES])
def test_replayed_help_is_typers_own_text(tmp_path: Path, name: str) -> None:
    _check_replayed(tmp_path, name)


@pytest.mark.parametrize("name", ["", "scan"])
def test_replayed_help_at_another_width_and_in_colour(tmp_path: Path, name: str) -> None:
    narrow = _check_replayed(tmp_path, name, COLUMNS="61")
    wide = _check_replayed(tmp_path, name, COLUMNS="143")
    assert max(len(line) for line in narrow.splitlines()) == 61
    assert max(len(line) for line in wide.splitlines()) == 143
    coloured = _check_replayed(tmp_path, name, COLUMNS="100", FORCE_COLOR="1")
    assert "\x1b[" in coloured and "\x1b[" not in wide
    assert len(_cached(tmp_path)) == 3  # one text per terminal


def test_changed_code_renders_again(tmp_path: Path) -> None:
    """A kept text whose module files changed since (here: one size in its stamps) is not replayed: the
    call renders with typer again and keeps the new text."""
    env = _env(tmp_path, cache=True)
    _, text, _ = _logdoctor(["scan", "--help"], env)
    (kept,) = _cached(tmp_path)
    head, sep, body = kept.read_text(encoding="utf-8").partition("\n\n")
    lines = head.split("\n")
    stamp = next(i for i, line in enumerate(lines) if line.split("\t")[0].endswith("logdoctor/cli/scan.py"))
    path, when = lines[stamp].split("\t")
    mtime, size = when.split(":")
    lines[stamp] = f"{path}\t{mtime}:{int(size) + 1}"
    kept.write_text("\n".join(lines) + sep + body, encoding="utf-8")
    code, again, modules = _logdoctor(["scan", "--help"], env)
    assert code == 0 and again == text and "typer" in modules  # rendered, not replayed
    assert lines[stamp] not in kept.read_text(encoding="utf-8")  # the new stamps kept
    _, _, modules = _logdoctor(["scan", "--help"], env)
    assert "typer" not in modules


def test_a_failed_help_call_is_not_kept(tmp_path: Path) -> None:
    code, _, _ = _logdoctor(["no-such-command", "--help"], _env(tmp_path, cache=True))
    assert code == 64
    assert _cached(tmp_path) == []


def test_a_foreign_or_torn_file_is_not_replayed(tmp_path: Path) -> None:
    env = _env(tmp_path, cache=True)
    _, text, _ = _logdoctor(["--help"], env)
    (kept,) = _cached(tmp_path)
    kept.write_text(kept.read_text(encoding="utf-8")[:200], encoding="utf-8")  # torn: no blank line
    code, again, modules = _logdoctor(["--help"], env)
    assert code == 0 and again == text and "typer" in modules


def _panels(text: str) -> list[list[str]]:
    """The inner lines of each box of a rich help."""
    panels, current = [], None
    for line in text.splitlines():
        if line.startswith("╭"):
            current = []
        elif line.startswith("╰"):
            panels.append(current)
            current = None
        elif current is not None:
            current.append(line[1:-1])
    return panels


def _columns(lines: list[str]) -> list[str]:
    """Each column of a panel's table, its lines joined with every space removed: a word folded onto the
    next line reads whole again. Columns are the runs of positions not blank on every line."""
    width = max(len(line) for line in lines)
    lines = [line.ljust(width) for line in lines]
    used = [any(line[i] != " " for line in lines) for i in range(width)]
    columns, start = [], None
    for i, u in enumerate([*used, False]):
        if u and start is None:
            start = i
        elif not u and start is not None:
            columns.append("".join(line[start:i].replace(" ", "") for line in lines))
            start = None
    return columns


@pytest.mark.parametrize("columns", [60, 80])
def test_no_help_cuts_a_word(columns: int) -> None:
    """At 60 and 80 columns no help has "…"; every option's spellings and every word of its help are in
    its panel whole, a word wider than its column folded onto the next lines (issue 47 item 7: rich cut
    ``min.cleanable.dirty.ratio`` and ``--allow-unfinished-journal`` at 80 columns)."""
    import typer.main

    _register()
    group = typer.main.get_command(app)
    env = {"COLUMNS": str(columns), "PATH": os.environ.get("PATH", "")}
    folded = 0
    for name in NAMES:
        code, out, err = run_in_process(app, ["logdoctor", *_help_argv(name)], env)
        assert code == 0, err
        assert "…" not in out, name
        if not name:
            continue
        joined = "".join(col for panel in _panels(out) for col in _columns(panel))
        command = group.get_command(None, name)  # type: ignore[attr-defined]
        for param in command.params:
            for opt in param.opts if param.param_type_name == "option" else ():
                assert opt in joined, (name, opt)
            for word in (param.help or "").split():
                if "[" not in word and "]" not in word:
                    assert word in joined, (name, param.name, word)
        folded += any(len(w) > 24 for p in command.params for w in (p.help or "").split())
    assert folded  # the words that were cut are among those checked


def _notes(folder: Path) -> dict[str, bytes]:
    """A folder of the user's own notes: 70 ``*.txt`` named as the cache names its texts (eight hex
    digits) and 10 others, all older than any text the cache writes."""
    folder.mkdir(parents=True, exist_ok=True)
    notes = {f"{i:08x}.txt": f"note {i}\n".encode() for i in range(70)}
    notes |= {f"note-{i}.txt": f"other note {i}\n".encode() for i in range(10)}
    for name, data in notes.items():
        (folder / name).write_bytes(data)
        os.utime(folder / name, ns=(10**18, 10**18))
    return notes


def _unchanged(folder: Path, notes: dict[str, bytes]) -> None:
    for name, data in notes.items():
        assert (folder / name).read_bytes() == data, name


@pytest.mark.parametrize("layout", ["symlink", "private-folder", "open-folder"])
def test_a_folder_of_notes_loses_nothing(tmp_path: Path, layout: str) -> None:
    """The help folder being, or linking to, a folder of the user's notes: `scan --help` prints typer's
    text, and no note is removed or changed (issue 57 item 7: the oldest ``*.txt`` past 64 were removed).
    A symlink and a folder others can read are refused; a private folder keeps the cache's own text beside
    the notes."""
    help_folder = tmp_path / "cache" / "logdoctor" / "help"
    notes_folder = tmp_path / "notes" if layout == "symlink" else help_folder
    notes = _notes(notes_folder)
    if layout == "symlink":
        help_folder.parent.mkdir(parents=True)
        help_folder.symlink_to(notes_folder)
    notes_folder.chmod(0o700 if layout == "private-folder" else 0o755)
    _, typer_text, _ = _logdoctor(["scan", "--help"], _env(tmp_path, cache=False))
    for _ in range(2):
        code, text, _ = _logdoctor(["scan", "--help"], _env(tmp_path, cache=True))
        assert code in (0, None) and text == typer_text
    _unchanged(notes_folder, notes)
    added = sorted(set(os.listdir(notes_folder)) - set(notes))
    assert len(added) == (1 if layout == "private-folder" else 0)


def _plant(tmp_path: Path, argv: list[str], folder_mode: int, owner: int | None) -> tuple[Path, Path, Path]:
    """The help folder, as another user may leave it, with a symlink at the temporary name this process
    will use pointing at a file of the victim's; the folder, the symlink and the victim file."""
    folder = tmp_path / "cache" / "logdoctor" / "help"
    folder.mkdir(parents=True)
    name = helpcache._name(helpcache._key(argv))
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"the victim's own file\n")
    link = folder / f"{name}.{os.getpid()}.tmp"
    link.symlink_to(victim)
    folder.chmod(folder_mode)
    if owner is not None:
        os.chown(folder, owner, owner)
    return folder, link, victim


_FOREIGN = pytest.mark.skipif(os.geteuid() != 0, reason="giving the folder to another user needs root")


@pytest.mark.parametrize(
    ("folder_mode", "owner"),
    [
        (0o700, None),
        (0o777, None),
        pytest.param(0o755, 65534, marks=_FOREIGN),
        pytest.param(0o700, 65534, marks=_FOREIGN),
    ],
)
def test_a_planted_symlink_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder_mode: int, owner: int | None
) -> None:
    """A symlink planted at the temporary name (``<crc>.txt.<pid>.tmp``) is never written through: the
    victim's file keeps its bytes and the symlink stays (issue 57 item 8: it was opened with
    ``O_CREAT|O_TRUNC`` and the victim's file overwritten with help text). A folder others can write in,
    or another user's, is not used at all."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    argv = ["logdoctor", "scan", "--help"]
    folder, link, victim = _plant(tmp_path, argv, folder_mode, owner)
    helpcache.record(argv, lambda: sys.stdout.write("the help text\n"))
    assert victim.read_bytes() == b"the victim's own file\n"
    assert link.is_symlink() and os.readlink(link) == str(victim)
    assert sorted(os.listdir(folder)) == [link.name]  # nothing written, nothing renamed


def test_a_cache_folder_an_earlier_version_made_is_made_private(tmp_path: Path) -> None:
    """The folder as earlier versions made it (mode 0755, only the cache's own texts in it): the next call
    is not replayed from it, renders with typer, makes the folder 0700 and keeps its text; the call after
    replays it."""
    env = _env(tmp_path, cache=True)
    _, text, _ = _logdoctor(["--help"], env)
    folder = tmp_path / "cache" / "logdoctor" / "help"
    folder.chmod(0o755)
    code, again, modules = _logdoctor(["--help"], env)
    assert code in (0, None) and again == text and "typer" in modules  # refused while others can open it
    assert folder.stat().st_mode & 0o777 == 0o700
    code, again, modules = _logdoctor(["--help"], env)
    assert code == 0 and again == text and "typer" not in modules
