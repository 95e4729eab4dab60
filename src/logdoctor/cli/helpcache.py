"""``logdoctor --help`` and ``logdoctor COMMAND --help`` at the interpreter's own start-up cost.

typer renders help through click, pydantic and rich: ~0.1-0.2 s of imports and layout before the first
line, 11-13x ``python -c pass`` (BENCHMARKS.md, "CLI start-up"; issue 49). The text it prints depends only
on the code that rendered it, the line and the terminal: its width (``COLUMNS``, else the size of the
terminal on stdin, stdout or stderr, as rich asks), whether stdout is one, the colour and terminal
variables rich and typer read, and the output encoding. So the first run of each such call renders it with
typer as always, and keeps what typer wrote (:func:`record`) in a file of the user's cache folder
(``$XDG_CACHE_HOME/logdoctor/help``, else ``~/.cache/logdoctor/help``) under a key of all of these, with
the size and modification time of every module file the rendering had loaded (typer, click, rich and
logdoctor's own). A later identical call (:func:`replay`) writes that text when the key is the same and
every one of those files is unchanged (a stat each, ~0.5 ms), importing nothing but ``os``, ``sys`` and
``zlib``: any edit of a command's help, an upgrade of typer or rich, another width or terminal renders
again. Anything unexpected (no cache folder, a torn or foreign file, an unwritable home) falls back to the
typer rendering, and a failure to write the cache is never an error of the run.

``LOGDOCTOR_HELP_CACHE=0`` turns it off. ``tests/cli/test_help_cache.py`` compares the replayed text with
typer's for every command, widths and terminals.
"""

from __future__ import annotations

import os
import sys

__all__ = ["HELP_CACHE_ENV", "record", "replay"]
# which calls are kept (``--help`` of the app or of one word, the cache not turned off) is decided by
# logdoctor.cli.main._help_call, without importing this module when the cache is off

HELP_CACHE_ENV = "LOGDOCTOR_HELP_CACHE"
_MAGIC = "logdoctor-help-cache 1\n"
_MAX_FILES = 64  # past this many cached texts, the oldest are removed when one is written
# What typer, click and rich read from the environment that can change how help is laid out or coloured
# (grep of typer 0.29, click 8, rich 14: getenv / os.environ).
_ENVIRONMENT = (
    "COLUMNS",
    "LINES",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "FORCE_COLOR",
    "PY_COLORS",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
    "TERMINAL_WIDTH",
    "JUPYTER_COLUMNS",
    "JUPYTER_LINES",
    "GITHUB_ACTIONS",
    "DATABRICKS_RUNTIME_VERSION",
    "UNICODE_VERSION",
    "TYPER_USE_RICH",
    "_TYPER_FORCE_DISABLE_TERMINAL",
    "PYTHONIOENCODING",
    "PYTHONUTF8",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
)


def _folder() -> str | None:
    base = os.environ.get("XDG_CACHE_HOME") or ""
    if not os.path.isabs(base):
        home = os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "logdoctor", "help")


def _terminal_size(fd: int) -> str:
    try:
        size = os.get_terminal_size(fd)
    except (AttributeError, ValueError, OSError):
        return "-"
    return f"{size.columns}x{size.lines}"


def _isatty(stream: object) -> str:
    isatty = getattr(stream, "isatty", None)
    try:
        return "1" if isatty is not None and isatty() else "0"
    except ValueError:
        return "?"


def _key(argv: list[str]) -> str:
    """Everything but the code that decides the help's bytes, one line (``repr`` escapes any newline)."""
    out = sys.stdout
    parts = [
        sys.version,
        sys.executable,
        repr(argv),  # argv[0] and __main__ name the program in the usage line (click)
        repr(getattr(sys.modules.get("__main__"), "__package__", None)),
        f"{getattr(out, 'encoding', None)}/{getattr(out, 'errors', None)}",
        "tty" + "".join(_isatty(s) for s in (sys.stdin, out, sys.stderr)),
        " ".join(_terminal_size(fd) for fd in (0, 1, 2)),
        repr([(name, os.environ.get(name)) for name in _ENVIRONMENT]),
    ]
    return repr(parts)


def _path(folder: str, key: str) -> str:
    import zlib

    return os.path.join(folder, f"{zlib.crc32(key.encode('utf-8', 'surrogateescape')):08x}.txt")


def replay(argv: list[str]) -> bool:
    """Write the help text kept for this very call, unchanged code and terminal; False (nothing written)
    when there is none."""
    folder = _folder()
    if folder is None or sys.stdout is None:  # no stdout (closed): typer says what it says
        return False
    key = _key(argv)
    try:
        with open(_path(folder, key), encoding="utf-8", errors="surrogateescape", newline="") as f:
            if os.fstat(f.fileno()).st_uid != os.geteuid():  # only a text this user's runs kept
                return False
            data = f.read()
    except (OSError, UnicodeError):
        return False
    head, sep, text = data.partition("\n\n")
    lines = head.split("\n")
    if not sep or len(lines) < 3 or lines[0] + "\n" != _MAGIC or lines[1] != key:
        return False
    for line in lines[2:]:
        path, _, stamp = line.rpartition("\t")
        try:
            st = os.stat(path)
        except OSError:
            return False
        if stamp != f"{st.st_mtime_ns}:{st.st_size}":
            return False
    sys.stdout.write(text)
    sys.stdout.flush()
    return True


class _Tee:
    """sys.stdout as typer's rich console finds it (terminal, size, encoding), keeping what is written as
    text. Its binary ``buffer`` is the stream's, marked used: bytes written past the text layer leave the
    run unrecorded."""

    def __init__(self, stream: object) -> None:
        self._stream = stream
        self.kept: list[str] = []
        self.bytes_written = False

    def write(self, text: str) -> int:
        written: int = self._stream.write(text)  # type: ignore[attr-defined]
        self.kept.append(text)  # after the write: click tries write(b"") to tell a binary stream
        return written

    @property
    def buffer(self) -> object:
        self.bytes_written = True
        return self._stream.buffer  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def record(argv: list[str], run: object) -> None:
    """``run()`` (typer's app) with stdout kept; when it ends with exit code 0, its text is written to the
    cache for :func:`replay`. Whatever ``run`` raises is raised as it was."""
    folder = _folder()
    real = sys.stdout
    if folder is None or real is None:
        run()  # type: ignore[operator]
        return
    key = _key(argv)  # before the run: the same terminal and streams replay() will see
    tee = _Tee(real)
    sys.stdout = tee  # type: ignore[assignment]
    code: object = None
    try:
        run()  # type: ignore[operator]
    except SystemExit as e:
        code = e.code
        raise
    finally:
        sys.stdout = real
        if code in (0, None) and not tee.bytes_written:
            _write(folder, key, "".join(tee.kept))


def _stamps() -> list[str] | None:
    lines = []
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not path:
            continue
        try:
            st = os.stat(path)
        except OSError:
            return None
        if "\n" in path or "\t" in path:
            return None
        lines.append(f"{os.path.abspath(path)}\t{st.st_mtime_ns}:{st.st_size}")
    return sorted(set(lines))


def _write(folder: str, key: str, text: str) -> None:
    stamps = _stamps()
    if stamps is None or not text:
        return
    path = _path(folder, key)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(folder, exist_ok=True)
        with open(tmp, "w", encoding="utf-8", errors="surrogateescape", newline="") as f:
            f.write(_MAGIC + key + "\n" + "\n".join(stamps) + "\n\n" + text)
        os.replace(tmp, path)
        _prune(folder)
    except OSError:
        import contextlib  # the write's own: a replay imports nothing but os, sys and zlib

        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _prune(folder: str) -> None:
    import contextlib

    with os.scandir(folder) as it:
        entries = [(e.stat().st_mtime_ns, e.path) for e in it if e.name.endswith(".txt")]
    entries.sort()
    for _, path in entries[: max(0, len(entries) - _MAX_FILES)]:
        with contextlib.suppress(OSError):
            os.unlink(path)
